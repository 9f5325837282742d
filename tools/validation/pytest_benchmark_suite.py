"""Run pytest-benchmark's own test suite without and with perfsuite installed, and compare.

perfsuite loads itself into every pytest run of an environment, so it must not change
what pytest-benchmark's documented options do. This script checks that on
pytest-benchmark's own tests:

1. downloads the sdist of the installed pytest-benchmark version
   (``pip download --no-deps --no-binary :all: pytest-benchmark==X``) and unpacks it;
2. creates two virtual environments in a cache folder outside the checkout:
   ``clean`` (pytest-benchmark with the extras and test dependencies its ``tox.ini``
   and ``pyproject.toml`` list) and ``perfsuite`` (the same, plus this checkout
   installed with ``pip install -e`` and no extras: no TensorFlow, no torch);
3. runs the suite the way its ``tox.ini`` does (``pytest -vv --ignore=src``, with
   ``PYTHONPATH=tests`` and ``COLUMNS=80``) in each, with a JUnit XML report (the
   clean venv's report is reused on later runs: nothing of this checkout is in it;
   ``--fresh`` rebuilds both venvs and runs both suites again);
4. prints the passed/failed/skipped counts of both and every test whose outcome
   differs, and exits 1 if perfsuite changes any outcome (0 otherwise, 2 on a setup
   failure).

Both venvs get the installed pytest, except where that pytest-benchmark cannot run on
it: before 5.3.1 it reads ``Node._nodeid``, which pytest 9.2 removed, so it gets the
newest pytest before 9.2 (``--pytest`` chooses another).

Usage::

    python tools/validation/pytest_benchmark_suite.py [--cache DIR] [--version X]
                                                      [--pytest Y] [--fresh]
    make pytest-benchmark-suite
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
#: what pytest-benchmark's tox.ini installs beside its extras (its ``deps``, no coverage)
TOX_DEPS = ("pygal==3.1.3", "pygaljs==1.0.2", "setuptools>=80")
#: its ``[dependency-groups] dev`` (tox's ``dependency_groups = dev``)
DEV_GROUP = ("freezegun>=1.5.5", "nbmake>=1.5.5")
EXTRAS = "aspect,elasticsearch,histogram"
#: the newest pytest with ``Node._nodeid``, which pytest-benchmark before 5.3.1 reads
LAST_PYTEST_WITH_NODEID = "9.1.1"


class SetupError(Exception):
    """A step before the test runs failed (download, venv, install)."""


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsuite" / "pytest-benchmark-suite"


def pytest_for(benchmark_version: str, installed: str) -> str:
    """The pytest to run pytest-benchmark ``benchmark_version``'s suite on."""
    from packaging.version import Version

    if Version(benchmark_version) < Version("5.3.1") and Version(installed) >= Version("9.2"):
        return LAST_PYTEST_WITH_NODEID
    return installed


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise SetupError(f"{' '.join(cmd)} exited {result.returncode}")


def fetch_sdist(version: str, cache: Path) -> Path:
    """The unpacked sdist of pytest-benchmark ``version`` (downloaded once)."""
    source = cache / f"pytest_benchmark-{version}"
    if (source / "tox.ini").is_file():
        return source
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"pytest-benchmark=={version}",
                "-d",
                tmp,
            ]
        )
        archives = list(Path(tmp).glob("*.tar.gz"))
        if len(archives) != 1:
            raise SetupError(f"expected one sdist for pytest-benchmark=={version}, got {archives}")
        with tarfile.open(archives[0]) as archive:
            archive.extractall(tmp, filter="data")
        unpacked = Path(tmp) / f"pytest_benchmark-{version}"
        if not (unpacked / "tox.ini").is_file():
            raise SetupError(f"{archives[0].name}: no tox.ini at the top of the sdist")
        os.rename(unpacked, source)
    return source


