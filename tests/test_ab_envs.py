"""perfsuite ab across an upgrade: each side in an environment built from its own pins
(a requirements file's, a uv.lock's).

The revisions pin different releases of ``perfwork``, a package built here as wheels
(tests/wheels.py) whose releases differ only in how much work ``run()`` does. uv builds
the environments from pytest's and perfsuite's requirements (from uv's own cache) and
the local wheels.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfsuite.envs.build import MARKER, Resolved, changes, changes_text, uv_binary, uv_said
from perfsuite.envs.pins import Pins, pin_difference, read_pins
from perfsuite.errors import PerfsuiteError
from tests.ab_repo import SIDE_ARGS, SMALL, STEADY_CLOCK, Repo, make_repo, uv_cache
from tests.wheels import build_wheel

#: a hang guard only (a cold build from uv's cache and a short A/B); never a timing
HANG_S = 600
BUDGET = [*SMALL, "--confirm", "0"]
#: a bench written with pytest-benchmark's own fixture, at the root, no pytest config
BENCHMARK_BENCH = """
import perfwork


def test_perfwork(benchmark):
    benchmark.extra_info["perfwork"] = perfwork.__version__
    benchmark(perfwork.run)
"""
#: a perf bench under tests/, timed by the steady clock
PERF_BENCH = """
import perfwork


def test_perfwork(perf):
    perf.note(perfwork=perfwork.__version__)
    perf.measure(perfwork.run, items=1)
"""


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's cache (worktrees and environments) and wheels: perfwork 1.0, its
    1.0.post1 doing the same work, and 2.0 doing three times as much."""
    folder = tmp_path_factory.mktemp("envs")
    for version, loops in (("1.0", 20_000), ("1.0.post1", 20_000), ("2.0", 60_000)):
        build_wheel(folder / "wheels", "perfwork", version, loops)
    return folder


@pytest.fixture
def repo(tmp_path: Path, shared: Path) -> Iterator[Repo]:
    made = make_repo(tmp_path)
    made.cache = shared / "cache"
    made.tmpdir = Path(tempfile.mkdtemp(prefix="abt-", dir="/tmp"))  # short socket paths
    yield made
    shutil.rmtree(made.tmpdir, ignore_errors=True)


def pin(repo: Repo, shared: Path, version: str) -> None:
    repo.write("requirements.txt", f"--find-links {shared / 'wheels'}\nperfwork=={version}\n")


def side_notes(report: Path, side: str) -> list[object]:
    document = json.loads((report / f"{side}.json").read_text())
    found = []
    for bench in document["benchmarks"]:
        info = bench["extra_info"]
        found.append(info.get("perfwork") or info.get("perfsuite", {})["notes"]["perfwork"])
    return found


def test_equal_work_in_two_environments_is_same_and_reuses_them(repo: Repo, shared: Path) -> None:
    repo.write("conftest.py", STEADY_CLOCK)
    repo.write("tests/perf/bench_perfwork.py", PERF_BENCH)
    pin(repo, shared, "1.0")
    base = repo.commit("base")
    pin(repo, shared, "1.0.post1")
    candidate = repo.commit("candidate")
    for _ in range(2):
        report = repo.root.parent / "report"
        args = [*BUDGET, "--report", str(report), "--", "tests/perf", "--perf-scale=smoke"]
        result = repo.ab(base, candidate, *args, timeout=HANG_S)
        assert result.code == 0, result.out + result.err
        assert "perfwork 1.0 -> 1.0.post1" in result.out.splitlines()[0]
        assert side_notes(report, "A") == ["1.0"]
        assert side_notes(report, "B") == ["1.0.post1"]
    assert result.out.count("(reused)") == 2, result.out
    envs = [p for p in (repo.cache / "perfsuite" / "envs").iterdir() if (p / MARKER).is_file()]
    cleaned = repo.ab("--clean", timeout=HANG_S)
    assert cleaned.code == 0, cleaned.err
    assert f"removed {len(envs)} environment(s) built from pins" in cleaned.out
    assert not (repo.cache / "perfsuite" / "envs").exists()


