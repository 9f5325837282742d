"""tools/validation/gate_check.py: what its summary says of the unchanged runs' rows."""

from __future__ import annotations

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
