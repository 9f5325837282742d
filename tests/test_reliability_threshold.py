"""A threshold of 1 or more is refused with the fraction it most likely meant, never 100%+."""

from __future__ import annotations

import argparse

import pytest

from perfsuite.cli import main
from perfsuite.options import parse_threshold

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("text", "hint"),
    [("2", "did you mean 2% (0.02)?"), ("1", "did you mean 1% (0.01)?"), ("12.5", "(0.125)?")],
)
def test_whole_percent_is_refused_with_the_fraction(text: str, hint: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_threshold(text)
    assert hint in str(info.value)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["100%", "150", "3000"])
def test_a_hundred_percent_or_more_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="below 1"):
        parse_threshold(text)


def test_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_never(): raise AssertionError('must not run')")
    result = pytester.runpytest("-p", "no:cacheprovider", "--perf-threshold", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "argument --perf-threshold: invalid threshold '2'" in str(result.stderr)
    assert "did you mean 2% (0.02)?" in str(result.stderr)


def test_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nperf_threshold = 2\n")
    pytester.makepyfile("def test_never(): raise AssertionError('must not run')")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option perf_threshold: invalid threshold '2'" in str(result.stderr)
    assert "did you mean 2% (0.02)?" in str(result.stderr)


def test_perfsuite_compare(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--threshold", "2"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --threshold: invalid threshold '2'" in err
    assert "did you mean 2% (0.02)?" in err
