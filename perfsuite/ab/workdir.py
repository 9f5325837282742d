"""The scratch folder of one ``perfsuite ab`` run, and the sweep of those a killed run left.

A run keeps its sockets, the sides' logs and JSON in a ``perfsuite-ab-*`` folder under
the temporary directory and removes it on every exit it sees: success, a fault, Ctrl-C,
SIGTERM. A run killed outright (SIGKILL, the OOM killer) cannot, so each folder holds
an ``owner`` file locked (``fcntl``) for its run's life. The kernel drops that lock
with the process, so the next run removes every folder whose ``owner`` it can lock:
no run still holds it. A folder without an ``owner`` is left alone (another tool's,
or one being made).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "perfsuite-ab-"
OWNER = "owner"
#: Unix socket paths must stay short (108 bytes): a longer TMPDIR falls back to /tmp
MAX_TMP_LEN = 60


def scratch_parent() -> Path:
    """Where run folders go: the temporary directory, or /tmp when its path is long."""
    tmp = tempfile.gettempdir()
    return Path(tmp if len(tmp) < MAX_TMP_LEN else "/tmp")


def sweep(parent: Path) -> list[Path]:
    """Remove the run folders under ``parent`` that no live run holds; return them."""
    removed = []
    for folder in sorted(parent.glob(f"{PREFIX}*")):
        try:
            handle = open(folder / OWNER, "rb")  # noqa: SIM115 - closed below, after the removal
        except OSError:  # no owner file (yet), or not ours to read
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a live run holds it
                continue
            shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


@contextlib.contextmanager
def run_folder(parent: Path | None = None) -> Iterator[Path]:
    """A fresh run folder, its ``owner`` locked until the block ends, then removed.

    Folders of runs that died without removing theirs are swept first.
    """
    parent = scratch_parent() if parent is None else parent
    sweep(parent)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    try:
        with open(folder / f".{OWNER}", "wb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            # only a locked owner ever shows: a sweep never sees one between open and lock
            os.rename(folder / f".{OWNER}", folder / OWNER)
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
