"""``make test``'s two pytest streams (tools/ci/streams.py), with a stand-in pytest that
records its arguments and exits with the status it is told."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STREAMS = REPO / "tools" / "ci" / "streams.py"

#: a stand-in for pytest: appends its arguments to calls.txt, prints a line, exits
#: with AB_CODE when its first argument is an A/B test file, else with REST_CODE
FAKE = """#!/bin/sh
echo "$*" >> calls.txt
case "$1" in
  tests/test_ab_one.py) echo "ab stream output"; exit "$AB_CODE" ;;
  *) echo "rest stream output"; exit "$REST_CODE" ;;
esac
"""


def _run(tmp_path: Path, ab: int, rest: int) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tests").mkdir(exist_ok=True)
    for name in ("test_ab_one.py", "test_gate_confirm.py", "test_other.py"):
        (tmp_path / "tests" / name).write_text("")
    fake = tmp_path / "fake-pytest"
    fake.write_text(FAKE)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "AB_CODE": str(ab), "REST_CODE": str(rest)}
    return subprocess.run(
        [sys.executable, str(STREAMS), str(fake), "-k", "x"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_both_streams_run_with_the_users_arguments(tmp_path: Path) -> None:
    result = _run(tmp_path, 0, 0)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = sorted((tmp_path / "calls.txt").read_text().splitlines())
    assert calls == [
        "tests benches --perf-scale=smoke --ignore=tests/test_ab_one.py "
        "--ignore=tests/test_gate_confirm.py -k x",
        "tests/test_ab_one.py tests/test_gate_confirm.py -k x",
    ]
    # the rest's output first, then the A/B tests' under their own heading
    out = result.stdout
    assert (
        out.index("rest stream output")
        < out.index("==== the A/B tests")
        < out.index("ab stream output")
    )


@pytest.mark.parametrize(
    ("ab", "rest", "expected"), [(1, 0, 1), (0, 2, 2), (5, 0, 0), (0, 5, 0), (5, 5, 5), (1, 2, 2)]
)
def test_either_stream_failing_fails(tmp_path: Path, ab: int, rest: int, expected: int) -> None:
    assert _run(tmp_path, ab, rest).returncode == expected


def test_no_pytest_given_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(STREAMS)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 4
    assert "usage: python tools/ci/streams.py PYTEST" in result.stderr
