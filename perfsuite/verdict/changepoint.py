"""Change points in a series of run medians: where a bench's level stepped, and by how much.

The series is one bench's median call time over the saved runs of one machine, oldest
first. It is searched in log space, so a step is a relative change whatever the bench's
scale. The model: the log medians are a piecewise-constant level plus independent
normal noise of one unknown scale (5% lognormal night-to-night noise is a scale of
0.05). :func:`find_steps` takes four steps:

1. **Propose.** PELT (``ruptures``, the exact search for the segmentation of least
   penalised cost) with an L2 cost and a BIC penalty per split,
   ``PENALTY_FACTOR * sigma**2 * log(n)``, where ``sigma`` is the noise of the series
   from the median absolute deviation of its first differences (:func:`robust_sigma`:
   a step is one large difference, which the median ignores). The penalty is lenient
   on purpose: it proposes every split the noise might allow, and step 2 decides.
2. **Test.** Each split is tested as Apache Otava tests e-divisive's: a two-sided
   Student t-test, pooled variance, between the segment before it and the segment
   after it. It passes when its p-value is at most :func:`step_level` of the series'
   length: the level at which the largest ``|t|`` over every place a step may start
   in a flat series of normal noise is significant with a probability of
   ``STEP_ALPHA``, so that a flat series of any length raises a false single step
   about that often. (Bonferroni's ``STEP_ALPHA / (n - 1)`` would treat the places as
   unrelated tests; neighbouring splits share all runs but one, so it holds a flat
   series of 30 runs to about half that rate, and misses steps for it.)
   The least significant failing split is removed (its two segments merge) and the
   rest are tested again, until every split passes. A split that leaves one run alone
   fails whatever its test (and goes first) unless that run is the newest: one run
   before or between others is an outlier, not a level, while the newest run may be
   the first of a new one.
3. **Place.** Each split moves to the place within ``REFINE_RADIUS`` runs of it (and
   leaving two runs or more on either side, or only the newest run after it) where
   the t statistic between the two segments around it is largest, then step 2 runs
   again; this repeats until no split moves.
4. **Report.** Each split becomes a :class:`Step`: the relative change of the
   geometric means of the segments either side, with a ``STEP_CONFIDENCE`` t interval
   and the test's p-value. Steps smaller than ``min_change`` are left out.

The noise scale of a test is the series' own: the pooled standard deviation of the
log medians within the two segments it compares (``n_before + n_after - 2`` degrees of
freedom). A pooled variance lets a segment of one run, such as a step at the newest
run, be tested against the runs before it, which a Welch test cannot. It is floored
at ``MIN_SIGMA`` so that a series of identical medians does not turn rounding into
steps. A series of fewer than ``MIN_POINTS`` positive medians has no steps: the noise
estimate of a shorter one has under ``MIN_POINTS - 2`` degrees of freedom, and one odd
run would decide its test.

Because every step returned passed its test at ``step_level(n) <= 1 - STEP_CONFIDENCE``
(``MIN_POINTS`` and more), its interval excludes zero.
``tools/validation/history_power.py`` measures how often a step is found, where, and
how often a flat series raises one.

``ruptures``, ``numpy`` and ``scipy`` are imported only when a series is searched.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Logs = npt.NDArray[np.float64]

#: penalty per proposed split, in units of sigma**2 * log(n) (2 is the BIC)
PENALTY_FACTOR = 2.0
#: how often a flat series of normal noise raises a false single step (:func:`step_level`)
STEP_ALPHA = 0.025
#: floor under the noise estimate, in log units (0.2%)
MIN_SIGMA = 0.002
#: confidence level of the interval around a step's size
STEP_CONFIDENCE = 0.99
#: how far (in runs) a kept split may move to where its t statistic is largest
REFINE_RADIUS = 2
#: the fewest points a series needs before change points are searched
MIN_POINTS = 8
#: flat series drawn (seeded) to find :func:`step_level`, and how many at a time
LEVEL_DRAWS, LEVEL_CHUNK = 20_000, 2_000


@dataclass(frozen=True)
class Step:
    """A change of level starting at ``index`` (the first point of the new segment).

    ``change`` is ``exp(mean(log after) - mean(log before)) - 1``, with ``ci`` its
    interval and ``p_value`` the two-sided p-value of the t-test between the two
    segments; ``n_before`` and ``n_after`` count their points.
    """

    index: int
    change: float
    ci: tuple[float, float]
    n_before: int
    n_after: int
    p_value: float

    @property
    def up(self) -> bool:
        """The level rose (for a time: slower) and the interval says so."""
        return self.ci[0] > 0

    @property
    def down(self) -> bool:
        return self.ci[1] < 0


@dataclass(frozen=True)
class _Test:
    """The pooled t-test between ``logs[start:cut]`` and ``logs[cut:end]``."""

    diff: float  # mean after - mean before, in log units
    se: float
    dof: int

    @property
    def t(self) -> float:
        return self.diff / self.se


def _test(logs: Logs, start: int, cut: int, end: int) -> _Test:
    before, after = logs[start:cut], logs[cut:end]
    n1, n2 = len(before), len(after)
    dof = n1 + n2 - 2
    squares = float(((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum())
    sigma = max(math.sqrt(squares / dof) if dof > 0 else 0.0, MIN_SIGMA)
    diff = float(after.mean() - before.mean())
    return _Test(diff=diff, se=sigma * math.sqrt(1 / n1 + 1 / n2), dof=dof)


@lru_cache(maxsize=256)
def _critical_t(level: float, dof: int) -> float:
    """The two-sided critical value of Student's t at ``level`` with ``dof`` degrees."""
    from scipy.stats import t as student_t

    return float(student_t.isf(level / 2, dof))


