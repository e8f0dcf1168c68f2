"""The false-failure budget (issue 32): every test that asserts a measured quantity (a verdict,
a ratio, a timing bound) has, in ``tests/budget.toml``, the probability that it fails by chance
on a correct duet, and how that figure was obtained. ``scripts/test_budget.py`` prints the sum
per CI run, which ``tests/README.md`` shows and which must stay below 1/200.

Which tests assert a measured quantity is found from their code, not declared: an ``assert``
(in the test, or in a helper of ``tests/`` it calls) that compares a verdict with a verdict
word, or orders a quantity named like a measurement (``ratio``, ``skew``, ``*_ns``, ``busy``,
``share``) or a quotient of two values against a non-zero number, or a call of ``tests/aa.py``'s
A/A checks. A measuring test found so must be in the table, as a figure or as an exemption
that says why it cannot fail by chance (``tests/conftest.py`` fails it otherwise).

Figures, by ``how``:

- ``detect``: a verdict of ``regression`` (or ``improvement``) and optionally a window on the
  ratio, for a true ratio ``ratio`` over ``runs`` runs whose log ratios are normal with standard
  deviation ``sigma``: the verdict is missed when the t interval's lower bound does not clear 1
  (noncentral t; duet's expanded percentile interval is built to have about the t interval's
  width) or the estimate is under ``1 + threshold``; the window is missed when the
  estimate falls outside it. Summed (a union bound).
- ``window``: the window alone (a ratio asserted without a verdict).
- ``exact``: computed exactly (a sign test's tail, a bound that cannot fail), ``p`` given.
- ``measured``: failures counted over repetitions with ``command``; ``p`` is the 95% upper bound
  (``3 / n`` with no failure).
- ``bound``: a stated bound of a statistical check (tests/aa.py's t bound), ``p`` given.
- ``search``: ``duet bisect``, whose search is right when each of its ``comparisons`` that spans
  a change of ``ratio`` says so. A comparison that cannot decide gets more runs, up to
  ``max_runs``: it goes wrong when, at one of its ``looks`` (the first at ``runs``), its
  interval lies inside the threshold's band ("no change": noncentral t, as ``detect``), or when
  at ``max_runs`` it is still not a regression. Summed over looks and comparisons.
- ``binomial``: a percentile of ``n`` timed iterations (a start skew): it fails only when at
  least ``k`` of them are disturbed, each with probability ``q`` independently (the model; a
  burst of load that disturbs a whole test breaks its independence, which ``basis`` says).
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUDGET = Path(__file__).with_name("budget.toml")
#: The suite's target: fails by chance in under 1 CI run of 200.
TARGET = 1 / 200
HOWS = ("detect", "window", "search", "exact", "measured", "bound", "binomial")

#: A name that says the value is measured.
MEASURED_NAME = re.compile(r"(?<![a-z])ratios?\b|skew|_ns\b|_ns['\"]|busy|share")
VERDICT_WORDS = frozenset({"regression", "improvement", "no change", "inconclusive"})
#: tests/aa.py's A/A checks: calling one asserts a measured quantity.
AA_CHECKS = frozenset({"assert_neither_side_favoured", "assert_not_slowed"})


@dataclass(frozen=True, slots=True)
class Figure:
    """One test's chance of failing by chance on a correct duet, per time it runs."""

    test_id: str
    how: str
    p: float
    basis: str
    #: How many times a CI run runs it (2: on the host and in the guest tier).
    per_ci: int = 1


@dataclass(frozen=True, slots=True)
class Exempt:
    test_id: str
    why: str


def detection_miss(
    *, ratio: float, runs: int, sigma: float, threshold: float, confidence: float = 0.99
) -> float:
    """P(the verdict is not ``regression``) for a true ``ratio`` > 1 (or not ``improvement``
    for a ``ratio`` < 1), normal run log ratios of standard deviation ``sigma``."""
    import scipy.stats

    effect = abs(math.log(ratio))
    nc = effect * math.sqrt(runs) / sigma
    quantile = float(scipy.stats.t.ppf((1 + confidence) / 2, runs - 1))
    bound_misses = float(scipy.stats.nct.cdf(quantile, runs - 1, nc))
    under_threshold = float(
        scipy.stats.norm.cdf((math.log1p(threshold) - effect) * math.sqrt(runs) / sigma)
    )
    return min(1.0, bound_misses + under_threshold)


def wrong_no_change(*, ratio: float, runs: int, sigma: float, threshold: float) -> float:
    """P(the verdict is ``no change`` for a true ``ratio`` beyond ``1 + threshold``): the t
    interval's upper bound under ``1 + threshold``."""
    import scipy.stats

    nc = (abs(math.log(ratio)) - math.log1p(threshold)) * math.sqrt(runs) / sigma
    quantile = float(scipy.stats.t.ppf(0.995, runs - 1))
    return float(scipy.stats.nct.cdf(-quantile, runs - 1, nc))


def window_miss(*, ratio: float, runs: int, sigma: float, low: float, high: float) -> float:
    """P(the estimate, a geometric mean over ``runs`` runs, falls outside ``(low, high)``)."""
    import scipy.stats

    se = sigma / math.sqrt(runs)
    below = float(scipy.stats.norm.cdf((math.log(low) - math.log(ratio)) / se))
    above = float(scipy.stats.norm.sf((math.log(high) - math.log(ratio)) / se))
    return below + above


