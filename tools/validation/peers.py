"""Measure what the tools a user would pick instead of perfsuite say about the same changes.

Builds the temporary git repository of ``ab_power.py --suite benchmark`` (a
pytest-benchmark user's suite, :mod:`user_suite`) with the same commits: ``base``;
``unchanged`` (a comment); ``+5%``, ``+10%`` and ``+20%`` (that fraction of the 20
images decoded a second time). Each run compares ``base`` with a case by each tool:

* ``pytest-benchmark``: its own two-session compare of ``test_decode.py`` (the
  ``benchmark`` fixture timing ``decode_all``), without perfsuite's plugin. At ``base``,
  ``pytest test_decode.py --benchmark-autosave`` in a fresh ``--benchmark-storage``; at the
  case, the same with ``--benchmark-compare --benchmark-compare-fail=median:5%``. Its
  verdict is ``slower`` when it printed "Performance has regressed", ``pass`` when the
  session exited 0, ``error`` otherwise; it has no "faster". The change is the ratio of
  the two saved medians less 1 (the statistic its threshold judged).
* ``pyperf``: ``bench_pyperf.py`` (written into the repository, not committed) times
  the same ``decode_all`` on the same JPEGs with pyperf's defaults (calibrated loops of
  at least 0.1 s, 1 warm-up and 3 values per worker process) in ``--processes`` worker
  processes (default 20, as pyperf's): about 21 ms a call here, so one side takes about
  35 s. Then ``python -m pyperf compare_to base.json case.json``; its verdict is
  ``slower`` or ``faster`` where it printed "N.NNx slower/faster" (its t-test found the
  means different), ``same`` where it hid the benchmark as not significant or said "no
  change", ``error`` otherwise. The change is the ratio of the two means less 1 (the
  ratio compare_to prints), read from both JSON files.

Cases and tools are interleaved run by run, so a slow hour hits all of them. It prints
the date, machine and perfsuite commit, one line per comparison and a markdown table per
tool, and writes every comparison to ``--out`` (JSON), replacing the file atomically after
each. Seconds per run are the wall seconds of the two timed sessions together. Usage::

    python tools/validation/peers.py [--runs 20] [--cases unchanged,+5%,+10%,+20%]
                                     [--tools pytest-benchmark,pyperf] [--processes 20]
                                     [--out peers.json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tools.validation import ab_power, user_suite

TOOLS = ("pytest-benchmark", "pyperf")
#: the root-level bench of the user's suite: ``benchmark(decode_all, jpegs)``
BENCH_FILE = user_suite.BENCHMARK_FILES[0]
BENCH_NAME = "test_decode"
COMPARE_FAIL = "median:5%"
PYPERF_SCRIPT = "bench_pyperf.py"
REGRESSED = "Performance has regressed"
RATIO = re.compile(r"(\d+(?:\.\d+)?)x (slower|faster)")

PYPERF_SOURCE = '''"""pyperf: decode_all of test_decode.py on the JPEGs its jpegs fixture makes."""
import io

import numpy as np
import pyperf
from PIL import Image

import test_decode


def jpegs():
    rng = np.random.default_rng({seed})
    pictures = [test_decode._picture(rng) for _ in range(test_decode.IMAGES)]
    files = [io.BytesIO() for _ in pictures]
    for picture, file in zip(pictures, files):
        Image.fromarray(picture).save(file, format="JPEG", quality=90)
    return [file.getvalue() for file in files]


if __name__ == "__main__":
    pyperf.Runner().bench_func("decode_all", test_decode.decode_all, jpegs())
'''


def pyperf_source() -> str:
    """The pyperf script, seeded as the suite's ``jpegs`` fixture is, so it makes the
    same bytes (a JPEG written to a file or to memory by PIL is the same)."""
    found = re.search(r"default_rng\((\d+)\)", user_suite.COMMON)
    if found is None:
        raise RuntimeError("user_suite.COMMON no longer seeds its JPEGs with default_rng(N)")
    return PYPERF_SOURCE.format(seed=found.group(1))


def benchmark_verdict(code: int, lines: Sequence[str]) -> str:
    """``slower`` (the compare failed its threshold), ``pass`` (exit 0) or ``error``."""
    if any(REGRESSED in line for line in lines):
        return "slower"
    return "pass" if code == 0 else "error"


def compare_to_verdict(lines: Sequence[str]) -> tuple[str, float | None]:
    """What ``pyperf compare_to`` printed for one benchmark: (``slower``, ``faster``,
    ``same`` or ``error``, the change its printed ratio says, or None when it printed
    none). ``1.25x slower`` is +25%; ``1.25x faster`` is 1 / 1.25 - 1 = -20%."""
    text = "\n".join(lines)
    found = RATIO.search(text)
    if found:
        ratio = float(found.group(1))
        if found.group(2) == "slower":
            return "slower", ratio - 1.0
        return "faster", 1.0 / ratio - 1.0
    if "no change" in text:
        return "same", 0.0
    if "not significant" in text.lower():
        return "same", None
    return "error", None


def saved_medians(storage: Path, name: str = BENCH_NAME) -> list[float]:
    """The median of bench ``name`` in each run saved in a pytest-benchmark storage,
    oldest first (autosaved files are numbered 0001_, 0002_, ...)."""
    medians = []
    for path in sorted(storage.glob("*/*.json"), key=lambda p: p.name):
        for bench in json.loads(path.read_text())["benchmarks"]:
            if bench["name"] == name:
                medians.append(float(bench["stats"]["median"]))
    return medians


def pyperf_values(path: Path) -> list[float]:
    """Every value (seconds per loop) of a one-benchmark pyperf JSON file, warm-ups and
    the calibration run left out, as ``pyperf.Benchmark.get_values`` gives them."""
    (bench,) = json.loads(path.read_text())["benchmarks"]
    return [float(v) for run in bench["runs"] for v in run.get("values", [])]


def ratio_change(base: float, case: float) -> float:
    return case / base - 1.0


def _timed(root: Path, command: Sequence[str]) -> tuple[int, float, list[str]]:
    """(exit status, wall seconds, output lines) of ``command`` in ``root``."""
    start = time.monotonic()
    proc = subprocess.run(
        list(command),
        cwd=root,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return proc.returncode, time.monotonic() - start, (proc.stdout + proc.stderr).splitlines()


def run_pytest_benchmark(root: Path, base: str, head: str, work: Path) -> dict[str, Any]:
    """One pytest-benchmark compare of ``head`` against a baseline saved at ``base``."""
    storage = Path(tempfile.mkdtemp(prefix="storage-", dir=work))
    args = [BENCH_FILE, "-p", "no:perfsuite", "-q", f"--benchmark-storage={storage}"]
    try:
        ab_power.git(root, "checkout", "-q", base)
        code, seconds, lines = user_suite.run_pytest(root, [*args, "--benchmark-autosave"])
        run: dict[str, Any] = {"baseline_code": code, "seconds": seconds}
        if code == 0:
            ab_power.git(root, "checkout", "-q", head)
            compare = ["--benchmark-compare", f"--benchmark-compare-fail={COMPARE_FAIL}"]
            code, more, lines = user_suite.run_pytest(
                root, [*args, "--benchmark-autosave", *compare]
            )
            run["seconds"] += more
        medians = saved_medians(storage)
    finally:
        ab_power.git(root, "checkout", "-q", "main")
        shutil.rmtree(storage, ignore_errors=True)
    change = ratio_change(*medians) if len(medians) == 2 else None
    verdict = benchmark_verdict(code, lines) if run["baseline_code"] == 0 else "error"
    return {
        **run,
        "code": code,
        "verdict": verdict,
        "change": change,
        "medians": medians,
        "tail": lines[-20:],
    }


def run_pyperf(root: Path, base: str, head: str, work: Path, processes: int) -> dict[str, Any]:
    """One pyperf comparison: each side's values in ``processes`` workers, compare_to."""
    folder = Path(tempfile.mkdtemp(prefix="pyperf-", dir=work))
    script = [sys.executable, PYPERF_SCRIPT, "--processes", str(processes)]
    run: dict[str, Any] = {"seconds": 0.0, "codes": []}
    lines: list[str] = []
    try:
        for side, sha in (("base", base), ("case", head)):
            ab_power.git(root, "checkout", "-q", sha)
            code, seconds, lines = _timed(root, [*script, "-o", str(folder / f"{side}.json")])
            run["seconds"] += seconds
            run["codes"].append(code)
            if code != 0:
                break
        else:
            files = [str(folder / "base.json"), str(folder / "case.json")]
            code, _, lines = _timed(root, [sys.executable, "-m", "pyperf", "compare_to", *files])
            run["codes"].append(code)
            verdict, said = compare_to_verdict(lines) if code == 0 else ("error", None)
            means = [statistics.mean(pyperf_values(Path(f))) for f in files]
            medians = [statistics.median(pyperf_values(Path(f))) for f in files]
            run.update(
                verdict=verdict,
                printed_change=said,
                change=ratio_change(*means),
                means=means,
                median_change=ratio_change(*medians),
            )
    finally:
        ab_power.git(root, "checkout", "-q", "main")
        shutil.rmtree(folder, ignore_errors=True)
    return {"verdict": "error", "change": None, **run, "tail": lines[-20:]}


