"""A tf.data service for benches: local dispatcher and worker processes, or a remote dispatcher.

Local mode starts ``python -m perfsuite.workloads.tfservice_worker dispatcher|worker``
as supervised children (:mod:`perfsuite.harness.supervisor`), each on a port the OS
picks and reports back on a ``perfsuite-tfservice-ready`` line. Clients and workers are
given loopback addresses only; tf.data's gRPC servers offer no bind address, so the
ports are open while the bench runs and closed when it ends. Every process started here
is stopped when its cluster is stopped, when the interpreter exits, and, however this
process ends, when the child sees its stdin close or its parent die. Children see no
GPU: preprocessing workers are CPU work.

Nothing here imports TensorFlow or pytest: the servers run in the children, the
pipelines are built by the bench with :mod:`perfsuite.workloads.tfservice_worker`, and
the bench turns :class:`ServiceUnavailable` into a skip.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perfsuite.bench.machine import usable_cpus as usable_cores
from perfsuite.errors import PerfsuiteError
from perfsuite.harness.closing import Closing
from perfsuite.harness.consumer import BATCH_TIMEOUT, BoundedConsumer
from perfsuite.harness.probe import unreachable
from perfsuite.harness.supervisor import (
    Child,
    ChildError,
    ChildExited,
    ChildTimeout,
    describe_exit,
    live_children,
    stop_children,
)

if TYPE_CHECKING:
    from perfsuite.options import ServiceAddress

ENTRY_POINT = "perfsuite.workloads.tfservice_worker"
READY = "perfsuite-tfservice-ready"
LOOPBACK = "127.0.0.1"

#: seconds a server process may take to import TensorFlow and start serving
STARTUP_TIMEOUT = 120.0


class ServiceError(PerfsuiteError):
    """The tf.data service could not be started, reached, or kept running."""


class ServiceStartError(ServiceError):
    """A local dispatcher or worker did not start."""


class ServiceLost(ServiceError):
    """A service process exited while it was in use."""


class ServiceUnavailable(ServiceError):
    """No service can be had here (none given, or the local one cannot start): skip the bench."""


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


@dataclass(frozen=True)
class ProcessRecord:
    """A service process this interpreter started: what, which pid, which port."""

    name: str
    pid: int
    port: int | None


class ServiceProcess(Child):
    """One running server process (the dispatcher, or worker N)."""

    port: int | None = None

    def describe(self) -> str:
        where = f", port {self.port}" if self.port is not None else ""
        return f"tf.data service {self.name} (pid {self.pid}{where})"

    def last_log_line(self) -> str:
        lines = self.stderr_lines()
        return lines[-1][:300] if lines else ""


_HISTORY: list[ServiceProcess] = []


def history() -> tuple[ProcessRecord, ...]:
    """Every service process started in this interpreter, in order (for reports and tests)."""
    return tuple(ProcessRecord(p.name, p.pid, p.port) for p in _HISTORY)


def running_processes() -> list[ServiceProcess]:
    """The service processes not yet stopped."""
    return [child for child in live_children() if isinstance(child, ServiceProcess)]


class LocalCluster(Closing):
    """A dispatcher and workers as child processes on loopback; :meth:`stop` ends all of them.

    Usage::

        with LocalCluster() as cluster:
            cluster.ensure_workers(2)  # starts the dispatcher too
            ds = ds.apply(tf.data.experimental.service.distribute(
                "parallel_epochs", cluster.target))
    """

    def __init__(
        self, *, startup_timeout: float = STARTUP_TIMEOUT, python: str = sys.executable
    ) -> None:
        self.startup_timeout = startup_timeout
        self.python = python
        self.dispatcher: ServiceProcess | None = None
        self.workers: list[ServiceProcess] = []
        self.parked: list[ServiceProcess] = []
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The dispatcher's port on loopback."""
        if self.dispatcher is None or self.dispatcher.port is None:
            raise ServiceError("the local tf.data service is not running")
        return self.dispatcher.port

    @property
    def target(self) -> str:
        """The ``grpc://127.0.0.1:PORT`` form tf.data takes."""
        return f"grpc://{LOOPBACK}:{self.port}"

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
            for proc in new:
                proc.send(f"{LOOPBACK}:{self.port}")  # one that exited: _read_ready
            for proc in new:
                proc.port = _read_ready(proc, deadline)
        except ServiceError:
            self.stop()
            raise

    def check(self) -> None:
        """Raise :class:`ServiceLost` naming the first serving process that has exited."""
        for proc in self.serving:
            code = proc.poll()
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
            stop_children(procs)

    def _spawn(self, name: str, args: list[str]) -> ServiceProcess:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
        try:
            proc = ServiceProcess(
                [self.python, "-m", ENTRY_POINT, *args], name=name, marker=READY, env=env
            )
        except ChildError as exc:
            raise ServiceStartError(str(exc)) from None
        _HISTORY.append(proc)
        return proc


def _read_ready(proc: ServiceProcess, deadline: float) -> int:
    try:
        message = proc.expect(deadline - time.monotonic())
        return int(message["port"])
    except ChildTimeout:
        problem = "did not start within the startup timeout"
    except ChildExited as exc:
        how = "closed its output" if exc.returncode is None else describe_exit(exc.returncode)
        problem = f"{how} while starting"
    except (ChildError, KeyError, TypeError, ValueError):
        problem = "sent an unreadable ready line"
    line = proc.last_log_line()
    raise ServiceStartError(f"{proc.describe()} {problem}" + (f": {line}" if line else ""))


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
    fewer. A local cluster that cannot start raises :class:`ServiceUnavailable` (the bench
    skips: no ``--perf-tfdata-service`` was given); an unreachable remote dispatcher, or a
    local process that dies, raises :class:`ServiceError` with a one-line reason. A remote
    dispatcher's workers read the dataset at the paths this machine uses, so it must be on
    a filesystem they share.

    Usage::

        with ServicePool(perf_settings.tfdata_service, max_workers=2) as pool:
            service = pool.connect(workers=1)
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
                reason = unreachable(self.remote.host, self.remote.port)
                if reason is not None:
                    self._remote_error = (
                        f"tf.data service dispatcher {self.remote.target} is unreachable: "
                        f"{reason} (check --perf-tfdata-service and that the dispatcher is "
                        "running)"
                    )
            if self._remote_error is not None:
                raise ServiceError(self._remote_error)
            return Service(self.remote.target, "remote", None)
        if workers is None:
            raise ServiceUnavailable(
                "no --perf-tfdata-service given: remote variants need a dispatcher"
            )
        if self._start_error is not None:
            raise ServiceUnavailable(self._start_error)
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
            raise ServiceUnavailable(self._start_error) from None
        except ServiceLost as exc:
            self.close()
            raise ServiceError(f"{exc}; the other tf.data service processes were stopped") from None
        return Service(self.cluster.target, "local", workers)

    def _check(self) -> None:
        if self.cluster is None:
            return
        try:
            self.cluster.check()
        except ServiceLost as exc:
            self.close()
            raise ServiceError(f"{exc}; the other tf.data service processes were stopped") from None

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
