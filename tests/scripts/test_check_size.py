"""scripts/check_size.py, the size guard of ``make lint``, run as a real process on small trees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_size.py"


def guard() -> ModuleType:
    return load_script(SCRIPT, "check_size")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly ``lines`` lines, from its ``def`` to its last line."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 2))
    return f"{indent}def {name}() -> int:\n{body}{indent}    return 0\n"


def tree(root: Path) -> Path:
    (root / "duet").mkdir(parents=True)
    (root / "duet" / "big.py").write_text("x = 1\n" * 501)
    (root / "duet" / "at_limit.py").write_text("x = 1\n" * 500)
    (root / "duet" / "funcs.py").write_text(
        "import os\n\n"  # the class starts at line 3, its method at line 4
        "class Klass:\n" + function("method", 101, indent="    ") + "\n\n" + function("fine", 100)
    )
    return root


def test_too_long_module_and_function_fail_naming_file_line_and_size(tmp_path: Path) -> None:
    result = run("--root", str(tree(tmp_path)), "duet")
    assert result.returncode == 1
    problems = result.stderr.splitlines()
    assert len(problems) == 2, result.stderr
    assert problems[0].startswith("duet/big.py:1: module has 501 lines (limit 500); split it")
    assert problems[1].startswith(
        "duet/funcs.py:4: function Klass.method has 101 lines (limit 100); split it"
    )
    assert "'duet/funcs.py::Klass.method'" in problems[1]  # the key to list it under


def test_a_tree_within_the_limits_passes(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "duet" / "big.py").unlink()
    (root / "duet" / "funcs.py").write_text(function("fine", 100))
    result = run("--root", str(root), "duet")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_exceptions_allow_the_listed_and_fail_when_stale(tmp_path: Path) -> None:
    check = guard().check
    root = tree(tmp_path)
    listed = {"duet/big.py": "why", "duet/funcs.py::Klass.method": "why"}
    assert check(root, ["duet"], listed) == []
    stale = check(root, ["duet"], {**listed, "duet/at_limit.py": "why", "duet/gone.py": "why"})
    assert stale == [
        "duet/at_limit.py:1: module has 500 lines now (limit 500): remove 'duet/at_limit.py' "
        "from EXCEPTIONS of scripts/check_size.py",
        "scripts/check_size.py: EXCEPTIONS lists 'duet/gone.py', which does not exist any more; "
        "remove the entry",
    ]


def test_every_exception_of_the_repository_gives_its_reason() -> None:
    exceptions = guard().EXCEPTIONS
    assert exceptions
    assert all(isinstance(reason, str) and reason.strip() for reason in exceptions.values())


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = run("--root", str(tmp_path), "nothing")
    assert result.returncode == 2
    assert "no such file or directory" in result.stderr
