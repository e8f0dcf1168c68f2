"""Which controllers a cgroup v2 cgroup has and hands on to its children: reading
``cgroup.controllers`` and ``cgroup.subtree_control``, turning controllers on and off, and
telling whether something else has come to use a controller we turned on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from duet_bench.isolation.cgroupfs import read_text, write_text

__all__ = [
    "WANTED_CONTROLLERS",
    "child_dirs",
    "configured_child",
    "controllers_of",
    "disable",
    "enable",
    "subtree_control",
    "subtree_control_or_empty",
    "turn_off_unused",
]

logger = logging.getLogger(__name__)

#: The controllers a full cgroup-v2 container uses.
WANTED_CONTROLLERS: tuple[str, ...] = ("cpuset", "cpu", "memory", "pids")

#: Interface files of each controller and their values in a cgroup nobody has configured.
_DEFAULTS: dict[str, dict[str, tuple[str, ...]]] = {
    "cpuset": {"cpuset.cpus": ("",), "cpuset.mems": ("",)},
    "cpu": {"cpu.weight": ("100",), "cpu.max": ("max 100000",), "cpu.idle": ("0",)},
    "memory": {
        "memory.min": ("0",),
        "memory.low": ("0",),
        "memory.high": ("max",),
        "memory.max": ("max",),
    },
    "pids": {"pids.max": ("max",)},
}


def controllers_of(cgroup: str) -> frozenset[str]:
    """The controllers ``cgroup`` has (empty when it cannot be read)."""
    try:
        return frozenset(read_text(os.path.join(cgroup, "cgroup.controllers")).split())
    except OSError:
        return frozenset()


def subtree_control(cgroup: str) -> frozenset[str]:
    """The controllers ``cgroup`` hands on to its children."""
    return frozenset(read_text(os.path.join(cgroup, "cgroup.subtree_control")).split())


def subtree_control_or_empty(cgroup: str) -> frozenset[str]:
    """``subtree_control``, empty when the cgroup is gone or cannot be read."""
    try:
        return subtree_control(cgroup)
    except OSError:
        return frozenset()


def enable(cgroup: str, controllers: Iterable[str]) -> None:
    """Hand ``controllers`` on to the children of ``cgroup`` (one write: all of them or none)."""
    missing = sorted(frozenset(controllers) - subtree_control(cgroup))
    if missing:
        write_text(
            os.path.join(cgroup, "cgroup.subtree_control"), " ".join(f"+{c}" for c in missing)
        )


def disable(cgroup: str, controllers: Iterable[str]) -> None:
    """Stop handing ``controllers`` on to the children of ``cgroup``."""
    present = sorted(frozenset(controllers) & subtree_control(cgroup))
    if present:
        write_text(
            os.path.join(cgroup, "cgroup.subtree_control"), " ".join(f"-{c}" for c in present)
        )


def child_dirs(path: str) -> list[str]:
    """The child cgroups of ``path``, sorted (none when it is gone)."""
    try:
        return [
            os.path.join(path, entry)
            for entry in sorted(os.listdir(path))
            if os.path.isdir(os.path.join(path, entry))
        ]
    except FileNotFoundError:
        return []


def configured_child(cgroup: str, controller: str) -> str | None:
    """A child of ``cgroup`` that hands ``controller`` on or has a setting of it, if any."""
    for child in child_dirs(cgroup):
        if controller in subtree_control_or_empty(child):
            return child
        for name, defaults in _DEFAULTS.get(controller, {}).items():
            try:
                value = read_text(os.path.join(child, name))
            except OSError:
                continue
            if value not in defaults:
                return f"{child} ({name} = {value or 'empty'})"
    return None


def turn_off_unused(cgroup: str, enabled: frozenset[str]) -> None:
    """Turn off in ``cgroup`` those of ``enabled`` (the controllers we turned on there) that no
    child has come to use since: turning off one in use would undo their settings."""
    for controller in sorted(enabled & subtree_control_or_empty(cgroup)):
        user = configured_child(cgroup, controller)
        if user is not None:
            logger.debug("leaving %s on in %s: %s uses it", controller, cgroup, user)
            continue
        try:
            disable(cgroup, [controller])
        except OSError as e:
            # EBUSY: a child has turned it on for its own children meanwhile.
            logger.debug("leaving %s on in %s: %s", controller, cgroup, e)
