"""How busy the machine was during an A/B, and with what: the A/B, other work, the host.

A load that comes and goes between two adjacent blocks does not cancel in their pair,
so the same code may be decided quickly on a quiet machine and left ``inconclusive`` on
a busy one. The A/B says which it ran on: of the CPU time its CPUs had over the run,
the share this A/B used (its own process, both sides and whatever they started), the
share other processes used, and the share the hypervisor gave to other machines
(``steal``). It reads Linux's ``/proc/stat``; elsewhere it says nothing.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from perfsuite.ab.procfs import cpu_seconds, descendants

#: other work (other processes and steal) that makes a machine busy for an A/B, as a
#: share of its CPUs: enough to leave a bench that is decided on a quiet machine
#: ``inconclusive`` after its whole budget
BUSY = 0.10
#: the report folder's file of a :class:`MachineLoad`'s shares
MACHINE_JSON = "machine.json"


@dataclass(frozen=True)
class CpuTimes:
    """The machine's CPU seconds so far, from ``/proc/stat``'s first line."""

    cpus: int
    busy: float  # user, nice, system, irq and softirq: work done on this machine's CPUs
    steal: float  # time the hypervisor ran other machines on them


def parse_stat(text: str, ticks: int) -> CpuTimes:
    """``/proc/stat``'s text as :class:`CpuTimes` (``ticks``: clock ticks per second).

    >>> stat = "cpu  300 0 100 900 20 0 0 50 0 0\\ncpu0 150 0 50 450 10 0 0 25 0 0\\n"
    >>> parse_stat(stat + "cpu1 150 0 50 450 10 0 0 25 0 0\\nintr 1\\n", 100)
    CpuTimes(cpus=2, busy=4.0, steal=0.5)
    """
    lines = text.splitlines()
    fields = [int(f) for f in lines[0].split()[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu"))
    return CpuTimes(max(cpus, 1), (user + nice + system + irq + softirq) / ticks, steal / ticks)


def own_cpu_seconds() -> float:
    """CPU seconds of this process and every process below it: those already reaped
    (``RUSAGE_CHILDREN``) and those still running (their threads' ``schedstat``)."""
    usages = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    reaped = sum(usage.ru_utime + usage.ru_stime for usage in usages)
    return reaped + sum(cpu_seconds(pid) or 0.0 for pid in descendants(os.getpid()))


@dataclass(frozen=True)
class Snapshot:
    at: float  # time.monotonic()
    machine: CpuTimes
    own: float


def snapshot(stat: Path = Path("/proc/stat")) -> Snapshot | None:
    """The machine's CPU seconds and this process tree's now, or None off Linux."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    machine = parse_stat(text, os.sysconf("SC_CLK_TCK"))
    return Snapshot(time.monotonic(), machine, own_cpu_seconds())


@dataclass(frozen=True)
class MachineLoad:
    """Shares of the CPU time a machine's CPUs had over ``seconds``."""

    cpus: int
    seconds: float
    own: float  # this A/B
    other: float  # other processes
    steal: float  # the hypervisor, for other machines

    @classmethod
    def between(cls, start: Snapshot, end: Snapshot) -> MachineLoad:
        """The load from ``start`` to ``end``. Work this process tree did that the
        machine's counters missed (a process counted twice, a counter's granularity)
        never makes ``other`` negative.

        >>> a = Snapshot(0.0, CpuTimes(2, 100.0, 1.0), 5.0)
        >>> b = Snapshot(10.0, CpuTimes(2, 112.0, 2.0), 14.0)
        >>> MachineLoad.between(a, b)
        MachineLoad(cpus=2, seconds=10.0, own=0.45, other=0.15, steal=0.05)
        """
        seconds = end.at - start.at
        capacity = end.machine.cpus * seconds
        if capacity <= 0:
            return cls(end.machine.cpus, seconds, 0.0, 0.0, 0.0)
        own = max(0.0, end.own - start.own)
        busy = max(0.0, end.machine.busy - start.machine.busy)
        steal = max(0.0, end.machine.steal - start.machine.steal)
        return cls(
            end.machine.cpus,
            seconds,
            round(own / capacity, 4),
            round(max(0.0, busy - own) / capacity, 4),
            round(steal / capacity, 4),
        )

    @property
    def busy(self) -> bool:
        """Whether other work took ``BUSY`` or more of the CPUs."""
        return self.other + self.steal >= BUSY

    def line(self) -> str:
        """One line for the terminal and ``summary.md``.

        >>> MachineLoad(2, 75.0, 0.45, 0.15, 0.05).line()  # doctest: +NORMALIZE_WHITESPACE
        'machine during the A/B (75 s, 2 CPUs): this A/B 45%, other processes 15%,
        steal 5%: busy with other work; a load that comes and goes between blocks takes
        more pairs to average out, so a bench left inconclusive may be decided on a
        quieter machine'
        """
        said = (
            f"machine during the A/B ({self.seconds:.0f} s, {self.cpus} CPUs): this A/B "
            f"{self.own:.0%}, other processes {self.other:.0%}, steal {self.steal:.0%}"
        )
        if self.busy:
            said += (
                ": busy with other work; a load that comes and goes between blocks takes "
                "more pairs to average out, so a bench left inconclusive may be decided "
                "on a quieter machine"
            )
        return said

    def to_json(self) -> str:
        """The text of a report's ``machine.json``."""
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_report(cls, folder: Path) -> MachineLoad | None:
        """The load a report folder's ``machine.json`` holds (None without one: a run
        off Linux, or a report of a perfsuite before it)."""
        path = folder / MACHINE_JSON
        if not path.is_file():
            return None
        shares = json.loads(path.read_text())
        return cls(**{**shares, "cpus": int(shares["cpus"])})  # once written as 2.0


def measured(
    start: Snapshot | None, now: Callable[[], Snapshot | None] = snapshot
) -> MachineLoad | None:
    """The load since ``start``, or None where it cannot be read."""
    if start is None:
        return None
    end = now()
    return None if end is None else MachineLoad.between(start, end)
