"""The command line of the mutation tier (``scripts/mutants.py``)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.mutants.catalogue import HAND
from tests.mutants.engine import Mutant, MutantError, Outcome, check_applies, run_all, score
from tests.mutants.equivalent import is_equivalent
from tests.mutants.generate import AREAS, all_mutants, area_of, in_sample

SCORE_FILE = Path(__file__).with_name("score.json")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/mutants.py", description=__doc__)
    p.add_argument("--hand", action="store_true", help="the hand-written mutants")
    p.add_argument(
        "--quiet-only", action="store_true", help="only the mutants whose tests do not measure"
    )
    p.add_argument(
        "--measuring-only", action="store_true", help="only the mutants whose tests measure"
    )
    p.add_argument(
        "--generated",
        choices=("sample", "full"),
        help="the generated mutants: CI's seeded sample or all of them",
    )
    p.add_argument("--only", action="append", default=[], help="mutants whose name contains this")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--list", action="store_true", help="list the mutants and stop")
    p.add_argument(
        "--json", type=Path, help="write every outcome to this file as it comes (JSON lines)"
    )
    p.add_argument(
        "--score-of",
        type=Path,
        metavar="JSONL",
        help="run nothing: score the selected generated mutants from a run's --json file",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="write the generated run's score to tests/mutants/score.json",
    )
    return p


def _selected(args: argparse.Namespace) -> tuple[list[Mutant], list[Mutant]]:
    hand = list(HAND) if args.hand else []
    generated: list[Mutant] = []
    if args.generated:
        generated = [m for m in all_mutants() if not is_equivalent(m.name)]
        if args.generated == "sample":
            generated = [m for m in generated if in_sample(m)]
    if args.quiet_only:
        hand = [m for m in hand if not m.measures]
    if args.measuring_only:
        hand = [m for m in hand if m.measures]
        generated = []
    if args.only:
        hand = [m for m in hand if any(o in m.name for o in args.only)]
        generated = [m for m in generated if any(o in m.name for o in args.only)]
    return hand, generated


def _print(o: Outcome) -> None:
    mark = {
        "killed": "killed  ",
        "timeout": "killed  ",
        "survived": "SURVIVED",
        "error": "ERROR   ",
    }
    print(
        f"{mark[o.status]} {o.wall_s:6.1f} s  {o.mutant.name}  ({o.mutant.why}){_detail(o)}",
        flush=True,
    )


def _detail(o: Outcome) -> str:
    if o.status == "error":
        return "\n    " + o.detail.replace("\n", "\n    ")
    if o.status == "timeout":
        return f"  [{o.detail}]"
    return ""


def _percent(killed: int, judged: int) -> str:
    return f"{100.0 * killed / judged:.3g}%" if judged else "n/a"


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if not args.hand and not args.generated:
        args.hand = True
    hand, generated = _selected(args)
    errors = 0
    for m in [*hand, *generated]:
        try:
            check_applies(m)
        except MutantError as e:
            print(f"ERROR {e}", file=sys.stderr)
            errors += 1
    if errors:
        return 2
    if args.list:
        for m in [*hand, *generated]:
            print(f"{m.name}  [{' '.join(m.tests)}]  {m.why}")
        return 0
    # The generated ones in the order of their hashes: a run cut short is a random sample.
    generated.sort(key=lambda m: m.name.rsplit(":", 1)[1])
    if args.score_of is not None:
        return _score_of(args.score_of, generated, args)
    stream = args.json.open("w", encoding="utf-8") if args.json is not None else None

    def on_outcome(o: Outcome) -> None:
        _print(o)
        if stream is not None:
            stream.write(json.dumps(_record(o)) + "\n")
            stream.flush()

    begin = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcomes = run_all([*hand, *generated], jobs=args.jobs, on_outcome=on_outcome)
    except KeyboardInterrupt:
        print("interrupted: the running mutants were stopped and the copies removed")
        return 130
    finally:
        if stream is not None:
            stream.close()
    wall = time.monotonic() - begin
    rc = 0
    hand_names = {m.name for m in hand}
    hand_out = [o for o in outcomes if o.mutant.name in hand_names]
    gen_out = [o for o in outcomes if o.mutant.name not in hand_names]
    if any(o.status == "error" for o in outcomes):
        rc = 2
    print(f"\n{len(outcomes)} mutants in {wall:.0f} s ({args.jobs} at a time)")
    if hand_out:
        killed, judged = score(hand_out)
        survivors = [o.mutant.name for o in hand_out if o.status == "survived"]
        print(f"hand-written: {killed} of {judged} killed ({_percent(killed, judged)})")
        if survivors:
            print(
                "hand-written mutants that survived (every one must die: strengthen the tests "
                f"named in tests/mutants/catalogue.py): {', '.join(survivors)}"
            )
            rc = max(rc, 1)
    if gen_out:
        rc = max(rc, _report_generated(gen_out, args))
    return rc


def _score_of(path: Path, generated: list[Mutant], args: argparse.Namespace) -> int:
    """The score of ``generated`` from the outcomes a run wrote (``--json``); the mutants it
    did not reach are counted and left out."""
    done = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        done[r["name"]] = r
    outcomes = [
        Outcome(m, done[m.name]["status"], done[m.name]["wall_s"], done[m.name]["detail"])
        for m in generated
        if m.name in done
    ]
    missing = len(generated) - len(outcomes)
    print(f"{len(outcomes)} of the {len(generated)} selected mutants ran in {path} ({missing} not)")
    if not outcomes:
        return 2
    return _report_generated(outcomes, args)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _record(o: Outcome) -> dict[str, object]:
    return {
        "name": o.mutant.name,
        "status": o.status,
        "wall_s": round(o.wall_s, 2),
        "why": o.mutant.why,
        "detail": o.detail,
    }


def _report_generated(outcomes: list[Outcome], args: argparse.Namespace) -> int:
    killed, judged = score(outcomes)
    print(f"generated ({args.generated}): {killed} of {judged} killed ({_percent(killed, judged)})")
    areas: dict[str, dict[str, int]] = {}
    for area in AREAS:
        mine = [o for o in outcomes if area_of(o.mutant) == area]
        k, j = score(mine)
        areas[area] = {"killed": k, "judged": j}
        print(f"  {area}: {k} of {j} ({_percent(k, j)})")
    survivors = sorted(o.mutant.name for o in outcomes if o.status == "survived")
    if survivors:
        print("survivors:")
        by_name = {o.mutant.name: o for o in outcomes}
        for name in survivors:
            print(f"  {name}  ({by_name[name].mutant.why})")
    recorded = json.loads(SCORE_FILE.read_text()) if SCORE_FILE.exists() else {}
    if args.record:
        recorded[args.generated] = {
            "killed": killed,
            "judged": judged,
            "areas": areas,
            "survivors": survivors,
        }
        SCORE_FILE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"recorded in {SCORE_FILE}")
        return 0
    before = recorded.get(args.generated)
    if before is None or not judged:
        return 0
    if killed * before["judged"] < before["killed"] * judged:
        new = sorted(set(survivors) - set(before["survivors"]))
        print(
            f"the {args.generated} score fell: {_percent(killed, judged)} now, "
            f"{_percent(before['killed'], before['judged'])} recorded in {SCORE_FILE}; "
            f"new survivors: {', '.join(new) or 'none (fewer kills among new mutants)'}. Add or "
            "strengthen the tests that should kill them, or list a mutant that cannot be killed "
            "in tests/mutants/equivalent.py with the reason"
        )
        return 1
    return 0
