"""perfsuite ab finds benches wherever the repository keeps them, with or without a config file.

Node ids are relative to the repository root on both sides, whatever the checkout,
the arguments (an option's value naming an existing folder included) and the
configuration file.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfsuite.ab.command import side_args
from perfsuite.ab.isolate import collect_files
from perfsuite.ab.revisions import Revision, WorktreeCache, resolve
from perfsuite.ab.rootdir import config_file, rooted
from perfsuite.ab.sidespec import SideSpec
from perfsuite.errors import PerfsuiteError
from tests.ab_repo import PERFSUITE_ROOT, SMALL, STEADY_CLOCK, Repo, make_repo

#: a one-bench file that can sit anywhere in a repository (timed by STEADY_CLOCK)
BENCH = '''
"""A bench wherever the repository keeps it."""


def test_decode(perf):
    perf.measure(lambda: None, items=1)
'''
#: a file the default python_files (test_*.py) would collect: it fails on import
BROKEN = "raise RuntimeError('collected: the configuration file was not read')\n"
BUDGET = [*SMALL, "--confirm", "0"]
PYPROJECT = """
[tool.pytest.ini_options]
testpaths = ["tests/perf"]
python_files = ["perf_*.py", "bench_*.py"]
"""
#: each kind of configuration file, naming python_files that leave out test_*.py
CONFIGS = {
    "pytest.ini": "[pytest]\npython_files = perf_*.py bench_*.py\n",
    "tox.ini": "[tox]\nenvlist = py\n\n[pytest]\npython_files = perf_*.py bench_*.py\n",
    "setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\npython_files = perf_*.py bench_*.py\n",
    "pyproject.toml": PYPROJECT,
}


def committed(tmp_path: Path, files: dict[str, str]) -> Repo:
    """A repository holding ``files`` and a steady clock, in two commits of the same code."""
    repo = make_repo(tmp_path)
    repo.write("conftest.py", STEADY_CLOCK)
    for name, text in files.items():
        repo.write(name, text)
    repo.commit("base")
    repo.write("NOTES.txt", "the same benches, one commit later\n")
    repo.commit("candidate")
    return repo


def verdict(out: str, nodeid: str) -> str:
    """The verdict of ``nodeid``'s row in perfsuite ab's table."""
    rows = [line.split() for line in out.splitlines() if line.startswith(nodeid + " ")]
    assert len(rows) == 1, out
    return rows[0][1]


def judged(repo: Repo, nodeid: str, *pytest_args: str, cwd: Path | None = None) -> None:
    """HEAD~1 against HEAD judges ``nodeid``: one row, the same on both sides."""
    args = ["--", *pytest_args] if pytest_args else []
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, *args, cwd=cwd)
    assert result.code == 0, result.out + result.err
    assert verdict(result.out, nodeid) == "same", result.out
    assert "removed" not in result.out, result.out
    assert "added" not in result.out, result.out


def test_a_bench_at_the_root_without_a_config_file(tmp_path: Path) -> None:
    repo = committed(tmp_path, {"test_decode.py": BENCH, "benches/bench_decode.py": BENCH})
    judged(repo, "test_decode.py::test_decode", "test_decode.py", "--perf-scale=smoke")


def test_a_path_option_given_after_a_space_moves_no_node_id(tmp_path: Path) -> None:
    """pytest takes an existing folder among the arguments for a path to collect when it
    picks its rootdir: without a config file, each side's node ids held its checkout."""
    repo = committed(tmp_path, {"test_decode.py": BENCH, "benches/bench_decode.py": BENCH})
    data = tmp_path / "data"
    data.mkdir()
    nodeid = "benches/bench_decode.py::test_decode"
    judged(repo, nodeid, "benches", "--perf-data-dir", str(data), "--perf-scale=smoke")
    # started in benches/, with its paths from there: the same node id
    judged(repo, nodeid, "bench_decode.py", "--perf-scale=smoke", cwd=repo.root / "benches")


