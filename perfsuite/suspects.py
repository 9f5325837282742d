"""Suspects of a screen, confirmed by ``perfsuite ab`` in a child process: the gate's
and the nightly's.

A screen (``--perf-gate``'s comparison with the saved baseline) only picks suspects:
benches slower or using more CPU per item by the rank test, or whose peak memory rose
beyond its threshold; benches whose code changed since the baseline's commit, whatever
the screen read (:mod:`perfsuite.changed`); and each bench the screen left too noisy
to have caught a regression of twice its threshold
(:func:`perfsuite.verdict.shift.mark_undecided`). Each is then decided in these steps:

1. None of the bench's code or data differs between the baseline's commit (on a clean
   tree) and the working tree, untracked files included
   (:class:`perfsuite.changed.Changes`), or, where git cannot tell, both runs are of
   one commit on a clean tree: the move is the machine's (``machine``), for the
   suspects and for the benches the screen left too noisy alike; where this holds for
   every suspect, no A/B runs.
2. Otherwise, where the folder is a git checkout holding the baseline's commit,
   ``perfsuite ab BASE --report DIR -- NODEIDS OPTIONS`` measures the suspects alone,
   the baseline's commit (A) against the working tree (B, uncommitted changes
   included), interleaved in one session. Each suspect takes its row's verdict from the
   report's ``pairs.json``, for each measure that made it a suspect (time, CPU per
   item, peak memory; a bench whose code changed, also for its peak memory and, where
   its time rules out a gain of its threshold, its CPU per call, whatever made it
   one): ``slower`` (a peak that rose) confirms it (a regression), ``same`` or
   ``faster`` clears it; an undecided verdict whose interval rules out a regression of
   twice the threshold has ``not shown`` it (it passes, saying that bound:
   :func:`perfsuite.outcomes.decide`); anything else (too noisy for that, not
   measured) leaves it ``unconfirmed``, with the command that would decide it. Where
   the measures disagree, confirmed wins, then unconfirmed. The gate runs at most one
   A/B, over every suspect it measures, with one budget; where a bench whose code
   changed or one the screen left too noisy is among them, it measures again every
   first pair of processes that is too noisy to pass (``--suspects undecided``).
3. Where no A/B can run (the baseline has no commit id, the folder is not a git
   checkout, the commit is not in it), every suspect is ``unconfirmed``, with the
   command that would confirm it once it can.

Of the suspects whose code is the same on both sides where a data or configuration
file changed (a peak memory that rose aside, the benches the screen left too noisy
among them), the A/B of step 2 measures a sample, beside every other suspect, and the
rest follow it: :mod:`perfsuite.verdict.shift`.

The A/B takes its seconds from the gated run's (:func:`perfsuite.ab.budget.gate_args`).

``perfsuite nightly`` confirms its suspects by the same rule and the same child run
(:mod:`perfsuite.nightly.command`): step 1, else ``perfsuite ab`` of the previous run's
commit against ``HEAD`` over the suspects, read by its exit status.

Nothing of ``perfsuite ab`` is imported: the command line, its exit status and its
report are the contract.
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from perfsuite.changed import changed_benches, git, mark_changed
from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import terminate_as_interrupt
from perfsuite.options import Spread
from perfsuite.outcomes import AbRun, combined, decide, decide_all, time_held
from perfsuite.verdict.commits import Commit, machine_move, same_code
from perfsuite.verdict.judge import CONFIRMED
from perfsuite.verdict.shift import (
    SAME_CODE_SAMPLE,
    UNDECIDED_AT_MOST,
    cleared_with,
    mark_undecided,
    same_code_sample,
)

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison
    from perfsuite.verdict.judge import BenchVerdict, Confirmed

#: the A/B's command: unbuffered (``-u``), so an interrupt loses none of its lines
AB_COMMAND: tuple[str, ...] = (sys.executable, "-u", "-m", "perfsuite.cli", "ab")
#: perfsuite options a confirmation must not pass on to the A/B's sides
NOT_PASSED = ("--perf-gate", "--perf-report", "--perf-allow-machine-mismatch", "--perf-ab-args")
#: what a gate's A/B is for: confirm the screen's suspects, or decide benches whose
#: code changed, or those of a screen that decided none
Why = Literal["confirm", "changed", "undecided"]
CONFIRM: Why = "confirm"
CHANGED: Why = "changed"
UNDECIDED: Why = "undecided"
#: perfsuite options that take no value
FLAGS = ("--perf-gate", "--perf-allow-machine-mismatch")


def passed_options(args: Sequence[str]) -> list[str]:
    """The ``--perf-*`` options of ``args``, with their values, that an A/B's sides need
    (scale, data, device, threshold, recipes...); never the gate's own options.

    >>> passed_options(["benches", "--perf-gate", "--perf-scale", "smoke", "-x"])
    ['--perf-scale=smoke']
    """
    kept: list[str] = []
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name.startswith("--perf-") and name not in FLAGS and not eq and i + 1 < len(args):
            value, eq = args[i + 1], "="
            i += 1
        if name.startswith("--perf-") and name not in NOT_PASSED:
            kept.append(f"{name}={value}" if eq else name)
        i += 1
    return kept


def cannot_run(cwd: Path, base: Commit) -> str | None:
    """Why no A/B of ``base`` against the working tree can run from ``cwd``, or None."""
    if base.sha is None:
        return "the baseline run has no commit id (saved outside a git checkout)"
    try:
        top = git(cwd, "rev-parse", "--show-toplevel")
    except OSError as exc:
        return f"git cannot run ({exc})"
    if top.returncode != 0:
        return f"{cwd} is not a git checkout"
    if git(cwd, "cat-file", "-e", f"{base.sha}^{{commit}}").returncode != 0:
        return f"the baseline's commit {base.sha[:12]} is not in this repository (fetch it)"
    return None


def run_ab(
    base: Commit,
    nodeids: Sequence[str],
    options: Sequence[str],
    cwd: Path,
    report: Path,
    log: Path | None,
    ab_args: Sequence[str] = (),
    command: Sequence[str] = AB_COMMAND,
    refuse: Callable[[Path, Commit], str | None] | None = cannot_run,
    spreads: Mapping[str, Spread] | None = None,
) -> AbRun:
    """Run the A/B of the suspects (``ab_args``: its own options; its output into
    ``log``, or this process's output when None), or say why it cannot run: what
    ``refuse`` finds, or that it could not start. The command it shows a user starts
    with ``cd CWD`` where CWD is not this process's folder. ``spreads`` (each bench's
    spread across runs and the screen's reading, :data:`perfsuite.options.Spread`) go to
    its ``--spread``, in a file of a temporary folder gone once it ends; the command shown
    leaves them out (they only pick the suspects of its first look)."""
    sha = base.sha or "BASE"
    line = (*command, sha, *ab_args, "--report", str(report), "--", *nodeids, *options)
    shown = shlex.join(["perfsuite", "ab", sha, *ab_args, "--", *nodeids, *options])
    if cwd.resolve() != Path.cwd().resolve():  # node ids are relative to cwd: start there
        shown = f"cd {shlex.quote(str(cwd))} && {shown}"
    why = refuse(cwd, base) if refuse is not None else None
    if why is not None:
        return AbRun(tuple(line), shown, None, why_not=why)
    start = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(log.open("wb")) if log is not None else None
            if spreads:
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="perfsuite-"))
                file = Path(folder) / "spread.json"
                file.write_text(json.dumps(dict(spreads)), encoding="utf-8")
                at = len(command) + 1 + len(ab_args)  # after a CANDIDATE in ab_args
                line = (*line[:at], f"--spread={file}", *line[at:])
            child = subprocess.Popen(
                line,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C reaches it once: relayed
                # in the child, before it starts: SIGINT as Python's default (a background
                # job's shell leaves it ignored), so the SIGINT wait_or_stop relays stops it
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
            status = wait_or_stop(child)
    except OSError as exc:
        return AbRun(tuple(line), shown, None, why_not=f"could not start perfsuite ab: {exc}")
    seconds = time.monotonic() - start
    from perfsuite.ab.report import read_pairs

    try:  # a torn file is no row: each suspect then reads as unconfirmed
        rows = {entry["nodeid"]: entry for entry in read_pairs(report)}
    except PerfsuiteError:
        rows = {}
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log else []
    return AbRun(tuple(line), shown, status, seconds, rows, last_line=fault_line(lines))


def _decide(item: BenchVerdict, ab: AbRun) -> Confirmed:
    """``item``'s outcome from the A/B over what made it a suspect (its time, its CPU per
    item, its peak memory), each held to the A/B's own threshold. A bench whose code
    changed is also a regression where the A/B confirmed its peak memory risen, or its
    CPU per call where its time interval rules out a gain of its threshold
    (:func:`perfsuite.outcomes.time_held`), each such measure named: the screen's
    reading of the old code says nothing of them. A CPU rise not counted so is said."""
    whats = ["time"] if item.time_suspect else []
    whats += ["cpu"] if item.cpu_slower else []
    whats += ["memory"] if item.memory_rose else []
    found = decide_all(item.fullname, ab, whats)
    if item.changed is not None and found.outcome != CONFIRMED:
        held = time_held(item.fullname, ab)
        risen = {
            what: decide(item.fullname, ab, what) for what in ("cpu", "memory") if what not in whats
        }
        counted = [o for w, o in risen.items() if o.outcome == CONFIRMED and (held or w != "cpu")]
        if counted:
            return combined(counted)
        cpu = risen.get("cpu")
        if cpu is not None and cpu.outcome == CONFIRMED:
            dropped = f"not counted, its time may have fallen by its threshold: {cpu.text}"
            found = replace(found, text=f"{found.text}; {dropped}")
    return found


def output_of(report: Path) -> Path:
    """Where an A/B whose report folder is ``report`` keeps its output: beside it,
    ``report.log``."""
    return report.with_name(report.name + ".log")


def keep_confirmations(report: Path, into: Path) -> None:
    """Copy the gate's A/B report folder ``report`` into ``into``, and its output
    (:func:`output_of`) beside that, each where the A/B wrote it: the output says what
    its first look measured, and why."""
    with contextlib.suppress(OSError):
        shutil.copytree(report, into, dirs_exist_ok=True)
    with contextlib.suppress(OSError):
        shutil.copyfile(output_of(report), output_of(into))


def wait_or_stop(child: subprocess.Popen[bytes], grace: float = 20.0) -> int:
    """``child``'s exit status (an A/B in a session of its own). Interrupted (Ctrl-C;
    SIGTERM and SIGHUP are taken as one while waiting), the A/B is sent one SIGINT, the
    stop it handles by stopping both its sides, given ``grace`` seconds, then killed;
    then the interruption goes on as ``KeyboardInterrupt``."""

    with terminate_as_interrupt():
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise


def fault_line(lines: Sequence[str]) -> str:
    """What an A/B's output says went wrong: its ``error:`` line, with the first
    ``E`` line of the side's output quoted after it (the exception a side died of), else
    its last line.

    >>> fault_line(["perfsuite ab: A = x", "perfsuite ab: error: side A: ended early",
    ...             "  ERROR collecting t.py", "  E   ModuleNotFoundError: No module named 'm'"])
    "side A: ended early (ModuleNotFoundError: No module named 'm')"
    """
    for i, text in enumerate(lines):
        _, found, error = text.partition("perfsuite ab: error: ")
        if found:
            raised = [t.strip()[1:].strip() for t in lines[i + 1 :] if t.strip().startswith("E ")]
            return f"{error.strip()} ({raised[0]})" if raised else error.strip()
    return lines[-1].strip() if lines else ""


def confirm_suspects(
    comparison: RunComparison,
    commit_info: Mapping[str, Any],
    options: Sequence[str],
    cwd: Path,
    scratch: Callable[[str], Path],
    ab_args: Callable[[Sequence[str], Why], list[str]] = lambda nodeids, why: [],
    say: Callable[[str], None] = print,
) -> tuple[RunComparison, str | None]:
    """``comparison`` with each time suspect decided (the module's steps), and a line
    saying how long the A/B took, if one ran. ``commit_info`` is the current run's;
    ``scratch(name)`` gives the folder for an A/B's report (its log goes beside it);
    ``ab_args(nodeids, why)`` the A/B's own options for those suspects, ``why`` saying
    what it is for: ``CONFIRM`` suspects of the screen, or decide benches whose code
    changed (``CHANGED``) or that a screen which decided none measured
    (``UNDECIDED``)."""
    base = Commit.of(comparison.baseline.commit_info)
    same = same_code(base, Commit.of(commit_info))
    changes = None
    if base.sha is not None:
        changes = changed_benches([v.fullname for v in comparison.verdicts], cwd, base.sha)

    def machine(item: BenchVerdict) -> bool:
        """Whether no code or data of ``item`` changed, so that its move is the machine's."""
        if changes is None or base.dirty:
            return same
        return item.fullname in changes.untouched

    # no code or data changed: the move is the machine's, the too noisy benches' too
    comparison, _ = mark_undecided(comparison, None, "no code or data changed", machine)
    why_not = cannot_run(cwd, base)
    undecided: set[str] = set()
    if changes is not None and base.sha is not None:
        comparison = mark_changed(comparison, changes, base.sha, say)
    if why_not is None:
        at_most = None if changes is not None else UNDECIDED_AT_MOST
        comparison, undecided = mark_undecided(comparison, at_most, among=lambda v: not machine(v))
    if undecided:
        say(
            f"perfsuite gate: the screen left {len(undecided)} bench(es) too noisy to "
            "have caught a regression of twice their threshold; the A/B decides them"
        )
    suspects = [v for v in comparison.verdicts if v.suspect and not v.counters_rose]
    idle = [v for v in suspects if machine(v)]
    decided: dict[str, Confirmed] = {}
    if idle:
        files = None if changes is None or (same and not changes.files) else changes.files
        move = machine_move(base, files)
        others = len(suspects) - len(idle)
        say(f"perfsuite gate: {f'{len(idle)} suspect(s), ' if others else ''}{move.text}")
        decided = dict.fromkeys((v.fullname for v in idle), move)
    suspects = [v for v in suspects if not machine(v)]
    if not suspects and not decided:
        return comparison, None
    note = None
    if suspects:
        changed = [v for v in suspects if v.changed is not None]
        pool = [v for v in suspects if v.changed is None and not v.memory_rose]
        sample: list[BenchVerdict] = []
        later: list[BenchVerdict] = []
        if changes is not None:
            sample, later = same_code_sample(pool)
        if later:
            say(
                f"perfsuite gate: the code of {len(pool)} suspect(s) is the same as at "
                f"{(base.sha or '?')[:12]}: the A/B measures the {SAME_CODE_SAMPLE} the "
                "screen read most surely slower"
            )
        measured = [v for v in suspects if v not in later]
        own = [v for v in measured if v.fullname in undecided and v.changed is None]
        deciding = any(v.fullname in undecided for v in measured)
        why: Why = UNDECIDED if deciding else CHANGED if changed else CONFIRM
        nodeids = [v.fullname for v in measured]
        others = len(measured) - len(changed) - len(own)
        parts = [f"{len(changed)} bench(es) whose code changed"] if changed else []
        parts += [f"{len(own)} bench(es) the screen left too noisy"] if own else []
        parts += [f"{others} suspect(s) of the screen"] if others else []
        report = scratch("ab")
        say(
            f"perfsuite gate: {', '.join(parts)}; "
            + (
                f"no A/B can confirm them: {why_not}"
                if why_not
                else f"confirming in an A/B of {(base.sha or '?')[:12]} against the working tree"
            )
        )
        log = output_of(report)
        spreads = {
            v.fullname: (v.spread, math.log1p(v.time.change) if v.time else None)
            for v in measured
            if v.spread
        }
        ab = run_ab(
            base, nodeids, options, cwd, report, log, ab_args(nodeids, why), spreads=spreads
        )
        decided |= {v.fullname: _decide(v, ab) for v in measured}
        if later and ab.status is None:  # no A/B could run: the same reason holds for them
            decided |= {v.fullname: _decide(v, ab) for v in later}
        elif later:
            rest = cleared_with(sample, decided, base.sha or "?")
            decided |= dict.fromkeys((v.fullname for v in later), rest)
        if ab.status is not None:
            tally = Counter(decided[v.fullname].outcome for v in suspects)
            counts = ", ".join(f"{n} {word}" for word, n in tally.items())
            note = (
                f"perfsuite gate: confirmations took {ab.seconds:.0f} s "
                f"({len(suspects)} suspect(s): {counts})"
            )
    verdicts = [replace(v, confirmation=decided.get(v.fullname)) for v in comparison.verdicts]
    return replace(comparison, verdicts=verdicts), note
