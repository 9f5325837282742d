"""How steady this machine's CPU is from one tenth of a second to the next.

``perfsuite ab`` cancels whatever hits both blocks of a pair; what changes between two
adjacent blocks (a few hundred milliseconds apart) it can only average out, so the
pairs it needs grow with the square of that change. This times a fixed piece of
pure-Python work (a million additions: 30-60 ms on this VM) ``--rounds`` times, in
one process and then in two processes at once (both cores busy, as a multi-threaded pipeline keeps
them), and prints per process: the median round, its coefficient of variation, the
10th and 90th percentiles, and ``adjacent``: the median change between two successive
rounds, the noise a pair of blocks sees. Figures for A/B power mean little without
these beside them. Usage::

    python tools/machine_noise.py [--rounds 200] [--series]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import statistics
import sys
import time

WORK = 1_000_000


def spin(n: int) -> int:
    """The fixed work: a pure-Python loop of ``n`` additions."""
    total = 0
    for i in range(n):
        total += i
    return total


def rounds(count: int) -> list[float]:
    """``count`` timed rounds of the fixed work, back to back (seconds each)."""
    spin(WORK)  # untimed: the first round pays for warming up
    out = []
    for _ in range(count):
        start = time.perf_counter()
        spin(WORK)
        out.append(time.perf_counter() - start)
    return out


def describe(name: str, times: list[float]) -> str:
    """One line: median, cv, p10/p90 and the median change between adjacent rounds."""
    ordered = sorted(times)
    p10, p90 = ordered[len(ordered) // 10], ordered[(9 * len(ordered)) // 10]
    cv = statistics.pstdev(times) / statistics.fmean(times)
    adjacent = statistics.median(abs(b / a - 1) for a, b in itertools.pairwise(times))
    return (
        f"{name:<12} median {statistics.median(times) * 1000:6.1f} ms  cv {cv:6.1%}  "
        f"p10 {p10 * 1000:6.1f}  p90 {p90 * 1000:6.1f} ms ({p90 / p10 - 1:+.0%})  "
        f"adjacent {adjacent:5.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds per process")
    parser.add_argument("--series", action="store_true", help="print each round (ms)")
    args = parser.parse_args(argv)
    alone = rounds(args.rounds)
    with multiprocessing.Pool(2) as pool:
        both = pool.map(rounds, [args.rounds, args.rounds])
    print(describe("one process", alone))
    for i, times in enumerate(both):
        print(describe(f"two, #{i + 1}", times))
    if args.series:
        print("one process, ms:", " ".join(f"{t * 1000:.0f}" for t in alone))
    return 0


if __name__ == "__main__":
    sys.exit(main())
