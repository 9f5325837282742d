"""``perfsuite ab BASE [CANDIDATE] [options] [-- PYTEST_ARGS]``: the command line entry.

Its exit statuses are those of :mod:`perfsuite.exitcodes`, as the parser's description
(:mod:`perfsuite.ab.parser`) lists them, and 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from perfsuite.ab.budget import budget_for, confirmation_for, scale_of
from perfsuite.errors import CannotMeasure, PerfsuiteError
from perfsuite.exitcodes import ExitCode, terminate_as_interrupt

#: most fresh pairs of processes that measure a suspect again (``--confirm``), looked
#: at after 3, 6 and 12 (perfsuite.ab.confirm)
DEFAULT_CONFIRM = 12


def selection(root: Path, pytest_args: Sequence[str], own: bool, here: Path) -> list[str]:
    """What both sides run, started in ``here``: the given pytest arguments, where they
    name paths of their own (``own``); else the default before them: where ``here`` is
    under a pytest configuration file of a subfolder (``proj/tox.ini``), the default of
    a pytest started there (its ``testpaths``, else its folder); else benches/ where the
    root has one, else pytest's own default from the root (the ``testpaths`` of its
    configuration, else the root), which pytest finds by itself when started there and
    is named from ``here`` otherwise."""
    from perfsuite.ab.rootdir import config_file, default_paths

    if own:
        return list(pytest_args)
    found = config_file(here, root, [])
    if found is not None and found.parent.resolve() != root.resolve():
        default = default_paths(found.parent)
    elif (root / "benches").is_dir():
        default = [root / "benches"]
    elif here == root:
        return list(pytest_args)
    else:
        default = default_paths(root)
    return [*(os.path.relpath(path, here) for path in default), *pytest_args]


#: pytest options lockstep cannot honour, and why: those that spread a session over
#: worker processes, and a rootdir of the user's (see :mod:`perfsuite.ab.rootdir`)
REFUSED = {
    **dict.fromkeys(
        ("-n", "--numprocesses", "--dist", "--tx"),
        "each side of perfsuite ab is one pytest process (blocks alternate between the two)",
    ),
    "--rootdir": "perfsuite ab roots each side's pytest at its own checkout, so node ids "
    "are repository-relative on both sides",
}


def side_args(pytest_args: Sequence[str], threshold: float) -> list[str]:
    """Both sides' pytest arguments; options lockstep cannot honour raise one line."""
    for arg in pytest_args:
        glued = arg.startswith("-n") and (arg[2:].isdigit() or arg[2:] in ("auto", "logical"))
        why = REFUSED.get("-n" if glued else arg.split("=", 1)[0])
        if why is not None:
            raise PerfsuiteError(f"pytest option {arg!r}: {why}; drop it")
    # no xdist option: a configuration may block xdist (-p no:xdist), and each side turns
    # an -n of the user's addopts off itself (perfsuite.ab.remote.one_process)
    args = ["-p", "no:cacheprovider", *pytest_args]
    if not any(a == "--perf-threshold" or a.startswith("--perf-threshold=") for a in args):
        args.append(f"--perf-threshold={threshold}")
    return args


