"""Time ``perfsuite ab`` over a whole selection against plain runs of the same benches.

Runs, in this repository and one after the other: the plain pytest run of the
selection (what ``make bench`` runs, its storage and report in a temporary folder),
``perfsuite ab REV REV`` over the same selection (an A/A: both sides run one
revision), and the plain run again. The ratio is the A/B's wall time over the mean of
the two plain runs, taken within one invocation so a slow hour hits both; the two
plain runs show their spread (a first plain run that generated the datasets shows as
the slower one: warm the dataset cache first for a fair ratio). It prints each bench
file's A/B seconds and verdicts, the slowest benches (seconds of alternation, pairs),
the suspects confirmed in fresh pairs of processes, every verdict that was not
``same`` and how busy the machine was during the A/B (the report's ``machine.json``),
and writes the verdicts to ``--out``. Usage::

    python tools/validation/ab_suite_time.py [--rev HEAD] [--out ab_suite.json] [--ab-args "..."]
                                  [--plain "..."] [-- PYTEST_ARGS]

PYTEST_ARGS default to ``benches -m "not gpu" --perf-device=cpu`` at default scale;
``--perf-scale=smoke`` with ``--ab-args "--max-seconds 12"`` is the pull-request
workflow's A/B (``.github/workflows/perf-pr.yml``). ``--plain`` gives the plain runs
their own pytest arguments (default: PYTEST_ARGS), e.g. the default scale of
``make bench`` against a smoke-scale A/B.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from perfsuite.ab.load import MachineLoad

DEFAULT_SELECTION = ["benches", "-m", "not gpu", "--perf-device=cpu"]


def timed(command: list[str], mark: str | None = None) -> tuple[int, float, str, float | None]:
    """(exit status, wall seconds, the output's last lines, the seconds when a line
    holding ``mark`` first came out, if one did) of one command, its output read as it
    comes."""
    start = time.monotonic()
    seen: float | None = None
    lines: list[str] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if seen is None and mark is not None and mark in line:
                seen = time.monotonic() - start
    return proc.returncode, time.monotonic() - start, "\n".join(lines[-15:]), seen


def plain_run(selection: list[str], work: Path, index: int) -> float:
    """One plain pytest run of the selection, as ``make bench`` runs it; its seconds."""
    folder = work / f"plain{index}"
    command = [
        sys.executable,
        "-m",
        "pytest",
        *selection,
        "-q",
        "-p",
        "no:cacheprovider",
        "--benchmark-autosave",
        "--benchmark-compare",
        f"--benchmark-storage={folder / 'b'}",
        f"--perf-report={folder / 'report'}",
    ]
    code, seconds, tail, _ = timed(command)
    print(f"plain run {index}: exit {code}, {seconds:.0f} s", flush=True)
    if code not in (0, 1):
        raise SystemExit(f"plain run {index} failed (exit {code}):\n{tail}")
    return seconds


def split_report(ab_args: list[str], default: Path) -> tuple[Path, list[str]]:
    """The ``--report`` folder the A/B's own options name (else ``default``), and those
    options without it."""
    for i, arg in enumerate(ab_args):
        if arg.startswith("--report="):
            return Path(arg.split("=", 1)[1]), ab_args[:i] + ab_args[i + 1 :]
        if arg == "--report" and i + 1 < len(ab_args):
            return Path(ab_args[i + 1]), ab_args[:i] + ab_args[i + 2 :]
    return default, ab_args


#: what ``perfsuite ab`` prints when its first stage is over and a second pair of
#: processes (for a `same`) or a confirmation (for a suspect) starts
CONFIRMING = "fresh pairs of processes: "


def ab_run(
    rev: str, selection: list[str], ab_args: list[str], report: Path
) -> tuple[float, float | None]:
    """One ``perfsuite ab REV REV`` over the selection, its report in ``report``: its
    seconds, and those of its first stage when confirmations followed (else None)."""
    command = [
        sys.executable,
        "-m",
        "perfsuite.cli",
        "ab",
        rev,
        rev,
        "--report",
        str(report),
        *ab_args,
        "--",
        *selection,
    ]
    code, seconds, tail, first_stage = timed(command, CONFIRMING)
    stage = "" if first_stage is None else f" (first stage {first_stage:.0f} s)"
    print(f"perfsuite ab {rev} {rev}: exit {code}, {seconds:.0f} s{stage}", flush=True)
    if code == 2 or not (report / "pairs.json").is_file():
        raise SystemExit(f"perfsuite ab failed (exit {code}):\n{tail}")
    return seconds, first_stage


def summary(entries: list[dict[str, Any]], slowest: int) -> list[str]:
    """Per file: benches, seconds of alternation, verdicts; the slowest benches; non-same."""
    lines = ["file  benches  s alternating  verdicts"]
    files: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        files.setdefault(entry["nodeid"].split("::", 1)[0], []).append(entry)
    for name, group in files.items():
        seconds = sum(e.get("seconds") or 0.0 for e in group)
        tally = Counter(
            e.get("verdict") or ("skipped" if e.get("skipped") else "none") for e in group
        )
        lines.append(f"{name}  {len(group)}  {seconds:.0f}  {dict(tally)}")
    lines.append(f"slowest {slowest} benches (s alternating, pairs, verdict):")
    ranked = sorted(entries, key=lambda e: -(e.get("seconds") or 0.0))[:slowest]
    lines += [
        f"  {e.get('seconds') or 0:.1f} s  {e.get('pairs')}  {e.get('verdict')}  {e['nodeid']}"
        for e in ranked
    ]
    second = [e for e in entries if e.get("second")]
    lines.append(f"first-stage `same` checked in a second pair of processes: {len(second)}")
    suspects = [e for e in entries if e.get("sessions")]
    lines.append(f"suspects confirmed in fresh pairs of processes: {len(suspects)}")
    lines += [
        f"  {len(e['sessions'])} pairs  {e.get('verdict')} {e['change'] * 100:+.1f}%  {e['nodeid']}"
        for e in suspects
    ]
    odd = [e for e in entries if e.get("verdict") not in ("same", None)]
    lines.append(f"not same: {len(odd)} of {len(entries)}")
    lines += [
        f"  {e['verdict']} {e['change'] * 100:+.1f}% {e.get('ci')}  {e['nodeid']}" for e in odd
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    selection = DEFAULT_SELECTION
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, selection = args_in[:cut], args_in[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the revision on both sides")
    parser.add_argument("--out", type=Path, default=Path("ab_suite.json"))
    parser.add_argument("--ab-args", default="", help="options for perfsuite ab (one string)")
    parser.add_argument("--plain", help="pytest arguments of the plain runs (one string)")
    parser.add_argument("--slowest", type=int, default=10)
    args = parser.parse_args(args_in)
    plain_selection = selection if args.plain is None else shlex.split(args.plain)
    work = Path(tempfile.mkdtemp(prefix="ab-suite-"))
    try:
        first = plain_run(plain_selection, work, 1)
        report, ab_args = split_report(shlex.split(args.ab_args), work / "ab")
        ab, first_stage = ab_run(args.rev, selection, ab_args, report)
        second = plain_run(plain_selection, work, 2)
        entries = json.loads((report / "pairs.json").read_text())
        for entry in entries:  # the blocks are in the report; keep the verdicts
            for key in ("a_blocks", "b_blocks", "order", "drained", "warmup"):
                entry.pop(key, None)
        plain = (first + second) / 2
        load = MachineLoad.from_report(report)  # how busy the machine was (Linux only)
        document = {
            "selection": selection,
            "ab_args": args.ab_args,
            "plain": plain_selection,
            "plain_seconds": [first, second],
            "ab_seconds": ab,
            "ratio": ab / plain,
            "first_stage_seconds": first_stage,
            "machine": dataclasses.asdict(load) if load else None,
            "benches": entries,
        }
        args.out.write_text(json.dumps(document, indent=1))
        print("\n".join(summary(entries, args.slowest)))
        print(
            f"plain runs {first:.0f} s and {second:.0f} s; perfsuite ab {ab:.0f} s: "
            f"{ab / plain:.2f}x their mean ({ab / first:.2f}x and {ab / second:.2f}x "
            "each)"
        )
        if load is not None:
            print(load.line())
        print(f"wrote {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
