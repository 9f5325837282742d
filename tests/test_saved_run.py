"""A saved run end to end: raw timings, extra_info, machine facts and the summary."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from perfsuite.bench.measure import items_per_second
from perfsuite.bench.summary import HEADER
from perfsuite.data.recipes import load_recipe
from perfsuite.verdict.result import SCHEMA_VERSION, BenchResult

# -- a saved run, end to end ---------------------------------------------------------------------


def run_pytest(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run pytest in a fresh interpreter in ``cwd`` (a run shared by this module's tests)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


CONFTEST = """
def pytest_perfsuite_update_machine_facts(config, facts):
    facts["runner_pool"] = "test-pool"


def pytest_perfsuite_update_extra_info(item, extra_info):
    extra_info["amended_by"] = item.name
"""

BENCH = """
'''A tiny bench in the shape every bench file has.'''
import time

import pytest

DATA = dict(count=2, width=16, height=16)


def step(delay):
    # a millisecond of CPU before the wait: the summary's cores column reads above 0
    # however fast the machine (a sleep alone costs only the timer's microseconds)
    end = time.process_time() + 0.001
    while time.process_time() < end:
        pass
    time.sleep(delay)


@pytest.mark.perf(group="pipe", baseline="baseline", rounds=7, warmup_rounds=1)
@pytest.mark.parametrize("variant", ["baseline", "faster"])
def test_pipeline(perf, make_image_dataset, variant):
    ds = make_image_dataset("fixed-224", **DATA)
    delay = 0.004 if variant == "baseline" else 0.002
    perf.measure(lambda: step(delay), items=8, dataset=ds, params={"delay": delay})
    perf.count("steps", 3)


@pytest.mark.perf(group="read", roofline="test_read_only", rounds=7, warmup_rounds=0)
def test_read_only(perf, make_image_dataset):
    ds = make_image_dataset("fixed-224", **DATA)
    perf.measure(lambda: time.sleep(0.001), items=8, dataset=ds)
