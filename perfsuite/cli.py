"""The ``perfsuite`` console script: judge and report saved runs outside pytest.

``perfsuite compare BASELINE CURRENT`` prints the same verdict table as
``pytest --benchmark-compare`` and exits with

* 0: no bench slower and no exact counter rose,
* 1: a regression (a bench slower, or an exact counter rose),
* 2: bad input (a file that is not a pytest-benchmark run, a run id that does not exist),
* 3: nothing could be judged: the runs come from different machines or stacks
  (``--allow-machine-mismatch`` judges them anyway), or no bench was judged (another
  ``--perf-scale`` or ``--perf-images`` folder, an empty baseline, timings all zero, too
  few raw samples to decide any bench).

Every perfsuite command shares these statuses (:mod:`perfsuite.exitcodes`).

A bench's threshold: ``--threshold`` given on the command line wins over the thresholds
recorded per bench (from ``perf`` markers, ``--perf-threshold`` or ini), which win over
the default 5%. Medians that moved with too few raw samples for a rank test are shown
and never judged.

``perfsuite ab BASE [CANDIDATE] [-- PYTEST_ARGS]`` alternates the benches of two git
revisions in one session and judges them on paired ratios (see :mod:`perfsuite.ab`).

``perfsuite report --out DIR`` writes ``summary.md`` and PNG plots for the newest
saved run (or ``--current``) against the run before it (or ``--baseline``).
``perfsuite report --html DIR`` writes the dashboard, a static HTML site of every
bench's history (:mod:`perfsuite.dashboard`).

``perfsuite system`` shows what on this machine would make timings noisy
(:mod:`perfsuite.system`).

BASELINE, CURRENT, ``--baseline`` and ``--current`` are file paths or run ids/globs in
the storage (``0004``, ``0004_nightly``, ``Linux-CPython-3.11-64bit/0004``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perfsuite.errors import PerfsuiteError

if TYPE_CHECKING:
    from perfsuite.verdict.storage import Storage

from perfsuite.exitcodes import ExitCode

DEFAULT_STORAGE = ".benchmarks"


def _threshold(value: str) -> float:
    from perfsuite.options import parse_threshold

    return parse_threshold(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfsuite",
        description="Judge and report pytest-benchmark runs saved by perfsuite.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def storage_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--storage",
            default=DEFAULT_STORAGE,
            metavar="DIR",
            help="pytest-benchmark file storage where run ids are looked up "
            f"(file:// accepted; default: {DEFAULT_STORAGE})",
        )
        sub.add_argument(
            "--threshold",
            type=_threshold,
            default=None,
            metavar="FRACTION",
            help="minimum change of the median that counts, e.g. 0.05 or 5%%; given here "
            "it wins over the thresholds runs recorded per bench (perf markers, "
            "--perf-threshold, ini); without it those apply, else 0.05",
        )

    compare = commands.add_parser(
        "compare",
        help="judge CURRENT against BASELINE; exit 1 on a regression",
        description="Judge each bench of CURRENT against BASELINE. Exit status: 0 at "
        "least one bench judged and no regression, 1 regression, 2 bad input, 3 nothing "
        "judged (different machine or stack, or no bench comparable).",
    )
    compare.add_argument("baseline", metavar="BASELINE", help="run file or run id")
    compare.add_argument("current", metavar="CURRENT", help="run file or run id")
    storage_option(compare)
    compare.add_argument(
        "--allow-machine-mismatch",
        action="store_true",
        help="judge runs from different machines or stacks anyway",
    )
    compare.add_argument(
        "--markdown",
        action="store_true",
        help="print the table as Markdown (for $GITHUB_STEP_SUMMARY)",
    )

    from perfsuite.nightly.command import add_parsers as add_history_parsers

    add_history_parsers(commands)
    report = commands.add_parser(
        "report",
        help="write summary.md and PNG plots for a saved run, or the HTML dashboard",
        description="Write summary.md (verdict table, per-group throughput) and PNG "
        "plots (per-group throughput, per-bench history) into --out, and/or the "
        "dashboard (every bench's history as a static HTML site) into --html.",
    )
    storage_option(report)
    report.add_argument(
        "--baseline",
        metavar="RUN",
        help="run to judge against (default: the run saved before --current)",
    )
    report.add_argument(
        "--current", metavar="RUN", help="run to report (default: the newest saved run)"
    )
    report.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="folder to write summary.md and the PNGs into (created if missing)",
    )
    from perfsuite.dashboard.command import add_arguments as add_dashboard_arguments

    add_dashboard_arguments(report)
    from perfsuite.ab.parser import add_parser as add_ab_parser
    from perfsuite.bisect.command import add_parser as add_bisect_parser
    from perfsuite.prcomment import add_parser as add_comment_parser
    from perfsuite.results.command import add_parser as add_results_parser
    from perfsuite.system import add_parser as add_system_parser

    add_ab_parser(commands)
    add_bisect_parser(commands)
    add_results_parser(commands)
    add_comment_parser(commands)
    add_system_parser(commands)
    return parser


def _storage(args: argparse.Namespace) -> Storage:
    from perfsuite.verdict.storage import Storage

    return Storage.from_option(args.storage)


def _two_runs(baseline: Path | None, current: Path) -> None:
    """Refuse a comparison of a saved run with itself: it would judge nothing."""
    if baseline is not None and baseline.resolve() == current.resolve():
        raise PerfsuiteError(
            f"{baseline.name}: the baseline and the current run are the same file; "
            "name two different runs"
        )


def run_compare(args: argparse.Namespace) -> int:
    """``perfsuite compare BASELINE CURRENT``: the verdict table and the gate's exit status."""
    from perfsuite.verdict.compare import compare_runs
    from perfsuite.verdict.gate_rules import gate_decision
    from perfsuite.verdict.judge import DEFAULT_THRESHOLD, HISTORY_RUNS
    from perfsuite.verdict.table import markdown_lines, text_lines

    storage = _storage(args)
    baseline_path = storage.find(args.baseline)
    current_path = storage.find(args.current)
    _two_runs(baseline_path, current_path)
    baseline, current = storage.load(baseline_path), storage.load(current_path)
    # History: runs saved beside the current one before it (the noise band's input).
    earlier = storage.beside(current_path).before(current_path)
    comparison = compare_runs(
        baseline,
        current,
        DEFAULT_THRESHOLD,
        storage.load_all(earlier[-HISTORY_RUNS:]),
        threshold_override=args.threshold,
    )
    lines = markdown_lines(comparison) if args.markdown else text_lines(comparison)
    decision = gate_decision(
        comparison,
        args.allow_machine_mismatch,
        allow_flag="--allow-machine-mismatch",
        who="a comparison",
    )
    lines.append(f"perfsuite compare: {decision.outcome.value}: {decision.message}")
    print("\n".join(lines))
    return decision.exit_status


