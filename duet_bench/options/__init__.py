"""Each command's options, typed once at the CLI boundary: one frozen dataclass per command,
built and checked once from click's values by its ``from_click`` and passed down whole.

- :mod:`~duet_bench.options.common`: the groups of options several commands share
  (:class:`~duet_bench.options.common.AnalysisGiven`, ``PlanGiven``, ``MachineGiven``: what
  :func:`duet_bench.commands.options.analysis_options`, ``run_options`` and ``machine_options``
  declare) and ``explicit_settings``;
- :mod:`~duet_bench.options.measuring`: the commands that measure two versions (``RunOptions``
  with its ``Sides``, ``CompareCommandOptions``, ``BisectCommandOptions``);
- :mod:`~duet_bench.options.reading`: the commands that read a results file
  (``AnalyzeOptions``, ``ReportOptions``);
- :mod:`~duet_bench.options.calibrate`: ``duet calibrate`` (``CalibrateOptions``, what its A/A
  measures in ``AASource``).

The ranges and choices (``--confidence`` in (0, 1), ``--metric`` one of the metric choices, the
bounds of :data:`duet_bench.limits.LIMITS`) are checked by the click types of
:mod:`duet_bench.commands.options`, the one check of the command line: click says which option
and why, and exits 2. What click cannot check, a combination of options, is checked here (a
:class:`duet_bench.errors.UsageError`). The library keeps its own invariants
(:class:`duet_bench.analysis.AnalysisSettings`, the configuration's checks) for the values that
do not come from here.

Only the standard library, click, :mod:`duet_bench.defaults`, :mod:`duet_bench.settings` and
:mod:`duet_bench.errors` at module level. The commands import these modules when they run, not
at module level: their dataclasses cost a few milliseconds to create, which ``duet --help`` need
not pay. This package re-exports nothing: each importer names the module.
"""