def run_line(run: dict[str, Any]) -> str:
    """``pass, change +0.4%, 7 s`` for one comparison."""
    change = "-" if run.get("change") is None else f"{run['change'] * 100:+.1f}%"
    return f"{run['verdict']}, change {change}, {run['seconds']:.0f} s"


def _median_range(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{fmt(mid)} ({fmt(low)} .. {fmt(high)})"


def table(tool: str, results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A markdown table of one tool's comparisons, a row per case. pytest-benchmark's
    passes count as ``same``; it never says ``faster`` (shown ``-``)."""
    lines = [
        "| tool | case | runs | slower / faster / same | change measured median (range) "
        "| seconds per run median (range) |",
        "|---|---|---|---|---|---|",
    ]
    for case, runs in results.items():
        said = [run["verdict"] for run in runs]
        same = said.count("pass" if tool == "pytest-benchmark" else "same")
        faster = "-" if tool == "pytest-benchmark" else str(said.count("faster"))
        errors = said.count("error")
        tally = f"{said.count('slower')} / {faster} / {same}" + (
            f" ({errors} errors)" if errors else ""
        )
        changes = [run["change"] for run in runs if run.get("change") is not None]
        change = _median_range(changes, lambda v: f"{v * 100:+.1f}%")
        seconds = _median_range([run["seconds"] for run in runs], lambda v: f"{v:.0f}")
        lines.append(f"| {tool} | {case} | {len(runs)} | {tally} | {change} | {seconds} |")
    return lines


def save(out: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``out`` through a temporary file beside it and
    ``os.replace``, so a reader never sees half a file."""
    fd, name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    with os.fdopen(fd, "w") as file:
        json.dump(document, file, indent=1)
    os.replace(name, out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="comparisons per case and tool")
    parser.add_argument("--cases", default=",".join(ab_power.EXTRA), help="comma-separated")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated")
    parser.add_argument(
        "--processes",
        type=int,
        default=20,
        help="pyperf worker processes per side (default 20, pyperf's own default)",
    )
    parser.add_argument("--out", type=Path, default=Path("peers.json"))
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args(argv)
    for option, known in (("cases", tuple(ab_power.EXTRA)), ("tools", TOOLS)):
        names = [n.strip() for n in getattr(args, option).split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            parser.error(f"--{option}: unknown {', '.join(unknown)} (known: {', '.join(known)})")
        setattr(args, option, names)
    return args


def measure(args: argparse.Namespace, work: Path, document: dict[str, Any]) -> dict[str, Any]:
    """Build the repository in ``work``, run every comparison (runs, then cases, then
    tools, interleaved), print each, and save all so far to ``args.out`` after each.
    Returns tool -> case -> the comparisons."""
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        tool: {case: [] for case in args.cases} for tool in args.tools
    }
    repo = work / "repo"
    shas = ab_power.build_repo(repo, user_suite.write_benchmark_case)
    (repo / PYPERF_SCRIPT).write_text(pyperf_source())
    with (repo / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(f"/{PYPERF_SCRIPT}\n")
    for i in range(args.runs):
        for case in args.cases:
            for tool in args.tools:
                if tool == "pyperf":
                    run = run_pyperf(repo, shas["base"], shas[case], work, args.processes)
                else:
                    run = run_pytest_benchmark(repo, shas["base"], shas[case], work)
                results[tool][case].append(run)
                save(args.out, {**document, "results": results})
                print(f"run {i + 1}/{args.runs} {case} {tool}: {run_line(run)}", flush=True)
                if run["verdict"] == "error":
                    print("  " + "\n  ".join(run["tail"]), flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    about = user_suite.provenance(Path(__file__).resolve().parents[2])
    print(user_suite.provenance_line(about), flush=True)
    document: dict[str, Any] = {
        **about,
        "runs": args.runs,
        "bench": BENCH_FILE,
        "compare_fail": COMPARE_FAIL,
        "pyperf_processes": args.processes,
        "pyperf_script": pyperf_source(),
    }
    work = args.keep or Path(tempfile.mkdtemp(prefix="peers-"))
    try:
        results = measure(args, work, document)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(user_suite.provenance_line(about))
    for tool in args.tools:
        print("\n" + "\n".join(table(tool, results[tool])))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
