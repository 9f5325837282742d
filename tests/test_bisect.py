"""perfsuite bisect on a pytest-benchmark user's repository of 4 commits (built by
tools/validation/bisect_check.py): the culprit named, a commit that fails to collect
skipped and named, bad input in one line; and perfsuite ab --bisect-exit driving git
bisect run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.cli import main
from tools.validation.bisect_check import build_history, run_bisect

#: commits in the history; 16 in tools/validation/bisect_check.py, which measures
COMMITS = 4
#: the first middle of the 3 commits after GOOD: commit 1 is the first one tested. It
#: is broken, so commit 2 cannot carry the work either (it mends the files): the
#: culprit is commit 3, BAD, whatever the seed
FIRST_MIDDLE = 1


def test_the_culprit_is_named_and_a_commit_that_fails_to_collect_is_skipped(
    tmp_path: Path,
) -> None:
    # +30% at a 15% threshold: quick steps; the 10% case is measured by bisect_check.py
    history = build_history(
        tmp_path / "repo", seed=3, parts=(0.30,), commits=COMMITS, broken=[FIRST_MIDDLE]
    )
    found = run_bisect(history, ["--threshold", "0.15"])
    culprit = history.culprits[0][:10]
    assert found.status == 1, "\n".join(found.lines[-30:])
    assert found.named == [culprit], "\n".join(found.lines[-30:])
    skipped = [line for line in found.lines if line.startswith("perfsuite bisect: skipped ")]
    assert len(skipped) == 1
    assert history.broken[0][:10] in skipped[0]
    # the confirmation, the broken commit 1, then commit 2 found good (measured again,
    # with twice the budget, where its first A/B could not decide)
    assert 3 <= len(found.steps) <= 4, found.steps
    report = (tmp_path / "repo-bisect" / "bisect.md").read_text()
    assert f"**culprit: {culprit}" in report


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = build_history(tmp_path / "repo", seed=0, commits=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(history.root)
        assert main(["bisect", history.shas[2], history.shas[1]]) == 2
        assert main(["bisect", "no-such-rev"]) == 2
        assert main(["ab", "no-such-rev", "--bisect-exit"]) == 128
    out = capsys.readouterr()
    text = out.out + out.err
    assert "is not an ancestor of BAD" in text
    assert "revision 'no-such-rev'" in text


def test_git_bisect_run_drives_perfsuite_ab(tmp_path: Path) -> None:
    history = build_history(tmp_path / "repo", seed=5, parts=(0.30,), commits=4)
    root, good = history.root, history.shas[0]

    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        return proc.stdout

    git("bisect", "start", history.shas[-1], good)
    ab = [sys.executable, "-m", "perfsuite.cli", "ab", good, "--bisect-exit", "--threshold", "0.15"]
    out = git("bisect", "run", *ab, "--", "test_decode.py")
    assert f"{history.culprits[0]} is the first bad commit" in out, out[-3000:]


def test_the_nightly_bisects_a_regression_that_came_in_over_two_commits(tmp_path: Path) -> None:
    # the work goes 1x, 1.5x, 2x: the nightly's screen of two plain pytest runs sees
    # the doubling even where another process takes a large share of one run's CPU
    history = build_history(tmp_path / "repo", seed=2, parts=(0.5, 0.5), commits=3)
    root = history.root

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", *args], cwd=root, capture_output=True, text=True, check=False
        )

    pytest_run = ["pytest", "-p", "no:cacheprovider", "--benchmark-autosave", "test_decode.py"]
    subprocess.run(["git", "checkout", "-q", history.shas[0]], cwd=root, check=True)
    assert run(*pytest_run).returncode == 0
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)
    assert run(*pytest_run).returncode == 0
    report = tmp_path / "verdict"
    nightly = run("perfsuite.cli", "nightly", "--report", str(report), "--", "test_decode.py")
    assert nightly.returncode == 1, nightly.stdout[-3000:] + nightly.stderr[-2000:]
    summary = (report / "summary.md").read_text()
    verdict = next(line for line in summary.splitlines() if line.startswith("Verdict: "))
    first, second = (sha[:10] for sha in history.culprits)
    assert f"culprits: {first} 'commit" in verdict, summary[-4000:]
    assert f", {second} 'commit" in verdict, summary[-4000:]
    assert "the regression came in over 2 commits, each adding part of it" in summary
