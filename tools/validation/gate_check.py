"""Measure ``--perf-gate`` on this repository's benches: false alarms, cost, and power.

Works in a temporary clone of this repository's HEAD, whose own perfsuite runs (first
on ``PYTHONPATH``) under this venv's pytest, with a fresh ``--benchmark-storage`` and
the datasets cached in ``--data-dir`` (default: perfsuite's usual cache, so datasets
made before are reused; otherwise the plain run includes making them):

1. One plain run, as ``make bench`` runs it (``--benchmark-autosave
   --benchmark-save-data --benchmark-compare --perf-report=reports/latest``): its wall
   seconds are the plain time.
2. ``--runs`` times: commit a change that measures nothing (a line appended to
   README.md) and run ``make bench``'s command with ``--perf-gate``. Each run autosaves,
   so it is the next run's baseline, as ``make bench PYTEST_ARGS=--perf-gate`` would.
   Each run's exit status, wall seconds, ratio to the plain time, suspects by
   confirmation outcome (from the verdict rows and the ``confirmations took`` line) and
   the ``perfsuite gate:`` line are recorded. Goals: no run fails; each within 2x.
3. ``--slow-runs`` times: from the commit the plain run measured, commit a slowdown of
   ``--fraction`` in one bench (``--slow-bench``: code put first in its own function
   makes that bench's ``perf.measure`` target spin for that fraction of each call's
   own time after the call, so the committed bench does that much more work, and only
   the benches of that function changed), gate it against the plain run
   (``--benchmark-compare=0001``, no autosave), record whether it caught the slowdown
   (exit 1, that bench its one regression) and whether it named no other bench, not
   even as an unconfirmed ``SLOWER?`` row, and reset the clone to the commit before
   the slowdown. Goal: caught in every run, each within 2x. Each slowed run also keeps
   what the gate's A/B measured in each pair of processes of the slowed bench and of
   every bench it read slower, and the A/B's output; with ``--keep``, its A/B's whole
   report folder too (``slowed-N-confirmation``: each bench's pairs of processes, the
   rounds of one not measured again being its first pair's). With ``--adjacent-plain``,
   a plain run of the slowed commit (``--benchmark-compare=0001``, no gate, no
   autosave) comes just before each slowed run, and the slowed run's ratio is also
   taken to it: a machine whose speed drifts over an hour moves a ratio to the first
   plain run alone.

It prints the date, machine and perfsuite commit, each run, and the spread (min /
median / max) of the gated runs' seconds and ratios, and writes every run to ``--out``
(JSON) as it goes. Usage::

    python tools/validation/gate_check.py [--runs 10] [--slow-runs 10] [--slow-bench NODEID]
                               [--fraction 0.10] [--scale default]
                               [--pytest-args "-k retracing"] [--data-dir DIR]
                               [--adjacent-plain] [--keep DIR] [--out gate_check.json]

The slowed bench must use the ``perf`` fixture and run in the selection.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from perfsuite.changed import top_name
from perfsuite.config import default_data_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tools.validation import user_suite

REPO = Path(__file__).resolve().parents[2]
#: a single-process bench whose measured call does all its work before it returns, so a
#: spin of a share of the call's time adds that share to the bench (docs/validation.md)
DEFAULT_SLOW_BENCH = "benches/bench_warmup.py::test_warmup_torch[warm-cpu]"
FAILED = re.compile(r"perfsuite gate: FAILED: (\d+) regressions?: (.*)")

#: put at the top of the slowed bench's own function: the committed slowdown of one bench,
#: a change to that function alone (so only its benches' code changed)
SLOWDOWN = """\
import time as _time

if perf.nodeid == {nodeid!r}:  # {percent} more work in each measured call
    _measure = perf.measure

    def _slower_measure(fn, **options):
        def slower(*args, **kwargs):
            start = _time.perf_counter()
            result = fn(*args, **kwargs)
            end = _time.perf_counter()
            until = end + {fraction!r} * (end - start)
            while _time.perf_counter() < until:
                pass
            return result

        return _measure(slower, **options)

    perf.measure = _slower_measure
"""


def slow_down(source: str, nodeid: str, fraction: float) -> str:
    """``source`` (the module of ``nodeid``, a bench taking the ``perf`` fixture) with
    ``SLOWDOWN`` put first in the bench's function, after its docstring."""
    name = top_name(nodeid)
    found = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    ]
    if not found:
        raise SystemExit(f"--slow-bench {nodeid}: no function {name} at the top of its module")
    body = found[0].body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if docstring and len(body) > 1 else body[0]
    text = SLOWDOWN.format(nodeid=nodeid, fraction=fraction, percent=f"{fraction:.0%}")
    indent = " " * first.col_offset
    block = "".join(indent + line if line.strip() else line for line in text.splitlines(True))
    lines = source.splitlines(True)
    at = first.lineno - 1
    return "".join([*lines[:at], block, "\n", *lines[at:]])


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def clone(work: Path) -> Path:
    """A clone of this repository's HEAD in ``work/repo``, with a committer set."""
    root = work / "repo"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    git(root, "config", "user.name", "gate_check")
    git(root, "config", "user.email", "gate_check@perfsuite.invalid")
    return root


