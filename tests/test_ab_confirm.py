"""A confirmation looks after 3, 6, 12 pairs of processes and stops at a decisive look."""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfsuite.ab.confirm import (
    Suspects,
    confirm_in_fresh_pairs,
    looks,
)
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.process_pairs import first_side, key, session_seed
from perfsuite.ab.protocol import pair_orders
from perfsuite.ab.report import write_report
from perfsuite.ab.revisions import Revision
from perfsuite.ab.rows import Row, against
from perfsuite.ab.sidespec import SideSpec
from perfsuite.ab.verdicts import Verdicts
from perfsuite.verdict.paired import PAIRED_ALPHA, PairedResult, judge, judge_processes
from perfsuite.verdict.stats import Verdict
from tests.ab_repo import bench_run

ALPHA_CONFIRM = 0.05


def _session(effects: dict[str, float], seed: int) -> Verdicts:
    """One pair of processes: each bench's 12 pairs of blocks at its effect, tiny noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for nodeid, effect in effects.items():
        ratios = list(effect + rng.normal(0, 0.002, 12))
        run = BenchRun(nodeid, 0.05)
        run.a_blocks = [[1.0] for _ in ratios]
        run.b_blocks = [[math.exp(r)] for r in ratios]
        run.order = ["A", "B"] * len(ratios)
        run.result = judge(run.ratios, 0.05, PAIRED_ALPHA)
        rows.append(Row(nodeid, run))
    return Verdicts(rows, [], 1)


class Sessions:
    """Fresh pairs of processes whose per-process offsets follow ``offsets`` in turn."""

    def __init__(self, effects: dict[str, float], offsets: list[float]) -> None:
        self.effects, self.offsets, self.calls = effects, offsets, 0
        self.asked: list[list[str]] = []  # the suspects each pair was asked to measure

    def __call__(self, i: int, ids: list[str], more: bool = True) -> Verdicts:
        assert i == self.calls  # pairs of processes are asked for in order, once each
        self.calls += 1
        self.asked.append(list(ids))
        offset = self.offsets[i % len(self.offsets)]
        return _session({n: e + offset for n, e in self.effects.items()}, i)


def test_looks_double_from_three_up_to_the_most() -> None:
    assert looks(12) == [3, 6, 12]
    assert looks(6) == [3, 6]
    assert looks(7) == [3, 6, 7]
    assert looks(3) == [3]
    assert looks(2) == [2]
    assert looks(20) == [3, 6, 12, 20]
    with pytest.raises(ValueError, match="at least 2"):
        looks(1)


def test_a_clear_regression_stops_at_the_first_look() -> None:
    sessions = Sessions({"b.py::slow": math.log(1.2)}, [0.01, -0.01, 0.0])
    (row,) = confirm_in_fresh_pairs(sessions, ["b.py::slow"], 12, ALPHA_CONFIRM).confirmed.rows
    assert sessions.calls == 3
    assert row.verdict is Verdict.SLOWER
    assert row.run is not None
    assert len(row.run.sessions) == 3
    assert row.run.result is not None
    assert row.run.result.alpha == pytest.approx(ALPHA_CONFIRM / 3)  # 3 looks share it


def test_scattered_pairs_of_processes_go_on_to_the_last_look() -> None:
    # +10% with offsets of +-10% between pairs of processes: not decisive at 3 or 6
    offsets = [0.1, -0.1, 0.0, 0.08, -0.08, 0.02]
    sessions = Sessions({"b.py::pil": math.log(1.1)}, offsets)
    (row,) = confirm_in_fresh_pairs(sessions, ["b.py::pil"], 12, ALPHA_CONFIRM).confirmed.rows
    assert sessions.calls == 12
    assert row.run is not None
    assert len(row.run.sessions) == 12
    assert row.verdict is Verdict.SLOWER


def test_an_undecided_suspect_is_kept_as_the_last_look_found_it() -> None:
    # +10% with offsets of +-10%: 6 pairs could clear 0 (so it goes on) but do not
    offsets = [0.1, -0.1, 0.02, 0.08, -0.08, 0.0]
    sessions = Sessions({"b.py::noisy": math.log(1.1)}, offsets)
    (row,) = confirm_in_fresh_pairs(sessions, ["b.py::noisy"], 6, ALPHA_CONFIRM).confirmed.rows
    assert sessions.calls == 6
    assert row.verdict is Verdict.INCONCLUSIVE
    assert row.run is not None
    assert row.run.result is not None
    assert not row.run.result.futile


def test_a_suspect_the_pairs_left_could_not_decide_stops_at_a_look() -> None:
    offsets = [0.3, -0.3, 0.02, -0.2]  # spread far beyond anything 6 pairs decide
    sessions = Sessions({"b.py::noisy": 0.0}, offsets)
    (row,) = confirm_in_fresh_pairs(sessions, ["b.py::noisy"], 6, ALPHA_CONFIRM).confirmed.rows
    assert sessions.calls == 3
    assert row.verdict is Verdict.INCONCLUSIVE
    assert row.run is not None
    assert row.run.result is not None
    assert row.run.result.futile
    # +10% with offsets of +-12%: 6 pairs in all could not decide it, but two of its
    # first three read it beyond the threshold, so it is not stopped before trimming
    scattered = Sessions({"b.py::pil": math.log(1.1)}, [0.12, -0.12, 0.0, 0.1, -0.1, 0.02])
    (row,) = confirm_in_fresh_pairs(scattered, ["b.py::pil"], 6, ALPHA_CONFIRM).confirmed.rows
    assert (scattered.calls, row.verdict) == (6, Verdict.INCONCLUSIVE)
    assert row.run is not None
    assert row.run.result is not None
    assert not row.run.result.futile
    # the same pairs in another order, two within the threshold first: futile
    middle = Sessions({"b.py::pil": math.log(1.1)}, [-0.12, -0.1, 0.12, 0.1, 0.0, 0.02])
    (row,) = confirm_in_fresh_pairs(middle, ["b.py::pil"], 6, ALPHA_CONFIRM).confirmed.rows
    assert (middle.calls, row.verdict) == (3, Verdict.INCONCLUSIVE)
    assert row.run is not None
    assert row.run.result is not None
    assert row.run.result.futile


def test_futility_counts_the_pairs_the_confirm_seconds_leave_time_for() -> None:
    offsets = [0.06, -0.01, 0.02, 0.0, 0.05, -0.02]  # unchanged, pairs of processes +-3%
    unbounded = Sessions({"b.py::aa": 0.0}, offsets)
    (row,) = confirm_in_fresh_pairs(unbounded, ["b.py::aa"], 12, ALPHA_CONFIRM).confirmed.rows
    # 6 pairs bound it under twice the threshold, its estimate within it: settled there
    assert (unbounded.calls, row.verdict) == (6, Verdict.INCONCLUSIVE)
    assert row.bounded
    # 10 s a pair, 45 s allowed: the 15 s left after 3 pairs take it to no next look,
    # but that look would bound it as projected, so it goes on to it past the seconds
    bounded = Sessions({"b.py::aa": 0.0}, offsets)
    row = _within_45_s(bounded)
    assert (bounded.calls, row.verdict) == (6, Verdict.INCONCLUSIVE)
    assert row.bounded
    assert row.run is not None
    assert row.run.result is not None
    assert not row.run.result.futile
    # offsets of +-30%: after 3 pairs, time for 1 more, which could neither decide it nor
    # bound it under twice its threshold
    noisy = Sessions({"b.py::aa": 0.0}, [0.3, -0.3, 0.02, -0.2, 0.3, -0.25])
    row = _within_45_s(noisy)
    assert (noisy.calls, row.verdict) == (3, Verdict.INCONCLUSIVE)
    assert row.run is not None
    assert row.run.result is not None
    assert row.run.result.futile
    first = _session({"b.py::aa": 0.03}, 1)
    final = first.confirmed([Verdicts([row], [], 1)])
    word = final.rows[0].cells()[1]
    assert word.startswith("TOO NOISY: no regression above +278.6% (confirmation in 3 pairs")
    assert "; first pair +3" in word
    assert word.endswith("%, stopped early: more could not decide)")


def test_each_suspect_keeps_the_look_that_decided_it() -> None:
    offsets = [0.1, -0.1, 0.0, 0.08, -0.08, 0.02]
    sessions = Sessions({"b.py::slow": 0.4, "b.py::pil": math.log(1.1)}, offsets)
    rows = confirm_in_fresh_pairs(
        sessions, ["b.py::slow", "b.py::pil"], 12, ALPHA_CONFIRM
    ).confirmed.rows
    assert sessions.calls == 12  # the scattered one needs every look
    counts = {row.nodeid: len(row.run.sessions) for row in rows if row.run}
    assert counts == {"b.py::slow": 6, "b.py::pil": 12}  # slow: decided at the second look
    assert [row.verdict for row in rows] == [Verdict.SLOWER, Verdict.SLOWER]
    # a kept suspect is final: the pairs after its look measure only the one still open
    assert sessions.asked == [["b.py::slow", "b.py::pil"]] * 6 + [["b.py::pil"]] * 6


def test_each_suspect_is_judged_at_its_own_error_rate() -> None:
    # +10% with offsets of +-1-2% between pairs of processes: decisive at 3 pairs at
    # CONFIRM_ALPHA (a leaning suspect of `leaning`), not at PAIRED_ALPHA (of `undecided`)
    sessions = Sessions(
        {"b.py::lean": math.log(1.1), "b.py::open": math.log(1.1)},
        [0.01, -0.01, 0.0, 0.02, -0.02, 0.01],
    )
    alphas = {"b.py::lean": ALPHA_CONFIRM, "b.py::open": PAIRED_ALPHA}
    rows = {
        r.nodeid: r
        for r in confirm_in_fresh_pairs(sessions, list(alphas), 12, alphas).confirmed.rows
    }
    results = {n: r.run.result for n, r in rows.items() if r.run and r.run.result}
    assert results["b.py::lean"].alpha == pytest.approx(ALPHA_CONFIRM / 3)
    assert results["b.py::open"].alpha == pytest.approx(PAIRED_ALPHA / 3)
    assert results["b.py::lean"].verdict is Verdict.SLOWER
    assert [len(r.run.sessions) for r in rows.values() if r.run] == [3, 6]
    assert results["b.py::open"].verdict is Verdict.SLOWER
    assert sessions.calls == 6


def test_a_confirmed_row_says_how_many_pairs_judged_it() -> None:
    first = _session({"b.py::slow": 0.2}, 99)
    sessions = Sessions({"b.py::slow": math.log(1.2)}, [0.01, -0.01, 0.0])
    check = confirm_in_fresh_pairs(sessions, ["b.py::slow"], 12, ALPHA_CONFIRM).confirmed
    final = first.confirmed([check])
    assert "(confirmation in 3 pairs of processes; first pair +2" in final.rows[0].cells()[1]
    run = final.rows[0].run
    assert run is not None
    assert first.rows[0].run is not None
    assert run.first is first.rows[0].run.result  # kept for pairs.json, never pooled in
    assert run.result is not None
    assert run.result.pairs == 3 * 12


def test_pairs_json_keeps_a_confirmed_benchs_first_pair_beside_the_verdict(
    tmp_path: Path,
) -> None:
    first = _session({"b.py::x": math.log(0.93)}, 5)  # the first pair read it 7% faster
    sessions = Sessions({"b.py::x": math.log(1.07)}, [0.004, -0.004, 0.0])
    check = confirm_in_fresh_pairs(sessions, ["b.py::x"], 12, ALPHA_CONFIRM).confirmed
    final = first.confirmed([check])
    first.specs = final.specs = [
        SideSpec("A", Revision("main", "a" * 40), tmp_path),
        SideSpec("B", Revision("working tree", None), tmp_path),
    ]
    write_report(tmp_path / "report", final, {}, {})
    (entry,) = json.loads((tmp_path / "report" / "pairs.json").read_text())
    assert entry["verdict"] == "inconclusive"  # the other way: not confirmed
    assert entry["change"] == pytest.approx(0.07, abs=0.005)
    assert entry["first"]["verdict"] in ("faster", "inconclusive")
    assert entry["first"]["change"] == pytest.approx(-0.07, abs=0.005)
    assert len(entry["sessions"]) == 3
    write_report(tmp_path / "plain", first, {}, {})
    (plain,) = json.loads((tmp_path / "plain" / "pairs.json").read_text())
    assert "first" not in plain  # a bench not confirmed has no first pair to keep apart


def test_a_bench_stopped_for_futility_says_so_and_pairs_json_keeps_it(tmp_path: Path) -> None:
    run = BenchRun("b.py::noisy", 0.05)
    run.result = replace(judge([0.3, -0.3, 0.1] * 4, 0.05, PAIRED_ALPHA), futile=True)
    verdicts = Verdicts(
        [Row("b.py::noisy", run)],
        [
            SideSpec("A", Revision("main", "a" * 40), tmp_path),
            SideSpec("B", Revision("working tree", None), tmp_path),
        ],
        1,
    )
    word = verdicts.rows[0].cells()[1]
    assert (
        word == "TOO NOISY: no regression above +35.0% (stopped early: its budget could not decide)"
    )
    write_report(tmp_path / "report", verdicts, {}, {})
    (entry,) = json.loads((tmp_path / "report" / "pairs.json").read_text())
    assert (entry["verdict"], entry["futile"]) == ("inconclusive", True)


class Clock:
    """A clock on which each pair of processes takes ``step`` seconds."""

    def __init__(self, sessions: Sessions, step: float) -> None:
        self.sessions, self.step = sessions, step

    def __call__(self) -> float:
        return self.sessions.calls * self.step


def _within_45_s(sessions: Sessions) -> Row:
    """``b.py::aa`` confirmed in pairs of 10 s each, at most 45 s."""
    clock = Clock(sessions, 10.0)
    (row,) = confirm_in_fresh_pairs(
        sessions, ["b.py::aa"], 12, ALPHA_CONFIRM, 45.0, clock
    ).confirmed.rows
    return row


def test_spent_seconds_take_the_look_due_on_the_pairs_so_far() -> None:
    offsets = [0.12, -0.12, 0.0, 0.1, -0.1, 0.02]  # would need all 12 pairs
    sessions = Sessions({"b.py::pil": math.log(1.1)}, offsets)
    # 10 s a pair for the first look, then 50 s; 120 s allowed: at 30 s the 90 s left
    # take it to its next look at the pace so far, but the 5th pair ends at 130 s
    steps = [10.0] * 3 + [50.0] * 9
    check = confirm_in_fresh_pairs(
        sessions,
        ["b.py::pil"],
        12,
        ALPHA_CONFIRM,
        120.0,
        lambda: sum(steps[: sessions.calls]),
    ).confirmed
    (row,) = check.rows
    assert sessions.calls == 5
    assert row.run is not None
    assert row.run.result is not None
    assert len(row.run.sessions) == 5
    assert row.run.result.alpha == pytest.approx(ALPHA_CONFIRM / 3)  # still one of 3 looks
    assert row.verdict is Verdict.INCONCLUSIVE


def test_the_first_look_is_always_taken_and_a_decided_suspect_stops_early() -> None:
    offsets = [0.12, -0.12, 0.0, 0.1, -0.1, 0.02]
    sessions = Sessions({"b.py::pil": math.log(1.1)}, offsets)
    confirm_in_fresh_pairs(sessions, ["b.py::pil"], 12, ALPHA_CONFIRM, 1.0, Clock(sessions, 10.0))
    assert sessions.calls == 3  # spent long before, yet the first look's 3 pairs run
    clear = Sessions({"b.py::slow": math.log(1.2)}, [0.01, -0.01, 0.0])
    (row,) = confirm_in_fresh_pairs(
        clear, ["b.py::slow"], 12, ALPHA_CONFIRM, 1e9, Clock(clear, 10.0)
    ).confirmed.rows
    assert clear.calls == 3
    assert row.verdict is Verdict.SLOWER


def test_the_side_that_starts_first_alternates_across_a_files_pairs_of_processes() -> None:
    for seed in range(20):
        for files in [("benches/bench_a.py",), None]:
            firsts = [first_side(seed, key(files, 1000 + i)) for i in range(12)]
            assert firsts.count("A") == firsts.count("B") == 6
            assert all(x != y for x, y in itertools.pairwise(firsts))
            processes = [first_side(seed, key(files, r)) for r in range(4)]
            assert sorted(processes) == ["A", "A", "B", "B"]
    # the first pair's side is drawn, not fixed
    assert {first_side(seed, key(None, 0)) for seed in range(20)} == {"A", "B"}


def test_two_sessions_share_a_seed_and_run_its_block_orders_mirrored() -> None:
    for base in (7, 8):
        seeds = [session_seed(base, offset) for offset in (1000, 1001, 1002, 1003, 0, 1)]
        assert seeds[0][0] == seeds[1][0] != seeds[2][0] == seeds[3][0]
        assert [mirror for _, mirror in seeds] == [False, True, False, True, False, True]
        assert seeds[4] == (base, False)
    for seed in range(20):
        plain, mirrored = random.Random(seed), random.Random(seed)
        for _ in range(5):
            orders, flipped = pair_orders(plain), pair_orders(mirrored, mirror=True)
            assert [o[::-1] for o in orders] == list(flipped)


def test_a_confirmation_the_other_way_from_the_first_estimate_is_not_confirmed() -> None:
    first = _session({"b.py::x": math.log(0.93)}, 5)  # the first pair read it 7% faster
    assert first.rows[0].suspect_of("leaning")
    sessions = Sessions({"b.py::x": math.log(1.07)}, [0.004, -0.004, 0.0])
    check = confirm_in_fresh_pairs(sessions, ["b.py::x"], 12, ALPHA_CONFIRM).confirmed
    assert check.rows[0].verdict is Verdict.SLOWER  # fresh pairs alone would say slower
    final = first.confirmed([check])
    assert final.rows[0].verdict is Verdict.INCONCLUSIVE
    assert not final.regressed
    assert "first pair -7.0%, the other way: not confirmed" in final.rows[0].cells()[1]
    same_way = _session({"b.py::x": math.log(1.07)}, 6)
    kept = same_way.confirmed([check])
    assert kept.rows[0].verdict is Verdict.SLOWER
    assert kept.regressed


def test_which_way_counts_for_a_higher_is_better_metric() -> None:
    def result(verdict: Verdict, change: float) -> PairedResult:
        return PairedResult(verdict, change, None, 12, 0.05, 0.01, higher_is_better=True)

    up = result(Verdict.INCONCLUSIVE, 0.08)  # more items/s: leans faster
    assert against(up, result(Verdict.SLOWER, -0.07))
    assert not against(up, result(Verdict.FASTER, 0.07))
    assert not against(up, result(Verdict.SAME, 0.0))
    down = result(Verdict.SLOWER, -0.08)
    assert against(down, result(Verdict.FASTER, 0.07))
    assert not against(down, result(Verdict.SLOWER, -0.07))


def test_an_undecided_first_pair_leaning_faster_is_confirmed_whichever_way() -> None:
    # the first pair read -2% [-16%, +15%]: it leans faster, but a +10% regression is
    # within its interval, so it was not ruled out
    wide = [-0.25 + 0.54 * i / 24 for i in range(25)]
    first = Verdicts([Row("b.py::x", bench_run("b.py::x", [-d for d in wide]))], [], 1)
    row = first.rows[0]
    assert row.run is not None
    assert row.run.result is not None
    assert row.run.result.verdict is Verdict.INCONCLUSIVE
    assert row.run.result.change < 0
    assert row.undecided
    assert row.open_either_way
    assert not row.suspect_of("leaning")
    # judged at the first stage's rate on the fresh pairs alone, whichever way
    assert Suspects.pick(first, "undecided").alphas == {"b.py::x": PAIRED_ALPHA}
    assert Suspects.pick(first, "undecided").either == {"b.py::x"}
    assert Suspects.pick(first, "leaning").either == frozenset()
    assert Suspects.pick(first, "leaning-slower").alphas == {}
    sessions = Sessions({"b.py::x": math.log(1.10)}, [0.004, -0.004, 0.0])
    check = confirm_in_fresh_pairs(sessions, ["b.py::x"], 12, {"b.py::x": PAIRED_ALPHA}).confirmed
    assert check.rows[0].verdict is Verdict.SLOWER
    kept = first.confirmed([check], either_way=Suspects.pick(first, "undecided").either)
    assert kept.rows[0].verdict is Verdict.SLOWER
    assert kept.regressed
    # held to the first estimate's direction, the same check would not count
    overruled = first.confirmed([check])
    assert overruled.rows[0].verdict is Verdict.INCONCLUSIVE
    assert not overruled.regressed


def test_a_suspect_held_to_its_lean_is_tested_one_sided_and_an_open_one_two_sided() -> None:
    slow = Row("b.py::slow", bench_run("b.py::slow", [0.1 + 0.001 * i for i in range(24)]))
    wide = [-0.25 + 0.54 * i / 24 for i in range(25)]
    open_row = Row("b.py::open", bench_run("b.py::open", [-d for d in wide]))
    first = Verdicts([slow, open_row], [], 1)
    assert Suspects.pick(first, "undecided").alphas == {
        "b.py::slow": 2 * PAIRED_ALPHA,  # one-sided at the kind's rate: only `slower` counts
        "b.py::open": PAIRED_ALPHA,  # taken whichever way: two-sided
    }
    assert Suspects.pick(first, "leaning").alphas == {"b.py::slow": 2 * ALPHA_CONFIRM}


def test_a_suspect_of_changed_code_is_judged_at_the_first_stages_rate_however_it_leaned() -> None:
    """A gated run's A/B of a changed file: an `eager` torch bench that nothing changed,
    its first pair +19.9%, then three fresh pairs of processes in one of its modes
    (+45.6%, +31.1%, +30.2%). At a leaning suspect's rate they confirm it slower; under
    ``--suspects undecided`` its lean earns no looser rate, and they do not."""
    sessions = [[math.log1p(0.456)], [math.log1p(0.311)], [math.log1p(0.302)]]
    at = {rate: judge_processes(sessions, 0.05, 2 * rate / 3) for rate in (0.05, 0.01)}
    assert at[ALPHA_CONFIRM].verdict is Verdict.SLOWER
    assert at[PAIRED_ALPHA].verdict is Verdict.INCONCLUSIVE
    lean = Row("b.py::eager", bench_run("b.py::eager", [0.18 + 0.001 * i for i in range(24)]))
    assert lean.suspect_of("undecided")
    for kind, rate in (("leaning", ALPHA_CONFIRM), ("undecided", PAIRED_ALPHA)):
        assert Suspects.pick(Verdicts([lean], [], 1), kind).alphas == {"b.py::eager": 2 * rate}


def test_a_confirmation_left_inconclusive_says_how_many_pairs_its_threshold_needs() -> None:
    offsets = [0.12, -0.12, 0.0]  # pairs of processes that scatter: 3 cannot decide
    sessions = Sessions({"b.py::pil": math.log(1.04)}, offsets)
    (row,) = confirm_in_fresh_pairs(sessions, ["b.py::pil"], 3, ALPHA_CONFIRM).confirmed.rows
    assert row.verdict is Verdict.INCONCLUSIVE
    assert row.run is not None
    assert row.run.result is not None
    assert row.run.result.ci is not None
    low, high = row.run.result.ci
    needs = math.ceil(3 * ((high - low) / 2 / 0.05) ** 2)
    found = Verdicts([row], [], 1)
    assert found.resolution_lines(across=True) == [
        f"b.py::pil resolves ±{(high - low) / 2 * 100:.1f}% across 3 pairs of processes "
        f"here; ±5% needs about {needs} pairs (--confirm)"
    ]
    assert needs > 3
    assert found.resolution_lines() == []  # the first pairs' lines are of their seconds