def run_report(args: argparse.Namespace) -> int:
    """``perfsuite report``: summary.md and plots for a run against the one before it
    (``--out``), and/or the dashboard (``--html``)."""
    if args.out is None and args.html is None:
        raise PerfsuiteError("give --out DIR (summary.md and PNGs) or --html DIR (the dashboard)")
    if args.html is None and (args.ab_report or args.nightly_report):
        raise PerfsuiteError(
            "--ab-report and --nightly-report go into the dashboard: add --html DIR"
        )
    if args.html is not None:
        from perfsuite.dashboard.command import run_html

        status = run_html(args)
        if args.out is None:
            return status
    from perfsuite.verdict.compare import compare_runs
    from perfsuite.verdict.judge import DEFAULT_THRESHOLD, HISTORY_RUNS
    from perfsuite.verdict.report import write_report
    from perfsuite.verdict.storage import check_storage_root

    storage = _storage(args)
    if args.current:
        current_path = storage.find(args.current)
    else:
        latest = storage.latest()
        if latest is None:
            check_storage_root(storage.root)
            raise PerfsuiteError(
                f"{storage.root}: no saved runs to report "
                "(save one with pytest --benchmark-autosave, or pass --current)"
            )
        current_path = latest
    current = storage.load(current_path)
    # History: the runs saved in the current run's machine folder, oldest first.
    folder = storage.beside(current_path)
    saved = folder.runs()
    position = next((i for i, p in enumerate(saved) if p.resolve() == current_path.resolve()), None)
    earlier = saved[:position] if position is not None else folder.before(current_path)
    notes: list[str] = []
    if args.baseline:
        baseline_path: Path | None = storage.find(args.baseline)
        _two_runs(baseline_path, current_path)
    else:
        baseline_path = earlier[-1] if earlier else None
        if baseline_path is None:
            notes.append(f"no run saved before {current_path.name}: nothing to compare yet")
    comparison = None
    if baseline_path is not None:
        comparison = compare_runs(
            storage.load(baseline_path),
            current,
            DEFAULT_THRESHOLD,
            folder.load_all(folder.before(current_path)[-HISTORY_RUNS:]),
            threshold_override=args.threshold,
        )
    # Oldest first, the current run in its place; one from outside the storage comes last.
    if position is None:
        history = [*folder.load_all(saved), current]
    else:
        history = [
            *folder.load_all(saved[:position]),
            current,
            *folder.load_all(saved[position + 1 :]),
        ]
    files = write_report(args.out, current, comparison, history, notes=notes)
    print(f"perfsuite report: wrote {len(files)} files into {args.out} (summary: {files[0]})")
    return ExitCode.OK


