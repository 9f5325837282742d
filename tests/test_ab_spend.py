"""A confirmation spends its seconds on the suspects nearest a decision, a regression first."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest

from perfsuite.ab.confirm import confirm_in_fresh_pairs, follow_up
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.process_pairs import key
from perfsuite.ab.rows import Row
from perfsuite.ab.spend import (
    Open,
    Pace,
    first_look,
    first_reads,
    going_on,
    near,
    nearest_first,
    surely_slower,
    unresolvable,
)
from perfsuite.ab.verdicts import Verdicts
from perfsuite.options import Spread
from perfsuite.verdict.futility import t_margin
from perfsuite.verdict.paired import PairedResult
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.trimmed import interval_factor
from tests.test_ab_confirm import ALPHA_CONFIRM, Clock, Sessions

#: pairs of processes off by up to 6%: a +12% suspect is open after 3 pairs and slower
#: after 6, an unchanged one bounded after 6
OFFSETS = [0.06, -0.04, 0.0, 0.03, -0.02, 0.01]


def _open(nodeid: str, change: float, ci: tuple[float, float]) -> Open:
    result = PairedResult(Verdict.INCONCLUSIVE, change, ci, 36, 0.05, ALPHA_CONFIRM / 3)
    return Open(nodeid, result, 3, 6)


class Timed(Sessions):
    """Sessions in which each bench alternates ``own`` seconds and a pair's start-up and
    teardown take ``overhead``; :meth:`clock` is the time they took so far."""

    def __init__(self, effects: dict[str, float], own: float, overhead: float) -> None:
        super().__init__(effects, OFFSETS)
        self.own, self.overhead, self.elapsed = own, overhead, 0.0

    def __call__(self, i: int, ids: list[str], more: bool = True) -> Verdicts:
        found = super().__call__(i, ids, more)
        rows = [row for row in found.rows if row.nodeid in ids]
        for row in rows:
            assert row.run is not None
            row.run.seconds = self.own
        self.elapsed += self.overhead + self.own * len(rows)
        return Verdicts(rows, found.specs, found.seed)

    def clock(self) -> float:
        return self.elapsed


def test_a_regression_goes_first_then_the_nearest_decision() -> None:
    bounded_next = _open("b.py::aa", 0.0, (-0.08, 0.09))  # would be bounded, by far
    slower = _open("b.py::slow", 0.12, (-0.01, 0.27))  # would clear 0
    hopeless = _open("b.py::noisy", 0.07, (-0.6, 1.5))  # would decide nothing
    assert near(bounded_next) > near(slower) >= 1 > near(hopeless)
    ranked = nearest_first([hopeless, bounded_next, slower])
    assert [o.nodeid for o in ranked] == ["b.py::slow", "b.py::aa", "b.py::noisy"]


def test_the_seconds_left_go_to_as_many_of_the_nearest_as_they_take_to_the_next_look() -> None:
    pace = Pace([5.0], {"b.py::aa": [10.0], "b.py::slow": [10.0], "b.py::x": [10.0]})
    assert pace.pair(["b.py::aa", "b.py::slow"]) == 25.0
    opened = [_open("b.py::aa", 0.0, (-0.08, 0.09)), _open("b.py::slow", 0.12, (-0.01, 0.27))]
    assert going_on(opened, {}, pace, 75.0, False) == (["b.py::slow", "b.py::aa"], False)
    assert going_on(opened, {}, pace, 45.0, False) == (["b.py::slow"], False)
    # none fits: the nearest goes on alone, past the seconds, once
    assert going_on(opened, {}, pace, 10.0, False) == (["b.py::slow"], True)
    assert going_on(opened, {}, pace, 10.0, True) == ([], False)
    # a suspect between looks goes on whatever, and its pairs count, so no grace
    assert going_on(opened, {"b.py::x": 3}, pace, 45.0, False) == ([], False)
    assert going_on(opened, {}, pace, None, False) == (["b.py::aa", "b.py::slow"], False)


def test_a_confirmation_takes_the_nearest_suspect_alone_to_its_next_look() -> None:
    effects = {"b.py::aa": 0.0, "b.py::bb": 0.0, "b.py::slow": math.log(1.12)}
    # each bench 10 s a pair, 5 s start-up and teardown: the first look takes 105 s, and
    # the 45 s left take one bench, not two, through 3 more pairs
    sessions = Timed(effects, 10.0, 5.0)
    found = confirm_in_fresh_pairs(
        sessions, list(effects), 12, ALPHA_CONFIRM, 150.0, sessions.clock
    ).confirmed
    assert sessions.asked == [list(effects)] * 3 + [["b.py::slow"]] * 3
    rows = {row.nodeid: row for row in found.rows}
    assert rows["b.py::slow"].verdict is Verdict.SLOWER
    assert [len(r.run.sessions) for r in rows.values() if r.run] == [3, 3, 6]
    assert {rows["b.py::aa"].verdict, rows["b.py::bb"].verdict} == {Verdict.INCONCLUSIVE}
    assert sessions.elapsed == 150.0


def test_past_the_seconds_only_the_nearest_goes_on_and_only_once() -> None:
    effects = {"b.py::aa": 0.0, "b.py::slow": math.log(1.12)}
    sessions = Sessions(effects, OFFSETS)
    found = confirm_in_fresh_pairs(
        sessions, list(effects), 12, ALPHA_CONFIRM, 1.0, Clock(sessions, 10.0)
    ).confirmed
    assert sessions.asked == [list(effects)] * 3 + [["b.py::slow"]] * 3
    verdicts = {row.nodeid: row.verdict for row in found.rows}
    assert verdicts == {"b.py::aa": Verdict.INCONCLUSIVE, "b.py::slow": Verdict.SLOWER}
    # +4%: its first 3 pairs agree, the next 3 are off by +-15%: open at 6, no second grace
    scattered = Sessions({"b.py::pil": math.log(1.04)}, [0.02, -0.02, 0.0, 0.15, -0.15, 0.05])
    (row,) = confirm_in_fresh_pairs(
        scattered, ["b.py::pil"], 12, ALPHA_CONFIRM, 1.0, Clock(scattered, 10.0)
    ).confirmed.rows
    assert scattered.calls == 6
    assert row.verdict is Verdict.INCONCLUSIVE


def test_no_grace_once_a_regression_is_confirmed_it_fails_the_ab_whatever_the_rest() -> None:
    # alone, an unchanged suspect open at 3 pairs takes the grace to its next look
    alone = Sessions({"b.py::aa": 0.0}, OFFSETS)
    (row,) = confirm_in_fresh_pairs(
        alone, ["b.py::aa"], 12, ALPHA_CONFIRM, 1.0, Clock(alone, 10.0)
    ).confirmed.rows
    assert alone.asked == [["b.py::aa"]] * 6
    assert row.bounded
    # beside a +50% suspect confirmed at 3 pairs, the A/B fails whatever it reads: no grace
    effects = {"b.py::aa": 0.0, "b.py::clear": math.log(1.5)}
    sessions = Sessions(effects, OFFSETS)
    found = confirm_in_fresh_pairs(
        sessions, list(effects), 12, ALPHA_CONFIRM, 1.0, Clock(sessions, 10.0)
    ).confirmed
    assert sessions.asked == [list(effects)] * 3
    rows = {row.nodeid: row for row in found.rows}
    assert rows["b.py::clear"].verdict is Verdict.SLOWER
    assert rows["b.py::aa"].verdict is Verdict.INCONCLUSIVE
    assert not rows["b.py::aa"].bounded


def test_a_pace_counts_each_benchs_alternation_and_warm_up_apart_from_the_pair() -> None:
    run = BenchRun("b.py::x", 0.05, seconds=4.0)
    run.warmup = {"A": [0.5, 0.5], "B": [1.0]}
    other = BenchRun("b.py::y", 0.05, seconds=100.0)  # not asked for: not counted
    pace = Pace()
    pace.add(20.0, Verdicts([Row("b.py::x", run), Row("b.py::y", other)], [], 1), ["b.py::x"])
    assert pace.overheads == [14.0]
    assert pace.own == {"b.py::x": [6.0]}
    assert pace.pair(["b.py::x", "b.py::z"]) == pytest.approx(20.0)


def _read(change: float) -> PairedResult:
    return PairedResult(Verdict.INCONCLUSIVE, change, None, 5, 0.05, 0.0013)


def test_the_first_look_takes_the_suspects_read_slowest_that_the_seconds_fit() -> None:
    effects = {"b.py::aa": 0.0, "b.py::bb": 0.0, "b.py::slow": math.log(1.12)}
    surely = {"b.py::aa": 0.5, "b.py::bb": -1.0, "b.py::slow": 6.0}  # how surely slower
    reads = {nodeid: (read, read) for nodeid, read in surely.items()}  # by both statistics
    # the first pair's pace: 5 s a pair, 10 s a bench; 60 s take 3 pairs of one bench
    pace = Pace([5.0], {n: [10.0] for n in effects})
    sessions = Timed(effects, 10.0, 5.0)
    found = confirm_in_fresh_pairs(
        sessions, list(effects), 12, ALPHA_CONFIRM, 60.0, sessions.clock, first=(pace, reads, ())
    )
    assert sessions.asked == [["b.py::slow"]] * 6  # past the seconds to its second look
    assert found.left_out == ("b.py::aa", "b.py::bb")
    (row,) = found.confirmed.rows
    assert row.nodeid == "b.py::slow"
    assert row.verdict is Verdict.SLOWER
    # the first look keeps room for the slowest's next look: 3 pairs of two (75 s) and
    # 3 more of the slowest (45 s) take 120 s; 100 s take the slowest alone
    sessions = Timed(effects, 10.0, 5.0)
    found = confirm_in_fresh_pairs(
        sessions, list(effects), 12, ALPHA_CONFIRM, 120.0, sessions.clock, first=(pace, reads, ())
    )
    assert sessions.asked[0] == ["b.py::aa", "b.py::slow"]
    assert found.left_out == ("b.py::bb",)
    assert first_look(list(effects), [], reads, pace, 100.0, (3, 6, 12)) == ["b.py::slow"]
    assert first_look(list(effects), [], reads, pace, 100.0, (3,)) == ["b.py::aa", "b.py::slow"]
    # without the seconds, or without a first pair's pace, every suspect is measured
    sessions = Timed(effects, 10.0, 5.0)
    confirm_in_fresh_pairs(sessions, list(effects), 12, ALPHA_CONFIRM, first=(pace, reads, ()))
    assert sessions.asked[0] == list(effects)
    # a suspect its first pair read slower, or one for its CPU or memory, is measured
    # whatever, and so is the first ranked of the others, whatever the seconds
    ids = list(effects)
    assert first_look(ids, [], reads, pace, 10.0, (3, 6), {"b.py::bb"}) == [
        "b.py::bb",
        "b.py::slow",
    ]
    assert first_look(ids, [], reads, pace, 10.0, (3, 6), {"b.py::aa", "b.py::bb"}) == ids
    assert first_look(ids, [], reads, pace, 10.0, (3, 6), set(ids)) == ids
    assert first_look(ids, [], reads, pace, 10.0, (3, 6), {"b.py::slow"}) == [
        "b.py::aa",
        "b.py::slow",
    ]


def test_a_first_pair_must_be_checked_where_it_read_a_bench_slower_not_faster() -> None:
    def run(nodeid: str, verdict: Verdict, change: float) -> Row:
        found = BenchRun(nodeid, 0.05, a_blocks=[[1.0]] * 3, b_blocks=[[1.0 + change]] * 3)
        found.result = replace(_read(change), verdict=verdict)
        return Row(nodeid, found)

    rows = [
        run("b.py::slow", Verdict.SLOWER, 0.12),
        run("b.py::fast", Verdict.FASTER, -0.12),
        run("b.py::open", Verdict.INCONCLUSIVE, 0.04),
        Row("b.py::skipped", BenchRun("b.py::skipped", 0.05)),  # no result: no reading
    ]
    reads, slower = first_reads(Verdicts(rows, [], 1), {"b.py::slow": (0.5, None)})
    assert slower == {"b.py::slow"}
    assert set(reads) == {"b.py::slow", "b.py::fast", "b.py::open"}
    assert reads["b.py::slow"][0] == surely_slower(rows[0].run, 0.5)  # type: ignore[arg-type]
    assert reads["b.py::open"][0] == surely_slower(rows[2].run)  # type: ignore[arg-type]


def test_a_first_pair_reads_no_more_surely_slower_than_the_screen_read_the_bench() -> None:
    """A first pair that read an eager bench +17% by an offset between its processes, and
    a slowed bench +10%, in rounds that agree; the screen (the gated run against the A/B's
    base) read them 0% and +10%. By the first pair alone the eager bench ranks first and
    takes the seconds; no surer than the screen's reading, the slowed one does."""
    eager = BenchRun("b.py::eager", 0.05, a_blocks=[[1.0]] * 6, b_blocks=[[1.17], [1.16]] * 3)
    slowed = BenchRun("b.py::slowed", 0.05, a_blocks=[[1.0]] * 6, b_blocks=[[1.1], [1.09]] * 3)
    for run in (eager, slowed):
        run.result = _read(math.expm1(statistics.median(run.ratios)))
    found = Verdicts([Row(r.nodeid, r) for r in (eager, slowed)], [], 1)
    ids = ["b.py::eager", "b.py::slowed"]
    pace = Pace([5.0], {n: [10.0] for n in ids})
    alone: dict[str, Spread] = {"b.py::eager": (0.094, None), "b.py::slowed": (0.113, None)}
    first, _ = first_reads(found, alone)
    assert first["b.py::eager"] == (surely_slower(eager, 0.094), surely_slower(eager, 0.094, False))
    assert first["b.py::eager"][0] > first["b.py::slowed"][0] > 0
    assert first_look(ids, [], first, pace, 50.0, [3, 6]) == ["b.py::eager"]
    screened: dict[str, Spread] = {
        "b.py::eager": (0.094, 0.0),
        "b.py::slowed": (0.113, math.log(1.1)),
    }
    both, _ = first_reads(found, screened)
    assert both["b.py::eager"] == (0.0, 0.0)  # no surer than the screen's 0
    assert both["b.py::slowed"] == first["b.py::slowed"]  # the screen read it surer
    assert first_look(ids, [], both, pace, 50.0, [3, 6]) == ["b.py::slowed"]
    # a screen that read it faster ranks it below 0; the spread alone leaves out no less
    faster: dict[str, Spread] = {**screened, "b.py::eager": (0.094, math.log(0.8))}
    below, _ = first_reads(found, faster)
    assert below["b.py::eager"] == (math.log(0.8) / 0.094,) * 2
    level = dict.fromkeys(ids, 0.02)
    noisy = unresolvable(found, {"b.py::eager": (0.6, None)}, 12, level, 3)
    assert set(noisy) == {"b.py::eager"}
    assert unresolvable(found, {"b.py::eager": (0.6, math.log(0.8))}, 12, level, 3) == noisy


