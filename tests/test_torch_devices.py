"""The torch benches on each device, the GPU's clocks, the saved ``gpu`` object and the caches.

Without a GPU, the ``gpu`` variants skip naming what is missing, the ``cpu`` variants
run and record ``device: cpu``; a fake GPU (a GPUInfo the plugin is handed, and a
torch.device that is never used) shows which variants ``--perf-device`` runs and the
rounds they get. Clock readings are constructed: NVML is never needed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from perfsuite.bench.caches import CACHE_ENV, fresh_caches, keep_apart
from perfsuite.bench.clocks import (
    ClockReading,
    ClockWatch,
    Nvml,
    Settling,
    clock_report,
    first_visible,
    settle,
)
from perfsuite.bench.gpu import device_kind
from perfsuite.errors import PerfsuiteError
from perfsuite.options import Device
from perfsuite.verdict.result import BenchResult, Role
from tests.fake_timer import Ticks
from tests.skips import skip_reasons

pytest_plugins = ("pytester",)

BENCHES = Path(__file__).resolve().parents[1] / "benches"
STEADY = ClockReading(sm_mhz=1980, mem_mhz=2619, temp_c=40, power_w=120.0)
NO_GPU_REASON = "no GPU: "


# -- where work runs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "kind"),
    [
        ("cpu", "cpu"),
        ("gpu", "gpu"),
        ("cuda", "gpu"),
        ("cuda:1", "gpu"),
        ("/GPU:0", "gpu"),
        ("CPU", "cpu"),
        ("mps", "mps"),
    ],
)
def test_device_kind(device: str, kind: str) -> None:
    assert device_kind(device) == kind

    class TorchLike:
        type = device.lower().lstrip("/").split(":")[0]

    assert device_kind(TorchLike()) == kind
    with pytest.raises(TypeError, match="not a device"):
        device_kind(3)


# -- clocks ---------------------------------------------------------------------------------------


def readings(*sm: int, reasons: int = 0) -> Any:
    values = iter(sm)
    return lambda: ClockReading(next(values), 2619, 40, 100.0, reasons)


def test_settle_waits_for_three_agreeing_readings_after_the_least_time() -> None:
    work: list[int] = []
    done = settle(
        lambda: work.append(1),
        readings(345, 900, 1700, 1980, 1965, 1980, 1980),
        clock=Ticks(0.1),
        least_s=0.3,
    )
    assert done.settled
    assert done.seconds == pytest.approx(0.6)
    assert done.readings == [345, 900, 1700, 1980, 1965, 1980]
    assert len(work) == 6


def test_settle_gives_up_at_the_most_time_and_runs_blind_without_a_reader() -> None:
    done = settle(lambda: None, readings(*range(300, 3000, 100)), clock=Ticks(1.0), most_s=5.0)
    assert (done.settled, done.seconds, len(done.readings)) == (False, 5.0, 5)
    blind = settle(lambda: None, None, clock=Ticks(0.25), blind_s=1.0)
    assert blind == Settling(False, 1.0, [])


def test_clock_report_flags_moved_clocks_and_slowdowns() -> None:
    settled = Settling(True, 0.61234, [1980])
    steady = clock_report(STEADY, [STEADY, STEADY], STEADY, settled)
    assert steady["before"] == {
        "sm_mhz": 1980,
        "mem_mhz": 2619,
        "temp_c": 40,
        "power_w": 120.0,
        "reasons": [],
    }
    assert (steady["clocks_moved"], steady["throttled"], steady["slowdowns"]) == (False, False, [])
    assert (steady["samples"], steady["settled"], steady["settle_s"]) == (2, True, 0.612)
    dip = ClockReading(1890, 2619, 41, 90.0, reasons=0x1)  # 4.5% down: inside the tolerance
    assert clock_report(STEADY, [dip], STEADY, settled)["clocks_moved"] is False
    capped = ClockReading(1700, 2619, 83, 700.0, reasons=0x4 | 0x20)
    report = clock_report(STEADY, [STEADY, capped], STEADY, settled)
    assert (report["clocks_moved"], report["throttled"]) == (True, True)
    assert report["slowdowns"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert (report["sm_mhz_min"], report["sm_mhz_max"], report["temp_c_max"]) == (1700, 1980, 83)
    assert report["power_w_max"] == 700.0
    memory = ClockReading(1980, 1593, 40, None)
    assert clock_report(STEADY, [], memory, settled)["clocks_moved"] is True
    assert capped.to_dict()["reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]


def test_clock_watch_reads_before_and_after_and_samples_between() -> None:
    bursts: list[int] = []
    watch = ClockWatch(lambda: bursts.append(1), lambda: STEADY, interval=0.01)
    assert watch.finish() is None  # never started: nothing read
    watch = ClockWatch(lambda: bursts.append(1), lambda: STEADY, interval=0.01)
    watch.start()
    assert watch.settling is not None
    assert watch.settling.settled
    report = watch.finish()
    assert report is not None
    assert report["before"] == report["after"] == STEADY.to_dict()
    assert bursts
    blind = ClockWatch(lambda: None, None)
    blind.start()
    assert blind.finish() is None


def test_nvml_says_why_it_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert (
        Nvml.open() == "nvidia-ml-py is not installed: pip install 'perfsuite[gpu]' (nvidia-ml-py)"
    )


def test_first_visible_device_as_nvml_names_it() -> None:
    assert first_visible(None) is None
    assert first_visible("") is None
    assert first_visible("2,0") == "2"
    assert first_visible("GPU-8f3e, GPU-1") == "GPU-8f3e"
    assert first_visible("MIG-abc") is None


# -- the saved gpu object -------------------------------------------------------------------------


def result(gpu: dict[str, Any] | None) -> BenchResult:
    return BenchResult(
        group="g",
        variant="v",
        role=Role.NONE,
        items=1,
        unit="steps",
        scale="smoke",
        device="gpu",
        threshold=0.05,
        gpu=gpu,
    )


def test_the_gpu_object_round_trips_and_older_results_load() -> None:
    gpu = clock_report(STEADY, [], ClockReading(1500, 2619, 80, 650.0, 0x4), Settling(True, 0.5))
    saved = result(gpu)
    data = saved.to_dict()
    assert data["gpu"]["clocks_moved"] is True
    assert data["gpu"]["throttled"] is True
    loaded = BenchResult.from_dict(json.loads(json.dumps(data)), "x")
    assert loaded == saved
    assert (loaded.clocks_moved, loaded.throttled) == (True, True)
    assert loaded.gpu_flags == ["clocks moved", "throttled"]
    older = result(None).to_dict()
    assert "gpu" not in older
    assert BenchResult.from_dict(older, "x").gpu is None
    assert BenchResult.from_dict(older, "x").gpu_flags == []


@pytest.mark.parametrize(
    ("gpu", "message"),
    [([1], "gpu must be an object or null"), ({"throttled": "no"}, "gpu throttled must be true")],
)
def test_a_bad_gpu_object_is_refused(gpu: Any, message: str) -> None:
    data = {**result(None).to_dict(), "gpu": gpu}
    with pytest.raises(PerfsuiteError, match=message):
        BenchResult.from_dict(data, "run.json: bench x")


# -- compile caches -------------------------------------------------------------------------------


def test_fresh_caches_point_every_cache_at_the_session_and_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/else")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    with fresh_caches(tmp_path) as env:
        assert env == {name: str(tmp_path / folder) for name, folder in CACHE_ENV.items()}
        assert all(os.environ[name] == path and Path(path).is_dir() for name, path in env.items())
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/else"
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ


def test_caches_are_kept_apart_where_a_gpu_may_be_used() -> None:
    def never() -> int:
        raise AssertionError("--perf-device cpu must not look for a GPU")

    assert keep_apart(Device.CPU, never) is False
    assert keep_apart(Device.AUTO, lambda: 0) is False
    assert keep_apart(Device.AUTO, lambda: 1) is True
    assert keep_apart(Device.GPU, lambda: 1) is True


# -- which variants run, with what rounds (a fake GPU) --------------------------------------------

FAKE_GPU_CONFTEST = """
import pytest

