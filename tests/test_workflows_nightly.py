"""The nightly workflow, run by nektos/act on cron payloads: two nights, a third with
the Actions cache emptied, two runners of different machine keys on one night."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.act_runner import ActRun, Runner, branch_files, project_copy, schedule

WORKFLOW = ".github/workflows/nightly-gpu.yml"
#: a CPU runner at smoke scale on two of the suite's benches
SMOKE = {
    "PERFSUITE_SCALE": "smoke",
    "PERFSUITE_DEVICE": "cpu",
    "PERFSUITE_BENCHES": 'benches/bench_warmup.py -k "test_warmup_torch and warm-cpu"',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("nightly")
    remote = base / "results.git"
    return project_copy(base / "repo", remote), remote


def night(runner: Runner, repo: Path, extra: dict[str, str] | None = None) -> ActRun:
    return runner.run(repo, WORKFLOW, "schedule", schedule(), {**SMOKE, **(extra or {})})


def test_cron_nights_save_then_judge_even_with_the_cache_emptied(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, remote = project
    runner = Runner(tmp_path / "runner")
    first = night(runner, repo)
    # the first night of a machine key has no history: it judges nothing (exit 3), and
    # its run is saved all the same
    assert first.lines("NOTHING JUDGED") or first.lines("no earlier"), first.output[-4000:]
    runs = [f for f in branch_files(remote) if f.startswith("runs/") and f.endswith(".json")]
    assert len(runs) == 1, first.output[-4000:]

    second = night(runner, repo)
    assert second.returncode == 0, second.output[-6000:]
    assert second.lines("Verdict: passed"), second.output[-4000:]
    assert len([f for f in branch_files(remote) if f.startswith("runs/cpu-")]) == 2
    assert any(f.startswith("reports/") and f.endswith("summary.md") for f in branch_files(remote))

    for store in runner.cache.iterdir():  # the Actions cache evicted
        store.rename(store.with_name(store.name + ".evicted"))
    third = night(runner, repo)
    assert third.returncode == 0, third.output[-6000:]
    assert third.lines("Verdict: passed")
    assert third.lines("pulled 2 run(s)")
    print(f"act nights: {first.seconds:.1f} s, {second.seconds:.1f} s, {third.seconds:.1f} s")


def test_two_runners_of_different_machine_keys_push_the_same_night(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, remote = project
    results: dict[str, ActRun] = {}

    def run(name: str) -> None:
        runner = Runner(tmp_path / name)
        results[name] = night(runner, repo, {"PERFSUITE_MACHINE_CLASS": name})

    threads = [threading.Thread(target=run, args=(name,)) for name in ("pool-a", "pool-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    files = branch_files(remote)
    for name in ("pool-a", "pool-b"):
        assert [f for f in files if f.startswith(f"runs/{name}-")], results[name].output[-4000:]
    shown = []  # the dashboard each runner built: the later push sees both machines
    for name in ("pool-a", "pool-b"):
        site = tmp_path / name / "artifacts" / "github-pages" / "perfsuite-site.json"
        machines = json.loads(site.read_text())["machines"]
        shown.append({machine.split("-cpu-")[0] for machine in machines})
    assert any(machines >= {"pool-a", "pool-b"} for machines in shown), shown
    print(f"act two runners: {', '.join(f'{k} {v.seconds:.1f} s' for k, v in results.items())}")
