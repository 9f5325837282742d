"""``perfsuite history`` and ``perfsuite nightly``: the history of this machine's runs.

``perfsuite history [--storage URI] [-k EXPR] [--accept RUN]`` prints, per bench, its
median time and items/s in every saved run of this machine with the run's commit and
date, and its newest step. Exit status: 0 no failing step, 1 a regression step starts
after the last accepted run (see :mod:`perfsuite.verdict.history`), 2 bad input, 3 no
bench has enough runs for a step search. An unreadable saved run stops both commands
(exit 2), naming it: it sorts newest, so it may be tonight's.
``--accept RUN`` (a run id or a commit) records that run as accepted and exits 0.

``perfsuite nightly [--storage URI] [--report DIR] [--no-confirm] [-- PYTEST_ARGS]``
screens the newest saved run (:mod:`perfsuite.nightly.screen`), confirms the suspects
as the gate does (:mod:`perfsuite.suspects`: none when both runs are of one commit on
a clean tree, else ``perfsuite ab <base> <tonight's commit> --report DIR/ab --
PYTEST_ARGS -k <suspects>`` in a child process, the base being the run the suspects
were screened against) and exits 1 on a confirmed
regression or a risen exact counter, 2 on bad input or when ``perfsuite ab`` fails, 3
when tonight's run screened no bench or a suspect could not be confirmed (``--no-confirm``,
no commit to compare, or an A/B that could not decide), 0 otherwise
(:mod:`perfsuite.exitcodes`).
"""

from __future__ import annotations

import argparse
import math
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.nightly.keywords import keyword_expression, keyword_matcher, split_k

if TYPE_CHECKING:
    from perfsuite.bisect.command import Outcome as BisectOutcome
    from perfsuite.nightly.screen import Screening, Suspect
    from perfsuite.nightly.summary import Confirmation, Confirmations
    from perfsuite.verdict.commits import Commit
    from perfsuite.verdict.runs import Run


