"""GPU clocks through NVML: brought to a steady state before timing, watched while timing.

A GPU's SM clock idles low (a few hundred MHz) and ramps up under load; power and heat
can pull it down again mid-run. Around the timed rounds of a GPU bench,
:class:`ClockWatch`:

1. keeps the GPU busy until successive SM clock readings agree (:func:`settle`),
2. reads the clocks, temperature, power and clock-event reasons (``before``),
3. samples them every ``interval`` seconds while the rounds run,
4. reads them once more (``after``),

and :func:`clock_report` turns those readings into the ``gpu`` object saved with the
bench's result (``extra_info["perfsuite"]["gpu"]``)::

    {"before": {"sm_mhz": 1980, "mem_mhz": 2619, "temp_c": 41, "power_w": 118.2,
                "reasons": []},
     "after": {...}, "samples": 12,
     "sm_mhz_min": 1965, "sm_mhz_max": 1980, "mem_mhz_min": 2619, "mem_mhz_max": 2619,
     "temp_c_max": 44, "power_w_max": 301.5,
     "settled": true, "settle_s": 0.62, "slowdowns": [],
     "clocks_moved": false, "throttled": false}

``clocks_moved``: some reading's SM clock fell more than ``CLOCK_TOLERANCE`` below the
highest reading, or the memory clock changed by more than that. ``throttled``: some
reading named a slowdown reason (power cap, thermal or hardware slowdown, power
brake). NVML is nvidia-ml-py's module ``pynvml``, imported on first use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: the largest relative change of a clock across one bench's readings that is not a move
CLOCK_TOLERANCE = 0.05
#: NVML clock-event reasons that slow the GPU down, by bit
SLOWDOWNS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
#: the other reasons NVML gives for the clocks it runs at: none of them slows work down
OTHER_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x10: "sync_boost",
    0x100: "display_clock_setting",
}
REASONS = {**SLOWDOWNS, **OTHER_REASONS}
NVML_HINT = "pip install 'perfsuite[gpu]' (nvidia-ml-py)"


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading of the GPU: clocks, temperature, power and the clock-event reasons."""

    sm_mhz: int
    mem_mhz: int
    temp_c: int
    power_w: float | None  # None where the board does not report it
    reasons: int = 0  # NVML's bit mask

    @property
    def slowdowns(self) -> list[str]:
        return [name for bit, name in SLOWDOWNS.items() if self.reasons & bit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sm_mhz": self.sm_mhz,
            "mem_mhz": self.mem_mhz,
            "temp_c": self.temp_c,
            "power_w": self.power_w,
            "reasons": [name for bit, name in REASONS.items() if self.reasons & bit],
        }


Reader = Callable[[], ClockReading]


class Nvml:
    """One GPU as NVML sees it; :meth:`open` says why not where NVML cannot be used."""

    def __init__(self, module: Any, handle: Any) -> None:
        self._nvml = module
        self._handle = handle
        self._reasons = getattr(
            module,
            "nvmlDeviceGetCurrentClocksEventReasons",
            getattr(module, "nvmlDeviceGetCurrentClocksThrottleReasons", None),
        )

    @classmethod
    def open(cls, device: str | None = None) -> Nvml | str:
        """The GPU named by ``device`` (an NVML index or a ``GPU-`` UUID, as
        ``CUDA_VISIBLE_DEVICES`` names its first entry; default index 0), or why not."""
        try:
            import pynvml
        except ImportError:
            return f"nvidia-ml-py is not installed: {NVML_HINT}"
        try:
            pynvml.nvmlInit()
            if device and device.startswith("GPU-"):
                handle = pynvml.nvmlDeviceGetHandleByUUID(device)
            else:
                handle = pynvml.nvmlDeviceGetHandleByIndex(int(device) if device else 0)
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, NotFound, ...
            return f"NVML is unavailable: {type(exc).__name__}: {exc}"
        return cls(pynvml, handle)

    def read(self) -> ClockReading:
        nvml, handle = self._nvml, self._handle
        try:
            power: float | None = round(nvml.nvmlDeviceGetPowerUsage(handle) / 1000, 1)
        except Exception:  # NVMLError_NotSupported on some boards
            power = None
        return ClockReading(
            sm_mhz=int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
            mem_mhz=int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)),
            temp_c=int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
            power_w=power,
            reasons=int(self._reasons(handle)) if self._reasons is not None else 0,
        )


