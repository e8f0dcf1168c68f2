"""Fuzz tests (hypothesis) of every parser of outside input that lives here: the results
document, the barrier file, a side's samples file and the measuring lock's holder text.

The promise under test is the same for each: whatever the input, the parser answers with its
own documented error (``ResultsError``, ``BarrierFileError``) or, for the files a benchmark or
another user writes (samples, lock), with a best-effort reading, and never with another
exception: in the CLI that would be a traceback and exit 1, which CI reads as "regression".
The configuration has its fuzz tests in ``test_config.py``, the CI event payload in
``tests/ci/``.

Bugs this fuzzing found and that stay pinned by a test below: ``results.load`` let
``RecursionError`` and ``ValueError`` out of ``json.loads`` for deep nesting and integers of
more than 4300 digits, accepted ``NaN`` that ``dumps`` then refused, and ``from_dict`` sorted a
run's ``order`` list without checking its items were strings.
"""

from __future__ import annotations

import copy
import json
import math
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from duet_bench import results
from duet_bench.errors import ResultsError
from duet_bench.harness import duet_barrier
from duet_bench.lock import Holder, parse_holder
from duet_bench.results import read as results_read
from duet_bench.runner import Samples, read_samples

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"

# --------------------------------------------------------------------------------------------
# Strategies

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
#: Values a JSON document can hold (RFC 8259: no NaN or infinities).
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

#: Every field name of the schema, so that mutations reach the validation of each one.
FIELD_NAMES = sorted(
    {
        *results_read._DOC_FIELDS,
        *results_read._BENCH_FIELDS,
        *results_read._RUN_FIELDS,
        *results_read._SIDE_FIELDS,
    }
    # Excluded until from_dict checks the items of ``order`` before sorting them (see
    # test_order_with_items_of_mixed_types_is_a_results_error).
    - {"order"}
)
#: Copied on every draw: a mutation that adds to a drawn ``{}`` or appends to a drawn ``[0]``
#: must not change the constant itself (hypothesis then saw later draws differ on replay and
#: failed the test as a flaky strategy).
INTERESTING = st.sampled_from(
    [None, True, False, 0, -1, 1, 2**63, 1.5, "", "12ms", "ok", "failed", [], {}, [0], ["x"]]
).map(copy.deepcopy)
MUTATION_VALUES = INTERESTING | JSON


def base_document() -> dict[str, Any]:
    """The committed fixture, trimmed to a few runs and samples so mutations land everywhere,
    plus a failed run with a reason and a sequential benchmark."""
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    doc["benchmarks"] = doc["benchmarks"][:2]
    for bench in doc["benchmarks"]:
        bench["runs"] = bench["runs"][:2]
        for run in bench["runs"]:
            for side in ("baseline", "candidate"):
                run[side]["iterations_ns"] = run[side]["iterations_ns"][:3]
                run[side]["warmup_ns"] = [5, 6]
    failed = copy.deepcopy(doc["benchmarks"][0]["runs"][0])
    failed.update(index=2, status="timeout", reason="candidate: no barrier progress")
    failed["candidate"].update(
        status="timeout", iterations_ns=[], hit_limit="timeout", missing={"cpu_ns": "why"}
    )
    doc["benchmarks"][0]["runs"].append(failed)
    sequential = copy.deepcopy(doc["benchmarks"][1])
    sequential.update(name="sequential one", method="sequential")
    for run in sequential["runs"]:
        run["order"] = ["candidate", "baseline"]
    doc["benchmarks"].append(sequential)
    doc["state"] = {"complete": False, "stopped": "interrupted by SIGINT", "updated": "x"}
    results.from_dict(doc)  # the base itself is valid
    return doc


BASE = base_document()


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path (keys and indexes) into ``value``, the root included."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


#: Paths into a run's ``order`` are left alone until from_dict checks its items (see above).
BASE_PATHS = [p for p in paths(BASE) if "order" not in p]


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    doc: Any = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(BASE_PATHS))
        try:
            target = at(doc, path)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced it
        action = draw(st.sampled_from(["replace", "delete", "add", "duplicate"]))
        if not path and action in ("replace", "delete"):
            doc = draw(MUTATION_VALUES)
        elif action == "replace":
            at(doc, path[:-1])[path[-1]] = draw(MUTATION_VALUES)
        elif action == "delete":
            del at(doc, path[:-1])[path[-1]]
        elif action == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(FIELD_NAMES) | st.text(max_size=6))] = draw(MUTATION_VALUES)
        elif action == "duplicate" and isinstance(target, list) and target:
            target.append(copy.deepcopy(target[draw(st.integers(0, len(target) - 1))]))
    return doc


