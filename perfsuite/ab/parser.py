"""The ``perfsuite ab`` command line: its arguments and their checks."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from perfsuite.ab.budget import SUSPECT_KINDS
from perfsuite.ab.command import DEFAULT_CONFIRM
from perfsuite.ab.protocol import IDLE_MODES
from perfsuite.options import parse_count, parse_seconds, parse_spreads, parse_threshold


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``ab`` subcommand's arguments."""
    ab = commands.add_parser(
        "ab",
        help="interleaved same-session A/B of two git revisions; exit 1 on a regression",
        description="Run the benches of BASE and CANDIDATE (default: the working tree) in "
        "two warm pytest processes, alternating blocks of rounds, and judge each bench on "
        "its paired ratios. Arguments after -- go to both pytest runs, each rooted at its "
        "checkout; with no path among them, the default runs: under a subfolder's own "
        "pytest configuration, pytest's default there; else the repository root's: "
        "benches/ if it exists, else pytest's default there (its testpaths, else the "
        "root). Exit status: 0 no regression (each bench judged at its threshold or bounded "
        "under twice it), 1 regression, 2 bad input or a side fault, 3 undecided (nothing "
        "measured, or a bench too noisy).",
    )
    ab.add_argument("base", metavar="BASE", nargs="?", help="git revision of the baseline")
    ab.add_argument(
        "candidate", metavar="CANDIDATE", nargs="?", help="git revision (default: working tree)"
    )
    ab.add_argument(
        "--threshold",
        type=parse_threshold,
        default=0.05,
        metavar="FRACTION",
        help="minimum change that counts (default 0.05; perf markers win)",
    )
    ab.add_argument(
        "--block-rounds",
        type=parse_count,
        metavar="K",
        help="timed rounds per block (default 2, or 1 when a block starts with no untimed round)",
    )
    ab.add_argument(
        "--block-warmup",
        type=functools.partial(parse_count, least=0),
        metavar="N",
        help="least untimed rounds starting each block (default 1; 0 for a "
        "bench timed by pytest-benchmark's benchmark fixture under --idle "
        "freeze); more while a pipeline empties what it prefetched",
    )
    ab.add_argument(
        "--min-pairs",
        type=parse_count,
        metavar="N",
        help="first look at a bench, and all a session judged across pairs "
        "of processes runs (default by --perf-scale: 10/12/16; raised to the "
        "fewest pairs that can decide)",
    )
    ab.add_argument(
        "--max-pairs",
        type=parse_count,
        metavar="N",
        help="most pairs per bench (default by --perf-scale: 20/480/960)",
    )
    ab.add_argument(
        "--max-seconds",
        type=parse_seconds,
        metavar="S",
        help="time budget per bench (default by --perf-scale: 20/60/180)",
    )
    ab.add_argument("--seed", type=int, help="seed of the block order (default: random)")
    ab.add_argument(
        "--confirm",
        type=functools.partial(parse_count, least=0),
        default=DEFAULT_CONFIRM,
        metavar="N",
        help="after the first pair of processes, check each pass in one fresh pair and "
        "measure each suspect (--suspects) again in up to N, judged on those alone, "
        f"looking after 3, 6, 12, ... pairs (default {DEFAULT_CONFIRM}); 0 turns both off "
        "(a verdict then rests on one pair, whose lasting offset can read as a change)",
    )
    ab.add_argument(
        "--suspects",
        choices=SUSPECT_KINDS,
        help="what --confirm measures again: leaning (slower or faster, or inconclusive "
        "beyond the threshold with pairs leaning that way); leaning-slower (those, but an "
        "inconclusive one only when it leans slower); or undecided (leaning, and any "
        "regression the first pair could not rule out); default by --perf-scale: smoke "
        "leaning-slower, default and full undecided",
    )
    ab.add_argument(
        "--confirm-seconds",
        type=parse_seconds,
        metavar="S",
        help="the seconds a bench file's confirmation spends from its first fresh pair "
        "of processes, on the suspects nearest a decision (at the first look, those the "
        "first pair read most surely slower first; the rest are not measured again); then "
        "the look due is taken on the pairs so far (default by --perf-scale: smoke 20, "
        "default 300, full 900)",
    )
    ab.add_argument(
        "--spread",
        type=parse_spreads,
        metavar="FILE",
        help="JSON of node ids to their log-ratio's spread across unchanged runs, or to "
        "[spread, screen] (the time's log-ratio over BASE's that a gated run read, slower "
        "positive): the first look ranks a bench no surer than its change or the screen's over "
        "it, leaving out one --confirm pairs could not decide at half that spread",
    )
    ab.add_argument(
        "--idle",
        choices=IDLE_MODES,
        default="freeze",
        help="freeze (default): the idle side and the processes it started "
        "are stopped (SIGSTOP) during the other side's block, so its threads "
        "neither compete nor refill its buffers; wait: it runs on, and each "
        "block waits until it is quiet (at most 1 s)",
    )
    ab.add_argument(
        "--isolate",
        choices=["file", "session"],
        default="file",
        help="file (default): each bench file in its own pair of processes, so "
        "no file's imports slow another's benches; session: one pair for all "
        "(faster to start)",
    )
    ab.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="write summary.md, a PNG per bench and both sides' JSON",
    )
    ab.add_argument(
        "--env",
        choices=["auto", "shared", "per-side"],
        default="auto",
        help="auto (default): both sides in this environment, unless their pins differ "
        "(requirements*.txt, constraints*.txt, pyproject.toml; [tool.perfsuite.env] "
        "narrows them): then each side in an environment built by uv from its own pins, "
        "cached by the resolved pins; per-side: always so; shared: never (differing pins "
        "are refused)",
    )
    ab.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="worktree cache (default: $XDG_CACHE_HOME/perfsuite/ab)",
    )
    ab.add_argument(
        "--bisect-exit",
        action="store_true",
        help="exit as git bisect run reads it: 0 good, 1 bad, 125 undecided or a revision "
        "that cannot be measured (skip), 128 bad input (stop)",
    )
    ab.add_argument(
        "--clean",
        action="store_true",
        help="remove this repository's cached worktrees, the environments "
        "built from pins and the scratch folders of killed runs, and exit",
    )
