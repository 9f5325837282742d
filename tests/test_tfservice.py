"""The tf.data service bench: processes and ports cleaned up, failures named, in bounded time."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perfsuite.harness import tfcluster as tfservice
from perfsuite.harness.supervisor import describe_exit
from perfsuite.options import ServiceAddress

pytest_plugins = ("pytester",)

BENCH = Path(__file__).resolve().parents[1] / "benches" / "bench_tfdata_service.py"

#: records every service process the run started, and which were alive after each call
RECORDING_CONFTEST = """
import json, os
from pathlib import Path
from typing import Any
import pytest
from perfsuite.harness import tfcluster as tfservice

ALIVE = {}

def _alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    ALIVE[item.nodeid] = [p.pid for p in tfservice.history() if _alive(p.pid)]

def pytest_unconfigure(config):
    record = {"history": [[p.name, p.pid, p.port] for p in tfservice.history()],
              "alive_after_call": ALIVE}
    Path(os.environ["TFSERVICE_RECORD"]).write_text(json.dumps(record))
"""

#: kills worker 1 with SIGKILL in the middle of the first service bench's timed rounds
KILLING_CONFTEST = """
import os, signal
from perfsuite.harness import consumer, tfcluster as tfservice

_take = consumer.BoundedConsumer.take
CALLS = [0]

def take(self, count=1):
    if self.what.startswith("tf.data service"):
        CALLS[0] += 1
        if CALLS[0] == 4:  # the explicit warm-up, one warm-up round, one timed round
            victim = next(p for p in tfservice.running_processes() if p.name == "worker 1")
            os.kill(victim.pid, signal.SIGKILL)
            victim.popen.wait(timeout=30)
    return _take(self, count)

consumer.BoundedConsumer.take = take
"""


#: stands in for ``python -m perfsuite.workloads.tfservice_worker``: same protocol, no TF
FAKE_SERVER = """
import json, os, socket, sys
role = sys.argv[3]
if role == "worker" and sys.argv[5] == "-":
    if not sys.stdin.buffer.readline():
        sys.exit(0)
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
info = {"role": role, "port": sock.getsockname()[1], "pid": os.getpid()}
print("perfsuite-tfservice-ready", json.dumps(info), flush=True)
while sys.stdin.buffer.read(4096):
    pass
"""


@pytest.fixture
def fake_python(tmp_path: Path) -> str:
    """An interpreter whose ``-m perfsuite.workloads.tfservice_worker`` is :data:`FAKE_SERVER`."""
    server = tmp_path / "fake_server.py"
    server.write_text(FAKE_SERVER)
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{server}" "$@"\n')
    python.chmod(0o755)
    return str(python)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One dataset cache for every run in this module."""
    return tmp_path_factory.mktemp("tfservice-data")


def _listening_ports() -> set[int]:
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def _assert_nothing_left(record: dict[str, Any]) -> None:
    history = record["history"]
    for name, pid, _port in history:
        assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) is still running"
    ports = [port for _name, _pid, port in history if port is not None]
    assert not set(ports) & _listening_ports()
    assert all(_refused(port) for port in ports)


