"""Judging a bench across fresh pairs of processes (perfsuite.ab.confirm)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t

from perfsuite.ab.confirm import CONFIRM_ALPHA, Suspects
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.rows import Row
from perfsuite.ab.sidespec import SideSpec
from perfsuite.ab.verdicts import Verdicts
from perfsuite.verdict.paired import PAIRED_ALPHA, judge, judge_processes, log_ratios
from perfsuite.verdict.stats import Verdict, within_bound
from tests.ab_repo import SIDE_ARGS, SMALL, make_repo, read_log
from tests.ab_repo import bench_run as _run


def _sessions(offsets: list[float], effect: float, pairs: int = 12) -> list[list[float]]:
    """Pairs of processes with a per-process offset each and tiny noise within."""
    rng = np.random.default_rng(3)
    return [list(effect + o + rng.normal(0, 0.002, pairs)) for o in offsets]


def test_a_clear_slowdown_in_every_pair_of_processes_is_slower() -> None:
    result = judge_processes(_sessions([0.01, -0.01, 0.0, 0.005], math.log(1.2)), 0.05)
    assert result.verdict is Verdict.SLOWER
    assert result.ci is not None
    assert 0.1 < result.ci[0] < 0.2 < result.ci[1] < 0.3
    assert result.pairs == 48


def test_a_clear_speedup_is_faster_and_higher_is_better_flips_it() -> None:
    sessions = _sessions([0.01, -0.01, 0.0, 0.005], math.log(0.8))
    assert judge_processes(sessions, 0.05).verdict is Verdict.FASTER
    assert judge_processes(sessions, 0.05, higher_is_better=True).verdict is Verdict.SLOWER


def test_identical_code_with_small_offsets_is_same() -> None:
    result = judge_processes(_sessions([0.004, -0.003, 0.001, -0.002, 0.0], 0.0), 0.05)
    assert result.verdict is Verdict.SAME


def test_process_offsets_that_fool_one_pair_do_not_fool_the_pooled_verdict() -> None:
    # Identical code; each pair of processes holds its own offset of up to 12%. Inside
    # one pair the offset looks like a clear, significant change ...
    sessions = _sessions([0.12, -0.10, 0.03, -0.08, 0.09, -0.04], 0.0)
    assert judge(sessions[0], 0.05, PAIRED_ALPHA).verdict is Verdict.SLOWER
    # ... across the pairs it is what it is: spread, not a change.
    assert judge_processes(sessions, 0.05).verdict is Verdict.INCONCLUSIVE


def test_one_pair_off_as_a_whole_does_not_sway_a_verdict_of_eight() -> None:
    """A +12% slowdown in eight pairs of processes, one of them off as a whole (-42%):
    its mean and t interval hold 0; the trimmed mean cuts it and calls it slower."""
    sessions = _sessions([0.0, 0.01, -0.01, 0.005, -0.005, 0.02, -0.02], math.log(1.12), pairs=6)
    sessions.insert(2, list(np.full(6, math.log(0.58))))
    estimates = [float(np.median(s)) for s in sessions]
    mean = float(np.mean(estimates))
    half = student_t.ppf(1 - 0.05 / 3 / 2, 7) * np.std(estimates, ddof=1) / math.sqrt(8)
    assert mean - half < 0 < mean + half
    result = judge_processes(sessions, 0.05, 0.05 / 3)
    assert result.verdict is Verdict.SLOWER
    assert result.change == pytest.approx(0.12, abs=0.01)


def test_evenly_scattered_pairs_cost_the_trimmed_mean_power() -> None:
    """The price of trimming: +10% with pairs at +-12% in turn (two layouts of memory
    and between) is slower by the mean's t interval of 12, not by the trimmed one's."""
    offsets = [0.12, -0.12, 0.0, 0.1, -0.1, 0.02] * 2
    estimates = [math.log(1.1) + o for o in offsets]
    half = student_t.ppf(1 - 0.05 / 3 / 2, 11) * np.std(estimates, ddof=1) / math.sqrt(12)
    assert np.mean(estimates) - half > 0
    result = judge_processes([[e] for e in estimates], 0.05, 0.05 / 3)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.ci is not None
    assert result.ci[0] < 0 < result.ci[1]


def test_fewer_than_eight_pairs_of_processes_take_the_t_interval_of_their_mean() -> None:
    estimates = [0.1, 0.02, 0.2, -0.05, 0.6, -0.3, 0.04]
    result = judge_processes([[e] for e in estimates], 0.05, 0.05)
    half = student_t.ppf(1 - 0.05 / 2, 6) * np.std(estimates, ddof=1) / math.sqrt(7)
    assert result.change == pytest.approx(math.expm1(np.mean(estimates)))
    assert result.ci == pytest.approx(
        (math.expm1(np.mean(estimates) - half), math.expm1(np.mean(estimates) + half))
    )


def test_one_pair_of_processes_gives_no_interval() -> None:
    result = judge_processes([[0.3] * 20], 0.05)
    assert result.ci is None
    assert result.verdict is Verdict.INCONCLUSIVE


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        judge_processes([[0.1]], 0.0)
    with pytest.raises(ValueError, match="no pairs"):
        judge_processes([[], []], 0.05)


def _rejudged(entry: dict[str, Any], alpha: float) -> tuple[str, float]:
    """The verdict and change judge_processes gives on pairs.json's blocks, split by
    pair of processes: the report must say exactly that."""
    ratios = log_ratios(entry["a_blocks"], entry["b_blocks"])
    cuts = np.cumsum([0, *entry["session_pairs"]])
    sessions = [ratios[cuts[i] : cuts[i + 1]] for i in range(len(entry["session_pairs"]))]
    result = judge_processes(sessions, entry["threshold"], alpha)
    return result.verdict.value, result.change


def test_suspects_and_a_confirmation_replacing_them() -> None:
    specs: list[SideSpec] = []
    slow = _run("b.py::slow", [0.2] * 12)
    # inconclusive, median beyond +5%, 9 pairs of 12 slower (sign test p 0.15)
    unsure = _run("b.py::unsure", [0.3] * 9 + [-0.2] * 3)
    fine = _run("b.py::fine", [0.0] * 12)
    fast = _run("b.py::fast", [-0.2] * 12)
    # beyond the threshold too, but pairs split evenly, or one pair: no suspicion
    split = _run("b.py::split", [0.3, -0.2] * 6)
    lone = _run("b.py::lone", [0.4])
    rows = [Row(r.nodeid, r) for r in (slow, unsure, fine, fast, split, lone)]
    first = Verdicts(rows, specs, 1)
    assert [r.result.change > 0.05 for r in (split, lone) if r.result] == [True, True]
    assert [row.suspect_of("leaning") for row in first.rows] == [
        True,
        True,
        False,
        True,
        False,
        False,
    ]
    # the suspects measured again, in three fresh pairs of processes each
    again = [
        Verdicts([Row("b.py::slow", _run("b.py::slow", [0.2 + d] * 12))], specs, 1)
        for d in (0.0, 0.01, -0.01)
    ] + [
        Verdicts([Row("b.py::unsure", _run("b.py::unsure", [d] * 12))], specs, 1)
        for d in (0.001, -0.001, 0.0)
    ]
    checks = [Verdicts.pool(again[:3], 0.05), Verdicts.pool(again[3:], 0.05)]
    final = first.confirmed(checks)
    verdicts = {row.nodeid: row.verdict for row in final.rows}
    assert verdicts == {
        "b.py::slow": Verdict.SLOWER,
        "b.py::unsure": Verdict.SAME,  # the first estimate is not pooled in
        "b.py::fine": Verdict.SAME,
        "b.py::fast": Verdict.FASTER,  # not measured again here: its first verdict stays
        "b.py::split": Verdict.INCONCLUSIVE,
        "b.py::lone": Verdict.INCONCLUSIVE,
    }
    assert final.regressed
    assert "confirmation in 3 pairs of processes; first pair +35.0%" in final.rows[1].cells()[1]


def test_leaning_slower_leaves_out_an_inconclusive_lean_towards_faster() -> None:
    # inconclusive both, beyond the threshold with 9 pairs of 12 leaning one way
    up = _run("b.py::up", [0.3] * 9 + [-0.2] * 3)
    down = _run("b.py::down", [-0.3] * 9 + [0.2] * 3)
    fast = _run("b.py::fast", [-0.2] * 12)  # a `faster` verdict: a claim to check
    slow = _run("b.py::slow", [0.2] * 12)
    rows = [Row(r.nodeid, r) for r in (up, down, fast, slow)]
    assert [r.verdict for r in rows] == [Verdict.INCONCLUSIVE] * 2 + [
        Verdict.FASTER,
        Verdict.SLOWER,
    ]
    first = Verdicts(rows, [], 1)
    assert list(Suspects.pick(first, "leaning").alphas) == [
        "b.py::up",
        "b.py::down",
        "b.py::fast",
        "b.py::slow",
    ]
    assert list(Suspects.pick(first, "leaning-slower").alphas) == [
        "b.py::up",
        "b.py::fast",
        "b.py::slow",
    ]
    # more items/s is better: a rise leans faster, a fall slower
    rise = _run("b.py::rise", [0.3] * 9 + [-0.2] * 3)
    assert rise.result is not None
    rise.result = judge(rise.ratios, 0.05, PAIRED_ALPHA, higher_is_better=True)
    fall = _run("b.py::fall", [-0.3] * 9 + [0.2] * 3)
    assert fall.result is not None
    fall.result = judge(fall.ratios, 0.05, PAIRED_ALPHA, higher_is_better=True)
    rates = Verdicts([Row(r.nodeid, r) for r in (rise, fall)], [], 1)
    assert list(Suspects.pick(rates, "leaning-slower").alphas) == ["b.py::fall"]
    with pytest.raises(ValueError, match="unknown kind"):
        Suspects.pick(first, "slower")


def test_an_inconclusive_bench_that_cannot_rule_out_a_regression_is_undecided() -> None:
    # 25 pairs spread from -25% to +29%: median +2%, the interval reaches past +10%
    wide = [-0.25 + 0.54 * i / 24 for i in range(25)]
    # 25 pairs from -10% to +10%: inconclusive, its interval stopping short of +10%
    bounded = Row("b.py::bounded", _run("b.py::bounded", [-0.1 + 0.2 * i / 24 for i in range(25)]))
    assert bounded.bounded
    assert not bounded.undecided
    leaning_slower = _run("b.py::up", wide)
    leaning_faster = _run("b.py::down", [-d for d in wide])
    # leaning slower (median +1%), the interval reaching -18% but not +5%: no
    # regression in reach
    short = _run("b.py::short", [-0.2] * 12 + [0.01 + 0.02 * i / 12 for i in range(13)])
    # one pair: no interval at all, so nothing ruled out; its fresh pairs judge it
    lone = _run("b.py::lone", [0.03])
    slow = _run("b.py::slow", [0.2] * 12)  # slower: a suspect of the leaning kind
    rows = {r.nodeid: Row(r.nodeid, r) for r in (leaning_slower, leaning_faster, short, lone, slow)}
    results = {n: row.run.result for n, row in rows.items() if row.run and row.run.result}
    up, short_ci = results["b.py::up"], results["b.py::short"].ci
    assert up.verdict is Verdict.INCONCLUSIVE
    assert 0 < up.change < 0.05
    assert up.ci is not None
    assert up.ci[0] < 0 < 0.10 < up.ci[1]
    assert short_ci is not None
    assert short_ci[0] < -0.05
    assert short_ci[1] < 0.05
    assert results["b.py::short"].change > 0
    assert {n: r.undecided for n, r in rows.items()} == {
        "b.py::up": True,
        "b.py::down": True,  # leans faster, but +10% is within its interval
        "b.py::short": False,
        "b.py::lone": True,
        "b.py::slow": False,
    }
    assert not rows["b.py::up"].suspect_of("leaning")  # under the threshold: no lean beyond it
    first = Verdicts(list(rows.values()), [], 1)
    # each held to the way it leaned: one-sided, its interval at twice its rate
    assert Suspects.pick(first, "leaning").alphas == {"b.py::slow": 2 * CONFIRM_ALPHA}
    assert Suspects.pick(first, "undecided").alphas == {
        "b.py::up": 2 * PAIRED_ALPHA,
        "b.py::down": PAIRED_ALPHA,  # undecided, leaning faster: taken either way
        "b.py::lone": 2 * PAIRED_ALPHA,
        "b.py::slow": 2 * PAIRED_ALPHA,  # leaning: under `undecided`, at its rate too
    }
    # more items/s is better: the regression side is a fall
    run = BenchRun("b.py::rate", 0.05)
    run.a_blocks, run.b_blocks = [[1.0] for _ in wide], [[math.exp(-d)] for d in wide]
    run.order = ["A", "B"] * len(wide)
    run.result = judge(run.ratios, 0.05, PAIRED_ALPHA, higher_is_better=True)
    assert run.result.change < 0
    assert Row(run.nodeid, run).undecided


#: appended to the bench file: log the import and the exit of each side process, and
#: give it a 1.5-s teardown (TensorFlow takes about 5 s), the window a pair started ahead
#: of the last one's exit shows in
LIFE = """
import atexit
import json
import os
import time


