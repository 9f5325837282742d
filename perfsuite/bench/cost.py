"""Measuring what a bench costs: CPU time, resident memory and GPU memory, round by round.

:func:`attach` hands pytest-benchmark's ``benchmark`` fixture a :class:`CostMeter`: it
wraps the fixture's runner, so each round (one runner call; calibration and warm-up
rounds included) has its CPU time and the process's resident memory read just before
and after it, outside the round's timed region. :meth:`CostMeter.finish` keeps the
measured rounds, which pytest-benchmark runs last (``len(stats.data)`` of them), and
reads the bench's peaks.

CPU time is user plus system time of every thread of this process
(``time.process_time``), of its children it has reaped (``getrusage``), and of the
children alive when the meter started (psutil); children started during the bench and
still alive at its end are added to the total when it ends. Wall time spans the same
readings, so a bench on one thread reads at most one core. A live child's CPU time
costs tens of microseconds to read and counts in clock ticks (10 ms), so it is read
at a round's end, at most once a millisecond and in at most ``CHILD_SHARE`` of the
time (and whenever a child was reaped): the round whose end reads them carries the
children's CPU since the last reading, and a bench's total is read afresh when it
ends. However short its rounds, reading its live children so takes at most
``CHILD_SHARE`` of a bench's time.

Peak memory is this process's high-water mark, reset when the meter starts
(``/proc/<pid>/clear_refs``; where that is refused, the highest resident memory seen
between rounds), less its resident memory then, plus each live child's high-water mark
less its resident memory then (a sum: an upper bound of the joint peak). A child that
ended during the bench counts only where its peak beats every child reaped before
(``getrusage`` keeps one maximum). Resident memory after the rounds is read at most
once a millisecond. GPU memory is torch's or TensorFlow's peak allocation, where the bench
had already imported the framework and initialized a GPU.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfsuite.verdict.cost import Cost, thin

MB = 1024.0 * 1024.0
#: the least time between two readings of resident memory between rounds
RSS_EVERY_S = 0.001
#: the least time between two readings of the live children's CPU time
CHILD_EVERY_S = 0.001
#: the most of the time that reading the live children's CPU time may take
CHILD_SHARE = 0.05
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _status_kb(pid: int | str, key: str) -> float | None:
    """``VmHWM`` or ``VmRSS`` of ``/proc/<pid>/status`` in kB, where readable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return float(line.split()[1])
    return None