def bench_args(scale: str, storage: Path, data_dir: Path, extra: list[str]) -> list[str]:
    """``make bench``'s pytest arguments without its save and compare options, pointed at
    ``storage`` and ``data_dir``; ``extra`` last, where ``PYTEST_ARGS`` go."""
    return [
        "benches",
        f"--perf-scale={scale}",
        "--benchmark-save-data",
        "--perf-report=reports/latest",
        f"--benchmark-storage={storage}",
        f"--perf-data-dir={data_dir}",
        *extra,
    ]


def run(root: Path, args: list[str], ab_cache: Path) -> dict[str, Any]:
    """One pytest run in the clone, the clone's perfsuite first on ``PYTHONPATH`` and the
    gate's A/B worktrees in ``ab_cache``: exit status, seconds, what the gate said."""
    paths = [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    args = user_suite.with_ab_options(args, ["--cache-dir", str(ab_cache)])
    code, seconds, lines = user_suite.run_pytest(root, args, env)
    return {
        "code": code,
        "seconds": seconds,
        **user_suite.parse_gate_output(lines),
        "tail": lines[-25:],
        "verdict": verdict_section(lines),
    }


def _by_pair(entry: dict[str, Any]) -> dict[str, Any]:
    """What one ``pairs.json`` entry says of each pair of processes: its first pair's
    change, and each fresh pair's estimate, pairs of blocks and side started first."""
    first = entry.get("first") or {}
    keep = ("sessions", "session_pairs", "started", "status")
    return {"first": first.get("change", entry.get("change"))} | {
        k: entry[k] for k in keep if k in entry
    }


def slowed_pairs(report: Path, nodeid: str) -> dict[str, Any] | None:
    """What the gate's A/B (its report folder ``report``) measured of ``nodeid`` in each
    pair of processes (:func:`_by_pair`); None where the A/B did not measure it."""
    from perfsuite.ab.report import read_pairs

    entry = next((e for e in read_pairs(report) if e["nodeid"].endswith(nodeid)), None)
    return None if entry is None else _by_pair(entry)


def slower_pairs(report: Path) -> dict[str, dict[str, Any]]:
    """:func:`_by_pair` of every bench the gate's A/B read slower: what each
    confirmation rested on, a false one's included."""
    from perfsuite.ab.report import read_pairs

    return {e["nodeid"]: _by_pair(e) for e in read_pairs(report) if e.get("verdict") == "slower"}


def ab_output(report: Path) -> list[str]:
    """The gate's A/B's output, kept beside its report folder ``report``
    (:func:`perfsuite.suspects.output_of`): what its first look measured, and why; []
    where it wrote none."""
    from perfsuite.suspects import output_of

    log = output_of(report)
    return log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []


def verdict_section(lines: list[str]) -> list[str]:
    """The run's "perfsuite verdict" section, as printed."""
    start = next((i for i, line in enumerate(lines) if " perfsuite verdict " in line), None)
    if start is None:
        return []
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("=====")), len(lines)
    )
    return lines[start:end]


def label_of(storage: Path, nodeid: str) -> str | None:
    """The label the verdict table gives ``nodeid`` (``group/variant``, else its name), read
    from the first saved run; None when that run did not measure it."""
    for path in sorted(storage.glob("*/0001_*.json")):
        for bench in json.loads(path.read_text()).get("benchmarks", []):
            if bench.get("fullname") != nodeid:
                continue
            result = (bench.get("extra_info") or {}).get("perfsuite") or {}
            if result.get("group") and result.get("variant"):
                return f"{result['group']}/{result['variant']}"
            return str(bench.get("name"))
    return None


def named(result: dict[str, Any], unconfirmed: bool = True) -> list[str]:
    """The benches a gated run called regressions: its ``SLOWER`` rows (with
    ``unconfirmed``, its ``SLOWER?`` rows too) and the labels of its ``FAILED`` line."""
    labels = [
        label
        for label in user_suite.regressed(result["rows"])
        if unconfirmed or not result["rows"][label].startswith("SLOWER?")
    ]
    found = FAILED.match(result["gate"] or "")
    if found:
        # benches that share one reason are named together before it: "a, b (why)";
        # the suspects left unconfirmed beside the regressions follow "; besides, "
        failed = found.group(2).split("; besides, ")[0]
        for names in re.findall(r"(?:^|; )((?:[^\s;,]+, )*[^\s;,]+) \(", failed):
            labels += names.split(", ")
    return sorted(set(labels))