def _passes(test: _Test, level: float) -> bool:
    return test.dof >= 1 and abs(test.t) > _critical_t(level, test.dof)


@lru_cache(maxsize=64)
def step_level(n: int) -> float:
    """The p-value a split of a series of ``n`` points must reach (step 2).

    The largest pooled ``|t|`` over the places a step may start (two or more points
    on either side, or the newest point alone) is found in ``LEVEL_DRAWS`` flat series
    of ``n`` standard normal points, drawn from a fixed seed; its ``1 - STEP_ALPHA``
    quantile, as a two-sided p-value at ``n - 2`` degrees of freedom, is the level.
    It is kept between Bonferroni's ``STEP_ALPHA / (n - 1)`` and ``STEP_ALPHA``.

    >>> round(step_level(30) / (STEP_ALPHA / 29), 1)
    2.1
    >>> step_level(30) == step_level(30)
    True
    """
    import numpy as np
    from scipy.stats import t as student_t

    if n < 4:
        return STEP_ALPHA
    rng = np.random.default_rng(n)
    places = [*range(2, n - 1), n - 1]
    peaks = []
    for _ in range(LEVEL_DRAWS // LEVEL_CHUNK):
        draws = rng.standard_normal((LEVEL_CHUNK, n))
        sums, squares = np.cumsum(draws, axis=1), np.cumsum(draws * draws, axis=1)
        peak = np.zeros(LEVEL_CHUNK)
        for cut in places:
            n1, n2 = cut, n - cut
            s1, s2 = sums[:, cut - 1], sums[:, -1] - sums[:, cut - 1]
            q1, q2 = squares[:, cut - 1], squares[:, -1] - squares[:, cut - 1]
            within = np.maximum(q1 - s1 * s1 / n1 + q2 - s2 * s2 / n2, 1e-300)
            se = np.sqrt(within / (n - 2) * (1 / n1 + 1 / n2))
            peak = np.maximum(peak, np.abs(s2 / n2 - s1 / n1) / se)
        peaks.append(peak)
    critical = float(np.quantile(np.concatenate(peaks), 1 - STEP_ALPHA))
    level = float(2 * student_t.sf(critical, n - 2))
    return min(max(level, STEP_ALPHA / (n - 1)), STEP_ALPHA)


def robust_sigma(logs: Sequence[float]) -> float:
    """Noise of a log series from its first differences, robust to steps and outliers.

    >>> round(robust_sigma([0.0, 0.1, 0.0, 0.1, 0.0]), 4)
    0.1048
    >>> robust_sigma([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # one step is not noise
    0.0
    """
    diffs = [b - a for a, b in itertools.pairwise(logs)]
    if not diffs:
        return 0.0
    center = statistics.median(diffs)
    return 1.4826 * statistics.median(abs(d - center) for d in diffs) / math.sqrt(2)


def propose(logs: Logs) -> list[int]:
    """The splits PELT (``ruptures``) finds under a BIC penalty scaled by the noise (step 1)."""
    import ruptures

    n = len(logs)
    sigma = max(robust_sigma([float(v) for v in logs]), MIN_SIGMA)
    search = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(logs.reshape(-1, 1))
    ends: list[int] = search.predict(pen=PENALTY_FACTOR * sigma**2 * math.log(n))
    return [int(e) for e in ends if 0 < e < n]


def prune(logs: Logs, cuts: Sequence[int], level: float) -> list[int]:
    """Drop the least significant failing split until every split passes (step 2)."""
    kept = list(cuts)
    while kept:
        bounds = [0, *kept, len(logs)]
        failing = []
        for i in range(1, len(bounds) - 1):
            start, cut, end = bounds[i - 1], bounds[i], bounds[i + 1]
            alone = cut - start == 1 or (end - cut == 1 and end != len(logs))
            test = _test(logs, start, cut, end)
            if alone or not _passes(test, level):
                failing.append((not alone, abs(test.t), i - 1))
        if not failing:
            break
        del kept[min(failing)[2]]
    return kept


def place(logs: Logs, cuts: Sequence[int], level: float) -> list[int]:
    """Move each split to its likeliest place nearby and test again, until none moves."""
    n = len(logs)
    kept = list(cuts)
    for _ in range(n):
        bounds = [0, *kept, n]
        for i in range(1, len(bounds) - 1):
            start, cut, end = bounds[i - 1], bounds[i], bounds[i + 1]
            low = min(cut, max(start + 2, cut - REFINE_RADIUS))
            high = max(cut, min(end - (1 if end == n else 2), cut + REFINE_RADIUS))
            bounds[i] = max(
                range(low, high + 1),
                key=lambda at: (abs(_test(logs, start, at, end).t), -at),
            )
        moved = prune(logs, bounds[1:-1], level)
        if moved == kept:
            break
        kept = moved
    return kept


def step_between(logs: Logs, start: int, cut: int, end: int) -> Step:
    """The step at ``cut`` between ``logs[start:cut]`` and ``logs[cut:end]``."""
    from scipy.stats import t as student_t

    test = _test(logs, start, cut, end)
    dof = max(test.dof, 1)
    half = float(student_t.ppf(0.5 + STEP_CONFIDENCE / 2, dof)) * test.se
    return Step(
        index=cut,
        change=math.exp(test.diff) - 1,
        ci=(math.exp(test.diff - half) - 1, math.exp(test.diff + half) - 1),
        n_before=cut - start,
        n_after=end - cut,
        p_value=float(2 * student_t.sf(abs(test.t), dof)),
    )


def find_steps(values: Sequence[float], min_change: float = 0.0) -> list[Step]:
    """The steps of a positive series (medians), oldest first, of at least ``min_change``.

    >>> [s.index for s in find_steps([1.0, 1.01, 0.99, 1.0, 1.5, 1.49, 1.51, 1.5])]
    [4]
    """
    if len(values) < MIN_POINTS or not all(v > 0 and math.isfinite(v) for v in values):
        return []
    import numpy as np

    logs = np.log(np.asarray(values, dtype=np.float64))
    level = step_level(len(logs))
    cuts = place(logs, prune(logs, propose(logs), level), level)
    bounds = [0, *cuts, len(logs)]
    steps = [
        step_between(logs, bounds[i - 1], bounds[i], bounds[i + 1])
        for i in range(1, len(bounds) - 1)
    ]
    return [s for s in steps if abs(s.change) >= min_change]
