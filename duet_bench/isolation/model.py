"""The records of isolation: who the sides run as (``RunAs``), what a side may use (``Limits``),
what it used (``Usage``), and whether a level can be used here (``Probe``), with the names of the
levels (``Level``) and of what a caller may ask for (``Request``).

Plain frozen values, checked on construction; the backends (``duet_bench.isolation.base`` and
the modules of each level) produce and consume them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Literal

from duet_bench import units
from duet_bench.defaults import Isolation
from duet_bench.errors import IsolationError

__all__ = ["Level", "Limits", "Probe", "Request", "RunAs", "Usage"]

Level = Literal["cgroup-v2", "cgroup-v1", "affinity-only"]
#: What the user asks for (``isolation``): the choices of the setting.
Request = Isolation


@dataclass(frozen=True, slots=True)
class RunAs:
    """The user the measured programs and builds run as when duet runs as root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()

    @classmethod
    def for_user(cls, name_or_uid: str) -> RunAs:
        """Look a user up by name or number; raises ``IsolationError`` if unknown."""
        import grp
        import pwd

        try:
            entry = (
                pwd.getpwuid(int(name_or_uid))
                if name_or_uid.isdigit()
                else pwd.getpwnam(name_or_uid)
            )
        except KeyError:
            raise IsolationError(
                f"no such user: {name_or_uid!r}",
                fix="give an existing user name or uid to --user",
            ) from None
        groups = tuple(
            sorted({entry.pw_gid, *(g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem)})
        )
        return cls(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, groups=groups)

    @classmethod
    def from_environment(cls, explicit: str | None, environ: Mapping[str, str]) -> RunAs | None:
        """Who to run as: ``--user`` when given; else, as root under ``sudo``, the user who
        invoked sudo (``SUDO_UID``/``SUDO_GID``); else nobody else (run as ourselves)."""
        if explicit:
            if os.geteuid() != 0:
                raise IsolationError(
                    "--user needs root: only root can run programs as another user",
                    fix="run duet with sudo, or leave out --user",
                )
            return cls.for_user(explicit)
        if os.geteuid() == 0 and environ.get("SUDO_UID", "").isdigit():
            found = cls.for_user(environ["SUDO_UID"])
            gid = environ.get("SUDO_GID", "")
            return found if not gid.isdigit() else replace(found, gid=int(gid))
        return None

    def describe(self) -> dict[str, object]:
        return {"user": self.name, "uid": self.uid, "gid": self.gid}

    @property
    def home(self) -> str | None:
        """The user's home directory, when it exists (``nobody``'s does not)."""
        import pwd

        try:
            home = pwd.getpwuid(self.uid).pw_dir
        except KeyError:
            return None
        return home if home and os.path.isdir(home) else None

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the user's identity: HOME, USER and LOGNAME (sudo leaves root's HOME,
        which the user can neither read nor write)."""
        out = dict(env)
        out.update(USER=self.name, LOGNAME=self.name, HOME=self.home or "/")
        return out


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits for one side. ``None`` means no limit of that kind."""

    memory_bytes: int | None = None
    pids_max: int | None = None

    def __post_init__(self) -> None:
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError(f"memory_bytes must be positive, got {self.memory_bytes}")
        if self.pids_max is not None and self.pids_max <= 0:
            raise ValueError(f"pids_max must be positive, got {self.pids_max}")

    def describe(self) -> str:
        """``memory 2.00 GiB, 4096 processes`` (``no limits`` when none is set): for messages."""
        parts = []
        if self.memory_bytes is not None:
            parts.append(f"memory {units.size(self.memory_bytes)}")
        if self.pids_max is not None:
            parts.append(f"{self.pids_max} processes")
        return ", ".join(parts) or "no limits"


@dataclass(frozen=True, slots=True)
class Usage:
    """What one container used, for the whole process tree.

    A field that could not be measured is ``None`` and ``missing`` says why; a measured field is
    never in ``missing``. Nothing unmeasured is ever reported as 0.
    """

    cpu_ns: int | None
    cpu_user_ns: int | None
    cpu_system_ns: int | None
    peak_memory_bytes: int | None
    oom_kills: int | None
    pids_limit_hit: bool | None
    missing: Mapping[str, str]

    def __post_init__(self) -> None:
        measured = [f.name for f in fields(self) if f.name != "missing"]
        unknown = set(self.missing) - set(measured)
        if unknown:
            raise ValueError(f"missing names unknown fields: {sorted(unknown)}")
        for name in measured:
            value = getattr(self, name)
            if value is None and name not in self.missing:
                raise ValueError(f"{name} is None but missing gives no reason")
            if value is not None and name in self.missing:
                raise ValueError(f"{name} is measured but also listed as missing")
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        object.__setattr__(self, "missing", MappingProxyType(dict(self.missing)))

    @classmethod
    def unmeasured(cls, reason: str) -> Usage:
        """A usage record where nothing could be measured, all for the same reason."""
        names = [f.name for f in fields(cls) if f.name != "missing"]
        return cls(None, None, None, None, None, None, missing=dict.fromkeys(names, reason))


@dataclass(frozen=True, slots=True)
class Probe:
    """Whether a level can be used here, and if not, why and what would fix it."""

    ok: bool
    reason: str = ""
    fix: str | None = None
