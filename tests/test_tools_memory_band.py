"""tools/validation/memory_band_replay.py: a storage's peak-memory flags, with and without
the history's band, on constructed saved runs."""

from __future__ import annotations

import json
from pathlib import Path

from perfsuite.verdict.cost import Cost
from tests.samples import normal
from tests.tool_module import load_tool

TIMES = normal(0.010, 0.0001, 20)


def _save(folder: Path, number: int, peak: float) -> None:
    cost = Cost(calls=20, round_calls=1, cpu_s=0.2, wall_s=0.2, peak_rss_mb=peak).to_dict()
    entry = {
        "fullname": "test_x.py::test_x",
        "name": "test_x",
        "group": None,
        "extra_info": {"perfsuite": {"schema": 2, "cost": cost}},
        "stats": {"data": TIMES, "median": sorted(TIMES)[10]},
    }
    run = {"version": "5.1.0", "benchmarks": [entry]}
    (folder / f"{number:04d}_run.json").write_text(json.dumps(run))


def test_a_peak_inside_its_history_band_is_flagged_only_without_it(tmp_path: Path) -> None:
    for number, peak in enumerate([100, 170, 110, 180, 120, 190, 330], start=1):
        _save(tmp_path, number, peak)
    out = tmp_path / "rows.json"
    tool = load_tool("memory_band_replay")
    assert tool.main([str(tmp_path), "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["fixed"] for r in rows] == [1, 0, 1, 0, 1, 1]  # every rise past 25% and 64 MB
    # under 5 earlier runs the bench's own threshold; from 5 on the band holds them
    assert [r["banded"] for r in rows] == [1, 0, 1, 0, 0, 0]
    assert rows[-1]["cleared_by_band"] == ["test_x.py::test_x"]
    assert tool.main([str(tmp_path / "none")]) == 2