def test_pins_that_cannot_be_installed_are_one_line(repo: Repo, shared: Path) -> None:
    repo.set_work(20_000, "base")
    pin(repo, shared, "1.0")
    base = repo.commit("base")
    pin(repo, shared, "9.9")
    result = repo.ab(base, *BUDGET, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2, result.out + result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(
        "perfsuite ab: error: side B (candidate, working tree): its pins cannot be installed: "
    )
    assert "perfwork==9.9" in lines[0]
    assert not list((repo.cache / "perfsuite" / "envs").glob(".*.build-*"))
    assert repo.ab(base, "--bisect-exit", *BUDGET, *SIDE_ARGS, timeout=HANG_S).code == 125


def test_shared_refuses_different_pins(repo: Repo) -> None:
    repo.set_work(20_000, "base")
    repo.write("requirements.txt", "numpy==1.26.4\npillow==10.0\n")
    base = repo.commit("base")
    repo.write("requirements.txt", "numpy==2.0.0\npillow==10.0\n")
    result = repo.ab(base, "--env", "shared", *BUDGET, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        f"perfsuite ab: error: pins differ between {base[:10]} and working tree: "
        "-requires numpy==1.26.4; +requires numpy==2.0.0; --env shared runs both sides in "
        "this environment: drop it, and each side runs in an environment of its own pins"
    ]


PYPROJECT = """
[project]
name = "Proj"
dependencies = ["numpy>=1.26"]

[project.optional-dependencies]
tf = ["tensorflow>=2.16"]
torch = ["torch>=2.5"]
dev = ["ruff"]
all = ["proj[tf,torch]"]

[tool.perfsuite.env]
constraints = ["constraints.txt"]
extras = ["all"]
"""


def test_pins_come_from_the_named_files_and_extras() -> None:
    files = {
        "pyproject.toml": PYPROJECT,
        "constraints.txt": "numpy==2.4.6\ntorch==2.13.0  # CPU\n",
        "constraints-lowest.txt": "numpy==1.26.0\n",
        "requirements.txt": "-e .[tf]\n# tools\npsutil==7.2.2\n",
    }
    pins = read_pins(files, "main")
    assert pins.requirements == ("psutil==7.2.2", "numpy>=1.26", "tensorflow>=2.16", "torch>=2.5")
    assert pins.constraints == ("numpy==2.4.6", "torch==2.13.0")
    assert sorted(pins.sources) == ["constraints.txt", "pyproject.toml", "requirements.txt"]
    # a change in a file the environment is not built from is no difference
    other = read_pins({**files, "constraints-lowest.txt": "numpy==1.26.4\n"}, "HEAD")
    assert pin_difference(pins, other, "main", "HEAD") is None
    moved = read_pins({**files, "constraints.txt": "numpy==2.4.6\ntorch==2.14.1\n"}, "HEAD")
    assert pin_difference(pins, moved, "main", "HEAD") == (
        "pins differ between main and HEAD: -constrains torch==2.13.0; +constrains torch==2.14.1"
    )


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('extras = ["gpu"]', "main: pyproject.toml has no extra 'gpu'"),
        (
            'constraints = ["locked.txt"]',
            "main: pyproject.toml [tool.perfsuite.env] constraints names locked.txt, "
            "which that revision does not have at its top",
        ),
        ('extras = "all"', "main: pyproject.toml [tool.perfsuite.env] extras must be a list"),
    ],
)
def test_a_bad_env_setting_is_one_line(setting: str, message: str) -> None:
    text = PYPROJECT.split("[tool.perfsuite.env]")[0] + f"[tool.perfsuite.env]\n{setting}\n"
    with pytest.raises(PerfsuiteError) as raised:
        read_pins({"pyproject.toml": text, "constraints.txt": ""}, "main")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_without_settings_every_requirements_and_constraints_file_counts() -> None:
    files = {
        "requirements-dev.txt": "ruff\n",
        "requirements.txt": "numpy\n",
        "constraints.txt": "numpy==2\n",
    }
    pins = read_pins(files, "main")
    assert pins == Pins(("ruff", "numpy"), ("numpy==2",), pins.sources)
    assert list(pins.sources) == ["requirements-dev.txt", "requirements.txt", "constraints.txt"]