def figure_of(test_id: str, entry: dict[str, Any]) -> Figure:
    """The figure of one table entry; the model's figures are computed here, not written."""
    how = entry.get("how")
    if how not in HOWS:
        raise ValueError(f"{test_id}: how = {how!r}; write one of {', '.join(HOWS)}")
    basis = str(entry.get("basis", "")).strip()
    if not basis:
        raise ValueError(f"{test_id}: no basis: say where the figure's inputs come from")
    per_ci = int(entry.get("per_ci", 1))
    if how in ("detect", "window"):
        model = {k: entry[k] for k in ("ratio", "runs", "sigma")}
        p = 0.0
        if how == "detect":
            p += detection_miss(**model, threshold=float(entry.get("threshold", 0.02)))
        if "window" in entry:
            low, high = entry["window"]
            p += window_miss(**model, low=low, high=high)
        elif how == "window":
            raise ValueError(f"{test_id}: how = 'window' needs window = [low, high]")
    elif how == "search":
        model = {k: entry[k] for k in ("ratio", "sigma", "threshold")}
        wrong = wrong_no_change(**model, runs=int(entry["runs"]))
        undecided = detection_miss(**model, runs=int(entry["max_runs"]))
        p = int(entry["comparisons"]) * (int(entry["looks"]) * wrong + undecided)
        if "window" in entry:
            low, high = entry["window"]
            p += window_miss(
                ratio=entry["ratio"], runs=entry["runs"], sigma=entry["sigma"], low=low, high=high
            )
    elif how == "binomial":
        import scipy.stats

        n, k, q = int(entry["n"]), int(entry["k"]), float(entry["q"])
        p = float(scipy.stats.binom.sf(k - 1, n, q))
    else:
        p = float(entry["p"])
        if how == "measured" and not entry.get("command"):
            raise ValueError(f"{test_id}: a measured figure needs the command that measured it")
    # A second check in the same test with a figure of its own (tests/aa.py's t bound).
    p += float(entry.get("extra_p", 0.0))
    return Figure(test_id, how, min(1.0, p), basis, per_ci)


def load(path: Path | None = None) -> tuple[list[Figure], list[Exempt]]:
    """The table's figures and exemptions (``tests/budget.toml`` unless ``path``)."""
    with (path or BUDGET).open("rb") as f:
        table = tomllib.load(f)
    figures = [figure_of(k, v) for k, v in table.get("test", {}).items()]
    exempt = [Exempt(k, str(v["why"])) for k, v in table.get("exempt", {}).items()]
    return figures, exempt


def listed(path: Path | None = None) -> set[str]:
    """The node ids the table has, as figures or exemptions (read only: no figure computed,
    so no scipy, which the guest's environment may lack)."""
    with (path or BUDGET).open("rb") as f:
        table = tomllib.load(f)
    return set(table.get("test", {})) | set(table.get("exempt", {}))


def per_ci_run(figures: list[Figure]) -> float:
    """The chance a CI run fails by chance, bounded by the sum (the union bound)."""
    return sum(f.p * f.per_ci for f in figures)


# --- finding the tests that assert a measured quantity ------------------------------------


def _names(node: ast.AST) -> str:
    return ast.unparse(node)


def _is_nonzero_number(node: ast.AST) -> bool:
    """A non-zero numeric constant in ``node``, not counting indices (``skews[n // 10]``)."""
    if isinstance(node, ast.Subscript):
        return _is_nonzero_number(node.value)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value != 0
    return any(_is_nonzero_number(child) for child in ast.iter_child_nodes(node))


def _is_count(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _measured_compare(node: ast.Compare) -> bool:
    operands = [node.left, *node.comparators]
    text = [_names(o) for o in operands]
    if any("verdict" in t for t in text) and any(
        isinstance(sub, ast.Constant) and sub.value in VERDICT_WORDS
        for o in operands
        for sub in ast.walk(o)
    ):
        return True
    if not any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops):
        return False
    measured = any(
        (MEASURED_NAME.search(t) or _is_quotient(o)) and not _is_count(o)
        for o, t in zip(operands, text, strict=True)
    )
    return measured and any(_is_nonzero_number(o) for o in operands)


def _is_quotient(node: ast.AST) -> bool:
    """A ratio computed in place (``sorted(b)[5] / sorted(a)[5]``): a division of two values
    that are not constants (nor a path joined with a string: ``plots / f"{stem}.png"``)."""
    return any(
        isinstance(sub, ast.BinOp)
        and isinstance(sub.op, ast.Div)
        and not isinstance(sub.left, ast.Constant | ast.JoinedStr)
        and not isinstance(sub.right, ast.Constant | ast.JoinedStr)
        for sub in ast.walk(node)
    )


def measured_assertions(
    function: Callable[..., Any], *, _seen: set[str] | None = None
) -> Iterator[str]:
    """The assertions of a measured quantity in ``function`` and in the helpers of ``tests/``
    it calls (by name, from its module), as source lines."""
    seen = set() if _seen is None else _seen
    key = f"{function.__module__}.{function.__qualname__}"
    if key in seen:
        return
    seen.add(key)
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return
    tree = ast.parse(source)
    namespace = getattr(inspect.getmodule(function), "__dict__", {})
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and any(
            isinstance(sub, ast.Compare) and _measured_compare(sub) for sub in ast.walk(node.test)
        ):
            yield f"{function.__name__}: assert {_names(node.test)}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in AA_CHECKS:
                yield f"{function.__name__}: {_names(node)}"
                continue
            helper = namespace.get(name) if isinstance(node.func, ast.Name) else None
            if callable(helper) and getattr(helper, "__module__", "").startswith("tests."):
                yield from measured_assertions(helper, _seen=seen)