def run_line(index: int, result: dict[str, Any], plain: float) -> str:
    gate = (result["gate"] or "no gate line: " + " | ".join(result["tail"][-2:]))[:240]
    took = result["confirmations"]
    ab = f", confirmations {took['seconds']} s" if took else ""
    ended = (took or {}).get("tally") or result["outcomes"] or "{}"
    beside = result.get("adjacent_plain")
    near = f" ({result['seconds'] / beside:.2f}x the plain run before it)" if beside else ""
    return (
        f"  run {index}: exit {result['code']}, {result['seconds']:.0f} s, "
        f"{result['seconds'] / plain:.2f}x{near}, suspects {ended}{ab}; {gate}"
    )


def timing_line(runs: list[dict[str, Any]], plain: float) -> str:
    """The spread of ``runs``' seconds and of their ratios to the plain run's ``plain``,
    and to the plain run just before each (``--adjacent-plain``) where there was one."""
    seconds = [r["seconds"] for r in runs]
    ratios = [s / plain for s in seconds]
    line = (
        f"  seconds (min / median / max) {user_suite.spread(seconds)}; ratio to the "
        f"plain run {user_suite.spread(ratios, '{:.2f}x')} (goal <= 2x; "
        f"{sum(1 for r in ratios if r > 2)} over)"
    )
    near = [r["seconds"] / r["adjacent_plain"] for r in runs if r.get("adjacent_plain")]
    if near:
        line += (
            f"; to the plain run before each {user_suite.spread(near, '{:.2f}x')} "
            f"({sum(1 for r in near if r > 2)} over)"
        )
    return line


def inconclusive_line(gated: list[dict[str, Any]], slow_label: str | None) -> str:
    """Which benches the screen left ``inconclusive`` most often in the unchanged runs
    ``gated`` (their verdict rows), and how often it left ``slow_label`` so: the goal
    puts the slowdown in one of the most often left."""
    counts = Counter(
        label
        for result in gated
        for label, word in result["rows"].items()
        if word.startswith("inconclusive")
    )
    most = max(counts.values(), default=0)
    tied = sorted(label for label, n in counts.items() if n == most)
    line = (
        f"  left inconclusive by the screen most often: {len(tied)} bench(es) in {most} of "
        f"{len(gated)} runs ({', '.join(tied)})"
    )
    if slow_label is not None:
        line += f"; the slowed bench {slow_label} in {counts[slow_label]} of {len(gated)}"
    return line


def summary(document: dict[str, Any]) -> list[str]:
    """The readable summary of a measurement (see the module's docstring for the goals)."""
    plain = document["plain"]["seconds"]
    gated, slowed = document["gated"], document["slowed"]
    lines = [
        user_suite.provenance_line(document["about"]),
        f"plain run (make bench): exit {document['plain']['code']}, {plain:.0f} s",
    ]
    if gated:
        codes = sorted({str(r["code"]) for r in gated})
        failed = sum(1 for r in gated if r["code"] == 1)
        passed = sum(1 for r in gated if r["code"] == 0)
        lines += [
            f"unchanged code, gated: {passed} of {len(gated)} runs passed, {failed} failed "
            f"(goal: every run passes); "
            f"exit statuses {', '.join(codes)}",
            timing_line(gated, plain),
            inconclusive_line(gated, document.get("slow_label")),
            *(run_line(i, r, plain) for i, r in enumerate(gated, 1)),
        ]
    if slowed:
        hits = sum(1 for r in slowed if r["failed_naming_only_it"])
        caught = sum(1 for r in slowed if r.get("caught"))
        lines += [
            f"{document['fraction'] * 100:+g}% in {document['slow_bench']} "
            f"({document['slow_label']}): caught in {caught} of {len(slowed)} gated runs "
            f"(exit 1, its one regression; goal {len(slowed)} of {len(slowed)}); "
            f"{hits} named no other bench, not even as an unconfirmed SLOWER?",
            timing_line(slowed, plain),
            *(f"{run_line(i, r, plain)}; named {r['named']}" for i, r in enumerate(slowed, 1)),
        ]
    return lines


