"""Fresh pairs of side processes, one lockstep session each, started ahead of need.

A pair of processes costs a start-up (framework imports, datasets, warm-up) and a
teardown (fixture teardown, pytest-benchmark's JSON, the interpreter's exit; with
TensorFlow about 5 s). Neither is timed, so once a session's last block is done the
next pair (when the caller names it) starts beside the teardown; the next session's
first block waits until the teardown is over, so no timed work runs beside either.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from perfsuite.ab.controller import Controller
from perfsuite.ab.sidemanage import SideProcess
from perfsuite.ab.sidespec import SideSpec
from perfsuite.ab.verdicts import Verdicts

#: a session: the files its pair collects (None: the whole selection) and its offset,
#: which seeds its block order and which side starts first
Key = tuple[tuple[str, ...] | None, int]


class ProcessPairs:
    """Run sessions of fresh pairs of processes, keeping each side's JSON and log."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        specs: Sequence[SideSpec],
        workdir: Path,
        side_args: Sequence[str],
        seed: int,
        lockstep: Callable[[SideProcess, SideProcess, int, bool, Sequence[str] | None], Controller],
    ) -> None:
        """``lockstep(a, b, seed, mirror, only)`` makes the controller of one session."""
        self.stack, self.specs, self.workdir = stack, list(specs), workdir
        self.side_args, self.seed, self.lockstep = list(side_args), seed, lockstep
        self.jsons: dict[str, list[Path]] = {"A": [], "B": []}
        self.logs: dict[str, list[Path]] = {"A": [], "B": []}
        self._folders = itertools.count()
        self._ahead: dict[Key, tuple[list[SideProcess], str]] = {}
        #: each session's seconds, from its call to its sides' exit
        self.seconds: dict[Key, float] = {}

    def _start(self, key: Key) -> tuple[list[SideProcess], str]:
        files = key[0]
        folder = self.workdir / str(next(self._folders))
        folder.mkdir()
        sides = [SideProcess(spec, folder, self.workdir) for spec in self.specs]
        for side in sides:
            self.stack.callback(side.stop)
        first = first_side(self.seed, key)
        for side in sides if first == "A" else sides[::-1]:
            side.start(self.side_args, None if files is None else list(files))
        return sides, first

    def session(self, key: Key, only: Sequence[str] | None, then: Key | None = None) -> Verdicts:
        """One pair of fresh sides over ``key``'s files, its benches limited to ``only``
        (or all). Once its last block is done, the pair ``then`` starts."""
        start = time.monotonic()
        sides, first = self._ahead.pop(key) if key in self._ahead else self._start(key)
        seed, mirror = session_seed(self.seed, key[1])
        lockstep = self.lockstep(sides[0], sides[1], seed, mirror, only)
        lockstep.measure()
        if then is not None:
            self._ahead[then] = self._start(then)
        outcome = lockstep.finish()
        found = Verdicts.build(outcome, seed, sides[0].json_path, sides[1].json_path, self.specs)
        for run in found.runs:
            run.started.append(first)
        for side in sides:
            side.stop()
            self.jsons[side.spec.name].append(side.json_path)
            self.logs[side.spec.name].append(side.log_path)
        self.seconds[key] = time.monotonic() - start
        return found

    def series(self, keys: Sequence[Key]) -> list[Verdicts]:
        """A session over every bench for each key in turn, each next pair started ahead."""
        ahead = [*keys[1:], None]
        return [self.session(key, None, then) for key, then in zip(keys, ahead, strict=True)]

    def drop_ahead(self) -> None:
        """Stop the pairs started for sessions that will not run."""
        for sides, _ in self._ahead.values():
            for side in sides:
                side.stop()
        self._ahead.clear()


def key(files: Sequence[str] | None, offset: int) -> Key:
    """The key of the session over ``files`` (None: the whole selection) at ``offset``."""
    return (None if files is None else tuple(files), offset)


def first_side(seed: int, key: Key) -> str:
    """Which side starts first (and so sets up first, which is not neutral) in the
    pair of processes ``key``: drawn at random for a file's first pair, then
    alternating with the offset, so the pairs a confirmation is judged across are split
    evenly between the two orders."""
    files, offset = key
    drawn = random.Random(f"{seed}:{files}:start").randrange(2)
    return "AB"[(drawn + offset) % 2]


def session_seed(seed: int, offset: int) -> tuple[int, bool]:
    """(the seed of the block order, whether it is mirrored) of the session at ``offset``.

    Sessions at offsets ``2j`` and ``2j + 1`` share a seed, the second mirrored, so
    across a file's pairs of processes every pair of blocks runs in both orders as
    often, even for a bench whose small pool gives each session one pair of blocks.
    """
    return seed + offset - offset % 2, offset % 2 == 1


def by_file(nodeids: Sequence[str]) -> dict[str, list[str]]:
    """``nodeids`` grouped by bench file, in order.

    >>> by_file(["a.py::x", "b.py::y", "a.py::z"])
    {'a.py': ['a.py::x', 'a.py::z'], 'b.py': ['b.py::y']}
    """
    found: dict[str, list[str]] = {}
    for nodeid in nodeids:
        found.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    return found
