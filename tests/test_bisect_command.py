"""perfsuite bisect's command layer on a real git history, each step's outcome read from
the work the commit's bench file does (no measurement): first-parent commits, a merge
stepped into with --into-merges, the culprit's subject and author, the report."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from perfsuite.bisect.command import Settings, bisect, markdown
from perfsuite.bisect.search import Measure, Outcome, Step
from tools.validation.user_suite import benchmark_sources


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def commit(root: Path, message: str, extra: float | None = None) -> str:
    if extra is None:
        (root / "README.md").write_text(message + "\n")
    else:
        for name, text in benchmark_sources(extra, f"; {message}").items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


def by_content(root: Path) -> Measure:
    """A step is bad when the commit's bench does over 5% more work than the reference's."""

    def extra(sha: str) -> float:
        found = re.search(r"^EXTRA = ([\d.]+)", git(root, "show", f"{sha}:test_decode.py"), re.M)
        assert found
        return float(found.group(1))

    def measure(reference: str, sha: str, again: bool) -> Step:
        change = extra(sha) - extra(reference)
        outcome: Outcome = "bad" if change > 0.05 else "good"
        return Step(reference, sha, outcome, change, bench="test_decode.py::test_decode")

    return measure


def test_a_merge_culprit_is_stepped_into_with_into_merges(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    good = commit(root, "base", 0.0)
    commit(root, "notes")
    git(root, "checkout", "-q", "-b", "feature")
    commit(root, "feature: tidy", 0.0)
    slower = commit(root, "feature: decode twice", 0.10)
    commit(root, "feature: tidy again", 0.10)
    git(root, "checkout", "-q", "main")
    commit(root, "more notes")
    git(root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = git(root, "rev-parse", "HEAD")
    bad = commit(root, "release notes")
    settings = Settings(("test_decode.py",))

    plain = bisect(root, good, bad, settings, tmp_path, measure=by_content(root))
    assert [c.commit for c in plain.result.culprits] == [merge]  # first-parent by default
    assert {s.commit for s in plain.result.steps} <= set(
        git(root, "rev-list", "--first-parent", bad).split()
    )

    into = Settings(("test_decode.py",), into_merges=True)
    found = bisect(root, good, bad, into, tmp_path, measure=by_content(root))
    assert [c.commit for c in found.result.culprits] == [merge, slower]
    culprit = next(line for line in found.lines if line.startswith(f"culprit: {slower[:10]}"))
    assert "'feature: decode twice' (Ada <ada@example.com>): +10.0%" in culprit
    report = markdown(found.result, found.infos, found.lines)
    assert "| feature: decode twice |" in report
    assert found.status == 1


def test_the_dashboard_reads_the_culprit_a_nightly_named(tmp_path: Path) -> None:
    from perfsuite.dashboard.abreports import read_nightly_report
    from perfsuite.nightly.summary import HEADING

    folder = tmp_path / "night"
    folder.mkdir()
    verdict = (
        "Verdict: **FAILED**: perfsuite ab confirmed a regression; culprit: 7d7bbb1bad "
        "'decode twice'"
    )
    (folder / "summary.md").write_text(
        f"{HEADING}\n\nTonight: `0002_x` (commit `abc`, d)\n\n{verdict}\n"
    )
    report = read_nightly_report(folder, "nightly-01")
    assert report.culprit == "culprit: 7d7bbb1bad 'decode twice'"
    assert report.failed