def first_visible(value: str | None) -> str | None:
    """The first entry of ``CUDA_VISIBLE_DEVICES`` as NVML names it (index or UUID)."""
    if not value:
        return None
    first = value.split(",")[0].strip()
    return first if first.isdigit() or first.startswith("GPU-") else None


@dataclass(frozen=True)
class Settling:
    """How :func:`settle` ended: whether the SM clock held still, after how long."""

    settled: bool
    seconds: float
    readings: Sequence[int] = ()  # the SM clock after each burst of work, MHz


def spread(values: Sequence[float]) -> float:
    """``(max - min) / max``: 0 for equal values."""
    top = max(values)
    return (top - min(values)) / top if top > 0 else 0.0


def settle(
    work: Callable[[], None],
    read: Reader | None,
    *,
    agree: int = 3,
    tolerance: float = 0.02,
    least_s: float = 0.3,
    most_s: float = 10.0,
    blind_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
) -> Settling:
    """Run ``work`` (a burst of GPU work that returns when it is done) until the last
    ``agree`` SM clock readings lie within ``tolerance`` of each other and ``least_s``
    has passed, or until ``most_s``. Without a reader, ``work`` runs for ``blind_s``
    and the clocks are taken on trust (``settled`` False).
    """
    start = clock()
    seen: list[int] = []
    while True:
        work()
        elapsed = clock() - start
        if read is not None:
            seen.append(read().sm_mhz)
            recent = seen[-agree:]
            if elapsed >= least_s and len(recent) == agree and spread(recent) <= tolerance:
                return Settling(True, elapsed, seen)
        elif elapsed >= blind_s:
            return Settling(False, elapsed, seen)
        if elapsed >= most_s:
            return Settling(False, elapsed, seen)


def clock_report(
    before: ClockReading,
    samples: Sequence[ClockReading],
    after: ClockReading,
    settling: Settling,
    tolerance: float = CLOCK_TOLERANCE,
) -> dict[str, Any]:
    """The ``gpu`` object of a bench's saved result (see the module docstring)."""
    every = [before, *samples, after]
    sm = [r.sm_mhz for r in every]
    mem = [r.mem_mhz for r in every]
    powers = [r.power_w for r in every if r.power_w is not None]
    slowdowns = sorted({name for r in every for name in r.slowdowns})
    return {
        "before": before.to_dict(),
        "after": after.to_dict(),
        "samples": len(samples),
        "sm_mhz_min": min(sm),
        "sm_mhz_max": max(sm),
        "mem_mhz_min": min(mem),
        "mem_mhz_max": max(mem),
        "temp_c_max": max(r.temp_c for r in every),
        "power_w_max": max(powers) if powers else None,
        "settled": settling.settled,
        "settle_s": round(settling.seconds, 3),
        "slowdowns": slowdowns,
        "clocks_moved": spread(sm) > tolerance or spread(mem) > tolerance,
        "throttled": bool(slowdowns),
    }


class ClockWatch:
    """The clocks around one bench's timed rounds: :meth:`start` settles them and reads
    ``before`` (call it just before the first timed round), :meth:`finish` reads ``after``
    and returns :func:`clock_report`'s object, or None where nothing was read."""

    def __init__(
        self, work: Callable[[], None], read: Reader | None, interval: float = 0.1
    ) -> None:
        self.work = work
        self.read = read
        self.interval = interval
        self.settling: Settling | None = None
        self.before: ClockReading | None = None
        self.samples: list[ClockReading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.settling = settle(self.work, self.read)
        if self.read is None:
            return
        self.before = self.read()
        self._thread = threading.Thread(target=self._sample, name="perfsuite-gpu-clocks")
        self._thread.daemon = True
        self._thread.start()

    def _sample(self) -> None:
        assert self.read is not None
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self.read())
            except Exception:  # a reading that fails ends the sampling, not the bench
                return

    def stop(self) -> None:
        """Stop sampling (safe to call more than once, or before :meth:`start`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def finish(self) -> dict[str, Any] | None:
        self.stop()
        if self.read is None or self.before is None or self.settling is None:
            return None
        return clock_report(self.before, self.samples, self.read(), self.settling)
