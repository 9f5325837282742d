"""The paths among perfsuite ab's pytest arguments, read as pytest reads them.

Options alone (``-- --perf-scale=smoke``) name no selection: the default runs, from the
repository root, wherever perfsuite ab starts. A folder one side lacks is a row of the
other side only; a path or node id pytest cannot find is a side's error that quotes
pytest's own line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from perfsuite.ab.budget import scale_of
from perfsuite.ab.command import selection, side_args
from perfsuite.ab.pytest_args import names_paths, own_paths, positional
from perfsuite.ab.remote import XDIST_OFF, one_process
from perfsuite.cli import split_argv
from perfsuite.errors import PerfsuiteError
from tests.ab_repo import SMALL, STEADY_CLOCK, Repo, make_repo
from tests.test_ab_anywhere import BENCH, BROKEN, committed, verdict

pytest_plugins = ("pytester",)

BUDGET = [*SMALL, "--confirm", "0"]


def test_split_argv_and_scale() -> None:
    assert split_argv(["main", "--seed", "3", "--", "benches", "-k", "x"]) == (
        ["main", "--seed", "3"],
        ["benches", "-k", "x"],
    )
    assert scale_of(["--perf-scale=smoke"]) == "smoke"
    assert scale_of(["--perf-scale", "full"]) == "full"
    assert scale_of([]) == "default"
    with pytest.raises(PerfsuiteError, match="--perf-scale 'huge'"):
        scale_of(["--perf-scale=huge"])


def test_side_args(tmp_path: Path) -> None:
    assert side_args(["b"], 0.1)[-1] == "--perf-threshold=0.1"
    assert "--perf-threshold=0.1" not in side_args(["--perf-threshold=0.2"], 0.1)
    for parallel in (["-n", "2"], ["-n4"], ["-nauto"], ["--numprocesses=2"], ["--dist", "load"]):
        with pytest.raises(PerfsuiteError, match="one pytest process"):
            side_args(["benches", *parallel], 0.05)


def test_side_args_name_no_xdist_option() -> None:
    """A configuration may block pytest-xdist (``-p no:xdist`` in addopts, as this
    repository's does): an ``-n`` from perfsuite ab would be an unknown option there, and
    each side would exit before connecting. Each side turns xdist off itself."""
    for user in (["benches"], ["benches", "-p", "no:xdist"]):
        args = side_args(user, 0.05)
        assert not {"-n", "--numprocesses", "--dist", "--tx"} & set(args), args


def test_a_side_turns_the_users_xdist_off(pytester: pytest.Pytester) -> None:
    """An ``-n`` and ``--dist`` in the user's addopts leave a side in one process: no
    worker, and pytest-xdist sees no distribution mode; where xdist is blocked the side's
    configuration has no xdist option to reset."""
    xdist = pytest.importorskip("xdist.plugin", reason="pytest-xdist is not installed")
    config = pytester.parseconfig("-p", "xdist", "-n", "2", "--dist", "loadfile")
    assert (config.option.numprocesses, config.option.dist) == (2, "loadfile")
    one_process(config)
    assert config.option.tx == []
    assert config.option.tx is not XDIST_OFF["tx"]  # the session's own list
    xdist.pytest_cmdline_main(config)  # what xdist makes of the options after the side's reset
    assert (config.option.numprocesses, config.option.dist, config.option.tx) == (0, "no", [])
    assert not xdist._is_distribution_mode(config)  # xdist itself starts no worker
    blocked = pytester.parseconfig("-p", "no:xdist")
    one_process(blocked)
    assert not hasattr(blocked.option, "numprocesses")


def test_a_side_never_saves_into_the_users_storage(tmp_path: Path) -> None:
    """``--benchmark-autosave``, ``--perf-gate`` and pytest-xdist's ``-n 2`` in the
    user's addopts: each side's run is saved in its scratch folder, never where the next
    gate would take it for the baseline, no side gates itself, and no side hands its
    benches to xdist's workers."""
    repo = make_repo(tmp_path)
    repo.write("conftest.py", STEADY_CLOCK)
    repo.write("test_root.py", BENCH)
    # -n 2: pytest-xdist's workers would measure nothing; each side stays one process
    # (xdist is a dev dependency; the lowest versions' job installs none)
    xdist = " -n 2" if importlib.util.find_spec("xdist") is not None else ""
    addopts = f"--benchmark-autosave --benchmark-compare --perf-gate{xdist}"
    repo.write("pytest.ini", f"[pytest]\naddopts = {addopts}\n")
    repo.commit("base")
    repo.write("NOTES.txt", "the same bench, one commit later\n")
    repo.commit("candidate")
    result = repo.ab("HEAD~1", *BUDGET, "--", "--perf-scale=smoke")  # B: the working tree
    assert result.code == 0, result.out + result.err
    assert verdict(result.out, "test_root.py::test_decode") == "same", result.out
    assert not (repo.root / ".benchmarks").exists()


def test_positional_arguments_are_those_pytest_takes_for_paths() -> None:
    """Installed plugins' options take their values as pytest's parser says."""
    args = [
        "--benchmark-storage",
        "store",
        "tests",
        "--perf-data-dir",
        "/data",
        "-p",
        "no:randomly",
        "-k",
        "x.py",
        "a.py::t",
        "--benchmark-compare",
        "0001",
        "-q",
        "-kexpr",
        "--perf-scale=smoke",
        "--",
        "-weird",
    ]
    assert [args[i] for i in positional(args)] == ["tests", "a.py::t", "-weird"]


def test_options_alone_name_no_selection(tmp_path: Path) -> None:
    root = tmp_path
    (root / "tests").mkdir()
    outside = tmp_path.parent
    assert not names_paths(["--perf-scale=smoke", "-q", "-k", "tests"], root / "tests", root)
    assert not names_paths(["--my-data", str(outside)], root, root)  # a value outside
    assert names_paths(["tests"], root, root)
    assert names_paths(["gone.py::t"], root, root)
    assert names_paths(["--my-option", "value"], root, root)  # an unknown option's value
    sub = root / "tests"
    assert selection(root, ["-q"], False, root) == ["-q"]  # pytest's default: testpaths, root
    assert selection(root, ["-q"], False, sub) == ["..", "-q"]  # no testpaths: the root
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests other\n")
    assert selection(root, ["-q"], False, sub) == [".", "-q"]  # testpaths that exist
    (root / "benches").mkdir()
    assert selection(root, [], False, root) == ["benches"]
    assert selection(root, ["-q"], False, root) == ["benches", "-q"]
    assert selection(root, ["-q"], False, sub) == ["../benches", "-q"]
    assert selection(root, ["x.py"], True, sub) == ["x.py"]


def test_options_alone_under_a_subfolders_config_run_its_default(tmp_path: Path) -> None:
    """``cd proj && perfsuite ab REV -- -q`` runs what ``cd proj && pytest -q`` runs: the
    ``testpaths`` of ``proj/tox.ini``, with that file in force (its ``pythonpath``)."""
    root = tmp_path
    (root / "proj" / "perf").mkdir(parents=True)
    (root / "proj" / "tox.ini").write_text("[pytest]\ntestpaths = perf\npythonpath = src\n")
    proj = root / "proj"
    assert selection(root, ["-q"], False, proj) == ["perf", "-q"]
    assert selection(root, ["-q"], False, proj / "perf") == [".", "-q"]
    assert selection(root, ["-q"], False, root) == ["-q"]  # the root: pytest's own default
    (root / "proj" / "tox.ini").write_text("[pytest]\npythonpath = src\n")
    assert selection(root, ["-q"], False, proj / "perf") == ["..", "-q"]  # its folder


def test_options_alone_from_a_subproject_use_its_config(tmp_path: Path) -> None:
    """A subproject's benches import its own package through ``pythonpath`` of its
    ``tox.ini``: from there, options alone find and import them."""
    ini = "[pytest]\ntestpaths = perf\npython_files = bench_*.py\npythonpath = src\n"
    bench = "import lib\n\n\ndef test_decode(perf):\n    perf.measure(lib.work, items=1)\n"
    repo = committed(
        tmp_path,
        {
            "proj/tox.ini": ini,
            "proj/conftest.py": STEADY_CLOCK,  # its conftest; the root's is above confcutdir
            "proj/src/lib/__init__.py": "def work():\n    return None\n",
            "proj/perf/bench_a.py": bench,
            "proj/perf/test_broken.py": BROKEN,  # python_files leaves it out
        },
    )
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "--perf-scale=smoke", cwd=repo.root / "proj")
    assert result.code == 0, result.out + result.err
    assert verdict(result.out, "proj/perf/bench_a.py::test_decode") == "same", result.out
    assert "pytest perf --perf-scale=smoke;" in result.out


