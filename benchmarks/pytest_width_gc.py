"""Does the collector run inside a pytest-benchmark iteration in process? (issue 29, item 3)

Inside a running pytest test (pytest's ~32,000 objects in the heap, as under duet's in-process
driver), three forms of a checksum over 8,000 items are timed 30 iterations x 20 calls, with a
``gc.callbacks`` hook counting the collections that start during the iterations (and how many
are full, generation 2), with the heap as it is and after ``gc.freeze()``. A collection inside
the timed region would be noise one side has and the other not; none means the collector is
not what widens a checksum's interval.

Run from the repository root: ``python benchmarks/pytest_width_gc.py`` (prints one line per
form; the iteration times are CPU times on a shared machine, for orientation only).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

TEST = """
import gc, time

def checksum_loop(items):
    total = 0
    for x in items:
        total = (total * 31 + x) & 0xFFFFFFFF
    return total

def checksum_gen(items):
    return sum((x * 31) & 0xFFFFFFFF for x in items) & 0xFFFFFFFF

def checksum_alloc(items):
    parts = [(x, x * 31) for x in items]  # tuples: containers the collector tracks
    return sum(b for _, b in parts) & 0xFFFFFFFF

def _measure(fn, data, freeze):
    events = []
    def hook(phase, info):
        events.append((phase, info["generation"]))
    if freeze:
        gc.collect(); gc.freeze()
    gc.callbacks.append(hook)
    times = []
    for _ in range(30):
        start = time.process_time_ns()
        for _ in range(20):
            fn(data)
        times.append(time.process_time_ns() - start)
    gc.callbacks.remove(hook)
    if freeze:
        gc.unfreeze()
    started = [g for phase, g in events if phase == "start"]
    times.sort()
    print(f"{fn.__name__:15} freeze={freeze!s:5} heap objects {len(gc.get_objects()):6} "
          f"collections {len(started):5} full {started.count(2)} iteration cpu ms median "
          f"{times[15] / 1e6:.2f}")

def test_gc(capsys):
    data = list(range(8000))
    with capsys.disabled():
        print()
        for fn in (checksum_loop, checksum_gen, checksum_alloc):
            for freeze in (False, True):
                _measure(fn, data, freeze)
"""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="duet-gc-") as tmp:
        path = Path(tmp) / "test_gc.py"
        path.write_text(TEST)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(path)],
            cwd=tmp,
            check=False,
        )
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
