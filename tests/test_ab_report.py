"""perfsuite ab's report folder: written whole, never over a folder of anything else,
a plot per bench whatever its id."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsuite.ab.revisions import Revision
from perfsuite.errors import PerfsuiteError
from tests.test_ab_units import _commit, _repo


def test_report_is_written_whole_and_replaces_the_old_one(tmp_path: Path) -> None:
    from perfsuite.ab.outcome import BenchRun, Outcome
    from perfsuite.ab.report import write_report
    from perfsuite.ab.sidespec import SideSpec
    from perfsuite.ab.verdicts import Verdicts
    from perfsuite.verdict.paired import judge

    run = BenchRun("benches/bench_x.py::test_x", 0.05)
    run.a_blocks = [[1.0, 1.0]] * 12
    run.b_blocks = [[1.5, 1.5]] * 12
    run.result = judge(run.ratios, 0.05, 0.001)
    gone = "benches/bench_x.py::test_old[`a`|b]"  # backticks and a pipe in its id
    outcome: Outcome = ([run], [gone], [])  # runs, base only, candidate only
    specs = [
        SideSpec("A", Revision("main", "a" * 40), tmp_path),
        SideSpec("B", Revision("working tree", None), tmp_path),
    ]
    verdicts = Verdicts.build(outcome, 3, tmp_path / "none-a.json", tmp_path / "none-b.json", specs)
    assert verdicts.regressed
    out = tmp_path / "report"
    out.mkdir()
    (out / "summary.md").write_text("from an earlier run")
    (out / "stale.png").write_text("from an earlier run")
    files = {p.name for p in write_report(out, verdicts, {}, {})}
    assert files == {"summary.md", "pairs.json", "benches_bench_x.py__test_x.png"}
    summary = (out / "summary.md").read_text()
    assert "| `benches/bench_x.py::test_x` | SLOWER | +50.0% [+50.0%, +50.0%] |" in summary
    assert "| ``benches/bench_x.py::test_old[`a`\\|b]`` | removed (base only), not run |" in summary
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_report_never_replaces_a_folder_of_anything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--report`` replaces its folder whole, so a checkout, its parent, a folder of
    sources or a file is refused, before any bench runs; an earlier report is not."""
    from perfsuite.ab.report import check_report_dir
    from perfsuite.cli import main

    root = _repo(tmp_path)
    _commit(root, {"test_a.py": "def test_a():\n    pass\n"})
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    for name in ("summary.md", "pairs.json", "A.json", "B.log", "x.png"):
        (earlier / name).write_text("old")
    check_report_dir(earlier)
    check_report_dir(tmp_path / "new" / "nested")
    for bad, why in [
        (root, "holds .git, test_a.py"),
        (tmp_path, "holds"),
        (root / "test_a.py", "not a folder"),
    ]:
        with pytest.raises(PerfsuiteError, match=f"--report {bad}: {why}"):
            check_report_dir(bad)
    monkeypatch.chdir(root)
    assert main(["ab", "HEAD", "HEAD", "--report", ".", "--", "test_a.py"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perfsuite ab: error: --report {root}: holds .git, test_a.py")
    assert (root / ".git").is_dir()
    assert (root / "test_a.py").is_file()


def test_each_bench_has_its_own_plot_whatever_its_id(tmp_path: Path) -> None:
    from perfsuite.ab.report import _slug

    taken: set[str] = set()
    ids = ["t.py::test_w[a/b]", "t.py::test_w[a_b]", "t.py::test_w[a:b]", "t.py::test_w[a/b]x"]
    names = [_slug(nodeid, taken) for nodeid in ids]
    assert len(set(names)) == len(ids)
    assert names[0] == "t.py__test_w_a_b"


def test_pairs_json_is_read_back_through_the_module_that_writes_it(tmp_path: Path) -> None:
    from perfsuite.ab.report import PAIRS, read_pairs

    assert read_pairs(tmp_path) == []
    (tmp_path / PAIRS).write_text('[{"nodeid": "a.py::t", "verdict": "same"}, 3, {"x": 1}]')
    assert read_pairs(tmp_path) == [{"nodeid": "a.py::t", "verdict": "same"}]
    (tmp_path / PAIRS).write_text('[{"nodeid": ')
    with pytest.raises(PerfsuiteError, match=r"pairs\.json: not an A/B's pairs\.json \("):
        read_pairs(tmp_path)
