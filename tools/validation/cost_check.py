"""Measure what the benches cost, how much that varies, and what measuring it costs.

Runs this checkout's benches (``pytest benches -p no:randomly --perf-scale SCALE``,
datasets cached as usual) ``--runs`` times with cost measured, interleaved with
``--off-runs`` sessions under ``PERFSUITE_COST=off`` (order: on, off, on, off, ...),
and reports:

1. per group, from the first run: the median over its benches of cores used, items
   per CPU-second and peak memory (MB), and the largest peak;
2. per bench, over the measured runs: the spread (max/min - 1) of its median time, of
   its CPU per item and of its peak memory, and per group the median of those spreads;
3. the overhead of measuring: per bench, the median time with cost measured over the
   median without (each side's median over its sessions), summarized as the median,
   min and max of those ratios.

Every session's JSON is kept under ``--out-dir``; the summary goes to stdout and to
``--out`` (JSON). Usage::

    python tools/validation/cost_check.py [--runs 5] [--off-runs 3] [--scale default]
                               [--pytest-args "-k tfdata"] [--out cost_check.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def session(out: Path, scale: str, extra: list[str], cost: bool) -> dict[str, Any]:
    """One pytest session of the benches; its saved benches by full name, and its seconds."""
    env = dict(os.environ)
    env["PERFSUITE_COST"] = "on" if cost else "off"
    args = [sys.executable, "-m", "pytest", "benches", "-q", "-p", "no:randomly"]
    args += [f"--perf-scale={scale}", f"--benchmark-json={out}", "--benchmark-save-data"]
    start = time.monotonic()
    proc = subprocess.run(
        [*args, *extra], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - start
    if proc.returncode not in (0, 5):
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise SystemExit(f"cost_check: pytest exited {proc.returncode}:\n{tail}")
    benches = {b["fullname"]: b for b in json.loads(out.read_text())["benchmarks"]}
    return {"seconds": seconds, "benches": benches}


def _cost(bench: dict[str, Any]) -> dict[str, Any] | None:
    result = bench.get("extra_info", {}).get("perfsuite")
    cost = result.get("cost") if isinstance(result, dict) else None
    return cost if isinstance(cost, dict) else None


def _items(bench: dict[str, Any]) -> int:
    result = bench.get("extra_info", {}).get("perfsuite") or {}
    items = result.get("items") if isinstance(result, dict) else None
    return items if isinstance(items, int) and items > 0 else 1


def _group(bench: dict[str, Any]) -> str:
    result = bench.get("extra_info", {}).get("perfsuite") or {}
    return str(result.get("group") or bench.get("group") or "ungrouped")


def figures(bench: dict[str, Any]) -> dict[str, float | None]:
    """A bench's median time, cores, items per CPU-s, CPU per item and peak MB."""
    cost = _cost(bench)
    out: dict[str, float | None] = {"time": bench["stats"]["median"]}
    if cost is None or not cost["calls"] or not cost["cpu_s"]:
        return {**out, "cores": None, "per_cpu_s": None, "cpu_per_item": None, "peak": None}
    items = cost["calls"] * _items(bench)
    return {
        **out,
        "cores": cost["cpu_s"] / cost["wall_s"] if cost["wall_s"] else None,
        "per_cpu_s": items / cost["cpu_s"],
        "cpu_per_item": cost["cpu_s"] / items,
        "peak": cost.get("peak_rss_mb"),
    }


def spread(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None and v > 0]
    return max(known) / min(known) - 1 if len(known) >= 2 else None


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summarize(on: list[dict[str, Any]], off: list[dict[str, Any]]) -> dict[str, Any]:
    first = on[0]["benches"]
    groups: dict[str, list[str]] = defaultdict(list)
    for name, bench in first.items():
        groups[_group(bench)].append(name)
    per_group = {}
    for group, names in groups.items():
        rows = [figures(first[n]) for n in names]
        spreads: dict[str, list[float | None]] = {"time": [], "cpu_per_item": [], "peak": []}
        for name in names:
            runs = [figures(r["benches"][name]) for r in on if name in r["benches"]]
            for key in spreads:
                spreads[key].append(spread([f[key] for f in runs]))
        per_group[group] = {
            "benches": len(names),
            "cores": _median([r["cores"] for r in rows]),
            "per_cpu_s": _median([r["per_cpu_s"] for r in rows]),
            "peak_mb": _median([r["peak"] for r in rows]),
            "max_peak_mb": max((r["peak"] or 0.0) for r in rows),
            "spread": {key: _median(values) for key, values in spreads.items()},
        }
    ratios = []
    for name in first:
        with_cost = [r["benches"][name]["stats"]["median"] for r in on if name in r["benches"]]
        without = [r["benches"][name]["stats"]["median"] for r in off if name in r["benches"]]
        if with_cost and without:
            ratios.append(statistics.median(with_cost) / statistics.median(without))
    overhead = None
    if ratios:
        overhead = {
            "benches": len(ratios),
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
        }
    sessions = {"on": [r["seconds"] for r in on], "off": [r["seconds"] for r in off]}
    return {"groups": per_group, "overhead": overhead, "session_seconds": sessions}


def lines(summary: dict[str, Any]) -> list[str]:
    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value * 100:.1f}%"

    out = [
        "| group | benches | cores | items/CPU-s | peak MB (median, max) "
        "| spread: time | CPU/item | peak |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group, g in sorted(summary["groups"].items()):
        s = g["spread"]
        out.append(
            f"| {group} | {g['benches']} | {num(g['cores'], '.2f')} | "
            f"{num(g['per_cpu_s'], ',.0f')} | {num(g['peak_mb'], ',.0f')}, "
            f"{g['max_peak_mb']:,.0f} | {pct(s['time'])} | {pct(s['cpu_per_item'])} | "
            f"{pct(s['peak'])} |"
        )
    o = summary["overhead"]
    if o:
        out.append(
            f"overhead (median time measured / not measured, {o['benches']} benches): "
            f"median {o['median']:.3f}x, min {o['min']:.3f}x, max {o['max']:.3f}x"
        )
    out.append(f"session seconds: {summary['session_seconds']}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--off-runs", type=int, default=3)
    parser.add_argument("--scale", default="default")
    parser.add_argument("--pytest-args", default="")
    parser.add_argument("--out", type=Path, default=Path("cost_check.json"))
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.out_dir or Path(tempfile.mkdtemp(prefix="cost_check-"))
    folder.mkdir(parents=True, exist_ok=True)
    extra = shlex.split(args.pytest_args)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    print(f"cost_check: {time.strftime('%Y-%m-%d %H:%M')}, commit {commit}, {os.cpu_count()} CPUs")
    on: list[dict[str, Any]] = []
    off: list[dict[str, Any]] = []
    for index in range(max(args.runs, args.off_runs)):
        for cost, done, wanted in ((True, on, args.runs), (False, off, args.off_runs)):
            if len(done) >= wanted:
                continue
            name = f"{index:02d}-{'on' if cost else 'off'}.json"
            done.append(session(folder / name, args.scale, extra, cost))
            print(f"  {name}: {done[-1]['seconds']:.0f} s", flush=True)
    summary = summarize(on, off)
    text = lines(summary)
    print("\n".join(text))
    args.out.write_text(json.dumps({**summary, "commit": commit, "lines": text}, indent=1))


if __name__ == "__main__":
    main()
