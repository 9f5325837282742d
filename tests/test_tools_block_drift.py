"""``tools/validation/block_drift.py`` runs the users' decode in each mode and prints one
sd per mode; an unknown mode is a usage error. Nothing about the figures is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "validation" / "block_drift.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


def test_each_mode_prints_its_spread_and_the_children_are_reaped() -> None:
    done = run("--modes", "drift,one,two,own,stop", "--pairs", "4", "--rounds", "12")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["drift", "one", "two", "own", "stop"]
    assert re.search(r"1 apart \d\.\d{3}, 3 apart \d\.\d{3}, 10 apart \d\.\d{3}$", lines[0])
    assert re.fullmatch(r"one: sd of a pair \d\.\d{3}", lines[1])
    for line in lines[2:]:
        assert re.fullmatch(r"\w+: sd of a pair \d\.\d{3}, of a block \d\.\d{3}", line), line


def test_an_unknown_mode_is_a_usage_error() -> None:
    done = run("--modes", "sideways", "--pairs", "2", "--rounds", "4")
    assert done.returncode == 2
    assert "--modes: unknown mode 'sideways'" in done.stderr
