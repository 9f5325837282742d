"""pytest-benchmark 5.1, 5.2 and 5.3 under perfsuite: ``--benchmark-json`` and ``perfsuite ab``.

5.1 and 5.2 open ``--benchmark-json`` at parse time and hand over the open file; 5.3
hands over a path. Each version runs in an overlay environment: a venv whose own
site-packages hold that pytest-benchmark (and, where it cannot run on this
environment's pytest, the newest pytest it runs on), in front of this environment's
packages. Overlays are built once, in ``$XDG_CACHE_HOME/perfsuite/pytest-benchmark-versions``,
and a test skips, saying so, when the package index cannot be reached.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from packaging.version import Version

import tests.ab_repo
from perfsuite.exitcodes import ExitCode
from tests.ab_repo import SIDE_ARGS, make_repo

REPO = Path(__file__).resolve().parent.parent
#: the newest of each minor line perfsuite supports
VERSIONS = ("5.1.0", "5.2.3", "5.3.1")
#: pytest 9.2 removed ``Node._nodeid``, which pytest-benchmark before 5.3.1 reads for
#: every benchmark; those versions run on the newest pytest before it
LAST_PYTEST_WITH_NODEID = "9.1.1"

PLAIN = "def test_sum(benchmark):\n    benchmark(sum, range(10))\n"
PERF = "def test_measure(perf):\n    perf.measure(lambda: sum(range(99)), items=1)\n"


def pytest_pin(version: str) -> list[str]:
    """The pytest requirement an overlay for pytest-benchmark ``version`` needs, if any."""
    current = Version(importlib.metadata.version("pytest"))
    if Version(version) < Version("5.3.1") and current >= Version("9.2"):
        return [f"pytest=={LAST_PYTEST_WITH_NODEID}"]
    return []


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsuite" / "pytest-benchmark-versions"


@functools.cache
def overlay(version: str) -> Path | str:
    """The python of an overlay with pytest-benchmark ``version``, or why there is none."""
    pins = [f"pytest-benchmark=={version}", *pytest_pin(version)]
    base = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    key = hashlib.sha256("\n".join([sys.prefix, *base, *pins]).encode()).hexdigest()[:12]
    root = cache_root() / f"{version}-py{sys.version_info[0]}.{sys.version_info[1]}-{key}"
    if (root / "ready").is_file():
        return root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        build = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", build], check=True)
        site = subprocess.run(
            [
                build / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in base)
        # after the overlay's own packages: its pytest-benchmark shadows this environment's
        Path(site, "zz_perfsuite_base.pth").write_text(lines)
        pip = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"),
                *("--no-compile", "--only-binary=:all:", "--disable-pip-version-check"),
                *("--retries", "1", "--timeout", "15", "--target", site, *pins),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if pip.returncode != 0:
            said = (pip.stderr.strip().splitlines() or ["no output"])[-1]
            return f"cannot install {' '.join(pins)} from the package index: {said}"
        (build / "ready").write_text("")
        try:
            build.rename(root)
        except OSError:  # another process built it first
            if not (root / "ready").is_file():
                raise
    return root / "bin" / "python"


def python_with(version: str) -> Path:
    found = overlay(version)
    if isinstance(found, str):
        pytest.skip(found)
    installed = subprocess.run(
        [found, "-c", "import importlib.metadata as m; print(m.version('pytest-benchmark'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert installed == version, f"{found} imports pytest-benchmark {installed}"
    return found


def env() -> dict[str, str]:
    """This process's environment without pytest's variables, the checkout importable."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    clean["PYTHONPATH"] = str(REPO)
    return clean


