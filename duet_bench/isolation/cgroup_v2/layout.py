"""Where duet's cgroup v2 parent goes and whether cgroup v2 can be used here: finding the
cgroup2 mount, choosing the placement (``root``, ``delegated``, ``sibling``; see
``duet_bench.isolation.cgroup_v2``), and the reasons and fixes when it cannot. Reads only: the
backend (``duet_bench.isolation.cgroup_v2.backend``) carries the layout out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from duet_bench.isolation.cgroup_v2.controllers import (
    WANTED_CONTROLLERS,
    controllers_of,
    subtree_control,
)
from duet_bench.isolation.cgroupfs import cgroup_dir, privilege_fix, procs_of
from duet_bench.isolation.model import Probe
from duet_bench.machine import THIS, CgroupMount, cgroup_mounts, own_cgroups

__all__ = [
    "Layout",
    "Mode",
    "find_v2_mount",
    "lacking_fix",
    "lacking_reason",
    "make_layout",
    "probe_v2",
]

Mode = Literal["root", "delegated", "sibling"]


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the per-invocation parent goes and which controllers it can have."""

    mount: CgroupMount
    own: str  # our cgroup directory
    base: str  # where the per-invocation parent goes
    mode: Mode
    available: frozenset[str]  # controllers we can have in the parent's children
    chain: tuple[str, ...]  # cgroups whose subtree_control we may have to extend, top down


def find_v2_mount(root: str) -> CgroupMount | None:
    """The cgroup2 mount at ``root`` (pure v2) or at ``root/unified`` (hybrid systemd layout)."""
    mounts = [m for m in cgroup_mounts(root) if m.fstype == "cgroup2"]
    for candidate in (root, os.path.join(root, "unified")):
        candidate = os.path.normpath(candidate)
        for mount in mounts:
            if mount.mountpoint == candidate:
                return mount
    return None


def _is_real_root(cgroup: str) -> bool:
    # Only the real root cgroup lacks cgroup.type; the root of a cgroup namespace has it (and
    # is bound by the no-internal-processes rule like any other cgroup).
    return not os.path.exists(os.path.join(cgroup, "cgroup.type"))


def _is_ours(pid: int) -> bool:
    """Whether ``pid`` is this process or one of its descendants."""
    me = os.getpid()
    seen = 0
    while pid > 1 and seen < 4096:
        if pid == me:
            return True
        parent = THIS.parent_pid(pid)
        if parent is None:
            return False
        pid = parent
        seen += 1
    return pid == me


def make_layout(root: str, wanted: Iterable[str]) -> tuple[Layout | None, Probe]:
    """Decide where the parent goes and which controllers we can get, without side effects."""
    mount = find_v2_mount(root)
    if mount is None:
        return None, Probe(
            False,
            f"no cgroup2 hierarchy is mounted at {root} or {root}/unified",
            f"mount it (`sudo mount -t cgroup2 none {root}`); in a container, start it with "
            "cgroups available (e.g. `docker run --cgroupns=private --privileged ...`)",
        )
    try:
        own_path = own_cgroups().get("")
    except OSError as e:
        return None, Probe(False, f"cannot read /proc/self/cgroup: {e}")
    own = cgroup_dir(mount, own_path) if own_path is not None else None
    if own is None or not os.path.isdir(own):
        return None, Probe(
            False,
            f"our cgroup2 cgroup {own_path} is not visible under {mount.mountpoint}",
            "run duet where the cgroup2 file system shows its own cgroup (e.g. a container "
            "started with a private cgroup namespace)",
        )
    wanted_set = frozenset(wanted)

    def writable(cgroup: str, *files: str) -> bool:
        # With the effective uid: that is what the kernel checks when we write.
        return all(
            os.access(os.path.join(cgroup, name), os.W_OK, effective_ids=True)
            for name in (".", "cgroup.subtree_control", *files)
        )

    if _is_real_root(own):
        layout = Layout(mount, own, own, "root", controllers_of(own), (own,))
    elif writable(own, "cgroup.procs") and all(
        _is_ours(pid) for pid in procs_of(own, recursive=False)
    ):
        layout = Layout(mount, own, own, "delegated", controllers_of(own), (own,))
    elif os.geteuid() == 0:
        base = os.path.dirname(own)
        chain = [base]
        while chain[0] != mount.mountpoint:
            chain.insert(0, os.path.dirname(chain[0]))
        layout = Layout(mount, own, base, "sibling", controllers_of(mount.mountpoint), tuple(chain))
    elif not writable(own, "cgroup.procs"):
        return None, Probe(False, _not_writable_reason(own, own_path), privilege_fix())
    else:
        return None, Probe(
            False,
            f"our cgroup {own_path} is shared with processes that are not ours and we "
            f"(uid {os.geteuid()}) cannot create cgroups elsewhere",
            privilege_fix(),
        )
    if not writable(layout.base):
        return None, Probe(False, f"we may not create cgroups in {layout.base}", privilege_fix())
    # Enabling a controller in a cgroup that holds processes fails with EBUSY (only the real
    # root is exempt); find that now rather than halfway through the setup.
    needed = wanted_set & layout.available
    for cgroup in layout.chain:
        if layout.mode == "delegated" or _is_real_root(cgroup):
            continue
        if needed - subtree_control(cgroup) and procs_of(cgroup, recursive=False):
            return None, Probe(
                False,
                f"cannot enable {', '.join(sorted(needed))} below {cgroup}: it holds processes "
                "(cgroup v2 allows controllers only over cgroups without processes)",
                "start duet in its own cgroup: `systemd-run --scope -p Delegate=yes duet ...`",
            )
    return layout, Probe(True)


