"""tools/validation/noise_band_check.py: the two noise estimates on seeded histories."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tool_module import load_tool


def test_a_step_widens_the_mad_band_and_not_the_adjacent_one(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    assert load_tool("noise_band_check").main(["--sims", "300", "--out", str(out)]) == 0
    rows = {(r["runs"], r["case"].split(",")[0]): r for r in json.loads(out.read_text())}
    assert len(rows) == 6
    stepped = rows[(10, "step x4")]
    assert stepped["mad_band"] > 10  # the 4x step read as noise: a band of over 1000%
    assert stepped["mad_beyond"] == 0.0  # so a +50% next run is never a suspect
    assert stepped["diff_band"] < 0.3
    assert stepped["diff_beyond"] > 0.9
    steady = rows[(20, "steady")]
    assert 0.1 < steady["diff_band"] < 0.25  # exp(3 x 0.05) - 1 = 16.2%
