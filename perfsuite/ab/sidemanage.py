"""Runs in the controller: its handle on the two pytest processes of an A/B (started,
connected, watched, frozen and thawed, stopped). What runs inside them is
:mod:`perfsuite.ab.remote`.

Each side is ``python -m pytest`` in its revision's folder, rooted there
(:mod:`perfsuite.ab.rootdir`), in a process group of its own (in the controller's
session, so Ctrl-C at a terminal reaches the controller alone) and, on Linux, with
``PR_SET_PDEATHSIG`` so it dies with the controller even when the controller is
killed outright. A process the side started in its group then belongs to an
orphaned group, which Linux sends SIGHUP and SIGCONT: none is left stopped by
:meth:`SideProcess.freeze`. Its stdout and stderr go to a log file whose tail is
quoted when the side fails.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from perfsuite.ab.procfs import all_stopped, cpu_seconds, descendants, process_group
from perfsuite.ab.protocol import FILES_ENV, SIDE_ENV, SOCKET_ENV, Channel
from perfsuite.ab.sidefacts import FACTS_ENV
from perfsuite.ab.sidespec import SideSpec
from perfsuite.errors import CannotMeasure
from perfsuite.harness.supervisor import die_with

PAD_ENV = "PERFSUITE_AB_PAD"
#: how long a side may take to start pytest and connect (conftest imports included)
CONNECT_TIMEOUT_S = 180.0
LOG_TAIL_LINES = 15
#: an idle side is quiet when its threads use under QUIET_SHARE of one core over a window
SETTLE_WINDOW_S = 0.005
QUIET_SHARE = 0.1
SETTLE_LIMIT_S = 1.0
#: how long freezing a side may take to stop all its threads before going on anyway
FREEZE_LIMIT_S = 0.5
#: how long a side whose pytest ended early is given to write its error and exit
ENDING_S = 5.0
#: how long a side stopped before its end is given to exit on SIGTERM before SIGKILL
STOP_GRACE_S = 2.0


class SideFault(CannotMeasure):
    """A side failed: the message names the side, its revision and the error."""


def pytest_error(log: str) -> str | None:
    """pytest's own usage error in a side's ``log`` (``ERROR: file or directory not
    found: x``; for an argument pytest rejects, its reason), or None.

    >>> pytest_error("x\\nERROR: not found: /r/a.py::t\\n(no match in any of [<Module a.py>])\\n")
    'ERROR: not found: /r/a.py::t (no match in any of [<Module a.py>])'
    >>> pytest_error("ERROR: usage: p [options]\\np: error: unrecognized arguments: --x\\n")
    'ERROR: unrecognized arguments: --x'
    """
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("ERROR: usage:"):
            reasons = [rest.split(": error: ", 1)[1] for rest in lines[i:] if ": error: " in rest]
            return f"ERROR: {reasons[0]}" if reasons else line
        if line.startswith("ERROR: "):
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"{line} {after}" if after.startswith("(") else line
    return None


class SideProcess:
    """One running side: its process, its connection and its log."""

    def __init__(self, spec: SideSpec, workdir: Path, facts: Path | None = None) -> None:
        """A side whose files go in ``workdir``; ``facts``: the A/B run's folder where
        its sides keep what pytest-benchmark finds of the machine and commit
        (:mod:`perfsuite.ab.sidefacts`)."""
        self.spec, self.facts = spec, facts
        self.socket_path = workdir / f"{spec.name}.sock"
        self.log_path = workdir / f"{spec.name}.log"
        self.json_path = workdir / f"{spec.name}.json"
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: Channel | None = None
        self.frozen: set[int] = set()  # what freeze stopped: the side's group, processes
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        self._listener.listen(1)

    def start(self, pytest_args: Sequence[str], files: Sequence[str] | None = None) -> None:
        """Start the side's pytest; ``files`` (rootdir-relative) limits what it collects."""
        env = self.spec.env()
        env[SOCKET_ENV] = str(self.socket_path)
        env[SIDE_ENV] = self.spec.name
        # a padding of random length moves the initial stack, as the side's heap is
        # moved by perfsuite.ab.remote.shuffle_layout: no layout is the same twice
        env[PAD_ENV] = "x" * random.randrange(4096)
        if files is not None:
            env[FILES_ENV] = os.pathsep.join(files)
        if self.facts is not None:
            env[FACTS_ENV] = str(self.facts)
        args = [self.spec.python, "-m", "pytest", *self.spec.pytest_args(pytest_args)]
        args += [f"--benchmark-json={self.json_path}", "--benchmark-save-data"]
        # an --benchmark-autosave in the user's addopts saves here, never into their
        # storage, where a side's partial run would become the next baseline
        args.append(f"--benchmark-storage={self.json_path.with_name(f'{self.spec.name}-storage')}")
        die = die_with(os.getpid())

        def preexec() -> None:
            os.setpgid(0, 0)  # a group of its own, to signal as one (freeze, stop)
            die()  # and (Linux) SIGKILL when the controller dies

        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                args,
                cwd=self.spec.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=preexec,  # the controller runs no threads
            )

    def connect(self, deadline: float) -> None:
        """Accept the side's connection, failing fast if it exits first."""
        self._listener.settimeout(0.2)
        while self.channel is None:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                if not self.alive:
                    raise self.fault("exited before connecting", ended=True) from None
                if time.monotonic() > deadline:
                    raise self.fault(
                        "never connected: its perfsuite may predate the lockstep protocol"
                    ) from None
                continue
            conn.setblocking(True)
            self.channel = Channel(conn)
        self._listener.close()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def fault(self, problem: str, *, tail: bool = True, ended: bool = False) -> SideFault:
        """The side's failure: ``problem`` and, with ``tail``, the log's last lines; for a
        side whose pytest ``ended`` before its benches were collected (or before it
        connected), pytest's own error line in their place where its log has one (a path
        or node id not found, an argument it rejects), waited for, as pytest writes it as
        it exits."""
        if ended:
            self.wait(ENDING_S)
        message = f"{self.spec.title}: {problem}"
        code = None if self.proc is None else self.proc.poll()
        if code is not None:
            message += f" (exit status {code})"
        said = pytest_error(self.log_tail(lines=200)) if ended else None
        if said:  # a path of the side's checkout, named from the repository root
            message += f": pytest said {said.replace(f'{self.spec.root}/', '')!r}"
        log = self.log_tail() if tail and not said else ""
        if log:
            message += "\n  " + log.replace("\n", "\n  ")
        return SideFault(message)

    def settle(self, limit_s: float = SETTLE_LIMIT_S) -> bool:
        """Wait until this (idle) side's threads stop working: an asynchronous pipeline
        refills its buffers after a block. True once quiet, False at ``limit_s``."""
        if self.proc is None:
            return True
        deadline = time.monotonic() + limit_s
        before = cpu_seconds(self.proc.pid)
        while before is not None:
            time.sleep(SETTLE_WINDOW_S)
            after = cpu_seconds(self.proc.pid)
            if after is None or after - before <= SETTLE_WINDOW_S * QUIET_SHARE:
                return True
            if time.monotonic() > deadline:
                return False
            before = after
        return True

    def freeze(self, limit_s: float = FREEZE_LIMIT_S) -> bool:
        """Stop this idle side (SIGSTOP) until :meth:`thaw` (see the controller's module
        doc): its process group, and every process it started in a group of its own
        (tf.data service workers, cold-start samples). Returns once every thread of them
        is stopped: True; False when that took longer than ``limit_s`` (the block then
        starts anyway) or the side is gone."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        group = self.proc.pid
        try:
            os.killpg(group, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            return False
        self.frozen = {group}
        deadline = time.monotonic() + limit_s
        while True:
            below = descendants(group)  # again each time: one may have forked meanwhile
            for pid in below - self.frozen:
                if process_group(pid) not in (group, None):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGSTOP)
                        self.frozen.add(pid)
            if all_stopped([group, *below]):
                return self.proc.poll() is None
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)

    def thaw(self) -> None:
        """Let what :meth:`freeze` stopped run again (SIGCONT); safe when not frozen."""
        group = self.proc.pid if self.proc is not None else None
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                (os.killpg if pid == group else os.kill)(pid, signal.SIGCONT)
        self.frozen = set()

    def wait(self, timeout: float) -> bool:
        """Wait for a normal exit; True when it exited in time."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        """End the side's whole process group and reap it; safe to call twice.

        SIGTERM comes first, to the group, then SIGCONT to what was frozen: a ``git``
        the side runs (pytest-benchmark's ``git describe --dirty`` as pytest starts)
        removes the ``index.lock`` it holds on SIGTERM, where SIGKILL would leave it
        behind for every later git command in that checkout. A side still running after
        ``STOP_GRACE_S`` is killed (SIGKILL to its group, sent only while it is unreaped,
        so its pid cannot have been reused); one whose controller dies meanwhile dies
        with it (``PR_SET_PDEATHSIG``)."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            self.thaw()  # a stopped process takes its SIGTERM once continued
            if not self.wait(STOP_GRACE_S):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.wait(10)
        if self.channel is not None:
            self.channel.close()
        with contextlib.suppress(OSError):
            self._listener.close()
