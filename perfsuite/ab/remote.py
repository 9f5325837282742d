"""Runs inside a side's pytest process: the side of ``perfsuite ab``'s lockstep.

The controller (:mod:`perfsuite.ab.sidemanage`) starts each side's pytest with
``PERFSUITE_AB_SOCKET`` and ``PERFSUITE_AB_SIDE`` set; perfsuite's plugin then
registers :class:`LockstepSide` under :data:`~perfsuite.ab.protocol.SIDE_PLUGIN`, which
speaks the side's messages of :mod:`perfsuite.ab.protocol`. It runs exactly the
benches of the controller's ``plan``; inside :meth:`perfsuite.bench.measure.Perf.measure`
(which finds it through the plugin manager) and pytest-benchmark's own ``benchmark(fn)``
and ``benchmark.pedantic(...)`` (:mod:`perfsuite.ab.remote_benchmark`) it times blocks
of rounds only when told to, so only one side ever runs timed work, and on ``done``
puts every round into pytest-benchmark's stats, so ``--benchmark-json`` saves them as
usual. It reports each bench's failure or skip, so the controller never waits forever.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import socket
import statistics
import time
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from perfsuite.ab.isolate import unimported
from perfsuite.ab.protocol import (
    FILES_ENV,
    PROTOCOL,
    SIDE_ENV,
    SIDE_PLUGIN,
    SOCKET_ENV,
    Channel,
    ProtocolError,
)
from perfsuite.ab.remote_benchmark import FIXTURE_NAME, route
from perfsuite.ab.sidefacts import keep_facts

#: chooses a round's calls from a runner of one round of that many calls (its seconds)
Calibration = Callable[[Callable[[int], float]], int]

#: allocations of random sizes, kept until the next draw (:func:`shuffle_layout`)
_spacers: list[object] = []


def shuffle_layout(rng: random.Random) -> None:
    """Free the last draw's spacers and allocate memory of new random sizes, so what the
    benches allocate next lies at new offsets.

    A bench's speed can follow where its buffers lie (``tools/validation/process_offsets.py``);
    drawn before every block, the layout is noise among the pairs of blocks, which the
    paired interval spans, not an offset one process holds for its life. What a bench
    built before the draw keeps its layout: the fresh pairs of ``--confirm`` judge that."""
    _spacers.clear()
    _spacers.append(bytearray(rng.randrange(0, 1 << 17, 16)))  # malloc's heap
    _spacers.extend(bytes(rng.randrange(1, 512)) for _ in range(rng.randrange(4096)))  # pools


#: pytest-xdist's options that spread a session over workers, each with its "off" value
#: (``tx`` a list: each session gets its own copy)
XDIST_OFF: dict[str, object] = {"numprocesses": 0, "dist": "no", "tx": []}


def one_process(config: pytest.Config) -> None:
    """Keep the side's session in this process: an ``-n`` or ``--dist`` in the user's
    addopts would hand its benches to pytest-xdist's workers, where nothing is timed in
    lockstep. Each option is reset only where xdist is loaded (a configuration that
    blocks it, ``-p no:xdist``, has none); before xdist reads them
    (``pytest_cmdline_main``)."""
    for name, off in XDIST_OFF.items():
        if hasattr(config.option, name):
            setattr(config.option, name, copy.copy(off))


def register(config: pytest.Config) -> None:
    """Connect to the controller named in the environment and register the side plugin.

    The variables are removed from the environment at once, so processes this session
    starts (a nested pytest, cold-start children) never take them for their own.
    """
    path = os.environ.pop(SOCKET_ENV, None)
    name = os.environ.pop(SIDE_ENV, "?")
    files = os.environ.pop(FILES_ENV, None)
    keep_facts(name)
    if not path or config.pluginmanager.has_plugin(SIDE_PLUGIN):
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        raise pytest.UsageError(
            f"perfsuite ab: cannot reach the controller at {path}: {exc}"
        ) from None
    only = frozenset(f for f in files.split(os.pathsep) if f) if files is not None else None
    layout = random.Random()  # seeded from os.urandom: no two processes draw alike
    shuffle_layout(layout)  # before any bench is imported
    config.pluginmanager.register(LockstepSide(Channel(sock), name, only, layout), SIDE_PLUGIN)


def _message(report: pytest.TestReport | pytest.CollectReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        said = str(report.longrepr[2]).removeprefix("Skipped: ").strip().splitlines()
        return said[0][:500] if said else report.outcome
    text = report.longreprtext.strip().splitlines()
    errors = [line for line in text if line.startswith("E ")]
    line = errors[-1].removeprefix("E").strip() if errors else text[-1] if text else ""
    return (line or report.outcome)[:500].strip()


#: drain rounds go on while a round takes under this share of the typical round
DRAIN_SHARE = 0.5
#: a deep autotuned prefetch buffer may hold hundreds of batches: the bound is time
DRAIN_MAX_ROUNDS = 100_000
DRAIN_MAX_S = 5.0


def drain(timed: Callable[[], float], least: int, reference: list[float]) -> int:
    """Untimed rounds before a block: at least ``least``, then more while a round takes
    under half the typical round in ``reference`` (an asynchronous pipeline's prefetch
    buffer, filled while the side waited, still emptying). Once a fast round was seen,
    two slow rounds in a row end it (one slow round may be a preemption while the
    buffer still holds batches). Returns the rounds run."""
    if least <= 0:
        return 0
    typical = statistics.median(reference) if reference else 0.0
    start, rounds, slow, buffered = time.perf_counter(), 0, 0, False
    while rounds < DRAIN_MAX_ROUNDS and time.perf_counter() - start < DRAIN_MAX_S:
        seconds = timed()
        rounds += 1
        if seconds >= DRAIN_SHARE * typical:
            slow += 1
        else:
            slow, buffered = 0, True
        if rounds >= least and slow >= (2 if buffered else 1):
            break
    return rounds


class LockstepSide:
    """One side's session: the plan, and the blocks of each bench (see the module doc)."""

    def __init__(
        self,
        channel: Channel,
        name: str,
        files: frozenset[str] | None = None,
        layout: random.Random | None = None,
    ) -> None:
        self.channel = channel
        self.name = name
        self.layout = layout or random.Random()  # draws each block's memory layout
        self.files = files  # the only test files to collect (rootdir-relative), or all
        self._collect_errors: list[str] = []
        self._collect_skips: dict[str, str] = {}  # a module skipped whole: its reason

    def _unlisted(self, path: Path, config: pytest.Config) -> bool:
        """Whether ``path`` is a Python file outside this session's bench files."""
        if self.files is None or path.suffix != ".py" or path.name == "conftest.py":
            return False
        resolved, root = path.resolve(), config.rootpath.resolve()
        if path.is_dir() or not resolved.is_relative_to(root):
            return False
        return resolved.relative_to(root).as_posix() not in self.files

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Collect only this session's bench files, so no other file's imports (and the
        frameworks they load) ever enter this process. Folders and conftest files are
        left to pytest."""
        return True if self._unlisted(collection_path, config) else None

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> Generator[None, Any, Any]:
        """The same for a file named on the command line, which pytest collects without
        asking ``pytest_ignore_collect``: its module becomes a file of no tests, never
        imported (dropping it, pytest would report the file not found)."""
        found = yield
        return unimported(found, parent) if self._unlisted(file_path, parent.config) else found

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collect_errors.append(f"{report.nodeid or '.'}: {_message(report)}")
        elif report.skipped and report.nodeid:
            self._collect_skips[report.nodeid] = _message(report)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        self.channel.send(
            "hello",
            protocol=PROTOCOL,
            side=self.name,
            benches=[item.nodeid for item in items],
            errors=self._collect_errors,
            skipped=self._collect_skips,
        )
        wanted = dict.fromkeys(str(n) for n in self._expect("plan").get("benches", []))
        by_id = {item.nodeid: item for item in items}
        deselected = [item for item in items if item.nodeid not in wanted]
        items[:] = [by_id[n] for n in wanted if n in by_id]
        if deselected:
            config.hook.pytest_deselected(items=deselected)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Set up (fixtures, datasets, the test body up to its rounds) once the controller
        says so: beside the other side's setup, never beside its warm-up."""
        self.channel.send("arrive", nodeid=item.nodeid, phase="setup")
        self._expect("go")

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, Any, Any]:
        """pytest-benchmark's ``benchmark`` fixture, as the bench gets it: measuring in
        lockstep (:func:`perfsuite.ab.remote_benchmark.route`)."""
        value = yield
        if fixturedef.argname == FIXTURE_NAME and isinstance(request.node, pytest.Item):
            route(self, value, request.node)
        return value

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed or report.skipped or report.when == "call":
            self._send(
                "report",
                nodeid=report.nodeid,
                when=report.when,
                outcome=report.outcome,
                message="" if report.passed else _message(report),
            )

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self._send("finished", exitstatus=int(exitstatus))

    def measure(
        self,
        benchmark: Any,
        nodeid: str,
        target: Callable[..., Any],
        *,
        setup: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None,
        warmup_rounds: int,
        max_rounds: int | None,
        threshold: float,
        teardown: Callable[..., Any] | None = None,
        iterations: int | Calibration = 1,
        memory_threshold: float | None = None,
        fixture: str = "perf",
    ) -> Any:
        """Warm up, then time blocks of rounds when the controller says so.

        A round is ``iterations`` calls of ``target`` on the arguments of one ``setup``
        call, and ``teardown`` gets those arguments after the round, untimed.
        ``iterations`` may be a :data:`Calibration` instead, which chooses the count in
        this side's warm-up turn, before the warm-up rounds. Each block's rounds go to
        the controller as :mod:`perfsuite.ab.protocol`'s ``block_done`` says, their CPU
        read just outside each round's timed region (:mod:`perfsuite.bench.cost`), and
        into pytest-benchmark's stats (``iterations`` calls each) once it says ``done``.
        Returns the last call's result. ``memory_threshold`` is the bench's own;
        ``fixture`` (``perf`` or ``benchmark``) sets its least drain
        (:func:`perfsuite.ab.protocol.block_plan`).
        """
        from perfsuite.bench.cost import start

        meter = start()
        spent = 0.0  # the last round's CPU seconds
        result: Any = None

        def run(calls: int) -> float:
            """One round of ``calls`` calls: its seconds."""
            nonlocal result, spent
            # one ``setup`` call's arguments; none without ``setup``, or if it gave none
            args, kwargs = (setup() if setup is not None else None) or ((), {})
            cpu = meter.cpu(due=False) if meter is not None else 0.0
            if calls == 1:
                start = time.perf_counter()
                result = target(*args, **kwargs)
                seconds = time.perf_counter() - start
            else:
                loops = range(calls)
                start = time.perf_counter()
                for _ in loops:
                    result = target(*args, **kwargs)
                seconds = time.perf_counter() - start
            spent = meter.cpu() - cpu if meter is not None else 0.0
            if teardown is not None:
                teardown(*args, **kwargs)
            return seconds

        # calibration and warm-up alone, in this side's turn: the state blocks start from
        self.channel.send("arrive", nodeid=nodeid, phase="warmup")
        self._expect("go")
        calls = iterations(run) if callable(iterations) else iterations

        def timed() -> float:
            return run(calls) / calls

        reference = [timed() for _ in range(warmup_rounds)]
        self.channel.send(
            "ready",
            nodeid=nodeid,
            max_rounds=max_rounds,
            threshold=threshold,
            warmup=reference,
            memory_threshold=memory_threshold,
            fixture=fixture,
        )
        rounds: list[float] = []  # each round's seconds, all its calls
        while True:
            message = self._expect("block", "done", "skip")
            if message["type"] == "skip":
                pytest.skip(str(message.get("reason", "skipped by perfsuite ab")))
            if message["type"] == "done":
                break
            try:
                # a finite pool of rounds (fresh processes) is not spent on draining
                least = 0 if max_rounds is not None else int(message.get("drain", 0))
                typical = message.get("typical")
                yardstick = [float(typical)] if isinstance(typical, int | float) else reference
                if max_rounds is None:  # a pool's rounds are other processes' layouts
                    shuffle_layout(self.layout)
                drained = drain(timed, least, yardstick)
                block, cpu = [], []
                for _ in range(int(message["rounds"])):
                    block.append(run(calls))
                    cpu.append(spent / calls)
            except BaseException as exc:
                text = traceback.format_exception_only(type(exc), exc)[-1].strip()
                self._send("error", nodeid=nodeid, message=text)
                raise
            rounds.extend(block)
            self.channel.send(
                "block_done",
                nodeid=nodeid,
                seconds=[seconds / calls for seconds in block],  # as the stats divide them
                drained=drained,
                cpu=cpu if meter is not None else None,
                calls=calls,
                peak_mb=meter.peak_mb() if meter is not None else None,
            )
        if rounds:
            # pytest-benchmark has no public call that records rounds timed elsewhere.
            stats = benchmark._make_stats(calls)
            for value in rounds:
                stats.update(value)
        return result

    def _send(self, kind: str, **fields: Any) -> None:
        with contextlib.suppress(ProtocolError):  # the controller is gone and stops us
            self.channel.send(kind, **fields)

    def _expect(self, *kinds: str) -> dict[str, Any]:
        try:
            message = self.channel.receive()
            if message.get("type") in kinds:
                return message
            problem = f"expected {'/'.join(kinds)}, got {message}"
        except ProtocolError as exc:
            problem = f"lost the controller: {exc}"
        pytest.exit(f"perfsuite ab: side {self.name}: {problem}", pytest.ExitCode.INTERRUPTED)
