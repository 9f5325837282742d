"""perfsuite from another repository: a pytest-benchmark user's suite (``benchmark``
fixture only, no pytest configuration file, a bench at the root and one under
``tests/``) calls perfsuite's reusable workflows, run by nektos/act: two cron nights,
the second judged, and a night dispatched from another branch, judged but not saved;
a pull request that adds work fails naming the bench, and one that changes nothing
measured but upgrades a pin passes, each side in the environment of its own pins, the
upgrade named in the comment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.act_runner import (
    Runner,
    branch_files,
    git,
    new_repository,
    pull_request,
    schedule,
)
from tests.wheels import build_wheel
from tools.validation.user_suite import benchmark_sources

NIGHTLY = """name: nightly
on:
  schedule:
    - cron: "17 2 * * *"
  workflow_dispatch:
permissions:
  contents: write
jobs:
  perf:
    uses: perfsuite/perfsuite/.github/workflows/perfsuite-nightly.yml@main
    with:
      benches: "."
      scale: smoke
      device: cpu
      runs-on: '["self-hosted"]'
"""
PULL_REQUEST = """name: perf
on: pull_request
permissions:
  contents: read
  pull-requests: write
jobs:
  perf:
    uses: perfsuite/perfsuite/.github/workflows/perfsuite-pr.yml@main
    with:
      benches: ". --perf-threshold=0.15"
      scale: default
      runs-on: '["self-hosted"]'
      max-seconds: 20
"""


@pytest.fixture(scope="module")
def users_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("users")
    files = {
        **benchmark_sources(0.0),
        ".github/workflows/nightly.yml": NIGHTLY,
        ".github/workflows/perf.yml": PULL_REQUEST,
    }
    remote = base / "remote.git"
    return new_repository(base / "repo", remote, files), remote


def test_two_nights_of_a_users_suite_and_the_second_is_judged(
    users_repo: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, remote = users_repo
    runner = Runner(tmp_path / "runner")
    workflow = ".github/workflows/nightly.yml"
    first = runner.run(repo, workflow, "schedule", schedule())
    assert len([f for f in branch_files(remote) if f.startswith("runs/")]) == 1, first.output[
        -4000:
    ]
    second = runner.run(repo, workflow, "schedule", schedule())
    assert second.returncode == 0, second.output[-6000:]
    assert second.lines("2 benches screened against"), second.output[-4000:]
    assert second.lines("Verdict: passed"), second.output[-4000:]
    runs = [f for f in branch_files(remote) if f.startswith("runs/")]
    assert len(runs) == 2
    # dispatched from another branch: judged, never saved into the history
    git(repo, "checkout", "-q", "-b", "try-something")
    (repo / "README.md").write_text("trying something\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "try something")
    try:
        branch = runner.run(repo, workflow, "workflow_dispatch", {"inputs": {}})
    finally:
        git(repo, "checkout", "-q", "main")
    # the verdict ran (at smoke scale it may pass or stay undecided); nothing was pushed
    assert branch.lines("Verdict: "), branch.output[-4000:]
    assert not branch.lines("perfsuite results: pushed"), branch.output[-4000:]
    assert [f for f in branch_files(remote) if f.startswith("runs/")] == runs
    print(
        f"act, a user's nightly: {first.seconds:.1f} s, {second.seconds:.1f} s; "
        f"from a branch {branch.seconds:.1f} s"
    )


def propose(repo: Path, branch: str, extra: float, pins: str | None = None) -> None:
    """A branch from main whose benches decode ``extra`` of the images a second time, and
    whose requirements.txt reads ``pins`` where given."""
    git(repo, "checkout", "-q", "-b", branch, "main")
    for name, text in benchmark_sources(extra).items():
        (repo / name).write_text(text)
    if pins is not None:
        (repo / "requirements.txt").write_text(pins)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"decode {extra:.0%} more", "--allow-empty")
    git(repo, "checkout", "-q", "main")


def test_a_pull_request_that_adds_work_fails_and_one_that_does_not_passes(
    users_repo: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = users_repo
    workflow = ".github/workflows/perf.yml"
    # half as much work again, at a 15% threshold: decided in a few pairs, and an
    # unchanged bench bounded or `same` within 20 s
    propose(repo, "slower", 0.5)
    slower = Runner(tmp_path / "a").run(
        repo, workflow, "pull_request", pull_request(repo, "slower", 3, fork=True)
    )
    assert slower.returncode != 0, slower.output[-6000:]
    assert slower.lines("perfsuite ab: REGRESSION in 2 bench(es)"), slower.output[-6000:]
    # a fork's pull request: no token may comment, and the job summary says so
    assert slower.lines("a fork's pull request gets no token that may comment")
    body = slower.output[slower.output.index("<!-- perfsuite-pr-comment -->") :].splitlines()
    assert "(exit status 1)" in body[1]
    row = next(line for line in body if "test_decode.py::test_decode`" in line)
    assert "SLOWER" in row, row

    # an upgrade of a package the benches do not use: each side in its own environment
    wheels = tmp_path / "wheels"
    for version in ("1.0", "1.0.post1"):
        build_wheel(wheels, "perfwork", version, 1000)
    propose(repo, "same", 0.0, f"--find-links {wheels}\nperfwork==1.0.post1\n")
    same = Runner(tmp_path / "b").run(
        repo, workflow, "pull_request", pull_request(repo, "same", 4, fork=True)
    )
    assert same.returncode == 0, same.output[-6000:]
    first = same.lines("perfsuite ab: A = ")[0]
    assert "pins differ: perfwork (none) -> 1.0.post1" in first, first
    # exit 0: at least one bench judged and none slower (a bench the load left
    # inconclusive is listed as not judged)
    assert same.lines("perfsuite ab: no regression: "), same.output[-6000:]
    body = same.output[same.output.index("<!-- perfsuite-pr-comment -->") :].splitlines()
    assert "(exit status 0)" in body[1]
    assert any("(perfwork (none) -> 1.0.post1)" in line for line in body), body
    print(f"act, a user's pull request: slower {slower.seconds:.1f} s, same {same.seconds:.1f} s")
