"""tools/validation/futility_replay.py pools a bench's recorded pairs and refuses bad folders."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from perfsuite.verdict.futility import sign_half_width
from tests.tool_module import load_tool


def _tool() -> ModuleType:
    return load_tool("futility_replay")


def _report(folder: Path, name: str, ratios: list[float], seconds: float) -> Path:
    """A report folder whose pairs.json holds one run of ``name``: B blocks at
    ``exp(ratio)`` times A's 10-ms blocks."""
    folder.mkdir()
    entry = {
        "nodeid": f"test_x.py::{name}",
        "pairs": len(ratios),
        "seconds": seconds,
        "a_blocks": [[0.010, 0.010] for _ in ratios],
        "b_blocks": [[0.010 * math.exp(r)] * 2 for r in ratios],
    }
    (folder / "pairs.json").write_text(json.dumps([entry]))
    return folder


def test_pooled_centres_each_run_and_keeps_only_long_runs(tmp_path: Path) -> None:
    tool = _tool()
    long = _report(tmp_path / "a", "test_decode", [0.1 + 0.01 * (i % 5) for i in range(40)], 8.0)
    short = _report(tmp_path / "b", "test_decode", [0.5] * 12, 2.0)
    other = _report(tmp_path / "c", "test_other", [0.2] * 50, 5.0)
    ratios, pace = tool.pooled([long, short, other], "test_decode", 40)
    assert len(ratios) == 40  # the 12-pair run and the other bench are left out
    assert sorted(round(r, 6) for r in set(ratios)) == [-0.02, -0.01, 0.0, 0.01, 0.02]
    assert pace == pytest.approx(8.0 / 40)


def test_central_agrees_with_the_interval_in_hand_and_is_wider_beyond() -> None:
    tool = _tool()
    mixture = [0.0, 0.01, -0.01, 0.25, -0.25, 0.02, -0.02, 0.27, -0.26, 0.0, 0.01, -0.01]
    assert tool.central(mixture, 0.001, 12) == sign_half_width(mixture, 0.001, 12)
    assert tool.central(mixture, 0.001, 240) > sign_half_width(mixture, 0.001, 240)
    assert tool.central([], 0.001, 240) == math.inf


def test_a_folder_without_pairs_json_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _tool().main([str(tmp_path)])
    assert exited.value.code == 2
    assert f"no pairs.json in {tmp_path}" in capsys.readouterr().err
