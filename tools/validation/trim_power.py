"""Simulate a confirmation's looks across fresh pairs of processes: the trimmed mean
against the plain mean, on pairs that are now and then off as a whole.

Each simulated suspect draws 12 pair estimates (log-ratios) around the effect with a
standard deviation of ``sd``: normal, or even (uniform, as pairs that fall into layouts
of memory each as likely); with probability ``wild`` a pair is moved by 0.2-0.6 in
log-ratio either way (a pair of processes off for its life). It is looked at after 3,
6 and ``last`` pairs, as a suspect of ``--suspects leaning`` is (one-sided at
``CONFIRM_ALPHA / 3``: the two-sided interval at twice that;
:func:`perfsuite.verdict.paired.judge_processes`),
stopping when decisive, settled (bounded under twice the threshold with its estimate
within it) or futile, as :mod:`perfsuite.ab.confirm` does; ``last`` stands for the
pairs ``--confirm-seconds`` leaves time for:

- ``trimmed``: perfsuite's rules (:func:`perfsuite.verdict.futility.t_futile`);
- ``plain``: no trimming (``TRIM`` 0) and futility on the mean's projection alone.

It prints, per case, the share called ``slower`` (for unchanged code: by this stage
alone) and too noisy (no bound under twice the threshold), with the mean pairs spent.
Usage::

    python tools/validation/trim_power.py [--draws 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator

import numpy as np

from perfsuite.ab.confirm import CONFIRM_ALPHA
from perfsuite.verdict import trimmed
from perfsuite.verdict.futility import futile, t_futile, t_half_width, t_margin
from perfsuite.verdict.paired import PairedResult, judge_processes
from perfsuite.verdict.stats import Verdict

THRESHOLD = 0.05


def looked(draw: np.ndarray, cap: int, plain: bool) -> tuple[PairedResult, int]:
    """The result a confirmation of ``draw``'s estimates ends with, and its pairs."""
    alpha = 2 * CONFIRM_ALPHA / 3
    looks = [3, 6, cap] if cap > 6 else [3, 6]
    for n in looks:
        result = judge_processes([[e] for e in draw[:n]], THRESHOLD, alpha)
        if result.decisive or n == looks[-1]:
            return result, n
        if result.bounded and result.change <= THRESHOLD:
            return result, n
        if plain:
            stop = futile(result, t_half_width(result, n, cap), t_margin(n), bounding=True)
        else:
            stop = t_futile(result, [math.expm1(e) for e in draw[:n]], cap)
        if stop:
            return result, n
    raise AssertionError("the last look always returns")


def draws(
    rng: np.random.Generator, effect: float, noise: str, sd: float, wild: float, count: int
) -> Iterator[np.ndarray]:
    """``count`` suspects' 12 estimates each."""
    for _ in range(count):
        if noise == "even":
            draw = effect + rng.uniform(-sd * math.sqrt(3), sd * math.sqrt(3), 12)
        else:
            draw = rng.normal(effect, sd, 12)
        off = rng.random(12) < wild
        moves = rng.uniform(0.2, 0.6, int(off.sum()))
        draw[off] += rng.choice([-1.0, 1.0], int(off.sum())) * moves
        yield draw


def case(
    effect: float,
    noise: str,
    sd: float,
    wild: float,
    cap: int,
    plain: bool,
    args: argparse.Namespace,
) -> str:
    """One line: the shares called slower and too noisy, and the mean pairs."""
    saved = trimmed.TRIM
    trimmed.TRIM = 0.0 if plain else saved
    trimmed.spread_share.cache_clear()
    try:
        found = [
            looked(d, cap, plain)
            for d in draws(np.random.default_rng(args.seed), effect, noise, sd, wild, args.draws)
        ]
    finally:
        trimmed.TRIM = saved
        trimmed.spread_share.cache_clear()
    slower = sum(r.verdict is Verdict.SLOWER for r, _ in found) / args.draws
    noisy = sum(not (r.decisive or r.bounded) for r, _ in found) / args.draws
    pairs = sum(n for _, n in found) / args.draws
    return f"slower {slower:6.1%}  too noisy {noisy:6.1%}  pairs {pairs:4.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="suspects per case (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    noises = [("normal", 0.0), ("normal", 0.02), ("normal", 0.05), ("even", 0.0)]
    print(
        "effect  noise   sd     wild  last  | plain                                     | trimmed"
    )
    for label, effect in [("+10%", math.log(1.10)), ("+13%", math.log(1.13)), ("A/A", 0.0)]:
        for noise, wild in noises:
            for sd in (0.03, 0.045, 0.06):
                for cap in (6, 8, 12):
                    plain, trim = (
                        case(effect, noise, sd, wild, cap, p, args) for p in (True, False)
                    )
                    print(
                        f"{label:6}  {noise:6}  {sd:.3f}  {wild:.2f}  {cap:4}  | {plain} | {trim}"
                    )


if __name__ == "__main__":
    main()
