"""The lockstep protocol between ``perfsuite ab`` and its two pytest sides: JSON lines.

Each message is one JSON object on one line with ``"type"`` and ``"v"`` (the protocol
version). The controller listens on a Unix domain socket in a private temporary folder
(never TCP); a side connects to the path in ``PERFSUITE_AB_SOCKET`` and names itself
with ``PERFSUITE_AB_SIDE`` (``A`` or ``B``). ``PERFSUITE_AB_FILES``, when set, lists
(``os.pathsep``-separated, relative to pytest's rootdir) the only test files the side
collects: ``perfsuite ab`` runs each bench file in its own pair of sides.
``PERFSUITE_AB_FACTS`` names the run's folder where sides keep the facts
pytest-benchmark saves (:mod:`perfsuite.ab.sidefacts`).

Side to controller:

* ``hello {protocol, side, benches: [nodeid, ...], errors: [text, ...], skipped: {nodeid:
  reason}}`` after collection (``skipped``: modules skipped whole, e.g. by
  ``pytest.importorskip``; absent from a side that predates it)
* ``arrive {nodeid, phase}``: about to set up a bench (``phase`` ``setup``: fixtures and
  test body) or warm it up (``warmup``: the rounds perfsuite runs before the blocks);
  waits for ``go``. Without ``phase`` (a side that predates it): both, in one turn
* ``ready {nodeid, max_rounds, threshold, warmup, memory_threshold, fixture}``: warm-up
  done (``warmup``: its rounds' seconds per call), waiting for blocks
  (``max_rounds``: a bench with a finite pool of rounds, e.g. fresh processes started
  up front; ``threshold``: the bench's minimum effect, markers included;
  ``memory_threshold``: the peak-memory rise that is a regression; ``fixture``: what
  times its rounds, ``perf`` or pytest-benchmark's ``benchmark``)
* ``block_done {nodeid, seconds: [...], drained, cpu: [...], calls, peak_mb}``: each
  round of one block, its seconds per call (a round of a ``benchmark(fn)`` bench makes
  many calls, and the two sides may make different numbers of them), how many untimed
  rounds drained it, each round's CPU seconds per call, the calls a round makes, and
  the bench's peak memory so far in MB (``cpu`` and ``peak_mb`` may be null)
* ``report {nodeid, when, outcome, message}``: a bench's failure or skip (any phase),
  or its passed call
* ``error {nodeid, message}``: a round raised
* ``finished {exitstatus}``: the session ends

Controller to side:

* ``plan {benches: [nodeid, ...]}``: run exactly these, in this order
* ``go {}``: start the phase the side arrived at: a setup beside the other side's
  setup at most, a warm-up alone
* ``block {rounds, drain, typical}``: run at least ``drain`` untimed rounds (more
  while rounds come out far faster than ``typical``, the faster side's median warm-up
  round: an asynchronous pipeline's buffer, filled while the side waited, still
  emptying), then time ``rounds`` rounds
* ``done {}``: stop alternating, record the rounds
* ``skip {reason}``: the other side cannot run this bench
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
from collections.abc import Collection
from typing import Any

PROTOCOL = 1
SOCKET_ENV = "PERFSUITE_AB_SOCKET"
SIDE_ENV = "PERFSUITE_AB_SIDE"
FILES_ENV = "PERFSUITE_AB_FILES"
#: where a side's pytest, listing the bench files it would collect, writes them
#: (:func:`perfsuite.ab.isolate.collect_files`)
COLLECT_OUT_ENV = "PERFSUITE_AB_COLLECT_OUT"
#: the name a side's plugin (:class:`perfsuite.ab.remote.LockstepSide`) is registered
#: under in its pytest, where ``perf.measure`` finds it
SIDE_PLUGIN = "perfsuite-ab-side"
#: the longest line a peer may send (a hello lists every bench)
MAX_LINE = 16 * 1024 * 1024


class ProtocolError(Exception):
    """The peer sent something that is not a message of this protocol, or hung up."""


def encode(kind: str, **fields: Any) -> bytes:
    return (json.dumps({"type": kind, "v": PROTOCOL, **fields}) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not a JSON line: {line[:80]!r}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError(f"not a protocol message: {line[:80]!r}")
    return message


class Channel:
    """One end of a connection: send messages, read them line by line."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""
        self._messages: list[dict[str, Any]] = []

    def send(self, kind: str, **fields: Any) -> None:
        try:
            self.sock.sendall(encode(kind, **fields))
        except OSError as exc:
            raise ProtocolError(f"connection lost ({exc})") from exc

    def has_pending(self) -> bool:
        return bool(self._messages)

    def pending(self) -> dict[str, Any] | None:
        """A message already read, if any."""
        return self._messages.pop(0) if self._messages else None

    def feed(self) -> None:
        """Read what the socket holds now (call when it is readable); EOF raises."""
        try:
            chunk = self.sock.recv(65536)
        except OSError as exc:
            raise ProtocolError(f"connection lost ({exc})") from exc
        if not chunk:
            raise ProtocolError("connection closed")
        self._buffer += chunk
        if len(self._buffer) > MAX_LINE:
            raise ProtocolError("line too long")
        *lines, self._buffer = self._buffer.split(b"\n")
        self._messages.extend(decode(line) for line in lines if line.strip())

    def receive(self) -> dict[str, Any]:
        """Block until the next message (the side's end: it has nothing else to do)."""
        while not self._messages:
            self.feed()
        return self._messages.pop(0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


#: how the idle side waits out the other side's block (``--idle``; the controller's doc)
IDLE_MODES = ("freeze", "wait")
#: the least untimed rounds a block starts with, unless ``--block-warmup`` says
DRAIN_ROUNDS = 1
#: the rounds a block times, unless ``--block-rounds`` says, when it starts with an
#: untimed round (:func:`block_plan`)
BLOCK_ROUNDS = 2


def block_plan(
    drain: int | None, rounds: int | None, idle: str, fixtures: Collection[object]
) -> tuple[int, int]:
    """(untimed rounds, timed rounds) each block of a bench runs.

    The untimed rounds are ``drain`` (``--block-warmup``), else ``DRAIN_ROUNDS``, or
    none for a bench both sides time with pytest-benchmark's ``benchmark`` fixture
    (``fixtures``, from their ``ready``) while the idle side is frozen: its rounds are
    calls of a function and a frozen side runs nothing between its blocks, so there is
    nothing to drain. A ``perf`` bench keeps its drain round: its rounds may pull from
    a pipeline whose threads ran on after the last block.

    The timed rounds are ``rounds`` (``--block-rounds``), else one when the blocks
    start with no untimed round, else ``BLOCK_ROUNDS``: a block's rounds share its
    memory layout, so a second round adds little but its time, unless it shares the
    fixed cost of a drain round.

    >>> block_plan(None, None, "freeze", ["benchmark", "benchmark"])
    (0, 1)
    >>> block_plan(None, None, "freeze", ["benchmark", "perf"])
    (1, 2)
    >>> block_plan(None, None, "wait", ["benchmark"]), block_plan(2, None, "freeze", ["benchmark"])
    ((1, 2), (2, 2))
    >>> block_plan(None, None, "freeze", ["perf", "perf"]), block_plan(0, 3, "wait", ["perf"])
    ((1, 2), (0, 3))
    """
    if drain is None:
        calls_only = bool(fixtures) and all(f == "benchmark" for f in fixtures)
        drain = 0 if idle == "freeze" and calls_only else DRAIN_ROUNDS
    if rounds is None:
        rounds = 1 if drain == 0 else BLOCK_ROUNDS
    return drain, rounds


def pair_orders(rng: random.Random, mirror: bool = False) -> tuple[str, str]:
    """The orders of two consecutive pairs: AB then BA, or BA then AB, at random;
    ``mirror`` swaps A and B in what the draw gives."""
    first = rng.choice(["AB", "BA"])
    first = first[::-1] if mirror else first
    return first, first[::-1]