def make_venv(where: Path, source: Path, pytest_version: str, with_perfsuite: bool) -> Path:
    """A venv with pytest-benchmark (built from ``source``) and its test deps; reused once made."""
    python = where / "bin" / "python"
    stamp = where / ".installed"
    pins = [f"pytest=={pytest_version}", f"pytest-benchmark=={source.name.split('-')[-1]}"]
    if stamp.is_file():
        if with_perfsuite:  # editable: refresh the metadata and any dependency added since
            run([str(python), "-m", "pip", "install", "--quiet", "-e", str(CHECKOUT), *pins])
        return python
    shutil.rmtree(where, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(where)])
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"{source}[{EXTRAS}]",
            *TOX_DEPS,
            *DEV_GROUP,
            pins[0],
        ]
    )
    if with_perfsuite:  # perfsuite's core dependencies only: no extras, no TensorFlow or torch
        run([str(python), "-m", "pip", "install", "--quiet", "-e", str(CHECKOUT), *pins])
    stamp.write_text("ok\n")
    return python


def run_suite(python: Path, source: Path, report: Path) -> dict[str, str]:
    """Run the suite as tox does; each test's outcome (passed, failed, skipped) by node id."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PYTHON", "VIRTUAL_ENV")) and k != "COV_CORE_SOURCE"
    }
    env.update(COLUMNS="80", PYTHONPATH=str(source / "tests"), PYTHONUNBUFFERED="yes")
    cmd = [str(python), "-m", "pytest", "-q", "--ignore=src", f"--junitxml={report}"]
    print("+", " ".join(cmd), f"(in {source})", flush=True)
    subprocess.run(cmd, cwd=source, env=env, check=False, stdout=subprocess.DEVNULL)
    if not report.is_file():
        raise SetupError(f"{python}: pytest wrote no report {report}")
    return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    """Outcomes by ``classname::name`` from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            found[name] = "failed"
        elif "skipped" in tags:
            found[name] = "skipped"
        else:
            found[name] = "passed"
    return found


def counts(results: dict[str, str]) -> str:
    tally = Counter(results.values())
    return ", ".join(f"{tally[k]} {k}" for k in ("passed", "failed", "skipped"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=default_cache(), help="venvs and sdist")
    parser.add_argument(
        "--version",
        default=importlib.metadata.version("pytest-benchmark"),
        help="pytest-benchmark version (default: the installed one)",
    )
    parser.add_argument(
        "--pytest", help="pytest version (default: the installed one, where it can run the suite)"
    )
    parser.add_argument("--fresh", action="store_true", help="rebuild both venvs")
    args = parser.parse_args(argv)
    cache: Path = args.cache.expanduser().resolve()
    if cache.is_relative_to(CHECKOUT):
        print(f"--cache {cache}: must be outside the checkout {CHECKOUT}", file=sys.stderr)
        return 2
    pytest_version = args.pytest or pytest_for(args.version, importlib.metadata.version("pytest"))
    try:
        cache.mkdir(parents=True, exist_ok=True)
        source = fetch_sdist(args.version, cache)
        results: dict[str, dict[str, str]] = {}
        for label, with_perfsuite in (("clean", False), ("perfsuite", True)):
            where = cache / f"venv-{args.version}-pytest{pytest_version}-{label}"
            report = cache / f"junit-{args.version}-pytest{pytest_version}-{label}.xml"
            if args.fresh:
                shutil.rmtree(where, ignore_errors=True)
                report.unlink(missing_ok=True)
            if not with_perfsuite and report.is_file():
                # nothing of this checkout is in the clean venv: its outcomes are reused
                print(f"reusing {report} (--fresh runs the clean suite again)")
                results[label] = outcomes(report)
                continue
            python = make_venv(where, source, pytest_version, with_perfsuite)
            results[label] = run_suite(python, source, report)
    except SetupError as exc:
        print(f"pytest-benchmark-suite: setup failed: {exc}", file=sys.stderr)
        return 2
    clean, with_ps = results["clean"], results["perfsuite"]
    print(f"pytest-benchmark {args.version} suite, pytest {pytest_version}:")
    print(f"  without perfsuite: {counts(clean)}")
    print(f"  with perfsuite:    {counts(with_ps)}")
    differ = sorted(
        name for name in clean.keys() | with_ps.keys() if clean.get(name) != with_ps.get(name)
    )
    for name in differ:
        print(f"  differs: {name}: {clean.get(name, 'absent')} -> {with_ps.get(name, 'absent')}")
    if differ:
        print(f"perfsuite changes the outcome of {len(differ)} pytest-benchmark tests")
        return 1
    print("perfsuite changes no outcome of pytest-benchmark's own tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