def save(out: Path, document: dict[str, Any]) -> None:
    """Write the measurement so far to ``out`` atomically, so a stopped one keeps it."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1))
    tmp.replace(out)


def measure(args: argparse.Namespace, work: Path, document: dict[str, Any]) -> None:
    """The three steps of the module's docstring, in the clone under ``work``, each run
    recorded in ``document`` and saved to ``args.out`` as it ends."""
    root = clone(work)
    storage, cache = work / "storage", work / "ab-worktrees"
    common = bench_args(args.scale, storage, args.data_dir, shlex.split(args.pytest_args))
    measured = git(root, "rev-parse", "HEAD")
    document["clone_commit"] = measured
    plain = run(root, [*common, "--benchmark-autosave", "--benchmark-compare"], cache)
    document["plain"] = plain
    save(args.out, document)
    print(f"plain run: exit {plain['code']}, {plain['seconds']:.0f} s", flush=True)
    if plain["code"] != 0:
        raise SystemExit("the plain run failed:\n" + "\n".join(plain["tail"]))
    label = label_of(storage, args.slow_bench)
    document["slow_label"] = label
    if args.slow_runs and label is None:
        raise SystemExit(
            f"{args.slow_bench} was not measured by the plain run: is it in the selection "
            "(--pytest-args), and does it run here?"
        )
    gate = [*common, "--perf-gate"]
    for i in range(1, args.runs + 1):
        with (root / "README.md").open("a") as readme:
            readme.write(f"\n<!-- gate_check: unchanged run {i} -->\n")
        git(root, "commit", "-q", "-am", f"README: gate_check unchanged run {i}")
        result = run(root, [*gate, "--benchmark-autosave", "--benchmark-compare"], cache)
        document["gated"].append(result)
        save(args.out, document)
        print(run_line(i, result, plain["seconds"]), flush=True)
    for i in range(1, args.slow_runs + 1):
        git(root, "reset", "-q", "--hard", measured)
        module = root / args.slow_bench.split("::", 1)[0]
        module.write_text(slow_down(module.read_text(), args.slow_bench, args.fraction))
        git(root, "commit", "-q", "-am", f"Slow {args.slow_bench} down by {args.fraction:.0%}")
        beside = None
        if args.adjacent_plain:
            beside = run(root, [*common, "--benchmark-compare=0001"], cache)["seconds"]
        result = run(root, [*gate, "--benchmark-compare=0001"], cache)
        result["adjacent_plain"] = beside
        confirmation = root / "reports/latest/confirmation"
        result["pairs"] = slowed_pairs(confirmation, args.slow_bench)
        result["slower_pairs"] = slower_pairs(confirmation)
        result["ab_output"] = ab_output(confirmation)
        if args.keep is not None and confirmation.is_dir():
            shutil.copytree(confirmation, work / f"slowed-{i}-confirmation")
        git(root, "reset", "-q", "--hard", measured)
        result["named"] = named(result)
        result["failed_naming_only_it"] = result["code"] == 1 and result["named"] == [label]
        result["caught"] = result["code"] == 1 and named(result, unconfirmed=False) == [label]
        document["slowed"].append(result)
        save(args.out, document)
        print(f"{run_line(i, result, plain['seconds'])}; named {result['named']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="gated runs of unchanged code")
    parser.add_argument("--slow-runs", type=int, default=10, help="gated runs of a slowdown")
    parser.add_argument("--slow-bench", default=DEFAULT_SLOW_BENCH, help="its node id")
    parser.add_argument("--fraction", type=float, default=0.10, help="its slowdown (0.10)")
    parser.add_argument("--scale", default="default", choices=["smoke", "default", "full"])
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments (a string)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default_data_dir(),
        help="dataset cache, shared by every run (default: perfsuite's, %(default)s)",
    )
    parser.add_argument(
        "--adjacent-plain",
        action="store_true",
        help="a plain run of the slowed commit just before each slowed run",
    )
    parser.add_argument("--keep", type=Path, help="work in this new folder and keep it")
    parser.add_argument("--out", type=Path, default=Path("gate_check.json"))
    args = parser.parse_args(argv)
    if args.runs < 0 or args.slow_runs < 0 or not 0 < args.fraction < 10:
        parser.error("--runs and --slow-runs are counts; --fraction a positive fraction")
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: exists; name a new folder")
    # the clone runs HEAD's perfsuite: this checkout's uncommitted changes are not measured
    about = {**user_suite.provenance(REPO), "uncommitted_changes": False}
    print(user_suite.provenance_line(about), flush=True)
    document: dict[str, Any] = {
        "about": about,
        "scale": args.scale,
        "pytest_args": args.pytest_args,
        "data_dir": str(args.data_dir),
        "slow_bench": args.slow_bench,
        "fraction": args.fraction,
        "plain": None,
        "gated": [],
        "slowed": [],
    }
    work = args.keep or Path(tempfile.mkdtemp(prefix="gate-check-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        measure(args, work, document)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(summary(document)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    user_suite.exit_stoppable(main)
