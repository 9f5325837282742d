"""Where things lie on the results branch, and the name a saved run is stored under."""

from __future__ import annotations

import hashlib
import re
from typing import Any

RUNS = "runs"
REPORTS = "reports"
#: accepted steps, one record per machine key (``perfsuite history --accept``)
ACCEPTED = f"{RUNS}/perfsuite-accepted.json"
README = "README.md"
README_TEXT = """# perfsuite results

This branch holds perfsuite's saved runs and nightly reports; the nightly job writes it
with `perfsuite results push`. Do not merge it into your code.

- `runs/<machine key>/<time>_<commit>_<id>.json`: one pytest-benchmark run per file
- `runs/perfsuite-accepted.json`: the accepted steps of each machine key
- `reports/<machine key>/<run>/`: the night's `perfsuite nightly --report` folder
"""

#: a run file's name on the branch: UTC time of the run, commit (12), an id (8)
BRANCH_RUN = re.compile(r"^\d{14}_[0-9a-z]+_[0-9a-f]{8}\.json$")


def branch_name(document: dict[str, Any]) -> str:
    """The file name a saved run (its parsed JSON) has on the branch: the UTC moment it
    was saved, its commit and an id drawn from both and the host that ran it, so that
    two runners never name two runs alike and one run always gets the same name.

    >>> branch_name({"datetime": "2026-12-01T02:17:05.123456+00:00",
    ...              "commit_info": {"id": "0123456789abcdef"}})[:28]
    '20261201021705_0123456789ab_'
    """
    moment = str(document.get("datetime") or "")
    digits = re.sub(r"\D", "", moment)[:14].ljust(14, "0")
    commit_info = document.get("commit_info")
    commit = commit_info.get("id") if isinstance(commit_info, dict) else None
    short = str(commit)[:12].lower() if isinstance(commit, str) and commit else "nocommit"
    short = re.sub(r"[^0-9a-z]", "", short) or "nocommit"
    machine = document.get("machine_info")
    node = machine.get("node") if isinstance(machine, dict) else None
    digest = hashlib.sha256(f"{moment}\0{commit}\0{node}".encode()).hexdigest()[:8]
    return f"{digits}_{short}_{digest}.json"


def run_path(key: str, name: str) -> str:
    return f"{RUNS}/{key}/{name}"


def report_folder(key: str, name: str) -> str:
    """The folder of the report of the run stored as ``name`` under ``key``."""
    return f"{REPORTS}/{key}/{name.removesuffix('.json')}"


def split_run_path(path: str) -> tuple[str, str] | None:
    """(key, name) of a run file's path on the branch, or None for any other path."""
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == RUNS and BRANCH_RUN.match(parts[2]):
        return parts[1], parts[2]
    return None
