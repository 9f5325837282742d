"""Measure ``perfsuite ab`` on this machine: false alarms on unchanged code, power on slowdowns.

Builds a temporary git repository with two benches that use perfsuite's fixtures:

* ``test_pil_decode``: PIL decoding of the ``imagenet-like`` JPEGs, single-threaded;
* ``test_tfdata_parallel_map``: a tf.data ``parallel_map`` pipeline (read, decode, crop
  and scale with perfsuite's ``tf_image``, batch, prefetch) pulled a few batches per call
  (skipped without TensorFlow),

and commits: ``base``; ``unchanged`` (a comment); ``+5%``, ``+10%`` and ``+20%`` more
work (that fraction of the images decoded a second time, in the same place as the
first decode). Each case runs ``perfsuite ab base <case>`` ``--runs`` times and records
every bench's verdict, measured change, pairs, its seconds of alternation and the wall
time of the run. It prints, per case and bench, how many runs were slower / faster /
same / inconclusive, the median measured change and its spread (min to max), the
median seconds the bench alternated and the median wall time per A/B run, and how
much of the CPUs other work took during the runs (the report's ``machine.json``), and
writes every run to ``--out`` (JSON); ``--reports DIR`` keeps each run's report.
Stopped (Ctrl-C, SIGTERM), it stops the A/B or gated pytest it is running, which stops
its own children (:func:`user_suite.run_stoppable`).

``--suite benchmark`` builds the repository a pytest-benchmark user has instead
(:mod:`user_suite`): no pytest configuration file, no perfsuite API, PIL decoding timed
by the ``benchmark`` fixture in ``test_decode.py`` and by ``benchmark.pedantic`` in
``tests/test_decode_pedantic.py``, the same cases; ``perfsuite ab`` then gets no pytest
arguments but ``--perf-scale``, so its default selection finds both files.

``--via gate`` measures ``pytest --perf-gate`` instead of ``perfsuite ab``: each run
saves a baseline at ``base`` in a fresh storage, checks the case out and gates it
against that baseline (EXTRA_AB_OPTIONS go to the gate's A/B), and records the exit
status, each bench's verdict words and the gate's line; the summary gives, per case,
the exit statuses, the runs that failed and the gated runs' wall seconds. Usage::

    python tools/validation/ab_power.py [--runs 20] [--scale default] [--cases unchanged,+10%]
                             [--suite perf|benchmark] [--via ab|gate]
                             [--select benches/bench_pil.py] [--out ab_power.json]
                             [--keep DIR] [--reports DIR] [-- EXTRA_AB_OPTIONS]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfsuite.ab.load import MachineLoad

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tools.validation import user_suite

EXTRA = {"unchanged": 0.0, "+5%": 0.05, "+10%": 0.10, "+20%": 0.20}
VERDICTS = ("slower", "faster", "same", "inconclusive")
#: what each run keeps of a bench's entry in pairs.json
RECORDED = (
    "verdict",
    "change",
    "ci",
    "pairs",
    "seconds",
    "skipped",
    "drained",
    "sessions",
    "started",
    "first",  # a confirmed bench's first pair of processes
    "second",  # a first-stage `same`'s second pair of processes
    "futile",  # the first pair stopped early: its budget could not decide
)

PIL_BENCH = '''
"""PIL decoding of the imagenet-like JPEGs, single-threaded; EXTRA of them decoded twice."""
import io

from PIL import Image

IMAGES = 20
EXTRA = {extra}  # the fraction of the images decoded a second time{comment}


def _decode(data):
    with Image.open(io.BytesIO(data)) as image:
        image.load()


def test_pil_decode(perf, image_dataset):
    files = [p.read_bytes() for p in image_dataset.files[:IMAGES]]
    again = files[: round(EXTRA * IMAGES)]

    def decode():
        for data in files:
            _decode(data)
        for data in again:
            _decode(data)

    perf.measure(decode, items=IMAGES, dataset=image_dataset)
'''

TFDATA_BENCH = '''
"""tf.data parallel_map: read, decode, batch, prefetch; EXTRA of the images decoded twice."""
import pytest

tf = pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.workloads.tf_image import crop_and_scale, decode
from perfsuite.workloads.tfdata_pipelines import take_batches

PERIOD = 20
EXTRA = {extra}  # the fraction of the images decoded a second time{comment}


def _load(index, path):
    data = tf.io.read_file(path)
    image = crop_and_scale(decode(data))
    twice = round(EXTRA * PERIOD)
    if twice:

        def again():
            extra = tf.image.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE")
            return image + 0.0 * tf.reduce_mean(tf.cast(extra, tf.float32))

        image = tf.cond(index % PERIOD < twice, again, lambda: image)
    return image


@pytest.mark.tf
def test_tfdata_parallel_map(perf, image_dataset):
    batch, batches = perf.pick(smoke=8, default=32, full=64), perf.pick(smoke=2, default=4, full=4)
    paths = [str(p) for p in image_dataset.files]
    ds = (
        tf.data.Dataset.from_tensor_slices(paths)
        .shuffle(len(paths), seed=1)
        .repeat()
        .enumerate()
        .map(_load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        .batch(batch)
        .prefetch(tf.data.AUTOTUNE)
    )
    iterator = iter(ds)
    take_batches(iterator, 4 * batches)
    perf.measure(lambda: take_batches(iterator, batches), items=batch * batches,
                 dataset=image_dataset)
'''


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def write_case(root: Path, extra: float, comment: str = "") -> None:
    benches = root / "benches"
    benches.mkdir(exist_ok=True)
    (benches / "bench_pil.py").write_text(PIL_BENCH.format(extra=extra, comment=comment))
    (benches / "bench_tfdata.py").write_text(TFDATA_BENCH.format(extra=extra, comment=comment))


def build_repo(
    root: Path, write: Callable[[Path, float, str], None] = write_case
) -> dict[str, str]:
    """The repository, each case's files written by ``write``, and its commits: case
    name -> sha (``base`` included)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "ab_power")
    git(root, "config", "user.email", "ab_power@perfsuite.invalid")
    (root / ".gitignore").write_text(".benchmarks/\n__pycache__/\n")
    shas: dict[str, str] = {}
    for name, extra in [("base", 0.0), *EXTRA.items()]:
        write(root, extra, "  (unchanged: a comment only)" if name == "unchanged" else "")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", name)
        shas[name] = git(root, "rev-parse", "HEAD")
    return shas


