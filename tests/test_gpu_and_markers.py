"""Markers (tf, torch, dali, gpu, perf), install hints, and the GPU skip paths."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import perfsuite.plugin
from perfsuite.bench.frameworks import (
    FRAMEWORKS,
    MARKER_MODULES,
    distribution_version,
    framework_versions,
    install_hint,
    is_installed,
    require,
)
from perfsuite.bench.gpu import GPU, GPUInfo

pytest_plugins = ("pytester",)

SKIP_LINE = re.compile(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$")


def skip_reasons(result: pytest.RunResult) -> list[str]:
    """The reasons of ``-rs`` lines, one per skipped test, sorted."""
    reasons = []
    for line in result.stdout.lines:
        match = SKIP_LINE.match(line)
        if match:
            reasons.extend([match[2]] * int(match[1]))
    return sorted(reasons)


# -- frameworks and install hints ------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "hint"),
    [
        ("tensorflow", "pip install 'perfsuite[tf]'"),
        ("torch", "pip install 'perfsuite[torch]'"),
        ("nvidia.dali", "pip install 'perfsuite[dali]'"),
    ],
)
def test_install_hint(module: str, hint: str) -> None:
    assert install_hint(module) == hint


def test_marker_modules_cover_the_frameworks() -> None:
    assert MARKER_MODULES == {"tf": "tensorflow", "torch": "torch", "dali": "nvidia.dali"}
    assert set(MARKER_MODULES.values()) == set(FRAMEWORKS)


def test_is_installed_never_imports() -> None:
    assert is_installed("json")
    assert not is_installed("perfsuite_no_such_module")
    assert not is_installed("perfsuite_no_such_package.sub")
    assert not is_installed("")
    before = set(sys.modules)
    for module in FRAMEWORKS:
        is_installed(module)
    assert {
        m for m in set(sys.modules) - before if m.split(".")[0] in {"tensorflow", "torch"}
    } == set()


def test_require_names_the_extra() -> None:
    assert require("json").__name__ == "json"
    with pytest.raises(ImportError, match=r"no_such_module is not installed: pip install"):
        require("perfsuite_no_such_module")


def test_framework_versions_come_from_metadata() -> None:
    versions = framework_versions()
    assert set(versions) >= {
        "tensorflow",
        "torch",
        "nvidia.dali",
        "numpy",
        "pillow",
        "pytest-benchmark",
        "perfsuite",
    }
    assert versions["pytest-benchmark"] == distribution_version("pytest-benchmark")
    assert versions["perfsuite"] == perfsuite.__version__
    assert distribution_version(("perfsuite-no-such-dist",)) is None
    for module in FRAMEWORKS:
        installed = importlib.util.find_spec(module.split(".")[0]) is not None
        if not installed:
            assert versions[module] is None


# -- marker registration and the install-hint skip ---------------------------------------------


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    assert result.ret == pytest.ExitCode.OK
    lines = result.stdout.lines
    for start in (
        "@pytest.mark.perf(group=None, variant=None, baseline=None, roofline=None, threshold=None,"
        " rounds=None, default_rounds=None, warmup_rounds=None): per-bench settings",
        "@pytest.mark.gpu: needs a GPU: skipped where none is found or with --perf-device cpu",
        "@pytest.mark.tf: needs TensorFlow: skipped where it is missing "
        "(pip install 'perfsuite[tf]')",
        "@pytest.mark.torch: needs PyTorch: skipped where it is missing "
        "(pip install 'perfsuite[torch]')",
        "@pytest.mark.dali: needs NVIDIA DALI: skipped where it is missing "
        "(pip install 'perfsuite[dali]')",
    ):
        assert any(line.startswith(start) for line in lines), start


HIDE_FRAMEWORKS = """
import sys


