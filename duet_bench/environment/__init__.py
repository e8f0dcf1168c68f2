"""The environment a measurement was taken in (``docs/statistics.md``, method 7).

:func:`capture_environment` returns a JSON-ready dict for the results file: the CPU and its
topology, the chosen pair with its SMT siblings, kernel, cgroup version and isolation level,
what disturbs timings (frequency governor, turbo/boost, clocksource, swap, load, steal time,
thermal throttling; Fichte et al., *Complications for Computational Experiments from Modern
Processors*, CP 2021) and the versions of Python and duet. :func:`machine_kind` turns a record
into the short description merging compares.

A value that cannot be read is ``None`` in the dict and its dotted path is a key of the
top-level ``"missing"`` map, whose value says why (:mod:`.record`).

One module per part of the record:

- :mod:`.capture`: :func:`capture_environment`, the assembly, and the Python and duet versions;
- :mod:`.cpu`: the CPU model, topology, the pair and how it was chosen, hypervisor, SMT;
- :mod:`.kernel`: kernel release and timing-relevant boot options, cgroups, clocksource;
- :mod:`.frequency`: frequency policy, turbo/boost, thermal throttling of the measured CPUs;
- :mod:`.memory`: memory, swap and swappiness;
- :mod:`.load`: :func:`load_average` and steal time;
- :mod:`.kind`: :func:`machine_kind`;
- :mod:`.record`: the ``missing`` convention.
"""

from duet_bench.environment.capture import ENVIRONMENT_VERSION, capture_environment
from duet_bench.environment.kind import machine_kind
from duet_bench.environment.load import load_average

__all__ = ["ENVIRONMENT_VERSION", "capture_environment", "load_average", "machine_kind"]
