"""``duet demo``: the bundled example end to end.

Two versions of a small C program (``duet/examples/demo/work.c``), the second doing 5 % more
work, measured as a ``command`` benchmark: a first look at what duet prints and writes.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from duet.errors import EnvironmentNotReady
from duet.isolation import Request
from duet.plan import BenchmarkSpec, SideSpec
from duet.report import render
from duet.results import ResultsDocument, write_atomic
from duet.session import SessionOptions, measure

SOURCE = Path(__file__).parent / "examples" / "demo" / "work.c"


def build(directory: Path) -> tuple[Path, Path]:
    """Compile the two versions of the demo program into ``directory``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise EnvironmentNotReady(
            "the demo compiles a small C program and no C compiler was found",
            fix="install one: sudo apt-get install gcc",
        )
    directory.mkdir(parents=True, exist_ok=True)
    binaries = []
    for version in (1, 2):
        target = directory / f"work-v{version}"
        done = subprocess.run(
            [cc, "-O2", f"-DVERSION={version}", "-o", str(target), str(SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise EnvironmentNotReady(
                f"compiling the demo program failed:\n{done.stderr.strip()[-2000:]}",
                fix="check that the C compiler works: cc --version",
            )
        binaries.append(target)
    return binaries[0], binaries[1]


def run_demo(
    out: str, *, runs: int = 10, isolation: Request = "auto", progress: bool = True
) -> tuple[ResultsDocument, Path]:
    out_dir = Path(out)
    v1, v2 = build(out_dir / "build")
    bench = BenchmarkSpec(
        name="demo-xorshift",
        baseline=SideSpec(kind="command", command=str(v1.resolve())),
        candidate=SideSpec(kind="command", command=str(v2.resolve())),
        runs=runs,
        iterations=15,
        warmup=2,
        timeout_s=30.0,
    )
    options = SessionOptions(
        out=out_dir / "results.json",
        isolation=isolation,
        progress=progress,
        config={"command": "demo"},
    )
    doc = measure([bench], options)
    write_atomic(out_dir / "report.md", render(doc, "markdown"))
    return doc, out_dir