def test_a_first_pair_slower_is_measured_whatever_the_screen_read() -> None:
    """A first pair that read a bench ``slower``: only fresh pairs can confirm it, so the
    first look takes it, even where the screen read no change."""
    run = BenchRun("b.py::x", 0.05, a_blocks=[[1.0]] * 6, b_blocks=[[1.2], [1.19]] * 3)
    run.result = replace(_read(0.195), verdict=Verdict.SLOWER)
    reads, slower = first_reads(Verdicts([Row("b.py::x", run)], [], 1), {"b.py::x": (0.1, 0.0)})
    assert reads["b.py::x"] == (0.0, 0.0)
    assert slower == {"b.py::x"}
    pace = Pace([5.0], {"b.py::x": [10.0], "b.py::y": [10.0]})
    ranked = {"b.py::y": (3.0, 3.0), **reads}
    assert first_look(["b.py::y", "b.py::x"], [], ranked, pace, 1.0, [3, 6], slower) == [
        "b.py::y",
        "b.py::x",
    ]


def test_a_first_pair_whose_rounds_agree_reads_more_surely_slower_than_one_that_scatters() -> None:
    agree = BenchRun("b.py::x", 0.05, a_blocks=[[1.0]] * 5, b_blocks=[[1.1], [1.09], [1.11]] * 2)
    b_blocks = [[1.6], [1.06], [1.5], [1.1]]  # scattered about +30%, the fastest +6%
    scatter = BenchRun("b.py::y", 0.05, a_blocks=[[1.0]] * 4, b_blocks=b_blocks)
    assert surely_slower(agree) > surely_slower(scatter) > 0
    faster = BenchRun("b.py::z", 0.05, a_blocks=[[1.0]] * 3, b_blocks=[[0.9], [0.91], [0.89]])
    assert surely_slower(faster) < 0
    assert surely_slower(BenchRun("b.py::w", 0.05, a_blocks=[[1.0]], b_blocks=[[2.0]])) == 0.0


