"""Measure the nightly verdict on this machine: N scripted nights, storage kept.

Each night runs, in a git clone of this repository (so ``perfsuite ab`` has real
commits to check out)::

    pytest benches --benchmark-autosave --benchmark-compare --perf-gate [PYTEST_ARGS]
    perfsuite nightly --storage STORAGE --report NIGHT/verdict -- benches [PYTEST_ARGS]

and records the gate's exit status, the nightly's suspects (the screening of
:mod:`perfsuite.nightly.screen` on the same storage) and the nightly's exit status and
verdict. ``--inject [NIGHT]`` makes one night (default: the last) run a commit that
gives one tf.data variant (``--variant``, default ``baseline``) 20% more decode work
per item: after its map, every sixth decoded image is dropped, so each batch decodes
1.2 times as many images. That is a real code change in a temporary commit of the
clone, so the nightly's ``perfsuite ab <last night's commit> HEAD`` confirms it by
running both commits; the commit is reverted after that night. Usage::

    python tools/validation/nightly_loop.py --nights 10 [--inject [NIGHT]] [--variant baseline]
                                 [--workdir DIR] [-- PYTEST_ARGS]

e.g. ``-- --perf-scale=smoke -k "test_tfdata and (baseline or parallel_map)"`` for a
quick check. Results: a table on stdout and ``WORKDIR/nights.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.nightly.screen import screen
from perfsuite.verdict.storage import Storage

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = Path("perfsuite/workloads/tfdata_variants.py")
#: ``.map(preprocess)`` followed by ``.repeat()`` inside the variant's function
INJECT_AFTER = ".map(preprocess)\n        .repeat()\n"
INJECTED = (
    ".map(preprocess)\n        .repeat()\n"
    "        .enumerate()\n"
    "        .filter(lambda i, xy: i % 6 != 5)  # injected: 20% more decodes per item\n"
    "        .map(lambda i, xy: xy)\n"
)
GIT_ID = ["-c", "user.name=nightly loop", "-c", "user.email=nightly-loop@localhost"]


@dataclass
class Night:
    """One night's outcome."""

    night: int
    commit: str
    injected: bool
    gate_status: int
    nightly_status: int
    suspects: list[str] = field(default_factory=list)
    counters: list[str] = field(default_factory=list)
    verdict: str = ""
    seconds: float = 0.0


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def inject(repo: Path, variant: str) -> None:
    """Commit the 20%-more-work change into ``variant``'s pipeline in the clone."""
    path = repo / WORKLOAD
    text = path.read_text(encoding="utf-8")
    start = text.find(f"\ndef {variant}(")
    end = text.find("\ndef ", start + 1)
    body = text[start:end]
    if start < 0 or INJECT_AFTER not in body:
        sys.exit(f"nightly_loop: --variant {variant}: no '.map(preprocess) .repeat()' in {path}")
    path.write_text(text[:start] + body.replace(INJECT_AFTER, INJECTED, 1) + text[end:])
    git(repo, "commit", "-q", "-am", f"inject: 20% more decode work per item in {variant}")


def verdict_line(report: Path) -> str:
    summary = report / "summary.md"
    if not summary.is_file():
        return "(no summary.md)"
    for line in summary.read_text(encoding="utf-8").splitlines():
        if line.startswith("Verdict: "):
            return line.removeprefix("Verdict: ")
    return "(no verdict line)"


