"""perfsuite ab's scratch folders: each run's removed at its end, a killed run's swept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from perfsuite.ab.workdir import OWNER, PREFIX, run_folder, sweep

#: a process that makes a run folder under argv[1], prints it and waits to be killed
HOLDER = (
    "import sys, time; from pathlib import Path; from perfsuite.ab.workdir import run_folder\n"
    "with run_folder(Path(sys.argv[1])) as folder:\n"
    "    print(folder, flush=True); time.sleep(60)\n"
)


def test_a_run_folder_is_removed_when_its_run_ends(tmp_path: Path) -> None:
    with run_folder(tmp_path) as folder:
        assert folder.parent == tmp_path
        assert folder.name.startswith(PREFIX)
        assert sorted(p.name for p in folder.iterdir()) == [OWNER]
        assert sweep(tmp_path) == []  # held by this run
        assert folder.is_dir()
    assert list(tmp_path.iterdir()) == []


def test_sweep_removes_the_folder_of_a_killed_run_and_nothing_else(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    killed = Path(holder.stdout.readline().strip())
    assert sweep(tmp_path) == []  # its run is alive and holds it
    holder.kill()
    holder.wait()
    assert killed.is_dir()
    unowned = tmp_path / f"{PREFIX}unowned"  # not made by run_folder (or not yet owned)
    unowned.mkdir()
    other = tmp_path / "other-tool"
    (other / OWNER).parent.mkdir()
    (other / OWNER).write_bytes(b"")
    with run_folder(tmp_path) as live:  # a new run sweeps first
        assert not killed.exists()
        assert sorted(tmp_path.iterdir()) == sorted([live, unowned, other])
    assert sweep(tmp_path) == []
    assert sorted(tmp_path.iterdir()) == sorted([unowned, other])
