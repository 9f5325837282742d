"""A side of ``perfsuite ab`` measuring pytest-benchmark's ``benchmark`` fixture, driven
over a socket pair as the controller would drive it (:mod:`perfsuite.ab.remote_benchmark`).
End to end, in temporary git repositories: ``tests/test_ab_benchmark_fixture.py``."""

from __future__ import annotations

import inspect
import socket
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture, FixtureAlreadyUsed

from perfsuite.ab import remote_benchmark
from perfsuite.ab.protocol import Channel
from perfsuite.ab.remote import LockstepSide
from perfsuite.ab.remote_benchmark import calibrate, pedantic_warmup
from perfsuite.config import BenchSettings


@pytest.fixture
def side() -> Iterator[tuple[LockstepSide, Channel]]:
    ours, theirs = socket.socketpair()
    yield LockstepSide(Channel(ours), "A"), Channel(theirs)
    ours.close()
    theirs.close()


def script(controller: Channel, blocks: int, rounds: int = 2) -> None:
    """What the controller says to one side's bench: go, ``blocks`` blocks, done."""
    controller.send("go")
    for _ in range(blocks):
        controller.send("block", rounds=rounds, drain=0, typical=None)
    controller.send("done")


class FakeStats:
    def __init__(self, iterations: int) -> None:
        self.iterations = iterations
        self.data: list[float] = []

    def update(self, duration: float) -> None:
        self.data.append(duration / self.iterations)


class FakeBenchmark:
    def __init__(self) -> None:
        self.stats: FakeStats | None = None

    def _make_stats(self, iterations: int) -> FakeStats:
        self.stats = FakeStats(iterations)
        return self.stats


def test_calibrate_ignores_a_cold_first_call_and_a_preempted_round() -> None:
    seen: list[int] = []
    slow = {0: 0.5, 2: 0.9}  # the first call is cold; the round of 10 calls is preempted

    def run(calls: int) -> float:
        seen.append(calls)
        return slow.get(len(seen) - 1, calls * 2e-5)

    assert calibrate(run, 1e-3) == 55  # 55 calls of 20 us: 1.1 ms
    assert seen == [1, 1, 10, 10, 55, 55]
    assert calibrate(lambda calls: 0.25, 1e-3) == 1  # a slow function: one call a round


def test_pedantic_warmup_keeps_a_pool_within_warmup_plus_rounds() -> None:
    assert pedantic_warmup(5, 2, 3, pool=False) == (5, None)
    assert pedantic_warmup(0, 3, 12, pool=True) == (3, 9)
    assert pedantic_warmup(1, 3, 2, pool=True) == (2, 1)
    for given, default, rounds in [(0, 3, 1), (2, 1, 4), (0, 2, 7)]:
        warmup, most = pedantic_warmup(given, default, rounds, pool=True)
        assert most is not None
        assert most >= 1
        assert warmup + most == given + rounds


def test_measure_pairs_seconds_per_call_and_records_the_rounds(
    side: tuple[LockstepSide, Channel],
) -> None:
    lockstep, controller = side
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        return len(calls)

    script(controller, blocks=2)
    benchmark = FakeBenchmark()
    result = lockstep.measure(
        benchmark,
        "b::t",
        call,
        setup=None,
        warmup_rounds=1,
        max_rounds=None,
        threshold=0.05,
        iterations=lambda run: 5 if run(1) >= 0 else 0,
    )
    assert result == len(calls) == 1 + 5 * (1 + 2 * 2)  # calibration, warm-up, 2 blocks of 2
    messages = [controller.receive() for _ in range(4)]
    assert [m["type"] for m in messages] == ["arrive", "ready", "block_done", "block_done"]
    per_call = [s for m in messages[2:] for s in m["seconds"]]
    assert benchmark.stats is not None
    assert benchmark.stats.iterations == 5
    assert benchmark.stats.data == per_call  # the very values the controller paired


