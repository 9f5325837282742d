"""What pytest collects with perfsuite installed and none of its options given."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)


def test_bench_files_beyond_python_files_need_perfsuite_asked_for(
    pytester: pytest.Pytester,
) -> None:
    """A ``bench_*.py`` file that ``python_files`` does not name is not imported by a
    plain pytest run with perfsuite installed, as without it, in any folder (one named
    ``benches`` too, or a rootdir of that name); any ``bench_*.py`` is collected once a
    ``--perf-*`` option or a ``perf_*`` ini key asks for perfsuite."""
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
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)  # a plain run: not it
    (pytester.path / "bench_root.py").write_text("def test_root():\n    pass\n")
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)
    asked = pytester.runpytest_subprocess("-q", "--perf-scale=smoke")  # perfsuite's run
    asked.assert_outcomes(passed=3)
    pytester.makeini("[pytest]\nperf_scale = smoke\n")  # asked in the project's ini
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=3)


def test_a_rootdir_named_benches_keeps_pytests_rules(pytester: pytest.Pytester) -> None:
    """A project checked out into a folder named ``benches``: a plain run imports none
    of its ``bench_*.py`` scripts."""
    root = pytester.path / "benches"
    (root / "tools").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "test_unit.py").write_text("def test_unit():\n    pass\n")
    (root / "tools" / "bench_script.py").write_text("raise SystemExit(3)\n")
    (root / "bench_top.py").write_text("raise SystemExit(3)\n")
    plain = pytester.runpytest_subprocess("-q", "--rootdir", str(root), str(root))
    assert plain.ret == 0, plain.outlines
    plain.assert_outcomes(passed=1)
