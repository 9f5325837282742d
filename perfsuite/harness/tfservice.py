"""A tf.data service for benches: local dispatcher and worker processes, or a remote dispatcher.

Local mode starts ``python -m perfsuite.workloads.tfservice_worker dispatcher|worker``
as child processes (no shell), each on a port the OS picks and reports back on a
``perfsuite-tfservice-ready`` line. Clients and workers are given loopback addresses
only; tf.data's gRPC servers offer no bind address, so the ports are open while the
bench runs and closed when it ends. Every process started here is stopped, SIGTERM
then SIGKILL after a bounded wait, when its cluster is stopped, when the interpreter
exits (``atexit``), and, however this process ends, when the child sees its stdin
close. Children see no GPU: preprocessing workers are CPU work.

Nothing here imports TensorFlow: the servers run in the children, and the pipelines
are built by the bench with :mod:`perfsuite.workloads.tfservice_worker`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from perfsuite.bench.machine import usable_cpus as usable_cores
from perfsuite.errors import PerfsuiteError
from perfsuite.harness.closing import Closing
from perfsuite.options import ServiceAddress

ENTRY_POINT = "perfsuite.workloads.tfservice_worker"
READY = "perfsuite-tfservice-ready"
LOOPBACK = "127.0.0.1"

#: seconds a server process may take to import TensorFlow and start serving
STARTUP_TIMEOUT = 120.0
#: seconds one call may wait for its batches before the bench fails
BATCH_TIMEOUT = 60.0
#: seconds to connect to a remote dispatcher before calling it unreachable
PROBE_TIMEOUT = 5.0
#: seconds a process gets after SIGTERM before SIGKILL
STOP_GRACE = 5.0


class ServiceError(PerfsuiteError):
    """The tf.data service could not be started, reached, or kept running."""


class ServiceStartError(ServiceError):
    """A local dispatcher or worker did not start."""


class ServiceLost(ServiceError):
    """A service process exited while it was in use."""


def local_worker_counts() -> tuple[int, ...]:
    """The local worker counts to measure: powers of two from 1, and the number of cores.

    On 2 cores: (1, 2); on 16: (1, 2, 4, 8, 16); on 24: (1, 2, 4, 8, 16, 24). Every count
    from 1 to a GPU runner's 64 cores would be 128 variants for a curve that powers of
    two draw as well.
    """
    cores = usable_cores()
    counts = {cores}
    n = 1
    while n < cores:
        counts.add(n)
        n *= 2
    return tuple(sorted(counts))


def describe_exit(returncode: int) -> str:
    """``exited with status 1``, or ``was killed by SIGKILL (exit status -9)``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit status {returncode})"
    return f"exited with status {returncode}"


@dataclass(frozen=True)
class ProcessRecord:
    """A service process this interpreter started: what, which pid, which port."""

    name: str
    pid: int
    port: int | None


