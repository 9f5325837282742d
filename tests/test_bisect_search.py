"""The bisection's procedure on constructed verdicts: each step's outcome from where the
commit lies against the culprits, no measurement."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from perfsuite.bisect.search import Measure, Outcome, Step, search

COMMITS = [f"c{i:02d}" for i in range(1, 16)]  # after GOOD c00, up to BAD c15


def oracle(
    parts: dict[str, float],
    skip: Sequence[str] = (),
    undecided_once: Sequence[str] = (),
    threshold: float = 0.05,
) -> Measure:
    """A step is bad when the work the commits after its reference add passes the threshold."""
    order = ["c00", *COMMITS]
    seen: set[str] = set()

    def measure(reference: str, commit: str, again: bool) -> Step:
        if commit in skip:
            return Step(reference, commit, "skip", note="ERROR collecting bench.py")
        if commit in undecided_once and commit not in seen:
            seen.add(commit)
            return Step(reference, commit, "undecided", again=again)
        lo, hi = order.index(reference), order.index(commit)
        added = sum(size for name, size in parts.items() if lo < order.index(name) <= hi)
        outcome: Outcome = "bad" if added > threshold else "good"
        return Step(reference, commit, outcome, change=added, again=again)

    return measure


@pytest.mark.parametrize("seed", range(8))
def test_the_culprit_is_named_in_about_log2_steps(seed: int) -> None:
    culprit = random.Random(seed).choice(COMMITS)
    result = search(COMMITS, "c00", oracle({culprit: 0.10}))
    assert [c.commit for c in result.culprits] == [culprit]
    assert result.culprits[0].step.change == pytest.approx(0.10)
    # the confirmation, the bisection's steps, and BAD against the culprit
    bisecting = math.ceil(math.log2(len(COMMITS)))
    assert len(result.steps) <= 1 + bisecting + 1
    assert result.range is None


def test_a_regression_over_two_commits_names_both_with_their_parts() -> None:
    result = search(COMMITS, "c00", oracle({"c04": 0.06, "c11": 0.06}))
    assert [(c.reference, c.commit) for c in result.culprits] == [("c03", "c04"), ("c10", "c11")]
    assert [c.step.change for c in result.culprits] == [pytest.approx(0.06)] * 2
    changes = [s.change for s in result.steps if s.reference == "c00"]
    assert pytest.approx(0.12) in changes  # the whole, seen against GOOD


def test_a_commit_that_cannot_be_measured_is_skipped_and_named() -> None:
    result = search(COMMITS, "c00", oracle({"c12": 0.10}, skip=["c07"]))  # the first middle
    assert [c.commit for c in result.culprits] == ["c12"]
    assert [s.commit for s in result.skipped] == ["c07"]
    assert result.skipped[0].note == "ERROR collecting bench.py"
    skipped_culprit = search(COMMITS, "c00", oracle({"c09": 0.10}, skip=["c09"]))
    assert skipped_culprit.culprits == []
    assert skipped_culprit.range == ("c08", "c10")  # never an innocent commit named


def test_an_undecided_step_is_measured_again_before_it_is_skipped() -> None:
    result = search(COMMITS, "c00", oracle({"c05": 0.10}, undecided_once=COMMITS))
    assert [c.commit for c in result.culprits] == ["c05"]
    again = [s for s in result.steps if s.again]
    assert again
    assert all(s.outcome in ("bad", "good") for s in again)


def test_bad_not_slower_than_good_has_nothing_to_bisect() -> None:
    result = search(COMMITS, "c00", oracle({}))
    assert result.not_slower
    assert result.culprits == []
    assert len(result.steps) == 1


def test_when_the_budget_runs_out_the_narrowest_range_is_the_result() -> None:
    calls: list[Step] = []
    measure = oracle({"c12": 0.10})

    def counted(reference: str, commit: str, again: bool) -> Step:
        calls.append(measure(reference, commit, again))
        return calls[-1]

    result = search(COMMITS, "c00", counted, out_of_time=lambda: len(calls) >= 2)
    assert result.culprits == []
    assert result.range is not None
    assert result.range[1] == "c15" or result.range[0] >= "c07"
    assert result.stopped == "the time budget ran out"
