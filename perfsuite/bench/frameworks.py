"""Lazy access to the heavy frameworks, with install hints, and their versions."""

from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata
from types import ModuleType

#: import name -> (distribution names to ask for a version, perfsuite extra that installs it)
FRAMEWORKS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensorflow": (("tensorflow", "tensorflow-cpu", "tf-nightly"), "tf"),
    "torch": (("torch",), "torch"),
    "nvidia.dali": (("nvidia-dali-cuda120", "nvidia-dali-cuda110", "nvidia-dali-cuda130"), "dali"),
}

#: marker name -> import name
MARKER_MODULES: dict[str, str] = {"tf": "tensorflow", "torch": "torch", "dali": "nvidia.dali"}


def install_hint(module: str) -> str:
    """The pip command that installs ``module`` through perfsuite's extras."""
    extra = FRAMEWORKS[module][1] if module in FRAMEWORKS else module
    return f"pip install 'perfsuite[{extra}]'"


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is not installed: {install_hint(module)}") from exc


def distribution_version(names: tuple[str, ...] | str) -> str | None:
    """The installed version of the first of ``names`` that is installed, read from metadata."""
    for name in (names,) if isinstance(names, str) else names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def framework_versions() -> dict[str, str | None]:
    """Versions of the measured stack, from package metadata (nothing heavy is imported)."""
    versions = {mod: distribution_version(dists) for mod, (dists, _) in FRAMEWORKS.items()}
    for dist in ("numpy", "pillow", "pytest-benchmark", "perfsuite"):
        versions[dist] = distribution_version(dist)
    return versions