def run_ab(
    root: Path,
    base: str,
    head: str,
    extra: list[str],
    pytest_args: list[str],
    keep_report: Path | None = None,
) -> dict[str, Any]:
    """One ``perfsuite ab BASE HEAD EXTRA -- PYTEST_ARGS`` run (``extra`` names its
    worktree cache): exit code, wall seconds, and each bench's result; its report folder
    (every block, the PNGs, both sides' JSON) is moved to ``keep_report`` when given,
    else removed."""
    report = Path(tempfile.mkdtemp(prefix="ab-power-report-")) / "r"
    command = [
        sys.executable,
        "-m",
        "perfsuite.cli",
        "ab",
        base,
        head,
        "--report",
        str(report),
        *extra,
        "--",
        *pytest_args,
    ]
    start = time.monotonic()
    try:  # the report folder goes, kept or not, even where the run is stopped
        code, output = user_suite.run_stoppable(command, root)
        seconds = time.monotonic() - start
        benches: dict[str, Any] = {}
        pairs = report / "pairs.json"
        if pairs.is_file():
            for entry in json.loads(pairs.read_text()):
                name = entry["nodeid"].split("::")[-1]
                benches[name] = {k: entry.get(k) for k in RECORDED}
        load = MachineLoad.from_report(report)  # how busy the machine was
        if keep_report is not None and report.is_dir():
            shutil.move(str(report), str(keep_report))
    finally:
        shutil.rmtree(report.parent, ignore_errors=True)
    tail = output.strip().splitlines()[-20:]
    return {
        "code": code,
        "seconds": seconds,
        "benches": benches,
        "tail": tail,
        "machine": dataclasses.asdict(load) if load else None,
    }


