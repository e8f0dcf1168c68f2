"""``duet bisect GOOD BAD``: find the commit that made a benchmark slower with paired (duet)
comparisons, in about log2(n) steps; ``docs/bisect.md`` has the rules.

- :mod:`duet.bisect.history`: the commits searched (BAD's first-parent line back to GOOD);
- :mod:`duet.bisect.comparisons`: one comparison of two commits, built once, measured in
  rounds until decided or capped, every round a results file;
- :mod:`duet.bisect.search`: the search itself, over any comparison function;
- :mod:`duet.bisect.run`: the command's orchestration and ``bisect.json``;
- :mod:`duet.bisect.render`: the summary as text, markdown or json.
"""

from __future__ import annotations

from duet.bisect.run import Bisection, BisectOptions, bisect

__all__ = ["BisectOptions", "Bisection", "bisect"]
