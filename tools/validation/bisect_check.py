"""Measure ``perfsuite bisect`` on this machine: is the culprit named, and never an innocent?

Each run builds a git repository of a pytest-benchmark user's suite (:mod:`user_suite`:
no pytest configuration file, the ``benchmark`` fixture only) with 16 commits: the
first is GOOD; one later commit, at a position drawn from the run's seed, adds work to
``test_decode`` (``--extra``, the fraction of the images decoded a second time; with
``--split``, two commits add half of it each); two others touch only ``README.md``; the
rest change a comment in the bench files, nothing measured. It then runs
``perfsuite bisect GOOD HEAD -- test_decode.py`` and records the culprits it named, its
exit status, its steps and their seconds. Usage::

    python tools/validation/bisect_check.py [--runs 10] [--extra 0.10] [--split]
                                            [--out bisect_check.json] [--keep DIR]

It prints, per run, the expected and the named culprits, and at the end how many runs
named the culprit, how many named an innocent commit, and the time per run and per step.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tools.validation.user_suite import (
    benchmark_sources,
    provenance,
    provenance_line,
    spread,
)

COMMITS = 16
#: a line of the bench files that a no-op commit changes
BROKEN = "def decode_all(files:\n"


@dataclass(frozen=True)
class History:
    """A repository's commits, oldest first, and which of them add work (or fail)."""

    root: Path
    shas: list[str]
    culprits: list[str]
    broken: list[str]


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def build_history(
    root: Path,
    seed: int,
    parts: Sequence[float] = (0.10,),
    commits: int = COMMITS,
    broken: Sequence[int] = (),
) -> History:
    """A repository at ``root`` whose commits after the first add ``parts`` of work at
    positions drawn from ``seed``; two others touch only README.md. The bench files of
    each commit numbered in ``broken`` do not import; the next commit mends them."""
    rng = random.Random(seed)
    free = [n for n in range(1, commits) if n not in broken and n - 1 not in broken]
    positions = rng.sample(free, len(parts))
    at = dict(zip(positions, parts, strict=True))
    rest = [n for n in free if n not in at]
    readme_only = set(rng.sample(rest, min(2, len(rest))))
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    extra = 0.0
    shas: list[str] = []
    culprits: list[str] = []
    for number in range(commits):
        extra += at.get(number, 0.0)
        if number in readme_only:
            (root / "README.md").write_text(f"A user's benches, note {number}.\n")
        else:
            for name, text in benchmark_sources(round(extra, 4), f"; commit {number}").items():
                path = root / name
                path.parent.mkdir(parents=True, exist_ok=True)
                if number in broken:
                    text = text.replace("def decode_all(files):\n", BROKEN)
                path.write_text(text)
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"commit {number}" + (" adds work" if number in at else ""))
        shas.append(_git(root, "rev-parse", "HEAD"))
        if number in at:
            culprits.append(shas[-1])
    return History(root, shas, culprits, [shas[n] for n in broken])


@dataclass(frozen=True)
class BisectRun:
    status: int
    seconds: float
    named: list[str]  # the culprits' short shas
    steps: list[float]  # each step's seconds
    lines: list[str]


def run_bisect(history: History, extra_args: Sequence[str] = ()) -> BisectRun:
    """``perfsuite bisect`` of the history's first commit against its last."""
    report = history.root.parent / f"{history.root.name}-bisect"
    bisect = [sys.executable, "-m", "perfsuite.cli", "bisect", history.shas[0], history.shas[-1]]
    command = [*bisect, "--report", str(report), *extra_args, "--", "test_decode.py"]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=history.root, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    lines = (proc.stdout + proc.stderr).splitlines()
    named = [m.group(1) for line in lines if (m := re.search(r"culprit: ([0-9a-f]{10}) ", line))]
    took = (re.search(r"step \d+ took ([\d.]+) s", line) for line in lines)
    steps = [float(m.group(1)) for m in took if m]
    return BisectRun(proc.returncode, seconds, named, steps, lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--extra", type=float, default=0.10)
    parser.add_argument("--split", action="store_true", help="two commits add half each")
    parser.add_argument("--out", type=Path, default=Path("bisect_check.json"))
    parser.add_argument("--keep", type=Path, help="keep each run's repository here")
    args = parser.parse_args(argv)
    parts = (args.extra / 2, args.extra / 2) if args.split else (args.extra,)
    base = Path(tempfile.mkdtemp(prefix="bisect-check-"))
    results: list[dict[str, Any]] = []
    about = provenance(Path(__file__).resolve().parents[2])
    print(provenance_line(about), flush=True)
    try:
        for run in range(args.runs):
            history = build_history(base / f"run-{run:02d}", seed=run, parts=parts)
            found = run_bisect(history)
            expected = [sha[:10] for sha in history.culprits]
            innocent = [sha for sha in found.named if sha not in expected]
            results.append(
                {
                    "seed": run,
                    "expected": expected,
                    "named": found.named,
                    "innocent": innocent,
                    "status": found.status,
                    "seconds": round(found.seconds, 1),
                    "steps": found.steps,
                    "lines": [line for line in found.lines if line.startswith("perfsuite bisect:")],
                }
            )
            print(
                f"run {run}: expected {', '.join(expected)}; named "
                f"{', '.join(found.named) or 'none'}; exit {found.status}; "
                f"{found.seconds:.0f} s, {len(found.steps)} steps",
                flush=True,
            )
            if args.keep is not None:
                shutil.copytree(history.root, args.keep / history.root.name, dirs_exist_ok=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    hits = sum(1 for r in results if r["named"] == r["expected"])
    innocents = sum(1 for r in results if r["innocent"])
    times = [r["seconds"] for r in results]
    steps = [s for r in results for s in r["steps"]]
    print(f"culprit named: {hits} of {len(results)}; an innocent named: {innocents}")
    if times:
        print(f"per run: median {statistics.median(times):.0f} s ({spread(times)} s)")
    if steps:
        counts = [len(r["steps"]) for r in results]
        print(
            f"per step: median {statistics.median(steps):.0f} s ({spread(steps)} s); "
            f"steps per run {spread(counts)}"
        )
    args.out.write_text(json.dumps({"about": about, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
