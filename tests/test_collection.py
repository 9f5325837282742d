"""What pytest collects with perfsuite installed and none of its options given."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)


def test_bench_files_beyond_python_files_need_a_benches_folder_or_perfsuite(
    pytester: pytest.Pytester,
) -> None:
    """A ``bench_*.py`` script beside a project's tests is not imported by a plain
    pytest run with perfsuite installed, as without it; ``benches/bench_*.py`` is
    collected, and any ``bench_*.py`` once a ``--perf-*`` option is given."""
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
    (pytester.path / "bench_root.py").write_text("def test_root():\n    pass\n")
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=2)  # a plain run: not it
    asked = pytester.runpytest_subprocess("-q", "--perf-scale=smoke")  # perfsuite's run
    asked.assert_outcomes(passed=3)
    pytester.makeini("[pytest]\nperf_scale = smoke\n")  # asked in the project's ini
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=3)