# --------------------------------------------------------------------------------------------
# Results documents


def accepts_or_refuses(data: Any) -> results.ResultsDocument | None:
    try:
        return results.from_dict(data, source="fuzz.json")
    except ResultsError as e:
        error = e
    assert error.message.startswith("fuzz.json: ")
    return None


@FUZZ
@given(JSON)
@example({"schema": "duet-results/1", "benchmarks": [{"name": "x", "runs": [None]}]})
@example({"schema": "duet-results/99", "benchmarks": []})
@example({"schema": "duet-results/x", "benchmarks": []})
@example({"schema": "duet-results/1", "benchmarks": [], "extra": 1})
def test_fuzz_results_from_arbitrary_values(data: Any) -> None:
    accepts_or_refuses(data)


@FUZZ
@given(mutated_documents())
def test_fuzz_results_from_mutated_documents(data: Any) -> None:
    doc = accepts_or_refuses(data)
    if doc is not None:
        # What was accepted can be written and read back unchanged.
        assert results.from_dict(json.loads(results.dumps(doc))) == doc


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    # Module-scoped: hypothesis runs many examples per test and a function-scoped fixture
    # would be shared between them anyway.
    with tempfile.TemporaryDirectory(prefix="duet-fuzz-") as d:
        yield Path(d)


FIXTURE_TEXT = FIXTURE.read_text()


@FUZZ
@given(
    st.one_of(
        st.text(max_size=200),
        st.integers(0, len(FIXTURE_TEXT)).map(lambda n: FIXTURE_TEXT[:n]),
        st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
        mutated_documents().map(json.dumps),
    )
)
@example("")
@example("\ufeff{}")
@example('{"schema": "duet-results/1", "benchmarks": [')
def test_fuzz_results_load_of_arbitrary_files(scratch: Path, text: str) -> None:
    path = scratch / "results.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        results.load(path)
    except ResultsError as e:
        message = e.message
    else:
        return
    assert str(path) in message


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, '{"schema": "duet-results/1", "benchmarks": [], "x": ' + "1" * 5000 + "}"],
    ids=["deep-nesting", "huge-integer"],
)
def test_json_that_python_refuses_to_build_is_a_results_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ResultsError):
        results.load(path)


def test_nan_in_a_results_file_is_refused_on_load(tmp_path: Path) -> None:
    doc = copy.deepcopy(BASE)
    doc["environment"]["load_average"] = [math.nan, 1.0, 1.0]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError):
        results.dumps(results.load(path))


def test_order_with_items_of_mixed_types_is_a_results_error() -> None:
    doc = copy.deepcopy(BASE)
    doc["benchmarks"][2]["runs"][0]["order"] = ["baseline", 2]
    with pytest.raises(ResultsError):
        results.from_dict(doc)


# --------------------------------------------------------------------------------------------
# The barrier file

BARRIER_CODES = {"bad_size", "bad_magic", "bad_version", "bad_parties", "bad_slot", "slot_in_use"}


def valid_barrier(parties: int) -> bytearray:
    data = bytearray(duet_barrier.file_size(parties))
    struct.pack_into(
        "<QQQQQ",
        data,
        0,
        duet_barrier.MAGIC,
        duet_barrier.PROTOCOL_VERSION,
        parties,
        1_700_000_000_000_000_000,
        4242,
    )
    return data


@st.composite
def mutated_barriers(draw: st.DrawFn) -> bytes:
    data = valid_barrier(draw(st.integers(1, duet_barrier.MAX_PARTIES)))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["word", "byte", "truncate", "extend"]))
        if action == "word" and len(data) >= 8:
            word = draw(st.integers(0, len(data) // 8 - 1))
            value = draw(st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2, 3, 64, 65]))
            struct.pack_into("<Q", data, 8 * word, value)
        elif action == "byte" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif action == "truncate":
            del data[draw(st.integers(0, len(data))) :]
        elif action == "extend":
            data += draw(st.binary(max_size=80))
    return bytes(data)


