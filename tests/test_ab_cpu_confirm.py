"""CPU per call is judged as time is: across fresh pairs of processes, and a first pair
that reads it risen is a suspect measured again, never a regression on its own word."""

from __future__ import annotations

import math

import numpy as np

from perfsuite.ab.confirm import Suspects, confirm_in_fresh_pairs
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.rows import Row
from perfsuite.ab.verdicts import Verdicts
from perfsuite.verdict.paired import PAIRED_ALPHA, judge
from perfsuite.verdict.stats import Verdict

ALPHA = 0.05
CPU_S = 0.02  # CPU seconds a call, far above what the readings' resolution blurs


def _session(time_effect: float, cpu_effect: float, seed: int, nodeid: str = "b.py::x") -> Verdicts:
    """One pair of processes: 12 pairs of blocks, time and CPU per call each moved by
    their effect (log scale), with tiny noise inside the pair."""
    rng = np.random.default_rng(seed)
    run = BenchRun(nodeid, 0.05)
    time = time_effect + rng.normal(0, 0.002, 12)
    cpu = cpu_effect + rng.normal(0, 0.002, 12)
    run.a_blocks = [[1.0] for _ in time]
    run.b_blocks = [[math.exp(t)] for t in time]
    run.a_cpu = [[CPU_S] for _ in cpu]
    run.b_cpu = [[CPU_S * math.exp(c)] for c in cpu]
    run.calls = {"A": 1, "B": 1}
    run.order = ["A", "B"] * len(time)
    run.result = judge(run.ratios, 0.05, PAIRED_ALPHA)
    ratios = run.cpu_ratios()
    run.cpu = judge(ratios, run.threshold, PAIRED_ALPHA) if ratios is not None else None
    return Verdicts([Row(nodeid, run)], [], 1)


def test_cpu_across_pairs_of_processes_carries_their_offsets() -> None:
    """Each pair reads its CPU tightly, but the pairs disagree (+7%, +8%, +9%, -4%):
    their blocks pooled read +7% to +8%, slower; across the pairs it is not decided."""
    offsets = [0.07, 0.08, 0.09, -0.04]
    sessions = [_session(0.0, math.log1p(c), i) for i, c in enumerate(offsets)]
    each = [s.rows[0].run.cpu for s in sessions if s.rows[0].run is not None]
    assert [c.verdict if c else None for c in each[:3]] == [Verdict.SLOWER] * 3
    pooled = Verdicts.pool(sessions).rows[0].run
    assert pooled is not None
    assert pooled.cpu is not None
    assert pooled.cpu.verdict is Verdict.INCONCLUSIVE
    assert not Verdicts.pool(sessions).regressed


def test_cpu_that_rises_in_every_pair_of_processes_is_slower_across_them() -> None:
    sessions = [_session(0.0, math.log1p(0.2 + 0.01 * i), i) for i in range(4)]
    pooled = Verdicts.pool(sessions).rows[0].run
    assert pooled is not None
    assert pooled.cpu is not None
    assert pooled.cpu.verdict is Verdict.SLOWER
    assert Verdicts.pool(sessions).regressed


def test_a_first_pair_whose_cpu_rose_is_a_suspect_measured_again() -> None:
    first = _session(0.0, math.log1p(0.2), 0)
    assert first.rows[0].cpu_slower
    assert first.rows[0].verdict is Verdict.SAME
    for kind, rate in (("leaning-slower", ALPHA), ("leaning", ALPHA), ("undecided", PAIRED_ALPHA)):
        # a CPU suspect at its kind's rate, held to its lean: one-sided
        assert Suspects.pick(first, kind).alphas == {"b.py::x": 2 * rate}
        assert Suspects.pick(first, kind).cpu == {"b.py::x"}
        assert Suspects.pick(first, kind).memory == frozenset()


def test_a_cpu_suspect_is_kept_only_once_its_cpu_is_decided_too() -> None:
    """Time `same` from the first look; CPU scattered between pairs of processes at first,
    so the look goes on until the CPU is decided too (here: not risen)."""
    cpu = [0.15, -0.12, 0.01, 0.0, 0.01, -0.01, 0.0, 0.01, -0.01, 0.0, 0.0, 0.01]
    calls: list[int] = []

    def session(i: int, ids: list[str], more: bool = True) -> Verdicts:
        calls.append(i)
        return _session(0.0, math.log1p(cpu[i]), i)

    (row,) = confirm_in_fresh_pairs(session, ["b.py::x"], 12, ALPHA, cpu={"b.py::x"}).confirmed.rows
    assert len(calls) > 3  # the first look's time was `same`; its CPU was not decided
    assert row.run is not None
    assert row.run.cpu is not None
    assert row.run.cpu.verdict is not Verdict.SLOWER
    assert not row.regressed
    plain: list[int] = []

    def again(i: int, ids: list[str], more: bool = True) -> Verdicts:
        plain.append(i)
        return _session(0.0, math.log1p(cpu[i]), i)

    confirm_in_fresh_pairs(again, ["b.py::x"], 12, ALPHA)
    assert len(plain) == 3  # a time suspect alone ends at the first decisive look


def test_cpu_that_rose_in_the_fresh_pairs_of_a_bench_read_faster_first_is_not_confirmed() -> None:
    """The first pair read the bench 7% faster, time and CPU; its fresh pairs read both
    7% slower. Neither confirms the suspicion, so a false alarm on the CPU needs both
    stages to err the same way, as on the time."""
    first = _session(math.log(0.93), math.log(0.93), 0)
    assert first.rows[0].suspect_of("leaning")
    assert not first.rows[0].cpu_slower
    check = Verdicts.pool([_session(math.log(1.07), math.log(1.07), i) for i in range(1, 5)])
    assert check.rows[0].cpu_slower  # fresh pairs alone: the CPU rose
    final = first.confirmed([check])
    row = final.rows[0]
    assert row.run is not None
    assert row.run.cpu is not None
    assert row.run.cpu.verdict is Verdict.INCONCLUSIVE
    assert row.verdict is Verdict.INCONCLUSIVE
    assert not final.regressed
    assert "the other way: not confirmed" in row.cells()[1]
    # read slower first, the same check confirms both
    same_way = _session(math.log(1.07), math.log(1.07), 9).confirmed([check])
    assert same_way.rows[0].cpu_slower
    assert same_way.regressed
    # a suspect by its CPU alone is held to its CPU's first estimate, not its time's
    by_cpu = _session(math.log(0.99), math.log(1.2), 10)
    assert by_cpu.rows[0].cpu_slower
    rose = Verdicts.pool([_session(0.0, math.log(1.2), i) for i in range(11, 15)])
    assert by_cpu.confirmed([rose]).rows[0].cpu_slower
