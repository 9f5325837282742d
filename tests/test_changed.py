"""Which benches' code changed since a commit (:mod:`perfsuite.changed`), in temporary
git repositories with no pytest configuration: a bench at the root and one under
``tests/perf/``, each importing its own code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsuite.changed import Changes, CodeGraph, changed_benches

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0,
    reason="git is not installed",
)

FILES = {
    "test_root.py": "import decode\n\n\ndef test_root(benchmark):\n    benchmark(decode.run)\n",
    "decode.py": "from lib import fast\n\n\ndef run():\n    return fast.twice(2)\n",
    "lib/__init__.py": "",
    "lib/fast.py": "def twice(x):\n    return 2 * x\n",
    "tests/__init__.py": "",
    "tests/perf/__init__.py": "",
    "tests/perf/conftest.py": "import pytest\n",
    "tests/perf/test_resize.py": (
        "def test_resize(benchmark):\n"
        "    from .helpers import resize  # imported inside the function\n\n"
        "    benchmark(resize)\n"
    ),
    "tests/perf/helpers.py": "import numpy\nfrom mypkg.core import scale\n\n\ndef resize():\n"
    "    return scale(3)\n",
    "src/mypkg/__init__.py": "",
    "src/mypkg/core.py": "def scale(x):\n    return x * 1.5\n",
    "README.md": "benches\n",
}
ROOT, PERF = "test_root.py::test_root", "tests/perf/test_resize.py::test_resize"


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "changed@example.invalid")
    git(tmp_path, "config", "user.name", "changed test")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "benches")
    return tmp_path


def found(nodeids: list[str], rootdir: Path, sha: str, revision: str | None = None) -> Changes:
    changes = changed_benches(nodeids, rootdir, sha, revision)
    assert changes is not None
    return changes


def reasons(nodeids: list[str], rootdir: Path, sha: str) -> dict[str, str]:
    return found(nodeids, rootdir, sha).reasons


def names(repo: Path, paths: set[Path]) -> set[str]:
    return {p.relative_to(repo.resolve()).as_posix() for p in paths}


def test_a_benchs_code_is_its_file_its_conftests_and_what_they_import(repo: Path) -> None:
    graph = CodeGraph(repo)
    assert names(repo, graph.code_of(repo / "test_root.py")) == {
        "test_root.py",
        "decode.py",
        "lib/__init__.py",
        "lib/fast.py",
    }
    assert names(repo, graph.code_of(repo / "tests/perf/test_resize.py")) == {
        "tests/perf/test_resize.py",
        "tests/perf/conftest.py",
        "tests/perf/helpers.py",
        "src/mypkg/__init__.py",
        "src/mypkg/core.py",
    }


def test_only_the_benches_whose_code_changed_are_named(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert reasons([ROOT, PERF], repo, head) == {}
    assert found([ROOT, PERF], repo, head).untouched == {ROOT, PERF}
    (repo / "README.md").write_text("benches, described\n")  # not code
    assert reasons([ROOT, PERF], repo, head) == {}
    (repo / "lib/fast.py").write_text("def twice(x):\n    return x + x + 0\n")
    assert reasons([ROOT, PERF], repo, head) == {
        ROOT: "its code changed since the baseline: lib/fast.py"
    }
    # neither PERF's code nor any data changed: its move is the machine's
    assert found([ROOT, PERF], repo, head).untouched == {PERF}
    git(repo, "commit", "-q", "-am", "twice, committed")  # committed: still since `head`
    (repo / "src/mypkg/core.py").write_text(
        "from mypkg.extra import k\n\n\ndef scale(x):\n    return x * k\n"
    )
    (repo / "src/mypkg/extra.py").write_text("k = 1.5\n")  # new, untracked
    assert reasons([ROOT, PERF], repo, head) == {
        ROOT: "its code changed since the baseline: lib/fast.py",
        PERF: "its code changed since the baseline: src/mypkg/core.py",
    }
    # a rootdir below the top (an ini file in tests/): node ids from the top still resolve
    assert reasons([PERF], repo / "tests", head) == {
        PERF: "its code changed since the baseline: src/mypkg/core.py"
    }


def test_a_change_to_one_test_function_changes_only_its_benches(repo: Path) -> None:
    two = (
        "import pytest\n\n\ndef helper():\n    return 1\n\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_a(benchmark, n):\n"
        "    benchmark(helper)\n\n\ndef test_b(benchmark):\n    benchmark(helper)\n"
    )
    (repo / "tests/perf/test_two.py").write_text(two)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two benches")
    head = git(repo, "rev-parse", "HEAD")
    ids = [
        "tests/perf/test_two.py::test_a[1]",
        "tests/perf/test_two.py::test_a[2]",
        "tests/perf/test_two.py::test_b",
        PERF,
    ]
    # a blank line and a comment move line numbers but change no statement
    (repo / "tests/perf/test_two.py").write_text("# two benches\n\n" + two)
    assert reasons(ids, repo, head) == {}
    edited = two.replace("(helper)\n\n\ndef test_b", "(helper)\n    helper()\n\n\ndef test_b")
    (repo / "tests/perf/test_two.py").write_text(edited)
    reason = "its code changed since the baseline: tests/perf/test_two.py, test_a"
    assert reasons(ids, repo, head) == {ids[0]: reason, ids[1]: reason}
    # a test function not among the benches (deselected, or not a bench) counts as a helper
    whole = "its code changed since the baseline: tests/perf/test_two.py"
    assert reasons(ids[2:], repo, head) == {ids[2]: whole}
    (repo / "tests/perf/test_two.py").write_text(two + "\n\ndef test_c():\n    pass\n")
    assert reasons(ids, repo, head) == dict.fromkeys(ids[:3], whole)
    # a helper every bench of the file may call: all of them changed
    (repo / "tests/perf/test_two.py").write_text(two.replace("return 1", "return 2"))
    assert reasons(ids, repo, head) == dict.fromkeys(ids[:3], whole)
    # a changed function whose text names its own file names no data: test_b is untouched
    own = "    assert perf_id.startswith('tests/perf/test_two.py::')\n"
    (repo / "tests/perf/test_two.py").write_text(edited.replace("    helper()\n", own))
    assert reasons(ids, repo, head) == {ids[0]: reason, ids[1]: reason}


def test_a_bench_none_of_whose_code_or_data_changed_is_untouched(repo: Path) -> None:
    """Documents and Python files that are not a bench's code, committed or not, leave
    it untouched; a bench file that names a changed document (it may read it) changed;
    a data file leaves no bench untouched. Against a revision, the working tree's new
    files do not count."""
    reader = repo / "test_root.py"
    reader.write_text(FILES["test_root.py"] + "CORPUS = 'guide.rst'\n")
    git(repo, "commit", "-q", "-am", "a bench that reads a document")
    base = git(repo, "rev-parse", "HEAD")
    assert found([ROOT, PERF], repo, base).files == ()
    (repo / "README.md").write_text("benches, described\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.rst").write_text("new\n")
    (repo / "lib" / "slow.py").write_text("def once(x):\n    return x\n")  # no bench's code
    changes = found([ROOT, PERF], repo, base)
    assert changes.files == ("README.md", "docs/guide.rst", "lib/slow.py")
    assert changes.untouched == {PERF}
    assert changes.reasons == {
        ROOT: "its file names docs/guide.rst, which changed since the baseline"
    }
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs")
    head = git(repo, "rev-parse", "HEAD")
    assert found([PERF], repo, base, head).untouched == {PERF}
    (repo / "labels.json").write_text("[]\n")
    data = found([ROOT, PERF], repo, base)  # the working tree's data file: any bench may read it
    assert (data.untouched, list(data.reasons)) == (frozenset(), [ROOT])
    assert found([PERF], repo, base, head).untouched == {PERF}
    assert changed_benches([PERF], repo, "0" * 40) is None


def test_a_commit_git_does_not_know_says_nothing_of_any_bench(repo: Path) -> None:
    (repo / "decode.py").write_text("def run():\n    return 5\n")
    assert changed_benches([ROOT], repo, "f" * 40) is None


def test_at_most_the_cap_of_changed_benches_join_the_slowest_first() -> None:
    from dataclasses import replace

    from perfsuite import changed
    from perfsuite.verdict.compare import RunComparison
    from perfsuite.verdict.judge import BenchVerdict
    from perfsuite.verdict.runs import Bench, Run
    from perfsuite.verdict.stats import Comparison, Verdict

    def same(name: str, change: float) -> BenchVerdict:
        bench = Bench(name, name, "g", None, (1.0,) * 10, 1.0)
        time = Comparison(Verdict.SAME, change, (change - 0.02, change + 0.02), 0.5, 0.05, 10, 10)
        return BenchVerdict(name, name, bench, bench, time, None, "s", ())

    count = changed.CHANGED_AT_MOST + 2
    verdicts = [same(f"b{i}.py::t", i / 1000) for i in range(count)] + [same("other.py::t", 0.9)]
    stands_out = replace(same("s.py::t", 0.3), suspected="slower than its group's move")
    verdicts.append(stands_out)  # a suspect already: marked changed, not counted
    comparison = RunComparison(Run("base", {}), Run("now", {}), verdicts, [], [])
    names = {v.fullname: "changed" for v in verdicts if v.fullname != "other.py::t"}
    said: list[str] = []
    marked = changed.mark_changed(
        comparison, Changes((), names, frozenset()), "c" * 40, said.append
    )
    suspects = [v.fullname for v in marked.verdicts if v.suspect]
    # the slowest CHANGED_AT_MOST of the changed: b2 .. b17; b0, b1 and other.py are not
    assert suspects == [*(f"b{i}.py::t" for i in range(2, count)), "s.py::t"]
    flagged = {v.fullname: (v.changed, v.suspected) for v in marked.verdicts}
    assert flagged["s.py::t"] == ("changed", "slower than its group's move")
    assert flagged["b0.py::t"] == ("changed", None)  # changed, left out by the cap
    assert flagged["other.py::t"] == (None, None)
    assert said == [
        f"perfsuite gate: {changed.CHANGED_AT_MOST} bench(es) whose code changed since "
        f"cccccccccccc join the A/B whatever the screen read (beside 1 the screen made "
        f"suspects); 2 more are not measured "
        f"(at most {changed.CHANGED_AT_MOST})"
    ]