def _reset_peak(pid: int | str) -> bool:
    """Reset a process's resident high-water mark (Linux 4.0+); whether it worked."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


def _own_rss_mb() -> float:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE / MB
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _gpu_allocated() -> tuple[str, float] | None:
    """The framework holding GPU memory in this process and its allocation now, in bytes."""
    torch = sys.modules.get("torch")
    with contextlib.suppress(Exception):
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return "torch", float(torch.cuda.memory_allocated())
    tf = sys.modules.get("tensorflow")
    with contextlib.suppress(Exception):
        if tf is not None and tf.config.list_logical_devices("GPU"):
            return "tensorflow", float(tf.config.experimental.get_memory_info("GPU:0")["current"])
    return None


def _reset_gpu_peak(framework: str) -> None:
    with contextlib.suppress(Exception):
        if framework == "torch":
            sys.modules["torch"].cuda.reset_peak_memory_stats()
        else:
            sys.modules["tensorflow"].config.experimental.reset_memory_stats("GPU:0")


def _gpu_peak(framework: str) -> float | None:
    with contextlib.suppress(Exception):
        if framework == "torch":
            return float(sys.modules["torch"].cuda.max_memory_allocated())
        info = sys.modules["tensorflow"].config.experimental.get_memory_info("GPU:0")
        return float(info["peak"])
    return None


class CostMeter:
    """One bench's cost: started where it is made, ended by :meth:`finish`."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        """``clock`` times the readings of the live children's CPU (see :meth:`cpu`)."""
        import psutil

        self._psutil = psutil
        self._children = {child.pid: child for child in self._live_children()}
        self._child_rss0 = {pid: self._child_rss(child) for pid, child in self._children.items()}
        self._child_reset = {pid: _reset_peak(pid) for pid in self._children}
        self._reset = _reset_peak("self")
        self._rss0 = _own_rss_mb()
        self._reaped_peak0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        gpu = _gpu_allocated()
        if gpu is not None:
            _reset_gpu_peak(gpu[0])
        self._gpu0 = gpu
        #: per round: CPU seconds and wall seconds
        self.cpu_s = array("d")
        self.wall_s = array("d")
        #: (round index, resident MB after it), read at most once a millisecond
        self.rss: list[tuple[int, float]] = []
        self._next_rss = 0.0
        #: the live children's CPU seconds at their last reading, when the next is due,
        #: and the reaped children's CPU seconds at the last call of :meth:`cpu`
        self._children_s = 0.0
        self._clock, self._next_children = clock, 0.0
        self._reaped_s = -1.0

    def _live_children(self) -> list[Any]:
        try:
            return list(self._psutil.Process().children(recursive=True))
        except self._psutil.Error:
            return []

    def _child_rss(self, child: Any) -> float:
        try:
            return float(child.memory_info().rss) / MB
        except self._psutil.Error:
            return 0.0

    def _child_cpu(self, child: Any) -> float | None:
        try:
            t = child.cpu_times()
        except self._psutil.Error:
            return None
        return float(t.user + t.system + t.children_user + t.children_system)

    def cpu(self, fresh: bool = False, due: bool = True) -> float:
        """CPU seconds so far: this process, its reaped children, its tracked live ones
        as last read. Those are read afresh where ``fresh``, where a child was reaped
        since the last call, and where ``due`` and the next reading is due (see the
        module docstring). A round's start passes ``due=False``, so the children's CPU
        since the last reading lands in a round, at its end."""
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        reaped_s = reaped.ru_utime + reaped.ru_stime
        if self._children:
            now = self._clock()
            late = due and now >= self._next_children
            if fresh or late or reaped_s != self._reaped_s:
                self._children_s = sum(self._child_cpu(c) or 0.0 for c in self._children.values())
                took = self._clock() - now
                self._next_children = now + max(CHILD_EVERY_S, took / CHILD_SHARE)
        self._reaped_s = reaped_s
        return time.process_time() + reaped_s + self._children_s

    def wrap(self, runner: Callable[..., Any]) -> Callable[..., Any]:
        """``runner`` (one round), with its CPU time, wall time and memory recorded."""

        def measured(*args: Any, **kwargs: Any) -> Any:
            wall0 = time.perf_counter()
            cpu0 = self.cpu(due=False)
            try:
                return runner(*args, **kwargs)
            finally:
                self.cpu_s.append(max(self.cpu() - cpu0, 0.0))
                now = time.perf_counter()
                self.wall_s.append(now - wall0)
                if now >= self._next_rss:
                    self.rss.append((len(self.cpu_s) - 1, _own_rss_mb()))
                    self._next_rss = time.perf_counter() + RSS_EVERY_S

        return measured

    def _new_children_cpu(self) -> float:
        """CPU seconds of the children started since the meter started and alive now."""
        new = [c for c in self._live_children() if c.pid not in self._children]
        return sum(self._child_cpu(child) or 0.0 for child in new)

    def peak_mb(self) -> float:
        """The rise of resident memory so far above the start, children included (MB)."""
        peak_children = 0.0
        for child in self._live_children():
            peak = _status_kb(child.pid, "VmHWM")
            peak_mb = peak / 1024.0 if peak is not None else self._child_rss(child)
            if child.pid in self._children and not self._child_reset.get(child.pid):
                peak_mb = self._child_rss(child)
            peak_children += max(peak_mb - self._child_rss0.get(child.pid, 0.0), 0.0)
        reaped_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        if reaped_peak > self._reaped_peak0:  # a child that ended since peaked so
            peak_children += reaped_peak
        high = _status_kb("self", "VmHWM") if self._reset else None
        seen = max([_own_rss_mb(), *(mb for _, mb in self.rss)])
        own_peak = high / 1024.0 if high is not None else seen
        return max(own_peak - self._rss0, 0.0) + peak_children

    def finish(self, measured: int, round_calls: int) -> Cost | None:
        """The cost of the last ``measured`` rounds (``round_calls`` calls each), or
        ``None`` where fewer rounds ran (benchmarks disabled)."""
        total = len(self.cpu_s)
        if measured <= 0 or total < measured or round_calls <= 0:
            return None
        first = total - measured  # the measured rounds' first index
        if self._children:  # the live children's CPU since their last reading
            last = self._children_s
            self.cpu(fresh=True)
            self.cpu_s[-1] += max(self._children_s - last, 0.0)
        timed_cpu = self.cpu_s[first:]
        cpu = sum(timed_cpu) + self._new_children_cpu()
        end_rss = _own_rss_mb()
        before = [mb for index, mb in self.rss if index < first]
        timed_rss = [mb for index, mb in self.rss if index >= first]
        start_rss = before[-1] if before else self._rss0
        gpu_peak = None
        gpu = _gpu_allocated()
        if gpu is not None:
            peak_bytes = _gpu_peak(gpu[0])
            held = self._gpu0[1] if self._gpu0 is not None and self._gpu0[0] == gpu[0] else 0.0
            if peak_bytes is not None:
                gpu_peak = max(peak_bytes - held, 0.0) / MB
        warm = first > 0
        return Cost(
            calls=measured * round_calls,
            round_calls=round_calls,
            cpu_s=cpu,
            wall_s=sum(self.wall_s[first:]),
            rounds_cpu_s=tuple(timed_cpu),
            peak_rss_mb=self.peak_mb(),
            rss_growth_mb=(timed_rss[-1] if timed_rss else end_rss) - start_rss,
            rounds_rss_mb=tuple(thin(timed_rss)),
            gpu_peak_mb=gpu_peak,
            warmup_cpu_s=sum(self.cpu_s[:first]) if warm else None,
            warmup_wall_s=sum(self.wall_s[:first]) if warm else None,
        )


#: set to ``off`` to measure no bench's cost (what measuring costs is shown against it)
SWITCH_ENV = "PERFSUITE_COST"


def start() -> CostMeter | None:
    """A meter started now; ``None`` where psutil cannot read this process or
    ``PERFSUITE_COST=off``."""
    if os.environ.get(SWITCH_ENV, "").strip().lower() == "off":
        return None
    try:
        return CostMeter()
    except Exception:
        return None


def attach(benchmark: Any) -> CostMeter | None:
    """Start a meter on pytest-benchmark's fixture: its runner is wrapped from now on.

    ``None`` where the fixture has no ``_make_runner`` to wrap (a pytest-benchmark
    this perfsuite does not know) or psutil cannot start.
    """
    make_runner = getattr(benchmark, "_make_runner", None)
    meter = start() if make_runner is not None else None
    if make_runner is None or meter is None:
        return None

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return meter.wrap(make_runner(*args, **kwargs))

    benchmark._make_runner = wrapped
    return meter


def finish(meter: CostMeter, benchmark: Any) -> Cost | None:
    """The meter's cost for the rounds the fixture recorded (``None`` if none)."""
    stats = getattr(benchmark, "stats", None)
    inner = getattr(stats, "stats", None)
    data = list(getattr(inner, "data", []) or [])
    iterations = getattr(stats, "iterations", None) or getattr(inner, "iterations", None) or 1
    return meter.finish(len(data), int(iterations))
