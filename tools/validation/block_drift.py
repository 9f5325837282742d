"""How far this machine's speed moves between blocks of a decode, outside perfsuite.

The noise floor under any A/B of a single-threaded PIL decode: the pytest-benchmark
user's ``decode_all`` (``tools/validation/user_suite.py``: 20 JPEGs of 400x300, then 4
of them again). Nothing of perfsuite runs and no memory layout is drawn:

* ``drift``: one process times ``--rounds`` rounds back to back and prints the sd of
  the log-ratio between rounds that many apart (1, 3, 10, 100): how the machine's
  speed moves with time alone;
* ``one``, ``two``, ``own``, ``stop``: blocks of an untimed round then
  ``--block-rounds`` timed ones (their median), in pairs: one process timing both
  blocks of a pair (``one``), or two forked processes taking turns over pipes
  (``two``), each of them decoding JPEGs it made itself rather than its parent's
  (``own``: no page of data shared), or the idle one stopped with SIGSTOP as
  ``perfsuite ab --idle freeze`` does (``stop``). Each prints the sd of the paired
  log-ratios, which a paired test's pairs need against a 5% threshold, and (two
  processes) the sd of the first process's own blocks.

Usage::

    python tools/validation/block_drift.py [--modes drift,one,two,own,stop] [--pairs 300]
        [--block-rounds 2] [--rounds 2000]
"""

from __future__ import annotations

import argparse
import io
import math
import os
import re
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from tools.validation import user_suite

MODES = ("drift", "one", "two", "own", "stop")


def decoder() -> Callable[[], None]:
    """``decode_all`` over the JPEGs of the suite's ``jpegs`` fixture, from the module
    text ``tools/validation/user_suite.py`` writes into the user's repository."""
    import numpy as np
    from PIL import Image

    suite: dict[str, Any] = {}
    exec(user_suite.COMMON.format(extra=0.2, comment=""), suite)  # the suite's own text
    seed = re.search(r"default_rng\((\d+)\)", user_suite.COMMON)
    if seed is None:
        raise RuntimeError("user_suite.COMMON no longer seeds its JPEGs with default_rng(N)")
    rng = np.random.default_rng(int(seed.group(1)))
    jpegs = []
    for _ in range(suite["IMAGES"]):
        buffer = io.BytesIO()
        Image.fromarray(suite["_picture"](rng)).save(buffer, "JPEG", quality=90)
        jpegs.append(buffer.getvalue())
    decode_all: Callable[[list[bytes]], None] = suite["decode_all"]
    return lambda: decode_all(jpegs)


def timed(decode: Callable[[], None]) -> float:
    """The seconds of one round."""
    start = time.perf_counter()
    decode()
    return time.perf_counter() - start


def block(decode: Callable[[], None], rounds: int) -> float:
    """An untimed round, then the median seconds of ``rounds`` timed ones."""
    decode()
    return statistics.median(timed(decode) for _ in range(rounds))


def drift(decode: Callable[[], None], rounds: int) -> str:
    times = [math.log(timed(decode)) for _ in range(rounds)]
    parts = []
    for lag in (1, 3, 10, 100):
        if lag < rounds - 1:
            diffs = [b - a for a, b in zip(times, times[lag:], strict=False)]
            parts.append(f"{lag} apart {statistics.pstdev(diffs):.3f}")
    return f"round {math.exp(statistics.median(times)) * 1000:.1f} ms; sd of log-ratio, " + (
        ", ".join(parts)
    )


def _worker(decode: Callable[[], None], rounds: int, inbox: int, outbox: int) -> None:
    """A child's loop: a block per byte read, its seconds written back; EOF ends it."""
    while os.read(inbox, 1):
        os.write(outbox, f"{block(decode, rounds)!r}\n".encode().ljust(32))
    os._exit(0)


def paired(decode: Callable[[], None], mode: str, pairs: int, rounds: int) -> str:
    """The sd of ``pairs`` paired log-ratios (B over A) in ``mode``."""
    if mode == "one":
        ratios = [math.log(block(decode, rounds) / block(decode, rounds)) for _ in range(pairs)]
        return f"sd of a pair {statistics.pstdev(ratios):.3f}"
    children = []
    for _ in range(2):
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into the caller's code
            try:
                os.close(to_child)
                os.close(from_child)
                if mode == "own":
                    decode = decoder()
                    decode()
                _worker(decode, rounds, child_in, child_out)
            finally:
                os._exit(1)
        os.close(child_in)
        os.close(child_out)
        children.append((pid, to_child, from_child))
    seconds: list[list[float]] = [[], []]
    try:
        for p in range(pairs):
            for i in (0, 1) if p % 2 == 0 else (1, 0):  # ABBA
                pid, to_child, from_child = children[i]
                if mode == "stop":
                    os.kill(pid, signal.SIGCONT)
                os.write(to_child, b"b")
                seconds[i].append(float(os.read(from_child, 32).decode()))
                if mode == "stop":
                    os.kill(pid, signal.SIGSTOP)
    finally:
        for pid, to_child, from_child in children:  # a later child holds an earlier's pipes
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(to_child)
            os.close(from_child)
    ratios = [math.log(b / a) for a, b in zip(seconds[0], seconds[1], strict=True)]
    own = statistics.pstdev(math.log(a) for a in seconds[0])
    return f"sd of a pair {statistics.pstdev(ratios):.3f}, of a block {own:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="drift,one,two,own,stop")
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--block-rounds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"--modes: unknown mode {mode!r} ({', '.join(MODES)})")
    decode = decoder()
    for _ in range(10):
        decode()
    for mode in modes:
        if mode == "drift":
            print(f"drift: {drift(decode, args.rounds)}", flush=True)
        else:
            print(f"{mode}: {paired(decode, mode, args.pairs, args.block_rounds)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
