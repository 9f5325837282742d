"""The worked example in docs/adding-a-bench.md runs as a bench of its own in a new project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXAMPLE = DOCS / "examples" / "bench_candidate.py"


def test_the_guide_shows_the_example_file_verbatim() -> None:
    guide = (DOCS / "adding-a-bench.md").read_text()
    start = guide.index("```python\n") + len("```python\n")
    assert guide[start : guide.index("```", start)] == EXAMPLE.read_text()


@pytest.mark.tf
def test_copied_example_bench_gets_grouping_throughput_efficiency_and_summary(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    shutil.copy(EXAMPLE, pytester.path / "bench_candidate.py")
    result = pytester.runpytest_subprocess(
        "bench_candidate.py", "--perf-scale=smoke", "--benchmark-json=out.json", *inner_args
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)

    benches = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    info = {b["extra_info"]["perfsuite"]["variant"]: b["extra_info"]["perfsuite"] for b in benches}
    assert set(info) == {"decode_roofline", "parallel_map", "candidate"}
    assert {b["group"] for b in benches} == {"candidate"}
    for variant, extra in info.items():
        assert extra["group"] == "candidate"
        assert extra["items"] == 32  # smoke: batch 8, 4 batches per call
        assert extra["items_per_second"] > 0
        assert extra["scale"] == "smoke"
        assert extra["dataset"]["name"] == "imagenet-like"
        assert len(extra["dataset"]["hash"]) == 64
        assert (extra["role"] == "baseline") is (variant == "parallel_map")
        assert (extra["role"] == "roofline") is (variant == "decode_roofline")
    assert info["parallel_map"]["speedup"] == 1.0
    assert info["candidate"]["params"] == {"batch": 8, "deterministic": False}
    roof = info["decode_roofline"]["items_per_second"]
    for variant in ("parallel_map", "candidate"):
        expected = info[variant]["items_per_second"] / roof
        assert info[variant]["efficiency"] == pytest.approx(expected, rel=1e-3)
    assert info["decode_roofline"]["efficiency"] is None

    out = result.stdout.str()
    assert "group candidate:" in out
    summary = out[out.index("perfsuite summary") :]
    for row in ("decode_roofline (roofline)", "parallel_map (baseline)", "candidate"):
        assert row in summary
