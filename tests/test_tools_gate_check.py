"""tools/validation/gate_check.py: what its summary says of the unchanged runs' rows."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tool_module import load_tool


def test_the_benches_left_inconclusive_most_often_are_named_with_the_slowed_one() -> None:
    gated = [
        {"rows": {"a": "inconclusive [1]", "b": "same", "c": "inconclusive"}},
        {"rows": {"a": "inconclusive", "b": "inconclusive", "c": "SLOWER? unconfirmed"}},
    ]
    line = load_tool("gate_check").inconclusive_line(gated, "c")
    assert line.strip() == (
        "left inconclusive by the screen most often: 1 bench(es) in 2 of 2 runs (a); "
        "the slowed bench c in 1 of 2"
    )


def test_a_slowed_run_keeps_each_pair_of_processes_of_the_slowed_bench(tmp_path: Path) -> None:
    entry = {
        "nodeid": "benches/b.py::test_x[a]",
        "change": 0.13,
        "first": {"change": 0.14},
        "sessions": [0.12, 0.15, -0.3],
        "session_pairs": [5, 5, 5],
        "started": ["A", "B", "A"],
        "a_blocks": [[1.0]],
    }
    entry["verdict"] = "slower"
    other = {"nodeid": "benches/b.py::y", "verdict": "inconclusive", "sessions": [0.5]}
    (tmp_path / "pairs.json").write_text(json.dumps([entry, other]))
    slowed_pairs = load_tool("gate_check").slowed_pairs
    assert slowed_pairs(tmp_path, "benches/b.py::test_x[a]") == {
        "first": 0.14,
        "sessions": [0.12, 0.15, -0.3],
        "session_pairs": [5, 5, 5],
        "started": ["A", "B", "A"],
    }
    assert slowed_pairs(tmp_path, "benches/b.py::z") is None
    assert slowed_pairs(tmp_path / "none", "benches/b.py::test_x[a]") is None
    # every bench the A/B read slower keeps its pairs: a false confirmation's too
    slower = load_tool("gate_check").slower_pairs(tmp_path)
    assert slower == {"benches/b.py::test_x[a]": slowed_pairs(tmp_path, "benches/b.py::test_x[a]")}
    assert load_tool("gate_check").slower_pairs(tmp_path / "none") == {}
    # and the A/B's output, kept beside its report folder
    (tmp_path.parent / f"{tmp_path.name}.log").write_text("perfsuite ab: a\nperfsuite ab: b\n")
    ab_output = load_tool("gate_check").ab_output
    assert ab_output(tmp_path) == ["perfsuite ab: a", "perfsuite ab: b"]
    assert ab_output(tmp_path / "none") == []


def test_a_slowed_runs_ratio_is_also_taken_to_the_plain_run_just_before_it() -> None:
    tool = load_tool("gate_check")
    runs = [
        {"seconds": 250.0, "adjacent_plain": 140.0},
        {"seconds": 230.0, "adjacent_plain": 110.0},
    ]
    line = tool.timing_line(runs, 120.0)
    assert "ratio to the plain run 1.92x / 2.00x / 2.08x (goal <= 2x; 1 over)" in line
    assert line.endswith("to the plain run before each 1.79x / 1.94x / 2.09x (1 over)")
    # a run without one is measured against the first plain run alone
    assert "before each" not in tool.timing_line([{"seconds": 250.0}], 120.0)
    result = {
        "code": 1,
        "seconds": 250.0,
        "adjacent_plain": 125.0,
        "gate": "perfsuite gate: FAILED",
        "confirmations": None,
        "outcomes": {},
        "tail": [],
    }
    assert "2.08x (2.00x the plain run before it)" in tool.run_line(1, result, 120.0)