def run_night(night: int, repo: Path, work: Path, pytest_args: list[str], injected: bool) -> Night:
    storage = work / "storage"
    report = work / f"night-{night:02d}"
    env = dict(os.environ, PYTHONPATH=str(repo))
    started = time.monotonic()
    bench = [
        sys.executable,
        "-m",
        "pytest",
        "benches",
        "-p",
        "no:cacheprovider",
        "-q",
        "--benchmark-autosave",
        "--benchmark-compare",
        "--perf-gate",
        f"--benchmark-storage=file://{storage}",
        *pytest_args,
    ]
    print(f"[night {night}] {' '.join(bench)}", flush=True)
    gate = subprocess.run(bench, cwd=repo, env=env, check=False).returncode
    nightly = [
        sys.executable,
        "-m",
        "perfsuite.cli",
        "nightly",
        "--storage",
        str(storage),
        "--report",
        str(report / "verdict"),
        "--",
        "benches",
        *pytest_args,
    ]
    print(f"[night {night}] {' '.join(nightly)}", flush=True)
    status = subprocess.run(nightly, cwd=repo, env=env, check=False).returncode
    store = Storage.for_session(storage)
    runs = store.load_all(store.runs())
    suspects: list[str] = []
    counters: list[str] = []
    if runs:
        screening = screen(runs)
        suspects = [f"{s.label}: {s.reason}" for s in screening.suspects]
        counters = [f"{s.label}: {s.reason}" for s in screening.counters]
    return Night(
        night=night,
        commit=git(repo, "rev-parse", "--short=10", "HEAD"),
        injected=injected,
        gate_status=gate,
        nightly_status=status,
        suspects=suspects,
        counters=counters,
        verdict=verdict_line(report / "verdict"),
        seconds=round(time.monotonic() - started, 1),
    )


def table(nights: list[Night]) -> list[str]:
    lines = ["night  commit      injected  gate  nightly  suspects  verdict"]
    for n in nights:
        lines.append(
            f"{n.night:>5}  {n.commit:<10}  {'yes' if n.injected else 'no':<8}  "
            f"{n.gate_status:>4}  {n.nightly_status:>7}  {len(n.suspects):>8}  {n.verdict}"
        )
        lines.extend(f"{'':>7}suspect: {s}" for s in n.suspects)
    return lines


def summary(nights: list[Night], variant: str) -> dict[str, Any]:
    plain = [n for n in nights if not n.injected]
    result: dict[str, Any] = {
        "nights": len(nights),
        "unchanged_nights": len(plain),
        "gate_failures_unchanged": sum(1 for n in plain if n.gate_status != 0),
        "nightly_failures_unchanged": sum(1 for n in plain if n.nightly_status != 0),
        "suspects_per_unchanged_night": [len(n.suspects) for n in plain],
    }
    for n in nights:
        if n.injected:
            result["injected_caught"] = any(s.startswith(f"tfdata/{variant}:") for s in n.suspects)
            result["injected_confirmed"] = n.nightly_status == 1
            result["injected_gate_status"] = n.gate_status
    return result


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    own, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=10, help="nights to run (default 10)")
    parser.add_argument(
        "--inject",
        type=int,
        nargs="?",
        const=0,
        metavar="NIGHT",
        help="inject 20%% more work on NIGHT (1-based; default: the last night)",
    )
    parser.add_argument("--variant", default="baseline", help="tf.data variant to inject into")
    parser.add_argument("--workdir", type=Path, help="where the clone and storage live (kept)")
    args = parser.parse_args(own)
    if args.nights < 1:
        parser.error("--nights must be at least 1")
    if args.inject is not None:
        args.inject = args.inject or args.nights
        if not 1 <= args.inject <= args.nights:
            parser.error(f"--inject {args.inject}: must be a night in 1..{args.nights}")
    return args, pytest_args


def main(argv: list[str]) -> int:
    args, pytest_args = parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="perfsuite-nightly-loop-"))
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    if not repo.exists():
        if subprocess.run(
            ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip():
            print("nightly_loop: note: uncommitted changes are not in the clone", flush=True)
        subprocess.run(["git", "clone", "-q", str(REPO), str(repo)], check=True)
    print(f"nightly_loop: clone {repo}, storage {work / 'storage'}", flush=True)
    nights: list[Night] = []
    for night in range(1, args.nights + 1):
        injected = night == args.inject
        if injected:
            inject(repo, args.variant)
        nights.append(run_night(night, repo, work, pytest_args, injected))
        if injected:
            git(repo, "revert", "--no-edit", "HEAD")
        (work / "nights.json").write_text(
            json.dumps(
                {"nights": [asdict(n) for n in nights], "summary": summary(nights, args.variant)},
                indent=2,
            )
        )
    print("\n".join(table(nights)))
    print(json.dumps(summary(nights, args.variant), indent=2))
    print(f"nightly_loop: results in {work / 'nights.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