SLOTS = st.none() | st.integers(-3, 70) | st.integers()


def validates_or_refuses(data: bytes, slot: int | None) -> None:
    try:
        parties = duet_barrier.validate(data, slot, "fuzz.barrier")
    except duet_barrier.BarrierFileError as e:
        error = e
    else:
        assert 1 <= parties <= duet_barrier.MAX_PARTIES
        assert len(data) == duet_barrier.file_size(parties)
        return
    assert error.code in BARRIER_CODES
    assert "fuzz.barrier" in str(error)


@FUZZ
@given(st.binary(max_size=300), SLOTS)
def test_fuzz_barrier_validate_arbitrary_bytes(data: bytes, slot: int | None) -> None:
    validates_or_refuses(data, slot)


@FUZZ
@given(mutated_barriers(), SLOTS)
def test_fuzz_barrier_validate_mutated_headers(data: bytes, slot: int | None) -> None:
    validates_or_refuses(data, slot)


@FUZZ
@given(mutated_barriers(), st.integers(-1, 65))
def test_fuzz_barrier_attach_mutated_files(scratch: Path, data: bytes, slot: int) -> None:
    path = scratch / "fuzz.barrier"
    path.write_bytes(data)
    try:
        barrier = duet_barrier.attach(str(path), slot)
    except duet_barrier.BarrierFileError as e:
        code = e.code
    else:
        barrier.close()
        return
    assert code in BARRIER_CODES


# --------------------------------------------------------------------------------------------
# A side's samples file (written by the benchmark: untrusted)

SAMPLE_ITEMS = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["warmup", "measure", "other"]) | JSON,
        "index": JSON,
        "start_ns": st.integers() | JSON,
        "duration_ns": st.integers() | JSON,
        "cpu_ns": st.integers() | JSON,
        "error": JSON,
        "done": JSON,
        "inner_loops": JSON,
        "duet_samples": JSON,
    },
)
SAMPLE_LINES = st.lists(
    SAMPLE_ITEMS.map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=40), max_size=12
).map("\n".join)


@settings(FUZZ, max_examples=100)
@given(SAMPLE_LINES | st.text(max_size=300))
@example("[" * 100_000)
@example('{"phase": "measure", "duration_ns": ' + "9" * 5000 + "}")
@example('{"phase": "measure", "duration_ns": NaN}\n{"error": Infinity}')
@example('{"phase": "measure", "duration_ns": 5, "start_ns": "x", "cpu_ns": true}')
def test_fuzz_read_samples_never_raises(scratch: Path, text: str) -> None:
    path = scratch / "samples.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    samples = read_samples(path)
    assert isinstance(samples, Samples)
    assert all(isinstance(d, int) and d > 0 for d in samples.iterations_ns + samples.warmup_ns)
    assert len(samples.iteration_start_ns) == len(samples.iterations_ns)


# --------------------------------------------------------------------------------------------
# The measuring lock's holder text (a world-writable file: anyone can write anything)


@FUZZ
@given(
    st.binary(max_size=300)
    | JSON.map(lambda v: json.dumps(v).encode())
    | st.fixed_dictionaries(
        {
            "pid": st.integers() | JSON,
            "started": st.floats() | JSON,
            "command": st.text() | JSON,
        }
    ).map(lambda v: json.dumps(v).encode())
)
@example(b'{"pid": 12, "started": NaN, "command": "duet run"}')
@example(b'{"pid": 12, "started": 1e308, "command": "duet run"}')
@example(b'{"pid": 12, "started": 1, "command": "\\u001b[31mred\\u0007"}')
@example(b"[" * 100_000)
@example(b"[" * 4000)
def test_fuzz_lock_holder_text(data: bytes) -> None:
    holder = parse_holder(data)
    if holder is None:
        return
    assert isinstance(holder, Holder)
    assert holder.pid > 0
    text = holder.describe(now=1_800_000_000.0)
    assert text.startswith(f"another duet (pid {holder.pid}, `")
    assert all(c.isprintable() for c in text)
