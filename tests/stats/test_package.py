"""The package surface: exports, import cost, independence from ``duet_bench``."""

from __future__ import annotations

import subprocess
import sys

import duet_stats


def test_all_names_are_exported() -> None:
    for name in duet_stats.__all__:
        assert hasattr(duet_stats, name), name
    assert sorted(duet_stats.__all__) == sorted(set(duet_stats.__all__))


def test_import_is_numpy_only() -> None:
    # A fresh interpreter: scipy (about 1 s) and arch (about 1.8 s) must load only on demand, and
    # stats must never pull in duet.
    code = (
        "import sys, duet_stats; "
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'arch', 'duet_bench', "
        "'pandas'}); print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