def _fixture(name: str) -> Any:
    """A real pytest-benchmark fixture, whichever of its versions' signatures."""
    values: dict[str, Any] = {
        "node": SimpleNamespace(name=name, nodeid=f"b::{name}", _nodeid=f"b::{name}"),
        "disable_gc": False,
        "timer": SimpleNamespace(target=lambda: 0.0),
        "min_rounds": 1,
        "min_time": 0.000005,
        "max_time": 1.0,
        "warmup": False,
        "warmup_iterations": 0,
        "calibration_precision": 10,
        "add_stats": lambda stats: None,
        "logger": SimpleNamespace(debug=print, warning=print, info=print),
        "warner": None,
        "disabled": False,
        "cprofile": False,
        "cprofile_loops": None,
        "cprofile_dump": None,
        "precision": None,  # pytest-benchmark 5.3+
        "confidence": None,
    }
    make: Any = BenchmarkFixture
    wanted = inspect.signature(make).parameters
    return make(**{k: v for k, v in values.items() if k in wanted})


def _route(lockstep: LockstepSide, fixture: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = BenchSettings(0.2, 7, 2, "g", "v", baseline=False, roofline=False)
    fake: Callable[[pytest.Item], BenchSettings] = lambda item: settings  # noqa: E731
    monkeypatch.setattr(remote_benchmark, "_settings", fake)
    remote_benchmark.route(lockstep, fixture, SimpleNamespace(nodeid=fixture.fullname))  # type: ignore[arg-type]


def test_a_routed_fixture_measures_through_the_side_once(
    side: tuple[LockstepSide, Channel], monkeypatch: pytest.MonkeyPatch
) -> None:
    lockstep, controller = side
    fixture = _fixture("call")
    _route(lockstep, fixture, monkeypatch)
    script(controller, blocks=1)
    assert fixture(sum, range(10)) == 45
    arrive, ready = controller.receive(), controller.receive()
    assert (arrive["nodeid"], arrive["phase"]) == ("b::call", "warmup")
    assert (ready["threshold"], ready["max_rounds"]) == (0.2, None)
    assert len(ready["warmup"]) == remote_benchmark.CALIBRATED_WARMUP_ROUNDS  # over the 2 asked
    assert fixture.stats.stats.data == controller.receive()["seconds"]
    with pytest.raises(FixtureAlreadyUsed):  # pytest-benchmark's own guard
        fixture(sum, range(10))
    assert fixture.has_error


def test_a_routed_pedantic_keeps_its_arguments_rounds_and_checks(
    side: tuple[LockstepSide, Channel], monkeypatch: pytest.MonkeyPatch
) -> None:
    lockstep, controller = side
    fixture = _fixture("pedantic")
    _route(lockstep, fixture, monkeypatch)
    made: list[int] = []
    torn: list[int] = []

    def setup() -> tuple[tuple[int], dict[str, Any]]:
        made.append(len(made))
        return (made[-1],), {}

    script(controller, blocks=2, rounds=1)
    kwargs: dict[str, Any] = {"setup": setup, "rounds": 4, "warmup_rounds": 0}
    if "teardown" in inspect.signature(fixture.pedantic).parameters:  # pytest-benchmark 5.2+
        kwargs["teardown"] = lambda i: torn.append(i)
    assert fixture.pedantic(lambda i: i * 10, **kwargs) == 30
    ready = [controller.receive() for _ in range(2)][1]
    # two warm-up rounds (the side's default) come out of the 4: setup ran 2 + 2 times
    assert (ready["max_rounds"], len(ready["warmup"])) == (2, 2)
    assert made == [0, 1, 2, 3]
    assert torn in ([], made)
    assert fixture.stats.stats.data == [
        s for _ in range(2) for s in controller.receive()["seconds"]
    ]

    wrong: list[tuple[dict[str, Any], str]] = [
        ({"iterations": 0}, "`iterations`"),
        ({"rounds": 0}, "`rounds`"),
        ({"warmup_rounds": -1}, "`warmup_rounds`"),
        ({"iterations": 2, "setup": setup}, "with a `setup`"),
    ]
    for bad, message in wrong:
        with pytest.raises(ValueError, match=message):
            fixture._raw_pedantic(sum, **bad)
    script(controller, blocks=0)
    with pytest.raises(TypeError, match="if `setup` returns the arguments"):
        fixture._raw_pedantic(sum, args=([1],), setup=lambda: (([2],), {}), rounds=5)
