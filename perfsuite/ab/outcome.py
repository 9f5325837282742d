"""What one A/B measured: each bench's blocks, in order, and its verdict."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from perfsuite.verdict.paired import PairedResult, log_ratios


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
    sessions: list[float] = field(default_factory=list)  # per pair of processes: its change
    session_pairs: list[int] = field(default_factory=list)  # ... and its pairs of blocks
    started: list[str] = field(default_factory=list)  # per pair of processes: side started first
    first: PairedResult | None = None  # a confirmed bench: what its first pair of processes read

    def typical(self) -> float | None:
        """The drain's yardstick, one for both sides so both drain alike: the median of
        both sides' warm-up rounds, each side's run alone, after the bench's own
        warm-up. Never the timed rounds: were a buffer left in them, the yardstick would
        shrink and each drain would stop sooner."""
        pool = [s for seconds in self.warmup.values() for s in seconds]
        return statistics.median(pool) if pool else None

    @property
    def ratios(self) -> list[float]:
        n = min(len(self.a_blocks), len(self.b_blocks))
        return log_ratios(self.a_blocks[:n], self.b_blocks[:n])


@dataclass
class Outcome:
    """What the controller saw: per-bench runs, and the benches of one side only."""

    benches: list[BenchRun]
    removed: list[str]  # base only
    added: list[str]  # candidate only
    seed: int
