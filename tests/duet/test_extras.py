"""The optional parts of duet: a missing one is named with the extra that installs it."""

from __future__ import annotations

import pytest

from duet_bench import extras
from duet_bench.errors import EnvironmentNotReady


def test_a_missing_optional_module_names_its_extra() -> None:
    error = extras.missing_module_error(ModuleNotFoundError("no scipy", name="scipy.stats"))
    assert isinstance(error, EnvironmentNotReady)
    assert "bca" in error.message
    assert error.fix is not None
    assert "duet-bench[stats]" in error.fix


def test_any_other_missing_module_is_not_explained_away() -> None:
    assert extras.missing_module_error(ModuleNotFoundError("x", name="numpy")) is None
    assert extras.missing_module_error(ModuleNotFoundError("x")) is None


def test_require_refuses_what_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    extras.require("matplotlib")  # the dev install has it
    monkeypatch.setitem(extras.EXTRAS, "no_such_module_here", ("plots", "testing"))
    with pytest.raises(EnvironmentNotReady, match="no_such_module_here is not installed"):
        extras.require("no_such_module_here")
