"""Time the workflow scenarios under nektos/act, and show what the results branch holds.

Runs the nightly workflow (``nightly-gpu.yml``, a CPU runner at smoke scale on one
bench, through the reusable ``perfsuite-nightly.yml``) as ``make test-workflows``
does, on a copy of this repository with a local bare repository as its remote:
two cron nights, a third with the Actions cache emptied, then two runners of
different machine classes on one night, at once. It prints each act run's wall
time and exit status, then every file on the ``perfsuite-results`` branch with its
size, and the totals. Usage::

    python tools/validation/workflow_times.py [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tests.act_runner import ActRun, Runner, project_copy, schedule
from tests.test_workflows_nightly import SMOKE, WORKFLOW


def branch_listing(remote: Path) -> list[tuple[str, int]]:
    """(path, bytes) of every file on the results branch."""
    out = subprocess.run(
        ["git", "ls-tree", "-r", "-l", "perfsuite-results"],
        cwd=remote,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        rows.append((path, int(meta.split()[3])))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="workflow-times-"))
    remote = base / "results.git"
    repo = project_copy(base / "repo", remote)
    runner = Runner(base / "runner")

    def night(name: str, run_on: Runner, extra: dict[str, str] | None = None) -> ActRun:
        found = run_on.run(repo, WORKFLOW, "schedule", schedule(), {**SMOKE, **(extra or {})})
        print(f"{name}: {found.seconds:.1f} s, act exit {found.returncode}", flush=True)
        return found

    night("cron night 1 (first of its key: saved, judged nothing)", runner)
    night("cron night 2 (judged against night 1)", runner)
    shutil.rmtree(runner.cache)
    runner.cache.mkdir()
    night("cron night 3, the Actions cache emptied", runner)
    threads = [
        threading.Thread(
            target=night,
            args=(f"runner {name}, the same night", Runner(base / name)),
            kwargs={"extra": {"PERFSUITE_MACHINE_CLASS": name}},
        )
        for name in ("pool-a", "pool-b")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = branch_listing(remote)
    for path, size in rows:
        print(f"{size:>9,} B  {path}")
    runs = [size for path, size in rows if path.startswith("runs/") and path.endswith(".json")]
    print(
        f"{len(rows)} files, {sum(size for _, size in rows):,} B in all; "
        f"{len(runs)} saved runs, {sum(runs):,} B"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
