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
    second: PairedResult | None = None  # a rechecked `same`: what its second pair read

    def typical(self) -> float | None:
        """The drain's yardstick, one for both sides so both drain alike: the faster
        side's median warm-up round, each side's run alone, after the bench's own
        warm-up. The faster side's, not the median of both sides' rounds: where B is
        3x slower, that median sat at twice A's round, so every steady round of A fell
        under half of it and each of A's drains ran to its 5-s cap (a test took 19-56 s).
        A buffered round is far under half of either. Never the timed rounds: were a
        buffer left in them, the yardstick would shrink and each drain stop sooner."""
        medians = [statistics.median(seconds) for seconds in self.warmup.values() if seconds]
        return min(medians) if medians else None

    @property
    def ratios(self) -> list[float]:
        n = min(len(self.a_blocks), len(self.b_blocks))
        return log_ratios(self.a_blocks[:n], self.b_blocks[:n])


@dataclass
class SessionOutcome:
    """What the controller saw in one session (one pair of processes): per-bench runs,
    and the benches of one side only."""

    benches: list[BenchRun]
    removed: list[str]  # base only
    added: list[str]  # candidate only
    seed: int
