"""The bisection: which first-parent commit between GOOD and BAD made the benches slower.

Every step is an A/B of one commit against a reference that is known good (GOOD at
first), decided at each bench's threshold. Measuring against that one reference, and
not against the neighbouring commit, asks each step the question a bisection needs
("does this commit carry the regression?"), and a regression that came in over
several commits shows as a change that grows from step to step.

1. **Confirm**: BAD against GOOD. Not shown slower: nothing to bisect.
2. **Bisect** the commits after the reference up to BAD, oldest first: test the one
   nearest the middle of those not yet known. Slower than the reference: bad, the
   culprit is at or before it; not slower: good, the culprit is after it.
3. **Undecided** (the A/B could not decide) is measured again with twice its budget;
   still undecided, and a commit that cannot be measured (it does not build or
   collect), is **skipped**, as ``git bisect skip`` does, and the next nearest the
   middle is tested.
4. When no commit is left between the last good and the first bad, the first bad is a
   **culprit**. When only skipped commits are left, the result is that **range**.
5. **Parts**: BAD against the culprit. Slower: the regression came in over several
   commits, and the search goes on after the culprit, the culprit as the reference.

The time budget is checked before each A/B; when it runs out, the result is the
narrowest range reached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

#: what one step found of its commit
Outcome = Literal["bad", "good", "undecided", "skip"]


@dataclass(frozen=True)
class Step:
    """One A/B of ``commit`` against ``reference``."""

    reference: str
    commit: str
    outcome: Outcome
    change: float | None = None  # the deciding bench's time change, B against A
    ci: tuple[float, float] | None = None
    bench: str | None = None  # the bench whose row decided (or the largest change)
    note: str = ""  # why it was skipped or left undecided
    seconds: float = 0.0
    again: bool = False  # a second measurement with twice the budget


#: measure(reference, commit, again) -> the step
Measure = Callable[[str, str, bool], Step]


@dataclass(frozen=True)
class Culprit:
    """A commit that made the benches slower than ``reference`` (the last good one)."""

    reference: str
    commit: str
    step: Step  # the A/B that found ``commit`` slower


@dataclass
class Bisection:
    """What a search found: every step, the culprits, or the range it narrowed to."""

    steps: list[Step] = field(default_factory=list)
    culprits: list[Culprit] = field(default_factory=list)
    #: (last good, first bad) where no single commit could be named
    range: tuple[str, str] | None = None
    #: why the search ended without naming (all of) the culprit(s)
    stopped: str | None = None
    #: the confirmation found BAD not slower than GOOD
    not_slower: bool = False

    @property
    def skipped(self) -> list[Step]:
        return [s for s in self.steps if s.outcome == "skip"]


def search(
    commits: Sequence[str],
    good: str,
    measure: Measure,
    out_of_time: Callable[[], bool] = lambda: False,
    confirmed: Step | None = None,
) -> Bisection:
    """Bisect ``commits`` (the first-parent commits after ``good`` up to BAD, oldest
    first) by ``measure``; see the module doc for the procedure. ``confirmed``: an
    A/B that already found BAD slower than GOOD (the nightly's), in place of step 1."""
    result = Bisection()

    def test(reference: str, commit: str) -> Step:
        step = measure(reference, commit, False)
        result.steps.append(step)
        if step.outcome == "undecided" and not out_of_time():
            step = measure(reference, commit, True)
            result.steps.append(step)
        return step

    if not commits:
        result.stopped = "no commit lies between GOOD and BAD"
        return result
    bad = commits[-1]
    if confirmed is None:
        confirmed = test(good, bad)
    if confirmed.outcome != "bad":
        result.not_slower = confirmed.outcome == "good"
        result.stopped = {
            "good": "BAD is not shown slower than GOOD: nothing to bisect",
            "undecided": "BAD could not be decided against GOOD",
            "skip": f"BAD or GOOD could not be measured ({confirmed.note})",
        }.get(confirmed.outcome, "BAD not confirmed")
        return result
    reference, remaining, known = good, list(commits), confirmed
    while True:
        low, high = -1, len(remaining) - 1
        found = {high: known}
        skipped: set[int] = set()
        while high - low > 1:
            if out_of_time():
                result.stopped = "the time budget ran out"
                break
            open_ = [i for i in range(low + 1, high) if i not in skipped]
            if not open_:
                result.stopped = "only commits that could not be measured or decided are left"
                break
            middle = (low + high) // 2
            index = min(open_, key=lambda i: (abs(i - middle), i))
            step = test(reference, remaining[index])
            if step.outcome == "bad":
                high = index
                found[high] = step
            elif step.outcome == "good":
                low = index
            else:
                skipped.add(index)
        if high - low > 1:
            last_good = reference if low < 0 else remaining[low]
            result.range = (last_good, remaining[high])
            return result
        culprit = remaining[high]
        result.culprits.append(
            Culprit(reference if low < 0 else remaining[low], culprit, found[high])
        )
        if culprit == bad:
            return result
        if out_of_time():
            result.stopped = "the time budget ran out before the commits after it were checked"
            return result
        rest = test(culprit, bad)
        if rest.outcome != "bad":
            return result
        reference, remaining, known = culprit, remaining[high + 1 :], rest