def machine_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per case, the median and largest share of the CPUs other work took during a run."""
    lines = []
    for case, runs in results.items():
        loads = [run["machine"] for run in runs if run.get("machine")]
        if not loads:
            continue
        said = []
        for key, name in (("other", "other processes"), ("steal", "steal")):
            shares = [load[key] * 100 for load in loads]
            said.append(f"{name} median {statistics.median(shares):.1f}% (max {max(shares):.1f}%)")
        lines.append(f"{case}: machine during a run: {', '.join(said)}")
    return lines


def stage_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per case: how the final verdicts were reached. A first-stage `same` checked by a
    second pair of processes (kept, or made a suspect), and suspects confirmed in fresh
    pairs by the pairs of processes their confirmation took."""
    lines = []
    for case, runs in results.items():
        entries = [e for run in runs for e in run["benches"].values()]
        second = [e for e in entries if e.get("second")]
        suspects = [e for e in second if e.get("sessions")]
        confirmed = Counter(len(e["sessions"]) for e in entries if e.get("sessions"))
        read = ", ".join(f"{e['second']['change'] * 100:+.1f}%" for e in suspects) or "-"
        lines.append(
            f"{case}: {len(second)} first-stage `same` checked in a second pair of "
            f"processes, {len(suspects)} made suspects by it ({read}); "
            f"confirmations by pairs of processes {dict(sorted(confirmed.items()))}"
        )
    return lines


def decision_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per case: the exit statuses, and per bench what its rows said against the rule
    of :mod:`perfsuite.ab.verdicts`: how many `slower`, how many with a bound (the slower
    end of the interval of a bench not judged at its threshold: its X) and its spread,
    and how many were caught or flagged (`slower`, or a bound of at least the
    threshold, 5%)."""
    lines = []
    for case, runs in results.items():
        exits = Counter(run["code"] for run in runs)
        walls = sorted(run["seconds"] for run in runs)
        lines.append(
            f"{case}: exits {dict(sorted(exits.items()))} of {len(runs)}; wall s per run "
            f"median {statistics.median(walls):.0f} (min {walls[0]:.0f}, max {walls[-1]:.0f})"
            if walls
            else f"{case}: no runs"
        )
        names = sorted({b for run in runs for b in run["benches"]})
        for name in names:
            entries = [run["benches"][name] for run in runs if name in run["benches"]]
            slower = sum(1 for e in entries if e.get("verdict") == "slower")
            bounds = [
                e["ci"][1]
                for e in entries
                if e.get("verdict") == "inconclusive" and isinstance(e.get("ci"), list)
            ]
            flagged = slower + sum(1 for b in bounds if b >= 0.05)
            spread = (
                f"X median {statistics.median(bounds) * 100:+.1f}% "
                f"(min {min(bounds) * 100:+.1f}%, max {max(bounds) * 100:+.1f}%)"
                if bounds
                else "no bound"
            )
            lines.append(
                f"  {name}: {slower} slower, {len(bounds)} with a bound: {spread}; "
                f"caught or flagged (slower, or X >= +5%) {flagged} of {len(entries)}"
            )
    return lines


def summarize(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    header = [
        "case",
        "bench",
        *VERDICTS,
        "median change",
        "spread",
        "s alternating",
        "s per A/B run",
    ]
    rows = []
    for case, runs in results.items():
        names = sorted({b for run in runs for b in run["benches"]})
        wall = statistics.median(run["seconds"] for run in runs) if runs else 0.0
        failed = sum(1 for run in runs if run["code"] == 2)
        for name in names:
            entries = [run["benches"][name] for run in runs if name in run["benches"]]
            tally = Counter(str(e.get("verdict")) for e in entries)
            changes = [e["change"] for e in entries if e.get("change") is not None]
            median = f"{statistics.median(changes) * 100:+.1f}%" if changes else "-"
            spread = f"{min(changes) * 100:+.1f}%..{max(changes) * 100:+.1f}%" if changes else "-"
            alternating = [e["seconds"] for e in entries if e.get("seconds") is not None]
            bench_s = f"{statistics.median(alternating):.0f}" if alternating else "-"
            cells = [median, spread, bench_s, f"{wall:.0f}"]
            rows.append([case, name, *(str(tally[v]) for v in VERDICTS), *cells])
        if failed:
            rows.append([case, f"({failed} runs exited 2)", *[""] * (len(header) - 2)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]


def save(out: Path, document: dict[str, Any], results: dict[str, list[dict[str, Any]]]) -> None:
    """Write the settings and every run so far to ``out`` atomically, so a stopped
    measurement keeps them."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps({**document, "cases": results}, indent=1))
    tmp.replace(out)


