"""What this machine allows and what will disturb measurements (``duet doctor``).

Pure checks: everything is read through the machine reader (:mod:`duet_bench.machine`) from
injectable ``/sys`` and ``/proc`` roots (synthetic trees in the tests, the real ones in
``duet doctor``) and returned as a frozen :class:`Diagnosis`; nothing is printed here. Each
problem is a
:class:`Finding` that says *what* was found, *why* it matters for a measurement and the exact
command that *fixes* it (``docs/architecture.md``, rule 2).

What is checked, and where the advice comes from:

- isolation: the level ``duet run`` would get, from the isolation backends' own probes
  (:func:`duet_bench.isolation.cgroup_v2.probe_v2`,
  :func:`duet_bench.isolation.cgroup_v1.probe_v1`), so the doctor never promises what the runner
  then refuses; the cgroup layout (v1, v2, hybrid), its controllers, and whether we may use them
  (root, a delegated subtree, or neither);
- topology: the core pair ``duet run`` would choose (:func:`duet_bench.topology.choose_pair`), SMT
  siblings, and whether this is a VM, in which case host SMT is invisible (Beyer et al.,
  *Reliable benchmarking*, section 3.4);
- frequency: governor, energy-performance preference, boost/turbo, ``intel_pstate`` and
  ``amd_pstate`` state, thermal throttling and temperatures (Fichte et al., *Complications for
  Computational Experiments from Modern Processors*, CP 2021, sections 3-4);
- clocksource, swap and swappiness, load average, CPU pressure (PSI) and steal time;
- another duet already running (live ``duet-<pid>-*`` entries in ``/dev/shm``, ``/var/tmp``
  and the cgroup hierarchies), and leftovers of one that crashed.

Severities: ``error`` (duet cannot measure as asked), ``warning`` (measurements will be
disturbed), ``notice`` (a limit of this machine worth knowing, with what to do about it).
Checks that passed are :class:`Check` lines, without a fix.

One module per concern: :mod:`~duet_bench.doctor.model` (findings, checks, the diagnosis),
:mod:`~duet_bench.doctor.isolation`, :mod:`~duet_bench.doctor.topology`,
:mod:`~duet_bench.doctor.frequency` (with the clocksource), :mod:`~duet_bench.doctor.memory`,
:mod:`~duet_bench.doctor.load` (with the neighbours), :mod:`~duet_bench.doctor.thermal`,
:mod:`~duet_bench.doctor.duets` (other duet runs) and
:mod:`~duet_bench.doctor.diagnose`, which asks each of them in turn.
"""

from __future__ import annotations

from duet_bench.doctor.diagnose import diagnose
from duet_bench.doctor.isolation import real_probes
from duet_bench.doctor.load import (
    BUSY_WARNING,
    LOAD_WARNING,
    NEIGHBOUR_SHARE,
    NEIGHBOURS_SHOWN,
    PRESSURE_WARNING_PCT,
    STEAL_WARNING,
)
from duet_bench.doctor.memory import SWAPPINESS_WARNING
from duet_bench.doctor.model import (
    REQUIREMENTS,
    SEVERITIES,
    Check,
    Diagnosis,
    Finding,
    Requirement,
    Severity,
)
from duet_bench.doctor.thermal import THERMAL_ABSOLUTE_MC, THERMAL_MARGIN_MC

__all__ = [
    "BUSY_WARNING",
    "LOAD_WARNING",
    "NEIGHBOURS_SHOWN",
    "NEIGHBOUR_SHARE",
    "PRESSURE_WARNING_PCT",
    "REQUIREMENTS",
    "SEVERITIES",
    "STEAL_WARNING",
    "SWAPPINESS_WARNING",
    "THERMAL_ABSOLUTE_MC",
    "THERMAL_MARGIN_MC",
    "Check",
    "Diagnosis",
    "Finding",
    "Requirement",
    "Severity",
    "diagnose",
    "real_probes",
]
