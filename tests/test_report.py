"""Reports: summary.md and PNG plots are written, complete and valid images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from perfsuite.verdict.compare import compare_runs
from perfsuite.verdict.report import group_rows, safe_name, write_report
from perfsuite.verdict.result import BenchResult, Role
from perfsuite.verdict.runs import Bench, Run


def bench(variant: str, mean: float, *, baseline: bool = False, seed: int = 0) -> Bench:
    data = tuple(float(x) for x in np.random.default_rng(seed).normal(mean, mean / 50, 12))
    result = BenchResult(
        group="decode",
        variant=variant,
        role=Role.BASELINE if baseline else Role.NONE,
        items=32,
        unit="images",
        scale="smoke",
        device="cpu",
        threshold=0.05,
    )
    return Bench(
        fullname=f"bench_decode.py::test_decode[{variant}]",
        name=f"test_decode[{variant}]",
        group="decode",
        result=result,
        data=data,
        median=float(np.median(data)),
    )


def run(name: str, scale: float = 1.0, seed: int = 0) -> Run:
    benches = [
        bench("pil", 0.10 * scale, baseline=True, seed=seed),
        bench("parallel", 0.05 * scale, seed=seed + 1),
    ]
    facts = {"cpu_model": "Test CPU", "cpu_count": 2, "versions": {"pillow": "11.0"}}
    return Run(
        source=f"{name}.json",
        benches={b.fullname: b for b in benches},
        machine_info={"perfsuite": facts},
        datetime=f"2025-01-0{seed + 1}",
    )


def assert_png(path: Path) -> None:
    assert path.stat().st_size > 0
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] > 100
        assert image.size[1] > 100


def test_report_files_and_images(tmp_path: Path) -> None:
    history = [run("0001_a"), run("0002_b", seed=2), run("0003_c", 1.3, seed=4)]
    current = history[-1]
    comparison = compare_runs(history[-2], current)
    files = write_report(tmp_path / "out", current, comparison, history, notes=["a note"])
    assert files[0] == tmp_path / "out" / "summary.md"
    pngs = files[1:]
    assert sorted(p.parent.name for p in pngs) == ["history", "history", "out"]
    for path in pngs:
        assert_png(path)
    summary = files[0].read_text()
    assert "## Verdict" in summary
    assert "> a note" in summary
    assert "| **`decode/pil`** | SLOWER" in summary
    assert "### decode" in summary
    assert "| `pil` (baseline) |" in summary
    assert "| 1.00x |" in summary
    assert "Machine: Test CPU, 2 CPUs; pillow 11.0." in summary
    assert not list((tmp_path / "out").rglob("*.tmp"))


def test_speedup_over_the_group_baseline() -> None:
    rows = group_rows(list(run("r").benches.values()))
    assert rows[0][0] == "`pil` (baseline)"
    assert rows[0][3:6] == ["-", "-", "-"]  # no cost recorded: cores, items/cpu-s, peak MB
    assert rows[0][6] == "1.00x"
    speedup = float(rows[1][6].rstrip("x"))
    assert speedup == pytest.approx(2.0, rel=0.1)
    assert rows[1][1].endswith("images/s")
    assert rows[1][7] == "12"


def test_report_without_baseline_or_items(tmp_path: Path) -> None:
    plain = Bench(
        fullname="t.py::test_plain",
        name="test_plain",
        group=None,
        result=None,
        data=(0.01, 0.011, 0.012),
        median=0.011,
    )
    current = Run(source="this session", benches={plain.fullname: plain})
    files = write_report(tmp_path, current, None, [current])
    summary = (tmp_path / "summary.md").read_text()
    assert "No baseline was compared." in summary
    assert "ms/call" in summary
    assert len(files) == 3
    for path in files[1:]:
        assert_png(path)


def test_safe_names_are_distinct() -> None:
    assert safe_name("a/b [x]") != safe_name("a/b [y]")
    assert "/" not in safe_name("decode/pil", "bench.py::test[pil]")


def test_a_run_saved_without_raw_data_shows_the_rounds_its_stats_count() -> None:
    from perfsuite.verdict.runs import parse_bench

    entry: dict[str, Any] = {
        "fullname": "test_io.py::test_read",
        "name": "test_read",
        "group": None,
        "extra_info": {},
        "stats": {"median": 0.002, "rounds": 57},  # saved without --benchmark-save-data
    }
    (row,) = group_rows([parse_bench(entry, "0001.json", 0)])
    assert row[1] == "2.000 ms/call"
    assert row[-1] == "57"
    entry["stats"] = {"median": 0.002, "rounds": 57, "data": [0.002, 0.002, 0.002]}
    (row,) = group_rows([parse_bench(entry, "0001.json", 0)])
    assert row[-1] == "3"  # the raw samples that were kept
