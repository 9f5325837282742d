"""A branch of a git remote read and written without a work tree.

:class:`ResultsBranch` fetches the branch into a private ref of the local repository
(``refs/perfsuite/results/...``), reads its files from there, and publishes changes as
a commit built in a temporary index on top of the fetched tip. A push the remote
rejects (another runner pushed first) is rebuilt on the new tip and tried again, a
bounded number of times. The local repository's remotes and credentials are used as
they are, so a checkout's ``origin`` works in CI without more setup.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from perfsuite.errors import PerfsuiteError

#: who commits to the results branch
IDENTITY = {
    "GIT_AUTHOR_NAME": "perfsuite",
    "GIT_AUTHOR_EMAIL": "perfsuite@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "perfsuite",
    "GIT_COMMITTER_EMAIL": "perfsuite@users.noreply.github.com",
}
#: an index line that removes a path (``git update-index --index-info``)
_REMOVE = "0 " + "0" * 40


class PushRejected(PerfsuiteError):
    """The remote refused every attempt to push."""


#: a path on the branch -> its new content, or None to delete it
Changes = Mapping[str, "bytes | None"]


@dataclass(frozen=True)
class ResultsBranch:
    """Branch ``name`` of ``remote`` (a remote's name or a URL), used from the git
    repository holding ``repo``.

    Usage::

        branch = ResultsBranch(Path("."), "origin", "perfsuite-results")
        tip = branch.fetch()                  # None: the branch does not exist yet
        files = branch.files(tip)             # {path: blob id}
        branch.publish(lambda files: {"runs/a.json": b"{}"}, "one run")
    """

    repo: Path
    remote: str
    name: str

    @property
    def where(self) -> str:
        """The branch, for messages."""
        return f"{self.remote}/{self.name}"

    @property
    def ref(self) -> str:
        """The private local ref the branch is fetched into."""
        remote = hashlib.sha256(self.remote.encode()).hexdigest()[:12]
        return f"refs/perfsuite/results/{remote}/{self.name}"

    def _git(
        self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                ["git", *args],
                cwd=self.repo,
                input=stdin,
                capture_output=True,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})},
                check=False,
            )
        except OSError as exc:
            raise PerfsuiteError(f"git could not start ({exc}): install git") from None

    def _out(
        self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """What ``git ARGS`` printed; a one-line error naming the command where it failed."""
        proc = self._git(*args, stdin=stdin, env=env)
        if proc.returncode != 0:
            raise PerfsuiteError(f"git {args[0]} failed for {self.where}: {_last_line(proc)}")
        return proc.stdout.decode("utf-8", "replace").strip()

    def check_repository(self) -> None:
        """Refuse a folder outside any git repository, in one line."""
        if self._git("rev-parse", "--git-dir").returncode != 0:
            raise PerfsuiteError(
                f"{self.repo}: not in a git repository; the results branch is read and "
                "written through one (run in your checkout)"
            )

    def fetch(self) -> str | None:
        """Fetch the branch; its tip, or None where the remote has no such branch."""
        self.check_repository()
        fetched = self._git(
            "fetch", "--quiet", "--no-tags", self.remote, f"+refs/heads/{self.name}:{self.ref}"
        )
        if fetched.returncode == 0:
            return self._out("rev-parse", "--verify", f"{self.ref}^{{commit}}")
        listed = self._git("ls-remote", "--heads", self.remote, f"refs/heads/{self.name}")
        if listed.returncode != 0:
            raise PerfsuiteError(
                f"cannot reach the results remote {self.remote!r}: {_last_line(listed)}; "
                "check --results-remote and that this job may read it"
            )
        if listed.stdout.strip():  # the branch is there, yet the fetch failed
            raise PerfsuiteError(f"cannot fetch {self.where}: {_last_line(fetched)}")
        self._git("update-ref", "-d", self.ref)
        return None

    def files(self, tip: str | None) -> dict[str, str]:
        """Every file at ``tip`` (None: none), path -> blob id."""
        if tip is None:
            return {}
        listing = self._out("ls-tree", "-r", "-z", "--full-tree", tip)
        found = {}
        for entry in listing.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                kind, blob = meta.split()[1:3]
                if kind == "blob":
                    found[path] = blob
        return found

    def read(self, blob: str) -> bytes:
        """A file's content by its blob id."""
        proc = self._git("cat-file", "blob", blob)
        if proc.returncode != 0:
            raise PerfsuiteError(f"cannot read blob {blob} of {self.where}: {_last_line(proc)}")
        return proc.stdout

    def _commit(self, tip: str | None, changes: Changes, message: str) -> str | None:
        """A commit of ``tip``'s tree with ``changes`` applied (``tip`` itself where
        they change nothing)."""
        if not changes:
            return tip
        lines = []
        for path, content in sorted(changes.items()):
            if content is None:
                lines.append(f"{_REMOVE}\t{path}")
            else:
                blob = self._out("hash-object", "-w", "--stdin", stdin=content)
                lines.append(f"100644 {blob}\t{path}")
        with tempfile.TemporaryDirectory(prefix="perfsuite-index-") as folder:
            env = {"GIT_INDEX_FILE": str(Path(folder) / "index")}
            self._out("read-tree", *([tip] if tip else ["--empty"]), env=env)
            self._out(
                "update-index", "--index-info", stdin="\n".join(lines).encode() + b"\n", env=env
            )
            tree = self._out("write-tree", env=env)
        if tip is not None and tree == self._out("rev-parse", f"{tip}^{{tree}}"):
            return tip
        parents = ["-p", tip] if tip else []
        return self._out("commit-tree", tree, *parents, "-m", message, env=IDENTITY)

    def publish(
        self,
        plan: Callable[[dict[str, str], str | None], Changes],
        message: str,
        attempts: int = 5,
    ) -> str | None:
        """Apply ``plan(files, tip)``'s changes on the branch's tip and push them; the
        pushed commit, or None where the plan changed nothing. A rejected push is
        planned again on the new tip, up to ``attempts`` times in all, then
        :class:`PushRejected` says so in one line."""
        why = ""
        for attempt in range(1, attempts + 1):
            tip = self.fetch()
            commit = self._commit(tip, plan(self.files(tip), tip), message)
            if commit is None or commit == tip:
                return None
            pushed = self._git("push", "--quiet", self.remote, f"{commit}:refs/heads/{self.name}")
            if pushed.returncode == 0:
                self._git("update-ref", self.ref, commit)
                return commit
            why = _last_line(pushed)
            if attempt < attempts:
                time.sleep(random.uniform(0.2, 1.0) * attempt)
        raise PushRejected(f"{self.where} refused the push {attempts} times (last: {why})")


def _last_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The last line git wrote to its error stream (or its output), for a message."""
    for stream in (proc.stderr, proc.stdout):
        lines = [line.strip() for line in stream.decode("utf-8", "replace").splitlines()]
        lines = [line for line in lines if line]
        if lines:
            return lines[-1]
    return f"exit status {proc.returncode}"
