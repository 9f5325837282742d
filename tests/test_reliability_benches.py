"""The benches say they need perfsuite's plugin when it is not loaded, with the install hint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("bench", ["bench_tfdata.py", "bench_warmup.py"])
def test_benches_without_perfsuite_name_it_and_the_install(bench: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:perfsuite", f"benches/{bench}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        "ERROR: the benches in benches/ need the perfsuite pytest plugin, which is not loaded: "
        "install it (pip install -e . in this checkout, or pip install 'perfsuite[all]') "
        "and drop -p no:perfsuite"
    ]
    assert "not found in `markers`" not in result.stdout + result.stderr
