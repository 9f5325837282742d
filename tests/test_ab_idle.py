"""perfsuite ab --idle: a frozen idle side's background threads never run during the
other side's rounds; with ``--idle wait`` they do (which the freeze exists to stop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ab_repo import SIDE_ARGS, SMALL, make_repo, processes_with, read_log

#: a bench whose side keeps a background thread ticking, as a prefetching pipeline would
TICKER = '''
"""A bench with a background thread that works while its side waits."""
import threading
import time

import pytest

import work


@pytest.mark.perf(warmup_rounds=1)
def test_ticker(perf):
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            work.log("tick")
            time.sleep(0.002)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()

    def call():
        work.log("start")
        work.run()
        work.log("end")

    try:
        perf.measure(call, items=1)
    finally:
        stop.set()
        thread.join()
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
    assert all(len(t) > 50 for t in ticks.values())  # each ticker ran
    inside = 0
    for tag, other in (("base", "candidate"), ("candidate", "base")):
        for start, end in rounds[other]:
            inside += sum(1 for t in ticks[tag] if start <= t <= end)
    return inside


@pytest.mark.parametrize("idle", ["freeze", "wait"])
def test_idle_side_is_frozen_during_the_other_sides_rounds(tmp_path: Path, idle: str) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(400_000, "base", extra="")
    repo.write("benches/bench_work.py", TICKER)
    base = repo.commit("base")
    repo.write("work.py", (repo.root / "work.py").read_text().replace('"base"', '"candidate"'))
    log, report = tmp_path / "rounds.jsonl", tmp_path / "report"
    args = [*SMALL, "--confirm", "0", "--threshold", "0.5", "--idle", idle]
    result = repo.ab(base, *args, "--report", str(report), *SIDE_ARGS, log=log)
    assert result.code == 0, result.out + result.err
    pairs = json.loads((report / "pairs.json").read_text())
    assert [p["nodeid"] for p in pairs] == ["benches/bench_work.py::test_ticker"]
    inside = _ticks_inside_other_rounds(log, pairs)
    if idle == "freeze":
        assert inside == 0
        assert pairs[0]["unsettled"] == 0  # every freeze took hold before the block
    else:
        assert inside > 0  # the idle side's thread ran beside the other side's rounds
    assert processes_with(str(repo.cache)) == []  # no side left behind, stopped or not
