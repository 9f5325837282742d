"""Paired statistics for an interleaved A/B: one log-ratio per pair of blocks.

``perfsuite ab`` alternates blocks of rounds of the two revisions in one session. Each
pair of blocks (one of A, one of B, run back to back in a random order) gives one
paired log-ratio ``d = log(median(B block) / median(A block))`` of the call time. A slow
minute on a shared machine hits both blocks of a pair, so it cancels in ``d``; the
session-to-session shifts that make two separate runs incomparable never enter.

**Interval.** The verdict rests on a distribution-free confidence interval for the
median of ``d``: the exact sign-test (order-statistic) interval
(:mod:`perfsuite.verdict.signtest`)
``[d_(k), d_(n-k+1)]``, with ``k`` the largest rank such that
``2 * P(Binomial(n, 1/2) <= k - 1) <= alpha``. It assumes only that the pairs are
independent; unlike the Wilcoxon signed-rank test and its Hodges-Lehmann interval it
does not assume that ``d`` is symmetric, which a shared machine breaks (a busy
neighbour only ever slows a block down, so the noise on ``d`` has one long tail in
whichever direction the disturbed block sits). The price is some power at small
``n``, paid for in a few more pairs. The point estimate is the median of ``d``.

**Verdict** (``threshold`` is the minimum effect, a fraction of the median time):

* ``slower``: the interval lies entirely above 0 (significant) and the point estimate
  is above ``+threshold`` (large enough to matter); ``faster`` symmetrically. This is
  the rule ``perfsuite compare`` uses (significance and effect). Requiring the whole
  interval beyond the threshold would need a true change well beyond the threshold
  plus the interval's half-width before it is ever called, missing a +10% change
  under a 5% threshold on a noisy machine.
* ``same``: the interval lies inside ``(-threshold, +threshold)``.
* otherwise the bench keeps alternating; at the end of its budget it is
  ``inconclusive``.

**Early stopping.** A bench is looked at only at a fixed schedule of pair counts
(:func:`look_schedule`: ``min_pairs``, then every ``LOOK_EVERY`` pairs, the step
growing with the count to about a quarter of it, and ``max_pairs``), fixed before any
data is seen, and each look uses one level (:func:`alpha_per_look`). Whatever the
log-ratios' distribution, the count of them below their true median is a walk of fair
coin flips, so the chance that an interval misses the true median at one look or more
is known exactly (:func:`perfsuite.verdict.signtest.family_rate`); the level is the
largest that keeps it, plus one look's level, within ``alpha``. Stopping at the first
decisive look then keeps the family-wise rate of a false significant interval at most
``alpha``. When the time budget ends between two looks, one final look is taken there
instead of the remaining ones: the looks taken miss at most as often as the schedule
does, plus that one look's level. (Bonferroni's ``alpha / L`` over ``L`` looks
would hold the default schedule, 19 looks from 12 to 480 pairs, to 0.38% for an
``alpha`` of 1%, since the looks share their pairs; the exact level is 2.5 times
larger, and each interval about 7% narrower.) A look may also stop a
bench for futility (:mod:`perfsuite.verdict.futility`): one whose interval, narrowed
to what its remaining budget can buy, would still hold 0 and reach past the
threshold can be neither called nor cleared, and more pairs are time spent for ``inconclusive``.
So may any pair of a bench whose rounds are so slow that its seconds cannot bring it
to ``LEAN_PAIRS`` pairs (:func:`perfsuite.verdict.futility.seconds_leave`): fewer
pairs can neither decide nor lean, so they are time spent for nothing (a cold-start
bench of 10 s a pair under a 12-s budget ran a second pair, 20 s in all, for a
verdict that was never possible).
Stopping without a verdict never adds a false alarm. ``PAIRED_ALPHA`` is two-sided;
a false ``slower`` on an unchanged bench also needs an estimated change beyond the
threshold, so its rate is well below ``PAIRED_ALPHA / 2``.

Directions: times are lower-is-better; pass ``higher_is_better=True`` for a metric
whose rise is an improvement (``d`` then counts a positive change as ``faster``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perfsuite.verdict.futility import futile, reachable, seconds_leave, sign_half_width
from perfsuite.verdict.signtest import look_level, median_interval, sign_test_p
from perfsuite.verdict.stats import Verdict, within_bound
from perfsuite.verdict.table import bound_text
from perfsuite.verdict.trimmed import trimmed_interval

#: family-wise two-sided error rate of the interval over all looks at one bench
PAIRED_ALPHA = 0.01
#: the fewest pairs between two looks at a bench
LOOK_EVERY = 4
#: the fewest pairs whose sign test can lean one way (3 of 3: p = 0.25, ``LEAN_SIGN_P``);
#: fewer can never go below 0.5
LEAN_PAIRS = 3
#: the most a two-sided sign test's p may be for pairs to lean one way: what makes an
#: inconclusive first estimate beyond the threshold a suspect of ``perfsuite ab``, and
#: what the gate's outcome of an undecided suspect asks of its pairs
LEAN_SIGN_P = 0.25


def look_schedule(min_pairs: int, max_pairs: int, every: int = LOOK_EVERY) -> list[int]:
    """The pair counts at which a bench is judged: ``min_pairs``, then steps of
    ``every`` that grow with the count (a quarter of it, in whole multiples of
    ``every``), and ``max_pairs``.

    A step that grows keeps the number of looks, and so each look's share of the
    error rate, nearly the same for a budget of 80 pairs or of 240: a bench whose
    pairs scatter (a layout-bound decode loop) can go on for hundreds of cheap pairs
    without every early look paying for them.

    >>> look_schedule(12, 24)
    [12, 16, 20, 24]
    >>> look_schedule(12, 240)
    [12, 16, 20, 24, 28, 32, 40, 48, 60, 72, 88, 108, 132, 164, 204, 240]
    """
    if min_pairs < 1 or max_pairs < min_pairs or every < 1:
        raise ValueError(
            f"need 1 <= min_pairs <= max_pairs and every >= 1, got {min_pairs}, {max_pairs}, "
            f"{every}"
        )
    looks = [min_pairs]
    while looks[-1] < max_pairs:
        step = max(every, looks[-1] // 4 // every * every)
        looks.append(min(looks[-1] + step, max_pairs))
    return looks


def alpha_per_look(looks: Sequence[int], alpha: float = PAIRED_ALPHA) -> float:
    """Each look's level: the largest that keeps the schedule's exact family-wise rate,
    plus one look off the schedule, within ``alpha``
    (:func:`perfsuite.verdict.signtest.look_level`); at least ``alpha / len(looks)``."""
    return look_level(tuple(looks), float(alpha))


@dataclass(frozen=True)
class PairedResult:
    """The verdict on one bench from its paired log-ratios.

    ``change`` is ``exp(median d) - 1``, the relative change of the metric (B over A);
    ``ci`` the interval of that change (None when too few pairs); ``rate_change`` the
    change of a throughput derived from a time (its inverse); ``sign_p`` the two-sided
    exact sign test's p-value of a median of 0 (:func:`sign_test_p`; None for a
    verdict across pairs of processes).
    """

    verdict: Verdict
    change: float
    ci: tuple[float, float] | None
    pairs: int
    threshold: float
    alpha: float
    higher_is_better: bool = False
    sign_p: float | None = None
    futile: bool = False

    @property
    def rate_change(self) -> float:
        return 1 / (1 + self.change) - 1

    @property
    def decisive(self) -> bool:
        return self.verdict is not Verdict.INCONCLUSIVE

    @property
    def bound(self) -> float | None:
        """The largest regression the interval has not ruled out, as a change of the
        metric the slower way (positive: slower by that much; a rate's fall for a
        ``higher_is_better`` metric); None without an interval.

        >>> r = PairedResult(Verdict.INCONCLUSIVE, 0.01, (-0.04, 0.06), 20, 0.05, 0.01)
        >>> r.bound, r.bounded, r.too_noisy
        (0.06, True, False)
        >>> replace(r, ci=(-0.04, 0.12)).too_noisy, replace(r, ci=None).too_noisy
        (True, True)
        """
        if self.ci is None:
            return None
        return -self.ci[0] if self.higher_is_better else self.ci[1]

    @property
    def bounded(self) -> bool:
        """Inconclusive, with a bound below ``BOUND_FACTOR`` times the threshold: not
        judged at the threshold, yet it passes, saying its bound."""
        undecided = self.verdict is Verdict.INCONCLUSIVE
        return undecided and within_bound(self.bound, self.threshold)

    @property
    def too_noisy(self) -> bool:
        """Inconclusive and not :attr:`bounded`: it could not have caught a regression
        of ``BOUND_FACTOR`` times its threshold (or has no interval at all)."""
        return self.verdict is Verdict.INCONCLUSIVE and not self.bounded

    def bound_text(self) -> str:
        """``no regression above +6.1%`` (``no fall below -6.1%`` for a rate)."""
        return bound_text(self.bound, self.higher_is_better)


def log_ratios(
    a_blocks: Sequence[Sequence[float]], b_blocks: Sequence[Sequence[float]]
) -> list[float]:
    """One ``log(median(B) / median(A))`` per pair of blocks (zipped in order)."""
    if len(a_blocks) != len(b_blocks):
        raise ValueError(f"unpaired blocks: {len(a_blocks)} of A, {len(b_blocks)} of B")
    out = []
    for a, b in zip(a_blocks, b_blocks, strict=True):
        ma, mb = float(np.median(a)), float(np.median(b))
        if not (ma > 0 and mb > 0 and math.isfinite(ma) and math.isfinite(mb)):
            raise ValueError(f"block medians must be finite and positive, got {ma}, {mb}")
        out.append(math.log(mb / ma))
    return out


def _rule(
    change: float, ci: tuple[float, float] | None, threshold: float, higher_is_better: bool
) -> Verdict:
    """Significance and effect (see the module doc): slower/faster/same/inconclusive."""
    if ci is not None:
        if ci[0] > 0 and change > threshold:
            return Verdict.FASTER if higher_is_better else Verdict.SLOWER
        if ci[1] < 0 and change < -threshold:
            return Verdict.SLOWER if higher_is_better else Verdict.FASTER
        if -threshold < ci[0] and ci[1] < threshold:
            return Verdict.SAME
    return Verdict.INCONCLUSIVE


def judge(
    log_ratios: Sequence[float],
    threshold: float,
    alpha: float,
    *,
    higher_is_better: bool = False,
) -> PairedResult:
    """Judge paired log-ratios at level ``alpha`` (one look's share of the error rate).

    >>> judge([0.2] * 12, 0.05, 0.001).verdict
    <Verdict.SLOWER: 'slower'>
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    if not log_ratios:
        raise ValueError("no pairs to judge")
    d = np.asarray(log_ratios, dtype=float)
    change = math.expm1(float(np.median(d)))
    bounds = median_interval(log_ratios, alpha)
    ci = None if bounds is None else (math.expm1(bounds[0]), math.expm1(bounds[1]))
    verdict = _rule(change, ci, threshold, higher_is_better)
    sign_p = sign_test_p(log_ratios)
    return PairedResult(
        verdict, change, ci, int(d.size), threshold, alpha, higher_is_better, sign_p
    )


@dataclass(frozen=True)
class Budget:
    """How long one bench may alternate: pairs (min, max) and seconds."""

    min_pairs: int
    max_pairs: int
    max_seconds: float
    alpha: float = PAIRED_ALPHA
    every: int = LOOK_EVERY
    #: a session judged across pairs of processes, not on its own: it runs a number of
    #: pairs that its data never sets (``min_pairs``, then on while ``least_seconds``
    #: have not passed, up to ``max_pairs``), since stopping one when it looks decisive
    #: would bias the estimate it gives; 0 for a bench judged on its own pairs
    least_seconds: float = 0.0

    @property
    def looks(self) -> list[int]:
        return look_schedule(self.min_pairs, self.max_pairs, self.every)

    @property
    def alpha_per_look(self) -> float:
        return alpha_per_look(self.looks, self.alpha)


class Sequential:
    """Early stopping over one bench's pairs: judge at the scheduled looks only.

    >>> seq = Sequential(Budget(12, 20, 60.0), threshold=0.05)
    >>> seq.look([0.3] * 12, elapsed=1.0).verdict
    <Verdict.SLOWER: 'slower'>
    """

    def __init__(
        self,
        budget: Budget,
        threshold: float,
        *,
        higher_is_better: bool = False,
        futility: bool = True,
    ) -> None:
        self.budget = budget
        self.threshold = threshold
        self.higher_is_better = higher_is_better
        self.futility = futility
        self._looks = budget.looks
        self.looks_taken: list[int] = []

    def look(
        self, ratios: Sequence[float], elapsed: float, *, last: bool = False
    ) -> PairedResult | None:
        """The final result once the bench should stop, else None (keep alternating).

        Call after every completed pair. A scheduled pair count is judged; the bench
        stops when the result is decisive, when ``max_pairs`` is reached, when
        ``elapsed`` seconds reach the time budget or ``last`` says no more pairs can be
        had (a final look there instead of the scheduled ones left), or when the pairs
        the budget can still buy at this pace could not make it decisive, nor (after
        any pair) bring it to ``LEAN_PAIRS`` (``futile``, unless ``futility`` is off; the
        result then says ``futile``). With ``least_seconds`` in the budget, the one look
        comes at ``min_pairs`` once those seconds have passed, or at ``max_pairs``.
        """
        n = len(ratios)
        if n == 0:
            return None
        final = last or elapsed >= self.budget.max_seconds  # no look after this one
        hopeless = (
            self.futility
            and not final
            and n < LEAN_PAIRS
            and elapsed > 0
            and n + seconds_leave(n, elapsed, self.budget.max_seconds) < LEAN_PAIRS
        )
        if self.budget.least_seconds > 0 and not final and not hopeless:
            if n < self.budget.min_pairs or (
                n < self.budget.max_pairs and elapsed < self.budget.least_seconds
            ):
                return None
            final = True  # a session's estimate: the pairs it has, judged once
        if n not in self._looks and not final and not hopeless:
            return None
        self.looks_taken.append(n)
        result = judge(
            ratios,
            self.threshold,
            self.budget.alpha_per_look,
            higher_is_better=self.higher_is_better,
        )
        if result.decisive or final or n >= self.budget.max_pairs:
            return result
        if hopeless:
            return replace(result, futile=True)
        if self.futility:
            most = reachable(self.budget.max_pairs, n, elapsed, self.budget.max_seconds)
            if most > n and futile(
                result, sign_half_width(ratios, self.budget.alpha_per_look, most)
            ):
                return replace(result, futile=True)
        return None


def judge_processes(
    session_ratios: Sequence[Sequence[float]],
    threshold: float,
    alpha: float = PAIRED_ALPHA,
    *,
    higher_is_better: bool = False,
) -> PairedResult:
    """Judge a bench across several fresh pairs of processes (a confirmation).

    Two processes running identical code can differ by a stable offset that
    alternating blocks inside them cannot cancel, so the unit of evidence is the pair
    of processes: each gives one estimate, the median of its paired log-ratios, and
    the interval is the t interval of those estimates' trimmed mean
    (:func:`perfsuite.verdict.trimmed.trimmed_interval`: their mean and Student's t
    interval below 8 pairs), whose spread includes the process offsets. The rules are
    :func:`judge`'s, on ``exp(trimmed mean) - 1`` and that interval; ``pairs`` counts every
    pair of blocks.

    >>> judge_processes([[0.2, 0.21], [0.19, 0.2], [0.2, 0.22], [0.21, 0.2]], 0.05).verdict
    <Verdict.SLOWER: 'slower'>
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    estimates = [float(np.median(r)) for r in session_ratios if len(r)]
    if not estimates:
        raise ValueError("no pairs to judge")
    pairs = sum(len(r) for r in session_ratios)
    mean, half = trimmed_interval(estimates, alpha)
    ci = None if half is None else (math.expm1(mean - half), math.expm1(mean + half))
    change = math.expm1(mean)
    verdict = _rule(change, ci, threshold, higher_is_better)
    return PairedResult(verdict, change, ci, pairs, threshold, alpha, higher_is_better)
