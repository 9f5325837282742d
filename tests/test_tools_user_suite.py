"""The measurement tools' generated sources are valid Python, and the gate's output reads
back as the gate printed it (``tools/validation/user_suite.py``,
``tools/validation/gate_check.py``)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsuite.verdict.table import HEADER
from perfsuite.verdict.textable import format_table
from tools.validation import gate_check, user_suite

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("extra", [0.0, 0.05, 0.2])
def test_benchmark_suite_sources_parse(extra: float) -> None:
    sources = user_suite.benchmark_sources(extra, "  (unchanged: a comment only)")
    assert sorted(sources) == sorted(user_suite.BENCHMARK_FILES)
    for name, text in sources.items():
        tree = ast.parse(text, filename=name)
        tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert any(t.startswith("test_decode") for t in tests), name
        assert f"EXTRA = {extra}  #" in text
        assert "perfsuite" not in text  # the benchmark fixture only
        assert "perf." not in text


def test_the_slowdown_is_put_first_in_the_benchs_own_function() -> None:
    source = (
        "import pytest\n\n\ndef helper():\n    return 1\n\n\n"
        'def t(perf, x):\n    """Doc."""\n    perf.measure(helper)\n'
    )
    slowed = gate_check.slow_down(source, "benches/b.py::t[x]", 0.1)
    before, after = ast.parse(source).body, ast.parse(slowed).body
    assert [ast.dump(n) for n in before[:2]] == [ast.dump(n) for n in after[:2]]
    function = after[2]
    assert isinstance(function, ast.FunctionDef)
    assert ast.get_docstring(function) == "Doc."
    assert ast.unparse(function.body[-1]) == "perf.measure(helper)"
    assert "if perf.nodeid == 'benches/b.py::t[x]':" in ast.unparse(function)
    with pytest.raises(SystemExit, match="no function u"):
        gate_check.slow_down(source, "benches/b.py::u", 0.1)


ROWS = [
    ["retracing_a/eager", "SLOWER (confirmed) [1] (>5%)", "time +10.0% [+8.0%, +12.0%]"],
    ["retracing_a/tf", "slower? cleared [2] (>5%)", "time +6.0% [+1.0%, +9.0%]"],
    ["test_decode", "same (>5%)", "time +0.1% [-1.0%, +1.0%]"],
]
#: a gated run's output, its table as perfsuite formats it
GATED = [
    "perfsuite gate: 2 suspect(s) of the screen; confirming in an A/B of abc",
    "=== perfsuite verdict ===",
    "perfsuite gate: confirmations took 17 s (2 suspect(s): 1 confirmed, 1 cleared)",
    "baseline: 0001",
    *format_table([[*row, "-", "0.001", "7/7", "-", "-"] for row in ROWS], HEADER),
    "[1] confirmed by A/B: +10.2% [+8.0%, +12.0%] in 20 pairs",
    "[2] cleared by A/B (same): +0.4% [-1.0%, +2.0%] in 20 pairs",
    "3 benches compared: 2 slower, 1 same",
    "perfsuite gate: FAILED: 1 regression: retracing_a/eager (confirmed by A/B: +10.2%)",
]


def test_a_row_failed_by_its_cost_is_read_back_as_a_regression() -> None:
    """A changed bench whose A/B confirmed its CPU per call risen, not its time."""
    row = ["compile_x/eager", "inconclusive, cost ROSE (confirmed) [1] (>5%)", "time +7.2%"]
    said = user_suite.parse_gate_output(
        format_table([[*row, "-", "0.001", "7/7", "-", "-"]], HEADER)
    )
    assert said["rows"]["compile_x/eager"] == "inconclusive, cost ROSE (confirmed)"
    assert said["outcomes"] == {"confirmed": 1}
    assert user_suite.regressed(said["rows"]) == ["compile_x/eager"]


def test_gate_output_is_read_back() -> None:
    said = user_suite.parse_gate_output(GATED)
    assert said["status"] == "FAILED"
    assert said["gate"].startswith("perfsuite gate: FAILED: 1 regression: retracing_a/eager")
    assert said["confirmations"] == {
        "seconds": 17,
        "suspects": 2,
        "tally": {"confirmed": 1, "cleared": 1},
    }
    assert said["rows"] == {
        "retracing_a/eager": "SLOWER (confirmed)",
        "retracing_a/tf": "slower? cleared",
        "test_decode": "same",
    }
    assert said["outcomes"] == {"confirmed": 1, "cleared": 1}
    assert gate_check.named({**said}) == ["retracing_a/eager"]


def test_ab_options_join_the_users() -> None:
    cache = ["--cache-dir", "/tmp/c d"]
    assert user_suite.with_ab_options(["-q"], cache) == [
        "-q",
        "--perf-ab-args=--cache-dir '/tmp/c d'",
    ]
    given = ["--perf-ab-args=--max-pairs 40", "-q"]
    assert user_suite.with_ab_options(given, cache)[0] == (
        "--perf-ab-args=--max-pairs 40 --cache-dir '/tmp/c d'"
    )
    assert user_suite.with_ab_options(["--perf-ab-args", "--confirm 0"], cache) == [
        "--perf-ab-args",
        "--confirm 0 --cache-dir '/tmp/c d'",
    ]


def test_a_command_run_stoppable_gives_its_status_and_both_streams(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    status, output = user_suite.run_stoppable([sys.executable, "-c", code], tmp_path)
    assert status == 3
    assert sorted(output.split()) == ["err", "out"]


def test_a_stopped_tool_leaves_no_child_running(tmp_path: Path) -> None:
    """SIGTERM to a tool waiting in :func:`user_suite.run_stoppable` stops its child too
    (a Python that sleeps, as an A/B's side waits), then the tool ends."""
    started = tmp_path / "child.pid"
    child = f"import os, time; open({str(started)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    tool = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from pathlib import Path; "
        "from tools.validation.user_suite import run_stoppable; "
        f"run_stoppable([sys.executable, '-c', {child!r}], Path('.'))"
    )
    proc = subprocess.Popen([sys.executable, "-c", tool], cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (started.is_file() and started.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(started.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped by the tool before it ended
