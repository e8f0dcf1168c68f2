"""duet_bench.config.writer: ``calibrate --write`` edits the configuration in place.

Real files in tmp_path throughout; the editor's outputs are compared byte for byte, so every
comment, key order, spacing and line ending it must keep is written out in a case below.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duet_bench import config as config_mod
from duet_bench.config import load_config
from duet_bench.config.model import RecommendedSettings
from duet_bench.config.writer import edit_text, write_recommendation
from duet_bench.errors import ConfigError
from duet_bench.settings import resolve
from tests.duet.test_config import (
    BENCH,
    BENCHMARKS,
    FUZZ,
    SUITE,
    TOMLISH,
    loads_or_refuses,
    write,
)
from tests.duet.test_files import read_only

# --------------------------------------------------------------------------------------------
# write_recommendation: byte for byte


def check_edit(
    tmp_path: Path,
    name: str,
    before: str,
    after: str,
    *,
    benchmark: str | None,
    values: dict[str, int | str],
    reload: bool = True,
) -> Path:
    path = write(tmp_path / name, before)
    write_recommendation(path, benchmark=benchmark, values=values)
    assert path.read_bytes().decode() == after
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left
    if reload:
        c = load_config(path)
        table = c.benchmark(benchmark) if benchmark is not None else c.defaults
        for key, value in values.items():
            assert getattr(table, key) == value
    return path


DUET_TOML = """\
# duet suite for the app
build = "make"   # both versions
runs = 10  # from the last calibration
iterations=30
warmup    = 2 # keep it short

# --- benchmarks ---
[[benchmark]]
name = "startup"
command = "./app --version"
runs = 5

# the parser, our hot path
[[benchmark]]
name = "parse"   # the big one
python = "pkg.bench:parse"

[benchmark.env]
LC_ALL = "C"

[[benchmark]]
name = "render"
command = "./app render"
iterations = 3
"""


def test_global_keys_present_are_replaced_in_place(tmp_path: Path) -> None:
    after = (
        DUET_TOML.replace("runs = 10  #", "runs = 14  #")
        .replace("iterations=30", "iterations=60")
        .replace("warmup    = 2 #", "warmup    = 4 #")
    )
    check_edit(
        tmp_path,
        "duet.toml",
        DUET_TOML,
        after,
        benchmark=None,
        values={"runs": 14, "iterations": 60, "warmup": 4},
    )


def test_global_keys_absent_are_added_after_the_last_key(tmp_path: Path) -> None:
    before = DUET_TOML.replace("runs = 10  # from the last calibration\niterations=30\n", "")
    after = before.replace(
        "warmup    = 2 # keep it short\n",
        "warmup    = 3 # keep it short\nruns = 12\niterations = 50\n",
    )
    check_edit(
        tmp_path,
        "duet.toml",
        before,
        after,
        benchmark=None,
        values={"runs": 12, "iterations": 50, "warmup": 3},
    )


def test_global_keys_in_a_file_without_top_level_keys(tmp_path: Path) -> None:
    body = '[[benchmark]]\nname = "a"\ncommand = "x"\n'
    values = {"runs": 12, "iterations": 50, "warmup": 3}
    added = "runs = 12\niterations = 50\nwarmup = 3\n"
    # The file starts with a table: the keys go first.
    check_edit(
        tmp_path / "1", "duet.toml", body, added + "\n" + body, benchmark=None, values=values
    )
    # Comments that introduce the first table stay with it.
    before = "# header of the file\n\n# the first benchmark\n" + body
    after = "# header of the file\n\n" + added + "\n# the first benchmark\n" + body
    check_edit(tmp_path / "2", "duet.toml", before, after, benchmark=None, values=values)
    # A comment block opening the file describes the file: the keys go below it.
    before = "# duet configuration\n# of the app\n" + body
    after = "# duet configuration\n# of the app\n\n" + added + "\n" + body
    check_edit(tmp_path / "3", "duet.toml", before, after, benchmark=None, values=values)


def test_a_benchmark_in_the_middle_of_the_file(tmp_path: Path) -> None:
    values = {"runs": 20, "iterations": 100, "warmup": 5}
    after = DUET_TOML.replace(
        'python = "pkg.bench:parse"\n',
        'python = "pkg.bench:parse"\nruns = 20\niterations = 100\nwarmup = 5\n',
    )
    check_edit(tmp_path / "1", "duet.toml", DUET_TOML, after, benchmark="parse", values=values)
    # Present and absent keys together; the other benchmarks' runs are untouched.
    after = DUET_TOML.replace("runs = 5\n", "runs = 20\niterations = 100\nwarmup = 5\n")
    check_edit(tmp_path / "2", "duet.toml", DUET_TOML, after, benchmark="startup", values=values)
    after = DUET_TOML.replace("iterations = 3\n", "iterations = 100\nruns = 20\nwarmup = 5\n")
    check_edit(tmp_path / "3", "duet.toml", DUET_TOML, after, benchmark="render", values=values)


def test_a_file_without_a_final_newline(tmp_path: Path) -> None:
    before = DUET_TOML.rstrip("\n")
    after = before + "\nwarmup = 1"
    check_edit(tmp_path, "duet.toml", before, after, benchmark="render", values={"warmup": 1})


PYPROJECT = """\
[project]
name = "mypkg"   # runs = 1 is not ours
dependencies = [
    "numpy",  # [[tool.duet.benchmark]]
]