def test_a_first_pair_reads_no_more_surely_slower_than_its_benchs_spread_across_runs() -> None:
    agree = BenchRun("b.py::x", 0.05, a_blocks=[[1.0]] * 6, b_blocks=[[1.1], [1.09], [1.11]] * 2)
    fastest = math.log(1.09 / 1.0)  # the sides' fastest rounds
    assert surely_slower(agree, 0.5) == pytest.approx(fastest / 0.5)  # processes scatter
    assert surely_slower(agree, 1e-6) == surely_slower(agree)  # the rounds' t is less sure
    # rounds that agree on +7%, in a bench whose unchanged runs agree, rank above
    tight = BenchRun("b.py::y", 0.05, a_blocks=[[1.0]] * 6, b_blocks=[[1.07], [1.06], [1.08]] * 2)
    assert surely_slower(tight, 0.02) > surely_slower(agree, 0.5)
    assert surely_slower(tight) < surely_slower(agree)  # without the spread, it ranked below


def test_a_first_pairs_pace_takes_each_bench_at_the_pairs_a_fresh_pair_runs() -> None:
    pool = BenchRun("b.py::pool", 0.05, seconds=2.0, result=_read(0.0))  # 5 rounds, all
    cheap = BenchRun("b.py::cheap", 0.05, seconds=60.0)  # 600 pairs of 0.1 s
    cheap.result = replace(_read(0.0), pairs=600)
    cheap.warmup = {"A": [1.0], "B": [1.0]}
    rows = [Row("b.py::pool", pool), Row("b.py::cheap", cheap)]
    pace = Pace.of_first_pair(70.0, Verdicts(rows, [], 1), 12)
    assert pace.overheads == [6.0]
    # a fresh pair alternates the cheap bench 4 s (40 pairs), its warm-up as before
    assert pace.own == {"b.py::pool": [2.0], "b.py::cheap": [pytest.approx(6.0)]}


