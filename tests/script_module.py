"""Load a script of the repository (``scripts/``, ``benchmarks/``) as a module, for the tests of
its functions; the same script is also run as a process by those tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The module of the script at ``path``, registered as ``name`` (dataclasses look their
    module up by name in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None, path
    assert spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