def run_case(
    args: argparse.Namespace,
    work: Path,
    base: str,
    head: str,
    extra: list[str],
    pytest_args: list[str],
    keep: Path | None,
) -> dict[str, Any]:
    """One run of a case, by ``perfsuite ab`` or by the gate (``args.via``), printed."""
    cache = ["--cache-dir", str(work / "worktrees")]
    run: dict[str, Any]
    if args.via == "gate":
        run = user_suite.run_gate(work / "repo", base, head, pytest_args, [*cache, *extra])
        said = f"{run['status']} {run['rows']}"
    else:
        run = run_ab(work / "repo", base, head, [*cache, *extra], pytest_args, keep)
        said = str({b: e.get("verdict") for b, e in run["benches"].items()})
    seconds = "-" if run["seconds"] is None else f"{run['seconds']:.0f}"
    print(f"{args.via}: exit {run['code']} {seconds} s {said}", flush=True)
    if run["code"] not in (0, 1, 3):
        print("  " + "\n  ".join(run["tail"]), flush=True)
    return run


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, extra = args_in[:cut], args_in[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="A/B runs per case (default 20)")
    parser.add_argument("--scale", default="default", choices=["smoke", "default", "full"])
    parser.add_argument("--cases", default=",".join(EXTRA), help="comma-separated case names")
    parser.add_argument("--out", type=Path, default=Path("ab_power.json"))
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    parser.add_argument(
        "--reports",
        type=Path,
        help="keep each run's report folder here, as <case>-<run> (e.g. +10%%-20), so a "
        "surprising verdict can be read block by block",
    )
    parser.add_argument(
        "--select",
        help="comma-separated paths both sides run (perf suite only; default benches; "
        "benches/bench_pil.py runs the PIL bench in processes that never import TensorFlow)",
    )
    parser.add_argument(
        "--suite",
        choices=["perf", "benchmark"],
        default="perf",
        help="perf (default): benches on perfsuite's fixtures; benchmark: a pytest-benchmark "
        "user's suite, no pytest configuration, only the benchmark fixture",
    )
    parser.add_argument(
        "--via",
        choices=["ab", "gate"],
        default="ab",
        help="ab (default): perfsuite ab base case; gate: save a baseline at base, then "
        "pytest --benchmark-compare --perf-gate at the case",
    )
    args = parser.parse_args(args_in)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in EXTRA]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)} (known: {', '.join(EXTRA)})")
    if args.suite == "benchmark" and args.select is not None:
        parser.error("--select: the benchmark suite runs perfsuite ab's default selection")
    if args.via == "gate" and args.reports is not None:
        parser.error("--reports keeps perfsuite ab's reports: not with --via gate")
    if args.reports is not None:
        if args.reports.exists() and (not args.reports.is_dir() or any(args.reports.iterdir())):
            parser.error(f"--reports {args.reports}: not an empty folder; name a new one")
        args.reports.mkdir(parents=True, exist_ok=True)
    select = [p.strip() for p in (args.select or "benches").split(",") if p.strip()]
    work = args.keep or Path(tempfile.mkdtemp(prefix="ab-power-"))
    pytest_args = [f"--perf-scale={args.scale}"]
    if args.suite == "perf":
        pytest_args = [*select, *pytest_args, f"--perf-data-dir={work / 'data'}", "-q"]
    about = user_suite.provenance(Path(__file__).resolve().parents[2])
    document = {
        **about,
        "suite": args.suite,
        "via": args.via,
        "scale": args.scale,
        "runs": args.runs,
        "pytest_args": pytest_args,
        "extra_ab": extra,
    }
    print(user_suite.provenance_line(about), flush=True)
    try:
        write = write_case if args.suite == "perf" else user_suite.write_benchmark_case
        shas = build_repo(work / "repo", write)
        results: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
        for i in range(args.runs):
            for case in cases:  # cases interleaved, so a slow hour hits all of them
                keep = None if args.reports is None else args.reports / f"{case}-{i + 1}"
                print(f"run {i + 1}/{args.runs} {case}: ", end="", flush=True)
                run = run_case(args, work, shas["base"], shas[case], extra, pytest_args, keep)
                results[case].append(run)
                save(args.out, document, results)  # every run kept
        print(user_suite.provenance_line(about))
        if args.via == "gate":
            print("\n".join(user_suite.gate_lines(results)))
        else:
            lines = summarize(results) + decision_lines(results) + stage_lines(results)
            print("\n".join(lines + machine_lines(results)))
        print(f"wrote {args.out}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    user_suite.exit_stoppable(main)
