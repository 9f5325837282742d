"""perfsuite ab --idle: a frozen idle side's background threads never run during the
other side's rounds; with ``--idle wait`` they do (which the freeze exists to stop)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from perfsuite.ab.procfs import all_stopped, descendants, process_group
from perfsuite.ab.sidespec import SideSpec
from tests.ab_repo import SIDE_ARGS, SMALL, make_repo, processes_with, read_log

#: a bench whose side keeps working while it waits, as a prefetching pipeline would: a
#: thread, a child process in its group and (with SESSION) one in a session of its own
TICKER = '''
"""A bench whose side works while it waits: a thread and child processes."""
import os
import subprocess
import sys
import threading
import time

import pytest

import work

SESSION = {session}
#: a child that ends when its parent does, as a well-behaved worker would (if it can run)
CHILD = (
    "import os, time, work\\nparent = os.getppid()\\n"
    "while os.getppid() == parent:\\n    work.log(%r)\\n    time.sleep(0.002)\\n"
)


@pytest.mark.perf(warmup_rounds=1)
def test_ticker(perf):
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            work.log("tick")
            time.sleep(0.002)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    children = [subprocess.Popen([sys.executable, "-c", CHILD % "tick"], env=env)]
    if SESSION:
        children.append(subprocess.Popen(
            [sys.executable, "-c", CHILD % "tick"], env=env, start_new_session=True
        ))

    def call():
        work.log("start")
        work.run()
        work.log("end")

    try:
        perf.measure(call, items=1)
    finally:
        stop.set()
        thread.join()
        for child in children:
            child.kill()
            child.wait()
'''


def _ticks_inside_other_rounds(log: Path, pairs: list[dict[str, object]]) -> int:
    """How many ticks of one side fell inside a round the other side ran after its
    warm-up (the alternation: drain and timed rounds)."""
    rows = read_log(log)
    warmups = pairs[0]["warmup"]
    assert isinstance(warmups, dict)
    rounds: dict[str, list[tuple[float, float]]] = {"base": [], "candidate": []}
    started: dict[str, float] = {}
    for tag, _, event, t in rows:
        if event == "start":
            started[tag] = t
        elif event == "end":
            rounds[tag].append((started.pop(tag), t))
    for tag, side in (("base", "A"), ("candidate", "B")):
        rounds[tag] = rounds[tag][len(warmups[side]) :]  # the warm-up rounds ran unfrozen
        assert len(rounds[tag]) >= 20  # 10+ blocks of 3 rounds (and their drains)
    ticks = {tag: [t for g, _, e, t in rows if g == tag and e == "tick"] for tag in rounds}
    assert all(len(t) > 20 for t in ticks.values())  # each side's tickers ran
    inside = 0
    for tag, other in (("base", "candidate"), ("candidate", "base")):
        for start, end in rounds[other]:
            inside += sum(1 for t in ticks[tag] if start <= t <= end)
    return inside


@pytest.mark.parametrize("idle", ["freeze", "wait"])
def test_idle_side_is_frozen_during_the_other_sides_rounds(tmp_path: Path, idle: str) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(400_000, "base", extra="")
    repo.write("benches/bench_work.py", TICKER.format(session=True))
    base = repo.commit("base")
    repo.write("work.py", (repo.root / "work.py").read_text().replace('"base"', '"candidate"'))
    log, report = tmp_path / "rounds.jsonl", tmp_path / "report"
    args = [*SMALL, "--confirm", "0", "--threshold", "0.5", "--idle", idle]
    result = repo.ab(base, *args, "--report", str(report), *SIDE_ARGS, log=log)
    # what is tested is where the idle side's ticks fall, not the verdict: a ticker's few
    # pairs may leave it inconclusive (3, nothing judged); a fault would be 2
    assert result.code in (0, 3), result.out + result.err
    pairs = json.loads((report / "pairs.json").read_text())
    assert [p["nodeid"] for p in pairs] == ["benches/bench_work.py::test_ticker"]
    inside = _ticks_inside_other_rounds(log, pairs)
    if idle == "freeze":
        assert inside == 0
        assert pairs[0]["unsettled"] == 0  # every freeze took hold before the block
    else:
        assert inside > 0  # the idle side's thread ran beside the other side's rounds
    assert processes_with(str(repo.cache)) == []  # no side left behind, stopped or not


def test_a_killed_controller_leaves_no_side_or_child_stopped(tmp_path: Path) -> None:
    """SIGKILL to the controller mid-alternation: the sides die with it (PDEATHSIG), and
    a child left in a side's frozen group is continued and hung up by Linux (orphaned
    group), so nothing stays behind, stopped or running; the scratch folder it could not
    remove is swept by the next run (here ``--clean``)."""
    repo = make_repo(tmp_path)
    repo.tmpdir = Path(tempfile.mkdtemp(prefix="abt-", dir="/tmp"))  # short socket paths
    repo.set_work(400_000, "base")
    repo.write("benches/bench_work.py", TICKER.format(session=False))
    base = repo.commit("base")
    log = tmp_path / "rounds.jsonl"
    proc = repo.popen(base, *SMALL, "--confirm", "0", *SIDE_ARGS, log=log)
    deadline = time.monotonic() + 120
    try:
        # both sides past their warm-up: each has run a round after its first
        while not (log.exists() and log.read_text().count('"end"') >= 6):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.communicate()
    deadline = time.monotonic() + 10
    while processes_with(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(str(tmp_path)) == []
    try:
        (left,) = repo.tmpdir.iterdir()  # SIGKILL: the controller removed nothing
        cleaned = repo.ab("--clean")
        assert cleaned.code == 0, cleaned.err
        assert f"removed 1 folder(s) of killed runs from {repo.tmpdir}" in cleaned.out
        assert not left.exists()
    finally:
        shutil.rmtree(repo.tmpdir, ignore_errors=True)


def test_procfs_sees_a_child_in_its_own_session_and_its_stop() -> None:
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert child.pid in descendants(os.getpid())
        assert process_group(child.pid) == child.pid != process_group(os.getpid())
        deadline = time.monotonic() + 5
        while all_stopped([child.pid]):  # sleeping (S) is not stopped
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGSTOP)
        while not all_stopped([child.pid]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGCONT)
        while all_stopped([child.pid]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in descendants(os.getpid())
    assert process_group(child.pid) is None
    assert all_stopped([child.pid])  # gone counts as stopped: nothing left to wait for


def test_stopping_a_side_lets_its_git_remove_the_lock_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perfsuite.ab import sidemanage
    from perfsuite.ab.revisions import Revision

    lock = tmp_path / "index.lock"
    holder = f"trap 'rm -f {lock}; exit 0' TERM; touch {lock}; while :; do sleep 0.02; done"
    side = sidemanage.SideProcess(SideSpec("A", Revision("x", None), tmp_path), tmp_path)
    # a side's pytest (the group leader) whose child holds a lock, as a git does
    side.proc = subprocess.Popen(["sh", "-c", f'sh -c "{holder}" & wait'], start_new_session=True)
    deadline = time.monotonic() + 5
    while not lock.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert side.freeze()  # stopped between its blocks, as --idle freeze leaves it
    side.stop()
    assert side.proc.returncode is not None
    while lock.exists():  # its child took SIGTERM once continued, and cleaned up
        assert time.monotonic() < deadline, "the lock holder was killed, not stopped"
        time.sleep(0.01)

    monkeypatch.setattr(sidemanage, "STOP_GRACE_S", 0.2)
    deaf = sidemanage.SideProcess(SideSpec("B", Revision("x", None), tmp_path), tmp_path)
    deaf.proc = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 30"], start_new_session=True)
    time.sleep(0.1)
    started = time.monotonic()
    deaf.stop()  # deaf to SIGTERM: killed after the grace
    assert deaf.proc.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 5


def test_a_side_stopped_between_vfork_and_exec_counts_as_frozen(tmp_path: Path) -> None:
    """``sh`` starts each command with ``vfork``: a stop that lands on the child before
    its ``exec`` leaves the parent waiting in the kernel (``D``), unable to run until the
    child is continued. Freezing counts it as stopped instead of waiting out its limit."""
    from perfsuite.ab import sidemanage
    from perfsuite.ab.revisions import Revision

    side = sidemanage.SideProcess(SideSpec("A", Revision("x", None), tmp_path), tmp_path)
    side.proc = subprocess.Popen(
        ["sh", "-c", "while :; do /bin/true; done"], start_new_session=True
    )
    try:
        time.sleep(0.1)
        frozen = []
        for _ in range(40):  # each lands somewhere in the loop's vfork, exec and wait
            frozen.append(side.freeze())
            side.thaw()
            time.sleep(0.005)
        assert frozen == [True] * 40
    finally:
        side.stop()
