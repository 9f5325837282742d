"""The CPU time of a bench's live child processes: read rarely enough that a bench of
microsecond rounds beside them is not slowed, and still counted whole when it ends."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from perfsuite.bench import cost
from tests.fake_timer import Ticks

#: CPU seconds the child burns once told to
BURN_S = 0.3
CHILD = f"""
import sys
import time

sys.stdin.readline()
end = time.process_time() + {BURN_S}
while time.process_time() < end:
    pass
time.sleep(60)
"""


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A live child of this process, idle until a line reaches its stdin."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def counted_reads(meter: cost.CostMeter, extra: Any = None) -> list[int]:
    """The pids of ``meter``'s readings of a live child, as they happen; ``extra()`` runs
    with each."""
    reads: list[int] = []
    real = meter._child_cpu

    def reading(child: Any) -> float | None:
        reads.append(child.pid)
        if extra is not None:
            extra()
        return real(child)

    meter._child_cpu = reading  # type: ignore[method-assign]
    return reads


def test_live_children_are_read_at_most_once_a_millisecond(
    child: subprocess.Popen[bytes],
) -> None:
    clock = Ticks(1e-6)
    meter = cost.CostMeter(clock=clock)
    reads = counted_reads(meter)
    for _ in range(10_000):
        meter.cpu()
    # 10,000 calls one microsecond apart (two where it reads): 10-11 ms of the clock
    assert child.pid in reads
    assert len(reads) <= clock.now / cost.CHILD_EVERY_S + 1
    meter.cpu(fresh=True)
    assert len(reads) <= clock.now / cost.CHILD_EVERY_S + 2


def test_a_slow_reading_of_the_children_takes_at_most_its_share(
    child: subprocess.Popen[bytes],
) -> None:
    clock = Ticks(1e-6)
    meter = cost.CostMeter(clock=clock)
    read_s = 200e-6  # each reading of the child takes 200 us of the clock

    def slow() -> None:
        clock.now += read_s

    reads = counted_reads(meter, slow)
    for _ in range(20_000):
        meter.cpu()
    assert len(reads) >= 2
    assert len(reads) * read_s <= cost.CHILD_SHARE * clock.now + read_s


def test_a_live_childs_cpu_is_counted_whole_across_microsecond_rounds(
    child: subprocess.Popen[bytes],
) -> None:
    meter = cost.CostMeter()
    reads = counted_reads(meter)
    runner = meter.wrap(lambda: None)
    runner()
    assert child.stdin is not None
    child.stdin.write(b"go\n")
    child.stdin.flush()
    watched, deadline = psutil.Process(child.pid), time.monotonic() + 60
    while time.monotonic() < deadline:
        times = watched.cpu_times()
        if times.user + times.system >= BURN_S:
            break
        for _ in range(1000):
            runner()
    rounds = len(meter.cpu_s)
    spent = meter.finish(rounds, 1)
    assert spent is not None
    assert len(spent.rounds_cpu_s) == rounds
    # the child's burn, at clock-tick resolution, with this process's own rounds on top
    assert spent.cpu_s >= BURN_S - 0.02
    assert sum(spent.rounds_cpu_s) == pytest.approx(spent.cpu_s)
    # each round read the child twice before; now a few rounds in a thousand do
    assert len(reads) * 10 < rounds