import perfsuite.plugin
from perfsuite.bench.devices import torch_device_for
from perfsuite.bench.gpu import GPUInfo

perfsuite.plugin.detect_gpu = lambda: GPUInfo(count=1, name="Fake GPU", source="nvml")


@pytest.fixture
def torch_device(request, perf_settings):
    return torch_device_for(request, perf_settings)
"""

DEVICE_TESTS = """
from pathlib import Path

import pytest

from perfsuite.bench.devices import ON_CPU_AND_GPU


@ON_CPU_AND_GPU
@pytest.mark.perf(group="g_{torch_device}", default_rounds=3)
def test_device(perf, torch_device):
    on_gpu = perf.settings.group == "g_gpu"
    assert torch_device.type == ("cuda" if on_gpu else "cpu")
    with open(Path(__file__).with_name("rounds.txt"), "a") as out:
        out.write(f"{perf.settings.group} {perf.settings.rounds}\\n")
"""


def _rounds(pytester: pytest.Pytester) -> dict[str, int]:
    """Group -> rounds each variant of the last inner run got (and forget them)."""
    path = pytester.path / "rounds.txt"
    seen = dict(line.split() for line in path.read_text().splitlines()) if path.exists() else {}
    path.unlink(missing_ok=True)
    return {group: int(n) for group, n in seen.items()}


@pytest.mark.torch
@pytest.mark.parametrize(
    ("device", "passed", "rounds"),
    [
        ("auto", ["cpu", "gpu"], {"g_cpu": 3, "g_gpu": 10}),
        ("cpu", ["cpu"], {"g_cpu": 3}),
        ("gpu", ["gpu"], {"g_gpu": 10}),
    ],
)
def test_perf_device_picks_the_variants_and_a_gpu_gets_enough_rounds(
    pytester: pytest.Pytester,
    inner_args: list[str],
    device: str,
    passed: list[str],
    rounds: dict[str, int],
) -> None:
    pytester.makeconftest(FAKE_GPU_CONFTEST)
    pytester.makepyfile(test_inner=DEVICE_TESTS)
    result = pytester.runpytest_subprocess(*inner_args, f"--perf-device={device}", "-rs")
    result.assert_outcomes(passed=len(passed), skipped=2 - len(passed))
    assert result.ret == 0
    assert _rounds(pytester) == rounds
    expected = {
        "auto": [],
        "cpu": ["GPU bench skipped: --perf-device cpu"],
        "gpu": ["--perf-device gpu: this bench runs on the GPU only (its gpu variant)"],
    }[device]
    assert skip_reasons(result) == expected
    if device == "gpu":
        pytester.runpytest_subprocess(*inner_args, "--perf-device=gpu", "--perf-rounds=2")
        assert _rounds(pytester) == {"g_gpu": 2}  # rounds given are taken as given
        pytester.runpytest_subprocess(*inner_args, "--perf-device=gpu", "--perf-scale=smoke")
        assert _rounds(pytester) == {"g_gpu": 3}  # smoke: the bench's own default


# -- the real benches on this machine's CPU -------------------------------------------------------


def _saved(path: Path) -> dict[str, dict[str, Any]]:
    """Name -> extra_info["perfsuite"] of every bench in a --benchmark-json report."""
    report = json.loads(path.read_text())
    return {b["name"]: b["extra_info"]["perfsuite"] for b in report["benchmarks"]}


@pytest.mark.torch
def test_warmup_and_swap_benches_take_the_device_as_a_parameter(
    pytester: pytest.Pytester, inner_args: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    result = pytester.runpytest_subprocess(
        str(BENCHES / "bench_warmup.py"),
        *inner_args,
        "-k",
        "warmup_torch and not cuda or swap_weights_torch",
        "--perf-scale=smoke",
        "--perf-device=auto",
        "-rs",
        f"--benchmark-json={out}",
    )
    gpu_found = "no GPU" not in str(result.stdout)
    if gpu_found:  # on a GPU machine the gpu variants run too
        result.assert_outcomes(passed=8)
    else:
        result.assert_outcomes(passed=4, skipped=4)
        assert all(r.startswith(NO_GPU_REASON) for r in skip_reasons(result))
    saved = _saved(out)
    for name, info in saved.items():
        device = "gpu" if name.endswith("-gpu]") else "cpu"
        assert info["device"] == device, name
        assert info["group"].endswith(f"_{device}"), info["group"]
        assert info["params"]["device"] == ("cuda:0" if device == "gpu" else "cpu")
        if device == "cpu":
            assert "gpu" not in info, name
    assert sorted(n for n in saved if n.endswith("-cpu]")) == [
        "test_swap_weights_torch[cold-cpu]",
        "test_swap_weights_torch[swap-cpu]",
        "test_warmup_torch[cold-cpu]",
        "test_warmup_torch[warm-cpu]",
    ]


@pytest.mark.torch
def test_compile_bench_keeps_exact_counts_on_the_cpu_and_skips_the_gpu(
    pytester: pytest.Pytester, inner_args: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    result = pytester.runpytest_subprocess(
        str(BENCHES / "bench_compile.py"),
        *inner_args,
        "-k",
        "forward and variable and (eager or compile-)",
        "--perf-scale=smoke",
        "-rs",
        f"--benchmark-json={out}",
    )
    outcomes = result.parseoutcomes()
    reasons = skip_reasons(result)
    if any("torch.compile needs" in r for r in reasons):
        pytest.skip(next(r for r in reasons if "torch.compile needs" in r))
    assert outcomes.get("passed") == 2 + (0 if outcomes.get("skipped") else 2)
    assert all(r.startswith(NO_GPU_REASON) for r in reasons)
    saved = _saved(out)
    eager, compiled = (
        saved[f"test_compile[{m}-forward-variable-cpu]"] for m in ("eager", "compile")
    )
    assert (eager["device"], compiled["device"]) == ("cpu", "cpu")
    assert (eager["counters"], compiled["counters"]) == ({"traces": 0}, {"traces": 2})
    assert compiled["notes"] == {"recompiles": 1}
    assert compiled["group"] == "compile_forward_variable_cpu"
