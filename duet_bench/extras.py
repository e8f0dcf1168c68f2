"""The optional parts of duet and the extra that installs each (pyproject.toml).

The core (numpy, click, GitPython, tomlkit) runs, analyses, reports as text, markdown, HTML,
junit and openmetrics, comments and merges: what every CI job does. matplotlib (``plots``,
about 100 MB with its dependencies) draws the plots; scipy (``stats``, about 140 MB) is needed
only for the ``bca`` interval; arch for the ``basic`` and ``studentized`` intervals; jsonschema
(``schema``) for checking a results file against its schema (``duet schema FILE``). A command
that reaches one of them without it says which extra to install instead of a traceback
(:func:`missing_module_error`).
"""

from __future__ import annotations

import importlib.util

from duet_bench.errors import EnvironmentNotReady

#: Top-level module -> (the extra that installs it, what it is needed for).
EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("plots", "drawing the plots"),
    "scipy": ("stats", "the bca interval"),
    "arch": ("arch", "the basic and studentized intervals"),
    "jsonschema": ("schema", "checking a results file against the results schema (duet schema)"),
}


def available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (matplotlib takes ~0.5 s)."""
    return importlib.util.find_spec(module) is not None


def install_hint(module: str) -> str:
    extra = EXTRAS[module][0]
    return (
        f"pip install 'duet-bench[{extra}]' (or, in a checkout, pip install -e '.[{extra}]'); "
        f"pipx: pipx inject duet-bench {module}"
    )


def missing_error(module: str) -> EnvironmentNotReady:
    """The error for an optional ``module`` that is not installed."""
    extra, purpose = EXTRAS[module]
    return EnvironmentNotReady(
        f"{module} is not installed, and {purpose} needs it: it is in the optional "
        f"'{extra}' extra, which the core install leaves out",
        fix=install_hint(module),
    )


def require(module: str) -> None:
    """Raise :func:`missing_error` unless ``module`` can be imported."""
    if not available(module):
        raise missing_error(module)


def missing_module_error(error: ModuleNotFoundError) -> EnvironmentNotReady | None:
    """The error to show for ``error`` when it is an optional module, else None."""
    top = (error.name or "").split(".")[0]
    return missing_error(top) if top in EXTRAS else None
