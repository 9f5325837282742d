"""tools/validation/meter_overhead.py: one run of its three sessions, beside a child."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tool_module import load_tool


def test_one_run_times_the_three_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "overhead.json"
    tool = load_tool("meter_overhead")
    assert tool.main(["--runs", "1", "--children", "1", "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["children"] == 1
    [run] = saved["runs"]
    assert sorted(run) == ["meter off", "metered", "plain"]
    assert all(seconds > 0 for seconds in run.values())
    shown = capsys.readouterr().out
    assert "1 live children, 1 runs:" in shown
    assert "metered over plain:" in shown


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit) as raised:
        load_tool("meter_overhead").main(["--runs", "0"])
    assert raised.value.code == 2