def test_a_benchs_set_up_in_its_pair_is_its_own_not_the_pairs_overhead() -> None:
    """A bench that builds its model before it is timed (a compile, a dataset) costs
    that in each fresh pair it is measured in: its own, not every pair's overhead."""
    first = BenchRun("b.py::first", 0.05, seconds=2.0, result=_read(0.0))
    first.warmup = {"A": [0.5], "B": [0.5]}  # a pair's first bench: its warm-up alone
    built = BenchRun("b.py::built", 0.05, seconds=2.0, result=_read(0.0), setup=9.0)
    built.warmup = {"A": [0.5], "B": [0.5]}  # within its set-up, not counted twice
    rows = [Row("b.py::first", first), Row("b.py::built", built)]
    pace = Pace()
    pace.add(20.0, Verdicts(rows, [], 1), ["b.py::first", "b.py::built"])
    assert pace.own == {"b.py::first": [3.0], "b.py::built": [11.0]}
    assert pace.overheads == [6.0]
    assert pace.pair(["b.py::first"]) == 9.0  # a pair without the built one
    # a first pair over every bench of a file: each fresh pair pays only its benches'
    pace = Pace.of_first_pair(20.0, Verdicts(rows, [], 1), 5)
    assert pace.overheads == [6.0]
    assert pace.pair(["b.py::first"]) == 9.0


