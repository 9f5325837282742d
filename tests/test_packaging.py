"""Packaging: metadata, the pytest11 entry point, pins, and a cheap import and --help."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import perfsuite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

REPO = Path(__file__).resolve().parent.parent
HEAVY_MODULES = ("tensorflow", "torch", "nvidia.dali", "numpy", "PIL", "scipy", "matplotlib")


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())
    return data


def run_python(
    code: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_entry_point_in_pyproject(project: dict[str, Any]) -> None:
    meta = project["project"]
    assert meta["name"] == "perfsuite"
    assert meta["entry-points"]["pytest11"] == {"perfsuite": "perfsuite.plugin"}
    assert meta["requires-python"] == ">=3.10"
    assert meta["version"] == perfsuite.__version__


def test_entry_point_is_installed() -> None:
    (entry,) = [e for e in metadata.entry_points(group="pytest11") if e.name == "perfsuite"]
    assert entry.value == "perfsuite.plugin"


def test_extras(project: dict[str, Any]) -> None:
    extras = project["project"]["optional-dependencies"]
    assert {"tf", "torch", "dali", "all", "dev"} <= set(extras)
    assert any(req.startswith("tensorflow") for req in extras["tf"])
    assert any(req.startswith("torch") for req in extras["torch"])
    assert any(req.startswith("nvidia-dali") for req in extras["dali"])
    (everything,) = extras["all"]
    named = set(re.fullmatch(r"perfsuite\[(.*)\]", everything)[1].split(","))  # type: ignore[index]
    assert {"tf", "torch", "dali"} <= named
    dev = " ".join(extras["dev"])
    assert "ruff" in dev
    assert "mypy" in dev


def test_heavy_frameworks_are_extras_only(project: dict[str, Any]) -> None:
    required = " ".join(project["project"]["dependencies"])
    for name in ("tensorflow", "torch", "nvidia-dali"):
        assert name not in required


def test_classifiers_and_typed_marker(project: dict[str, Any]) -> None:
    classifiers = project["project"]["classifiers"]
    assert "Framework :: Pytest" in classifiers
    assert "Typing :: Typed" in classifiers
    assert (REPO / "perfsuite" / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["perfsuite"]


def test_console_scripts_resolve(project: dict[str, Any]) -> None:
    for target in project["project"].get("scripts", {}).values():
        module, _, func = target.partition(":")
        assert importlib.util.find_spec(module) is not None, target
        assert func


def test_framework_versions_are_pinned_in_one_place() -> None:
    pins: dict[str, str] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins.setdefault(name.strip().lower(), version.split(";")[0].strip())
    for name in (
        "tensorflow",
        "torch",
        "nvidia-dali-cuda120",
        "numpy",
        "pillow",
        "pytest",
        "pytest-benchmark",
    ):
        assert re.fullmatch(r"\d+(\.\d+)+", pins.get(name, "")), name


def test_lowest_constraints_pin_every_declared_floor(project: dict[str, Any]) -> None:
    """constraints-lowest.txt pins each package pyproject.toml names, within its range."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins: dict[str, Requirement] = {}
    for line in (REPO / "constraints-lowest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            pin = Requirement(line)
            pins[canonicalize_name(pin.name)] = pin
    extras = project["project"]["optional-dependencies"]
    declared = [
        Requirement(text)
        for text in project["project"]["dependencies"]
        + [req for extra in ("tf", "torch", "dali", "gpu") for req in extras[extra]]
    ]
    for requirement in declared:
        found = pins.get(canonicalize_name(requirement.name))
        assert found is not None, f"constraints-lowest.txt does not pin {requirement.name}"
        (exact,) = found.specifier
        assert exact.operator == "==", found
        assert requirement.specifier.contains(exact.version), (requirement, found)
        assert str(found.marker) == str(requirement.marker), (requirement, found)


def test_two_command_setup() -> None:
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE))
    assert {"bench", "test"} <= targets
    assert "constraints.txt" in makefile
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_import_is_cheap(tmp_path: Path) -> None:
    """``import perfsuite`` and the plugin import none of the heavy frameworks."""
    result = run_python(
        f"""
        import sys
        import perfsuite, perfsuite.plugin
        print(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))
    """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_help_is_cheap_and_lists_the_group(tmp_path: Path) -> None:
    """``pytest --help`` with perfsuite and pytest-benchmark lists the group and stays light.

    They are the only plugins loaded: another installed plugin may import numpy or a
    framework itself, and that is no cost of perfsuite's.
    """
    plugins = ["-p", "pytest_benchmark.plugin", "-p", "perfsuite.plugin"]
    result = run_python(
        f"""
        import contextlib, io, json, sys
        import pytest
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = pytest.main(["--help", "-p", "no:cacheprovider", *{plugins!r}])
        print(json.dumps({{"code": int(code), "help": out.getvalue(),
                           "heavy": sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules)}}))
    """,
        tmp_path,
        {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["code"] == 0
    assert report["heavy"] == []
    assert "perfsuite: ML pipeline benchmarks and regression gate:" in report["help"]
    assert "--perf-scale={smoke,default,full}" in report["help"]


def test_help_without_the_plugin(tmp_path: Path) -> None:
    result = run_python(
        """
        import contextlib, io, pytest
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = pytest.main(["--help", "-p", "no:perfsuite", "-p", "no:cacheprovider"])
        assert code == 0
        assert "--perf-scale" not in out.getvalue()
    """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr


def build_backend_installed(project: dict[str, Any]) -> bool:
    """Whether this environment holds what ``[build-system] requires``, at those versions."""
    from packaging.requirements import Requirement

    for requirement in map(Requirement, project["build-system"]["requires"]):
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(version, prereleases=True):
            return False
    return True


def test_wheel_ships_the_builtin_recipes(tmp_path: Path, project: dict[str, Any]) -> None:
    """A non-editable install finds imagenet-like & co. as perfsuite.recipe_files.

    Built with this environment's setuptools where it meets ``[build-system] requires``
    (no download), else in pip's isolated build environment.
    """
    import zipfile

    root = Path(__file__).resolve().parent.parent
    isolation = ["--no-build-isolation"] if build_backend_installed(project) else []
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            *isolation,
            "--no-deps",
            "-w",
            str(tmp_path),
            str(root),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("perfsuite-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for recipe in ("imagenet-like", "fixed-224", "variable-shapes"):
        assert f"perfsuite/recipe_files/{recipe}.toml" in names
    assert "perfsuite/py.typed" in names
    # every subpackage of the source tree is in the wheel
    for package in sorted(p.parent for p in (root / "perfsuite").rglob("__init__.py")):
        assert f"{package.relative_to(root).as_posix()}/__init__.py" in names