[tool.duet]
build = "pip install ."
runs = 10 # old

[[tool.duet.benchmark]]
name = "parse"
python = "mypkg.bench:parse"
    warmup = 0   # indented

[tool.ruff]
line-length = 100
"""


def test_pyproject_global_and_per_benchmark(tmp_path: Path) -> None:
    after = PYPROJECT.replace("runs = 10 # old\n", "runs = 16 # old\niterations = 45\nwarmup = 2\n")
    check_edit(
        tmp_path / "1",
        "pyproject.toml",
        PYPROJECT,
        after,
        benchmark=None,
        values={"runs": 16, "iterations": 45, "warmup": 2},
    )
    after = PYPROJECT.replace(
        "    warmup = 0   # indented\n",
        "    warmup = 2   # indented\n    runs = 16\n    iterations = 45\n",
    )
    check_edit(
        tmp_path / "2",
        "pyproject.toml",
        PYPROJECT,
        after,
        benchmark="parse",
        values={"runs": 16, "iterations": 45, "warmup": 2},
    )


def test_pyproject_without_a_tool_duet_header_gets_one(tmp_path: Path) -> None:
    before = PYPROJECT.replace(
        '[tool.duet]\nbuild = "pip install ."\nruns = 10 # old\n\n', "# duet\n"
    )
    assert "[tool.duet]" not in before
    # tomlkit keeps the comments above the first [[tool.duet.benchmark]] where they were, so
    # they now introduce the new [tool.duet] table (the hand-written editor put it above them).
    after = before.replace("# duet\n", "# duet\n[tool.duet]\nruns = 16\n\n")
    check_edit(tmp_path, "pyproject.toml", before, after, benchmark=None, values={"runs": 16})


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    before = DUET_TOML.replace("\n", "\r\n")
    after = (
        DUET_TOML.replace(
            'python = "pkg.bench:parse"\n', 'python = "pkg.bench:parse"\nwarmup = 9\n'
        )
        .replace("runs = 10  #", "runs = 11  #")
        .replace("\n", "\r\n")
    )
    path = write(tmp_path / "duet.toml", before)
    write_recommendation(path, benchmark=None, values={"runs": 11})
    write_recommendation(path, benchmark="parse", values={"warmup": 9})
    assert path.read_bytes() == after.encode()


def test_strings_and_quoted_keys_do_not_confuse_the_editor(tmp_path: Path) -> None:
    before = (
        'build = """\nruns = 3\n[[benchmark]]\n"""  # a script\n'
        '"runs" = 4\n'
        "[[benchmark]]\nname = 'a'\ncommand = '''\n[[benchmark]]\nruns = 1\n'''\n"
        "env = { 'runs' = \"x\" }  # not the key\n"
        '[[benchmark]]\nname = "b"\ncommand = "echo \\"runs = 7\\" # not a comment"\n'
        "runs = 8 # the key\n"
    )
    after = before.replace('"runs" = 4', '"runs" = 5').replace("runs = 8 #", "runs = 9 #")
    after = after.replace("# not the key\n", "# not the key\nruns = 6\n")
    path = check_edit(
        tmp_path / "1",
        "duet.toml",
        before,
        before.replace('"runs" = 4', '"runs" = 5'),
        benchmark=None,
        values={"runs": 5},
    )
    write_recommendation(path, benchmark="a", values={"runs": 6})
    write_recommendation(path, benchmark="b", values={"runs": 9})
    assert path.read_text() == after
    c = load_config(path)
    assert c.build == "runs = 3\n[[benchmark]]\n"
    assert [resolve(config=c, benchmark=b).values.runs for b in c.benchmarks] == [6, 9]


def test_inline_benchmarks_can_get_global_keys_but_are_not_edited(tmp_path: Path) -> None:
    before = "runs = 3\nbenchmark = [{ name = 'a', command = 'x' }]\n"
    check_edit(
        tmp_path,
        "duet.toml",
        before,
        "runs = 4\nbenchmark = [{ name = 'a', command = 'x' }]\n",
        benchmark=None,
        values={"runs": 4},
    )
    path = tmp_path / "duet.toml"
    with pytest.raises(ConfigError, match="cannot be written without disturbing") as info:
        write_recommendation(path, benchmark="a", values={"runs": 5, "warmup": 1})
    assert info.value.fix == "set runs = 5, warmup = 1 by hand in benchmark 'a'"
    assert path.read_text() == "runs = 4\nbenchmark = [{ name = 'a', command = 'x' }]\n"


def test_dotted_tool_duet_keys_are_refused_not_broken(tmp_path: Path) -> None:
    before = "[tool]\nduet.runs = 3\n"
    path = write(tmp_path / "pyproject.toml", before)
    with pytest.raises(ConfigError, match="nothing was written") as info:
        write_recommendation(path, benchmark=None, values={"runs": 5})
    assert info.value.fix == "set runs = 5 by hand in [tool.duet]"
    assert path.read_text() == before


def test_write_recommendation_sets_the_method(tmp_path: Path) -> None:
    bench = '\n[[benchmark]]\nname = "a"\ncommand = "true"\n'
    before = 'runs = 10\nmethod = "duet"  # what calibrate found\n' + bench
    check_edit(
        tmp_path,
        "duet.toml",
        before,
        'runs = 12\nmethod = "sequential"  # what calibrate found\n' + bench,
        benchmark=None,
        values={"runs": 12, "method": "sequential"},
    )
    with pytest.raises(ValueError, match="method must be one of"):
        write_recommendation(tmp_path / "duet.toml", benchmark=None, values={"method": "fast"})
    with pytest.raises(ValueError, match="method must be a str"):
        write_recommendation(tmp_path / "duet.toml", benchmark=None, values={"method": 1})


def test_write_recommendation_refusals_leave_the_file_alone(tmp_path: Path) -> None:
    path = write(tmp_path / "duet.toml", DUET_TOML)
    with pytest.raises(
        ConfigError, match=r"no benchmark named 'prase' \(the benchmarks: startup, parse, render\)"
    ):
        write_recommendation(path, benchmark="prase", values={"runs": 5})
    dup = write(tmp_path / "dup" / "duet.toml", BENCH + BENCH)
    with pytest.raises(ConfigError, match="more than one benchmark named 'parse'"):
        write_recommendation(dup, benchmark="parse", values={"runs": 5})
    with pytest.raises(ValueError, match="not 'threshold'"):
        write_recommendation(path, benchmark=None, values={"threshold": 1})
    with pytest.raises(ValueError, match="runs must be at least 2"):
        write_recommendation(path, benchmark=None, values={"runs": 1})
    with pytest.raises(ValueError, match="must be an int"):
        write_recommendation(path, benchmark=None, values={"runs": True})
    assert path.read_text() == DUET_TOML
    broken = write(tmp_path / "broken" / "duet.toml", "runs = \n")
    with pytest.raises(ConfigError, match=r"duet\.toml:1:8: not valid TOML"):
        write_recommendation(broken, benchmark=None, values={"runs": 5})
    other = write(tmp_path / "other" / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"no \[tool\.duet\] table"):
        write_recommendation(other, benchmark=None, values={"runs": 5})
    with pytest.raises(ConfigError, match="no such file"):
        write_recommendation(tmp_path / "nothing" / "duet.toml", benchmark=None, values={"runs": 5})


def test_write_recommendation_keeps_mode_and_symlinks(tmp_path: Path) -> None:
    real = write(tmp_path / "conf" / "duet.toml", DUET_TOML)
    real.chmod(0o640)
    link = tmp_path / "duet.toml"
    link.symlink_to(real)
    write_recommendation(link, benchmark=None, values={"runs": 11})
    assert link.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert "runs = 11  #" in real.read_text()


def test_write_recommendation_with_unchanged_values_does_not_rewrite(tmp_path: Path) -> None:
    path = write(tmp_path / "duet.toml", DUET_TOML)
    inode = path.stat().st_ino
    write_recommendation(path, benchmark=None, values={"runs": 10, "iterations": 30})
    assert path.stat().st_ino == inode


def test_write_recommendation_into_a_read_only_directory(tmp_path: Path) -> None:
    path = write(tmp_path / "ro" / "duet.toml", DUET_TOML)
    with read_only(path.parent):
        with pytest.raises(ConfigError, match="could not write the recommendation") as info:
            write_recommendation(path, benchmark=None, values={"runs": 11})
        assert isinstance(info.value.__cause__, PermissionError)
        assert info.value.fix is not None
        assert "runs = 11" in info.value.fix
    assert path.read_text() == DUET_TOML
    assert os.listdir(path.parent) == ["duet.toml"]  # no temporary file left


def test_refusals_say_why(tmp_path: Path) -> None:
    # Each layout where tomlkit would rewrite more than the value, with the reason shown.
    cases = {
        "runs = 3\nbenchmark = [{ name = 'a', command = 'x' }]\n": (
            "duet.toml",
            "a",
            "the benchmarks are not all written as [[benchmark]] tables",
        ),
        "[tool]\nduet = { runs = 3 }\n": (
            "pyproject.toml",
            None,
            "the 'duet' table is written with dotted keys or inline",
        ),
        "tool.duet.runs = 3\n": (
            "pyproject.toml",
            None,
            "the 'tool' table is written with dotted keys or inline",
        ),
    }
    for n, (before, (name, benchmark, reason)) in enumerate(cases.items()):
        path = write(tmp_path / str(n) / name, before)
        with pytest.raises(ConfigError) as info:
            write_recommendation(path, benchmark=benchmark, values={"runs": 5})
        assert info.value.message.endswith(f"({reason}); nothing was written")
        assert path.read_text() == before


# What tomlkit made visible: layouts the hand-written editor also had to get right.


def test_tool_duet_parted_by_other_tables(tmp_path: Path) -> None:
    # tomlkit before 0.15.1 cannot parse [[tool.duet.benchmark]] tables parted by other tables
    # (and 0.12 rendered the suite table wrongly, which the read-back check refused): hence
    # tomlkit>=0.15.1 in pyproject.toml.
    before = (
        "[tool.duet]\nruns = 3\n\n[tool.ruff]\nline-length = 100\n\n"
        '[[tool.duet.benchmark]]\nname = "a"\ncommand = "x"\n\n[tool.mypy]\nstrict = true\n\n'
        '[[tool.duet.benchmark]]\nname = "b"\ncommand = "y"\n'
    )
    values = {"runs": 5, "warmup": 1}
    after = before.replace("runs = 3\n", "runs = 5\nwarmup = 1\n")
    check_edit(tmp_path / "1", "pyproject.toml", before, after, benchmark=None, values=values)
    after = before.replace('"x"\n', '"x"\nruns = 5\nwarmup = 1\n')
    check_edit(tmp_path / "2", "pyproject.toml", before, after, benchmark="a", values=values)
    after = before + "runs = 5\nwarmup = 1\n"
    check_edit(tmp_path / "3", "pyproject.toml", before, after, benchmark="b", values=values)


def test_dotted_keys_sub_tables_and_number_spellings(tmp_path: Path) -> None:
    before = (
        "'runs' = 1_0  # literal key, underscores\n"
        "iterations = 0x1e\n"
        '[[benchmark]]\nname = "a"\ncommand = "x"\nenv.LC_ALL = "C"\n'
        "\n"
        '[[benchmark]]\nname = "b"\ncommand = "y"\n'
    )
    after = before.replace("1_0", "12").replace("0x1e", "40")
    values = {"runs": 12, "iterations": 40}
    check_edit(tmp_path / "1", "duet.toml", before, after, benchmark=None, values=values)
    # New keys go after the dotted key (a table to tomlkit, a key-value line to the reader).
    after = before.replace('env.LC_ALL = "C"\n', 'env.LC_ALL = "C"\nruns = 12\niterations = 40\n')
    check_edit(tmp_path / "2", "duet.toml", before, after, benchmark="a", values=values)


# --------------------------------------------------------------------------------------------
# Fuzz: the editor writes the new values where they belong, or refuses


@FUZZ
@given(st.sampled_from([DUET_TOML, SUITE + BENCHMARKS, PYPROJECT]), st.data())
def test_fuzz_mutated_files_load_and_edit_or_refuse(base: str, data: st.DataObject) -> None:
    text = base
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + data.draw(TOMLISH.filter(lambda s: len(s) < 6)) + text[at + cut :]
    form: config_mod.Form = "pyproject" if base is PYPROJECT else "duet"
    loads_or_refuses(text, f"{form}.toml" if form == "pyproject" else "duet.toml")
    values = {"runs": 17, "warmup": 4}
    for benchmark in (None, "parse"):
        try:
            new = edit_text(text, form=form, benchmark=benchmark, values=values)
        except ConfigError:
            continue
        # The editor's promise (checked inside as well): the new values where they belong.
        table: Any = tomllib.loads(new)
        if form == "pyproject":
            table = table["tool"]["duet"]
        if benchmark is not None:
            table = next(b for b in table["benchmark"] if b.get("name") == benchmark)
        assert {k: table[k] for k in values} == values


LINE_FILLERS = st.sampled_from(["", "# note", "  # indented note", "# runs = 1", "\t"])


@FUZZ
@given(
    st.lists(LINE_FILLERS, max_size=3),
    st.lists(st.sampled_from(["runs", "iterations", "warmup", "build"]), unique=True),
    st.lists(
        st.lists(st.sampled_from(["runs", "iterations", "warmup", "timeout"]), unique=True),
        min_size=1,
        max_size=3,
    ),
    st.lists(LINE_FILLERS, max_size=3),
    st.sampled_from([" = ", "=", "   =  "]),
    st.sampled_from(["", "  # c", " #"]),
    st.booleans(),
    st.data(),
)
def test_fuzz_editor_changes_only_the_recommended_keys(
    head: list[str],
    suite_keys: list[str],
    benchmark_keys: list[list[str]],
    gap: list[str],
    eq: str,
    comment: str,
    pyproject: bool,
    data: st.DataObject,
) -> None:
    example = {"runs": "10", "iterations": "30", "warmup": "2", "build": '"make"', "timeout": "5"}
    lines = [*head]
    prefix = "tool.duet." if pyproject else ""
    if pyproject:
        lines += ['[project]\nname = "x"', "[tool.duet]"]
    lines += [f"{k}{eq}{example[k]}{comment}" for k in suite_keys] + gap
    for i, keys in enumerate(benchmark_keys):
        lines += [f"[[{prefix}benchmark]]", f'name = "b{i}"{comment}', 'command = "x"']
        lines += [f"{k}{eq}{example[k]}{comment}" for k in keys] + gap
    text = "\n".join(lines) + "\n"
    benchmark = data.draw(st.sampled_from([None] + [f"b{i}" for i in range(len(benchmark_keys))]))
    values = data.draw(
        st.dictionaries(
            st.sampled_from(["runs", "iterations", "warmup"]), st.integers(2, 99), min_size=1
        )
    )
    new = edit_text(
        text, form="pyproject" if pyproject else "duet", benchmark=benchmark, values=values
    )
    c = load_config(Path("pyproject.toml" if pyproject else "duet.toml"), text=new)
    target = c.defaults if benchmark is None else c.benchmark(benchmark)
    assert {k: getattr(target, k) for k in values} == values

    def others(t: str) -> list[str]:
        return [
            line for line in t.splitlines() if not re.match(r"(runs|iterations|warmup)\s*=", line)
        ]

    # The separator lines around an inserted block are the only new blank lines.
    assert [x for x in others(new) if x.strip()] == [x for x in others(text) if x.strip()]
    assert len(others(new)) - len(others(text)) <= 2
    # Every line that held a changed key keeps its spelling and its comment.
    for old_line in text.splitlines():
        m = re.match(r"(runs|iterations|warmup)(\s*=\s*)\d+(.*)$", old_line)
        if m and not any(new_line == old_line for new_line in new.splitlines()):
            assert any(
                re.fullmatch(rf"{m.group(1)}{re.escape(m.group(2))}\d+{re.escape(m.group(3))}", n)
                for n in new.splitlines()
            )


def test_the_recommended_settings_are_typed_and_written_in_their_order(tmp_path: Path) -> None:
    """What calibrate --write sets: the keys given, in RECOMMENDATION_KEYS' order, checked on
    construction with the file's range rules."""
    settings = RecommendedSettings(max_runs=30, method="duet", runs=12, min_runs=5)
    assert list(settings.to_toml().items()) == [
        ("runs", 12),
        ("method", "duet"),
        ("min_runs", 5),
        ("max_runs", 30),
    ]
    assert RecommendedSettings().to_toml() == {}
    with pytest.raises(ValueError, match="runs must be at least"):
        RecommendedSettings(runs=1)
    path = write(tmp_path / "duet.toml", DUET_TOML)
    write_recommendation(path, benchmark=None, values=settings.to_toml())
    assert load_config(path).defaults.runs == 12
