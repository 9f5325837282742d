"""``perfsuite bisect GOOD [BAD] [options] -- PYTEST_ARGS``: name the commit that made the
benches slower, each step a ``perfsuite ab`` of one commit against a good one
(:mod:`perfsuite.bisect.search`).

Exit status (:mod:`perfsuite.exitcodes`): 1 a culprit (or a range of regressing
commits) named, 0 BAD not shown slower than GOOD (nothing to bisect), 2 bad input, 3
undecided (only a range, or BAD could not be decided against GOOD), 130 interrupted.
"""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.table import pct

if TYPE_CHECKING:
    from perfsuite.bisect.search import Bisection, Measure, Step
    from perfsuite.outcomes import AbRun


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bisect`` on the ``perfsuite`` command line."""
    from perfsuite.options import parse_seconds, parse_threshold

    bisect = commands.add_parser(
        "bisect",
        help="name the commit between GOOD and BAD that made the benches slower, by A/B",
        description="Bisect the first-parent commits after GOOD up to BAD (default HEAD), "
        "each step a perfsuite ab of one commit against a good one, decided at each "
        "bench's threshold; a regression that came in over several commits is named "
        "commit by commit. Exit status: 1 a culprit named, 0 BAD not slower than GOOD, 2 "
        "bad input, 3 undecided (the narrowest range is named).",
    )
    bisect.add_argument("good", metavar="GOOD", help="a git revision without the regression")
    bisect.add_argument("bad", metavar="BAD", nargs="?", default="HEAD", help="(default HEAD)")
    bisect.add_argument(
        "--threshold",
        type=parse_threshold,
        metavar="FRACTION",
        help="minimum change that counts (perfsuite ab's default; perf markers win)",
    )
    bisect.add_argument(
        "--max-seconds",
        type=parse_seconds,
        metavar="S",
        help="each A/B's time per bench (perfsuite ab's default by --perf-scale); an "
        "undecided step is measured again with twice it",
    )
    bisect.add_argument(
        "--budget",
        type=parse_seconds,
        metavar="S",
        help="start no A/B after S seconds; the result is then the narrowest range reached",
    )
    bisect.add_argument(
        "--into-merges",
        action="store_true",
        help="when the culprit is a merge, bisect the commits it merged",
    )
    bisect.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="write bisect.md and each step's A/B report (step-NN) here",
    )


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    author: str

    @property
    def short(self) -> str:
        return self.sha[:10]

    def describe(self) -> str:
        return f"{self.short} {self.subject!r} ({self.author})"


def _git(root: Path, *args: str) -> list[str]:
    from perfsuite.changed import git_lines

    found = git_lines(root, *args)
    if found is None:
        raise PerfsuiteError(f"git {' '.join(args)} failed in {root}")
    return found


def resolve(root: Path, spec: str) -> str:
    """The commit ``spec`` names (perfsuite ab's reading of a revision)."""
    from perfsuite.ab.revisions import resolve as resolve_revision

    sha = resolve_revision(root, spec).sha
    if sha is None:  # only the working tree has none, and a spec never names it
        raise PerfsuiteError(f"revision {spec!r}: not a commit")
    return sha


def first_parent_range(root: Path, good: str, bad: str) -> list[str]:
    """The first-parent commits after ``good`` up to ``bad``, oldest first."""
    from perfsuite.changed import git

    if git(root, "merge-base", "--is-ancestor", good, bad).returncode != 0:
        raise PerfsuiteError(
            f"GOOD {good[:10]} is not an ancestor of BAD {bad[:10]}: name a GOOD commit "
            "that BAD's history holds"
        )
    return _git(root, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}")


def commit_info(root: Path, sha: str) -> CommitInfo:
    subject, author = [*_git(root, "show", "-s", "--format=%s%n%an <%ae>", sha), "", ""][:2]
    return CommitInfo(sha, subject, author)


def _parents(root: Path, sha: str) -> list[str]:
    return _git(root, "rev-list", "--parents", "-n", "1", sha)[0].split()[1:]


@dataclass
class AbSteps:
    """Each step a ``perfsuite ab REFERENCE COMMIT`` in a child process, its report in
    ``folder/step-NN``; the step's outcome read from its exit status and rows."""

    root: Path
    pytest_args: list[str]
    options: list[str]
    folder: Path
    max_seconds: float
    done: list[AbRun] = field(default_factory=list)

    def __call__(self, reference: str, commit: str, again: bool) -> Step:
        from perfsuite.suspects import run_ab
        from perfsuite.verdict.commits import Commit

        number = len(self.done) + 1
        seconds = self.max_seconds * (2 if again else 1)
        options = [commit, *self.options, "--max-seconds", f"{seconds:g}"]
        report = self.folder / f"step-{number:02d}"
        print(
            f"perfsuite bisect: step {number}: {commit[:10]} against {reference[:10]}"
            + (" again, with twice the time" if again else ""),
            flush=True,
        )
        log = self.folder / f"step-{number:02d}.log"
        ab = run_ab(
            Commit(reference, False),
            [],
            self.pytest_args,
            self.root,
            report,
            log,
            options,
            refuse=None,
        )
        self.done.append(ab)
        if ab.status == ExitCode.INTERRUPTED:
            raise KeyboardInterrupt
        step = step_of(ab, reference, commit, again)
        print(
            f"perfsuite bisect: step {number} took {ab.seconds:.1f} s: {describe_step(step)}",
            flush=True,
        )
        return step


def step_of(ab: AbRun, reference: str, commit: str, again: bool = False) -> Step:
    """The step an A/B of ``commit`` against ``reference`` makes: its outcome from the
    exit status, its figures from the row that shows it."""
    from perfsuite.bisect.search import Step

    outcome, row = _outcome(ab)
    change, ci = _figures(row)
    return Step(
        reference,
        commit,
        outcome,
        change,
        ci,
        bench=row.get("nodeid") if row else None,
        note=ab.why_not or (ab.last_line if outcome == "skip" else ""),
        seconds=ab.seconds,
        again=again,
    )


def _outcome(ab: AbRun) -> tuple[Any, dict[str, Any] | None]:
    """A step's outcome and the row that shows it: a slower row (the largest change)
    for a regression, else the row of the largest change."""
    rows = list(ab.rows.values())
    slower = [r for r in rows if r.get("verdict") == "slower"]
    ranked = sorted(slower or rows, key=lambda r: r.get("change") or 0.0, reverse=True)
    row = ranked[0] if ranked else None
    if ab.status == ExitCode.REGRESSION:
        return "bad", row
    if ab.status == ExitCode.OK:
        return "good", row
    if ab.status == ExitCode.NOT_JUDGED:
        return "undecided", row
    return "skip", row


def _figures(row: dict[str, Any] | None) -> tuple[float | None, tuple[float, float] | None]:
    if not row or not isinstance(row.get("change"), int | float):
        return None, None
    ci = row.get("ci")
    interval = (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None
    return float(row["change"]), interval


def describe_step(step: Step) -> str:
    """One line: the commit, its outcome, and the change that decided it."""
    words = {
        "bad": "SLOWER than",
        "good": "not slower than",
        "undecided": "undecided against",
        "skip": "could not be measured against",
    }
    said = f"{step.commit[:10]} {words[step.outcome]} {step.reference[:10]}"
    if step.outcome == "skip":
        return f"{said}: {step.note}"
    figure = pct(step.change)
    if step.ci is not None:
        figure += f" [{pct(step.ci[0])}, {pct(step.ci[1])}]"
    where = f" ({step.bench})" if step.bench else ""
    note = f": {step.note}" if step.note and step.outcome == "undecided" else ""
    return f"{said}: {figure}{where}{note}"


def conclusion(result: Bisection, infos: dict[str, CommitInfo]) -> tuple[int, list[str]]:
    """The exit status and the lines that end a bisection."""
    lines = []
    for culprit in result.culprits:
        info = infos[culprit.commit]
        bench = f", {culprit.step.bench}" if culprit.step.bench else ""
        lines.append(
            f"culprit: {info.describe()}: {pct(culprit.step.change)} against "
            f"{culprit.step.reference[:10]} (the last good commit is "
            f"{culprit.reference[:10]}{bench})"
        )
    if len(result.culprits) > 1:
        lines.append(
            f"the regression came in over {len(result.culprits)} commits, each adding part of it"
        )
    if result.range is not None:
        good, bad = result.range
        lines.append(f"the first bad commit lies in {good[:10]}..{bad[:10]} ({result.stopped})")
    elif result.stopped:
        lines.append(result.stopped)
    for step in result.skipped:
        lines.append(f"skipped {infos[step.commit].describe()}: {step.note}")
    if result.culprits or result.range is not None:  # BAD was confirmed slower than GOOD
        return ExitCode.REGRESSION, lines
    if result.not_slower:
        return ExitCode.OK, lines
    return ExitCode.NOT_JUDGED, lines


def markdown(result: Bisection, infos: dict[str, CommitInfo], lines: Sequence[str]) -> str:
    """``bisect.md``: every step with its verdict and interval, then the conclusion."""
    out = [
        "## perfsuite bisect",
        "",
        "| step | commit | subject | against | outcome | change [CI] | bench |",
        "|---:|---|---|---|---|---:|---|",
    ]
    for number, step in enumerate(result.steps, 1):
        figure = pct(step.change) + (f" [{pct(step.ci[0])}, {pct(step.ci[1])}]" if step.ci else "")
        info = infos[step.commit]
        out.append(
            f"| {number} | `{info.short}` | {info.subject.replace('|', '/')} | "
            f"`{step.reference[:10]}` | {step.outcome}{' (again)' if step.again else ''} | "
            f"{figure} | {step.bench or '-'} |"
        )
    out += ["", *(f"**{line}**" if line.startswith("culprit") else line for line in lines), ""]
    return "\n".join(out)


@dataclass(frozen=True)
class Outcome:
    """A bisection run: its result, the commits it named, its status and closing lines."""

    result: Bisection
    infos: dict[str, CommitInfo]
    status: int
    lines: list[str]


@dataclass(frozen=True)
class Settings:
    """What every step of a bisection runs with: the pytest arguments (the selection
    and ``--perf-scale``), ``perfsuite ab``'s own options, each A/B's seconds per bench,
    the whole budget, and whether a merge culprit is bisected into."""

    pytest_args: tuple[str, ...]
    ab_options: tuple[str, ...] = ()
    max_seconds: float | None = None
    budget: float | None = None
    into_merges: bool = False


def bisect(
    root: Path,
    good_spec: str,
    bad_spec: str,
    settings: Settings,
    folder: Path,
    confirmed: AbRun | None = None,
    measure: Measure | None = None,
) -> Outcome:
    """Run a bisection (the command's work, also the nightly's); its outcome.
    ``confirmed``: an A/B of GOOD against BAD already run, which takes step 1's place;
    ``measure``: how a step is measured (default: a ``perfsuite ab`` child, in
    ``folder``)."""
    from perfsuite.ab.budget import BUDGETS, scale_of
    from perfsuite.bisect.search import search

    good, bad = resolve(root, good_spec), resolve(root, bad_spec)
    commits = first_parent_range(root, good, bad)
    started = time.monotonic()
    pytest_args = list(settings.pytest_args)
    scale = scale_of(pytest_args)
    if scale not in BUDGETS:
        raise PerfsuiteError(f"--perf-scale={scale}: choose one of {', '.join(BUDGETS)}")
    seconds = settings.max_seconds or BUDGETS[scale].max_seconds
    steps = measure or AbSteps(root, pytest_args, list(settings.ab_options), folder, seconds)
    budget = settings.budget

    def out_of_time() -> bool:
        return budget is not None and time.monotonic() - started > budget

    print(
        f"perfsuite bisect: {len(commits)} first-parent commit(s) after {good[:10]} up to "
        f"{bad[:10]}; each step perfsuite ab against a good commit, -- {shlex.join(pytest_args)}",
        flush=True,
    )
    known = step_of(confirmed, good, bad) if confirmed is not None else None
    result = search(commits, good, steps, out_of_time, known)
    if settings.into_merges and result.culprits and not out_of_time():
        merge = result.culprits[-1].commit
        parents = _parents(root, merge)
        if len(parents) > 1:
            base = _git(root, "merge-base", parents[0], parents[1])[0]
            print(f"perfsuite bisect: {merge[:10]} is a merge: bisecting what it merged")
            inner = search(first_parent_range(root, base, parents[1]), base, steps, out_of_time)
            result.steps += inner.steps
            result.culprits += inner.culprits
            result.range = result.range or inner.range
            result.stopped = result.stopped or inner.stopped
    named = {
        good,
        bad,
        *commits,
        *(s.commit for s in result.steps),
        *(s.reference for s in result.steps),
    }
    infos = {sha: commit_info(root, sha) for sha in named}
    status, lines = conclusion(result, infos)
    return Outcome(result, infos, status, lines)


def run(args: argparse.Namespace, pytest_args: list[str]) -> int:
    """``perfsuite bisect`` with its parsed arguments and the pytest arguments after ``--``."""
    import tempfile

    from perfsuite.ab.revisions import repo_root

    try:
        root = repo_root(Path.cwd())
        options = [] if args.threshold is None else ["--threshold", str(args.threshold)]
        with tempfile.TemporaryDirectory(prefix="perfsuite-bisect-") as scratch:
            folder = Path(args.report) if args.report is not None else Path(scratch)
            folder.mkdir(parents=True, exist_ok=True)
            settings = Settings(
                tuple(pytest_args), tuple(options), args.max_seconds, args.budget, args.into_merges
            )
            outcome = bisect(root, args.good, args.bad, settings, folder)
            if args.report is not None:
                text = markdown(outcome.result, outcome.infos, outcome.lines)
                (folder / "bisect.md").write_text(text, encoding="utf-8")
    except KeyboardInterrupt:
        print("perfsuite bisect: interrupted", flush=True)
        return ExitCode.INTERRUPTED
    except PerfsuiteError as exc:
        print(f"perfsuite bisect: error: {exc}", flush=True)
        return ExitCode.BAD_INPUT
    for number, step in enumerate(outcome.result.steps, 1):
        print(f"perfsuite bisect: {number:>2}. {describe_step(step)}")
    for line in outcome.lines:
        print(f"perfsuite bisect: {line}")
    return outcome.status
