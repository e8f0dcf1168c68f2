"""What ``duet doctor`` returns: findings (what, why, fix), checks, and the diagnosis."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from duet_bench.isolation import Level, Probe

__all__ = [
    "REQUIREMENTS",
    "SEVERITIES",
    "Check",
    "Diagnosis",
    "Finding",
    "Requirement",
    "Severity",
    "dig",
    "num",
]

Severity: TypeAlias = Literal["error", "warning", "notice"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")
Requirement: TypeAlias = Literal["cgroup", "cgroup-v2", "none"]
REQUIREMENTS: tuple[Requirement, ...] = ("cgroup", "cgroup-v2", "none")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing that will disturb a measurement or limit what duet can do here.

    Attributes
    ----------
    severity : {"error", "warning", "notice"}
    topic : str
        A short stable key (``cgroup``, ``topology``, ``frequency``, ``boost``, ...).
    what : str
        What was found, with the values read.
    why : str
        The consequence for a measurement.
    fix : str
        The exact command (or action) that removes the problem.
    """

    severity: Severity
    topic: str
    what: str
    why: str
    fix: str

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        for name in ("topic", "what", "why", "fix"):
            if not getattr(self, name).strip():
                raise ValueError(f"a finding needs a non-empty {name}")

    def to_dict(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "topic": self.topic,
            "what": self.what,
            "why": self.why,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class Check:
    """A fact that was checked and is fine (or merely informative): one line of the report."""

    topic: str
    summary: str

    def to_dict(self) -> dict[str, str]:
        return {"topic": self.topic, "summary": self.summary}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything ``duet doctor`` found.

    Attributes
    ----------
    isolation : str
        The level ``duet run --isolation auto`` would get: ``cgroup-v2``, ``cgroup-v1`` or
        ``affinity-only``.
    probes : mapping of str to Probe
        The backends' answer for ``cgroup-v2`` and ``cgroup-v1`` (reason and fix when not ok).
    cgroup : mapping
        The cgroup layout: ``version`` (v1, v2, hybrid, none), controllers, ``privilege``.
    cpus : mapping
        The topology summary (:meth:`duet_bench.topology.Topology.summary`), or ``{"error": ...}``.
    pair : mapping or None
        The pair ``duet run`` would use (:meth:`duet_bench.topology.CorePair.as_dict`), None when
        there is none (a finding says why).
    facts : mapping
        The values read: frequency, clocksource, memory, load, steal, pressure, temperatures,
        other duets.
    findings : tuple of Finding
        Problems and limits, errors first.
    checks : tuple of Check
        What was checked and found fine.
    """

    isolation: Level
    probes: Mapping[str, Probe]
    cgroup: Mapping[str, Any]
    cpus: Mapping[str, Any]
    pair: Mapping[str, Any] | None
    facts: Mapping[str, Any]
    findings: tuple[Finding, ...]
    checks: tuple[Check, ...] = field(default=())

    def satisfies(self, requirement: Requirement) -> bool:
        """Whether the isolation level meets ``--require``: ``cgroup`` (v1 or v2),
        ``cgroup-v2``, or ``none`` (always)."""
        if requirement == "none":
            return True
        if requirement == "cgroup":
            return self.isolation in ("cgroup-v1", "cgroup-v2")
        if requirement == "cgroup-v2":
            return self.isolation == "cgroup-v2"
        raise ValueError(f"requirement must be one of {REQUIREMENTS}, got {requirement!r}")

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "isolation": self.isolation,
            "probes": {
                level: {"ok": p.ok, "reason": p.reason or None, "fix": p.fix}
                for level, p in self.probes.items()
            },
            "cgroup": dict(self.cgroup),
            "cpus": dict(self.cpus),
            "pair": dict(self.pair) if self.pair is not None else None,
            "facts": dict(self.facts),
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.to_dict() for c in self.checks],
        }


# --------------------------------------------------------------------------------------------
# Reading the environment record (duet_bench.environment), whose values may be missing


def dig(node: object, *keys: str) -> object:
    """``node[k1][k2]...``, None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def num(value: object) -> float | None:
    """``value`` as a float when it is a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
