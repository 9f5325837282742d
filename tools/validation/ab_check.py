"""Check the verdict on this machine: A/A false alarms, injected slowdowns, and retracing.

Runs a real bench (PIL decoding the ``imagenet-like`` JPEGs, smoke scale) through
pytest again and again, each run judged by ``--benchmark-compare ... --perf-gate``:

* A/A: the unchanged bench, each run compared with the run before it;
* +20% and +10% work: the same bench with that much more decoding per call (the same
  images decoded again), compared with the unchanged run of the same cycle;
* retracing: a ``tf.function`` bench (one trace per call shape) changed to see three
  shapes instead of one, compared with the unchanged version, in ``--cycles``
  parametrized trials (skipped without TensorFlow).

Verdicts are judged with the unchanged runs saved so far as history, as a nightly
job's storage holds them (their run-to-run spread can widen a bench's threshold; the
first five cycles have too little history for that), and also without it. It prints
how many runs of each case got each verdict, how often the gate failed, and how long
one comparison cycle (a pytest run with ``--benchmark-compare --perf-gate``)
takes. Usage::

    python tools/validation/ab_check.py [--cycles 20] [--rounds 12] [--timer time.process_time]
                             [--no-retrace] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.verdict.compare import compare_runs
from perfsuite.verdict.runs import load_run

DECODE_BENCH = '''
"""PIL decoding of the imagenet-like JPEGs; AB_PASSES sets the decoding passes per call."""
import io
import os

import pytest
from PIL import Image

IMAGES = 5
BASE_PASSES = 10


@pytest.mark.perf(group="ab", variant="pil_decode", baseline="pil_decode")
def test_decode(perf, image_dataset):
    files = [p.read_bytes() for p in image_dataset.files[:IMAGES]]
    passes = int(os.environ.get("AB_PASSES", str(BASE_PASSES)))

    def decode():
        for _ in range(passes):
            for data in files:
                with Image.open(io.BytesIO(data)) as image:
                    image.load()

    perf.measure(decode, items=IMAGES * BASE_PASSES, dataset=image_dataset,
                 params={"passes": passes})
'''

RETRACE_BENCH = '''
"""A tf.function called with AB_SHAPES distinct input shapes: one trace per shape."""
import os

import pytest

tf = pytest.importorskip("tensorflow", reason="pip install 'perfsuite[tf]'")
TRIALS = int(os.environ.get("AB_TRIALS", "20"))


@pytest.mark.perf(group="ab_retrace")
@pytest.mark.parametrize("trial", range(TRIALS), ids=lambda t: f"trial{t}")
def test_retrace(perf, trace_counter, trial):
    shapes = int(os.environ.get("AB_SHAPES", "1"))
    fn = tf.function(lambda x: tf.reduce_sum(x * 2.0))
    inputs = [tf.zeros((8, 8 + i % shapes)) for i in range(6)]
    with trace_counter.track(fn):
        perf.measure(lambda: [fn(x) for x in inputs], items=len(inputs),
                     params={"shapes": shapes})
'''

VERDICTS = ("slower", "faster", "same", "inconclusive", "not comparable")


@dataclass
class Case:
    """Tally of one experiment case."""

    name: str
    verdicts: Counter[str] = field(default_factory=Counter)
    plain: Counter[str] = field(default_factory=Counter)  # the same, judged without history
    counters_rose: int = 0
    gate_failed: int = 0
    runs: int = 0
    seconds: list[float] = field(default_factory=list)


def pytest_run(workdir: Path, out: Path, env: dict[str, str], *args: str) -> tuple[int, float]:
    """One pytest session in ``workdir``; returns its exit status and wall time."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--benchmark-quiet",
        f"--benchmark-json={out}",
        *args,
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=workdir, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or not out.exists():
        sys.exit(
            f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.returncode, elapsed


def judge(
    case: Case,
    baseline: Path,
    current: Path,
    status: int,
    elapsed: float,
    history: list[Path] | None = None,
) -> None:
    """Count the verdicts of ``current`` against ``baseline`` (offline, same code as the gate).

    ``history`` is the unchanged runs saved before, as a nightly's storage holds them:
    their run-to-run spread can widen a bench's threshold. ``plain`` counts the verdicts
    without it.
    """
    runs = [load_run(p) for p in history or []]
    comparison = compare_runs(load_run(baseline), load_run(current), history=runs)
    for item in comparison.verdicts:
        case.verdicts[item.verdict.value if item.verdict else "not comparable"] += 1
        case.counters_rose += bool(item.counters_rose)
    for item in compare_runs(load_run(baseline), load_run(current)).verdicts:
        case.plain[item.verdict.value if item.verdict else "not comparable"] += 1
    case.gate_failed += status == 1
    case.runs += 1
    case.seconds.append(elapsed)


def decode_cycles(workdir: Path, cycles: int, rounds: int, timer: str | None) -> list[Case]:
    common = ["bench_ab_decode.py", "--perf-scale=smoke", f"--perf-rounds={rounds}"]
    if timer:
        common.append(f"--benchmark-timer={timer}")
    aa, w20, w10 = Case("A/A (unchanged)"), Case("+20% work"), Case("+10% work")
    previous = workdir / "a0.json"
    pytest_run(workdir, previous, {"AB_PASSES": "10"}, *common)
    for cycle in range(1, cycles + 1):
        current = workdir / f"a{cycle}.json"
        gate = [f"--benchmark-compare={previous}", "--perf-gate"]
        status, elapsed = pytest_run(workdir, current, {"AB_PASSES": "10"}, *common, *gate)
        unchanged = [workdir / f"a{i}.json" for i in range(cycle)]  # saved before this run
        judge(aa, previous, current, status, elapsed, unchanged)
        for case, passes in ((w20, "12"), (w10, "11")):
            slow = workdir / f"w{passes}_{cycle}.json"
            gate = [f"--benchmark-compare={current}", "--perf-gate"]
            status, elapsed = pytest_run(workdir, slow, {"AB_PASSES": passes}, *common, *gate)
            judge(case, current, slow, status, elapsed, [*unchanged, current])
        previous = current
        print(
            f"cycle {cycle}/{cycles}: A/A {dict(aa.verdicts)}, +20% {dict(w20.verdicts)}, "
            f"+10% {dict(w10.verdicts)}",
            flush=True,
        )
    return [aa, w20, w10]


def retrace_case(workdir: Path, trials: int) -> Case | None:
    case = Case("retrace (1 -> 3 shapes)")
    env = {"AB_TRIALS": str(trials)}
    common = ["bench_ab_retrace.py", "--perf-scale=smoke"]
    base = workdir / "retrace_base.json"
    pytest_run(workdir, base, {**env, "AB_SHAPES": "1"}, *common)
    if not load_run(base).benches:
        return None  # TensorFlow is missing: the bench skipped
    changed = workdir / "retrace_changed.json"
    gate = [f"--benchmark-compare={base}", "--perf-gate"]
    status, elapsed = pytest_run(workdir, changed, {**env, "AB_SHAPES": "3"}, *common, *gate)
    judge(case, base, changed, status, elapsed)
    case.runs = trials  # one session, ``trials`` benches
    return case


def print_table(cases: list[Case]) -> None:
    header = [
        "case",
        "benches judged",
        *VERDICTS,
        "counter rose",
        "slower without history",
        "gate failed runs (no history)",
        "median s/cycle",
    ]
    rows = [header]
    for case in cases:
        rows.append(
            [
                case.name,
                str(sum(case.verdicts.values())),
                *(str(case.verdicts.get(v, 0)) for v in VERDICTS),
                str(case.counters_rose),
                str(case.plain.get("slower", 0)),
                str(case.gate_failed),
                f"{statistics.median(case.seconds):.1f}" if case.seconds else "-",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument(
        "--timer",
        help="pytest-benchmark timer for the decode bench, e.g. time.process_time: CPU time "
        "of this process, much less sensitive than wall time to other load on the machine",
    )
    parser.add_argument("--no-retrace", action="store_true", help="skip the TensorFlow case")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the runs")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="perfsuite-ab-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # python_files names the benches, so files given on the command line are collected once
    (workdir / "pytest.ini").write_text("[pytest]\npython_files = bench_*.py\n")
    (workdir / "bench_ab_decode.py").write_text(DECODE_BENCH)
    (workdir / "bench_ab_retrace.py").write_text(RETRACE_BENCH)
    start = time.perf_counter()
    try:
        cases = decode_cycles(workdir, args.cycles, args.rounds, args.timer)
        if not args.no_retrace:
            retrace = retrace_case(workdir, args.cycles)
            if retrace is not None:
                cases.append(retrace)
        print()
        print_table(cases)
        load = os.getloadavg()
        print(
            f"\ntotal {time.perf_counter() - start:.0f} s; load average now "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