def _one_call_rounds(nodeid: str, a: list[float], b: list[float]) -> BenchRun:
    """A first pair of one-call rounds a side (a compile bench's in a gated run), 5% threshold."""
    return BenchRun(nodeid, 0.05, a_blocks=[[x] for x in a], b_blocks=[[x] for x in b])


def test_a_first_pair_ranks_by_its_sides_fastest_rounds_not_their_mean() -> None:
    """Five one-call rounds a side (a compile bench's first pair in a gated run): two of
    A's were disturbed, so the paired log-ratios' mean (-0.048) read the slowed bench
    faster, and it ranked 11th of 12; its sides' fastest rounds read it 8.2% slower."""
    slowed = _one_call_rounds(
        "b.py::slowed", [0.085, 0.068, 0.095, 0.064, 0.061], [0.074, 0.069, 0.074, 0.068, 0.066]
    )
    unchanged = _one_call_rounds(
        "b.py::unchanged", [0.148, 0.138, 0.132, 0.138, 0.128], [0.180, 0.132, 0.169, 0.139, 0.159]
    )
    assert sum(slowed.ratios) < 0 < sum(unchanged.ratios)
    # the unchanged bench's fastest rounds read +3.1%, within its 5%: never above 0
    assert surely_slower(slowed, 0.067) > 0 == surely_slower(unchanged, 0.06)
    assert surely_slower(slowed) > 0 == surely_slower(unchanged)
    assert surely_slower(replace(unchanged, threshold=0.01), 0.06) > 0


