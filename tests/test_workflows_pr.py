"""perfsuite's own pull request workflow, run by nektos/act on a pull_request payload: a
head that adds work to one bench fails naming it, in the check and in the comment it
would post. (A head that changes nothing measured passes: tests/test_workflows_reuse.py,
on a suite whose A/B decides within the check's budget.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.act_runner import ActRun, Runner, git, project_copy, pull_request

WORKFLOW = ".github/workflows/perf-pr.yml"
BENCH = "benches/bench_warmup.py"
SLOWED = "test_warmup_torch[warm-cpu]"
SELECTION = {
    "PERFSUITE_PR_BENCHES": f'{BENCH} -k "test_warmup_torch and cpu"',
    "PERFSUITE_PR_MAX_SECONDS": "30",
}
#: the warm torch bench's measured call, and the same call doing three times the work
CALL = "_measure_case(perf, lambda: wc.torch_forward(model, x), None, params, torch_device)"
FORWARD = "wc.torch_forward(model, x)"
THRICE = (
    f"_measure_case(\n        perf, lambda: ({FORWARD}, {FORWARD}, {FORWARD}), None, params, "
    "torch_device\n    )"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pr")
    return project_copy(base / "repo", base / "remote.git")


def propose(repo: Path, branch: str, path: str, old: str, new: str) -> None:
    """A commit on ``branch`` (from main) that replaces ``old`` by ``new`` in ``path``."""
    git(repo, "checkout", "-q", "-b", branch, "main")
    text = (repo / path).read_text()
    assert old in text
    (repo / path).write_text(text.replace(old, new))
    git(repo, "commit", "-qam", f"{branch}: change {path}")
    git(repo, "checkout", "-q", "main")


def check(runner: Runner, repo: Path, branch: str, number: int) -> ActRun:
    return runner.run(repo, WORKFLOW, "pull_request", pull_request(repo, branch, number), SELECTION)


def test_a_head_that_adds_work_to_a_bench_fails_naming_it(project: Path, tmp_path: Path) -> None:
    propose(project, "slower", BENCH, CALL, THRICE)
    run = check(Runner(tmp_path / "runner"), project, "slower", 7)
    assert run.returncode != 0, run.output[-6000:]
    assert run.lines("perfsuite ab: REGRESSION in 1 bench(es)"), run.output[-6000:]
    assert run.lines(SLOWED)
    body = run.output[run.output.index("<!-- perfsuite-pr-comment -->") :]
    assert "exit status 1" in body.splitlines()[0] + body.splitlines()[1]
    row = next(line for line in body.splitlines() if SLOWED in line)
    assert "SLOWER" in row, row
    assert "| +" in row, row
    assert run.lines("no GITHUB_TOKEN or GITHUB_REPOSITORY to comment with")
    print(f"act PR, slower head: {run.seconds:.1f} s")