def test_started_in_a_folder_no_revision_has(tmp_path: Path) -> None:
    """From an untracked folder, a path and the default selection name the same files
    on both sides as in the user's checkout: the revisions' checkouts get the folder."""
    repo = committed(tmp_path, {"test_decode.py": BENCH})
    scratch = repo.root / "scratch"
    scratch.mkdir()
    judged(repo, "test_decode.py::test_decode", "../test_decode.py", cwd=scratch)
    judged(repo, "test_decode.py::test_decode", "--perf-scale=smoke", cwd=scratch)


def test_a_path_option_leaves_the_repository_config_in_force(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "benches/bench_decode.py": BENCH}
    repo = committed(tmp_path, {**files, "benches/test_broken.py": BROKEN})
    data = tmp_path / "data"
    data.mkdir()
    nodeid = "benches/bench_decode.py::test_decode"
    judged(repo, nodeid, "benches", "--perf-data-dir", str(data), "--perf-scale=smoke")


def test_no_arguments_follow_the_user_testpaths(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "tests/perf/perf_decode.py": BENCH}
    repo = committed(tmp_path, {**files, "other/perf_broken.py": BROKEN})
    judged(repo, "tests/perf/perf_decode.py::test_decode")


def test_a_run_that_finds_no_bench_judges_nothing(tmp_path: Path) -> None:
    repo = committed(tmp_path, {"benches/bench_decode.py": BENCH})
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "benches", "-k", "no_such_bench")
    assert result.code == 3, result.out + result.err
    said = "NOTHING JUDGED: no bench in the selection (check the pytest arguments after --)"
    assert said in result.out
    assert result.out.count("no bench in the selection") == 1, result.out


#: a bench module skipped whole where its import is missing
SKIPPED = """
import pytest

pytest.importorskip("perfsuite_no_such_module")


def test_decode(perf):
    perf.measure(lambda: None, items=1)
"""


def test_a_file_new_in_the_candidate_is_a_row_not_an_error(tmp_path: Path) -> None:
    """A file named after ``--`` that only B has: A collects nothing, B's bench is
    `added (candidate only)`, and nothing is judged (3), never a side fault (2)."""
    repo = committed(tmp_path, {"test_keep.py": BENCH})
    repo.write("test_new.py", BENCH)
    repo.commit("a new bench file")
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "test_new.py", "--perf-scale=smoke")
    assert result.code == 3, result.out + result.err
    assert verdict(result.out, "test_new.py::test_decode") == "added", result.out
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "test_gone.py", "--perf-scale=smoke")
    assert result.code == 2, result.out + result.err
    assert result.err.strip().splitlines() == [
        "perfsuite ab: error: test_gone.py: neither side has it (A = HEAD~1, B = HEAD); "
        "name a bench file of either revision, relative to where perfsuite ab starts"
    ]


def test_a_side_without_the_file_still_knows_its_conftest_options(tmp_path: Path) -> None:
    """The side that lacks the only file named collects nothing from that file's
    folder, yet loads the checkout's conftest files, so an option one adds is no usage
    error there."""
    repo = committed(tmp_path, {"benches/bench_old.py": BENCH})
    option = "def pytest_addoption(parser):\n    parser.addoption('--dataset', default='big')\n"
    repo.write("conftest.py", STEADY_CLOCK + "\n\n" + option)
    repo.commit("an option")
    repo.write("benches/bench_new.py", BENCH)
    repo.commit("a new bench file")
    args = ["--", "benches/bench_new.py", "--dataset=small", "--perf-scale=smoke"]
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, *args)
    assert result.code == 3, result.out + result.err
    assert verdict(result.out, "benches/bench_new.py::test_decode") == "added", result.out
    assert "bench_old" not in result.out