def _run_bench(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    data_dir: Path,
    conftest: str,
    *args: str,
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run a copy of the bench at smoke scale with ``args`` added."""
    shutil.copy(BENCH, pytester.path / BENCH.name)
    pytester.makeini("[pytest]\npython_files = test_*.py bench_*.py\n")  # as the project's
    pytester.makeconftest(conftest)
    record = pytester.path / "record.json"
    monkeypatch.setenv("TFSERVICE_RECORD", str(record))
    result = pytester.runpytest_subprocess(
        BENCH.name,
        "--perf-scale=smoke",
        "--perf-rounds=3",
        f"--perf-data-dir={data_dir}",
        "-p",
        "no:cacheprovider",
        *args,
        timeout=300,
    )
    return result, json.loads(record.read_text())


def test_describe_exit() -> None:
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(-9) == "was killed by SIGKILL (exit status -9)"


@pytest.mark.parametrize(
    ("cores", "expected"),
    [(1, (1,)), (2, (1, 2)), (3, (1, 2, 3)), (16, (1, 2, 4, 8, 16)), (24, (1, 2, 4, 8, 16, 24))],
)
def test_local_worker_counts_are_powers_of_two_and_every_core(
    monkeypatch: pytest.MonkeyPatch, cores: int, expected: tuple[int, ...]
) -> None:
    monkeypatch.setattr(tfservice, "usable_cores", lambda: cores)
    assert tfservice.local_worker_counts() == expected


def test_cluster_that_cannot_start_is_stopped_and_named(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no tensorflow here' >&2\nexit 3\n")
    fake.chmod(0o755)
    cluster = tfservice.LocalCluster(python=str(fake), startup_timeout=30)
    with pytest.raises(
        tfservice.ServiceStartError,
        match=r"dispatcher \(pid \d+\) exited with status 3 while starting: "
        "no tensorflow here",
    ):
        cluster.ensure_workers(2)
    assert cluster.processes == []
    assert tfservice.running_processes() == []
    assert cluster.processes == []


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def test_cluster_grows_into_parked_workers_and_stops_everything(fake_python: str) -> None:
    before = len(tfservice.history())
    with tfservice.LocalCluster(python=fake_python, startup_timeout=30) as cluster:
        cluster.ensure_workers(1, spare=1)
        assert [p.name for p in cluster.serving] == ["dispatcher", "worker 1"]
        assert [(p.name, p.port) for p in cluster.parked] == [("worker 2", None)]
        cluster.ensure_workers(2)
        assert cluster.parked == []
        ports = [p.port for p in cluster.serving]
        assert None not in ports
        assert set(ports) <= _listening_ports()
        records = tfservice.history()[before:]
        assert [r.name for r in records] == ["dispatcher", "worker 1", "worker 2"]
    assert all(_gone(r.pid) for r in records)
    assert not {r.port for r in records} & _listening_ports()
    assert tfservice.running_processes() == []


def test_fewer_workers_restart_the_cluster(fake_python: str) -> None:
    with tfservice.ServicePool(max_workers=2, python=fake_python, startup_timeout=30) as pool:
        pool.connect(2)
        assert pool.cluster is not None
        first = [p.pid for p in pool.cluster.processes]
        service = pool.connect(1)
        assert service.workers == 1
        assert service.target == pool.cluster.target
        assert all(_gone(pid) for pid in first)
        assert [p.name for p in pool.cluster.processes] == ["dispatcher", "worker 1", "worker 2"]
    assert tfservice.running_processes() == []


def test_dead_worker_fails_the_wait_and_stops_the_rest(fake_python: str) -> None:
    release = threading.Event()

    def stalled() -> Iterator[int]:
        release.wait()
        yield 1

    with tfservice.ServicePool(max_workers=2, python=fake_python, startup_timeout=30) as pool:
        service = pool.connect(2)
        assert pool.cluster is not None
        procs = pool.cluster.processes
        victim = procs[2]
        assert victim.name == "worker 2"
        consumer = pool.consumer(service, stalled)
        victim.popen.send_signal(signal.SIGKILL)
        with pytest.raises(
            tfservice.ServiceError,
            match=rf"^tf\.data service worker 2 \(pid {victim.pid}, port {victim.port}\) was "
            r"killed by SIGKILL \(exit status -9\); the other tf\.data service processes "
            "were stopped$",
        ):
            consumer.take()
        assert pool.cluster is None
        assert all(_gone(p.pid) for p in procs)
        release.set()
        consumer.close()


def test_unreachable_remote_dispatcher_fails_naming_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = ServiceAddress("127.0.0.1", port)
    with (
        tfservice.ServicePool(address) as pool,
        pytest.raises(
            tfservice.ServiceError, match=f"dispatcher grpc://127.0.0.1:{port} is unreachable"
        ),
    ):
        pool.connect(None)


def test_malformed_address_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--perf-tfdata-service", "localhost:8470")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid dispatcher address 'localhost:8470'*grpc://HOST:PORT*"])


@pytest.mark.tf
def test_normal_run_leaves_no_process_or_port(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    # every worker count of one mode, and a transfer bench on the cluster they grew; the
    # benches' own run at smoke scale runs the rest
    result, record = _run_bench(
        pytester, monkeypatch, data_dir, RECORDING_CONFTEST, "-k", "parallel_epochs or float32"
    )
    workers = len(tfservice.local_worker_counts())
    result.assert_outcomes(passed=workers + 1)
    names = [name for name, _pid, _port in record["history"]]
    assert names == ["dispatcher"] + [f"worker {i}" for i in range(1, workers + 1)]
    _assert_nothing_left(record)


@pytest.mark.tf
def test_killed_worker_fails_the_bench_and_stops_the_rest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    result, record = _run_bench(
        pytester,
        monkeypatch,
        data_dir,
        RECORDING_CONFTEST + KILLING_CONFTEST,
        "-k",
        "[parallel_epochs-w1] or [distributed_epoch-w1]",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_workers?parallel_epochs-w1? _*",
            "tf.data service worker 1 (pid *, port *) was killed by SIGKILL (exit status -9);"
            " the other tf.data service processes were stopped",
        ]
    )
    alive = record["alive_after_call"]
    assert alive["bench_tfdata_service.py::test_workers[parallel_epochs-w1]"] == []
    # the next bench started a fresh cluster (with the spare workers parked again)
    names = [name for name, _pid, _port in record["history"]]
    workers = len(tfservice.local_worker_counts())
    assert names == 2 * (["dispatcher"] + [f"worker {i}" for i in range(1, workers + 1)])
    _assert_nothing_left(record)


@pytest.mark.tf
def test_unreachable_dispatcher_fails_in_bounded_time(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result, record = _run_bench(
        pytester,
        monkeypatch,
        data_dir,
        RECORDING_CONFTEST,
        f"--perf-tfdata-service=grpc://127.0.0.1:{port}",
        "-kremote",
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_workers?parallel_epochs-remote? _*",
            f"tf.data service dispatcher grpc://127.0.0.1:{port} is unreachable: *",
            "*_ test_workers?distributed_epoch-remote? _*",
            f"tf.data service dispatcher grpc://127.0.0.1:{port} is unreachable: *",
        ]
    )
    assert record["history"] == []


def test_no_service_here_is_unavailable_not_a_failure(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no tensorflow here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with tfservice.ServicePool(python=str(fake), startup_timeout=30) as pool:
        with pytest.raises(tfservice.ServiceUnavailable, match="remote variants need a dispatcher"):
            pool.connect(None)
        for _ in range(2):  # the start is tried once; later benches skip with the same reason
            with pytest.raises(
                tfservice.ServiceUnavailable,
                match=r"^the local tf\.data service could not start: .*no tensorflow here$",
            ):
                pool.connect(1)
        assert len([r for r in tfservice.history() if r.name == "dispatcher"]) >= 1
    assert tfservice.running_processes() == []