def _spawned():
    \"\"\"When the kernel started this process, on time.monotonic's clock.\"\"\"
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.monotonic() - age


if os.environ.get("AB_TEST_LOG"):
    with open(os.environ["AB_TEST_LOG"], "a") as out:
        out.write(json.dumps([work.TAG, os.getpid(), "spawn", _spawned()]) + "\\n")
work.log("import")
atexit.register(work.log, "exit")
atexit.register(time.sleep, 1.5)  # runs first: a teardown as slow as a framework's
"""


def test_confirm_measures_a_suspect_again_in_fresh_processes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(150_000, "base", extra=LIFE)
    base = repo.commit("base")
    repo.set_work(
        300_000, "candidate", extra=LIFE
    )  # twice the work: the first pair finds it slower
    report, log = tmp_path / "report", tmp_path / "events.log"
    args = [*SMALL, "--confirm", "3", "--report", str(report), *SIDE_ARGS, "-k", "one"]
    result = repo.ab(base, *args, timeout=240, log=log)
    assert "0 pass(es) checked in one, 1 suspect(s) in up to 3 each, " in result.out
    assert "(confirmation in 3 pairs of processes; first pair +" in result.out
    (entry,) = json.loads((report / "pairs.json").read_text())
    # the confirmation's blocks only: each session --min-pairs (10), on while under 4 s,
    # at most --max-pairs (SMALL: 12)
    assert len(entry["session_pairs"]) == 3
    assert all(10 <= n <= 12 for n in entry["session_pairs"])
    assert entry["first"]["change"] > 0.05  # what made it a suspect, kept apart
    assert entry["first"]["pairs"] >= 10
    # one look (--confirm 3), one-sided: the interval is the two-sided one at twice the rate
    verdict, change = _rejudged(entry, 2 * CONFIRM_ALPHA)
    assert (entry["verdict"], entry["change"]) == (verdict, pytest.approx(change))
    # a regression is a slower time or a cost that rose (twice the work: CPU per call)
    cpu, memory = entry.get("cpu") or {}, entry.get("memory") or {}
    regressed = verdict == "slower" or cpu.get("verdict") == "slower" or memory.get("rose")
    # inconclusive passes with its bound under twice the threshold, else it is too noisy
    ci, threshold = entry["ci"], entry["threshold"]
    bounded = ci is not None and within_bound(ci[1], threshold)
    expected = 1 if regressed else (3 if verdict == "inconclusive" and not bounded else 0)
    assert result.code == expected, result.out + result.err
    _assert_pairs_started_ahead_never_beside_timed_work(read_log(log))


def _assert_pairs_started_ahead_never_beside_timed_work(
    events: list[tuple[str, int, str, float]],
) -> None:
    life: dict[int, dict[str, float]] = {}
    timed: list[tuple[float, float, int]] = []
    began: dict[int, float] = {}
    for _tag, pid, event, t in events:
        times = life.setdefault(pid, {})
        if event in ("spawn", "import", "exit"):
            times[event] = t
        elif event.endswith("start"):
            began[pid] = t
            times.setdefault("first", t)
        else:
            timed.append((began.pop(pid), t, pid))
            times["last"] = t
    assert len(life) == 8  # the first pair and the confirmation's 3
    timed.sort()
    for (_, end, pid), (start, _, other) in itertools.pairwise(timed):
        assert end <= start, f"timed work of {pid} and {other} overlapped"
    # a later pair was started while an earlier one was still exiting (how far its
    # start-up got by then depends on the machine's load), and its first round came
    # after that pair's last
    ahead = [
        (p, q)
        for p, one in life.items()
        for q, two in life.items()
        if two["spawn"] < one["exit"] and two["first"] > one["last"]
    ]
    assert ahead, life
