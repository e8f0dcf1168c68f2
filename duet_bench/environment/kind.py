"""The machine kind: a short, stable description of a machine from its environment record,
which merging compares to refuse shards measured on unlike machines."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["machine_kind"]


def _dig(env: Mapping[str, object], *keys: str) -> object:
    node: object = env
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def machine_kind(env: Mapping[str, object]) -> str:
    """A short, stable description of the machine, to refuse merging unlike shards.

    Two results files whose ``machine_kind`` differ were measured on different kinds of
    machine (CPU model, CPU count, VM or not, isolation level) and must not be merged. Volatile
    facts (hostname, load, kernel patch level) are deliberately left out.

    Parameters
    ----------
    env : mapping
        A dict from :func:`capture_environment`, or one read back from a results file.
        Missing parts become ``unknown``.

    Returns
    -------
    str
        For example ``"AMD EPYC 7B13 x2 vCPU, cgroup-v1"``.
    """
    model = _dig(env, "cpu", "model")
    online = _dig(env, "cpu", "online")
    vm = _dig(env, "hypervisor", "detected")
    isolation = _dig(env, "isolation")
    cgroup_version = _dig(env, "cgroup", "version")
    model_text = (
        " ".join(model.split()) if isinstance(model, str) and model.strip() else "unknown CPU"
    )
    count = f"x{online}" if isinstance(online, int) and not isinstance(online, bool) else "x?"
    unit = "vCPU" if vm is True else "CPU" if vm is False else "CPU?"
    if isinstance(isolation, str) and isolation:
        level = isolation
    elif isinstance(cgroup_version, str) and cgroup_version:
        level = f"cgroup {cgroup_version} (isolation unknown)"
    else:
        level = "isolation unknown"
    return f"{model_text} {count} {unit}, {level}"
