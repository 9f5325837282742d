"""The facts pytest-benchmark saves with a side's JSON, found once per A/B run.

pytest-benchmark finds the machine's facts (py-cpuinfo, in a child process) and the
commit's (several ``git`` calls) for every ``--benchmark-json`` it saves, in the
teardown that the next pair of processes' first block waits for. The sides of one A/B
run on one machine, each on one checkout, so the first process to find a fact keeps it
in the run's folder (``PERFSUITE_AB_FACTS``) and the later ones read it: the CPU's
facts once per run, the commit's once per side.

Only pytest-benchmark's own finders are wrapped; a user's
``pytest_benchmark_generate_machine_info`` or ``..._commit_info`` hook runs as it
always does. A fact that cannot be read back (a torn or foreign file) is found again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfsuite.data.fsutil import atomic_write_text

FACTS_ENV = "PERFSUITE_AB_FACTS"
#: pytest-benchmark's finders, as its plugin module names them
CPU, COMMIT = "get_cpu_info", "get_commit_info"


def cached(path: Path, find: Callable[[], Any]) -> Any:
    """The JSON value saved at ``path``, or ``find()``, saved there (atomically) first."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    value = find()
    with contextlib.suppress(OSError, TypeError, ValueError):  # unsaved: found again later
        atomic_write_text(path, json.dumps(value))
    return value


def keep_facts(side: str) -> None:
    """Where ``PERFSUITE_AB_FACTS`` names a folder (removed from the environment, so no
    process this one starts takes it), wrap pytest-benchmark's CPU and commit finders
    in this process to keep what they find there (the commit's per ``side``)."""
    named = os.environ.pop(FACTS_ENV, None)
    if not named:
        return
    folder = Path(named)
    try:
        from pytest_benchmark import plugin
    except ImportError:
        return
    find_cpu: Callable[[], Any] | None = getattr(plugin, CPU, None)
    find_commit: Callable[[str | None], Any] | None = getattr(plugin, COMMIT, None)
    if callable(find_cpu):
        setattr(plugin, CPU, lambda: cached(folder / "cpu.json", find_cpu))
    if callable(find_commit):

        def commit_info(project_name: str | None = None) -> Any:
            key = hashlib.sha256(str(project_name).encode()).hexdigest()[:12]
            return cached(folder / f"commit-{side}-{key}.json", lambda: find_commit(project_name))

        setattr(plugin, COMMIT, commit_info)
