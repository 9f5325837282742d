"""tools/validation/confirm_audit.py reads confirmed benches from report folders, old and new."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from tests.tool_module import load_tool


def _tool() -> ModuleType:
    return load_tool("confirm_audit")


def _entry(nodeid: str, sessions: list[float], first: float | None) -> dict[str, object]:
    blocks = 30
    wobble = [0.02 * ((i % 5) - 2) for i in range(blocks)]  # log-ratios -0.04..+0.04
    entry: dict[str, object] = {
        "nodeid": nodeid,
        "a_blocks": [[1.0, 1.0]] * blocks,
        "b_blocks": [[math.exp(w)] * 2 for w in wobble],
        "sessions": sessions,
        "session_pairs": [10] * len(sessions),
        "alpha_per_look": 0.05 / 3,
    }
    if first is not None:
        entry["first"] = {"verdict": "inconclusive", "change": first}
    return entry


def test_first_changes_come_from_pairs_json_or_an_older_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir()
    old.mkdir()
    (new / "pairs.json").write_text(
        json.dumps(
            [
                _entry("b.py::same_way", [0.06, 0.05, 0.07], 0.08),
                _entry("b.py::other_way", [-0.02, -0.01, -0.03], 0.09),
                _entry("b.py::not_confirmed", [], None),
            ]
        )
    )
    (old / "pairs.json").write_text(json.dumps([_entry("b.py::x", [0.01, -0.02, 0.0], None)]))
    (old / "summary.md").write_text(
        "| `b.py::x` | inconclusive (confirmation in 3 pairs of processes; "
        "first pair -6.5%) | -0.3% [-4%, +3%] | items/s +0.3% | 30 | - |\n"
    )
    tool = _tool()
    rows = tool.audit(new) + tool.audit(old)
    assert [(r.nodeid, r.first) for r in rows] == [
        ("b.py::same_way", 0.08),
        ("b.py::other_way", 0.09),
        ("b.py::x", pytest.approx(-0.065)),
    ]
    # the blocks' log-ratios have a robust sd of about 0.03: one pair's median of 10
    assert rows[0].predicted_sd == pytest.approx(1.2533 * 0.0297 / math.sqrt(10), rel=0.05)
    assert tool.main([str(new), str(old), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "confirmed benches: 3 in 2 report(s)" in out
    # same_way and x (-6.5% first, mean -0.3%) keep the first's sign; other_way does not
    assert "with the first pair's sign: 2 of 3" in out


def test_a_folder_without_pairs_json_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no readable pairs\.json"):
        _tool().audit(tmp_path)
