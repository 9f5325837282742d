"""Budgets of ``perfsuite ab`` by ``--perf-scale``: pairs of blocks and seconds per bench,
seconds per bench file's confirmation."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from perfsuite.errors import PerfsuiteError

if TYPE_CHECKING:
    from perfsuite.verdict.paired import Budget


#: ``--suspects``: what a confirmation measures again, fewest first
#: (:func:`perfsuite.ab.rows.suspicious`, :attr:`perfsuite.ab.rows.Row.undecided`)
SUSPECT_KINDS = ("leaning-slower", "leaning", "undecided")


@dataclass(frozen=True)
class ScaleBudget:
    min_pairs: int
    max_pairs: int
    max_seconds: float
    confirm_seconds: float
    suspects: str


#: budgets by --perf-scale: the first look needs >= 10-12 pairs to decide at all (see
#: perfsuite.verdict.paired), the seconds bound a bench whose rounds are slow, and the most
#: pairs one whose rounds are cheap (a one-round block of 20 ms rounds takes 60 ms a pair
#: with the switch: 480 pairs in 30 s, about as many as say `same` within 5% at the 0.19
#: scatter of a decode bench's pair of blocks on a 2-core machine); then a bench file's
#: confirmation, and which first verdicts it measures again (``--suspects``). At smoke
#: scale the first stage is a screen of 10-20 pairs that can seldom say `same`, so only a
#: lean beyond the threshold is measured again, of inconclusive leans only those towards
#: slower (an unproven speedup fails no gate), and a confirmation goes on at most 20 s; at
#: default and full scale the first stage has the pairs to say `same` on a steady machine,
#: and a regression it could not rule out is measured again.
BUDGETS = {
    "smoke": ScaleBudget(10, 20, 20.0, 20.0, "leaning-slower"),
    "default": ScaleBudget(12, 480, 60.0, 300.0, "undecided"),
    "full": ScaleBudget(16, 960, 180.0, 900.0, "undecided"),
}


def scale_of(pytest_args: Sequence[str]) -> str:
    """The ``--perf-scale`` among the pytest arguments (default ``default``)."""
    scale = "default"
    for i, arg in enumerate(pytest_args):
        if arg.startswith("--perf-scale="):
            scale = arg.split("=", 1)[1]
        elif arg == "--perf-scale" and i + 1 < len(pytest_args):
            scale = pytest_args[i + 1]
    if scale not in BUDGETS:
        raise PerfsuiteError(f"--perf-scale {scale!r}: expected one of {', '.join(BUDGETS)}")
    return scale


def budget_for(args: argparse.Namespace, scale: str) -> Budget:
    from perfsuite.verdict.paired import PAIRED_ALPHA, Budget
    from perfsuite.verdict.signtest import min_pairs_for

    defaults = BUDGETS[scale]
    min_pairs = args.min_pairs or defaults.min_pairs
    max_pairs = args.max_pairs or max(defaults.max_pairs, min_pairs)
    if max_pairs < min_pairs:
        raise PerfsuiteError(f"--max-pairs {max_pairs} is below --min-pairs {min_pairs}")
    budget = Budget(min_pairs, max_pairs, args.max_seconds or defaults.max_seconds)
    needed = min_pairs_for(budget.alpha_per_look)
    # A larger --max-pairs adds looks, each with a lower level: a first look below what
    # that level can decide is a look for nothing. Starting later moves every look and
    # so the level, which may then need a pair more: raise until the first look can.
    while budget.min_pairs < needed <= max_pairs:
        budget = replace(budget, min_pairs=needed)
        needed = min_pairs_for(budget.alpha_per_look)
    if max_pairs < needed:
        raise PerfsuiteError(
            f"--max-pairs {max_pairs}: no verdict is possible below {needed} pairs "
            f"(alpha {PAIRED_ALPHA} over {len(budget.looks)} looks); raise --max-pairs"
        )
    return budget


#: a fresh pair alternates each bench at least this long, and for at most this many
#: times ``min_pairs`` pairs of blocks (:func:`session_budget`)
SESSION_SECONDS = 4.0
SESSION_PAIRS_FACTOR = 4


def session_budget(budget: Budget, only: Sequence[str] | None) -> Budget:
    """The budget of one pair of processes' lockstep session.

    The first pair of processes (``only`` None) is judged on its own and gets the whole
    budget. A fresh pair over ``only`` these benches (a pass's check, a suspect's
    confirmation) gives the median of its paired log-ratios, as one estimate among
    pairs of processes, so its own interval is never decisive: it runs ``min_pairs``
    pairs of blocks, more while it has alternated for less than ``SESSION_SECONDS`` (up
    to ``SESSION_PAIRS_FACTOR`` times as many), and fewer when its seconds run out. A
    bench of cheap rounds whose blocks scatter by memory layout then gives each pair of
    processes an estimate whose own noise does not drown the offsets between pairs that
    the t interval across them is for; a bench of slow rounds stays at ``min_pairs``."""
    if only is None:
        return budget
    most = min(budget.max_pairs, SESSION_PAIRS_FACTOR * budget.min_pairs)
    return replace(budget, max_pairs=most, least_seconds=SESSION_SECONDS)


def confirmation_for(args: argparse.Namespace, scale: str) -> ScaleBudget:
    """``scale``'s budget with the ``--confirm-seconds`` (the seconds a bench file's
    confirmation may go on, counted from its first pair) and ``--suspects`` in ``args``."""
    given = {"confirm_seconds": args.confirm_seconds, "suspects": args.suspects}
    return replace(BUDGETS[scale], **{k: v for k, v in given.items() if v is not None})


#: the share of the gated run's own seconds that its A/B's alternation may take
CONFIRM_SHARE = 0.5
#: the fewest seconds shared out to a gate's A/B
MIN_SHARE = 30.0
#: the fewest seconds a suspect is given to alternate
MIN_BENCH_SECONDS = 10.0
#: the fewest seconds a bench file is given to confirm
MIN_FILE_SECONDS = 20.0
#: the fewest seconds shared out to an A/B that decides benches the screen left too
#: noisy: it is their only evidence, however short the gated run was
DECIDE_SECONDS = 120.0
#: what a gate's A/B measures again in fresh pairs of processes (``--suspects``): a first
#: pair that is decisive or leans slower, as the gate asks whether a suspect regressed
#: and one read within the threshold has not shown it did (``not shown``, it passes)
GATE_SUSPECTS = "leaning-slower"
#: what the gate's A/B of benches whose code changed measures again: any undecided first
#: pair, as one pair of processes can read a real slowdown within the threshold
CHANGED_SUSPECTS = "undecided"
#: the fewest seconds a bench file confirms ``CHANGED_SUSPECTS`` (changed code, or benches
#: the screen could not decide): a regression missed there ships, and the first look's 3
#: pairs of processes decide only one whose pairs agree; 60 s lets 5-s pairs reach 12
CHANGED_FILE_SECONDS = 60.0


def gate_args(
    ab_args: Sequence[str],
    nodeids: Sequence[str],
    seconds: float,
    scale: str,
    suspects: str = GATE_SUSPECTS,
    *,
    screen_decided_none: bool = False,
) -> list[str]:
    """``ab_args``, with ``--max-seconds`` (a bench's alternation) and
    ``--confirm-seconds`` (a bench file's confirmation) for a gate's A/B of
    ``nodeids``: shared out of ``CONFIRM_SHARE`` of ``seconds`` (the gated run's own),
    never less than ``MIN_SHARE``; each at most its ``scale``'s default and at least
    ``MIN_BENCH_SECONDS`` or ``MIN_FILE_SECONDS`` (``CHANGED_FILE_SECONDS`` where
    ``suspects`` is ``CHANGED_SUSPECTS``); and ``--suspects=SUSPECTS``. An option
    ``ab_args`` already sets is kept. Changed code's first stage only sorts out the
    benches it can decide (every other is judged on fresh pairs alone): it shares half,
    each bench at least a fresh pair's ``SESSION_SECONDS``. An A/B that decides benches
    the screen left too noisy (``screen_decided_none``) shares at least
    ``DECIDE_SECONDS``, so that a suite of a few cheap benches gets a verdict.

    >>> gate_args([], ["a.py::x", "a.py::y", "b.py::z"], 300, "default")
    ['--max-seconds=50', '--confirm-seconds=75', '--suspects=leaning-slower']
    >>> gate_args(["--max-seconds", "5"], ["a.py::x"], 30, "default")
    ['--max-seconds', '5', '--confirm-seconds=30', '--suspects=leaning-slower']
    >>> gate_args([], ["a.py::x", "b.py::y"], 6, "default", "undecided", screen_decided_none=True)
    ['--max-seconds=60', '--confirm-seconds=60', '--suspects=undecided']
    >>> gate_args([], ["a.py::x", "a.py::y", "b.py::z"], 60, "default", "undecided")
    ['--max-seconds=5', '--confirm-seconds=60', '--suspects=undecided']
    """
    caps = BUDGETS[scale]
    files = {nodeid.split("::", 1)[0] for nodeid in nodeids}
    share = max(seconds * CONFIRM_SHARE, MIN_SHARE, DECIDE_SECONDS if screen_decided_none else 0.0)
    sorting = suspects == CHANGED_SUSPECTS and not screen_decided_none
    first = share / 2 if sorting else share
    least = SESSION_SECONDS if sorting else MIN_BENCH_SECONDS
    bench = max(least, min(caps.max_seconds, first / max(len(nodeids), 1)))
    floor = CHANGED_FILE_SECONDS if suspects == CHANGED_SUSPECTS else MIN_FILE_SECONDS
    file = max(floor, min(caps.confirm_seconds, share / max(len(files), 1)))
    wanted = {
        "--max-seconds": f"{bench:.0f}",
        "--confirm-seconds": f"{file:.0f}",
        "--suspects": suspects,
    }
    given = {arg.split("=", 1)[0] for arg in ab_args}
    return [*ab_args, *(f"{k}={v}" for k, v in wanted.items() if k not in given)]
