"""The package surface: exports, import cost, independence from ``duet``."""

from __future__ import annotations

import subprocess
import sys

import stats


def test_all_names_are_exported() -> None:
    for name in stats.__all__:
        assert hasattr(stats, name), name
    assert sorted(stats.__all__) == sorted(set(stats.__all__))


def test_import_is_numpy_only() -> None:
    # A fresh interpreter: scipy (about 1 s) and arch (about 1.8 s) must load only on demand, and
    # stats must never pull in duet.
    code = (
        "import sys, stats; "
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'arch', 'duet', "
        "'pandas'}); print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