def _storage_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--storage",
        default=".benchmarks",
        metavar="URI",
        help="pytest-benchmark file storage (file:// accepted; default: .benchmarks)",
    )
    sub.add_argument(
        "--machine",
        metavar="ID",
        help="the machine folder to read (default: this machine's, as pytest-benchmark names it)",
    )


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``history`` and ``nightly`` on the ``perfsuite`` command line."""
    history = commands.add_parser(
        "history",
        help="each bench's medians over the saved runs and its steps; exit 1 on a "
        "regression step after the last accepted run",
        description="Per bench, the medians (and items/s) over the saved runs of this "
        "machine with commits and dates, and its newest step with its size and commit "
        "range. Exit status: 0 at least one bench searched and no failing step, 1 a "
        "regression step starts after the last accepted run, 2 bad input, 3 no bench has "
        "enough runs for a step search.",
    )
    _storage_options(history)
    history.add_argument("-k", dest="keyword", metavar="EXPR", help="only benches matching EXPR")
    history.add_argument(
        "--accept",
        metavar="RUN",
        help="accept the steps up to RUN (a run id like 0012 or a commit): record it in "
        "perfsuite-accepted.json in the storage and exit 0",
    )
    history.add_argument(
        "--series", action="store_true", help="print every run's figures, not only the steps"
    )
    nightly = commands.add_parser(
        "nightly",
        help="screen the newest run against the history, confirm suspects with perfsuite ab",
        description="Screen the newest saved run against the history of this machine; "
        "confirm the suspects with `perfsuite ab <base commit> <tonight's commit> -- "
        "PYTEST_ARGS -k <suspects>`. Exit status: 0 at least one bench screened and no "
        "regression (every suspect cleared), 1 a confirmed regression or a risen exact "
        "counter, 2 bad input or perfsuite ab failed, 3 no bench screened or a suspect "
        "left unconfirmed.",
    )
    _storage_options(nightly)
    nightly.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="write summary.md (and ab's report) here: a new or empty folder, or an "
        "earlier nightly report",
    )
    nightly.add_argument(
        "--no-confirm", action="store_true", help="list the suspects without running perfsuite ab"
    )
    nightly.add_argument(
        "--bisect-seconds",
        type=float,
        metavar="S",
        help="bisect a confirmed regression's commits to its culprit (perfsuite bisect), "
        "starting no A/B after S seconds (default: no limit; 0 or less: no bisection)",
    )
    nightly.add_argument(
        "pytest_args", nargs="*", metavar="PYTEST_ARGS", help="after --: passed to perfsuite ab"
    )


def _load_history(args: argparse.Namespace) -> tuple[Path, str, list[Run]]:
    """This machine's saved runs (``--machine`` picks another), in the storage's order."""
    from perfsuite.verdict.storage import (
        Storage,
        check_storage_root,
        storage_path,
        this_machine_id,
    )

    root = storage_path(args.storage)
    machine = args.machine or this_machine_id()
    folder = root / machine
    check_storage_root(root)
    if not folder.is_dir():
        others = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        hint = f" (machine folders: {', '.join(others)}; pick one with --machine)" if others else ""
        raise PerfsuiteError(f"{folder}: no saved runs of this machine{hint}")
    storage = Storage(root, machine)
    paths = storage.runs()
    if paths:  # an unreadable run sorts newest: say why, never judge an older one instead
        storage.load(paths[-1])
    runs = storage.load_all(paths)
    if not runs:
        raise PerfsuiteError(
            f"{folder}: no readable saved runs (save some with --benchmark-autosave)"
        )
    return root, machine, runs


def run_history(args: argparse.Namespace) -> int:
    from perfsuite.verdict.changepoint import MIN_POINTS
    from perfsuite.verdict.history import (
        accept,
        accepted_position,
        accepted_run,
        bench_histories,
        failing_steps,
        find_accept_target,
        format_point,
        steps_of,
    )

    root, machine, runs = _load_history(args)
    if args.accept:
        target = find_accept_target(runs, args.accept)
        accept(root, machine, target)
        print(f"perfsuite history: accepted the steps up to {target.name} on {machine}")
        return ExitCode.OK
    matches = keyword_matcher(args.keyword)
    record = accepted_run(root, machine)
    accepted = accepted_position(runs, record)
    failing_total = 0
    shown = 0
    searched = 0  # series long enough for a step search
    for series in bench_histories(runs):
        if not matches(series.fullname) and not matches(series.label):
            continue
        shown += 1
        searched += len(series.points) >= MIN_POINTS
        steps = steps_of(series)
        failing = failing_steps(steps, accepted)
        failing_total += len(failing)
        newest = steps[-1] if steps else None
        word = "none" if newest is None else newest.describe()
        if len(series.points) < MIN_POINTS:  # no step search ran: never "none"
            word = f"not searched (a step search needs {MIN_POINTS} runs)"
        elif newest is not None:
            word += ": REGRESSION" if newest.regression else ""
            word += "" if newest in failing or not newest.regression else " (accepted)"
        latest = series.points[-1]
        rate = f", {latest.rate:,.1f} {series.unit}/s" if latest.rate else ""
        print(
            f"{series.label}: {_runs(len(series.points))}, newest {latest.median * 1000:.3f} ms"
            f"{rate}; newest step: {word}"
        )
        for step in failing:
            if step is not newest:
                print(f"  also failing: {step.describe()}")
        if args.series:
            for point in series.points:
                print(format_point(point, series.unit))
    if shown == 0:
        raise PerfsuiteError(f"-k {args.keyword!r}: no saved bench matches")
    left = left_out(runs)
    if left:
        print(left)
    note = f"accepted up to {record['run']}" if record else "nothing accepted yet"
    if failing_total:
        print(
            f"perfsuite history: {failing_total} regression step{'s' if failing_total > 1 else ''} "
            "after the last accepted run "
            f"({note}); accept a known change with perfsuite history --accept RUN"
        )
        return ExitCode.REGRESSION
    if searched == 0:
        print(
            f"perfsuite history: NOTHING JUDGED: no bench has the {MIN_POINTS} comparable "
            f"runs a step search needs ({note}); save more runs"
        )
        return ExitCode.NOT_JUDGED
    print(f"perfsuite history: no regression step in {searched} bench(es) ({note})")
    return ExitCode.OK


def _runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def left_out(runs: Sequence[Run]) -> str | None:
    """The line saying which of ``runs`` (oldest first) the history leaves out for
    being of another machine or stack than the newest run, or None."""
    from perfsuite.verdict.machine import machine_mismatch

    newest = runs[-1]
    other = [(run, machine_mismatch(run, newest)) for run in runs[:-1]]
    other = [(run, found) for run, found in other if found]
    if not other:
        return None
    run, found = other[-1]
    return (
        f"perfsuite history: left out {len(other)} saved run(s) of another machine or stack "
        f"than the newest run's (the newest of them, {run.name}: {found[0]}); "
        "a series holds only runs comparable with its newest"
    )


def confirm_tonight(
    screening: Screening, pytest_args: Sequence[str], report: Path, ab_command: Sequence[str]
) -> Confirmations:
    """Tonight's suspects decided by the gate's rule and child run
    (:mod:`perfsuite.suspects`), one group at a time
    (:attr:`perfsuite.nightly.screen.Screening.groups`): those screened against one run
    are confirmed from its commit, so no A/B holds another suspect's step, and each part
    says what it made of each of its suspects
    (:func:`perfsuite.nightly.summary.suspect_outcome`). Its report
    goes to ``report``; with several groups, to ``report``'s name followed by the run's
    number (``ab-0041``)."""
    from perfsuite.nightly.summary import Confirmations, suspect_outcome

    groups = screening.groups
    parts = []
    for previous, suspects in groups:
        folder = report
        if len(groups) > 1:
            folder = report.with_name(f"{report.name}-{previous.name.split('_')[0]}")
        part = _confirm_group(
            previous, suspects, screening.tonight, pytest_args, folder, ab_command
        )
        found = tuple((s.label, suspect_outcome(s, part)) for s in suspects)
        parts.append(replace(part, outcomes=found))
    return Confirmations(tuple(parts))


def _confirm_group(
    previous: Run,
    suspects: Sequence[Suspect],
    tonight: Run,
    pytest_args: Sequence[str],
    report: Path,
    ab_command: Sequence[str],
) -> Confirmation:
    """``suspects``, screened against ``previous``: not confirmed without its commit,
    the machine's move on one commit and a clean tree or where none of the suspects' code
    or data differs between that commit and tonight's (:mod:`perfsuite.changed`), else
    ``perfsuite ab`` of that commit against tonight's run's commit (``HEAD`` where
    tonight's run has none; its output on this process's), its first look ranked by
    each suspect's spread over the runs before tonight and its move from ``previous``
    to tonight (``--spread``)."""
    from perfsuite.changed import changed_benches, untracked_code, untracked_line
    from perfsuite.nightly.screen import base_point
    from perfsuite.nightly.summary import Confirmation
    from perfsuite.suspects import run_ab
    from perfsuite.verdict.commits import Commit, machine_move, same_code
    from perfsuite.verdict.judge import HISTORY_RUNS, pair_spread

    part = Confirmation(base=previous.name, suspects=tuple(s.label for s in suspects))
    base = Commit.of(previous.commit_info)
    if base.sha is None:
        return replace(part, skipped="the baseline run has no commit id (saved outside git)")
    if same_code(base, Commit.of(tonight.commit_info)):
        untracked = untracked_code(Path.cwd())
        if untracked:  # an A/B of HEAD against itself would not see them either
            why = f"{untracked_line(untracked)}; commit them, or run on a clean checkout"
            return replace(part, skipped=why)
        return replace(part, skipped=machine_move(base).text, machine=True)
    rest, user_k = split_k(pytest_args)
    selection = [*rest, "-k", keyword_expression(suspects, user_k)]
    candidate, why_not = _candidate(Commit.of(tonight.commit_info), base.sha)
    if why_not is not None:
        return replace(part, skipped=why_not)
    nodeids = [s.series.fullname for s in suspects]
    changes = None if base.dirty else changed_benches(nodeids, Path.cwd(), base.sha, candidate)
    untouched = changes is not None and changes.untouched.issuperset(nodeids)
    if changes is not None and untouched and not untracked_code(Path.cwd()):
        return replace(part, skipped=machine_move(base, changes.files).text, machine=True)
    print(
        f"perfsuite nightly: {len(suspects)} suspect(s); confirming in an A/B of "
        f"{base.sha[:12]} ({part.base}) against "
        f"{candidate[:12] if candidate else 'the working tree'} ({tonight.name})",
        flush=True,
    )
    revisions = (candidate,) if candidate else ()

    def moved(suspect: Suspect) -> float | None:
        """The log-ratio of ``suspect``'s median tonight over that of the run its A/B
        starts at (:func:`~perfsuite.nightly.screen.base_point`, ``previous``)."""
        base = base_point(suspect).median
        return math.log(suspect.series.points[-1].median / base) if base > 0 else None

    spreads = {  # each over the runs before tonight
        s.series.fullname: (spread, moved(s))
        for s in suspects
        if (spread := pair_spread(s.series.medians[-HISTORY_RUNS - 1 : -1]))
    }
    ab = run_ab(base, [], selection, Path.cwd(), report, None, revisions, ab_command, None, spreads)
    summary_file = report / "summary.md"
    summary = summary_file.read_text(encoding="utf-8") if summary_file.is_file() else ""
    return replace(
        part,
        ab=ab,
        summary=summary,
        base_sha=base.sha,
        candidate=candidate,
        selection=tuple(selection),
    )


def bisect_tonight(
    confirmation: Confirmations, folder: Path, seconds: float | None
) -> BisectOutcome | str:
    """The culprit of tonight's first confirmed regression, bisected between the base
    run's commit and tonight's (:mod:`perfsuite.bisect`) within ``seconds``; or why
    there is none to look for."""
    from perfsuite.bisect.command import Settings, bisect, first_parent_range, resolve

    part = next(p for p in confirmation.parts if p.confirmed)
    if part.base_sha is None:
        return "no commit of the base run to bisect from"
    root = Path.cwd()
    tonight = part.candidate or "HEAD"
    try:
        commits = first_parent_range(root, resolve(root, part.base_sha), resolve(root, tonight))
        if len(commits) == 1:
            return f"one commit in the range: {commits[0][:10]} is the culprit"
        print(f"perfsuite nightly: bisecting {len(commits)} commits to the culprit", flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        settings = Settings(part.selection, budget=seconds)
        found = bisect(root, part.base_sha, tonight, settings, folder, confirmed=part.ab)
    except PerfsuiteError as exc:
        return f"could not bisect: {exc}"
    for line in found.lines:
        print(f"perfsuite nightly: {line}", flush=True)
    return found


def _candidate(tonight: Commit, base: str) -> tuple[str | None, str | None]:
    """(the revision an A/B measures as tonight's, None for the working tree; or why
    none can be). A run taken on uncommitted changes is measured as the working tree,
    where ``HEAD`` is still its commit; otherwise no revision holds what it measured."""
    from perfsuite.changed import git_lines

    if not tonight.dirty:
        return tonight.sha or "HEAD", None
    found = git_lines(Path.cwd(), "rev-parse", "HEAD")
    head = found[0] if found else None
    if tonight.sha is not None and head == tonight.sha:
        return None, None
    return None, (
        f"tonight's run measured uncommitted changes to {(tonight.sha or '?')[:12]}, which "
        f"no revision here holds (HEAD is {(head or 'unknown')[:12]}): check that tree out "
        f"and run perfsuite ab {base[:12]}"
    )


def _nightly_entry(entry: Path) -> bool:
    """Whether a top-level entry of a folder is one a nightly report writes: its
    ``summary.md`` (which starts with the report's heading), its A/B reports' folders
    (``ab``, ``ab-<run>``) and its bisection's (``bisect``)."""
    from perfsuite.nightly.summary import HEADING

    if entry.is_symlink():
        return False
    if entry.name == "summary.md":
        return entry.is_file() and _starts_with(entry, HEADING)
    own = entry.name in ("ab", "bisect") or entry.name.startswith("ab-")
    return entry.is_dir() and own


def _starts_with(path: Path, heading: str) -> bool:
    """Whether the text file ``path`` starts with ``heading``."""
    try:
        with path.open(encoding="utf-8") as text:
            return text.read(len(heading)) == heading
    except (OSError, UnicodeDecodeError):
        return False


def check_report_folder(out: Path) -> None:
    """Refuse a ``--report`` that is not a new or empty folder or an earlier nightly
    report, before anything runs: one line naming it."""
    from perfsuite.data.fsutil import check_replaceable

    advice = "name a new or empty folder, or an earlier nightly report"
    try:
        check_replaceable(out, _nightly_entry, advice)
    except PerfsuiteError as exc:
        raise PerfsuiteError(f"--report {exc}") from None


def clear_earlier_report(out: Path) -> None:
    """Remove an earlier nightly report's entries from ``out`` (every one of them the
    report's own: :func:`check_report_folder` ran first), so that the folder holds
    tonight's report alone: no A/B or bisection step of an earlier night is read as
    tonight's."""
    if not out.is_dir():
        return
    for entry in out.iterdir():
        if _nightly_entry(entry):
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def run_nightly(args: argparse.Namespace, ab_command: Sequence[str] | None = None) -> int:
    from perfsuite.data.fsutil import atomic_write_text
    from perfsuite.nightly.screen import screen
    from perfsuite.nightly.summary import nightly_markdown
    from perfsuite.suspects import AB_COMMAND

    if args.report is not None:
        check_report_folder(args.report)
    _root, _machine, runs = _load_history(args)
    if args.report is not None:
        clear_earlier_report(args.report)
    screening = screen(runs)
    confirmation: Confirmations | None = None
    if screening.suspects and not args.no_confirm:
        report = (args.report or Path("reports/nightly")) / "ab"
        confirmation = confirm_tonight(
            screening, args.pytest_args, report, ab_command or AB_COMMAND
        )
    status = ExitCode.OK
    if screening.screened == 0 or (
        screening.suspects and (confirmation is None or confirmation.unconfirmed)
    ):
        status = ExitCode.NOT_JUDGED
    if confirmation is not None and confirmation.fault:
        status = ExitCode.BAD_INPUT
    if screening.counters or (confirmation is not None and confirmation.confirmed):
        status = ExitCode.REGRESSION
    bisection = None
    if confirmation is not None and confirmation.confirmed:
        seconds = args.bisect_seconds
        if seconds is None or seconds > 0:
            folder = (args.report or Path("reports/nightly")) / "bisect"
            bisection = bisect_tonight(confirmation, folder, seconds)
    text = nightly_markdown(screening, confirmation, status, bisection)
    if args.report is not None:
        atomic_write_text(args.report / "summary.md", text + "\n")
    print(text)
    return status
