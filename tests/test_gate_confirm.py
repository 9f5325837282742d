"""``--perf-gate`` confirms its screen's suspects: in temporary git repositories with no
pytest configuration file, a bench at the root (pytest-benchmark's ``benchmark`` fixture
or perfsuite's ``perf``) is saved, then gated after a commit. A committed slowdown is
confirmed by an A/B (exit 1); a move with unchanged code is cleared by one (exit 0); on
one commit and a clean tree no A/B runs (the machine's move, exit 0); a baseline whose
commit is not in the repository leaves the suspect unconfirmed (exit 3). Many suspects
of unchanged code: tests/test_gate_confirm_sample.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from perfsuite.exitcodes import ExitCode
from tests.ab_repo import forget_bytecode

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0,
    reason="git is not installed",
)

#: the code under test: it sleeps DELAY (the environment's, so the machine can "move")
#: times FACTOR (the committed code's)
WORK = """
import os
import time

FACTOR = {factor}


def run() -> int:
    time.sleep(float(os.environ.get("GATE_TEST_DELAY", "0.01")) * FACTOR)
    return 7
"""

BENCHES = {
    "benchmark": """
import work


def test_sleep(benchmark):
    assert benchmark(work.run) == 7
""",
    "perf": """
import work


def test_sleep(perf):
    perf.measure(work.run, items=1)
""",
}

#: a small A/B: at a 30% threshold, sleeps of 10 and 20 ms decide within 10-40 pairs
AB_ARGS = "--perf-ab-args=--min-pairs 10 --max-pairs 40 --max-seconds 30 --confirm 0"


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def commit(repo: Path, message: str, **files: str) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    forget_bytecode(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def make_repo(folder: Path, kind: str) -> Path:
    """``folder``/repo, one commit of the ``kind`` bench (its store goes beside it)."""
    root = folder / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "gate@example.invalid")
    git(root, "config", "user.name", "gate test")
    commit(
        root,
        "bench",
        **{"work.py": WORK.format(factor=1.0), "test_bench.py": BENCHES[kind]},
        **{"README.md": "a bench\n", ".gitignore": "__pycache__/\n"},
    )
    return root


@pytest.fixture(params=sorted(BENCHES))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return make_repo(tmp_path, request.param)


@pytest.fixture(scope="module")
def saved_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The folder of a repository and its store with one baseline saved, per bench kind:
    saved once (a pytest run of its own), read only by copying."""
    folders: dict[str, Path] = {}

    def folder(kind: str) -> Path:
        if kind not in folders:
            made = tmp_path_factory.mktemp(f"saved-{kind}")
            save(make_repo(made, kind))
            folders[kind] = made
        return folders[kind]

    return folder


@pytest.fixture(params=sorted(BENCHES))
def saved_repo(
    request: pytest.FixtureRequest, tmp_path: Path, saved_once: Callable[[str], Path]
) -> Path:
    """A repository whose first commit's baseline is saved: this test's own copy of the
    repository and its store (same commit, same saved run), as ``save(repo)`` leaves them."""
    shutil.copytree(saved_once(request.param), tmp_path, symlinks=True, dirs_exist_ok=True)
    return tmp_path / "repo"


@pytest.fixture
def saved_benchmark_repo(tmp_path: Path, saved_once: Callable[[str], Path]) -> Path:
    """``saved_repo`` of the ``benchmark`` fixture's bench alone: for what does not
    depend on how the bench is timed (the gate's marks, an interrupt, untracked files)."""
    shutil.copytree(saved_once("benchmark"), tmp_path, symlinks=True, dirs_exist_ok=True)
    return tmp_path / "repo"


