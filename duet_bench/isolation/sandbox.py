"""Per-side sandbox: a private temporary directory and, where privileges allow, a private mount
and network namespace.

Two versions of a program that write ``/tmp/cache.db`` or bind ``127.0.0.1:8080`` cannot run
side by side on one machine; the duet paper had to drop such benchmarks. With a sandbox each
side gets its own ``/tmp`` (a bind mount of a fresh directory, visible only in that side's mount
namespace) and its own loopback interface (a fresh network namespace), so both sides can use the
same fixed names and ports (BenchExec paper, section 5.2).

Everything that runs in the child (``Sandbox.child_setup``) is prepared in the parent: the child
runs between ``fork`` and ``exec`` of a possibly multi-threaded orchestrator, where importing a
module or taking a lock another thread held could deadlock.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import logging
import os
import shutil
import socket
import struct
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from duet_bench.errors import IsolationError
from duet_bench.isolation.pidns import prepare_pid_namespace
from duet_bench.isolation.spawn import spawn_prepared
from duet_bench.machine import THIS, Machine

__all__ = [
    "Sandbox",
    "make_sandbox",
    "namespaces_available",
    "pid_namespaces_available",
    "side_isolation",
]

log = logging.getLogger(__name__)

# <sched.h> and <sys/mount.h>; os.unshare and os.CLONE_* appeared only in Python 3.12.
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
# <linux/sockios.h> and <net/if.h>
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
# struct ifreq: a 16-byte interface name, then a 24-byte union whose first member we use is
# `short ifr_flags` (40 bytes on every Linux ABI).
_IFREQ = struct.Struct("16sh22x")


#: CAP_SYS_ADMIN's bit in /proc/<pid>/status's CapEff (linux/capability.h).
CAP_SYS_ADMIN = 21


def _has_sys_admin(machine: Machine = THIS) -> bool:
    capabilities = machine.capabilities()
    return capabilities is not None and bool(capabilities >> CAP_SYS_ADMIN & 1)


def namespaces_available() -> bool:
    """Whether this process may create mount and network namespaces: root *with*
    CAP_SYS_ADMIN. A container's root without it (docker's default, a rootless container) is
    uid 0 but is refused by the kernel, so the sides would fail to start.

    Unprivileged users could use a user namespace, but then the benchmark would run as a mapped
    "root" that sees files owned by nobody, which changes its behaviour; duet does not do that.
    """
    return os.geteuid() == 0 and _has_sys_admin()


@functools.cache
def pid_namespaces_available() -> bool:
    """Whether a program can start here in a PID namespace with its own ``/proc``
    (``duet_bench.isolation.pidns``): root with CAP_SYS_ADMIN, where the kernel lets it mount a
    procfs (a user namespace's root may not over a ``/proc`` with masked parts, as in rootless
    containers). Tried once per process with ``/bin/true``; when it fails, a warning says why:
    the sides and builds then see every process of their user, as ``side_isolation`` records."""
    if not namespaces_available():
        return False
    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    try:
        popen = spawn_prepared(
            [true], env={}, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            join_files=(), cpus=frozenset(os.sched_getaffinity(0)), enter_sandbox=None,
            what="a PID namespace (trying whether one can be made here)",
            pid_namespace=prepare_pid_namespace(own_mount_namespace=True, keep_leftovers=False),
        )  # fmt: skip
        returncode = popen.wait()
    except (OSError, IsolationError) as e:
        log.warning("no PID namespace for the sides and builds here: %s", e)
        return False
    if returncode != 0:
        log.warning(
            "no PID namespace for the sides and builds here: %s exited %d", true, returncode
        )
        return False
    return True


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The sandbox of one side of one run.

    ``tmpdir`` is a fresh directory on the host. With ``mount_namespace`` and ``private_tmp`` it
    is bind-mounted onto ``/tmp`` inside the side's own mount namespace (the side sees it as
    ``/tmp``, nobody else sees its files there); otherwise the side only gets ``TMPDIR`` pointing
    at it (``private_tmp`` is off where a private ``/tmp`` would hide the benchmark or duet's own
    interpreter: a checkout under ``/tmp``; the namespace still hides the other side). With
    ``network_namespace`` the side gets its own network namespace whose only interface is a
    loopback that is brought up before the program starts. With ``mount_namespace``, every
    path in ``hidden`` (the other side's directory and private ``/tmp``, by their host paths) is
    covered by an empty read-only tmpfs in the side's namespace: the side can neither read nor
    write there (issue 33, finding 4). With ``pid_namespace`` (which needs the mount namespace)
    the side's program runs in a PID namespace of its own with its own ``/proc``
    (``duet_bench.isolation.pidns``): it sees no process but its own (issue 33, finding 2).
    """

    tmpdir: str
    mount_namespace: bool
    network_namespace: bool
    hidden: tuple[str, ...] = ()
    private_tmp: bool = True
    pid_namespace: bool = False

    def __post_init__(self) -> None:
        if not os.path.isabs(self.tmpdir):
            raise ValueError(f"tmpdir must be an absolute path, got {self.tmpdir!r}")
        if self.pid_namespace and not self.mount_namespace:
            raise ValueError("a PID namespace needs the mount namespace (for its own /proc)")
        if (self.mount_namespace or self.network_namespace) and not namespaces_available():
            raise IsolationError(
                "a sandbox with a mount or network namespace needs root",
                fix="run duet as root (sudo duet ...), or let make_sandbox() decide",
            )

    @property
    def tmp_in_child(self) -> str:
        """The path of the side's temporary directory as the side sees it."""
        return "/tmp" if self.mount_namespace and self.private_tmp else self.tmpdir

    def env_overrides(self) -> dict[str, str]:
        """Variables to add to the side's environment (tools that honour TMPDIR use it even
        without a mount namespace)."""
        return {"TMPDIR": self.tmp_in_child}

    def child_setup(self) -> Callable[[], None]:
        """Return the function the child calls before ``exec`` to enter the sandbox.

        Raises ``OSError`` (in the child) when a step fails; the caller turns that into an
        ``IsolationError`` in the parent.
        """
        flags = (CLONE_NEWNS if self.mount_namespace else 0) | (
            CLONE_NEWNET if self.network_namespace else 0
        )
        if not flags:
            return _nothing
        libc = ctypes.CDLL(None, use_errno=True)
        unshare = libc.unshare
        unshare.argtypes = [ctypes.c_int]
        unshare.restype = ctypes.c_int
        mount = libc.mount
        mount.argtypes = [
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_ulong,
            ctypes.c_void_p,
        ]
        mount.restype = ctypes.c_int
        tmpdir = os.fsencode(self.tmpdir)
        hidden = [(os.fsencode(p), f"hide {p} (an empty read-only tmpfs)") for p in self.hidden]
        want_mounts = self.mount_namespace
        want_tmp = self.private_tmp
        want_net = self.network_namespace

        def check(result: int, what: str) -> None:
            if result != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"{what}: {os.strerror(err)}")

        def setup() -> None:
            check(unshare(flags), "unshare(CLONE_NEWNS|CLONE_NEWNET)")
            if want_mounts:
                # A new mount namespace starts as a copy whose mounts may still be "shared"
                # with the host (systemd makes / shared); without this, our bind mount on /tmp
                # would propagate back to the host and to the other side.
                check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
                if want_tmp:
                    check(
                        mount(tmpdir, b"/tmp", None, MS_BIND | MS_REC, None), "bind mount on /tmp"
                    )
                for path, what in hidden:
                    check(mount(b"none", path, b"tmpfs", _HIDDEN_FLAGS, b"size=4k,mode=0"), what)
            if want_net:
                _loopback_up()

        return setup

    def remove(self) -> None:
        """Delete the temporary directory and everything the side left in it."""
        shutil.rmtree(self.tmpdir, ignore_errors=True)


