"""Load a script of ``tools/validation`` as a module, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

VALIDATION = Path(__file__).resolve().parents[1] / "tools" / "validation"


def load_tool(name: str) -> ModuleType:
    """``tools/validation/<name>.py``, imported under ``name`` (its dataclasses look
    their module up by name in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, VALIDATION / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
