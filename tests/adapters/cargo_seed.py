"""criterion's seed crate for the cargo adapter's tests (tests/adapters/test_cargo.py): a crate
like the tests', built once per checkout (tests/build_cache.py). Its target directory (criterion
and its dependencies compiled) and its Cargo.lock seed both versions of every test.

The first build of criterion takes about a minute of CPU. ``python -m tests.adapters.cargo_seed``
builds it into the pytest cache of the checkout it runs in (``make prebuild``), so that later test
runs find it built. ``make test`` runs it beside lint and types, while the guest tier's jobs and
first system tests run: the measuring group (serial) no longer spends about 30 s on it, and the
time it adds before that group goes to the guest's system tests (tests/README.md, "What runs
where"). Without cargo it does nothing: the tests then say why they cannot run; a build that fails
is left to the tests too, which build it again and fail saying why.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from duet_bench.adapters.cargo import CARGO_FALLBACKS
from tests.adapters.suites import FIXTURES, source, tool
from tests.build_cache import Input, build_once, builds_root

CARGO = tool("cargo", CARGO_FALLBACKS)
NAME = "cargo-seed"


def recipe(cargo: str) -> tuple[list[Input], Callable[[Path], None]]:
    """The seed's inputs (its build key: the manifest, the source and cargo's version) and the
    build that fills a directory with it."""
    # Another package name: its own bench executable must not pass for a version's (cargo
    # would find it fresh in the copied directory).
    manifest = (
        (FIXTURES / "Cargo.toml")
        .read_text()
        .replace('name = "work"\nversion', 'name = "seed"\nversion')
    )
    bench = source("work.rs", slowed=1, extra="seed")
    version = subprocess.run([cargo, "--version"], capture_output=True, text=True, check=True)

    def build(crate: Path) -> None:
        (crate / "src").mkdir()
        (crate / "benches").mkdir()
        (crate / "Cargo.toml").write_text(manifest)
        (crate / "src" / "lib.rs").write_text("")
        (crate / "benches" / "work.rs").write_text(bench)
        subprocess.run(
            [cargo, "bench", "--no-run", "--quiet"], cwd=crate, check=True, capture_output=True
        )

    return [manifest, bench, version.stdout], build


def main() -> int:
    if CARGO is None:
        print(f"cargo seed: cargo is not on PATH nor in {CARGO_FALLBACKS}: not built")
        return 0
    inputs, build = recipe(CARGO)
    try:
        done = build_once(builds_root(Path.cwd()), NAME, inputs, build)
    except subprocess.CalledProcessError as e:
        # Not this step's failure to report: the cargo tests build it again and fail saying why.
        print(f"cargo seed: the build failed (exit {e.returncode}), left to the tests:")
        print(e.stderr.decode(errors="replace")[-2000:] if e.stderr else "(no output)")
        return 0
    print(f"cargo seed: ready in {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