def run(args: argparse.Namespace, pytest_args: list[str]) -> int:
    """``perfsuite ab`` with its parsed arguments and the pytest arguments after ``--``
    (:func:`perfsuite.cli.split_argv`); returns the exit status (messages on stdout,
    errors on stderr)."""
    measurable = True
    try:
        with terminate_as_interrupt():
            status = _run(args, pytest_args)
    except KeyboardInterrupt:
        print("perfsuite ab: interrupted; both sides stopped", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except (PerfsuiteError, OSError) as exc:
        print(f"perfsuite ab: error: {exc}", file=sys.stderr)
        status, measurable = ExitCode.BAD_INPUT, not isinstance(exc, CannotMeasure)
    return bisect_status(status, measurable) if args.bisect_exit else status


def bisect_status(status: int, measurable: bool = True) -> int:
    """``--bisect-exit``: the status ``git bisect run`` reads (good 0, bad 1, skip 125 for
    a verdict that decided nothing or a revision that cannot be measured here, and 128,
    which stops the bisection, for bad input).

    >>> [int(bisect_status(s)) for s in (0, 1, 3, 2)], int(bisect_status(2, measurable=False))
    ([0, 1, 125, 128], 125)
    """
    if status == ExitCode.BAD_INPUT:
        return ExitCode.BISECT_SKIP if not measurable else ExitCode.BISECT_ABORT
    if status == ExitCode.NOT_JUDGED:
        return ExitCode.BISECT_SKIP
    return status


def _run(args: argparse.Namespace, pytest_args: list[str]) -> int:
    from perfsuite.ab.confirm import follow_up
    from perfsuite.ab.controller import Controller
    from perfsuite.ab.isolate import sessions
    from perfsuite.ab.load import MACHINE_JSON, measured, snapshot
    from perfsuite.ab.process_pairs import ProcessPairs, key
    from perfsuite.ab.pytest_args import names_paths
    from perfsuite.ab.report import check_report_dir, write_report
    from perfsuite.ab.revisions import WorktreeCache, repo_root, resolve, tree_files
    from perfsuite.ab.sidespec import (
        SideSpec,
        check_sides,
        in_own_environments,
        peered,
        resolve_sides,
    )
    from perfsuite.ab.verdicts import Verdicts
    from perfsuite.ab.workdir import run_folder, scratch_parent, sweep
    from perfsuite.envs.build import changes, changes_text
    from perfsuite.envs.build import clean as clean_environments
    from perfsuite.envs.pins import pin_difference, read_pins

    root = repo_root(Path.cwd())
    cache = WorktreeCache(root, args.cache_dir)
    if args.clean:
        removed = cache.clean()
        print(f"perfsuite ab: removed {len(removed)} cached worktree(s) from {cache.folder}")
        environments = clean_environments()
        if environments:
            print(f"perfsuite ab: removed {environments} environment(s) built from pins")
        swept = sweep(scratch_parent())
        if swept:
            where = swept[0].parent
            print(f"perfsuite ab: removed {len(swept)} folder(s) of killed runs from {where}")
        return ExitCode.OK
    if args.base is None:
        raise PerfsuiteError("BASE is required: perfsuite ab BASE [CANDIDATE] [-- PYTEST_ARGS]")
    base, candidate = resolve(root, args.base), resolve(root, args.candidate)
    pins = [read_pins(tree_files(root, rev.sha), rev.label) for rev in (base, candidate)]
    problem = pin_difference(pins[0], pins[1], base.label, candidate.label)
    if problem and args.env == "shared":
        raise CannotMeasure(
            f"{problem}; --env shared runs both sides in this environment: drop it, and "
            "each side runs in an environment of its own pins"
        )
    own_envs = args.env == "per-side" or (args.env == "auto" and problem is not None)
    if args.confirm == 1:
        raise PerfsuiteError(
            "--confirm 1: a confirmation is judged across pairs of processes and needs "
            "at least 2; use --confirm 0 to turn it off"
        )
    if args.report is not None:
        check_report_dir(args.report)
    scale = scale_of(pytest_args)
    budget = budget_for(args, scale)
    confirmation = confirmation_for(args, scale)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    start = snapshot()
    # PYTEST_ARGS name paths from where perfsuite ab was started; the default from the root
    here = Path.cwd().resolve()
    own = names_paths(pytest_args, here, root)
    chosen = selection(root.resolve(), pytest_args, own, here if pytest_args else root.resolve())
    subdir = here.relative_to(root.resolve()) if pytest_args else Path()
    with contextlib.ExitStack() as stack:
        checkout: dict[str | None, Path] = {None: root}  # the working tree runs in the root
        for sha in dict.fromkeys(rev.sha for rev in (base, candidate) if rev.sha is not None):
            checkout[sha] = stack.enter_context(cache.checkout(sha))
        specs = peered(
            [
                SideSpec("A", base, checkout[base.sha], subdir),
                SideSpec("B", candidate, checkout[candidate.sha], subdir),
            ]
        )
        check_sides(specs, chosen)
        workdir = stack.enter_context(run_folder())
        resolved = resolve_sides(specs, pins, workdir) if own_envs else []
        upgrade = changes(resolved[0], resolved[1]) if resolved else []
        differs = ""
        if resolved:
            differs = f"; pins differ: {changes_text(upgrade)}"
            differs += " (each side in an environment of its own pins)"
        pair_counts = f"{budget.min_pairs}-{budget.max_pairs}"  # the first pair's budget
        default = ["(its default: testpaths, else the root)"]
        default = default if chosen == pytest_args and not own else []
        blocks = f"{args.block_rounds or '1- or 2'}-round blocks"
        if budget.min_pairs == budget.max_pairs:
            pair_counts = str(budget.min_pairs)
        print(
            f"perfsuite ab: A = {base.label}, B = {candidate.label}{differs}; "
            f"pytest {' '.join([shlex.join(chosen), *default]).strip()}; "
            f"seed {seed}; budget {pair_counts} pairs of {blocks}, "
            f"{budget.max_seconds:g} s per bench",
            flush=True,
        )
        env_lines: list[str] = []
        if resolved:
            specs, env_lines = in_own_environments(specs, resolved, upgrade, workdir)
        args_for_sides = side_args(chosen, args.threshold)
        groups = [None] if args.isolate == "session" else sessions(specs, args_for_sides, workdir)
        if len(groups) > 1:
            print(
                f"perfsuite ab: {len(groups)} bench file(s), each in its own pair of processes",
                flush=True,
            )

        lockstep = functools.partial(
            Controller,
            budget=budget,
            threshold=args.threshold,
            block_rounds=args.block_rounds,
            drain_rounds=args.block_warmup,
            idle=args.idle,
        )
        pairs = ProcessPairs(stack, specs, workdir, args_for_sides, seed, lockstep)
        verdicts = Verdicts.merge(pairs.series([key(files, 0) for files in groups]))
        for line in verdicts.resolution_lines():
            print(f"perfsuite ab: {line}", flush=True)
        if args.confirm:  # one pair of processes said each verdict so far
            verdicts = follow_up(
                pairs,
                verdicts,
                groups == [None],  # whole: one pair of processes over the whole selection
                confirmation.suspects,
                args.confirm,
                confirmation.confirm_seconds,
                budget.min_pairs,
                args.spread or {},
            )
            for line in verdicts.resolution_lines(across=True):
                print(f"perfsuite ab: {line}", flush=True)
        print("\n".join(verdicts.text_lines()))
        load = measured(start)
        load_lines = [load.line()] if load else []
        for line in load_lines:
            print(f"perfsuite ab: {line}")
        notes = [*env_lines, *load_lines]
        if args.report is not None:
            machine = {MACHINE_JSON: load.to_json()} if load else {}
            write_report(args.report, verdicts, pairs.jsons, pairs.logs, notes, machine)
            print(f"perfsuite ab: report in {args.report}")
        if verdicts.regressed:
            return ExitCode.REGRESSION
        return ExitCode.NOT_JUDGED if verdicts.not_judged() is not None else ExitCode.OK
