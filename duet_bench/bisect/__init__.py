"""``duet bisect GOOD BAD``: find the commit that made a benchmark slower with paired (duet)
comparisons, in about log2(n) steps; ``docs/bisect.md`` has the rules.

- :mod:`duet_bench.bisect.history`: the commits searched (BAD's first-parent line back to GOOD);
- :mod:`duet_bench.bisect.comparisons`: one comparison of two commits, built once, measured in
  rounds until decided or capped, every round a results file;
- :mod:`duet_bench.bisect.search`: the search itself, over any comparison function;
- :mod:`duet_bench.bisect.run`: the command's orchestration and ``bisect.json``;

the summary as text, markdown or json is :mod:`duet_bench.report.bisect` (every renderer
lives in ``report/``).
"""

from __future__ import annotations

from duet_bench.bisect.run import Bisection, BisectOptions, bisect

__all__ = ["BisectOptions", "Bisection", "bisect"]
