"""perfsuite ab runs each bench file in its own pair of processes (``--isolate file``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.ab.isolate import collect_files, merge_json, sessions
from perfsuite.ab.revisions import resolve
from perfsuite.ab.sidespec import SideSpec
from perfsuite.exitcodes import ExitCode
from tests.ab_repo import SIDE_ARGS, SMALL, make_repo

LOOPS = 300_000
#: a bench that fails when another bench file's module was imported into its process
ALONE = """
import sys


def test_alone(perf):
    others = [m for m in sys.modules if m.split(".")[-1] == "bench_work"]
    assert not others, f"another bench file was imported into this process: {others}"
    perf.measure(lambda: sum(range(99)), items=1)
"""


def test_each_bench_file_runs_in_processes_of_its_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(LOOPS, "same")
    repo.write("benches/bench_alone.py", ALONE)
    base = repo.commit("base")
    report = tmp_path / "report"
    # identical code: a 30% threshold keeps a per-process offset from flagging a suspect
    same = ("--threshold", "0.3")
    result = repo.ab(base, *SMALL, *same, "--report", str(report), *SIDE_ARGS)
    # equal work is never a regression; whether it is decided `same` depends on the load
    assert result.code in (ExitCode.OK, ExitCode.NOT_JUDGED), result.out + result.err
    assert "SLOWER" not in result.out
    assert "2 bench file(s), each in its own pair of processes" in result.out
    for nodeid in ("bench_alone.py::test_alone", "bench_work.py::test_work[one]"):
        assert nodeid in result.out
    # both sessions' rounds are in each side's one pytest-benchmark JSON
    for side in ("A", "B"):
        saved = json.loads((report / f"{side}.json").read_text())
        names = sorted(b["name"] for b in saved["benchmarks"])
        assert names == ["test_alone", "test_work[one]", "test_work[two]"], names
    # one pair of processes for everything: the same bench fails, and the run says so
    shared = repo.ab(base, *SMALL, *same, "--isolate", "session", *SIDE_ARGS)
    assert shared.code == 2, shared.out + shared.err
    assert "another bench file was imported" in shared.err + shared.out


#: a bench file that records being imported: listing the files must not import it
NOISY = """
import os

open(os.environ["AB_IMPORTED"], "a").write(__name__ + "\\n")


def test_noisy(perf):
    perf.measure(lambda: None, items=1)
"""


def test_files_are_listed_by_both_sides_without_importing_a_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(LOOPS, "same")
    repo.write("benches/bench_noisy.py", NOISY)
    repo.write("benches/helper.py", "raise RuntimeError('not a bench file: never imported')\n")
    imported = tmp_path / "imported.txt"
    monkeypatch.setenv("AB_IMPORTED", str(imported))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    worktree = resolve(repo.root, None)
    specs = [SideSpec("A", worktree, repo.root), SideSpec("B", worktree, repo.root)]
    work = tmp_path / "work"
    work.mkdir()
    found = collect_files(specs, ["benches", "-p", "no:randomly"], work)
    assert found == [["benches/bench_noisy.py", "benches/bench_work.py"]] * 2
    assert not imported.exists(), imported.read_text()
    assert sessions(specs, ["benches"], work) == [
        ["benches/bench_noisy.py"],
        ["benches/bench_work.py"],
    ]
    # one file, a test inside a file, or a selection pytest rejects: one session
    assert sessions(specs, ["benches/bench_work.py"], work) == [None]
    assert collect_files(specs[:1], ["benches/bench_work.py::test_work"], work) == [None]
    assert collect_files(specs[:1], ["--no-such-option"], work) == [None]


def test_merge_json_joins_benchmarks_and_skips_unreadable_parts(tmp_path: Path) -> None:
    one, two, bad = tmp_path / "1.json", tmp_path / "2.json", tmp_path / "bad.json"
    one.write_text(json.dumps({"machine_info": {"node": "m"}, "benchmarks": [{"name": "a"}]}))
    two.write_text(json.dumps({"machine_info": {"node": "other"}, "benchmarks": [{"name": "b"}]}))
    bad.write_text("{not json")
    out = tmp_path / "out.json"
    again = tmp_path / "again.json"  # a bench a later pair of processes ran again
    again.write_text(json.dumps({"benchmarks": [{"name": "a", "rounds": 99}]}))
    merge_json([one, bad, tmp_path / "missing.json", two, again], out)
    merged = json.loads(out.read_text())
    assert merged["machine_info"] == {"node": "m"}
    assert [b["name"] for b in merged["benchmarks"]] == ["a", "b"]
    assert "rounds" not in merged["benchmarks"][0]  # the first run of "a" is kept
    assert not out.with_name("out.json.tmp").exists()
    merge_json([bad], tmp_path / "none.json")
    assert not (tmp_path / "none.json").exists()