def test_a_first_pair_within_the_threshold_ranks_below_one_beyond_it_however_tight() -> None:
    """A gated run's first pair (five one-call rounds a side): an unchanged bench whose
    rounds agree on +1.2% ranked above the slowed bench (+11.5% by its fastest rounds,
    one disturbed round scattering the rest), and the first look measured it alone; it
    could never be `slower`, which needs a change beyond the threshold."""
    tight = _one_call_rounds(
        "b.py::tight", [1.0, 1.001, 1.0, 1.002, 1.0], [1.012, 1.013, 1.011, 1.014, 1.012]
    )
    slowed = _one_call_rounds(
        "b.py::slowed", [1.0, 1.01, 1.0, 1.02, 1.0], [1.122, 1.9, 1.13, 1.15, 1.115]
    )
    assert surely_slower(replace(tight, threshold=0.0)) > surely_slower(slowed) > 0
    assert surely_slower(slowed) > 0 == surely_slower(tight)
    pace = Pace([5.0], {"b.py::tight": [10.0], "b.py::slowed": [10.0]})
    reads = {
        "b.py::tight": (surely_slower(tight), 0.0),
        "b.py::slowed": (surely_slower(slowed), 0.0),
    }
    # 3 pairs of processes fit one of them: the one that could be confirmed slower
    chosen = first_look(["b.py::tight", "b.py::slowed"], [], reads, pace, 50.0, [3])
    assert chosen == ["b.py::slowed"]


def test_the_first_look_also_takes_the_suspect_read_most_surely_slower_by_its_estimate() -> None:
    """A gated run's first pair (five one-call rounds a side): one fast round of B put the
    slowed bench's fastest rounds within its threshold (+2.5%) while its estimate read
    +16%; a bench whose fastest A round was fast read +8.4% by the fastest rounds and +3%
    by its estimate. The seconds fit one suspect; the first look takes both."""
    slowed = _one_call_rounds(
        "b.py::slowed", [0.080, 0.081, 0.079, 0.080, 0.082], [0.095, 0.094, 0.081, 0.096, 0.095]
    )
    other = _one_call_rounds(
        "b.py::other", [0.095, 0.101, 0.100, 0.102, 0.100], [0.104, 0.104, 0.103, 0.104, 0.103]
    )
    for run in (slowed, other):
        run.result = _read(math.expm1(statistics.median(run.ratios)))
    reads, _ = first_reads(Verdicts([Row(r.nodeid, r) for r in (slowed, other)], [], 1), {})
    assert reads["b.py::slowed"][0] <= 0 < reads["b.py::other"][0]  # by the fastest rounds
    assert reads["b.py::other"][1] <= 0 < reads["b.py::slowed"][1]  # by the estimate
    assert reads["b.py::slowed"] == (surely_slower(slowed), surely_slower(slowed, None, False))
    ids = ["b.py::other", "b.py::slowed"]
    pace = Pace([5.0], {n: [10.0] for n in ids})
    assert first_look(ids, [], reads, pace, 50.0, [3, 6]) == ids
    # where no estimate reads beyond its threshold, the seconds take the first ranked alone
    plain = {n: (read[0], min(read[1], 0.0)) for n, read in reads.items()}
    assert first_look(ids, [], plain, pace, 50.0, [3, 6]) == ["b.py::other"]


