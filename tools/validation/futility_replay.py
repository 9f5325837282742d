"""Replay a bench's recorded pairs of blocks through the first stage's sequential rule.

Over the ``pairs.json`` of ``perfsuite ab --report DIR`` runs of one bench (an A/A,
ideally with ``--confirm 0``), the paired log-ratios of every run with at least
``--least`` pairs are centred on their own median and pooled: the bench's noise, with
no change in it. Each trial draws pairs from that pool (with replacement, a change
added) at the recorded pace and feeds them to
:class:`perfsuite.verdict.paired.Sequential` at default scale, until it stops. It
prints, per change and per futility projection, the share of trials ending each
verdict, the share stopped for futility and the mean pairs:

* ``shorth``: :func:`perfsuite.verdict.futility.sign_half_width` as it is, the
  narrowest window of the pairs that holds the interval's share;
* ``central``: the window between the pairs' central quantiles, as it was before;
* ``off``: no futility stop.

It also replays normal noise (``--noise`` sd, no change) to show what each projection
costs a bench no budget could decide.

Usage::

    python tools/validation/futility_replay.py REPORT_DIR [REPORT_DIR ...]
        [--name test_decode] [--trials 400] [--noise 0.25]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

import numpy as np

from perfsuite.verdict import paired
from perfsuite.verdict.futility import sign_half_width
from perfsuite.verdict.paired import Budget, PairedResult, Sequential
from perfsuite.verdict.signtest import sign_rank

#: default scale's first stage: pairs of blocks (min, max) and seconds per bench
BUDGET = Budget(12, 240, 60.0)
#: the change each replay adds to the pooled noise (log-ratio), by name
CHANGES = {"A/A": 0.0, "+10%": math.log(1.10)}

Projection = Callable[[Sequence[float], float, int], float]


def central(log_ratios: Sequence[float], alpha: float, pairs: int) -> float:
    """The projection read off the pairs' central quantiles (the rule shorth replaced)."""
    if pairs <= len(log_ratios):  # the interval in hand: both rules agree
        return sign_half_width(log_ratios, alpha, pairs)
    k = sign_rank(pairs, alpha)
    if k is None or not log_ratios:
        return math.inf
    level = k / (pairs + 1)
    low, high = np.quantile(np.asarray(log_ratios), [level, 1 - level], method="weibull")
    return float(high - low) / 2


def pooled(reports: Sequence[Path], name: str, least: int) -> tuple[list[float], float]:
    """(the centred log-ratios of every long enough run of ``name``, seconds per pair)."""
    ratios: list[float] = []
    paces: list[float] = []
    for report in reports:
        for entry in json.loads((report / "pairs.json").read_text()):
            if entry["nodeid"].split("::")[-1] != name or entry.get("pairs", 0) < least:
                continue
            a = [statistics.median(block) for block in entry["a_blocks"]]
            b = [statistics.median(block) for block in entry["b_blocks"]]
            run = [math.log(y / x) for x, y in zip(a, b, strict=True)]
            middle = statistics.median(run)
            ratios.extend(r - middle for r in run)
            paces.append(float(entry["seconds"]) / len(run))
    return ratios, statistics.median(paces) if paces else 0.0


def replay(draw: Callable[[], float], pace: float, futility: bool) -> PairedResult:
    """One trial: pairs from ``draw`` until the sequential rule stops."""
    seq = Sequential(BUDGET, 0.05, futility=futility)
    ratios: list[float] = []
    while True:
        ratios.append(draw())
        result = seq.look(ratios, elapsed=pace * len(ratios))
        if result is not None:
            return result


def tally(results: Sequence[PairedResult]) -> str:
    n = len(results)
    verdicts = [r.verdict.value for r in results]
    shares = " ".join(f"{v} {verdicts.count(v) / n:.2f}" for v in ("slower", "same"))
    futile = sum(r.futile for r in results) / n
    pairs = statistics.mean(r.pairs for r in results)
    return f"{shares} futile {futile:.2f} pairs {pairs:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="perfsuite ab --report folders")
    parser.add_argument("--name", default="test_decode", help="the bench's test name")
    parser.add_argument("--least", type=int, default=40, help="fewest pairs a run must have")
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--noise", type=float, default=0.25, help="sd of the normal replay")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.reports if not (r / "pairs.json").is_file()]
    if missing:
        parser.error(f"no pairs.json in {', '.join(missing)}: pass perfsuite ab --report folders")
    pool, pace = pooled(args.reports, args.name, args.least)
    if not pool:
        parser.error(f"no run of {args.name} with {args.least} pairs or more in those reports")
    rng = random.Random(1)
    print(f"{len(pool)} pairs of {args.name}, sd {np.std(pool):.3f}, {pace:.3f} s a pair")
    projections: dict[str, Projection | None] = {
        "shorth": sign_half_width,
        "central": central,
        "off": None,
    }

    def shifted(shift: float) -> Callable[[], float]:
        return lambda: rng.choice(pool) + shift

    def normal() -> float:
        return rng.gauss(0.0, args.noise)

    for label, projection in projections.items():
        # the name Sequential.look calls, swapped for this replay only
        with mock.patch.object(paired, "sign_half_width", projection or sign_half_width):
            for case, shift in CHANGES.items():
                draw = shifted(shift)
                runs = [replay(draw, pace, projection is not None) for _ in range(args.trials)]
                print(f"{label:8s} {case:5s} {tally(runs)}", flush=True)
            if projection is not None:
                noise = [replay(normal, pace, True) for _ in range(args.trials)]
                print(f"{label:8s} normal sd {args.noise}: {tally(noise)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
