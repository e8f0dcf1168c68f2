#!/usr/bin/env python3
"""The end of ``make test``'s log: every skip of the run, counted by reason, and whether CI
allows it (``tests/allowed_skips.py``), read from the JUnit XML of each pytest invocation (the
host's two and the guest tier's).

    python scripts/test_summary.py duet-results/pytest-*.xml duet-results/guest/system-tests.xml

Missing files are named and ignored (a step that did not run). Exit 0 always: the pytest runs
themselves fail on a skip CI does not allow; this is the report.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.allowed_skips import why_allowed


def main(paths: list[str]) -> int:
    reasons: Counter[tuple[str, str]] = Counter()
    totals: Counter[str] = Counter()
    xfails: list[str] = []
    for name in paths:
        path = Path(name)
        if not path.is_file():
            print(f"tests: {name}: not written (that step did not run)")
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            totals["tests"] += 1
            skipped = case.find("skipped")
            if skipped is not None and skipped.get("type") == "pytest.xfail":
                # An expected failure (strict: an unexpected pass fails the run), not a skip.
                totals["xfailed"] += 1
                xfails.append(f"{path.name}: {case.get('name')}: {skipped.get('message', '')}")
            elif skipped is not None:
                totals["skipped"] += 1
                reasons[(path.name, skipped.get("message", "").removeprefix("Skipped: "))] += 1
            elif case.find("failure") is not None or case.find("error") is not None:
                totals["failed"] += 1
    print(
        f"tests: {totals['tests']} run in {len(paths)} invocation(s), {totals['failed']} failed, "
        f"{totals['skipped']} skipped, {totals['xfailed']} expected to fail"
    )
    for line in xfails:
        print(f"  expected to fail (strict xfail): {line}")
    for (where, reason), count in sorted(reasons.items()):
        why = why_allowed(reason)
        verdict = f"allowed: {why}" if why else "NOT ALLOWED in CI"
        print(f"  {count:3d} x [{where}] {reason}\n        {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
