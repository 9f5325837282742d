"""The lockstep scheduler: two warm pytest sides, one block of rounds at a time.

Both sides collect the same selection and say ``hello``; the controller answers with
the benches they have in common, in A's order (benches on one side only are listed
as added or removed). In each bench a side runs its warm-up and says ``ready``; once
both are ready at the same bench, the controller sends ``block`` to one side at a
time, so only one side ever runs timed work. An asynchronous pipeline goes on working
after its block (it refills its prefetch buffers), so the idle side (``idle``) is
either stopped (``freeze``, the default: SIGSTOP to its process group until its next
block, which resumes its pipeline in the steady state the rounds measure), or waited
for until its threads are quiet (``wait``: each block then starts with untimed drain
rounds that take what the pipeline prefetched meanwhile).

Pairs of blocks run in a seeded, balanced random order: the first pair of every two
is AB or BA at random and the second is its mirror (ABBA or BAAB). After each pair
the bench is judged on the look schedule of :class:`perfsuite.verdict.paired.Sequential`;
once it is decisive or its budget (pairs, seconds) is spent, both sides get ``done``.

Both sides may set up a bench at once (``arrive`` with phase ``setup``, answered by
``go``: :mod:`perfsuite.ab.protocol`; nothing is timed then); a warm-up is granted, in
the order asked for, only while the other side is neither setting up nor warming up
(and, after a settle, is quiet): warm-up rounds are the yardstick of each block's drain.

A failed or erroring bench, a collection error or a side that dies stops both sides
(:class:`SideFault`, naming the side, its revision and the error).
"""

from __future__ import annotations

import random
import selectors
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite.ab.budget import session_budget
from perfsuite.ab.outcome import BenchRun, Outcome, collection_skips
from perfsuite.ab.protocol import PROTOCOL, ProtocolError, block_plan, pair_orders
from perfsuite.ab.sidemanage import CONNECT_TIMEOUT_S, SideProcess
from perfsuite.verdict.cost import MEMORY_THRESHOLD
from perfsuite.verdict.paired import Budget, Sequential, judge

#: how often a wait checks that both sides are still alive
TICK_S = 0.2
#: how long sides get to save their JSON and exit after the last bench
EXIT_TIMEOUT_S = 60.0
#: a block that outlasts these (seconds, plus typical rounds) thaws the frozen side
FREEZE_PATIENCE_S, FREEZE_PATIENCE = 30.0, 100
#: the phases a side asks a turn for (``arrive``): ``setup`` may run beside the other
#: side's setup; ``warmup`` and ``all`` (one turn for both: a side without phases) alone
SETUP, ALL = "setup", "all"


@dataclass
class _State:
    ready: dict[str, Any] | None = None
    ended: dict[str, str] = field(default_factory=dict)  # nodeid -> outcome without ready
    hello: dict[str, Any] | None = None
    finished: bool = False
    arrived: str | None = None  # at this bench's setup or warm-up, waiting for its turn
    arrived_phase: str = SETUP
    arrived_at: float = 0.0  # monotonic: who asked first goes first
    busy: str | None = None  # setting up or warming up this bench
    busy_phase: str = SETUP