class Hide:
    '''Make the heavy frameworks look uninstalled, as on a machine without the extras.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"tensorflow", "torch"} or name.startswith("nvidia.dali"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hide())
"""

MARKED_TESTS = """
import pytest


@pytest.mark.tf
def test_tf():
    raise AssertionError("must be skipped")


@pytest.mark.torch
def test_torch():
    raise AssertionError("must be skipped")


@pytest.mark.dali
def test_dali():
    raise AssertionError("must be skipped")


@pytest.mark.dali
@pytest.mark.perf(rounds=3)
class TestClassMarker:
    def test_method(self):
        raise AssertionError("must be skipped")


def test_unmarked():
    pass
"""


def test_missing_framework_skips_with_the_install_hint(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makeconftest(HIDE_FRAMEWORKS)
    pytester.makepyfile(test_inner=MARKED_TESTS)
    result = pytester.runpytest_subprocess(*inner_args, "-rs", timeout=120)
    result.assert_outcomes(passed=1, skipped=4)
    assert skip_reasons(result) == sorted(
        [
            "tensorflow is not installed: pip install 'perfsuite[tf]'",
            "torch is not installed: pip install 'perfsuite[torch]'",
            "nvidia.dali is not installed: pip install 'perfsuite[dali]'",
            "nvidia.dali is not installed: pip install 'perfsuite[dali]'",
        ]
    )


def test_installed_framework_runs(
    pytester: pytest.Pytester, inner_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perfsuite.plugin, "is_installed", lambda module: True)
    pytester.makepyfile(
        test_inner="""
        import pytest

        @pytest.mark.tf
        @pytest.mark.torch
        @pytest.mark.dali
        def test_all():
            pass
    """
    )
    pytester.runpytest(*inner_args).assert_outcomes(passed=1)


def test_unknown_marker_is_rejected_under_strict_markers(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(
        test_inner="""
        import pytest

        @pytest.mark.tensorflow
        def test_typo():
            pass
    """
    )
    result = pytester.runpytest(*inner_args)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'tensorflow' not found in `markers` configuration option*"])


# -- GPU -----------------------------------------------------------------------------------------

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


DETECT = """
import json, sys
from perfsuite.bench.gpu import detect_gpu
info = detect_gpu(sys.argv[1:])
print(json.dumps([info.count, info.reason, "torch" in sys.modules, "tensorflow" in sys.modules]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device nodes are Linux's")
def test_no_gpu_device_node_answers_without_importing_a_framework(tmp_path: Path) -> None:
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


@pytest.mark.skipif(
    "torch" in sys.modules or "tensorflow" in sys.modules,
    reason="a framework is loaded in this process, so sync() can reach it",
)
def test_sync_without_a_framework_says_what_to_install() -> None:
    with pytest.raises(RuntimeError, match=r"pip install 'perfsuite\[torch\]'"):
        GPU(NO_GPU).sync()


# -- the perf marker ---------------------------------------------------------------------------

PERF_MARKER_TESTS = """
import pytest

pytestmark = pytest.mark.perf(threshold=0.2, rounds=9)


def test_session_defaults_and_module_marker(perf):
    assert perf.settings.threshold == 0.2
    assert perf.settings.rounds == 9
    assert perf.settings.warmup_rounds == 1  # smoke scale


@pytest.mark.perf(rounds=3, warmup_rounds=0)
def test_closest_marker_wins(perf):
    assert perf.settings.rounds == 3
    assert perf.settings.threshold == 0.2
    calls = []
    perf.measure(lambda: calls.append(1), items=4)
    assert len(calls) == 3
    assert len(perf.timings()) == 3


@pytest.mark.perf(roundz=3)
def test_unknown_keyword(perf):
    pass


@pytest.mark.perf(3)
def test_positional(perf):
    pass


@pytest.mark.perf(rounds=0)
def test_bad_rounds(perf):
    pass


@pytest.mark.perf(threshold=-1)
def test_bad_threshold(perf):
    pass


@pytest.mark.perf(threshold=2)
def test_threshold_as_percent(perf):
    pass


@pytest.mark.perf(rounds={"smoke": 4, "full": 10})
def test_rounds_per_scale_beat_the_command_line(perf):
    assert perf.settings.rounds == 4


@pytest.mark.perf(rounds={"fast": 3})
def test_bad_rounds_scale(perf):
    pass


@pytest.mark.perf(group="g_{kind}", baseline="b", roofline="r")
@pytest.mark.parametrize("kind", ["x"])
@pytest.mark.parametrize("variant", ["b", "r", pytest.param("c", marks=pytest.mark.perf(rounds=2))])
def test_group_variant_baseline_roofline(perf, kind, variant):
    assert perf.settings.group == f"g_{kind}"
    assert perf.settings.variant == variant
    assert perf.settings.baseline is (variant == "b")
    assert perf.settings.roofline is (variant == "r")
    assert perf.settings.rounds == (2 if variant == "c" else 9)


@pytest.mark.parametrize("n", [1], ids=["one"])
def test_variant_is_the_parametrize_id(perf, n):
    assert perf.settings.variant == "one"
    assert perf.settings.group == "inner"


@pytest.mark.perf(group="g_{nope}")
def test_group_naming_an_unknown_parameter(perf):
    pass


@pytest.mark.perf(baseline="same", roofline="same")
def test_baseline_and_roofline_alike(perf):
    pass
"""


#: no module marker: a bench's own default rounds, under --perf-rounds and a marker
BENCH_DEFAULT_TESTS = """
import pytest

OWN = pytest.mark.perf(default_rounds={"smoke": 2, "default": 3})


@OWN
def test_the_command_line_beats_a_bench_default(perf):
    assert perf.settings.rounds == 5


@pytest.mark.perf(rounds=6)
@OWN
def test_a_marker_beats_both(perf):
    assert perf.settings.rounds == 6
"""


def test_perf_marker_settings(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(test_inner=PERF_MARKER_TESTS, test_defaults=BENCH_DEFAULT_TESTS)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke", "--perf-rounds=5")
    result.assert_outcomes(passed=9, errors=8)
    result.stdout.fnmatch_lines_random(
        [
            "*test_bad_rounds_scale: perf(rounds={'fast': 3}) must map scales "
            "(default, full, smoke) to ints >= 1",
            "*test_group_naming_an_unknown_parameter: perf(group='g_{nope}') names a field that "
            "is not a parameter of this bench ('nope'; parameters: none)",
            "*test_baseline_and_roofline_alike: perf(baseline='same', roofline='same') name one "
            "variant; a bench is the baseline or the roofline, not both",
            "*test_unknown_keyword: unknown perf marker keyword(s) roundz "
            "(known: baseline, default_rounds, group, roofline, rounds, threshold, variant, "
            "warmup_rounds)",
            "*test_positional: perf marker takes keywords only*",
            "*test_bad_rounds: perf(rounds=0) must be an int >= 1",
            "*test_bad_threshold: perf(threshold=-1) must be a fraction in (0, 1)",
            "*test_threshold_as_percent: perf(threshold=2) must be a fraction in (0, 1): "
            "did you mean 2% (0.02)?",
        ]
    )


def test_a_bench_default_applies_without_the_command_line(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(
        test_own="""
import pytest


@pytest.mark.perf(default_rounds={"smoke": 2, "full": 9}, warmup_rounds=0)
def test_own_default(perf):
    assert perf.settings.rounds == 2
    assert perf.settings.warmup_rounds == 0
    calls = []
    perf.measure(lambda: calls.append(1), items=1)
    assert len(calls) == 2


@pytest.mark.perf(default_rounds={"full": 9})
def test_a_scale_left_out_falls_back_to_the_scale(perf):
    assert perf.settings.rounds == 7
"""
    )
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke")
    result.assert_outcomes(passed=2)
