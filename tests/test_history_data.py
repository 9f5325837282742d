"""Synthetic histories derived from a real saved run (tests/data/tiny_run.json).

The fixture is what pytest-benchmark saved for a tiny two-variant bench run with
perfsuite at smoke scale. Each derived run scales every timing of that run by one
factor (the step, times lognormal noise drawn per run and bench) and gets its own
commit id and dates, so the runs look like consecutive nights of one machine.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from perfsuite.verdict.runs import Run
from perfsuite.verdict.storage import Storage, this_machine_id

FIXTURE = Path(__file__).parent / "data" / "tiny_run.json"
MACHINE_ID = this_machine_id()
START = datetime(2026, 1, 1, 2, 17, tzinfo=timezone.utc)


def test_fixture_is_a_real_saved_run() -> None:
    document = json.loads(FIXTURE.read_text())
    assert document["version"].startswith("5.")
    assert len(document["commit_info"]["id"]) == 40
    assert [len(b["stats"]["data"]) for b in document["benchmarks"]] == [7, 7]


def commit_of(night: int) -> str:
    return hashlib.sha1(f"night {night}".encode()).hexdigest()


def run_name(night: int) -> str:
    return f"{night + 1:04d}_{commit_of(night)[:12]}"


def derive_document(
    base: dict[str, Any], night: int, factor: dict[str, float], counters: dict[str, int]
) -> dict[str, Any]:
    """One night: the base run with each bench's timings times ``factor[fullname]``."""
    doc = copy.deepcopy(base)
    stamp = (START + timedelta(days=night)).isoformat()
    doc["datetime"] = stamp
    doc["commit_info"].update(id=commit_of(night), time=stamp, author_time=stamp, dirty=False)
    for bench in doc["benchmarks"]:
        scale = factor.get(bench["fullname"], 1.0)
        stats = bench["stats"]
        stats["data"] = [x * scale for x in stats["data"]]
        for key in ("min", "max", "mean", "median", "q1", "q3", "stddev", "iqr"):
            if isinstance(stats.get(key), float):
                stats[key] *= scale
        bench["extra_info"]["perfsuite"]["counters"].update(counters)
    return doc


def make_history(
    storage: Path,
    nights: int = 30,
    *,
    step_at: int | None = 20,
    step: float = 0.10,
    noise: float = 0.05,
    seed: int = 4,
    counter_rise_at: int | None = None,
    only: Sequence[str] = (),
) -> list[Path]:
    """Save ``nights`` derived runs into ``storage``; returns their paths, oldest first.

    A +10% step under 5% noise is two noise sigmas, which no detector always places
    within one run (``tools/validation/history_power.py`` measures how often this one does), so the
    tests use a fixed seed (4) where it is found at its place in both benches, both ways.

    ``step`` multiplies the timings of every bench (or those in ``only``) from night
    ``step_at`` on by ``1 + step``; ``counter_rise_at`` raises ``traces`` from 1 to 2.
    """
    base = json.loads(FIXTURE.read_text())
    names = [b["fullname"] for b in base["benchmarks"]]
    rng = np.random.default_rng(seed)
    folder = storage / MACHINE_ID
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for night in range(nights):
        factor = {}
        for name in names:
            stepped = step_at is not None and night >= step_at and (not only or name in only)
            factor[name] = float(np.exp(rng.normal(0.0, noise))) * ((1 + step) if stepped else 1)
        risen = counter_rise_at is not None and night >= counter_rise_at
        doc = derive_document(base, night, factor, {"traces": 2 if risen else 1})
        path = folder / f"{run_name(night)}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def bench_names() -> list[str]:
    return [b["fullname"] for b in json.loads(FIXTURE.read_text())["benchmarks"]]


def saved_runs(storage: Path) -> list[Run]:
    """The runs of this machine in ``storage``, in the storage's order."""
    store = Storage(storage, MACHINE_ID)
    return store.load_all(store.runs())
