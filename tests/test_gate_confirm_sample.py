"""``--perf-gate`` with many suspects whose code did not change: the A/B measures the
ones the screen read most surely slower, and the rest pass with them unless those are confirmed.
In a temporary git repository with no pytest configuration file, benches of
pytest-benchmark's ``benchmark`` fixture whose time follows a data file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsuite.exitcodes import ExitCode
from tests.test_gate_confirm import commit, gate, git, save

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0,
    reason="git is not installed",
)

#: four benches of one code: each sleeps the environment's delay (the machine) times a
#: data file's factor (no code), found by a listing: the bench file does not name it
FROM_DATA = """
import os
import pathlib
import time

import pytest


@pytest.mark.parametrize("n", range(4))
def test_scaled(benchmark, n):
    factor = float(next(pathlib.Path(__file__).parent.glob("*.txt")).read_text())
    benchmark(time.sleep, float(os.environ["GATE_TEST_DELAY"]) * factor)
"""


def test_suspects_of_the_same_code_are_sampled_and_a_data_file_still_fails(
    tmp_path: Path,
) -> None:
    """Four suspects whose code is the same as the baseline's: the A/B measures the 3
    the screen read most surely slower. The machine's move clears the fourth with them; a data file
    that slows them all confirms the 3, and the fourth is unconfirmed, not measured: the
    gate runs at most one A/B."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "gate@example.invalid")
    git(repo, "config", "user.name", "gate test")
    commit(repo, "benches", **{"test_data.py": FROM_DATA, "factor.txt": "1.0\n"})
    save(repo)
    commit(repo, "data", **{"labels.json": "[]\n"})
    proc = gate(repo, delay=0.02)  # the machine got slower; no bench's code or data changed
    out = proc.stdout
    assert proc.returncode == ExitCode.OK, out + proc.stderr
    assert "the code of 4 suspect(s) is the same as at" in out
    assert "3 suspect(s) of the screen; confirming in an A/B of" in out
    assert "not measured: its code is the same as at" in out
    assert "the other 1 suspect(s)" not in out  # no second A/B
    assert "; 1 suspect(s) of unchanged code passed with those the A/B measured (" in out
    commit(repo, "more data", **{"factor.txt": "2.0\n"})
    slow = gate(repo, delay=0.01)
    out = slow.stdout
    assert slow.returncode == ExitCode.REGRESSION, out + slow.stderr
    assert "unconfirmed, not measured: its code is the same as at" in out
    assert "perfsuite gate: FAILED: 3 regressions" in out
    assert out.count("confirming in an A/B of") == 1
