"""Golden report text from the committed fixture (pyperf's test_perf_cli.py does the same).

Regenerate after an intended change:
``DUET_UPDATE_GOLDEN=1 pytest tests/duet/test_report_golden.py``
and review the diff. Numbers are compared within a stated tolerance (``tests/golden.py``): the
last bits of numpy's floats differ between CPUs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.golden import check_golden

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = FIXTURES / "golden"


#: numpy without its AVX-512 kernels, as on a CPU that lacks them (many of the machines CI may
#: draw): its logs, exps and sums then take other paths and the last bits of a float change.
#: A feature this CPU lacks is ignored; with it the golden must hold on both paths.
NO_AVX512 = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}


@pytest.mark.parametrize("numpy_env", [{}, NO_AVX512], ids=["numpy-as-built", "numpy-no-avx512"])
@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_analyze_output_matches_golden(fmt: str, suffix: str, numpy_env: dict[str, str]) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "duet_bench",
            "analyze",
            str(FIXTURES / "results-basic.json"),
            "--format",
            fmt,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **numpy_env},
    )
    assert done.returncode == 1, done.stderr  # the fixture holds one regression
    if numpy_env and os.environ.get("DUET_UPDATE_GOLDEN"):
        return  # a golden is written from numpy as built
    check_golden(done.stdout, GOLDEN / f"results-basic.{suffix}")


def test_fail_on_and_exit_codes(tmp_path: Path) -> None:
    fixture = str(FIXTURES / "results-basic.json")

    def code(*args: str) -> int:
        return subprocess.run(
            [sys.executable, "-m", "duet_bench", "analyze", fixture, *args],
            capture_output=True,
            check=False,
        ).returncode

    assert code("--fail-on", "never") == 0
    assert code("--fail-on", "any") == 1
    assert code("--confidence", "1.5") == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "duet-results/9", "benchmarks": []}')
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "analyze", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3
    assert "newer duet" in done.stderr
    assert "Traceback" not in done.stderr


def test_untrusted_names_are_escaped_in_markdown(tmp_path: Path) -> None:
    from duet_bench.analysis import AnalysisSettings, analyze_document
    from duet_bench.report.markdown import render_markdown
    from duet_bench.report.model import report_of
    from duet_bench.results import load, replace_name

    doc = load(FIXTURES / "results-basic.json")
    evil = "</details><img src=x onerror=alert(1)> @octocat | [x](http://e)"
    doc = replace_name(doc, "parse-json", evil)
    text = render_markdown(report_of(analyze_document(doc, AnalysisSettings(reps=500))))
    assert "<img" not in text
    assert "</details><img" not in text
    assert "@octocat" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "](http" not in text
