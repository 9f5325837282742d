"""Deterministic clocks: :data:`FAKE_TIMER` for pytester runs, so verdicts don't depend
on this machine's load, and :class:`Ticks` for code that takes a clock.

Write :data:`FAKE_TIMER` as ``faketimer.py`` beside the bench and pass
``--benchmark-timer=faketimer.clock``: every reading advances by ``PERF_TEST_DELAY``
seconds (default 0.01), give or take a fixed 0-0.4% pattern, so each measured round
lasts one step and runs with equal delays have equal distributions.
"""

FAKE_TIMER = """
import itertools
import os

_now = 0.0
_wobble = itertools.cycle([1.0, 1.001, 1.002, 1.003, 1.004])


def clock():
    global _now
    _now += float(os.environ.get("PERF_TEST_DELAY", "0.01")) * next(_wobble)
    return _now
"""


class Ticks:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now