"""


class SavedRun:
    def __init__(self, root: Path, stdout: str, returncode: int) -> None:
        self.root = root
        self.stdout = stdout
        self.returncode = returncode
        saved = sorted((root / "storage").rglob("*.json"))
        assert len(saved) == 1, saved
        self.saved: dict[str, Any] = load_json(saved[0])
        self.json: dict[str, Any] = load_json(root / "out.json")

    def bench(self, name: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = [b for b in self.saved["benchmarks"] if b["name"] == name]
        assert len(found) == 1, name
        return found[0]


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> SavedRun:
    root = tmp_path_factory.mktemp("saved-run")
    (root / "conftest.py").write_text(CONFTEST)
    (root / "bench_pipeline.py").write_text(textwrap.dedent(BENCH))
    proc = run_pytest(
        root,
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        f"--perf-data-dir={root / 'data'}",
        "--perf-scale=smoke",
        "--benchmark-autosave",
        f"--benchmark-storage={root / 'storage'}",
        f"--benchmark-json={root / 'out.json'}",
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return SavedRun(root, proc.stdout, proc.returncode)


DATASET = load_recipe("fixed-224", "smoke").with_overrides(count=2, width=16, height=16)


def test_saved_run_has_three_benches(saved_run: SavedRun) -> None:
    names = sorted(b["name"] for b in saved_run.saved["benchmarks"])
    assert names == ["test_pipeline[baseline]", "test_pipeline[faster]", "test_read_only"]
    assert "3 passed" in saved_run.stdout


def test_saved_run_keeps_raw_timings(saved_run: SavedRun) -> None:
    for bench in saved_run.saved["benchmarks"]:
        data = bench["stats"]["data"]
        assert len(data) == bench["stats"]["rounds"] == 7
        assert statistics.median(data) == bench["stats"]["median"]


def test_saved_run_extra_info(saved_run: SavedRun) -> None:
    bench = saved_run.bench("test_pipeline[faster]")
    assert bench["group"] == "pipe"
    extra_info = bench["extra_info"]
    info = extra_info["perfsuite"]
    assert {
        k: info[k]
        for k in (
            "schema",
            "group",
            "variant",
            "role",
            "unit",
            "items",
            "scale",
            "device",
            "threshold",
            "params",
        )
    } == {
        "schema": SCHEMA_VERSION,
        "group": "pipe",
        "variant": "faster",
        "role": "none",
        "unit": "images",
        "items": 8,
        "scale": "smoke",
        "device": "cpu",
        "threshold": 0.05,
        "params": {"delay": 0.002},
    }
    dataset = info["dataset"]
    assert dataset["name"] == "fixed-224"
    assert dataset["hash"] == DATASET.hash  # the recipe hash travels with the result
    assert dataset["images"] == 2
    assert dataset["bytes"] > 0
    assert info["counters"] == {"steps": 3}
    assert extra_info["amended_by"] == "test_pipeline[faster]"  # the extra_info hook ran
    assert set(extra_info) == {"perfsuite", "amended_by"}
    assert BenchResult.from_dict(info, "saved").label == "pipe/faster"


def test_items_per_second_is_items_over_the_median(saved_run: SavedRun) -> None:
    for bench in saved_run.saved["benchmarks"]:
        info = bench["extra_info"]["perfsuite"]
        median = bench["stats"]["median"]
        assert info["items_per_second"] == round(items_per_second(8, median), 3)


def test_speedup_and_efficiency_are_saved(saved_run: SavedRun) -> None:
    rate = {
        b["name"]: items_per_second(8, b["stats"]["median"]) for b in saved_run.saved["benchmarks"]
    }
    base = saved_run.bench("test_pipeline[baseline]")["extra_info"]["perfsuite"]
    faster = saved_run.bench("test_pipeline[faster]")["extra_info"]["perfsuite"]
    roof = saved_run.bench("test_read_only")["extra_info"]["perfsuite"]
    assert base["speedup"] == 1.0
    assert faster["speedup"] == round(
        rate["test_pipeline[faster]"] / rate["test_pipeline[baseline]"], 4
    )
    for name, info in (("test_pipeline[baseline]", base), ("test_pipeline[faster]", faster)):
        assert info["efficiency"] == round(rate[name] / rate["test_read_only"], 4)
    assert roof["role"] == "roofline"
    assert roof["efficiency"] is None
    assert roof["speedup"] is None
    json_infos = {b["name"]: b["extra_info"]["perfsuite"] for b in saved_run.json["benchmarks"]}
    assert json_infos["test_pipeline[faster]"] == faster


def test_saved_run_has_machine_facts(saved_run: SavedRun) -> None:
    facts = saved_run.saved["machine_info"]["perfsuite"]
    assert facts["cpu_count"] == len(os.sched_getaffinity(0))
    assert isinstance(facts["cpu_model"], str)
    assert facts["cpu_model"]
    assert isinstance(facts["gpu_count"], int)
    for key in ("gpu_name", "gpu_driver", "gpu_memory_bytes", "cuda", "cudnn"):
        assert key in facts
    versions = facts["versions"]
    assert versions["numpy"] == metadata.version("numpy")
    assert versions["pytest-benchmark"] == metadata.version("pytest-benchmark")
    for module, dist in (("tensorflow", "tensorflow"), ("torch", "torch")):
        try:
            expected: str | None = metadata.version(dist)
        except metadata.PackageNotFoundError:
            expected = None
        assert versions[module] == expected
    assert "nvidia.dali" in versions
    assert facts["runner_pool"] == "test-pool"  # the machine-facts hook ran


def test_summary_section_is_printed(saved_run: SavedRun) -> None:
    out = saved_run.stdout
    assert "perfsuite summary" in out
    section = out[out.index("perfsuite summary") :]
    lines = [line.strip() for line in section.splitlines()]
    assert "group pipe:" in lines
    assert "group read:" in lines
    header = next(line for line in lines if line.startswith("variant"))
    assert header.split() == HEADER
    baseline = next(line for line in lines if line.startswith("baseline (baseline)"))
    tokens = baseline.split()
    after = tokens[tokens.index("images/s") + 1 :]
    # cost: cores used, images per CPU-second and peak MB, then the speedup
    assert 0 < float(after[0]) <= os.cpu_count()  # type: ignore[operator]
    assert after[2] == "images"
    assert float(after[1].replace(",", "")) > 0
    assert float(after[3].replace(",", "")) >= 0
    assert after[4] == "1.00x"
    faster = next(line for line in lines if line.startswith("faster "))
    assert faster.split()[-1] == "-"  # no traces counted
    assert any(line.startswith("test_read_only (roofline)") for line in lines)