def test_a_module_skipped_whole_is_a_row_with_its_reason(tmp_path: Path) -> None:
    """``pytest.importorskip`` at a module's top skips it at collection: where the other
    side has its benches, each is `skipped` naming the side and the reason; where no
    side has a bench, the module is one such row. Nothing judged there: exit 3."""
    repo = committed(tmp_path, {"test_keep.py": BENCH, "test_both.py": SKIPPED})
    repo.write("test_keep.py", SKIPPED)
    repo.commit("the candidate needs a module this environment lacks")
    result = repo.ab("HEAD~2", "HEAD", *BUDGET, "--", "--perf-scale=smoke")
    assert result.code == 3, result.out + result.err
    why = "could not import 'perfsuite_no_such_module'"
    rows = {line.split()[0]: line for line in result.out.splitlines() if line.startswith("test_")}
    assert sorted(rows) == ["test_both.py", "test_keep.py::test_decode"], result.out
    assert f"skipped (both sides: {why}" in rows["test_both.py"]
    assert f"skipped (side B: {why}" in rows["test_keep.py::test_decode"]
    assert "NOTHING JUDGED: 1 skipped (" in result.out
    assert "renamed or moved" not in result.out  # every bench is on both sides


def test_a_skip_reason_saying_only_is_no_bench_of_one_side(tmp_path: Path) -> None:
    gpu_only = (
        "import pytest\n\n\n@pytest.mark.skip(reason='GPU only')\n"
        "def test_decode(perf):\n    perf.measure(lambda: None, items=1)\n"
    )
    repo = committed(tmp_path, {"test_gpu.py": gpu_only})
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "--perf-scale=smoke")
    assert result.code == 3, result.out + result.err
    assert "NOTHING JUDGED: 1 skipped (both sides: GPU only)" in result.out
    assert "renamed or moved" not in result.out


def test_a_test_neither_side_measures_is_a_row_of_both_sides(tmp_path: Path) -> None:
    repo = committed(
        tmp_path, {"test_decode.py": BENCH, "test_unit.py": "def test_ok():\n    pass\n"}
    )
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "--perf-scale=smoke")
    assert result.code == 0, result.out + result.err
    (row,) = [line for line in result.out.splitlines() if line.startswith("test_unit.py")]
    assert "skipped (both sides: passed without measuring)" in row


def test_a_user_rootdir_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = committed(tmp_path, {"benches/bench_decode.py": BENCH})
    for option in (["--rootdir=elsewhere"], ["--rootdir", "elsewhere"]):
        result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "benches", *option)
        assert result.code == 2, result.out + result.err
        assert result.err.count("\n") == 1, result.err
        assert "--rootdir" in result.err, result.err
    with pytest.raises(PerfsuiteError, match="repository-relative"):
        side_args(["--rootdir=x"], 0.05)


# -- the listing both sides make, each in its own checkout -----------------------


@pytest.fixture
def listing_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(PERFSUITE_ROOT))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def checkouts(repo: Repo, subdir: Path = Path()) -> Iterator[list[SideSpec]]:
    """HEAD in a cached worktree (side A) and the working tree (side B)."""
    sha = repo.git("rev-parse", "HEAD")
    with WorktreeCache(repo.root, repo.cache).checkout(sha) as path:
        yield [
            SideSpec("A", Revision("HEAD", sha), path, subdir),
            SideSpec("B", resolve(repo.root, None), repo.root, subdir),
        ]


@pytest.mark.usefixtures("listing_env")
@pytest.mark.parametrize("config", [None, *CONFIGS])
def test_both_checkouts_list_the_same_repository_relative_files(
    tmp_path: Path, config: str | None
) -> None:
    files = {"test_decode.py": BENCH, "benches/bench_decode.py": BENCH}
    files["benches/test_broken.py"] = BROKEN
    if config is not None:
        files[config] = CONFIGS[config]
    repo = committed(tmp_path, files)
    data = tmp_path / "data"
    data.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    expected = ["benches/bench_decode.py"]
    if config is None:  # pytest's own python_files, test_*.py, collect the broken file
        expected.append("benches/test_broken.py")
    for specs in checkouts(repo):
        found = collect_files(specs, ["benches", "--perf-data-dir", str(data)], work)
        assert found == [expected, expected]
    if config is None:
        for specs in checkouts(repo):  # a file beside the selection is not in it
            assert collect_files(specs, ["test_decode.py"], work) == [["test_decode.py"]] * 2
        for specs in checkouts(repo, Path("benches")):  # started in benches/
            found = collect_files(specs, ["bench_decode.py"], work)
            assert found == [["benches/bench_decode.py"]] * 2


