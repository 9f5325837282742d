"""tools/validation/gpu_check.py: what it reads from a run and an A/A, and its one line
without a GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.tool_module import load_tool

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "validation" / "gpu_check.py"


def _tool() -> ModuleType:
    return load_tool("gpu_check")


def _bench(name: str, device: str, rounds: int, gpu: dict[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"device": device, **({"gpu": gpu} if gpu else {})}
    return {
        "fullname": f"benches/bench_warmup.py::{name}",
        "stats": {"rounds": rounds, "median": 0.02, "iqr": 0.001},
        "extra_info": {"perfsuite": result},
    }


GPU = {
    "before": {"sm_mhz": 1980, "mem_mhz": 2619},
    "after": {"sm_mhz": 1755, "mem_mhz": 2619},
    "power_w_max": 699.6,
    "temp_c_max": 71,
    "clocks_moved": True,
    "throttled": True,
    "settled": False,
    "settle_s": 10.0,
}


def test_rows_and_problems_from_a_run() -> None:
    tool = _tool()
    report = {
        "benchmarks": [
            _bench("test_warmup_torch[warm-gpu]", "gpu", 12, GPU),
            _bench("test_warmup_torch[cold-cpu]", "cpu", 3, None),
        ]
    }
    rows = tool.bench_rows(report)
    assert rows[0].cells() == [
        "test_warmup_torch[warm-gpu]",
        "gpu",
        "1980->1755",
        "2619->2619",
        "700",
        "71",
        "clocks_moved, throttled",
        "10.0 (not settled)",
        "12",
        "5.0%",
    ]
    assert rows[1].cells()[1:] == ["cpu", "-", "-", "-", "-", "not read", "-", "3", "5.0%"]
    assert tool.bench_problems(rows) == [
        "test_warmup_torch[cold-cpu] recorded device 'cpu', not 'gpu'",
        "test_warmup_torch[cold-cpu] ran 3 rounds; a rank test needs 7",
    ]
    assert tool.bench_problems([]) == [
        "no torch bench ran on the GPU (all skipped? see the pytest output)"
    ]


def test_the_aa_passes_as_perfsuite_ab_exits() -> None:
    tool = _tool()
    entry = {
        "nodeid": "b.py::test_warmup_torch_cuda[warm]",
        "change": 0.004,
        "ci": [-0.021, 0.032],
        "pairs": 12,
        "threshold": 0.05,
        "verdict": "same",
    }
    line, passed = tool.aa_line(entry, 0)
    assert passed
    assert line == (
        "A/A test_warmup_torch_cuda[warm]: same, change +0.4%, interval [-2.1%, +3.2%] over "
        "12 pairs: no regression above +3.2% (threshold 5%); perfsuite ab exited 0"
    )
    noisy = {**entry, "verdict": "inconclusive", "ci": [-0.116, 0.127], "change": -0.002}
    line, passed = tool.aa_line(noisy, 3)
    assert not passed
    assert "no regression above +12.7% (threshold 5%); perfsuite ab exited 3" in line
    assert tool.aa_line({**entry, "verdict": "slower", "ci": [0.06, 0.09]}, 1)[1] is False
    assert tool.aa_line({**entry, "ci": None, "change": None}, 3) == (
        "A/A test_warmup_torch_cuda[warm]: no interval (verdict 'same'; perfsuite ab exited 3)",
        False,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device nodes are Linux's")
def test_without_a_gpu_it_says_so_in_one_line() -> None:
    from perfsuite.bench.gpu import detect_gpu

    if detect_gpu().count:
        pytest.skip("this machine has a GPU")
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--no-ab"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gpu_check: no GPU found: ")