def run_history(args: argparse.Namespace) -> int:
    """``perfsuite history`` (perfsuite/nightly/command.py)."""
    from perfsuite.nightly import command

    return command.run_history(args)


def run_nightly(args: argparse.Namespace) -> int:
    """``perfsuite nightly`` (perfsuite/nightly/command.py)."""
    from perfsuite.nightly import command

    return command.run_nightly(args)


def run_comment(args: argparse.Namespace) -> int:
    """``perfsuite comment`` (perfsuite/prcomment.py)."""
    from perfsuite import prcomment

    return prcomment.run(args)


def run_results(args: argparse.Namespace) -> int:
    """``perfsuite results`` (perfsuite/results/command.py)."""
    from perfsuite.results import command

    return command.run(args)


def run_system(args: argparse.Namespace) -> int:
    """``perfsuite system`` (perfsuite/system.py)."""
    from perfsuite import system

    return system.run_system(args)


#: one function per subcommand; a new subcommand adds its parser in build_parser and a line here
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "compare": run_compare,
    "report": run_report,
    "history": run_history,
    "nightly": run_nightly,
    "results": run_results,
    "comment": run_comment,
    "system": run_system,
}


def _quiet_stdout_if_closed() -> None:
    """Once standard output's reader has gone (``perfsuite history | head``), send the
    rest to /dev/null, so the command finishes and exits with its verdict."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class _PipeSafe:
    """Standard output that a closed pipe does not stop (:func:`_quiet_stdout_if_closed`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _quiet_stdout_if_closed()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _quiet_stdout_if_closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(perfsuite's arguments, the pytest arguments after ``--``)."""
    args = list(argv)
    if "--" in args:
        cut = args.index("--")
        return args[:cut], args[cut + 1 :]
    return args, []


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``perfsuite`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not isinstance(sys.stdout, _PipeSafe) and _is_pipe(sys.stdout):
        sys.stdout = _PipeSafe(sys.stdout)
    parser = build_parser()
    if argv[:1] in (["ab"], ["bisect"]):  # their own -- PYTEST_ARGS tail
        from perfsuite.ab.command import run as run_ab
        from perfsuite.bisect.command import run as run_bisect

        own, pytest_args = split_argv(argv[1:])
        run_tail = run_ab if argv[0] == "ab" else run_bisect
        return run_tail(parser.parse_args([argv[0], *own]), pytest_args)
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:  # a child A/B (the nightly's) has been stopped
        print(f"perfsuite {args.command}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except (PerfsuiteError, OSError) as exc:
        print(f"perfsuite {args.command}: error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


def _is_pipe(stream: TextIO) -> bool:
    """Whether ``stream`` writes to a pipe (not a terminal, a file, or a test's capture)."""
    import stat

    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


if __name__ == "__main__":
    sys.exit(main())
