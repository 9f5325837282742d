"""One bench's row of the A/B: its verdict cells, and whether a confirmation measures
it again (:meth:`Row.suspect_of`, :attr:`Row.undecided`)."""

from __future__ import annotations

from dataclasses import dataclass

from perfsuite.ab.outcome import BenchRun
from perfsuite.verdict.compare import CounterChange
from perfsuite.verdict.cost import CPU_WORDS
from perfsuite.verdict.paired import LEAN_SIGN_P, PairedResult
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.table import pct

HEADER = ["bench", "verdict", "time change [CI]", "throughput", "pairs", "counters", "cost"]


def slower_by(result: PairedResult) -> float:
    """How much slower ``result`` reads B than A, the metric's slower way (negative:
    faster; positive: the way a gate fails)."""
    return -result.change if result.higher_is_better else result.change


def against(first: PairedResult, check: PairedResult) -> bool:
    """Whether a confirmation's ``slower`` or ``faster`` points the other way from the
    first estimate that made the bench a suspect: it then confirms nothing, so a false
    alarm needs both stages to err the same way."""
    if check.verdict not in (Verdict.SLOWER, Verdict.FASTER) or first.change == 0:
        return False
    return (check.verdict is Verdict.SLOWER) != (slower_by(first) > 0)


def leans(result: PairedResult) -> bool:
    """Slower or faster, or inconclusive with an estimate beyond the threshold either
    way and pairs that lean that way (sign test p at most ``LEAN_SIGN_P``), which keeps
    out an estimate whose few pairs say nothing (one ratio, or pairs split evenly)."""
    if result.verdict in (Verdict.SLOWER, Verdict.FASTER):
        return True
    # a `same` estimate lies inside its interval, so inside the threshold
    lean = result.sign_p is None or result.sign_p <= LEAN_SIGN_P
    return abs(result.change) > result.threshold and lean


def suspicious(result: PairedResult, kind: str) -> bool:
    """Whether ``result`` makes its bench a suspect of ``--suspects kind``: it
    :func:`leans`, and with ``leaning-slower`` it is either decisive (`faster` too) or
    leans slower: an unproven speedup fails no gate."""
    return leans(result) and (kind != "leaning-slower" or result.decisive or slower_by(result) > 0)


@dataclass(frozen=True)
class Row:
    """One bench's line: the alternation and what each side's JSON recorded."""

    nodeid: str
    run: BenchRun | None
    unit: str = "items"
    counters: tuple[CounterChange, ...] = ()
    status: str | None = None  # added / removed / skipped; or how a verdict was reached

    def suspect_of(self, kind: str) -> bool:
        """A suspect of ``--suspects kind`` by its estimate (:func:`suspicious`); for
        ``undecided`` this is the leaning part, :attr:`undecided` the rest."""
        lead = self.suspicion
        return lead is not None and suspicious(lead, kind)

    @property
    def suspicion(self) -> PairedResult | None:
        """The estimate a confirmation tests: the second pair of processes' for a
        rechecked `same` not yet confirmed (``first`` is set by the confirmation), else
        the bench's own verdict's."""
        if self.run is None or self.run.result is None:
            return None
        if self.run.second is not None and self.run.first is None:
            return self.run.second
        return self.run.result

    @property
    def undecided(self) -> bool:
        """Inconclusive and too noisy to pass (:attr:`PairedResult.too_noisy`), whichever
        way its estimate leans: what ``--suspects undecided`` also measures again,
        judging it on its fresh pairs alone."""
        return bool(self.run and self.run.result and self.run.result.too_noisy)

    @property
    def open_either_way(self) -> bool:
        """:attr:`undecided` with an estimate that does not lean slower: its
        confirmation is taken whichever way it points, as it is judged at the first
        stage's error rate on fresh pairs alone."""
        lead = self.suspicion
        return self.undecided and lead is not None and slower_by(lead) <= 0

    @property
    def verdict(self) -> Verdict | None:
        return self.run.result.verdict if self.run and self.run.result else None

    @property
    def cpu_slower(self) -> bool:
        """More CPU per call in B, by the time's paired test and threshold."""
        return bool(self.run and self.run.cpu and self.run.cpu.verdict is Verdict.SLOWER)

    @property
    def memory_rose(self) -> bool:
        """B's peak memory rose past the bench's memory threshold over A's."""
        memory = self.run.memory if self.run else None
        return memory is not None and memory.rose

    @property
    def regressed(self) -> bool:
        slower = self.verdict is Verdict.SLOWER or self.cpu_slower or self.memory_rose
        return slower or any(c.rose for c in self.counters)

    @property
    def judged(self) -> bool:
        """Measured on both sides and decided at its threshold (not `inconclusive`). An
        exact counter that rose is a regression whatever the time's verdict, but an
        unchanged one does not make a bench judged."""
        return self.verdict is not None and self.verdict is not Verdict.INCONCLUSIVE

    @property
    def bounded(self) -> bool:
        """Measured on both sides, not judged at its threshold, yet passing: its
        interval rules out a regression of twice its threshold
        (:attr:`PairedResult.bounded`)."""
        return bool(self.run and self.run.result and self.run.result.bounded)

    @property
    def too_noisy(self) -> bool:
        """Measured on both sides, but too noisy to pass (:attr:`PairedResult.too_noisy`)
        and not a regression: the A/B cannot say there is none."""
        return self.undecided and not self.regressed

    def cells(self) -> list[str]:
        result = self.run.result if self.run else None
        if result is None:
            status = self.status or "not measured"
            return [self.nodeid, status, "-", "-", "-", self._counters(), "-"]
        word = result.verdict.value
        word = word.upper() if result.verdict is Verdict.SLOWER else word
        if result.bounded:
            word = result.bound_text()
        elif result.too_noisy:
            word = f"TOO NOISY: {result.bound_text()}"
        if any(c.rose for c in self.counters):
            word += " (counter rose)"
        # a slower time says the CPU's rise already; a risen peak is news either way
        if self.memory_rose or (self.cpu_slower and result.verdict is not Verdict.SLOWER):
            word += " (cost rose)"
        if self.status:
            word += f" ({self.status})"
        elif result.futile:
            word += " (stopped early: its budget could not decide)"
        elif result.verdict is Verdict.INCONCLUSIVE and self.run and self.run.pool:
            word += f" (its benchmark.pedantic rounds= allow {self.run.pool} pairs)"
        time = pct(result.change)
        if result.ci is not None:
            time += f" [{pct(result.ci[0])}, {pct(result.ci[1])}]"
        rate = f"{self.unit}/s {pct(result.rate_change)}"
        return [self.nodeid, word, time, rate, str(result.pairs), self._counters(), self._cost()]

    def _cost(self) -> str:
        """CPU per call (change, verdict) and peak memory, where both sides sent them."""
        cpu, memory = (self.run.cpu, self.run.memory) if self.run else (None, None)
        parts = [f"cpu/call {pct(cpu.change)} {CPU_WORDS[cpu.verdict.value]}"] if cpu else []
        if memory:
            parts.append(str(memory))
        return ", ".join(parts) or "-"

    def _counters(self) -> str:
        marked = [f"{c}{' ROSE' if c.rose else ' fell' if c.fell else ''}" for c in self.counters]
        return ", ".join(marked) or "-"