def test_one_disturbed_round_does_not_rank_a_slowed_first_pair_below_a_steadier_one() -> None:
    """Five one-call rounds a side: one disturbed round of B (+96%) beside four that read
    the slowed bench +11% to +14%. Their standard deviation would put it below an
    unchanged bench whose rounds read +7% to +12%; their median absolute deviation
    ranks it first, and where most agree exactly, their standard deviation reads them."""
    slowed = _one_call_rounds(
        "b.py::slowed", [0.100, 0.101, 0.100, 0.102, 0.100], [0.112, 0.113, 0.111, 0.200, 0.114]
    )
    other = _one_call_rounds("b.py::other", [1.0] * 5, [1.07, 1.10, 1.08, 1.12, 1.09])

    def by_stdev(run: BenchRun) -> float:
        fast = math.log(min(map(min, run.b_blocks)) / min(map(min, run.a_blocks)))
        return fast / (statistics.stdev(run.ratios) / math.sqrt(len(run.ratios)))

    assert by_stdev(other) > by_stdev(slowed) > 0
    assert surely_slower(slowed) > surely_slower(other) > 0
    assert surely_slower(slowed, None, False) > surely_slower(other, None, False) > 0
    ties = _one_call_rounds("b.py::ties", [1.0] * 5, [1.1, 1.1, 1.1, 1.12, 1.2])
    fast, scatter = math.log(1.1), statistics.stdev(ties.ratios)
    assert surely_slower(ties) == pytest.approx(fast / (scatter / math.sqrt(5)))


def test_the_estimates_pick_is_among_the_suspects_not_taken_whatever() -> None:
    """A suspect taken for its peak memory read most surely slower by its estimate; the
    estimate's pick is then the next, so the first look still takes two by time."""
    ids = ["b.py::memory", "b.py::other", "b.py::slowed"]
    reads = {"b.py::memory": (0.5, 9.0), "b.py::other": (3.0, 0.0), "b.py::slowed": (1.0, 2.0)}
    pace = Pace([5.0], {n: [10.0] for n in ids})
    assert first_look(ids, [], reads, pace, 10.0, [3, 6], {"b.py::memory"}) == ids
    no_estimate = {n: (read[0], 0.0) for n, read in reads.items()}
    assert first_look(ids, [], no_estimate, pace, 10.0, [3, 6], {"b.py::memory"}) == ids[:2]


def _first_pair(nodeid: str, change: float, **result: object) -> Row:
    """A first pair of processes of five one-round blocks a side that read ``change``,
    too few for an interval (``result``: its result's fields otherwise)."""
    run = BenchRun(nodeid, 0.05, a_blocks=[[1.0]] * 5, b_blocks=[[1.0 + change]] * 5)
    run.seconds, run.result = 2.0, replace(_read(change), **result)  # type: ignore[arg-type]
    return Row(nodeid, run)


def test_a_suspect_its_spread_across_runs_could_not_decide_in_the_most_pairs_is_unresolvable() -> (
    None
):
    """An eager torch bench whose unchanged runs spread by 60% (in log-ratio), a fresh
    pair's by half that: 12 fresh pairs resolve about ±35% around its first pair's
    +14%, which decides nothing; a bench whose runs spread by 4% is resolvable, and so
    is one whose first pair read +80%, which 12 such pairs could confirm, and one whose
    first pair decided it (a `slower` is confirmed whatever)."""
    rows = [
        _first_pair("b.py::eager", 0.14),
        _first_pair("b.py::steady", 0.14),
        _first_pair("b.py::far", 0.80),
        _first_pair("b.py::unread", 0.14),  # no spread: nothing to say it is unresolvable
        _first_pair("b.py::check", 0.14),  # not a suspect
        _first_pair("b.py::decided", 0.14, verdict=Verdict.SLOWER),
    ]
    spreads: dict[str, Spread] = dict.fromkeys(
        ["b.py::eager", "b.py::far", "b.py::check", "b.py::decided"], (0.6, None)
    )
    spreads["b.py::steady"] = (0.04, None)
    ids = ["b.py::eager", "b.py::steady", "b.py::far", "b.py::unread", "b.py::decided"]
    level = dict.fromkeys(ids, 0.02)
    found = unresolvable(Verdicts(rows, [], 1), spreads, 12, level, 3)
    assert found == {"b.py::eager": pytest.approx(0.5 * 0.6 * interval_factor(12, 0.02 / 3))}
    assert 0.3 < found["b.py::eager"] < 0.4
    # with 240 pairs the same spread could decide it
    assert unresolvable(Verdicts(rows, [], 1), spreads, 240, level, 3) == {}


def test_a_rate_is_held_to_the_bound_its_own_way() -> None:
    """Around no change, twice a 5% threshold bounds a time at log(1.10) (0.095) but a
    rate at -log(0.90) (0.105): at a spread whose 12 pairs' narrowed half-width falls
    between, a time is unresolvable and a rate is not."""
    time_row = _first_pair("b.py::time", 0.0)
    rate_row = _first_pair("b.py::rate", 0.0, higher_is_better=True)
    between = 0.1 / (0.5 * interval_factor(12, 0.02 / 3) * t_margin(12))
    spreads: dict[str, Spread] = {"b.py::time": (between, None), "b.py::rate": (between, None)}
    level = {"b.py::time": 0.02, "b.py::rate": 0.02}
    found = unresolvable(Verdicts([time_row, rate_row], [], 1), spreads, 12, level, 3)
    assert set(found) == {"b.py::time"}


