"""Compare two robust run-to-run noise estimates behind a bench's noise band.

The gate and ``perfsuite compare`` widen a bench's threshold to ``exp(3 sigma) - 1`` of
its earlier runs' medians (:func:`perfsuite.verdict.judge.noise_band`). This script
draws synthetic histories of lognormal run-to-run noise and measures, for ``sigma``
taken as the MAD about the median of the log medians (``mad``) and as the median
absolute difference of adjacent runs over sqrt(2) (``diff``, what ``noise_band`` uses):

* steady histories: the median band, and how often an unchanged next run lies beyond
  ``max(threshold, band)`` against the run before it (a false suspect);
* a history with a step (the bench's work multiplied by ``--step`` halfway): the median
  band, and how often the next run, slower by ``--change``, lies beyond it (caught).

Usage::

    python tools/validation/noise_band_check.py [--sims 20000] [--noise 0.05] [--out F]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import numpy as np

from perfsuite.verdict.judge import NOISE_SIGMAS, noise_band


def mad_band(medians: list[float]) -> float:
    """The band from the MAD of the log medians about their median."""
    logs = [math.log(m) for m in medians]
    center = statistics.median(logs)
    sigma = 1.4826 * statistics.median(abs(v - center) for v in logs)
    return math.exp(NOISE_SIGMAS * sigma) - 1


def trial(
    rng: np.random.Generator, runs: int, noise: float, step: float, change: float
) -> dict[str, tuple[float, bool]]:
    """One history of ``runs`` earlier runs (a ``step`` from its middle on) and a next
    run (``change`` slower than the last level): each estimate's band and whether the
    next run lies beyond ``max(5%, band)`` against the last earlier run."""
    levels = [1.0 if i < runs // 2 else step for i in range(runs)]
    history = [lv * math.exp(rng.normal(0, noise)) for lv in levels]
    nxt = levels[-1] * (1 + change) * math.exp(rng.normal(0, noise))
    moved = nxt / history[-1] - 1
    found: dict[str, tuple[float, bool]] = {}
    for name, band in (("mad", mad_band(history)), ("diff", noise_band(history) or 0.0)):
        found[name] = (band, moved > max(0.05, band))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=20000)
    parser.add_argument("--noise", type=float, default=0.05, help="run-to-run sd of log median")
    parser.add_argument("--step", type=float, default=4.0, help="the history's step (factor)")
    parser.add_argument("--change", type=float, default=0.5, help="the next run's slowdown")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    results = []
    for runs in (5, 10, 20):
        for case, step, change in (
            ("steady, unchanged next run", 1.0, 0.0),
            (f"step x{args.step:g}, next run +{args.change:.0%}", args.step, args.change),
        ):
            bands: dict[str, list[float]] = {"mad": [], "diff": []}
            beyond = {"mad": 0, "diff": 0}
            for _ in range(args.sims):
                for name, (band, hit) in trial(rng, runs, args.noise, step, change).items():
                    bands[name].append(band)
                    beyond[name] += hit
            row: dict[str, str | int | float] = {"runs": runs, "case": case}
            for name in ("mad", "diff"):
                row[f"{name}_band"] = statistics.median(bands[name])
                row[f"{name}_beyond"] = beyond[name] / args.sims
            results.append(row)
            print(
                f"{runs:>2} runs, {case}: band (median) MAD {row['mad_band']:.1%}, "
                f"adjacent {row['diff_band']:.1%}; next run beyond it: MAD "
                f"{row['mad_beyond']:.2%}, adjacent {row['diff_beyond']:.2%}"
            )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
