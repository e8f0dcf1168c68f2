"""``duet doctor``: what this machine allows and what will disturb measurements."""

from __future__ import annotations

import json
import sys
from typing import cast

import click

from duet_bench.commands.finish import color_for
from duet_bench.commands.help import Command
from duet_bench.commands.output import format_option
from duet_bench.doctor import Requirement, diagnose
from duet_bench.errors import EnvironmentNotReady
from duet_bench.report.doctor import render_text

#: Seconds between the two /proc/stat readings that measure steal and busy time *now*.
SAMPLE_S = 0.5


@click.command(
    cls=Command,
    exits={
        0: "the machine gives what --require asks (always without --require)",
        1: "",
        3: "--require names a level that is not available",
    },
    interrupts=False,
)
@format_option(
    "text",
    "json",
    what="json: every fact, the isolation level, the pair and the findings "
    "({severity, what, why, fix}).",
    elsewhere="reports of measurements (duet report), not of the machine",
)
@click.option(
    "--require",
    type=click.Choice(["cgroup", "cgroup-v2", "none"]),
    default="none",
    show_default=True,
    help="Exit 3 unless this isolation level is available (cgroup: v1 or v2). For CI jobs that "
    "must not measure without cgroups.",
)
def doctor(fmt: str, require: str) -> None:
    """Report what isolation this machine allows and what will disturb measurements.

    Checks cgroups (version, controllers, privileges), the core pair duet would use (SMT
    siblings, VM), frequency governor, turbo/boost, intel_pstate/amd_pstate, clocksource, swap,
    load, steal time, temperatures and other duets running, and prints for each problem what
    it does to a measurement and the exact command that fixes it.
    """
    requirement = cast("Requirement", require)  # click.Choice has checked it
    diagnosis = diagnose(sample_s=SAMPLE_S)
    satisfied = diagnosis.satisfies(requirement)
    if fmt == "json":
        payload = diagnosis.to_dict()
        payload["require"] = {"level": require, "satisfied": satisfied}
        click.echo(json.dumps(payload, indent=1, ensure_ascii=False))
    else:
        click.echo(render_text(diagnosis.to_dict(), color=color_for(sys.stdout)), nl=False)
    if not satisfied:
        fixes = [p.fix for p in diagnosis.probes.values() if not p.ok and p.fix]
        raise EnvironmentNotReady(
            f"--require {require}: this machine gives duet {diagnosis.isolation} isolation",
            fix=fixes[0] if fixes else None,
        )
