"""Check perfsuite on a GPU runner: where the torch benches ran, at what clocks, and an A/A.

One command, from the root of a checkout with the GPU stack installed::

    python tools/validation/gpu_check.py [--scale default] [--max-seconds 90] [--keep DIR]
                              [--no-ab] [-k EXPR]

1. Runs the torch benches, ``pytest benches/bench_compile.py benches/bench_warmup.py -m
   torch --perf-device=gpu``, and prints per
   bench the device it recorded, its SM and memory clocks before and after its timed
   rounds (MHz), the most power and heat they saw, whether its clocks moved or
   throttled, how long they took to settle, its rounds, and its spread: the
   interquartile range of its rounds over their median. ``-k`` narrows the benches.
2. Runs an A/A of the warm CUDA bench, ``perfsuite ab HEAD HEAD --max-seconds S --
   benches/bench_warmup.py -k "<bench>" --perf-device=gpu`` (HEAD as committed; the
   procedure as users run it, with its budget), and prints its verdict, change and
   interval, and the X of "no regression above +X%" against the bench's threshold. The
   A/A passes as ``perfsuite ab``'s exit status 0 says: no regression shown, and the
   bench judged at its threshold or bounded under twice it.

Exit status: 0 every check passed; 1 one failed (a torch bench that ran off the GPU, a
bench with fewer rounds than a rank test decides on, a pytest run that failed, an A/A
that did not exit 0: a false alarm, a bench too noisy to decide, or an error); 2 no GPU
here, said in one line. Clocks that moved or throttled are reported, not failed: they
say which numbers to distrust.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.bench.gpu import detect_gpu
from perfsuite.verdict.stats import MIN_RANK_SAMPLES
from perfsuite.verdict.textable import format_table

ROOT = Path(__file__).resolve().parents[2]
#: the files of the torch benches that run on either device (bench_dali.py's CPU
#: pipelines stay on the CPU by design)
TORCH_BENCHES = ("benches/bench_compile.py", "benches/bench_warmup.py")
#: the warm CUDA bench the A/A runs: test_warmup_torch_cuda[warm]
WARM_CUDA = "warmup_torch_cuda and not cold and not cudnn"
HEADER = [
    "bench",
    "device",
    "sm MHz",
    "mem MHz",
    "max W",
    "max C",
    "clocks",
    "settle s",
    "rounds",
    "spread",
]


@dataclass(frozen=True)
class BenchRow:
    """One bench of the torch run, as the check reads it from ``--benchmark-json``."""

    name: str
    device: str | None
    rounds: int
    spread: float | None  # interquartile range over median
    gpu: dict[str, Any] | None

    def cells(self) -> list[str]:
        gpu = self.gpu or {}
        before, after = gpu.get("before") or {}, gpu.get("after") or {}

        def moved(key: str) -> str:
            return f"{before[key]}->{after[key]}" if key in before and key in after else "-"

        flags = [name for name in ("clocks_moved", "throttled") if gpu.get(name)]
        power = gpu.get("power_w_max")
        settle = gpu.get("settle_s")
        settled = "" if gpu.get("settled", True) else " (not settled)"
        return [
            self.name,
            self.device or "-",
            moved("sm_mhz"),
            moved("mem_mhz"),
            "-" if power is None else f"{power:.0f}",
            str(gpu["temp_c_max"]) if "temp_c_max" in gpu else "-",
            ", ".join(flags) or ("steady" if gpu else "not read"),
            "-" if settle is None else f"{settle:.1f}{settled}",
            str(self.rounds),
            "-" if self.spread is None else f"{self.spread * 100:.1f}%",
        ]


def bench_rows(report: dict[str, Any]) -> list[BenchRow]:
    """The benches of a pytest-benchmark JSON report, in its order."""
    rows = []
    for bench in report.get("benchmarks", []):
        stats = bench.get("stats") or {}
        result = (bench.get("extra_info") or {}).get("perfsuite") or {}
        median, iqr = stats.get("median"), stats.get("iqr")
        rows.append(
            BenchRow(
                name=str(bench.get("fullname", bench.get("name"))).rsplit("::", 1)[-1],
                device=result.get("device"),
                rounds=int(stats.get("rounds") or len(stats.get("data") or [])),
                spread=iqr / median if median and iqr is not None else None,
                gpu=result.get("gpu"),
            )
        )
    return rows


def bench_problems(rows: list[BenchRow]) -> list[str]:
    """What fails the check among the benches: none ran, or one ran off the GPU or with
    fewer rounds than a rank test can decide on."""
    if not rows:
        return ["no torch bench ran on the GPU (all skipped? see the pytest output)"]
    problems = []
    for row in rows:
        if row.device != "gpu":
            problems.append(f"{row.name} recorded device {row.device!r}, not 'gpu'")
        if row.rounds < MIN_RANK_SAMPLES:
            problems.append(
                f"{row.name} ran {row.rounds} rounds; a rank test needs {MIN_RANK_SAMPLES}"
            )
    return problems


def aa_line(entry: dict[str, Any], code: int) -> tuple[str, bool]:
    """One line on the A/A's bench from its entry in ``pairs.json`` and ``perfsuite ab``'s
    exit status, and whether the A/A passed: exit status 0, so neither a regression (a
    false alarm, 1) nor a bench too noisy to have caught twice its threshold (3)."""
    ci = entry.get("ci")
    name = str(entry.get("nodeid", "?")).rsplit("::", 1)[-1]
    verdict = entry.get("verdict")
    if not ci or entry.get("change") is None:
        return f"A/A {name}: no interval (verdict {verdict!r}; perfsuite ab exited {code})", False
    low, high = float(ci[0]), float(ci[1])
    threshold = float(entry.get("threshold") or 0.0)
    return (
        f"A/A {name}: {verdict}, change {entry['change'] * 100:+.1f}%, interval "
        f"[{low * 100:+.1f}%, {high * 100:+.1f}%] over {entry.get('pairs')} pairs: no "
        f"regression above {high * 100:+.1f}% (threshold {threshold * 100:g}%); perfsuite ab "
        f"exited {code}",
        code == 0,
    )


def run_benches(scale: str, out: Path, select: str | None = None) -> tuple[int, list[BenchRow]]:
    """The torch benches on the GPU (those ``select``, a ``-k`` expression, picks); pytest's
    exit status and the benches it measured. Each bench's line and its seconds stream as
    it ends (``-v``, ``--durations``), so a run cut short still says how far it got."""
    report = out / "torch-gpu.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        *TORCH_BENCHES,
        "-m",
        "torch",
        "--perf-device=gpu",
        f"--perf-scale={scale}",
        "-p",
        "no:cacheprovider",
        "-rs",
        "-v",
        "--durations=0",
        f"--benchmark-json={report}",
        *(["-k", select] if select else []),
    ]
    print("$", " ".join(command), flush=True)
    code = subprocess.run(command, cwd=ROOT, check=False).returncode
    rows = bench_rows(json.loads(report.read_text())) if report.is_file() else []
    return code, rows


def run_aa(scale: str, seconds: float, out: Path) -> tuple[int, str, bool]:
    """The A/A of the warm CUDA bench: perfsuite ab's exit status, the line, passed."""
    report = out / "aa"
    command = [
        sys.executable,
        "-m",
        "perfsuite.cli",
        "ab",
        "HEAD",
        "HEAD",
        "--max-seconds",
        f"{seconds:g}",
        "--report",
        str(report),
        "--",
        "benches/bench_warmup.py",
        "-k",
        WARM_CUDA,
        "--perf-device=gpu",
        f"--perf-scale={scale}",
    ]
    print("$", " ".join(command), flush=True)
    code = subprocess.run(command, cwd=ROOT, check=False).returncode
    pairs_json = report / "pairs.json"
    entries = json.loads(pairs_json.read_text()) if pairs_json.is_file() else []
    if not entries:
        return code, "A/A: perfsuite ab judged no bench (see its output)", False
    line, passed = aa_line(entries[0], code)
    return code, line, passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="default", choices=["smoke", "default", "full"])
    parser.add_argument(
        "--max-seconds", type=float, default=90.0, help="the A/A's budget (default 90 s)"
    )
    parser.add_argument("--keep", type=Path, help="keep the JSON report and A/A report here")
    parser.add_argument("--no-ab", action="store_true", help="skip the A/A")
    parser.add_argument("-k", dest="select", help="only the torch benches this -k expression picks")
    args = parser.parse_args(argv)
    gpu = detect_gpu()
    if gpu.count == 0:
        print(f"gpu_check: no GPU found: {gpu.reason}", file=sys.stderr)
        return 2
    out = args.keep or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"GPU: {gpu.name} ({gpu.count}), driver {gpu.driver}, CUDA {gpu.cuda}", flush=True)
    code, rows = run_benches(args.scale, out, args.select)
    problems = [] if code == 0 else [f"pytest exited {code}"]
    problems += bench_problems(rows)
    print()
    for line in format_table([row.cells() for row in rows], HEADER):
        print(line)
    if not args.no_ab:
        ab_code, line, passed = run_aa(args.scale, args.max_seconds, out)
        print(line)
        if not passed:
            problems.append(f"the A/A did not pass: perfsuite ab exited {ab_code}")
    for problem in problems:
        print(f"FAILED: {problem}")
    print(f"reports in {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