class Controller:
    """Drive two started sides through their benches (see the module doc)."""

    def __init__(
        self,
        a: SideProcess,
        b: SideProcess,
        seed: int,
        mirror: bool = False,
        only: Sequence[str] | None = None,
        *,
        budget: Budget,
        threshold: float,
        block_rounds: int | None = None,
        drain_rounds: int | None = 0,
        idle: str = "freeze",
    ) -> None:
        """``mirror`` swaps A and B in every order drawn from ``seed`` (two sessions with
        one seed, one mirrored, run every pair in both orders); ``only``: the benches of
        a fresh pair, which gets :func:`perfsuite.ab.budget.session_budget`; ``drain_rounds``
        and ``block_rounds`` None: a block's rounds by :func:`perfsuite.ab.protocol.block_plan`."""
        self.idle = idle
        self.sides = {"A": a, "B": b}
        self.only = only  # run just these benches (suspects measured again), or all
        self.budget = session_budget(budget, only)
        self.block_rounds, self.drain_rounds = block_rounds, drain_rounds
        self.seed, self.mirror, self.threshold = seed, mirror, threshold
        self.state = {"A": _State(), "B": _State()}
        self.runs: dict[str, BenchRun] = {}
        self._selector = selectors.DefaultSelector()
        self._closed: set[str] = set()
        self._running: str | None = None  # the bench whose blocks alternate now
        self._ended: float | None = None  # when the last bench's alternation ended
        self._plan: tuple[list[str], list[str], list[str]] = ([], [], [])  # common, A, B only

    def _channel(self, name: str) -> Any:
        channel = self.sides[name].channel
        assert channel is not None
        return channel

    def _next(
        self, only: str | None = None, deadline: float | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """The next message from either side (or from ``only``); a dead side is a fault.
        None once ``deadline`` (monotonic) has passed without one."""
        names = [only] if only else ["A", "B"]
        while deadline is None or time.monotonic() < deadline:
            for name in names:
                message = self._channel(name).pending()
                if message is not None:
                    return name, message
            for key, _ in self._selector.select(TICK_S):
                self._read(key.data)
            for name, side in self.sides.items():
                if side.alive or self.state[name].finished:
                    continue
                while name not in self._closed:  # what it sent before it exited comes first
                    self._read(name)
                if not self._channel(name).has_pending():
                    raise side.fault("died" + self._during(name))
        return None

    def _wait(self) -> tuple[str, dict[str, Any]]:
        """The next message from either side, however long it takes."""
        got = self._next()
        assert got is not None  # no deadline
        return got

    def _read(self, name: str) -> None:
        """Read what a side sent; its hang-up is a fault unless it said finished first
        (messages it sent before hanging up are still handled first)."""
        channel = self._channel(name)
        try:
            channel.feed()
        except ProtocolError as exc:
            self._selector.unregister(channel.sock)
            self._closed.add(name)
            if not (self.state[name].finished or channel.has_pending()):
                self.sides[name].wait(2.0)
                raise self.sides[name].fault(f"died{self._during(name)} ({exc})") from None

    def _during(self, name: str) -> str:
        """`` in <bench>`` for the bench a side was at, if any."""
        state = self.state[name]
        nodeid = state.busy or (state.ready or {}).get("nodeid") or self._running
        return f" in {nodeid}" if nodeid else ""

    def _send(self, name: str, kind: str, **fields: Any) -> None:
        try:
            self._channel(name).send(kind, **fields)
        except ProtocolError as exc:
            self.sides[name].wait(2.0)
            raise self.sides[name].fault(f"died{self._during(name)} ({exc})") from None

    def measure(self) -> None:
        """Connect, send the plan and alternate until every planned bench is measured
        or skipped: once this returns, no timed work is left, only the sides' teardown
        (which another pair of processes may start beside)."""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        for name, side in self.sides.items():
            side.connect(deadline)
            self._selector.register(self._channel(name).sock, selectors.EVENT_READ, name)
        while any(s.hello is None for s in self.state.values()):
            self._handle(*self._wait())
        a_ids = list(self.state["A"].hello["benches"])  # type: ignore[index]
        b_ids = list(self.state["B"].hello["benches"])  # type: ignore[index]
        b_set, a_set = set(b_ids), set(a_ids)
        common = [n for n in a_ids if n in b_set and (self.only is None or n in self.only)]
        self._plan = (
            common,
            [n for n in a_ids if n not in b_set],
            [n for n in b_ids if n not in a_set],
        )
        for name in self.sides:
            self._send(name, "plan", benches=common)
        while not (self._measured() or all(s.finished for s in self.state.values())):
            self._handle(*self._wait())

    def _measured(self) -> bool:
        runs = [self.runs.get(n) for n in self._plan[0]]
        return self._running is None and all(
            r is not None and (r.result is not None or r.skipped is not None) for r in runs
        )

    def finish(self) -> Outcome:
        """After :meth:`measure`: wait until both sides finished and exited."""
        while not all(s.finished for s in self.state.values()):
            self._handle(*self._wait())
        for side in self.sides.values():
            if not side.wait(EXIT_TIMEOUT_S):
                raise side.fault("did not exit after its last bench")
        common, removed, added = self._plan
        hellos = {name: state.hello or {} for name, state in self.state.items()}
        skips, removed, added = collection_skips(hellos, removed, added, self.threshold)
        return [self.runs[n] for n in common if n in self.runs] + skips, removed, added

    def _handle(self, name: str, message: dict[str, Any]) -> None:
        side, state = self.sides[name], self.state[name]
        other = "B" if name == "A" else "A"
        peer = self.state[other]
        kind = message.get("type")
        if kind == "hello":
            if message.get("protocol") != PROTOCOL:
                raise side.fault(
                    f"speaks lockstep protocol {message.get('protocol')}, this perfsuite "
                    f"speaks {PROTOCOL}: run perfsuite ab from a matching perfsuite",
                    tail=False,
                )
            errors = message.get("errors") or []
            if errors:
                raise side.fault("collection failed: " + "; ".join(map(str, errors)), tail=False)
            state.hello = message
        elif kind == "arrive":
            nodeid, phase = str(message["nodeid"]), str(message.get("phase") or ALL)
            if state.busy == nodeid:  # its setup is over: the warm-up is next
                state.busy = None
            state.arrived, state.arrived_phase = nodeid, phase
            state.arrived_at = time.monotonic()
        elif kind == "ready":
            state.ready, state.busy = message, None
            nodeid = str(message["nodeid"])
            if nodeid in peer.ended:
                self._skip(name, nodeid, f"side {other} {peer.ended[nodeid]} it unmeasured")
            elif peer.ready is not None and peer.ready["nodeid"] == nodeid:
                self._alternate(nodeid)
        elif kind == "report":
            nodeid, outcome = str(message["nodeid"]), str(message["outcome"])
            if state.busy == nodeid and (message.get("when") == "call" or outcome != "passed"):
                state.busy = None
            if outcome == "failed":
                where = "" if message.get("when") == "call" else f" ({message.get('when')})"
                raise side.fault(f"{nodeid}{where}: {message.get('message')}", tail=False)
            if state.ready is not None and state.ready["nodeid"] == nodeid:
                state.ready = None  # a skip inside measure (sent by us): nothing to do
            elif outcome == "skipped" or message.get("when") == "call":
                label = "skipped" if outcome == "skipped" else "passed"
                state.ended[nodeid] = label
                said = message.get("message") or f"{label} without measuring"
                if nodeid not in self.runs:
                    skipped = f"side {name}: {said}"
                    self.runs[nodeid] = BenchRun(nodeid, self.threshold, skipped=skipped)
                elif self.runs[nodeid].skipped == f"side {other}: {said}":  # so did the other
                    self.runs[nodeid].skipped = f"both sides: {said}"
                if peer.ready is not None and peer.ready["nodeid"] == nodeid:
                    self._skip(other, nodeid, f"side {name} {label} it unmeasured")
        elif kind == "error":
            raise side.fault(f"{message.get('nodeid')}: {message.get('message')}", tail=False)
        elif kind == "finished":
            state.finished = True
            if state.hello is None:  # its pytest stopped before the plan (a usage error)
                raise side.fault("ended before its benches were collected", ended=True)
        self._grant()

    def _grant(self) -> None:
        """Give each side that arrived its turn (see the module doc), in the order asked
        for: were A always first, it would always warm up first."""
        for name in sorted(self.sides, key=lambda n: self.state[n].arrived_at):
            state, other = self.state[name], "B" if name == "A" else "A"
            if state.arrived is None:
                continue
            peer = self.state[other]
            alone = state.arrived_phase != SETUP
            if peer.busy is not None and (alone or peer.busy_phase != SETUP):
                continue
            if alone:
                self.sides[other].settle()
            self._send(name, "go")
            state.busy, state.busy_phase = state.arrived, state.arrived_phase
            state.arrived = None

    def _skip(self, name: str, nodeid: str, reason: str) -> None:
        self._send(name, "skip", reason=reason)
        self.state[name].ready = None
        run = self.runs.setdefault(nodeid, BenchRun(nodeid, self.threshold))
        run.skipped = run.skipped or reason

    def _marker(self, field: str, default: float) -> float:
        """The bench's ``field`` (a threshold) from the sides' ``ready``, the candidate's
        first as in perfsuite compare, else ``default``."""
        for name in ("B", "A"):
            value = (self.state[name].ready or {}).get(field)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return float(value)
        return default

    def _pair_limit(self, rounds: int) -> tuple[int, int]:
        """(rounds per block, most pairs), given the bench's ``rounds`` per block: a side
        with a finite pool of rounds alternates one a block, as many as it holds."""
        caps = [
            cap
            for name in self.sides
            if isinstance(cap := (self.state[name].ready or {}).get("max_rounds"), int) and cap > 0
        ]
        if not caps:
            return rounds, self.budget.max_pairs
        return 1, min(self.budget.max_pairs, *caps)

    def _alternate(self, nodeid: str) -> None:
        """Both sides are ready at ``nodeid``: alternate blocks until a verdict."""
        self._running = nodeid
        threshold = self._marker("threshold", self.threshold)
        memory = self._marker("memory_threshold", MEMORY_THRESHOLD)
        run = BenchRun(nodeid, threshold, memory_threshold=memory)
        run.warmup = {n: list((self.state[n].ready or {}).get("warmup") or []) for n in self.sides}
        self.runs[nodeid] = run
        fixtures = [(self.state[n].ready or {}).get("fixture") for n in self.sides]
        drain, rounds = block_plan(self.drain_rounds, self.block_rounds, self.idle, fixtures)
        k, max_pairs = self._pair_limit(rounds)
        run.pool = max_pairs if max_pairs < self.budget.max_pairs else None
        sequential = Sequential(self.budget, run.threshold)
        rng = random.Random(f"{self.seed}:{nodeid}")
        start = time.monotonic()
        run.setup = 0.0 if self._ended is None else start - self._ended
        orders: list[str] = []
        while run.result is None:
            if not orders:
                orders.extend(pair_orders(rng, self.mirror))
            for name in orders.pop(0):
                other = self.sides["B" if name == "A" else "A"]
                if self.idle == "freeze":
                    self.sides[name].thaw()
                    if not other.freeze():
                        run.unsettled += 1
                elif not other.settle():
                    run.unsettled += 1
                self._send(name, "block", rounds=k, drain=drain, typical=run.typical())
                seconds, drained = self._block(name, nodeid, run)
                (run.a_blocks if name == "A" else run.b_blocks).append(seconds)
                run.drained.append(drained)
                run.order.append(name)
            run.seconds = time.monotonic() - start
            n = len(run.a_blocks)
            run.result = sequential.look(run.ratios, run.seconds, last=n >= max_pairs)
        ratios = run.cpu_ratios()  # CPU per call, judged as the time is
        run.cpu = judge(ratios, run.threshold, self.budget.alpha) if ratios is not None else None
        for side in self.sides.values():
            side.thaw()
        for name in self.sides:
            self._send(name, "done")
            self.state[name].ready = None
        self._running, self._ended = None, time.monotonic()

    def _block(self, name: str, nodeid: str, run: BenchRun) -> tuple[list[float], int]:
        """Wait for ``name``'s block. Should it outlast ``FREEZE_PATIENCE`` typical rounds
        (it may wait on something the frozen side holds, a lock or a pipe), the other
        side is thawed and the block counted ``unsettled``, rather than hang."""
        other = self.sides["B" if name == "A" else "A"]
        patience = FREEZE_PATIENCE_S + FREEZE_PATIENCE * (run.typical() or 0.0)
        deadline = time.monotonic() + patience if other.frozen else None
        while True:
            got = self._next(only=name, deadline=deadline)
            if got is None:
                other.thaw()
                run.unsettled += 1
                deadline = None
                continue
            sender, message = got
            if message.get("type") == "block_done":
                seconds = [float(s) for s in message.get("seconds", [])]
                if not seconds or any(not s > 0 for s in seconds):
                    raise self.sides[name].fault(f"{nodeid}: a block timed {seconds}")
                run.add_cost(name, message, len(seconds))
                return seconds, int(message.get("drained") or 0)
            self._handle(sender, message)  # an error or a failure report raises
