"""A synthetic nightly history of a whole suite, derived from a real saved run.

Every night is a pytest-benchmark run file: the base run's first bench
(tests/data/tiny_run.json, saved by pytest-benchmark with perfsuite) copied once per
bench of ``groups`` groups, each with its own group, variant, timings and commit. One
bench (:data:`STEPPED`) gets slower by ``step`` from night ``step_at`` on; every bench
records a ``traces`` counter and its resource figures: the first variant of each group
under ``extra_info["perfsuite"]["cost"]`` as perfsuite saves them, the others as
``cores`` and ``peak_rss_mb`` at the top of ``extra_info``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

FIXTURE = Path(__file__).parent / "data" / "tiny_run.json"
MACHINE = "Linux-CPython-3.11-64bit"
START = datetime(2026, 10, 27, 2, 17, tzinfo=timezone.utc)
#: the group and variant of the bench that steps
STEPPED = ("group0", "v0")


def commit_of(night: int) -> str:
    return hashlib.sha1(f"dashboard night {night}".encode()).hexdigest()


def run_name(night: int) -> str:
    """pytest-benchmark's autosave name: counter, full commit id, date and time."""
    stamp = (START + timedelta(days=night)).strftime("%Y%m%d_%H%M%S")
    return f"{night + 1:04d}_{commit_of(night)}_{stamp}"


def _bench(base: dict[str, Any], group: str, variant: str, times: list[float]) -> dict[str, Any]:
    bench = copy.deepcopy(base)
    bench["group"] = group
    bench["name"] = f"test_{group}[{variant}]"
    bench["fullname"] = f"benches/bench_{group}.py::test_{group}[{variant}]"
    bench["param"] = variant
    result = bench["extra_info"]["perfsuite"]
    result.update(group=group, variant=variant, role="baseline" if variant == "v0" else "none")
    result["counters"] = {"traces": 1}
    median = float(np.median(times))
    peak = round(400 + 10 * median * 1000, 1)
    if variant == "v0":  # as perfsuite saves it
        result["schema"] = 2
        result["cost"] = {
            "calls": len(times),
            "round_calls": 1,
            "cpu_s": 1.6 * sum(times),
            "wall_s": sum(times),
            "rounds_cpu_s": [1.6 * t for t in times],
            "rounds_rss_mb": [],
            "peak_rss_mb": peak,
            "gpu_peak_mb": None,
        }
    else:  # as another plugin might add them
        bench["extra_info"].update(cores=1.6, peak_rss_mb=peak)
    stats = bench["stats"]
    stats.update(
        data=times,
        min=min(times),
        max=max(times),
        mean=float(np.mean(times)),
        median=median,
        q1=float(np.quantile(times, 0.25)),
        q3=float(np.quantile(times, 0.75)),
        rounds=len(times),
        ops=1 / float(np.mean(times)),
    )
    return bench


def make_suite_history(
    storage: Path,
    *,
    nights: int = 30,
    groups: int = 3,
    per_group: int = 2,
    step_at: int = 20,
    step: float = 0.15,
    noise: float = 0.02,
    seed: int = 7,
) -> list[Path]:
    """Write ``nights`` run files into ``storage/MACHINE``; their paths, oldest first."""
    base = json.loads(FIXTURE.read_text())
    template = base["benchmarks"][0]
    rng = np.random.default_rng(seed)
    folder = storage / MACHINE
    folder.mkdir(parents=True, exist_ok=True)
    levels = {
        (f"group{g}", f"v{v}"): 0.002 * (1 + g) * (1 + 0.3 * v)
        for g in range(groups)
        for v in range(per_group)
    }
    paths = []
    for night in range(nights):
        document = copy.deepcopy(base)
        stamp = (START + timedelta(days=night)).isoformat()
        document["datetime"] = stamp
        document["commit_info"].update(id=commit_of(night), time=stamp, author_time=stamp)
        benches = []
        for (group, variant), level in levels.items():
            factor = float(np.exp(rng.normal(0.0, noise)))
            if (group, variant) == STEPPED and night >= step_at:
                factor *= 1 + step
            times = [float(t) for t in level * factor * np.exp(rng.normal(0.0, 0.03, 7))]
            benches.append(_bench(template, group, variant, times))
        document["benchmarks"] = benches
        path = folder / f"{run_name(night)}.json"
        path.write_text(json.dumps(document))
        paths.append(path)
    return paths


def make_ab_report(folder: Path, base_night: int, head_night: int) -> Path:
    """A report folder as ``perfsuite ab --report`` writes it, of two nights' commits."""
    folder.mkdir(parents=True, exist_ok=True)
    nodeid = f"benches/bench_{STEPPED[0]}.py::test_{STEPPED[0]}[{STEPPED[1]}]"
    label = {"A": commit_of(base_night)[:10], "B": commit_of(head_night)[:10]}
    (folder / "summary.md").write_text(
        "## perfsuite ab\n\n"
        f"A = {label['A']}, B = {label['B']}, blocks alternated in one session (seed 1).\n\n"
        f"| bench | verdict |\n|---|---|\n| `{nodeid}` | slower |\n\n"
        f"**REGRESSION in 1 bench(es): {nodeid}**\n"
    )
    row = {"nodeid": nodeid, "verdict": "slower", "change": 0.149, "ci": [0.12, 0.18]}
    row.update(pairs=24, threshold=0.05, skipped=None)
    (folder / "pairs.json").write_text(json.dumps([row], indent=1))
    base = json.loads(FIXTURE.read_text())
    for side, night in (("A", base_night), ("B", head_night)):
        document = copy.deepcopy(base)
        document["commit_info"]["id"] = commit_of(night)
        (folder / f"{side}.json").write_text(json.dumps(document))
    return folder


def make_nightly_report(folder: Path, night: int, ab: bool = True) -> Path:
    """A report folder as ``perfsuite nightly --report`` writes it, for one night."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.md").write_text(
        "# perfsuite nightly\n\n"
        f"Tonight: `{run_name(night)}` (commit `{commit_of(night)[:10]}`, "
        f"{(START + timedelta(days=night)).isoformat()}), 6 benches screened against "
        f"`{run_name(night - 1)}` and earlier runs.\n\n"
        "Verdict: **FAILED**: perfsuite ab confirmed a regression\n"
    )
    if ab:
        make_ab_report(folder / "ab", night - 1, night)
    return folder