def _not_writable_reason(own: str, own_path: str | None) -> str:
    try:
        owner = f"it belongs to uid {os.stat(own).st_uid}"
    except OSError as e:
        owner = f"cannot stat it: {e.strerror}"
    return (
        f"we (uid {os.geteuid()}) may not write our cgroup {own_path} ({owner}: nothing "
        "delegated it to us) and cannot create cgroups elsewhere"
    )


def probe_v2(
    root: str = "/sys/fs/cgroup", require_controllers: Iterable[str] = WANTED_CONTROLLERS
) -> Probe:
    """Whether cgroup v2 isolation with ``require_controllers`` is possible (no side effects)."""
    required = frozenset(require_controllers)
    layout, probe = make_layout(root, required | frozenset(WANTED_CONTROLLERS))
    if layout is None:
        return probe
    lacking = required - layout.available
    if lacking:
        return Probe(False, lacking_reason(layout, lacking), lacking_fix(layout, lacking))
    return probe


def lacking_reason(layout: Layout, lacking: Iterable[str]) -> str:
    offered = ", ".join(sorted(layout.available)) or "none"
    reason = (
        f"the cgroup2 hierarchy at {layout.mount.mountpoint} does not offer "
        f"{', '.join(sorted(lacking))} to {layout.base} (offered: {offered})"
    )
    if any(m.fstype == "cgroup" for m in cgroup_mounts(os.path.dirname(layout.mount.mountpoint))):
        reason += " (on this hybrid system, controllers mounted as cgroup v1 are not in cgroup2)"
    return reason


def lacking_fix(layout: Layout, lacking: Iterable[str]) -> str:
    lacking = sorted(lacking)
    controllers = " ".join(f"+{c}" for c in lacking)
    if not set(lacking) <= controllers_of(layout.mount.mountpoint):
        # The kernel does not offer them to cgroup2 at all (bound to v1, or not built).
        return (
            "boot with systemd.unified_cgroup_hierarchy=1 to have them in cgroup v2, or let "
            "duet use the cgroup v1 hierarchies (`--isolation auto` does)"
        )
    if layout.mode == "delegated":
        return (
            "delegate the controllers to duet's scope: "
            "`systemd-run --user --scope -p Delegate=yes duet ...` (and `Delegate=yes` for "
            "user@.service, see `systemctl edit user@.service`)"
        )
    return (
        f"enable them: `echo '{controllers}' | sudo tee {layout.mount.mountpoint}/"
        "cgroup.subtree_control`"
    )