def pytest_run(repo: Path, *args: str, delay: float = 0.01) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GATE_TEST_DELAY=str(delay))
    env.pop("PYTEST_ADDOPTS", None)
    store = repo.parent / "store"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--perf-scale=smoke",
        "--perf-rounds=12",
        "--perf-threshold=0.3",
        "--benchmark-min-rounds=12",
        "--benchmark-max-time=0.2",
        f"--benchmark-storage={store}",
        *args,
    ]
    return subprocess.run(
        command, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def save(repo: Path, delay: float = 0.01) -> None:
    proc = pytest_run(repo, "--benchmark-autosave", "--benchmark-save-data", delay=delay)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def gate(repo: Path, delay: float) -> subprocess.CompletedProcess[str]:
    return pytest_run(repo, "--benchmark-compare", "--perf-gate", AB_ARGS, delay=delay)


def test_a_committed_slowdown_is_confirmed(saved_repo: Path) -> None:
    repo = saved_repo
    commit(repo, "slower", **{"work.py": WORK.format(factor=2.0)})
    report = repo.parent / "gate-report"
    proc = pytest_run(
        repo, "--benchmark-compare", "--perf-gate", AB_ARGS, f"--perf-report={report}"
    )
    out = proc.stdout
    assert proc.returncode == ExitCode.REGRESSION, out + proc.stderr
    assert "SLOWER (confirmed)" in out
    assert "confirmed by A/B: +" in out
    assert "perfsuite gate: FAILED: 1 regression: " in out
    assert "test_sleep" in out.split("perfsuite gate: FAILED")[1]
    assert "perfsuite gate: confirmations took" in out
    # the A/B's report and its output are kept beside the gate's report
    assert (report / "confirmation" / "pairs.json").is_file()
    assert "perfsuite ab: REGRESSION in 1 bench(es)" in (report / "confirmation.log").read_text()


def test_a_run_that_failed_its_gate_is_no_baseline_for_the_next(saved_benchmark_repo: Path) -> None:
    """Gated runs that save themselves: the one that fails is marked in its JSON, and a
    rerun of the same commit is judged against the run before it, so it fails again
    rather than pass as the machine's move; a run saved without the gate is a baseline."""
    repo = saved_benchmark_repo
    commit(repo, "slower", **{"work.py": WORK.format(factor=2.0)})
    saving = ("--benchmark-autosave", "--benchmark-save-data", "--benchmark-compare")
    first = pytest_run(repo, *saving, "--perf-gate", AB_ARGS)
    assert first.returncode == ExitCode.REGRESSION, first.stdout + first.stderr
    (failed,) = (repo.parent / "store").rglob("0002_*.json")
    assert json.loads(failed.read_text())["perfsuite_gate"]["outcome"] == "regression"
    again = pytest_run(repo, *saving, "--perf-gate", AB_ARGS)
    out = again.stdout
    assert again.returncode == ExitCode.REGRESSION, out + again.stderr
    assert "2 newer run(s) failed their gate" not in out
    assert f"1 newer run(s) failed their gate ({failed.stem} ended regression)" in out
    assert "judged against 0001_" in out
    assert "the machine's" not in out
    # the same code on both sides, so the screen alone decides: 36 rounds a side keep a
    # few slow rounds of a busy machine from leaving its one bench undecided
    rounds = "--benchmark-min-rounds=36"
    accepted = pytest_run(repo, "--benchmark-autosave", "--benchmark-save-data", rounds)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    after = pytest_run(repo, "--benchmark-compare", "--perf-gate", AB_ARGS, rounds)
    assert after.returncode == ExitCode.OK, after.stdout + after.stderr
    assert "failed their gate" not in after.stdout


def test_an_interrupt_while_confirming_stops_the_ab_and_says_so(saved_benchmark_repo: Path) -> None:
    """Ctrl-C (SIGINT to the foreground group) during the gate's A/B: both sides stop,
    pytest ends with its interrupted status and one line, no traceback, no process
    left; the saved run is marked, so a rerun is not judged against it."""
    repo = saved_benchmark_repo
    commit(repo, "slower", **{"work.py": WORK.format(factor=2.0)})
    scratch = Path(tempfile.mkdtemp(prefix="gate-int-", dir="/tmp"))  # short: socket paths
    env = dict(os.environ, GATE_TEST_DELAY="0.01", TMPDIR=str(scratch))
    env.pop("PYTEST_ADDOPTS", None)
    store = repo.parent / "store"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--perf-scale=smoke",
        "--perf-rounds=12",
        "--perf-threshold=0.3",
        "--benchmark-min-rounds=12",
        "--benchmark-max-time=0.2",
        f"--benchmark-storage={store}",
        "--benchmark-compare",
        "--benchmark-autosave",
        "--benchmark-save-data",
        "--perf-gate",
        "--perf-ab-args=--min-pairs 400 --max-pairs 400 --max-seconds 300",
    ]
    child = subprocess.Popen(
        command,
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # as a terminal's foreground job: SIGINT heard,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even if ignored here
    )
    assert child.stdout is not None
    seen = []
    for text in child.stdout:
        seen.append(text)
        if "confirming in an A/B" in text:
            break
    time.sleep(3)  # the A/B's sides are up (its 400 pairs take far longer)
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=120)
    out = "".join(seen) + out
    try:
        assert child.returncode == 2, out + err
        assert "Exit: perfsuite gate: interrupted while confirming; no verdict" in err
        assert "Traceback" not in out + err
        (saved,) = store.rglob("0002_*.json")
        assert json.loads(saved.read_text())["perfsuite_gate"]["outcome"] == "interrupted"
        deadline = time.monotonic() + 30
        while True:  # the A/B and its sides hold paths under its TMPDIR
            left = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True)
            if not left.stdout.strip() or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert left.stdout.strip() == "", left.stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


