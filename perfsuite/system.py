"""``perfsuite system``: what on this machine would make timings noisy.

In the manner of ``pyperf system show`` it reads, and changes nothing:

* the CPUs perfsuite may run on (its affinity) and the machine's;
* CPU frequency scaling where Linux shows it (``/sys/devices/system/cpu``): the
  driver, each CPU's governor, the frequency range, whether turbo is on, and the CPUs
  isolated from the scheduler;
* the load average, and over a short sample (``--seconds``) the share of the CPUs that
  other processes and the hypervisor (steal) took, read from ``/proc/stat`` as
  ``perfsuite ab`` reads it (:mod:`perfsuite.ab.load`);
* over the same sample, how steady a fixed piece of pure-Python work runs: its median
  round, their coefficient of variation ("cv") and the median change between adjacent
  rounds, which is the noise a pair of blocks sees;
* the GPU through NVML, where there is one: its name, driver, clocks, temperature,
  power and the reasons NVML gives for its clocks (:mod:`perfsuite.bench.clocks`);

and ends with what of these would make timings noisy, each with what would steady it,
or says that it found nothing. It imports no framework and needs no GPU; it always
exits 0 (:class:`~perfsuite.exitcodes.ExitCode`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfsuite.exitcodes import ExitCode

if TYPE_CHECKING:
    from perfsuite.ab.load import MachineLoad
    from perfsuite.bench.clocks import ClockReading

CPU_SYSFS = Path("/sys/devices/system/cpu")
#: the fixed work: a pure-Python loop of this many additions (30-60 ms on a 2-core VM)
WORK = 1_000_000
DEFAULT_SECONDS = 2.0
#: a round-to-round cv of the fixed work above this is noise that takes many pairs
NOISY_CV = 0.05
#: steal above this share of the CPUs: the hypervisor's other machines are busy
NOISY_STEAL = 0.02


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _mhz(path: Path) -> int | None:
    text = _read(path)
    return int(text) // 1000 if text and text.isdigit() else None


@dataclass(frozen=True)
class CpuFrequency:
    """What Linux shows of CPU frequency scaling; ``None``: not shown."""

    driver: str | None
    governors: dict[str, list[int]]  # governor -> the CPUs it runs
    min_mhz: int | None
    max_mhz: int | None
    now_mhz: list[int]
    turbo: bool | None


def cpu_frequency(root: Path = CPU_SYSFS) -> CpuFrequency | None:
    """The frequency scaling of the CPUs under ``root``, or None where they have no
    ``cpufreq`` (a virtual machine's CPUs, or no driver)."""
    folders = sorted(
        (int(p.parent.name[3:]), p)
        for p in root.glob("cpu[0-9]*/cpufreq")
        if p.parent.name[3:].isdigit()
    )
    if not folders:
        return None
    governors: dict[str, list[int]] = {}
    for cpu, folder in folders:
        governors.setdefault(_read(folder / "scaling_governor") or "?", []).append(cpu)
    first = folders[0][1]
    now = [_mhz(folder / "scaling_cur_freq") for _, folder in folders]
    no_turbo = _read(root / "intel_pstate" / "no_turbo")
    boost = _read(root / "cpufreq" / "boost")
    turbo = no_turbo == "0" if no_turbo is not None else (boost == "1" if boost else None)
    return CpuFrequency(
        _read(first / "scaling_driver"),
        governors,
        _mhz(first / "cpuinfo_min_freq"),
        _mhz(first / "cpuinfo_max_freq"),
        [mhz for mhz in now if mhz is not None],
        turbo,
    )


def spin(n: int) -> int:
    """The fixed work: a pure-Python loop of ``n`` additions."""
    total = 0
    for i in range(n):
        total += i
    return total


@dataclass(frozen=True)
class Steadiness:
    """Rounds of the fixed work, back to back: how alike they ran."""

    rounds: int
    median_s: float
    cv: float  # standard deviation over mean
    adjacent: float  # median relative change between two successive rounds

    @classmethod
    def of(cls, times: list[float]) -> Steadiness:
        """
        >>> Steadiness.of([0.04, 0.042, 0.04, 0.044])
        Steadiness(rounds=4, median_s=0.041, cv=0.04, adjacent=0.05)
        """
        cv = statistics.pstdev(times) / statistics.fmean(times)
        adjacent = statistics.median(abs(b / a - 1) for a, b in itertools.pairwise(times))
        return cls(len(times), statistics.median(times), round(cv, 4), round(adjacent, 4))


def time_rounds(
    seconds: float, work: Callable[[], object], clock: Callable[[], float] = time.perf_counter
) -> list[float]:
    """Rounds of ``work``, back to back, for about ``seconds`` (at least three), after
    one untimed round."""
    work()
    times: list[float] = []
    end = clock() + seconds
    while len(times) < 3 or clock() < end:
        start = clock()
        work()
        times.append(clock() - start)
    return times


@dataclass(frozen=True)
class GpuState:
    """The GPU as NVML shows it: ``reading`` None where NVML cannot be read (``problem``)."""

    name: str | None
    driver: str | None
    reading: ClockReading | None
    problem: str | None = None


def gpu_state() -> GpuState | None:
    """The first visible GPU's state, or None where there is no GPU (no framework is
    imported: Linux's device nodes and NVML answer)."""
    from perfsuite.bench.clocks import Nvml, first_visible
    from perfsuite.bench.gpu import no_gpu_node, nvml_facts

    facts = nvml_facts()
    if no_gpu_node() is not None and not facts.get("count"):
        return None
    nvml = Nvml.open(first_visible(os.environ.get("CUDA_VISIBLE_DEVICES")))
    if isinstance(nvml, str):
        return GpuState(facts.get("name"), facts.get("driver"), None, nvml)
    return GpuState(facts.get("name"), facts.get("driver"), nvml.read())


@dataclass(frozen=True)
class SystemFacts:
    """What ``perfsuite system`` read; ``None``: not readable here."""

    cpus: int  # usable by this process
    machine_cpus: int
    model: str
    frequency: CpuFrequency | None
    isolated: str  # the kernel's list of isolated CPUs, "" when none
    load_average: tuple[float, float, float] | None
    load: MachineLoad | None
    steadiness: Steadiness
    gpu: GpuState | None
    no_gpu: str = ""  # why there is none


def gather(seconds: float) -> SystemFacts:
    """Read the machine, timing the fixed work over ``seconds`` (the load's sample)."""
    from perfsuite.ab.load import measured, snapshot
    from perfsuite.bench.gpu import no_gpu_node
    from perfsuite.bench.machine import cpu_model, usable_cpus

    try:
        load_average: tuple[float, float, float] | None = os.getloadavg()
    except OSError:
        load_average = None
    start = snapshot()
    times = time_rounds(seconds, lambda: spin(WORK))
    load = measured(start)
    return SystemFacts(
        cpus=usable_cpus(),
        machine_cpus=os.cpu_count() or 1,
        model=cpu_model(),
        frequency=cpu_frequency(),
        isolated=_read(CPU_SYSFS / "isolated") or "",
        load_average=load_average,
        load=load,
        steadiness=Steadiness.of(times),
        gpu=gpu_state(),
        no_gpu=no_gpu_node() or "",
    )


def noisy(facts: SystemFacts) -> list[str]:
    """What of ``facts`` would make timings noisy, each with what would steady it."""
    found = []
    frequency = facts.frequency
    if frequency is not None:
        for governor, cpus in frequency.governors.items():
            if governor != "performance":
                found.append(
                    f"CPU governor {governor} on CPU {_cpus(cpus)}: the clock follows the "
                    "load, so a round's speed depends on what ran before it; set the "
                    "performance governor (sudo cpupower frequency-set -g performance)"
                )
        if frequency.turbo:
            found.append(
                "turbo on: the clock follows the temperature and how many cores are busy; "
                "turn it off for steadier timings (intel_pstate/no_turbo or cpufreq/boost)"
            )
    load = facts.load
    if load is not None and load.busy:  # other work took perfsuite.ab.load.BUSY or more
        found.append(
            f"other work took {load.other + load.steal:.0%} of the CPUs over "
            f"{load.seconds:.1f} s (other processes {load.other:.0%}, steal "
            f"{load.steal:.0%}): it slows whichever block it lands on, so an A/B needs "
            "more pairs and saved runs differ; stop it, or time on a quieter machine"
        )
    if load is not None and load.steal >= NOISY_STEAL:
        found.append(
            f"the hypervisor gave {load.steal:.0%} of these CPUs to other machines "
            "(steal): a shared virtual machine's neighbours come and go"
        )
    if facts.load_average is not None and facts.load_average[0] > facts.machine_cpus:
        found.append(
            f"load average {facts.load_average[0]:.2f} over {facts.machine_cpus} CPUs: "
            "runnable work waits for a CPU"
        )
    if facts.steadiness.cv > NOISY_CV:
        found.append(
            f"the fixed work varied by {facts.steadiness.cv:.1%} (cv) from round to round, "
            f"over {NOISY_CV:.0%}: the pairs an A/B needs grow with the square of that noise"
        )
    gpu = facts.gpu
    if gpu is not None and gpu.reading is not None and gpu.reading.slowdowns:
        found.append(
            f"GPU clocks held down now ({', '.join(gpu.reading.slowdowns)}): its timings "
            "follow power and heat"
        )
    if gpu is not None and gpu.reading is None:
        found.append(f"a GPU is here but its clocks cannot be watched: {gpu.problem}")
    return found


def _cpus(cpus: list[int]) -> str:
    """
    >>> _cpus([0, 1, 2, 5])
    '0-2,5'
    """
    runs = []
    for _, group in itertools.groupby(enumerate(cpus), lambda pair: pair[1] - pair[0]):
        numbers = [cpu for _, cpu in group]
        runs.append(str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}")
    return ",".join(runs)


def _frequency_line(frequency: CpuFrequency | None) -> str:
    if frequency is None:
        return (
            f"CPU frequency scaling: not shown (no {CPU_SYSFS}/cpu*/cpufreq: a virtual "
            "machine's CPUs, or no cpufreq driver)"
        )
    governors = "; ".join(f"{g} on CPU {_cpus(c)}" for g, c in frequency.governors.items())
    span = f"{frequency.min_mhz}-{frequency.max_mhz} MHz" if frequency.max_mhz else "range ?"
    now = (
        f", now {min(frequency.now_mhz)}-{max(frequency.now_mhz)} MHz" if frequency.now_mhz else ""
    )
    turbo = {None: "", True: ", turbo on", False: ", turbo off"}[frequency.turbo]
    return (
        f"CPU frequency scaling: {frequency.driver or 'driver ?'}, governor {governors}, "
        f"{span}{now}{turbo}"
    )


def _gpu_line(facts: SystemFacts) -> str:
    gpu = facts.gpu
    if gpu is None:
        return f"GPU: none: {facts.no_gpu or 'NVML sees none'}"
    said = f"GPU: {gpu.name or '?'}, driver {gpu.driver or '?'}"
    reading = gpu.reading
    if reading is None:
        return f"{said}; clocks not readable: {gpu.problem}"
    power = f", {reading.power_w:g} W" if reading.power_w is not None else ""
    reasons = ", ".join(reading.to_dict()["reasons"]) or "none"
    return (
        f"{said}: SM {reading.sm_mhz} MHz, memory {reading.mem_mhz} MHz, "
        f"{reading.temp_c} C{power}; clock reasons: {reasons}"
    )


def lines(facts: SystemFacts) -> list[str]:
    """``perfsuite system``'s output."""
    said = [
        "perfsuite system: this machine as perfsuite times on it (nothing was changed)",
        f"CPUs: {facts.cpus} usable of {facts.machine_cpus}: {facts.model}",
        _frequency_line(facts.frequency),
        f"Isolated CPUs: {facts.isolated or 'none'}",
    ]
    if facts.load_average is not None:
        one, five, fifteen = facts.load_average
        said.append(f"Load average: {one:.2f}, {five:.2f}, {fifteen:.2f} (1, 5, 15 min)")
    load = facts.load
    if load is not None:
        said.append(
            f"Over {load.seconds:.1f} s: other processes {load.other:.0%} of the CPUs, "
            f"steal {load.steal:.0%} (this command {load.own:.0%})"
        )
    steady = facts.steadiness
    said.append(
        f"Fixed work: {steady.rounds} rounds, median {steady.median_s * 1000:.1f} ms, "
        f"cv {steady.cv:.1%}, adjacent rounds {steady.adjacent:.1%} apart"
    )
    said.append(_gpu_line(facts))
    found = noisy(facts)
    said.append("Noisy: " + ("nothing found" if not found else f"{len(found)} finding(s)"))
    said.extend(f"  - {line}" for line in found)
    return said


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 60:
        raise argparse.ArgumentTypeError(f"invalid seconds {value!r} (a number in (0, 60])")
    return seconds


#: the ``system`` subcommand's line in ``perfsuite --help``, and its description
SUMMARY = (
    "what on this machine would make timings noisy (CPUs, frequency scaling, load, "
    "GPU clocks); exit 0"
)
DESCRIPTION = (
    "Show the CPUs, their frequency scaling, the load and other processes' share of the "
    "CPUs over a short sample, how steady a fixed piece of work runs over it, and the "
    "GPU's clocks through NVML where there is a GPU; then what of these would make "
    "timings noisy. Changes nothing. Exit status 0."
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``system`` subcommand's arguments."""
    system = commands.add_parser("system", help=SUMMARY, description=DESCRIPTION)
    system.add_argument(
        "--seconds",
        type=_seconds,
        default=DEFAULT_SECONDS,
        metavar="S",
        help=f"how long to sample the load and time the fixed work (default {DEFAULT_SECONDS:g})",
    )


def run_system(args: argparse.Namespace) -> int:
    """``perfsuite system``: print what :func:`gather` read and :func:`noisy` found."""
    print("\n".join(lines(gather(args.seconds))))
    return ExitCode.OK