@dataclass
class ServiceProcess:
    """One running server process (the dispatcher, or worker N)."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def describe(self) -> str:
        where = f", port {self.port}" if self.port is not None else ""
        return f"tf.data service {self.name} (pid {self.pid}{where})"

    def last_log_line(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        useful = [line.strip() for line in lines if line.strip()]
        return useful[-1][:300] if useful else ""


_HISTORY: list[ServiceProcess] = []


def history() -> tuple[ProcessRecord, ...]:
    """Every service process started in this interpreter, in order (for reports and tests)."""
    return tuple(ProcessRecord(p.name, p.pid, p.port) for p in _HISTORY)


class LocalCluster(Closing):
    """A dispatcher and workers as child processes on loopback; :meth:`stop` ends all of them.

    >>> with LocalCluster() as cluster:
    ...     cluster.ensure_workers(2)  # starts the dispatcher too
    ...     ds = ds.apply(tf.data.experimental.service.distribute(
    ...         "parallel_epochs", cluster.target))
    """

    def __init__(
        self, *, startup_timeout: float = STARTUP_TIMEOUT, python: str = sys.executable
    ) -> None:
        self.startup_timeout = startup_timeout
        self.python = python
        self.dispatcher: ServiceProcess | None = None
        self.workers: list[ServiceProcess] = []
        self.parked: list[ServiceProcess] = []
        self._logdir: Path | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> ServiceAddress:
        if self.dispatcher is None or self.dispatcher.port is None:
            raise ServiceError("the local tf.data service is not running")
        return ServiceAddress(LOOPBACK, self.dispatcher.port)

    @property
    def target(self) -> str:
        return self.address.target

    @property
    def serving(self) -> list[ServiceProcess]:
        """The dispatcher and the workers registered with it."""
        return ([self.dispatcher] if self.dispatcher is not None else []) + self.workers

    @property
    def processes(self) -> list[ServiceProcess]:
        """Every process of this cluster, parked workers included."""
        return self.serving + self.parked

    def ensure_workers(self, count: int, *, spare: int = 0) -> None:
        """Start the dispatcher if needed and workers until ``count`` serve; never stops any.

        Workers import TensorFlow while the dispatcher starts and read its address from
        stdin once it serves. ``spare`` more are started but parked before registering
        (idle, not part of the service), so growing the cluster later takes a moment
        instead of a TensorFlow import. Raises :class:`ServiceStartError` (and stops every
        process) when one does not start within the startup timeout.
        """
        if count < 1:
            raise ValueError(f"a tf.data service needs at least one worker, got {count}")
        self.check()
        if self._logdir is None:
            _LIVE.add(self)
            self._logdir = Path(tempfile.mkdtemp(prefix="perfsuite-tfservice-"))
        starting = self.dispatcher is None
        try:
            if starting:
                self.dispatcher = self._spawn("dispatcher", ["dispatcher", "--port", "0"])
            while len(self.workers) + len(self.parked) < count + spare:
                number = len(self.workers) + len(self.parked) + 1
                self.parked.append(self._spawn(f"worker {number}", ["worker", "--dispatcher", "-"]))
            new = self.parked[: max(0, count - len(self.workers))]
            del self.parked[: len(new)]
            self.workers.extend(new)
            deadline = time.monotonic() + self.startup_timeout
            if starting:
                assert self.dispatcher is not None
                self.dispatcher.port = _read_ready(self.dispatcher, deadline)
            line = f"{LOOPBACK}:{self.address.port}\n".encode()
            for proc in new:
                assert proc.popen.stdin is not None
                try:
                    proc.popen.stdin.write(line)
                    proc.popen.stdin.flush()
                except OSError:
                    pass  # it exited: _read_ready says how
            for proc in new:
                proc.port = _read_ready(proc, deadline)
        except ServiceError:
            self.stop()
            raise

    def check(self) -> None:
        """Raise :class:`ServiceLost` naming the first serving process that has exited."""
        for proc in self.serving:
            code = proc.popen.poll()
            if code is not None:
                raise ServiceLost(f"{proc.describe()} {describe_exit(code)}")

    def close(self) -> None:
        """Stop every process (what ``with`` does on exit)."""
        self.stop()

    def stop(self) -> None:
        """Stop every process: close stdin, SIGTERM, wait, SIGKILL. Safe to call twice."""
        with self._lock:
            procs = self.processes
            self.dispatcher, self.workers, self.parked = None, [], []
            stop_processes([p.popen for p in procs])
            for proc in procs:
                if proc.popen.stdout is not None:
                    proc.popen.stdout.close()
            if self._logdir is not None:
                shutil.rmtree(self._logdir, ignore_errors=True)
                self._logdir = None
            _LIVE.discard(self)

    def _spawn(self, name: str, args: list[str]) -> ServiceProcess:
        assert self._logdir is not None
        log = self._logdir / (name.replace(" ", "-") + ".log")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
        with log.open("wb") as stderr:
            try:
                popen = subprocess.Popen(
                    [self.python, "-m", ENTRY_POINT, *args],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    env=env,
                    close_fds=True,
                )
            except OSError as exc:
                raise ServiceStartError(f"cannot run {self.python}: {exc}") from None
        proc = ServiceProcess(name, popen, log)
        _HISTORY.append(proc)
        return proc


def _read_ready(proc: ServiceProcess, deadline: float) -> int:
    stream = proc.popen.stdout
    assert stream is not None
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while True:
            for line in buffer.split(b"\n")[:-1]:
                text = line.decode(errors="replace")
                if text.startswith(READY + " "):
                    return int(json.loads(text[len(READY) + 1 :])["port"])
            buffer = buffer.rsplit(b"\n", 1)[-1]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServiceStartError(
                    f"{proc.describe()} did not start within the startup timeout" + _log_hint(proc)
                )
            if selector.select(min(remaining, 0.5)):
                chunk = os.read(stream.fileno(), 65536)
                if chunk:
                    buffer += chunk
                    continue
                try:
                    how = describe_exit(proc.popen.wait(timeout=STOP_GRACE))
                except subprocess.TimeoutExpired:
                    how = "closed its output"
                raise ServiceStartError(f"{proc.describe()} {how} while starting" + _log_hint(proc))


def _log_hint(proc: ServiceProcess) -> str:
    line = proc.last_log_line()
    return f": {line}" if line else ""


def stop_processes(popens: list[subprocess.Popen[bytes]], grace: float = STOP_GRACE) -> None:
    """Close stdin and SIGTERM each process, wait up to ``grace`` s in all, SIGKILL the rest."""
    for popen in popens:
        if popen.stdin is not None:
            with contextlib.suppress(OSError):
                popen.stdin.close()
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.terminate()
    deadline = time.monotonic() + grace
    for popen in popens:
        try:
            popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


_LIVE: set[LocalCluster] = set()


def running_processes() -> list[ServiceProcess]:
    """The service processes of every cluster not yet stopped."""
    return [proc for cluster in list(_LIVE) for proc in cluster.processes]


@atexit.register
def stop_all() -> None:
    """Stop every cluster still running (registered with ``atexit``)."""
    for cluster in list(_LIVE):
        cluster.stop()


def probe(address: ServiceAddress, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise :class:`ServiceError` naming ``address`` unless a TCP connection opens in time."""
    host = address.host.strip("[]")
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, address.port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=connect, name="tfservice-probe", daemon=True)
    thread.start()
    thread.join(timeout * 2)  # name resolution has no timeout of its own
    error = outcome[0] if outcome else TimeoutError(f"no answer within {timeout * 2:.0f} s")
    if error is not None:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise ServiceError(
            f"tf.data service dispatcher {address.target} is unreachable: {reason} (check "
            "--perf-tfdata-service and that the dispatcher is running)"
        )


