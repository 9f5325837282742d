"""The two revisions of an A/B: resolved commits, checked out as cached git worktrees.

Worktrees live in ``$XDG_CACHE_HOME/perfsuite/ab/<repo key>/<sha>`` (``~/.cache`` without
it), are reused across runs (reset and cleaned on reuse; made afresh where git cannot
reset one, as when a killed git left its ``index.lock``) and guarded by ``fcntl`` locks:
one per commit, held for the whole run, and one per repository around git's own
worktree bookkeeping. ``perfsuite ab --clean`` removes them (``git worktree remove
--force``, then ``git worktree prune``). The working tree itself (the default candidate,
uncommitted changes included) runs in the repository root.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from perfsuite.changed import git
from perfsuite.data.fsutil import cache_home, file_lock
from perfsuite.envs.pins import PIN_FILES
from perfsuite.errors import PerfsuiteError

WORKTREE = "working tree"


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``cwd`` (:func:`perfsuite.changed.git`); a failure raises one line
    unless ``check`` is off."""
    proc = git(cwd, *args)
    if check and proc.returncode != 0:
        raise PerfsuiteError(f"git {' '.join(args)} failed: {_said(proc.stderr)}")
    return proc


def _said(stderr: str) -> str:
    r"""The line of git's ``stderr`` that says what failed: its first ``fatal:`` or
    ``error:`` line (which names the file or ref at fault), else its last line.

    >>> _said("fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother"
    ...       " git process seems to be running.\nremove the file manually to continue.")
    "fatal: Unable to create '/r/.git/index.lock': File exists."
    """
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "(no output)"
    return next((line for line in lines if line.startswith(("fatal:", "error:"))), last)


def repo_root(cwd: Path) -> Path:
    """The top of the git repository holding ``cwd``."""
    proc = _git(cwd, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise PerfsuiteError(f"{cwd}: not inside a git repository (run perfsuite ab in one)")
    return Path(proc.stdout.strip()).resolve()


@dataclass(frozen=True)
class Revision:
    """One side's code: a commit (``sha``) or the working tree (``sha`` None)."""

    spec: str
    sha: str | None

    @property
    def label(self) -> str:
        if self.sha is None:
            return WORKTREE
        short = self.sha[:10]
        return short if self.sha.startswith(self.spec) else f"{self.spec} ({short})"


def resolve(root: Path, spec: str | None) -> Revision:
    """A revision by name; None is the working tree. Unknown names raise one line."""
    if spec is None:
        return Revision(WORKTREE, None)
    if spec.startswith("-"):
        raise PerfsuiteError(f"revision {spec!r}: not a git revision")
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise PerfsuiteError(
            f"unknown revision {spec!r}: not a commit in {root} (try git log --oneline)"
        )
    return Revision(spec, proc.stdout.strip())


def tree_files(root: Path, sha: str | None) -> dict[str, str]:
    """The files at the top of a revision (``sha`` None: the working tree) that may hold
    pins (:data:`perfsuite.envs.pins.PIN_FILES`): name -> text."""
    if sha is None:
        return {
            path.name: path.read_text(errors="replace")
            for pattern in PIN_FILES
            for path in sorted(root.glob(pattern))
            if path.is_file()
        }
    listed = _git(root, "ls-tree", "--name-only", sha).stdout.split("\n")
    return {
        name: _git(root, "show", f"{sha}:{name}").stdout
        for name in sorted(listed)
        if any(Path(name).match(pattern) for pattern in PIN_FILES)
    }


class WorktreeCache:
    """Cached detached worktrees of one repository (see the module doc)."""

    def __init__(self, root: Path, base: Path | None = None) -> None:
        self.root = root
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        self.folder = (base or cache_home("ab")) / f"{root.name}-{digest}"

    def path(self, sha: str) -> Path:
        return self.folder / sha

    def _lock(self, sha: str | None = None) -> contextlib.AbstractContextManager[None]:
        """The lock of the worktree of ``sha``, or (None) the one around git's worktree
        bookkeeping in this repository; waiting for it is said once."""
        path = self.folder / f"{sha or '.git'}.lock"
        what = f"worktree {sha[:10]}" if sha else "the worktree cache"
        return file_lock(path, f"perfsuite ab: waiting for {what} ({path}), held by another run")

    @contextlib.contextmanager
    def checkout(self, sha: str) -> Iterator[Path]:
        """The worktree of ``sha``, fresh and clean, locked for the caller's block."""
        with self._lock(sha):
            path = self.path(sha)
            with self._lock():
                if not self._reuse(path, sha):
                    self._remove(path)
                    try:
                        _git(self.root, "worktree", "add", "--detach", "--force", str(path), sha)
                    except BaseException:  # interrupted or failed: leave nothing half-made
                        self._remove(path)
                        raise
            yield path

    def _reuse(self, path: Path, sha: str) -> bool:
        if not (path / ".git").is_file():
            return False
        head = _git(path, "rev-parse", "HEAD", check=False)
        top = _git(path, "rev-parse", "--show-toplevel", check=False)
        if head.returncode or top.returncode or Path(top.stdout.strip()).resolve() != path:
            return False
        try:
            if head.stdout.strip() != sha:
                _git(path, "checkout", "--detach", "--force", "--quiet", sha)
            _git(path, "reset", "--hard", "--quiet", sha)
            _git(path, "clean", "-ffdxq")
        except PerfsuiteError:  # e.g. an index.lock a killed git left: made afresh
            return False
        return True

    def _remove(self, path: Path) -> None:
        """Remove a worktree, also one git left locked or half-made (an interrupted add)."""
        _git(self.root, "worktree", "unlock", str(path), check=False)
        _git(self.root, "worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
        _git(self.root, "worktree", "prune", check=False)

    def clean(self) -> list[Path]:
        """Remove every cached worktree of this repository; returns what was removed."""
        removed: list[Path] = []
        if not self.folder.is_dir():
            _git(self.root, "worktree", "prune", check=False)
            return removed
        for path in sorted(p for p in self.folder.iterdir() if p.is_dir()):
            with self._lock(path.name), self._lock():
                self._remove(path)
            removed.append(path)
        with self._lock():
            _git(self.root, "worktree", "prune", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
        return removed