_HIDDEN_FLAGS = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC


def _nothing() -> None:
    return None


def _loopback_up() -> None:
    # A fresh network namespace has a loopback interface that is *down*: binding 127.0.0.1
    # works but nothing can connect. `ip link set lo up` is this ioctl; we do it ourselves so no
    # iproute2 binary is needed (and no exec that could lose the namespace setup).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = bytearray(_IFREQ.pack(b"lo", 0))
        fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request)
        _, flags = _IFREQ.unpack(bytes(request))
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | IFF_UP))


def side_isolation(level: str, *, share_network: bool) -> dict[str, object]:
    """What each side gets at isolation ``level`` here, for the results' environment
    (``side_isolation``; docs/isolation.md, "What each side sees"): its cgroup level, whether it
    has a private ``/tmp`` and the other side's files covered (a mount namespace), a loopback of
    its own (a network namespace), its own PIDs and ``/proc`` (a PID namespace), and how its
    environment is made."""
    namespaces = namespaces_available()
    return {
        "level": level,
        "mount_namespace": namespaces,
        "other_side_hidden": namespaces,
        "network_namespace": namespaces and not share_network,
        "pid_namespace": pid_namespaces_available(),
        "environment": "allow-list",
    }


def make_sandbox(base_dir: str, side: str, *, share_network: bool) -> Sandbox:
    """Create the sandbox of one side: a fresh private directory under ``base_dir``, and mount
    and network namespaces when we are root.

    ``share_network`` keeps the host's network (for benchmarks that must reach outside or talk
    to the other side); the temporary directory stays private either way.
    """
    if not side or os.sep in side:
        raise ValueError(f"side must be a plain name, got {side!r}")
    try:
        os.makedirs(base_dir, exist_ok=True)
        tmpdir = tempfile.mkdtemp(prefix=f"{side}-", dir=base_dir)
        # The side may run as another user than the orchestrator; /tmp semantics (world
        # writable, sticky) keep programs that expect a normal /tmp working.
        os.chmod(tmpdir, 0o1777)
    except OSError as e:
        raise IsolationError(
            f"cannot create the temporary directory of side {side!r} under {base_dir}: "
            f"{e.strerror or e}",
            fix=f"make {base_dir} writable or choose another work directory",
        ) from e
    namespaces = namespaces_available()
    return Sandbox(
        tmpdir=os.path.abspath(tmpdir),
        mount_namespace=namespaces,
        network_namespace=namespaces and not share_network,
        pid_namespace=pid_namespaces_available(),
    )
