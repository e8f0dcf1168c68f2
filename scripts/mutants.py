"""The mutation tier (issue 32; tests/README.md, "Mutants"): broken duets the suite must catch.

    python scripts/mutants.py --hand              # every hand-written mutant (measuring ones last)
    python scripts/mutants.py --hand --quiet-only # those that do not measure (CI's parallel phase)
    python scripts/mutants.py --generated sample  # CI's seeded sample of the generated mutants
    python scripts/mutants.py --generated full    # all of them (by hand: tens of minutes)
    python scripts/mutants.py --list              # what would run, without running it

Exits 1 when a hand-written mutant survives or the sample's score falls below the one recorded
in tests/mutants/score.json, 2 when a mutant cannot be applied or its tests fail unmutated.
``--json FILE`` writes every outcome.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mutants.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
