"""GPU detection and the GPU skip path: --perf-device, the gpu marker and fixture, GPU or none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import perfsuite.plugin
from perfsuite.bench.frameworks import is_installed
from perfsuite.bench.gpu import GPU, GPUInfo
from tests.skips import skip_reasons

pytest_plugins = ("pytester",)


GPU_TESTS = """
import pytest


@pytest.mark.gpu
def test_marked():
    pass


def test_fixture(gpu):
    assert gpu.count >= 1
    assert gpu.torch_device == "cuda:0"
    gpu.sync()


def test_cpu_only():
    pass
"""


def test_gpu_skip_path_on_this_machine(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    """Where no GPU is found the GPU tests skip, saying why; where one is, they run."""
    pytester.makepyfile(test_inner=GPU_TESTS)
    result = pytester.runpytest_subprocess(*inner_args, "-rs", timeout=180)
    outcomes = result.parseoutcomes()
    if outcomes.get("skipped"):
        result.assert_outcomes(passed=1, skipped=2)
        for reason in skip_reasons(result):
            assert reason.startswith("no GPU: ")
    else:
        result.assert_outcomes(passed=3)


def test_perf_device_cpu_skips_gpu_tests(
    pytester: pytest.Pytester, inner_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_detect() -> GPUInfo:
        raise AssertionError("--perf-device cpu must not look for a GPU")

    monkeypatch.setattr(perfsuite.plugin, "detect_gpu", must_not_detect)
    pytester.makepyfile(test_inner=GPU_TESTS)
    result = pytester.runpytest(*inner_args, "--perf-device=cpu", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    assert skip_reasons(result) == ["GPU bench skipped: --perf-device cpu"] * 2


NO_GPU = GPUInfo(count=0, reason="no NVIDIA driver found (NVML unavailable)")


def test_no_gpu_skips_with_the_reason(
    pytester: pytest.Pytester, inner_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def detect() -> GPUInfo:
        calls.append(1)
        return NO_GPU

    monkeypatch.setattr(perfsuite.plugin, "detect_gpu", detect)
    pytester.makepyfile(test_inner=GPU_TESTS)
    result = pytester.runpytest(*inner_args, "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    assert skip_reasons(result) == ["no GPU: no NVIDIA driver found (NVML unavailable)"] * 2
    assert calls == [1]  # detected once per session


def test_perf_device_gpu_without_a_gpu_fails(
    pytester: pytest.Pytester, inner_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perfsuite.plugin, "detect_gpu", lambda: NO_GPU)
    pytester.makepyfile(test_inner=GPU_TESTS)
    result = pytester.runpytest(*inner_args, "--perf-device=gpu")
    result.assert_outcomes(passed=1, errors=2)
    assert (
        str(result.stdout).count(
            "\n--perf-device gpu was given but no GPU was found: no NVIDIA driver found"
        )
        == 2
    )


def test_gpu_fixture_hands_out_the_detected_device(
    pytester: pytest.Pytester, inner_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    info = GPUInfo(count=2, name="Test GPU", memory_bytes=1 << 30, driver="1.0", source="nvml")
    monkeypatch.setattr(perfsuite.plugin, "detect_gpu", lambda: info)
    pytester.makepyfile(
        test_inner="""
        import pytest

        @pytest.mark.gpu
        def test_marked(gpu):
            assert gpu.info.name == "Test GPU"
            assert gpu.count == 2
            assert gpu.name == "Test GPU"
            assert gpu.torch_device == "cuda:0"
    """
    )
    pytester.runpytest(*inner_args).assert_outcomes(passed=1)


def test_gpu_info_facts() -> None:
    assert NO_GPU.facts() == {
        "count": 0,
        "name": None,
        "memory_bytes": None,
        "driver": None,
        "cuda": None,
        "cudnn": None,
        "source": "none",
        "reason": "no NVIDIA driver found (NVML unavailable)",
    }


#: detect_gpu in a fresh process, with the device nodes it is given and no NVML library
#: (which would find a real GPU without looking at device nodes)
DETECT = """
import json, sys
sys.modules["pynvml"] = None
from perfsuite.bench.gpu import detect_gpu
info = detect_gpu(sys.argv[1:])
print(json.dumps([info.count, info.reason, "torch" in sys.modules, "tensorflow" in sys.modules]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device nodes are Linux's")
def test_no_gpu_device_node_answers_without_importing_a_framework(tmp_path: Path) -> None:
    """Device nodes faked in ``tmp_path``: the answer holds on a machine with a GPU too."""

    def detect(*nodes: str) -> list[object]:
        out = subprocess.run(
            [sys.executable, "-c", DETECT, *nodes], capture_output=True, text=True, check=True
        )
        found: list[object] = json.loads(out.stdout)
        return found

    missing = [str(tmp_path / "nvidiactl"), str(tmp_path / "nvidia[0-9]*")]
    count, reason, torch_loaded, tf_loaded = detect(*missing)
    assert (count, torch_loaded, tf_loaded) == (0, False, False)
    assert reason == f"no GPU device found (none of {', '.join(missing)})"
    # a node that is there: the frameworks are asked (here, where torch or TF is installed)
    (tmp_path / "nvidia0").write_text("")
    count, reason, torch_loaded, tf_loaded = detect(*missing)
    if is_installed("torch") or is_installed("tensorflow"):
        assert torch_loaded or tf_loaded
    if count == 0:
        assert "found (none of" not in str(reason)


def test_sync_without_a_framework_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither framework loaded (whatever this process has imported): sync() cannot work."""
    for name in ("torch", "tensorflow"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(RuntimeError, match=r"pip install 'perfsuite\[torch\]'"):
        GPU(NO_GPU).sync()
