"""Start and stop the reference interference generator (``duet_noise.c``).

The C program bounds its own lifetime (``--duration``, an ``alarm()`` a few seconds later,
and ``PR_SET_PDEATHSIG`` when started from here), so it stops even if this process is killed
with SIGKILL; :class:`Noise` also stops it when its ``with`` block ends.

    with Noise(duration=600, seed=1):            # one hog per CPU, the same on/off schedule
        ...
    with Noise(duration=600, asymmetric=1):      # the negative control: CPU 1 only
        ...
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
SOURCE = HERE / "duet_noise.c"
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-pthread")


def build(build_dir: Path = BUILD) -> Path:
    """Compile ``duet_noise`` when the source is newer than the binary; return it."""
    binary = build_dir / "duet_noise"
    if binary.exists() and binary.stat().st_mtime >= SOURCE.stat().st_mtime:
        return binary
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler: install gcc (apt-get install gcc)")
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    subprocess.run(
        [cc, *CFLAGS, "-o", str(tmp), str(SOURCE)], check=True, capture_output=True, text=True
    )
    tmp.replace(binary)
    return binary


class Noise:
    """The generator as a context manager. ``duration`` (s) is a hard bound enforced by the C
    program itself; leaving the block stops it earlier."""

    def __init__(
        self,
        duration: float,
        *,
        seed: int = 1,
        cpus: str | None = None,
        asymmetric: int | None = None,
        mib: int = 64,
    ) -> None:
        self.argv = [str(build()), "--duration", f"{duration:g}", "--seed", str(seed)]
        self.argv += ["--mib", str(mib), "--die-with-parent"]
        if cpus is not None:
            self.argv += ["--cpus", cpus]
        if asymmetric is not None:
            self.argv += ["--asymmetric", str(asymmetric)]
        self.duration = duration
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, object] = {}

    def start(self) -> Noise:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError(f"the noise generator did not start: {' '.join(self.argv)}")
        self.info = json.loads(line)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> Noise:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
