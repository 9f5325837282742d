"""What pytest collects with perfsuite installed and none of its options given."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)


def test_bench_files_are_collected_only_in_a_benches_folder(pytester: pytest.Pytester) -> None:
    """A ``bench_*.py`` script beside a project's tests is not imported by pytest with
    perfsuite installed, as without it; ``benches/bench_*.py`` is collected."""
    pytester.makepyfile(
        test_ok="def test_ok():\n    pass\n",
        bench_server="raise SystemExit('usage: python bench_server.py URL')\n",
    )
    plain = pytester.runpytest_subprocess("-q")
    assert plain.ret == 0, plain.outlines
    plain.assert_outcomes(passed=1)
    (pytester.path / "benches").mkdir()
    (pytester.path / "benches" / "bench_x.py").write_text("def test_x():\n    pass\n")
    (pytester.path / "bench_server.py").unlink()
    both = pytester.runpytest_subprocess("-q")
    both.assert_outcomes(passed=2)
