"""One supervisor for every child process perfsuite starts (cold-start samples, tf.data servers).

Parent side: :class:`Child` starts an argument list (never a shell) in a session of its
own, reads the child's protocol lines (``MARKER {json}`` on stdout) on a helper thread,
keeps its stderr in an unnamed file, and stops it for sure::

    with Child([sys.executable, "-m", "some.server"], name="server", marker="some-ready") as child:
        port = child.expect(timeout=60)["port"]   # the child's "ready line"
        ...                                       # stopped on success, failure or Ctrl-C

A child ends with its parent however the parent ends: :meth:`Child.close` (and ``with``)
sends SIGTERM to the child's process group, then SIGKILL after a bounded wait, and kills
what is left of the group; every child still running when the interpreter exits
(Ctrl-C included) is stopped by an ``atexit`` hook; and on Linux the kernel sends the
child SIGKILL when the parent dies (``PR_SET_PDEATHSIG``, set before the child runs), so a
parent killed with SIGKILL leaves no orphan. ``PR_SET_PDEATHSIG`` follows the *thread*
that started the child: start children from a thread that outlives them (the main one).

Child side: :func:`open_channel` keeps the protocol on a private copy of stdout and sends
everything else the process prints (from Python or C) to stderr; :func:`reply` writes one
protocol line.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from perfsuite.errors import PerfsuiteError
from perfsuite.harness.closing import Closing

#: seconds a child gets after SIGTERM before SIGKILL
STOP_GRACE = 5.0
STDERR_TAIL_LINES = 6
_PR_SET_PDEATHSIG = 1


class ChildError(PerfsuiteError):
    """A child process could not be started, or broke the protocol."""


class ChildExited(ChildError):
    """The child closed its output (it exited) before the line that was awaited."""

    def __init__(self, message: str, returncode: int | None) -> None:
        super().__init__(message)
        self.returncode = returncode


class ChildTimeout(ChildError):
    """No protocol line came within the time allowed."""


def describe_exit(returncode: int) -> str:
    """``exited with status 1``, or ``was killed by SIGKILL (exit status -9)``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit status {returncode})"
    return f"exited with status {returncode}"


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _prctl()


def die_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: SIGKILL this child when ``parent`` dies, or now if it already has."""
    prctl = _PRCTL

    def preexec() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


_LIVE: set[Child] = set()


def live_children() -> list[Child]:
    """Every child started in this interpreter and not yet stopped."""
    return list(_LIVE)


class Child(Closing):
    """One supervised child process: started without a shell, stopped with its process group.

    ``marker`` names the protocol: each stdout line ``MARKER {json object}`` is a message
    for :meth:`expect`; other stdout lines are dropped.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        marker: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self.name = name
        self.marker = marker
        self.argv = [str(arg) for arg in argv]
        # A file, not a pipe: a chatty stderr can never fill a pipe buffer and block the child.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr_text: str | None = None
        self._messages: queue.SimpleQueue[dict[str, Any] | str | None] = queue.SimpleQueue()
        try:
            self.popen = subprocess.Popen(  # an argument list, never a shell
                self.argv,
                shell=False,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                close_fds=True,
                start_new_session=True,
                preexec_fn=die_with(os.getpid()),
            )
        except OSError as exc:
            self._stderr.close()
            raise ChildError(f"cannot run {self.argv[0]}: {exc}") from None
        _LIVE.add(self)
        self._reader = threading.Thread(target=self._read, name=f"{name} reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def running(self) -> bool:
        """Whether the child process is still alive."""
        return self.popen.poll() is None

    def poll(self) -> int | None:
        """The exit status, or None while the child runs."""
        return self.popen.poll()

    def _read(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        prefix = self.marker + " "
        with contextlib.suppress(OSError, ValueError):
            for raw in stream:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line.startswith(prefix):
                    continue
                try:
                    message = json.loads(line[len(prefix) :])
                except ValueError:
                    message = None
                self._messages.put(message if isinstance(message, dict) else line)
        self._messages.put(None)

    def expect(self, timeout: float, *, exit_timeout: float = STOP_GRACE) -> dict[str, Any]:
        """The next protocol message, waiting up to ``timeout`` seconds.

        Raises :class:`ChildTimeout` when none comes in time, :class:`ChildExited` when the
        child closes its output first (waiting up to ``exit_timeout`` for its exit status),
        and :class:`ChildError` for a protocol line that is not a JSON object.
        """
        try:
            message = self._messages.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise ChildTimeout(f"{self.name}: no reply within {timeout:g} s") from None
        if message is None:
            self._messages.put(None)  # every later call sees the end of output too
            try:
                code: int | None = self.popen.wait(timeout=exit_timeout)
            except subprocess.TimeoutExpired:
                code = None
            how = "closed its output" if code is None else describe_exit(code)
            raise ChildExited(f"{self.name} {how}", code)
        if isinstance(message, str):
            raise ChildError(f"{self.name}: unreadable reply {message!r}")
        return message

    def send(self, line: str) -> None:
        """Write one line to the child's stdin (a child that exited is reported by ``expect``)."""
        stdin = self.popen.stdin
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def stderr_text(self) -> str:
        """Everything the child wrote to stderr (kept after :meth:`close`)."""
        if self._stderr_text is not None:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stderr_lines(self) -> list[str]:
        return [line.strip() for line in self.stderr_text().splitlines() if line.strip()]

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The last non-blank stderr lines joined by `` | ``, or ``(no stderr)``."""
        kept = self.stderr_lines()[-lines:]
        return " | ".join(kept) if kept else "(no stderr)"

    def close(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after :data:`STOP_GRACE`); idempotent."""
        stop_children([self])

    def _terminate(self) -> None:
        if self.popen.stdin is not None:
            with contextlib.suppress(OSError):
                self.popen.stdin.close()
        if self.popen.returncode is None:
            self._signal_group(signal.SIGTERM)

    def _signal_group(self, sig: signal.Signals) -> None:
        # Only while the child is unreaped: until then its pid is its process group's id.
        if self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, sig)

    def _exited(self) -> bool:
        """Whether the child has exited, without reaping it (its group id stays ours)."""
        if self.popen.returncode is not None:
            return True
        try:
            return (
                os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                is not None
            )
        except ChildProcessError:
            return True

    def _finish(self, deadline: float) -> None:
        while not self._exited() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._signal_group(signal.SIGKILL)  # the child if it is still running, and what it left
        self.popen.wait()
        if self.popen.stdout is not None:
            with contextlib.suppress(OSError):
                self.popen.stdout.close()
        self._reader.join(timeout=5)
        if self._stderr_text is None:
            self._stderr_text = self.stderr_text()
            self._stderr.close()
        _LIVE.discard(self)


def stop_children(children: Iterable[Child], grace: float = STOP_GRACE) -> None:
    """Close stdin and SIGTERM each child, wait up to ``grace`` s in all, then SIGKILL the rest."""
    pending = [child for child in children if child in _LIVE]
    for child in pending:
        child._terminate()
    deadline = time.monotonic() + grace
    for child in pending:
        child._finish(deadline)


@atexit.register
def stop_all() -> None:
    """Stop every child still running (registered with ``atexit``: normal exit and Ctrl-C)."""
    stop_children(list(_LIVE))


# --- the child side


def open_channel() -> IO[str]:
    """Keep stdout's file for protocol lines and send fd 1 (and ``print``) to stderr."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def reply(channel: IO[str], marker: str, **values: Any) -> None:
    """Write one protocol line, ``MARKER {json}``, and flush it."""
    channel.write(f"{marker} {json.dumps(values)}\n")
    channel.flush()
