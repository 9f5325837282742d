"""A peak memory that rose in one pair of processes is measured again in fresh pairs,
and judged on each side's median peak over them."""

from __future__ import annotations

import math

import numpy as np

from perfsuite.ab.confirm import Suspects, confirm_in_fresh_pairs
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.rows import Row
from perfsuite.ab.verdicts import Verdicts
from perfsuite.outcomes import AbRun, decide
from perfsuite.verdict.paired import PAIRED_ALPHA, judge
from perfsuite.verdict.stats import Verdict

NODE = "b.py::service"


def _session(effect: float, peaks: tuple[float, float], seed: int) -> Verdicts:
    """One pair of processes: 12 pairs of blocks at ``effect``, the sides' peaks."""
    rng = np.random.default_rng(seed)
    ratios = list(effect + rng.normal(0, 0.002, 12))
    run = BenchRun(NODE, 0.05)
    run.a_blocks = [[1.0] for _ in ratios]
    run.b_blocks = [[math.exp(r)] for r in ratios]
    run.order = ["A", "B"] * len(ratios)
    run.peak_mb = {"A": peaks[0], "B": peaks[1]}
    run.result = judge(run.ratios, 0.05, PAIRED_ALPHA)
    return Verdicts([Row(NODE, run)], [], 1)


def _confirm(first: Verdicts, later: list[tuple[float, float]]) -> tuple[Verdicts, list[int]]:
    """``first`` with its suspects confirmed in fresh pairs whose peaks are ``later``."""
    asked: list[int] = []

    def session(i: int, ids: list[str], more: bool = True) -> Verdicts:
        asked.append(i)
        return _session(0.0, later[i % len(later)], 100 + i)

    suspects = Suspects.pick(first, "leaning")
    alphas, memory = suspects.alphas, suspects.memory
    check = confirm_in_fresh_pairs(session, list(alphas), 12, alphas, memory=memory).confirmed
    return first.confirmed([check], memory), asked


def test_a_peak_that_rose_in_one_pair_only_is_cleared_by_the_first_fresh_pair() -> None:
    first = _session(0.0, (725.0, 950.0), 1)  # the time `same`, the peak up 31%
    row = first.rows[0]
    assert row.verdict is Verdict.SAME
    assert row.memory_rose
    assert row.regressed
    assert Suspects.pick(first, "leaning").memory == {NODE}
    final, asked = _confirm(first, [(730.0, 735.0), (940.0, 720.0), (728.0, 731.0)])
    assert asked == [0]  # a peak rose only if it rose in every pair: one calm pair settles it
    (row,) = final.rows
    assert row.verdict is Verdict.SAME  # the first pair's time verdict stands
    assert row.run is not None
    assert row.run.memory is not None
    assert (row.run.memory.baseline_mb, row.run.memory.current_mb) == (730.0, 735.0)
    assert not row.memory_rose
    assert not row.regressed
    assert row.status == "peak memory measured again in 1 pair of processes"
    assert "peak 730 -> 735 MB" in row.cells()[-1]


def test_a_peak_that_rose_in_the_first_fresh_pair_is_measured_until_a_pair_reads_it_calm() -> None:
    first = _session(0.0, (725.0, 950.0), 1)
    final, asked = _confirm(first, [(730.0, 960.0), (940.0, 720.0), (728.0, 990.0)])
    assert asked == [0, 1]
    (row,) = final.rows
    assert row.run is not None
    assert row.run.memory is not None
    assert (row.run.memory.pairs, row.run.memory.pairs_rose) == (2, 1)
    assert not row.memory_rose


def test_a_peak_that_rises_in_every_pair_stays_a_regression() -> None:
    first = _session(0.0, (700.0, 950.0), 2)
    final, _ = _confirm(first, [(705.0, 940.0), (698.0, 960.0), (702.0, 955.0)])
    (row,) = final.rows
    assert row.memory_rose
    assert row.regressed
    assert "peak 702 -> 955 MB (median of 3 pairs) ROSE" in row.cells()[-1]


def test_a_peak_whose_median_rose_but_not_in_every_pair_is_cleared() -> None:
    """An unchanged tf.function's cold peak moved 140-340 MB between processes."""
    first = _session(0.0, (140.0, 237.0), 5)
    final, asked = _confirm(first, [(256.0, 334.0), (250.0, 340.0), (300.0, 250.0)])
    assert asked == [0, 1, 2]  # two pairs rose: only the third, calm, settles it
    (row,) = final.rows
    assert row.run is not None
    assert row.run.memory is not None
    assert (row.run.memory.pairs, row.run.memory.pairs_rose) == (3, 2)
    assert row.run.memory.median_rose
    assert not row.memory_rose
    assert not row.regressed
    assert "peak 256 -> 334 MB (median of 3 pairs; rose in 2 of them)" in row.cells()[-1]
    memory = {"a_mb": 256.0, "b_mb": 334.0, "rose": False, "pairs": 3, "pairs_rose": 2}
    row_json = {"nodeid": NODE, "verdict": "same", "memory": memory, "threshold": 0.05}
    ab = AbRun(("perfsuite", "ab"), "perfsuite ab ...", 0, 10.0, {NODE: row_json})
    assert decide(NODE, ab, what="memory").text == (
        "memory cleared by A/B: peak 256 -> 334 MB (median of 3 pairs of processes; "
        "rose in 2 of them)"
    )


def test_a_time_suspect_is_not_a_memory_only_one() -> None:
    first = _session(math.log(1.3), (700.0, 950.0), 3)
    assert Suspects.pick(first, "leaning").memory == frozenset()
    final, _ = _confirm(first, [(700.0, 700.0)])
    (row,) = final.rows
    assert row.status is not None
    assert row.status.startswith("confirmation in")


def test_pooled_pairs_judge_memory_on_median_peaks_not_the_highest() -> None:
    parts = [_session(0.0, p, i) for i, p in enumerate([(700, 950), (720, 730), (710, 720)])]
    (row,) = Verdicts.pool(parts).rows
    assert row.run is not None
    assert row.run.memory is not None
    assert (row.run.memory.baseline_mb, row.run.memory.current_mb) == (710, 730)
    assert not row.memory_rose


def test_the_gate_names_the_pairs_a_memory_verdict_stands_on() -> None:
    memory = {"a_mb": 702.0, "b_mb": 955.0, "rose": True, "pairs": 3}
    row = {"nodeid": NODE, "verdict": "same", "memory": memory, "threshold": 0.05}
    ab = AbRun(("perfsuite", "ab"), "perfsuite ab ...", 1, 10.0, {NODE: row})
    outcome = decide(NODE, ab, what="memory")
    assert outcome.text == (
        "memory confirmed by A/B: peak 702 -> 955 MB (median of 3 pairs of processes)"
    )


def test_a_check_that_sent_no_peaks_leaves_the_row_as_it_was() -> None:
    first = _session(0.0, (725.0, 950.0), 4)
    suspects = Suspects.pick(first, "leaning")
    alphas, memory = suspects.alphas, suspects.memory

    def session(i: int, ids: list[str], more: bool = True) -> Verdicts:
        part = _session(0.0, (1.0, 1.0), 200 + i)
        assert part.rows[0].run is not None
        part.rows[0].run.peak_mb = {}  # a side that sent no peak memory
        return part

    check = confirm_in_fresh_pairs(session, list(alphas), 12, alphas, memory=memory).confirmed
    (row,) = first.confirmed([check], memory).rows
    assert row is first.rows[0]
    assert row.memory_rose
