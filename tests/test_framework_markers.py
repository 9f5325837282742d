"""Framework markers (tf, torch, dali), install hints, and the skip when a framework is missing."""

from __future__ import annotations

import importlib.util
import sys

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
from tests.skips import skip_reasons

pytest_plugins = ("pytester",)

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
        " rounds=None, default_rounds=None, warmup_rounds=None, counters=None,"
        " memory_threshold=None): per-bench settings",
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