def run_pytest(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "pytest", "-q", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def saved(path: Path) -> dict[str, dict[str, object]]:
    """The benchmarks of a ``--benchmark-json`` file, by name."""
    return {bench["name"]: bench for bench in json.loads(path.read_text())["benchmarks"]}


@pytest.mark.parametrize("version", VERSIONS)
def test_benchmark_json_with_and_without_perfsuite(
    version: str, tmp_path: Path, inner_args: list[str]
) -> None:
    python = python_with(version)
    (tmp_path / "test_plain.py").write_text(PLAIN)
    (tmp_path / "test_perf.py").write_text(PERF)
    without = run_pytest(
        python,
        tmp_path,
        "-p",
        "no:perfsuite",
        "-p",
        "no:cacheprovider",
        "--benchmark-json=without.json",
        "test_plain.py",
    )
    assert without.returncode == 0, without.stdout + without.stderr
    with_perfsuite = run_pytest(
        python, tmp_path, *inner_args, "--benchmark-json=with.json", "test_plain.py", "test_perf.py"
    )
    assert with_perfsuite.returncode == 0, with_perfsuite.stdout + with_perfsuite.stderr
    assert "INTERNALERROR" not in with_perfsuite.stdout + with_perfsuite.stderr
    plain = saved(tmp_path / "without.json")
    both = saved(tmp_path / "with.json")
    assert sorted(plain) == ["test_sum"]
    assert sorted(both) == ["test_measure", "test_sum"]
    # the plain benchmark is saved alike, but for its cost in a session that uses perfsuite
    # (--perf-data-dir); perfsuite's measurement carries its extra_info
    assert plain["test_sum"].keys() == both["test_sum"].keys()
    assert plain["test_sum"]["extra_info"] == {}
    draft = both["test_sum"]["extra_info"]
    assert isinstance(draft, dict)
    assert set(draft) == {"perfsuite"}
    assert set(draft["perfsuite"]) == {"schema", "cost"}
    measured = both["test_measure"]["extra_info"]
    assert isinstance(measured, dict)
    assert measured["perfsuite"]["items"] == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_benchmark_json_in_a_missing_folder_is_a_usage_error(
    version: str, tmp_path: Path, inner_args: list[str]
) -> None:
    """5.1 and 5.2 cannot open it while parsing; on 5.3 perfsuite finds it before the run."""
    python = python_with(version)
    (tmp_path / "test_plain.py").write_text(PLAIN)
    result = run_pytest(python, tmp_path, *inner_args, "--benchmark-json=missing/out.json")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "--benchmark-json" in result.stderr
    assert "missing" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("version", ["5.2.3"])
def test_unchanged_ab_runs_its_sides_and_judges(version: str, tmp_path: Path) -> None:
    """The sides get ``--benchmark-json``; on 5.2 it arrives open, and ab still judges."""
    python = python_with(version)
    repo = make_repo(tmp_path)
    repo.set_work(30_000, "same")
    base = repo.commit("base")
    report = tmp_path / "report"
    # Identical code, nine pairs (the fewest that decide) and a 90% threshold: this is
    # about the sides' JSON and the exit status; tests/test_ab_lockstep.py checks real
    # thresholds on this environment's version.
    args = [
        *("--min-pairs", "9", "--max-pairs", "9", "--block-rounds", "2", "--seed", "7"),
        *("--max-seconds", "300", "--confirm", "0", "--threshold", "0.9"),
        *("--report", str(report)),
    ]
    proc = subprocess.run(
        [python, tests.ab_repo.__file__, "ab", base, *args, *SIDE_ARGS],
        cwd=repo.root,
        env=repo.env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Both sides ran and the run was judged: a side that stopped would be 2. The verdicts
    # are one pair of processes' (no confirmation), so a machine busy enough can read
    # nine pairs of identical code beyond 90% either way; the exit status follows them.
    assert proc.returncode != ExitCode.BAD_INPUT, proc.stdout + proc.stderr
    runs = json.loads((report / "pairs.json").read_text())
    assert sorted(run["nodeid"] for run in runs) == [
        "benches/bench_work.py::test_work[one]",
        "benches/bench_work.py::test_work[two]",
    ]
    for run in runs:
        assert len(run["a_blocks"]) == len(run["b_blocks"]) == 9
    verdicts = {run["verdict"] for run in runs}
    noisy = [  # inconclusive, and not ruling out twice the threshold
        run
        for run in runs
        if run["verdict"] == "inconclusive"
        and (run["ci"] is None or run["ci"][1] >= 2 * run["threshold"])
    ]
    expected = (
        ExitCode.REGRESSION
        if "slower" in verdicts
        else ExitCode.NOT_JUDGED
        if noisy
        else ExitCode.OK
    )
    assert proc.returncode == expected, proc.stdout + proc.stderr
    if proc.returncode == ExitCode.OK:
        assert "perfsuite ab: no regression: " in proc.stdout
    for side in ("A", "B"):
        assert sorted(saved(report / f"{side}.json")) == ["test_work[one]", "test_work[two]"]
