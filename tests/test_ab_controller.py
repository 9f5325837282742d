"""The lockstep controller against scripted sides over real Unix socket pairs."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from perfsuite.ab import controller as controller_module
from perfsuite.ab.controller import Controller
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.protocol import Channel, decode, encode
from perfsuite.ab.sidemanage import SideFault
from perfsuite.verdict.paired import Budget


class ScriptedSide:
    """Just what the controller uses of a side process; the test plays the pytest end."""

    def __init__(self, name: str) -> None:
        self.name = name
        ours, theirs = socket.socketpair()
        self.channel: Channel | None = Channel(ours)
        self.peer = theirs
        self.alive = True
        self.title = f"side {name}"
        self.frozen: set[int] = set()
        self.events: list[str] = []

    def say(self, kind: str, **fields: Any) -> None:
        self.peer.sendall(encode(kind, **fields))

    def heard(self) -> list[dict[str, Any]]:
        self.peer.settimeout(0.5)
        data = b""
        try:
            while not data.endswith(b"\n"):
                data += self.peer.recv(65536)
        except TimeoutError:
            pass
        return [decode(line) for line in data.splitlines() if line]

    def hang_up(self) -> None:
        self.peer.close()
        self.alive = False

    def fault(self, problem: str, *, tail: bool = True, ended: bool = False) -> SideFault:
        return SideFault(f"{self.title}: {problem}")

    def wait(self, timeout: float) -> bool:
        return True

    def settle(self) -> bool:
        return True

    def freeze(self) -> bool:
        self.frozen = {1}
        self.events.append("freeze")
        return True

    def thaw(self) -> None:
        self.frozen = set()
        self.events.append("thaw")


def controller() -> tuple[Controller, ScriptedSide, ScriptedSide]:
    a, b = ScriptedSide("A"), ScriptedSide("B")
    ctl = Controller(a, b, 7, budget=Budget(10, 12, 60.0), threshold=0.05, block_rounds=1)  # type: ignore[arg-type]
    for name, side in (("A", a), ("B", b)):
        assert side.channel is not None
        ctl._selector.register(side.channel.sock, 1, name)
    return ctl, a, b


def test_a_side_that_says_finished_and_exits_at_once_is_not_dead() -> None:
    ctl, a, _ = controller()
    a.say("hello", protocol=1, side="A", benches=[], errors=[])
    a.say("finished", exitstatus=0)
    a.hang_up()  # gone before the controller read its last line
    ctl._handle(*ctl._wait())
    name, message = ctl._wait()
    assert (name, message["type"]) == ("A", "finished")
    ctl._handle(name, message)
    assert ctl.state["A"].finished


def test_a_side_that_finishes_before_its_hello_is_a_fault_naming_it() -> None:
    """pytest stopped before collection ended (a usage error, a file not found): the
    side never says hello, and the controller says so rather than wait for it."""
    ctl, _, b = controller()
    b.say("finished", exitstatus=4)
    b.hang_up()
    with pytest.raises(SideFault, match="side B: ended before its benches were collected"):
        ctl._handle(*ctl._wait())


def test_a_side_that_hangs_up_mid_bench_is_a_fault_naming_it() -> None:
    ctl, _, b = controller()
    b.say("ready", nodeid="x", max_rounds=None, threshold=0.05, warmup=[0.01])
    b.hang_up()
    name, message = ctl._wait()
    ctl._handle(name, message)  # the ready it sent first is still handled
    with pytest.raises(SideFault, match="side B: died"):
        ctl._wait()


def test_turns_to_set_up_and_the_skip_of_a_bench_the_other_side_skipped() -> None:
    ctl, a, b = controller()
    for side in (a, b):
        side.say("arrive", nodeid="x")
    for _ in range(2):
        ctl._handle(*ctl._wait())
    granted = [side.name for side in (a, b) if side.heard()]
    assert len(granted) == 1  # one side sets up at a time
    first, second = (a, b) if granted == ["A"] else (b, a)
    first.say("report", nodeid="x", when="setup", outcome="skipped", message="no GPU")
    ctl._handle(*ctl._wait())
    assert [m["type"] for m in second.heard()] == ["go"]
    second.say("ready", nodeid="x", max_rounds=None, threshold=0.05, warmup=[0.01])
    ctl._handle(*ctl._wait())
    assert [m["type"] for m in second.heard()] == ["skip"]
    assert ctl.runs["x"].skipped is not None
    assert "no GPU" in ctl.runs["x"].skipped


def _heard_go(side: ScriptedSide) -> bool:
    return [m["type"] for m in side.heard()] == ["go"]


def test_both_sides_set_up_at_once_and_warm_up_alone() -> None:
    ctl, a, b = controller()
    for side in (a, b):
        side.say("arrive", nodeid="x", phase="setup")
    for _ in range(2):
        ctl._handle(*ctl._wait())
    assert _heard_go(a)
    assert _heard_go(b)
    a.say("arrive", nodeid="x", phase="warmup")
    ctl._handle(*ctl._wait())
    assert a.heard() == []  # no warm-up beside the other side's setup
    b.say("arrive", nodeid="x", phase="warmup")
    ctl._handle(*ctl._wait())
    assert _heard_go(a)
    assert b.heard() == []
    a.say("ready", nodeid="x", max_rounds=None, threshold=0.05, warmup=[0.01])
    ctl._handle(*ctl._wait())
    assert _heard_go(b)
    assert (ctl.state["A"].busy, ctl.state["B"].busy) == (None, "x")


def test_the_side_that_asked_first_warms_up_first() -> None:
    """Not A by its name: an A that always warmed up first would hold an order effect."""
    ctl, a, b = controller()
    for side in (a, b):
        side.say("arrive", nodeid="x", phase="setup")
        ctl._handle(*ctl._wait())
        assert _heard_go(side)
    b.say("arrive", nodeid="x", phase="warmup")
    ctl._handle(*ctl._wait())
    assert b.heard() == []  # A still sets up
    a.say("arrive", nodeid="x", phase="warmup")
    ctl._handle(*ctl._wait())
    assert _heard_go(b)
    assert a.heard() == []


def test_no_setup_beside_a_warm_up_and_a_side_without_phases_goes_alone() -> None:
    ctl, a, b = controller()
    a.say("arrive", nodeid="x", phase="warmup")
    ctl._handle(*ctl._wait())
    assert _heard_go(a)
    b.say("arrive", nodeid="y", phase="setup")  # b skipped x: its next setup waits
    ctl._handle(*ctl._wait())
    assert b.heard() == []
    a.say("report", nodeid="x", when="call", outcome="passed", message="")
    ctl._handle(*ctl._wait())
    assert _heard_go(b)
    a.say("arrive", nodeid="y")  # no phase: setup and warm-up in one turn, alone
    ctl._handle(*ctl._wait())
    assert a.heard() == []
    b.say("arrive", nodeid="y", phase="warmup")
    ctl._handle(*ctl._wait())
    assert _heard_go(a)
    assert b.heard() == []
    assert ctl.state["A"].busy_phase == "all"


def test_a_finite_pool_of_rounds_alternates_one_round_per_block() -> None:
    ctl, _, _ = controller()
    assert ctl._pair_limit(3) == (3, 12)
    ctl.state["A"].ready = {"nodeid": "x", "max_rounds": 7}
    ctl.state["B"].ready = {"nodeid": "x", "max_rounds": 5}
    assert ctl._pair_limit(3) == (1, 5)
    ctl.state["B"].ready = {"nodeid": "x", "max_rounds": 40}
    assert ctl._pair_limit(3) == (1, 7)


def test_a_block_stuck_behind_the_frozen_side_thaws_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block that outlasts the patience (it may wait on a lock the frozen side holds)
    thaws the other side and is counted unsettled, instead of hanging."""
    monkeypatch.setattr(controller_module, "FREEZE_PATIENCE_S", 0.2)
    ctl, a, b = controller()
    run = BenchRun("x", 0.05)
    run.warmup = {"A": [0.001], "B": [0.001]}
    assert a.freeze()
    timer = threading.Timer(1.0, lambda: b.say("block_done", nodeid="x", seconds=[0.5]))
    timer.start()
    start = time.monotonic()
    try:
        seconds, drained = ctl._block("B", "x", run)
    finally:
        timer.cancel()
    assert (seconds, drained) == ([0.5], 0)
    assert a.events == ["freeze", "thaw"]
    assert not a.frozen
    assert run.unsettled == 1
    assert time.monotonic() - start >= 0.9  # it went on waiting for the block after thawing


def test_a_prompt_block_leaves_the_other_side_frozen() -> None:
    ctl, a, b = controller()
    run = BenchRun("x", 0.05)
    assert a.freeze()
    b.say("block_done", nodeid="x", seconds=[0.5, 0.6], drained=2)
    assert ctl._block("B", "x", run) == ([0.5, 0.6], 2)
    assert a.events == ["freeze"]
    assert run.unsettled == 0


def test_the_drain_yardstick_is_the_faster_sides_warm_up() -> None:
    run = BenchRun("x", 0.05)
    assert run.typical() is None  # no warm-up yet: the side falls back on its own
    run.warmup = {"A": [0.028, 0.030, 0.029], "B": [0.086]}
    # B three times slower: A's steady 29-ms rounds are not under half the yardstick
    assert run.typical() == pytest.approx(0.029)
    run.warmup = {"A": [0.050, 0.052], "B": [0.051, 0.049, 0.060]}
    assert run.typical() == pytest.approx(0.051)