def _fail(message: str) -> NoReturn:
    raise pytest.fail.Exception(message, pytrace=False) from None


class BoundedConsumer(Closing):
    """Pulls batches on a helper thread, so a stalled or broken pipeline fails in bounded time.

    :meth:`take` waits for its batches while calling ``watch`` every ``poll`` seconds (it
    raises to abort, e.g. when a worker process died) and fails the bench after
    ``timeout`` seconds. A helper thread left blocked in the pipeline is a daemon and is
    abandoned. ``describe_error`` turns the pipeline's own errors into one-line failures.

    >>> with BoundedConsumer(lambda: iter(ds), what="tf.data service") as consumer:
    ...     perf.measure(lambda: consumer.take(4), items=4 * batch)
    """

    def __init__(
        self,
        open_iterator: Callable[[], Iterator[Any]],
        *,
        what: str,
        watch: Callable[[], None] | None = None,
        timeout: float = BATCH_TIMEOUT,
        poll: float = 0.05,
        describe_error: Callable[[BaseException], str] | None = None,
    ) -> None:
        self.what = what
        self.timeout = timeout
        self.poll = poll
        self._open = open_iterator
        self._watch = watch
        self._describe_error = describe_error
        self._requests: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._broken = False
        self._thread = threading.Thread(target=self._run, name="bounded-consumer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        iterator: Iterator[Any] | None = None
        while (count := self._requests.get()) is not None:
            try:
                if iterator is None:
                    iterator = self._open()
                last = None
                for _ in range(count):
                    last = next(iterator)
                self._results.put((True, last))
            except BaseException as exc:
                self._results.put((False, exc))
        del iterator

    def take(self, count: int = 1) -> Any:
        """Pull ``count`` batches and return the last; ``watch`` runs before and after too."""
        if self._broken:
            _fail(f"{self.what}: the consumer was abandoned after an earlier failure")
        self._check()
        self._requests.put(count)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                ok, value = self._results.get(timeout=self.poll)
            except queue.Empty:
                self._check()
                if time.monotonic() > deadline:
                    self._broken = True
                    _fail(f"{self.what}: no batch within {self.timeout:g} s")
                continue
            if not ok:
                if self._describe_error is not None and not isinstance(
                    value, pytest.fail.Exception | pytest.skip.Exception
                ):
                    _fail(f"{self.what}: {self._describe_error(value)}")
                raise value
            self._check()  # batches buffered before a worker died must not hide its death
            return value

    def _check(self) -> None:
        if self._watch is None:
            return
        try:
            self._watch()
        except BaseException:
            self._broken = True
            raise

    def close(self, timeout: float = 10.0) -> None:
        """Release the iterator (on its own thread); a stuck thread is abandoned."""
        self._requests.put(None)
        if not self._broken:
            self._thread.join(timeout)


@dataclass(frozen=True)
class Service:
    """A dispatcher to distribute to: its target, where it runs, and its worker count."""

    target: str
    location: str  # "local" or "remote"
    workers: int | None  # None: a remote dispatcher's workers are not ours to count


class ServicePool(Closing):
    """The session's tf.data service: a remote dispatcher, or a local cluster sized on demand.

    A local cluster grows as benches ask for more workers (the processes of up to
    ``max_workers`` start, parked, with the first cluster) and restarts when one asks for
    fewer. Startup failures skip (no ``--perf-tfdata-service`` was given); an unreachable
    remote dispatcher, or a local process that dies, fails the bench with a one-line reason.
    A remote dispatcher's workers read the dataset at the paths this machine uses, so it
    must be on a filesystem they share.

    >>> with ServicePool(perf_settings.tfdata_service, max_workers=2) as pool:
    ...     service = pool.connect(workers=1)
    """

    def __init__(
        self,
        remote: ServiceAddress | None = None,
        *,
        max_workers: int = 1,
        startup_timeout: float = STARTUP_TIMEOUT,
        batch_timeout: float = BATCH_TIMEOUT,
        python: str = sys.executable,
    ) -> None:
        self.remote = remote
        self.python = python
        self.max_workers = max_workers
        self.startup_timeout = startup_timeout
        self.batch_timeout = batch_timeout
        self.cluster: LocalCluster | None = None
        self._remote_error: str | None = None
        self._remote_checked = False
        self._start_error: str | None = None

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def connect(self, workers: int | None) -> Service:
        """A service with ``workers`` local workers, or the remote one (``workers=None``)."""
        if self.remote is not None:
            if not self._remote_checked:
                self._remote_checked = True
                try:
                    probe(self.remote)
                except ServiceError as exc:
                    self._remote_error = str(exc)
            if self._remote_error is not None:
                _fail(self._remote_error)
            return Service(self.remote.target, "remote", None)
        if workers is None:
            pytest.skip("no --perf-tfdata-service given: remote variants need a dispatcher")
        if self._start_error is not None:
            pytest.skip(self._start_error)
        self._check()
        if self.cluster is not None and len(self.cluster.workers) > workers:
            self.close()
        if self.cluster is None:
            self.cluster = LocalCluster(startup_timeout=self.startup_timeout, python=self.python)
        try:
            self.cluster.ensure_workers(workers, spare=max(0, self.max_workers - workers))
        except ServiceStartError as exc:
            self.close()
            self._start_error = f"the local tf.data service could not start: {exc}"
            pytest.skip(self._start_error)
        except ServiceLost as exc:
            self.close()
            _fail(f"{exc}; the other tf.data service processes were stopped")
        return Service(self.cluster.target, "local", workers)

    def _check(self) -> None:
        if self.cluster is None:
            return
        try:
            self.cluster.check()
        except ServiceLost as exc:
            self.close()
            _fail(f"{exc}; the other tf.data service processes were stopped")

    def consumer(
        self, service: Service, open_iterator: Callable[[], Iterator[Any]]
    ) -> BoundedConsumer:
        """A :class:`BoundedConsumer` that fails the bench as soon as a local process dies."""
        return BoundedConsumer(
            open_iterator,
            what=f"tf.data service {service.target}",
            watch=self._check,
            timeout=self.batch_timeout,
            describe_error=lambda exc: f"{type(exc).__name__}: {_first_line(exc)}",
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