def test_the_first_look_leaves_out_an_unresolvable_suspect_even_the_one_ranked_first() -> None:
    """Run 6 of a gate_check sitting: the first pair read an eager bench +13.8% and the
    slowed bench +4.8%; the eager bench, ranked first and taken whatever, took the
    file's seconds. Left out as unresolvable, the slowed bench is the one taken."""
    ids = ["b.py::eager", "b.py::slowed", "b.py::other"]
    reads = {"b.py::eager": (2.0, 2.0), "b.py::slowed": (0.0, 0.0), "b.py::other": (-1.0, -1.0)}
    pace = Pace([20.0], {n: [10.0] for n in ids})
    assert first_look(ids, [], reads, pace, 80.0, [3, 6, 12]) == ["b.py::eager"]
    never = {"b.py::eager"}
    assert first_look(ids, [], reads, pace, 80.0, [3, 6, 12], (), never) == ["b.py::slowed"]
    # one the first pair read slower, or a suspect for its cost, is measured whatever
    assert first_look(ids, [], reads, pace, 80.0, [3, 6, 12], never, never) == ids[:2]


class _Pairs:
    """A bench file's pairs of processes: the first took ``first`` seconds; each fresh
    pair reads each bench at its effect (:class:`Timed`)."""

    def __init__(self, effects: dict[str, float], first: float) -> None:
        self.timed = Timed(effects, 10.0, 20.0)
        self.seconds = {key(["b.py"], 0): first}

    def session(self, at: object, only: list[str], then: object = None) -> Verdicts:
        return self.timed(self.timed.calls, only)

    def drop_ahead(self) -> None:
        pass


def test_an_unresolvable_suspect_is_not_measured_again_and_its_row_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    effects = {"b.py::eager": 0.0, "b.py::slowed": math.log(1.12)}
    first = Verdicts([_first_pair("b.py::eager", 0.14), _first_pair("b.py::slowed", 0.048)], [], 1)
    pairs = _Pairs(effects, 40.0)
    found = follow_up(
        pairs,  # type: ignore[arg-type]
        first,
        False,
        "undecided",
        12,
        80.0,
        12,
        {"b.py::eager": (0.6, None), "b.py::slowed": (0.04, None)},
    )
    assert all("b.py::eager" not in asked for asked in pairs.timed.asked)
    assert pairs.timed.asked[0] == ["b.py::slowed"]
    eager, slowed = found.rows
    assert eager.status is not None
    half = math.sinh(0.5 * 0.6 * interval_factor(12, 0.02 / 3))  # as the report's resolves
    assert eager.status == (
        "not measured again: at its spread across unchanged runs, 12 pairs of processes "
        f"resolve ±{half:.1%}"
    )
    assert slowed.verdict is Verdict.SLOWER
    said = capsys.readouterr().out
    assert (
        "; left out, as 12 could not decide them at their spread across runs: b.py::eager" in said
    )


def test_a_suspect_for_its_cost_is_measured_whatever_its_spread(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A first pair whose peak memory rose is a suspect for it, measured whatever its
    time's spread across runs: only fresh pairs can confirm a peak."""
    first = Verdicts([_first_pair("b.py::eager", 0.14), _first_pair("b.py::slowed", 0.048)], [], 1)
    eager = first.rows[0].run
    assert eager is not None
    eager.peak_mb = {"A": 100.0, "B": 200.0}
    pairs = _Pairs({"b.py::eager": 0.0, "b.py::slowed": math.log(1.12)}, 40.0)
    spreads: dict[str, Spread] = {"b.py::eager": (0.6, None), "b.py::slowed": (0.04, None)}
    found = follow_up(pairs, first, False, "undecided", 12, 80.0, 12, spreads)  # type: ignore[arg-type]
    assert "b.py::eager" in pairs.timed.asked[0]
    assert "left out" not in capsys.readouterr().out
    assert not (found.rows[0].status or "").startswith("not measured again")