#: a bench whose code is not ``work.py``: its code never changes here
OTHER = """
import time


def test_other(benchmark):
    benchmark(time.sleep, 0.005)
"""


def test_a_bench_whose_code_changed_is_measured_whatever_the_screen_read(repo: Path) -> None:
    commit(repo, "another bench", **{"test_other.py": OTHER})
    save(repo, delay=0.04)  # a slow machine: the baseline's run() sleeps 40 ms
    commit(repo, "slower", **{"work.py": WORK.format(factor=1.5)})
    proc = gate(repo, delay=0.01)  # a fast one: 15 ms now, the screen reads faster
    out = proc.stdout
    assert proc.returncode == ExitCode.REGRESSION, out + proc.stderr
    assert "1 bench(es) whose code changed since" in out
    assert "its code changed since the baseline: work.py" in out
    assert "confirmed by A/B: +" in out
    (failed,) = (line for line in out.splitlines() if line.startswith("perfsuite gate: FAILED"))
    assert "test_sleep" in failed
    assert "test_other" not in failed
    assert "perfsuite gate: 1 bench(es) whose code changed; confirming in an A/B of" in out
    assert "suspect(s) of the screen" not in out  # test_other is no suspect


def test_a_move_with_unchanged_code_is_cleared(saved_repo: Path) -> None:
    repo = saved_repo
    # a data file no bench reads: the code is the same, yet only an A/B can tell
    commit(repo, "data", **{"labels.json": "[]\n"})
    # the machine got slower; the code did not (-q: the progress line stays open)
    proc = pytest_run(repo, "-q", "--benchmark-compare", "--perf-gate", AB_ARGS, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "slower? cleared" in out
    assert "cleared by A/B (same)" in out
    assert "]perfsuite gate" not in out  # each of its lines is a line of its own
    assert "perfsuite gate: passed: no regression in 1 judged bench; 1 suspect(s) cleared" in out


def test_one_commit_on_a_clean_tree_is_the_machines_move(saved_repo: Path) -> None:
    repo = saved_repo
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "slower? the machine's" in out
    assert "both runs are of commit" in out
    assert "1 suspect(s) the machine's, both runs of one commit on a clean tree (" in out
    assert "suspect(s) cleared" not in out
    assert "confirmations took" not in out  # no A/B ran
    # a data file appeared: the same commit no longer means the same code or data
    (repo / "README.md").write_text("edited\n")
    (repo / "labels.json").write_text("[]\n")
    dirty = gate(repo, delay=0.02)
    assert dirty.returncode == ExitCode.OK, dirty.stdout + dirty.stderr
    assert "cleared by A/B (same)" in dirty.stdout


def test_a_change_of_documents_alone_is_the_machines_move(saved_repo: Path) -> None:
    """Committed or not, a change of Markdown and reStructuredText files alone changes no
    bench's code or data: the move is the machine's, with no A/B, and the line states each
    bench's bound."""
    repo = saved_repo
    commit(repo, "docs", **{"README.md": "a bench, described\n", "CHANGES.rst": "none\n"})
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text("not committed yet\n")
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "slower? the machine's" in out
    assert "only documents changed since commit" in out
    assert "(CHANGES.rst, README.md, docs/guide.md), no code or data change to confirm" in out
    (passed,) = (line for line in out.splitlines() if line.startswith("perfsuite gate: passed"))
    assert "; 1 suspect(s) the machine's, no code or data changed (" in passed
    assert "test_sleep: no regression above +" in passed
    assert "confirmations took" not in out  # no A/B ran
    # code changed beside the documents: an A/B decides
    (repo / "docs" / "guide.md").unlink()
    (repo / "work.py").write_text(WORK.format(factor=1.0) + "# edited\n")
    unknown = gate(repo, delay=0.02)
    assert unknown.returncode == ExitCode.OK, unknown.stdout + unknown.stderr
    assert "the machine's" not in unknown.stdout


def test_an_untracked_python_file_is_code_the_commit_does_not_pin(
    saved_benchmark_repo: Path,
) -> None:
    """A Python file git neither tracks nor ignores could have changed between two runs
    of one commit on a clean tree: git's diff decides, not the commit. One the bench does
    not import leaves its move the machine's; a ``conftest.py`` is its code, so an A/B
    decides."""
    repo = saved_benchmark_repo
    (repo / "helper.py").write_text("SIZE = 1\n")
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "none of the files changed since commit " in out
    assert " (helper.py) is its code or data, no code or data change to confirm" in out
    assert "confirmations took" not in out  # no A/B ran
    (repo / "conftest.py").write_text("SIZE = 2\n")
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "the machine's" not in out
    assert "1 bench(es) whose code changed since " in out
    assert "cleared by A/B (same)" in out


def test_a_baseline_commit_not_in_the_repository_is_unconfirmed(saved_repo: Path) -> None:
    repo = saved_repo
    (saved,) = (repo.parent / "store").rglob("0001_*.json")
    document = json.loads(saved.read_text())
    document["commit_info"]["id"] = "f" * 40
    saved.write_text(json.dumps(document))
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    assert proc.returncode == ExitCode.NOT_JUDGED, out + proc.stderr
    assert "SLOWER? unconfirmed" in out
    assert "the baseline's commit ffffffffffff is not in this repository" in out
    assert "to confirm: perfsuite ab ffffffffffffffffffffffffffffffffffffffff" in out
    assert "perfsuite gate: UNCONFIRMED" in out


def test_a_baseline_without_raw_samples_says_how_to_get_them(repo: Path) -> None:
    plain = pytest_run(repo, "--benchmark-autosave")  # pytest-benchmark's default save
    assert plain.returncode == 0, plain.stdout + plain.stderr
    proc = gate(repo, delay=0.02)
    out = proc.stdout
    if "def test_sleep(perf)" in (repo / "test_bench.py").read_text():
        # perfsuite's own benches always keep their rounds: judged as usual
        assert "no raw samples" not in out
        return
    assert proc.returncode == ExitCode.NOT_JUDGED, out + proc.stderr
    assert "baseline has no raw samples" in out
    assert "--benchmark-save-data" in out
    assert "perfsuite gate: REFUSED: cannot judge" in out


def test_a_screen_that_decided_nothing_has_the_ab_decide(repo: Path) -> None:
    plain = pytest_run(repo, "--benchmark-autosave")  # no raw samples: the screen cannot judge
    assert plain.returncode == 0, plain.stdout + plain.stderr
    commit(repo, "data", **{"labels.json": "[]\n"})
    proc = gate(repo, delay=0.01)
    out = proc.stdout
    if "def test_sleep(perf)" in (repo / "test_bench.py").read_text():
        # its rounds were kept, so the screen judges it unless it reads it inconclusive
        # (a busy machine), when the A/B decides it, or one of them bounds it under twice
        # its threshold, named with its bound: passed either way
        assert proc.returncode == ExitCode.OK, out + proc.stderr
        said = [line for line in out.splitlines() if line.startswith("perfsuite gate: ")]
        passed = next(line for line in said if line.startswith("perfsuite gate: passed: "))
        judged = "no regression in 1 judged bench" in passed
        bounded = "test_sleep: no regression above " in passed or "not shown" in passed
        assert judged or bounded, said
        if "the screen left 1 bench(es) too noisy" in out:
            assert "the A/B decides it" in out
        return
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "perfsuite gate: the screen left 1 bench(es) too noisy to have caught" in out
    assert "cleared by A/B (same)" in out
    assert "perfsuite gate: passed: no regression in 1 judged bench" in out
