"""A process generating a dataset, killed with SIGKILL, leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARK = "PERFSUITE_ORPHAN_TEST"

SCRIPT = """
import sys
from pathlib import Path

from perfsuite.data.datasets import materialize
from perfsuite.data.recipes import load_recipe

if __name__ == "__main__":
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(count=5000)
    materialize(recipe, Path(sys.argv[1]), workers=2)
"""


def marked(token: str) -> dict[int, str]:
    """Live (not zombie) processes whose environment holds ``MARK=token``: pid -> command."""
    needle = f"{MARK}={token}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":
                continue  # dead, waiting to be reaped
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
    return found


def wait_for(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PDEATHSIG")
def test_sigkill_during_generation_leaves_no_orphan(tmp_path: Path) -> None:
    script = tmp_path / "generate.py"
    script.write_text(SCRIPT)
    data = tmp_path / "data"
    token = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT), MARK: token}
    parent = subprocess.Popen(
        [sys.executable, str(script), str(data)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:

        def generating() -> bool:
            assert parent.poll() is None, parent.stderr.read().decode() if parent.stderr else ""
            return len(list(data.glob(".*.build-*/*/*.jpg"))) >= 8

        assert wait_for(generating, 180), "no JPEGs were written within 180 s"
        helpers = {pid: cmd for pid, cmd in marked(token).items() if pid != parent.pid}
        # the pool's two workers and multiprocessing's resource tracker
        assert sum("spawn_main" in cmd for cmd in helpers.values()) == 2, helpers
        assert any("resource_tracker" in cmd for cmd in helpers.values()), helpers
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    left: dict[int, str] = {}

    def none_left() -> bool:
        left.clear()
        left.update(marked(token))
        return not left

    try:
        assert wait_for(none_left, 30), f"orphans 30 s after SIGKILL: {left}"
    finally:
        for pid in left:  # never leave them running, even when the test fails
            os.kill(pid, signal.SIGKILL)
    assert not list(data.glob("*/*.jpg")), "a half-built dataset was renamed into place"