@pytest.mark.usefixtures("listing_env")
def test_the_listing_takes_testpaths_and_a_user_config_file(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "tests/perf/perf_decode.py": BENCH}
    files["test_decode.py"] = BENCH
    files["perf.ini"] = "[pytest]\npython_files = test_*.py\n"
    repo = committed(tmp_path, files)
    work = tmp_path / "work"
    work.mkdir()
    for specs in checkouts(repo):
        assert collect_files(specs, [], work) == [["tests/perf/perf_decode.py"]] * 2
        # -c is the user's: here it names no testpaths, so the root is collected
        found = collect_files(specs, ["-c", "perf.ini"], work)
        assert found == [["test_decode.py"]] * 2


# -- the rooting options ---------------------------------------------------------


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_the_config_file_is_the_one_pytest_finds_inside_the_checkout(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "benches").mkdir(parents=True)
    outside = tmp_path / "data"
    outside.mkdir()
    write(tmp_path, "pytest.ini", "[pytest]\n")  # above the checkout: never taken
    assert config_file(root, root, ["benches"]) is None
    bare = write(root, "pyproject.toml", "[project]\nname = 'x'\n")
    assert config_file(root, root, ["benches", "--perf-data-dir", str(outside)]) == bare
    write(root, "setup.cfg", "[metadata]\nname = x\n")  # no pytest section: not one
    assert config_file(root, root, ["benches"]) == bare
    tox = write(root, "tox.ini", "[pytest]\naddopts = -q\n")
    assert config_file(root, root, ["benches", "--perf-data-dir", str(outside)]) == tox
    # a config file in a subfolder, as pytest finds it from that folder
    sub = write(root, "tests/pytest.ini", "[pytest]\n")
    (root / "tests" / "perf").mkdir()
    assert config_file(root, root, ["tests/perf", "-k", "x"]) == sub
    assert config_file(root / "tests", root, ["perf/x.py::test_a"]) == sub
    assert config_file(root, root, ["tests/perf", "benches"]) == tox
    broken = write(root, "benches/pytest.ini", "[pytest\n")  # pytest cannot read it
    with pytest.raises(PerfsuiteError, match=f"{re.escape(str(broken))}.*fix it"):
        config_file(root, root, ["benches"])
    broken.unlink()
    legacy = write(root, "benches/setup.cfg", "[pytest]\n")  # a section pytest refuses
    with pytest.raises(PerfsuiteError, match=r"\[pytest\] section in setup.cfg"):
        config_file(root, root, ["benches"])
    legacy.unlink()
    options = rooted(root, root, ["benches", "--perf-data-dir", str(outside)])
    assert options == [f"--rootdir={root.resolve()}", f"--config-file={tox}"]
    # the user's configuration file is taken as given
    for given in (["-c", "x.ini"], ["-cx.ini"], ["--config-file", "x.ini"], ["--config-file=x"]):
        assert rooted(root, root, ["benches", *given]) == [f"--rootdir={root.resolve()}"]


#: a pool of 3 rounds: fresh arguments made up front, so no more than 3 can run
POOL = """
def test_pool(benchmark):
    pool = [((), {}) for _ in range(3)]
    benchmark.pedantic(lambda: None, setup=pool.pop, rounds=3)
"""


def test_a_pedantic_pool_too_small_to_decide_says_to_raise_its_rounds(tmp_path: Path) -> None:
    """``benchmark.pedantic(setup=..., rounds=3)`` gives lockstep 3 rounds at most: the
    row is inconclusive naming its rounds, and the hint is its ``rounds=``, not
    ``--max-pairs``, which could not add a pair."""
    repo = committed(tmp_path, {"test_pool.py": POOL})
    result = repo.ab("HEAD~1", "HEAD", *BUDGET)
    assert result.code == 3, result.out + result.err
    row = next(line for line in result.out.splitlines() if line.startswith("test_pool.py"))
    assert re.search(r"TOO NOISY: .*\(its benchmark\.pedantic rounds= allow [123] pairs\)", row)
    last = result.out.strip().splitlines()[-2]
    assert "alternates only the rounds= it asks for: more of them would decide" in last
    assert "--max-pairs" not in last
