"""What one A/B measured: each bench's blocks, in order, and its verdict."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from perfsuite.verdict.cost import MEMORY_THRESHOLD, MIN_ROUND_CPU_S, MemoryChange
from perfsuite.verdict.paired import PairedResult, log_ratios


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


@dataclass
class BenchRun:
    """One bench's alternation: every block of each side, in order, and the verdict."""

    nodeid: str
    threshold: float
    a_blocks: list[list[float]] = field(default_factory=list)
    b_blocks: list[list[float]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # "A"/"B" per block, as run
    result: PairedResult | None = None
    skipped: str | None = None
    seconds: float = 0.0
    unsettled: int = 0  # blocks started while the idle side still worked (or not frozen)
    drained: list[int] = field(default_factory=list)  # untimed rounds before each block
    warmup: dict[str, list[float]] = field(default_factory=dict)  # side -> warm-up seconds
    setup: float = 0.0  # seconds from its pair's previous bench to both sides ready (0: first)
    sessions: list[float] = field(default_factory=list)  # per pair of processes: its change
    session_pairs: list[int] = field(default_factory=list)  # ... and its pairs of blocks
    started: list[str] = field(default_factory=list)  # per pair of processes: side started first
    first: PairedResult | None = None  # a confirmed bench: what its first pair of processes read
    second: PairedResult | None = None  # a rechecked `same`: what its second pair read
    a_cpu: list[list[float]] = field(default_factory=list)  # CPU seconds per call, per round
    b_cpu: list[list[float]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # side -> calls a round
    peak_mb: dict[str, float] = field(default_factory=dict)  # side -> peak memory so far
    pool: int | None = None  # the most pairs its own finite rounds allow (pedantic setup=)
    # pooled over fresh pairs of processes: each pair's (A, B) peak memory
    pair_peaks: list[tuple[float, float]] = field(default_factory=list)
    memory_threshold: float = MEMORY_THRESHOLD
    cpu_missing: bool = False  # a block came without its rounds' CPU
    cpu: PairedResult | None = None  # CPU per call, judged once the time is decided

    def add_cost(self, side: str, message: dict[str, Any], rounds: int) -> None:
        """A ``block_done``'s cost: its rounds' CPU per call, calls a round, peak memory.
        A block without them (a side that predates them) leaves the bench's CPU unjudged."""
        cpu = message.get("cpu")
        if isinstance(cpu, list) and len(cpu) == rounds and all(_number(c) for c in cpu):
            (self.a_cpu if side == "A" else self.b_cpu).append([float(c) for c in cpu])
        else:
            self.cpu_missing = True
        calls = message.get("calls")
        if isinstance(calls, int) and not isinstance(calls, bool) and calls > 0:
            self.calls.setdefault(side, calls)
        peak = message.get("peak_mb")
        if _number(peak):
            self.peak_mb[side] = max(float(peak), self.peak_mb.get(side, 0.0))

    def cpu_ratios(self) -> list[float] | None:
        """One log-ratio of CPU per call (B over A) per pair of blocks, where both sides
        sent every round's CPU and a round takes at least ``MIN_ROUND_CPU_S``."""
        if self.cpu_missing or not self.a_cpu or len(self.a_cpu) != len(self.b_cpu):
            return None
        for side, blocks in (("A", self.a_cpu), ("B", self.b_cpu)):
            per_round = statistics.median(c for block in blocks for c in block)
            if per_round * self.calls.get(side, 1) < MIN_ROUND_CPU_S:
                return None  # the readings' own cost and resolution would dominate
        try:
            return log_ratios(self.a_cpu, self.b_cpu)
        except ValueError:  # a round read no CPU at all
            return None

    def peaks_by_pair(self) -> list[tuple[float, float]]:
        """(A, B) peak memory of each pair of processes: a pooled or confirmed run's
        ``pair_peaks``, else this one pair's, where both sides sent it."""
        if self.pair_peaks or not {"A", "B"} <= self.peak_mb.keys():
            return list(self.pair_peaks)
        return [(self.peak_mb["A"], self.peak_mb["B"])]

    @property
    def memory(self) -> MemoryChange | None:
        """Peak memory of B against A's, where both sides sent it: over the pairs of
        processes of a pooled or confirmed run (``pair_peaks``), the median of each
        side's peaks, which rose only if it rose in each pair too (a peak moves between
        processes of unchanged code: :attr:`MemoryChange.rose`)."""
        peaks = self.peaks_by_pair()
        if not self.pair_peaks:
            return MemoryChange(*peaks[0], self.memory_threshold) if peaks else None
        a = statistics.median(p[0] for p in peaks)
        b = statistics.median(p[1] for p in peaks)
        rose = sum(MemoryChange(pa, pb, self.memory_threshold).rose for pa, pb in peaks)
        return MemoryChange(a, b, self.memory_threshold, pairs=len(peaks), pairs_rose=rose)

    def typical(self) -> float | None:
        """The drain's yardstick, one for both sides so both drain alike: the faster
        side's median warm-up round (the median of both would put every steady round
        of a much faster side under half of it). Never the timed rounds: were a buffer
        left in them, the yardstick would shrink and each drain stop sooner."""
        medians = [statistics.median(seconds) for seconds in self.warmup.values() if seconds]
        return min(medians) if medians else None

    @property
    def ratios(self) -> list[float]:
        n = min(len(self.a_blocks), len(self.b_blocks))
        return log_ratios(self.a_blocks[:n], self.b_blocks[:n])


#: what one session (one pair of processes) measured: its runs, then the benches of base
#: only and of candidate only
Outcome = tuple[list[BenchRun], list[str], list[str]]


def _under(nodeid: str, key: str) -> bool:
    """Whether the node ``key`` (a module, or a folder or package) holds ``nodeid``."""
    return nodeid == key or nodeid.startswith((f"{key}::", f"{key}/"))


def collection_skips(
    hellos: dict[str, dict[str, Any]], removed: list[str], added: list[str], threshold: float
) -> Outcome:
    """Rows for the modules (or folders) a side skipped whole (its ``hello``'s
    ``skipped``): each bench the other side has there, as a run skipped by that side
    with its reason; one with no such bench, as one skipped run of its own. Then the
    benches of one side only that are left (base only, candidate only)."""
    skips = {name: dict(hellos.get(name, {}).get("skipped") or {}) for name in "AB"}
    runs: list[BenchRun] = []
    shown: set[str] = set()
    kept: tuple[list[str], list[str]] = ([], [])
    for ids, other, out in ((removed, "B", kept[0]), (added, "A", kept[1])):
        for nodeid in ids:
            module = next((key for key in skips[other] if _under(nodeid, key)), None)
            if module is None:
                out.append(nodeid)
                continue
            shown.add(module)
            runs.append(
                BenchRun(nodeid, threshold, skipped=f"side {other}: {skips[other][module]}")
            )
    for module in dict.fromkeys([*skips["A"], *skips["B"]]):
        if module in shown:
            continue
        reasons = {name: skips[name][module] for name in "AB" if module in skips[name]}
        if len(set(reasons.values())) == 1 and len(reasons) == 2:
            said = f"both sides: {reasons['A']}"
        else:
            said = "; ".join(f"side {name}: {why}" for name, why in reasons.items())
        runs.append(BenchRun(module, threshold, skipped=said))
    return runs, kept[0], kept[1]
