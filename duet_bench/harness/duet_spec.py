"""The worker spec: read the JSON file the runner wrote for one side and check every field.

Part of the worker (``duet_worker.py``), inside the measured environment: standard library
only, Python >= 3.8. The fields are described in ``docs/architecture.md`` ("Worker spec"); a
spec that breaks a rule raises :class:`SpecError` naming the field, which the worker turns into
exit code 2.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees the file where it lies in the duet source tree
    from duet_bench.harness import duet_outputs
else:
    import duet_outputs

SPEC_PROTOCOL = 1
DEFAULT_TARGET_ITERATION_NS = 10_000_000
DEFAULT_MAX_INNER_LOOPS = 10_000_000


class SpecError(Exception):
    """The worker spec is not valid (exit 2)."""


def _require(spec: dict[str, Any], key: str, kind: type, what: str) -> Any:
    if key not in spec:
        raise SpecError(f"the worker spec has no {key!r} ({what})")
    value = spec[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpecError(f"the worker spec's {key!r} must be an integer ({what}), got {value!r}")
    if not isinstance(value, kind):
        raise SpecError(
            f"the worker spec's {key!r} must be a {kind.__name__} ({what}), got {value!r}"
        )
    return value


def _check_callable_name(spec: dict[str, Any], key: str) -> None:
    name = spec.get(key)
    if name is None and key == "setup":
        return
    if not isinstance(name, str) or name.count(":") != 1 or not all(name.split(":")):
        raise SpecError(f"the worker spec's {key!r} must be 'module:function', got {name!r}")


def validate_spec(spec: Any, calibrate: bool = False) -> dict[str, Any]:
    """Check a parsed worker spec; raise :class:`SpecError` naming the first problem."""
    if not isinstance(spec, dict):
        raise SpecError("the worker spec must be a JSON object")
    protocol = _require(spec, "protocol", int, "the spec version")
    if protocol != SPEC_PROTOCOL:
        raise SpecError(
            f"worker spec protocol {protocol}, this worker speaks {SPEC_PROTOCOL}: the runner "
            "and the harness come from different duet releases"
        )
    kind = _require(spec, "kind", str, "command or python")
    if kind not in ("command", "python"):
        raise SpecError(f"the worker spec's 'kind' must be 'command' or 'python', got {kind!r}")
    if kind == "python" or calibrate:
        if kind != "python":
            raise SpecError("calibration applies to python benchmarks only (a command runs once)")
        _check_callable_name(spec, "callable")
        _check_callable_name(spec, "setup")
        sys_path = spec.get("sys_path", [])
        if not isinstance(sys_path, list) or not all(isinstance(p, str) for p in sys_path):
            raise SpecError(f"the worker spec's 'sys_path' must be a list of strings: {sys_path!r}")
        inner_loops = spec.get("inner_loops", 1)
        if isinstance(inner_loops, bool) or not isinstance(inner_loops, int) or inner_loops < 1:
            raise SpecError(f"'inner_loops' must be a positive integer, got {inner_loops!r}")
    if calibrate:
        return spec
    _require(spec, "side", str, "baseline or candidate")
    slot = _require(spec, "slot", int, "the barrier slot")
    _require(spec, "barrier", str, "the barrier file")
    warmup = _require(spec, "warmup", int, "warmup iterations")
    iterations = _require(spec, "iterations", int, "measured iterations")
    timeout_ns = _require(spec, "timeout_ns", int, "the barrier timeout")
    _require(spec, "samples", str, "the samples file")
    if slot < 0 or warmup < 0 or iterations < 0 or timeout_ns <= 0:
        raise SpecError(
            "slot, warmup and iterations must be >= 0 and timeout_ns > 0, got "
            f"slot={slot} warmup={warmup} iterations={iterations} timeout_ns={timeout_ns}"
        )
    if kind == "command":
        _require(spec, "command", str, "the shell command")
        shell = spec.setdefault("shell", "/bin/sh")
        if not isinstance(shell, str) or not shell:
            raise SpecError(f"the worker spec's 'shell' must be a path, got {shell!r}")
    _check_output(spec)
    _check_crossover(spec)
    return spec


def _check_crossover(spec: dict[str, Any]) -> None:
    """``cpus`` (crossover: wait k runs the side on ``cpus[k % len]``) and ``tasks`` (the
    threads that move: the side's cgroup's task list), both optional."""
    cpus = spec.get("cpus")
    if cpus is not None and not (
        isinstance(cpus, list)
        and cpus
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus)
    ):
        raise SpecError(f"the worker spec's 'cpus' must be a list of CPU numbers, got {cpus!r}")
    tasks = spec.get("tasks")
    if tasks is not None and (not isinstance(tasks, str) or not tasks or cpus is None):
        raise SpecError(
            f"the worker spec's 'tasks' must be a file path, with 'cpus', got {tasks!r}"
        )


def _check_output(spec: dict[str, Any]) -> None:
    """``output`` (suite adapters): the benchmark tool's output format the sample is read from."""
    output = spec.get("output")
    if output is None:
        return
    if spec["kind"] != "command":
        raise SpecError(f"'output' applies to command sides only, this is a {spec['kind']} side")
    if not isinstance(output, str) or not duet_outputs.known(output):
        raise SpecError(
            f"the worker spec's 'output' must be one of {', '.join(duet_outputs.FORMATS)}, "
            f"got {output!r}"
        )


def load_spec(path: str, calibrate: bool = False) -> dict[str, Any]:
    """Read and check the worker spec at ``path`` (:func:`validate_spec`)."""
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read the worker spec {path}: {e}") from e
    return validate_spec(spec, calibrate)


def read_samples_path(path: str) -> tuple[str, str] | None:
    """The samples file and side of a spec that failed :func:`load_spec`, when it names them:
    the worker still writes its error line there, for the runner to read."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(raw, dict) and isinstance(raw.get("samples"), str):
        return raw["samples"], str(raw.get("side", "unknown"))
    return None


def calibration_limits(spec: dict[str, Any]) -> tuple[int, int]:
    """The target iteration time (ns) and the cap on inner loops of a calibration spec:
    ``target_iteration_ns`` (10 ms by default) and ``max_inner_loops`` (10 million)."""
    target = spec.get("target_iteration_ns", DEFAULT_TARGET_ITERATION_NS)
    cap = spec.get("max_inner_loops", DEFAULT_MAX_INNER_LOOPS)
    for key, value in (("target_iteration_ns", target), ("max_inner_loops", cap)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SpecError(f"{key!r} must be a positive integer, got {value!r}")
    return target, cap
