"""The results branch against a local bare repository: the first night, two stores
pushing at once, a rejected push, a push that gives up, a damaged file, pruning."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from perfsuite.cli import main
from perfsuite.errors import PerfsuiteError
from perfsuite.results.gitbranch import PushRejected, ResultsBranch
from perfsuite.results.key import machine_key, run_key
from perfsuite.results.layout import ACCEPTED, branch_name
from perfsuite.results.sync import pull, push, runs_to_drop
from perfsuite.verdict.runs import parse_run

MACHINE = "Linux-CPython-3.11-64bit"
GPU_A = {"gpu_name": "NVIDIA H200", "gpu_count": 1, "gpu_driver": "570.86", "cpu_count": 16}
GPU_B = {"gpu_name": "NVIDIA L4", "gpu_count": 1, "gpu_driver": "570.86", "cpu_count": 8}


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return proc.stdout.strip()


def document(
    night: int, facts: dict[str, Any], median: float = 0.01, node: str = "a"
) -> dict[str, Any]:
    """A pytest-benchmark run of one bench, saved on ``night`` of December."""
    return {
        "version": "5.1.0",
        "datetime": f"2026-12-{night:02d}T02:17:00.000001+00:00",
        "machine_info": {"node": node, "python_version": "3.11.7", "perfsuite": facts},
        "commit_info": {"id": f"{night:040x}", "dirty": False},
        "benchmarks": [
            {
                "fullname": "test_decode.py::test_decode",
                "name": "test_decode",
                "group": None,
                "extra_info": {},
                "stats": {"median": median, "data": [median] * 5, "rounds": 5},
            }
        ],
    }


def save(storage: Path, doc: dict[str, Any], name: str) -> Path:
    folder = storage / MACHINE
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    return bare


def clone(tmp_path: Path, remote: Path, name: str) -> Path:
    repo = tmp_path / name
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "remote", "add", "origin", str(remote))
    return repo


def branch_files(remote: Path) -> list[str]:
    listing = git(remote, "ls-tree", "-r", "--name-only", "perfsuite-results")
    return listing.splitlines()


def test_the_key_is_the_hardware_and_stack_never_the_runner() -> None:
    a = machine_key(GPU_A, "3.11")
    assert a.startswith("NVIDIA-H200-x1-")
    assert machine_key(GPU_A, "3.11") == a  # identical runners share one key
    assert machine_key({**GPU_A, "gpu_driver": "575.51"}, "3.11") != a
    assert machine_key({**GPU_A, "versions": {"torch": "2.14.0"}}, "3.11") != a
    assert machine_key(GPU_A, "3.12") != a
    # not measured: perfsuite's own version, facts a plugin adds
    assert machine_key({**GPU_A, "versions": {"perfsuite": "9.9"}, "extra": {"x": 1}}, "3.11") == a
    run = parse_run(document(1, GPU_A, node="runner-7f3k2"), "x.json")
    assert run_key(run) == a


def test_a_run_has_one_name_on_the_branch_whoever_saves_it() -> None:
    one = branch_name(document(1, GPU_A, node="runner-a"))
    assert one == branch_name(document(1, GPU_A, node="runner-a"))
    assert one != branch_name(document(1, GPU_A, node="runner-b"))
    assert one.startswith("20261201021700_")


def test_the_first_night_pulls_nothing_then_pushes_the_branch(
    tmp_path: Path, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = clone(tmp_path, remote, "repo")
    storage = repo / ".benchmarks"
    key = machine_key(GPU_A, "3.11")
    lines = pull(ResultsBranch(repo, "origin", "perfsuite-results"), storage, MACHINE, key)
    assert "does not exist yet" in lines[0]
    save(storage, document(1, GPU_A), "0001_first.json")
    lines = push(ResultsBranch(repo, "origin", "perfsuite-results"), storage, MACHINE, None)
    name = branch_name(document(1, GPU_A))
    assert branch_files(remote) == ["README.md", f"runs/{key}/{name}"]
    # the local file now carries its branch name, so no later push stores it twice
    assert [p.name for p in (storage / MACHINE).iterdir()] == [name]
    assert "pushed 1 run(s)" in lines[-1]


def test_a_second_store_pulls_the_history_and_a_damaged_file_is_left_out(
    tmp_path: Path, remote: Path
) -> None:
    first = clone(tmp_path, remote, "first")
    for night in (1, 2):
        save(first / ".benchmarks", document(night, GPU_A), f"000{night}_n.json")
    push(ResultsBranch(first, "origin", "perfsuite-results"), first / ".benchmarks", MACHINE, None)
    key = machine_key(GPU_A, "3.11")
    # damage night 2 on the branch, through another clone
    editor = tmp_path / "editor"
    git(tmp_path, "clone", "-q", "-b", "perfsuite-results", str(remote), str(editor))
    damaged = editor / "runs" / key / branch_name(document(2, GPU_A))
    damaged.write_text('{"version": "5.1.0", "benchm')
    git(editor, "-c", "user.email=e@x", "-c", "user.name=e", "commit", "-qam", "damage")
    git(editor, "push", "-q", "origin", "perfsuite-results")

    second = clone(tmp_path, remote, "second")
    storage = second / ".benchmarks"
    save(storage, document(3, GPU_A), "0001_tonight.json")  # saved here, not pushed yet
    lines = pull(ResultsBranch(second, "origin", "perfsuite-results"), storage, MACHINE, key)
    assert any("left out a damaged run" in line and damaged.name in line for line in lines)
    assert sorted(p.name for p in (storage / MACHINE).iterdir()) == sorted(
        ["0001_tonight.json", branch_name(document(1, GPU_A))]
    )
    assert "and 1 saved here not pushed yet" in lines[-1]
    assert main(["history", "--storage", str(storage)]) == 3  # readable: 2 runs, not judged


def test_a_push_rejected_once_is_rebuilt_on_the_new_tip(tmp_path: Path, remote: Path) -> None:
    a, b = clone(tmp_path, remote, "a"), clone(tmp_path, remote, "b")
    save(a / ".benchmarks", document(1, GPU_A), "0001_a.json")
    save(b / ".benchmarks", document(1, GPU_B, node="b"), "0001_b.json")
    branch_b = ResultsBranch(b, "origin", "perfsuite-results")
    branch_b.fetch()  # b sees no branch; a then creates it: b's first push is refused
    push(ResultsBranch(a, "origin", "perfsuite-results"), a / ".benchmarks", MACHINE, None)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        f"#!/bin/sh\ntest -f {tmp_path}/refused && exit 0\ntouch {tmp_path}/refused\nexit 1\n"
    )
    hook.chmod(0o755)
    lines = push(branch_b, b / ".benchmarks", MACHINE, None)
    assert (tmp_path / "refused").exists()
    assert "pushed 1 run(s)" in lines[-1]
    keys = {path.split("/")[1] for path in branch_files(remote) if path.startswith("runs/")}
    assert keys == {machine_key(GPU_A, "3.11"), machine_key(GPU_B, "3.11")}


def test_a_push_that_gives_up_says_so_and_loses_nothing(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = clone(tmp_path, remote, "repo")
    saved = save(repo / ".benchmarks", document(1, GPU_A), "0001_n.json")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(PushRejected, match=r"refused the push 2 times \(last: .*\)"):
        push(
            ResultsBranch(repo, "origin", "perfsuite-results"),
            repo / ".benchmarks",
            MACHINE,
            None,
            attempts=2,
        )
    assert saved.is_file()  # still under its own name: the next push sends it
    monkeypatch.chdir(repo)
    status = main(["results", "push", "--attempts", "1", "--storage", str(repo / ".benchmarks")])
    assert status == 2


def test_two_stores_pushing_at_once_both_land(tmp_path: Path, remote: Path) -> None:
    stores = []
    for name, facts in (("a", GPU_A), ("b", GPU_B)):
        repo = clone(tmp_path, remote, name)
        for night in (1, 2, 3):
            save(repo / ".benchmarks", document(night, facts, node=name), f"000{night}_{name}.json")
        stores.append(repo)
    errors: list[BaseException] = []

    def push_from(repo: Path) -> None:
        try:
            push(
                ResultsBranch(repo, "origin", "perfsuite-results"),
                repo / ".benchmarks",
                MACHINE,
                None,
                attempts=8,
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=push_from, args=(repo,)) for repo in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    runs = [path for path in branch_files(remote) if path.startswith("runs/")]
    assert len(runs) == 6


def test_pruning_keeps_the_newest_and_what_a_step_or_an_acceptance_needs() -> None:
    flat = [(f"r{n:02d}", parse_run(document(n, GPU_A), f"r{n:02d}.json")) for n in range(1, 21)]
    assert runs_to_drop(flat, 5, None) == {f"r{n:02d}" for n in range(1, 16)}
    assert runs_to_drop(flat, 30, None) == set()
    accepted = {"run": "r03", "datetime": flat[2][1].datetime}
    assert "r03" not in runs_to_drop(flat, 5, accepted)
    # a 30% step at night 14, not accepted: the runs from 8 before it stay
    stepped = [
        (
            f"r{n:02d}",
            parse_run(document(n, GPU_A, median=0.01 if n < 14 else 0.013), f"r{n:02d}.json"),
        )
        for n in range(1, 21)
    ]
    assert runs_to_drop(stepped, 5, None) == {f"r{n:02d}" for n in range(1, 6)}
    after = {"run": "r19", "datetime": stepped[18][1].datetime}  # accepted: pruned as usual
    assert runs_to_drop(stepped, 5, after) == {f"r{n:02d}" for n in range(1, 16)}


def test_push_prunes_the_branch_and_the_local_folder(tmp_path: Path, remote: Path) -> None:
    repo = clone(tmp_path, remote, "repo")
    storage = repo / ".benchmarks"
    for night in range(1, 6):
        save(storage, document(night, GPU_A), f"000{night}_n.json")
    report = tmp_path / "verdict"
    report.mkdir()
    (report / "summary.md").write_text("# perfsuite nightly\n\nTonight: `0005_n` (commit `x`)\n")
    push(ResultsBranch(repo, "origin", "perfsuite-results"), storage, MACHINE, report, keep=3)
    key = machine_key(GPU_A, "3.11")
    tonight = branch_name(document(5, GPU_A)).removesuffix(".json")
    files = branch_files(remote)
    assert len([f for f in files if f.startswith("runs/")]) == 3
    assert f"reports/{key}/{tonight}/summary.md" in files
    summary = git(remote, "show", f"perfsuite-results:reports/{key}/{tonight}/summary.md")
    assert f"Tonight: `{tonight}`" in summary  # the run's name on the branch
    assert len(list((storage / MACHINE).iterdir())) == 3


def test_an_accepted_step_travels_with_the_history(tmp_path: Path, remote: Path) -> None:
    first = clone(tmp_path, remote, "first")
    storage = first / ".benchmarks"
    save(storage, document(1, GPU_A), "0001_n.json")
    assert main(["history", "--storage", str(storage), "--accept", "0001"]) == 0
    push(ResultsBranch(first, "origin", "perfsuite-results"), storage, MACHINE, None)
    key = machine_key(GPU_A, "3.11")
    record = json.loads(git(remote, "show", f"perfsuite-results:{ACCEPTED}"))[key]
    assert record["run"] == branch_name(document(1, GPU_A)).removesuffix(".json")
    second = clone(tmp_path, remote, "second")
    pull(ResultsBranch(second, "origin", "perfsuite-results"), second / ".benchmarks", MACHINE, key)
    local = json.loads((second / ".benchmarks" / "perfsuite-accepted.json").read_text())
    assert local[MACHINE]["run"] == record["run"]


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(PerfsuiteError, match="not in a git repository"):
        ResultsBranch(outside, "origin", "perfsuite-results").fetch()
    repo = clone(tmp_path, tmp_path / "missing.git", "repo")
    with pytest.raises(PerfsuiteError, match="cannot reach the results remote 'origin'"):
        ResultsBranch(repo, "origin", "perfsuite-results").fetch()
    with pytest.raises(PerfsuiteError, match="no saved runs to push"):
        push(
            ResultsBranch(repo, "origin", "perfsuite-results"), repo / ".benchmarks", MACHINE, None
        )


def test_a_night_without_a_report_still_saves_its_run(tmp_path: Path, remote: Path) -> None:
    repo = clone(tmp_path, remote, "repo")
    save(repo / ".benchmarks", document(1, GPU_A), "0001_n.json")
    branch = ResultsBranch(repo, "origin", "perfsuite-results")
    lines = push(branch, repo / ".benchmarks", MACHINE, tmp_path / "no-verdict")
    assert "no summary.md there; pushing the runs alone" in lines[0]
    assert [f for f in branch_files(remote) if f.startswith("runs/")]