def test_a_folder_a_peer_has_is_left_out_of_the_side_that_lacks_it(tmp_path: Path) -> None:
    here, peer = tmp_path / "a", tmp_path / "b"
    (here / "old").mkdir(parents=True)
    (peer / "new").mkdir(parents=True)
    assert own_paths(["old", "new", "-q"], here, [peer]) == ["old", "-q"]
    assert own_paths(["old", "nowhere", "-q"], here, [peer]) == ["old", "nowhere", "-q"]
    only = own_paths(["new", "-q"], here, [peer])
    assert only[:2] == [".", "-q"]
    assert only[2].startswith("--ignore-glob=")


def two_levels(tmp_path: Path) -> Repo:
    """A bench at the root and one under tests/, no pytest configuration file, in two
    commits of the same code."""
    repo = make_repo(tmp_path)
    repo.write("conftest.py", STEADY_CLOCK)
    repo.write("test_root.py", BENCH)
    repo.write("tests/test_sub.py", BENCH)
    repo.commit("base")
    repo.write("NOTES.txt", "the same benches, one commit later\n")
    repo.commit("candidate")
    return repo


def test_options_alone_from_a_subfolder_run_the_whole_default(tmp_path: Path) -> None:
    repo = two_levels(tmp_path)
    args = ["--", "--perf-scale=smoke", "-q"]
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, *args, cwd=repo.root / "tests")
    assert result.code == 0, result.out + result.err
    assert verdict(result.out, "test_root.py::test_decode") == "same", result.out
    assert verdict(result.out, "tests/test_sub.py::test_decode") == "same", result.out
    assert "pytest .. --perf-scale=smoke -q;" in result.out  # the root, named from tests/
    # a path named from the subfolder is taken from there
    named = repo.ab(
        "HEAD~1", "HEAD", *BUDGET, "--", "test_sub.py", *args[1:], cwd=repo.root / "tests"
    )
    assert named.code == 0, named.out + named.err
    assert "test_root.py" not in named.out


def test_a_folder_new_in_the_candidate_is_a_row_not_an_error(tmp_path: Path) -> None:
    repo = two_levels(tmp_path)
    repo.write("newdir/test_new.py", BENCH)
    repo.commit("a new bench folder")
    result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", "newdir", "--perf-scale=smoke")
    assert result.code == 3, result.out + result.err
    assert verdict(result.out, "newdir/test_new.py::test_decode") == "added", result.out


def test_a_path_or_node_id_pytest_cannot_find_quotes_pytest(tmp_path: Path) -> None:
    repo = two_levels(tmp_path)
    for arg, said in (
        ("nosuchdir", "ERROR: file or directory not found: nosuchdir"),
        ("test_root.py::test_nosuch", "ERROR: not found: test_root.py::test_nosuch"),
        ("--no-such-option", "ERROR: unrecognized arguments: --no-such-option"),
    ):
        result = repo.ab("HEAD~1", "HEAD", *BUDGET, "--", arg, "--perf-scale=smoke")
        assert result.code == 2, result.out + result.err
        (first,) = result.err.strip().splitlines()  # one line: pytest's, not the log
        assert first.startswith("perfsuite ab: error: side "), result.err
        assert f"pytest said '{said}" in first, result.err
