#!/usr/bin/env python3
"""The end of ``make test``'s log: every skip of the run, counted by reason, and whether CI
allows it on the machine it was seen on (``tests/allowed_skips.py``), read from the JUnit XML
of each pytest invocation: the host's two, and the guest tier's after ``--guest``.

    python scripts/test_summary.py duet-results/pytest-*.xml \\
        --guest duet-results/guest/system-tests.xml

Exits 1 when a skip is not allowed on its machine, or when a test the host left to the guest
(an allowed skip with ``runs_in_guest``) did not pass in the guest (it failed, skipped, did not
run, or the guest's file is missing); 0 otherwise. A missing host file is named and ignored (a
step that did not run, after a failure that already fails the run).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.allowed_skips import Machine, allowed_entry


@dataclass(frozen=True, slots=True)
class Case:
    """One test case of a JUnit file: its id, and ``passed``, ``failed``, ``skipped`` or
    ``xfailed`` with the message."""

    test_id: str
    outcome: str
    message: str
    file: str


def read_cases(path: Path) -> list[Case]:
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        skipped = case.find("skipped")
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            # An expected failure (strict: an unexpected pass fails the run), not a skip.
            outcome, message = "xfailed", skipped.get("message", "")
        elif skipped is not None:
            outcome = "skipped"
            message = skipped.get("message", "").removeprefix("Skipped: ")
        elif failed is not None:
            outcome, message = "failed", failed.get("message", "")
        else:
            outcome, message = "passed", ""
        cases.append(Case(test_id, outcome, message, path.name))
    return cases


def summarise(host: list[str], guest: str | None) -> tuple[list[str], bool]:
    """The report's lines, and whether the skips are all allowed and every test left to the
    guest passed there."""
    lines: list[str] = []
    ok = True
    files: list[tuple[Machine, str]] = [("host", name) for name in host]
    if guest is not None:
        files.append(("guest", guest))
    cases: dict[Machine, list[Case]] = {"host": [], "guest": []}
    guest_read = False
    for machine, name in files:
        path = Path(name)
        if not path.is_file():
            lines.append(f"tests: {name}: not written (that step did not run)")
            continue
        cases[machine] += read_cases(path)
        guest_read = guest_read or machine == "guest"
    every = cases["host"] + cases["guest"]
    totals = Counter(case.outcome for case in every)
    lines.append(
        f"tests: {len(every)} run in {len(files)} invocation(s), {totals['failed']} failed, "
        f"{totals['skipped']} skipped, {totals['xfailed']} expected to fail"
    )
    for case in every:
        if case.outcome == "xfailed":
            lines.append(f"  expected to fail (strict xfail): {case.file}: {case.test_id}")
    reasons: Counter[tuple[Machine, str, str]] = Counter()
    left_to_guest: list[Case] = []
    for machine, machine_cases in cases.items():
        for case in machine_cases:
            if case.outcome != "skipped":
                continue
            reasons[(machine, case.file, case.message)] += 1
            entry = allowed_entry(case.message, machine)
            if entry is not None and entry.runs_in_guest:
                left_to_guest.append(case)
    for (machine, where, reason), count in sorted(reasons.items()):
        entry = allowed_entry(reason, machine)
        if entry is None:
            ok = False
            verdict = f"NOT ALLOWED on the {machine}: add the test's needs to the machine, or a "
            verdict += "pattern for the whole reason to tests/allowed_skips.py"
        else:
            verdict = f"allowed: {entry.why}"
        lines.append(f"  {count:3d} x [{machine}: {where}] {reason}\n        {verdict}")
    in_guest = {case.test_id: case for case in cases["guest"]}
    for case in left_to_guest:
        there = in_guest.get(case.test_id)
        if there is not None and there.outcome == "passed":
            lines.append(f"  left to the guest, passed there: {case.test_id}")
            continue
        ok = False
        if not guest_read:
            why = "the guest's results were not read (the guest tier did not run its system tests)"
        elif there is None:
            why = "the guest did not run it (is it marked `guest`?)"
        else:
            why = f"it {there.outcome} there: {there.message}"
        lines.append(
            f"  LEFT TO THE GUEST, NOT PASSED THERE: {case.test_id}: {why}. The host skipped it "
            "because the guest tier runs it: mark it `guest` and make it pass there"
        )
    return lines, ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host", nargs="*", help="the host's JUnit files")
    parser.add_argument("--guest", help="the guest tier's JUnit file (system-tests.xml)")
    args = parser.parse_args(argv)
    lines, ok = summarise(args.host, args.guest)
    print("\n".join(lines))
    if not ok:
        print(
            "tests: FAILED: a skip CI does not allow, or a test left to the guest that did not "
            "pass there (above)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
