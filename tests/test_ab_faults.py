"""perfsuite ab's faults: bad revisions, a side that fails, errors or dies, Ctrl-C.

Every fault exits non-zero, names the side and its revision, and leaves no process,
temporary folder, held lock or locked worktree behind.
"""

from __future__ import annotations

import fcntl
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ab_repo import SIDE_ARGS, SMALL, Repo, make_repo, processes_with

#: a hang guard only (each of these ends in a few seconds); never a timing assertion
HANG_S = 120

FAULT_BENCH = """
import os
import signal
import time

import pytest

CALLS = []


@pytest.mark.perf(warmup_rounds=1)
def test_fault(perf):
    def call():
        CALLS.append(1)
        if len(CALLS) > 3:
            {fault}
        time.sleep({sleep})

    perf.measure(call, items=1)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    made = make_repo(tmp_path)
    made.tmpdir = Path(tempfile.mkdtemp(prefix="abt-", dir="/tmp"))  # short socket paths
    made.set_work(20_000, "base")
    yield made
    shutil.rmtree(made.tmpdir, ignore_errors=True)


def fault_bench(repo: Repo, fault: str, sleep: float = 0.0) -> None:
    repo.write("benches/bench_a_fault.py", FAULT_BENCH.format(fault=fault, sleep=sleep))


def assert_clean(repo: Repo) -> None:
    deadline = time.monotonic() + 10
    while processes_with(str(repo.cache)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(str(repo.cache)) == []
    assert repo.tmpdir is not None
    assert list(repo.tmpdir.iterdir()) == []
    for lock in repo.cache.glob("perfsuite/ab/*/*.lock"):
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
    git_dir = Path(repo.git("rev-parse", "--absolute-git-dir"))
    assert not list(git_dir.glob("worktrees/*/locked"))
    assert not list(git_dir.glob("**/*.lock"))


def test_unknown_revision_is_one_line(repo: Repo) -> None:
    repo.commit("base")
    result = repo.ab("nope123", *SMALL, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        f"perfsuite ab: error: unknown revision 'nope123': not a commit in {repo.root.resolve()} "
        "(try git log --oneline)"
    ]
    assert repo.worktrees() == []


def test_a_confirmation_of_one_pair_of_processes_is_refused(repo: Repo) -> None:
    base = repo.commit("base")
    result = repo.ab(base, *SMALL, "--confirm", "1", *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "perfsuite ab: error: --confirm 1: a confirmation is judged across pairs of "
        "processes and needs at least 2; use --confirm 0 to turn it off"
    ]
    assert repo.worktrees() == []


def test_a_perfsuite_before_the_protocol_is_refused(repo: Repo) -> None:
    repo.write("perfsuite/__init__.py", '"""an old perfsuite"""\n')
    base = repo.commit("base")
    result = repo.ab(base, *SMALL, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2
    assert f"side A (base, {base[:10]}): its perfsuite predates the lockstep protocol" in (
        result.err
    )
    assert_clean(repo)


def test_collection_error_names_the_side(repo: Repo) -> None:
    base = repo.commit("base")
    repo.write("benches/bench_broken.py", "import no_such_module_for_ab\n")
    result = repo.ab(base, *SMALL, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2, result.out + result.err
    assert "side B (candidate, working tree): collection failed" in result.err
    assert "ModuleNotFoundError: No module named 'no_such_module_for_ab'" in result.err
    assert "E   " not in result.err
    assert_clean(repo)


def test_a_bench_raising_stops_both_sides(repo: Repo) -> None:
    fault_bench(repo, "pass")
    base = repo.commit("base")
    fault_bench(repo, 'raise RuntimeError("boom in a round")')
    result = repo.ab(base, *SMALL, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2, result.out + result.err
    assert "side B (candidate, working tree): benches/bench_a_fault.py::test_fault" in result.err
    assert "RuntimeError: boom in a round" in result.err
    assert_clean(repo)


@pytest.mark.parametrize(
    ("side", "fault"),
    [("A", "os._exit(3)"), ("B", "os.kill(os.getpid(), signal.SIGKILL)")],
    ids=["exit", "sigkill"],
)
def test_a_side_dying_mid_run(repo: Repo, side: str, fault: str) -> None:
    fault_bench(repo, fault if side == "A" else "pass")
    base = repo.commit("base")
    fault_bench(repo, fault if side == "B" else "pass")
    result = repo.ab(base, *SMALL, *SIDE_ARGS, timeout=HANG_S)
    assert result.code == 2, result.out + result.err
    who = f"side A (base, {base[:10]})" if side == "A" else "side B (candidate, working tree)"
    assert f"{who}: died in benches/bench_a_fault.py::test_fault" in result.err
    assert_clean(repo)


def test_ctrl_c_stops_both_sides(repo: Repo, tmp_path: Path) -> None:
    # the fault bench's file runs its pairs first (each file in its own pair of processes);
    # a call that sleeps would only delay the work benches' rounds the interrupt waits for
    fault_bench(repo, "pass")
    base = repo.commit("base")
    log = tmp_path / "rounds.jsonl"
    repo.set_work(20_000, "candidate")
    proc = repo.popen(base, *SMALL, *SIDE_ARGS, log=log)
    deadline = time.monotonic() + HANG_S
    while not (log.exists() and '"start"' in log.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # the work benches run after the fault bench: wait for their first timed round, then stop
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 130, out + err
    assert "interrupted; both sides stopped" in err
    assert_clean(repo)