def test_changes_name_each_package() -> None:
    old = Resolved(("numpy==1.26.4", "torch==2.13.0+cpu", "--find-links /w"))
    new = Resolved(("numpy==1.26.4", "torch==2.14.1+cpu", "sympy==1.13"))
    found = changes(old, new)
    assert found == ["sympy (none) -> 1.13", "torch 2.13.0+cpu -> 2.14.1+cpu"]
    assert changes_text(found) == "sympy (none) -> 1.13, torch 2.13.0+cpu -> 2.14.1+cpu"
    assert old.key != new.key
    assert old.key == Resolved(old.lines).key


def test_uv_said_takes_the_reason() -> None:
    stderr = (
        "  \u00d7 No solution found\n"
        "  \u2570\u2500\u25b6 Because perfwork==9.9 was not found, we can conclude...\n"
    )
    assert uv_said(stderr) == "Because perfwork==9.9 was not found, we can conclude..."
    assert uv_said("error: Failed to fetch: `https://x`\n") == "Failed to fetch: `https://x`"
    assert uv_said("") == "(no output)"


LOCKED_PROJECT = """
[project]
name = "userbench"
version = "0"
requires-python = ">=3.10"
dependencies = ["perfwork=={version}"]

[tool.uv]
find-links = ["{wheels}"]
"""


def locked(repo: Repo, shared: Path, version: str) -> None:
    """pyproject.toml requiring perfwork ``version``, and its uv.lock."""
    repo.write("pyproject.toml", LOCKED_PROJECT.format(version=version, wheels=shared / "wheels"))
    subprocess.run(
        [uv_binary(), "lock", "--quiet"],
        cwd=repo.root,
        check=True,
        env={**os.environ, "UV_CACHE_DIR": str(uv_cache())},
        timeout=HANG_S,
    )


def test_an_upgrade_in_a_uv_lock_that_does_more_work_is_slower(repo: Repo, shared: Path) -> None:
    repo.write("test_perfwork.py", BENCHMARK_BENCH)
    locked(repo, shared, "1.0")
    base = repo.commit("base")
    locked(repo, shared, "2.0")
    report = repo.root.parent / "report"
    args = [*BUDGET, "--report", str(report), "--", "test_perfwork.py", "-q"]
    result = repo.ab(base, *args, timeout=HANG_S)
    assert result.code == 1, result.out + result.err
    first = result.out.splitlines()[0]
    assert "pins differ: perfwork 1.0 -> 2.0 (each side in an environment of its own pins)" in first
    assert "(perfwork 1.0 -> 2.0)" in (report / "summary.md").read_text()
    assert "REGRESSION in 1 bench(es): test_perfwork.py::test_perfwork" in result.out
    assert side_notes(report, "A") == ["1.0"]
    assert side_notes(report, "B") == ["2.0"]
    built = [line for line in result.out.splitlines() if ": environment " in line]
    assert len(built) == 2
    assert all("built in" in line or "reused" in line for line in built)


def test_a_lock_replaces_the_dependencies_it_pins() -> None:
    project = PYPROJECT.replace('constraints = ["constraints.txt"]\n', "")
    pins = read_pins({"pyproject.toml": project, "uv.lock": "version = 1\n"}, "main")
    assert pins.requirements == ()
    assert pins.locked_extras == ("all",)
    assert pins.lines == ["locks uv.lock sha256:" + pins.lines[0].split(":")[1]]
    other = read_pins({"pyproject.toml": project, "uv.lock": "version = 1\n# moved\n"}, "B")
    assert pin_difference(pins, other, "main", "B") is not None
