"""The verdict table, as terminal text and as Markdown.

Each row names the direction in words: ``time +30.0%`` is a longer median call time,
``images/s -23.1%`` a lower median throughput, and the verdict column says ``SLOWER``
(upper case, a regression) or ``faster``/``same``/``inconclusive``; under ``--perf-gate``
a suspect says what its confirmation concluded (``CONFIRMED_WORDS``, else the screen's
word and ``PASSED_WORDS``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.cost import CPU_WORDS
from perfsuite.verdict.judge import MACHINE, BenchVerdict
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.textable import format_table

HEADER = [
    "bench",
    "verdict",
    "median time [99% CI]",
    "throughput",
    "p",
    "rounds",
    "counters",
    "cost",
]


def pct(value: object) -> str:
    """A change as a signed percentage; ``?`` for what is not a number.

    >>> pct(0.0512), pct(-0.1), pct(None)
    ('+5.1%', '-10.0%', '?')
    """
    return f"{float(value) * 100:+.1f}%" if isinstance(value, int | float) else "?"


def bound_text(bound: float | None, higher_is_better: bool = False) -> str:
    """What a bound (the largest regression an interval has not ruled out, positive the
    slower way) says; a rate's is a fall.

    >>> bound_text(0.061), bound_text(0.061, higher_is_better=True), bound_text(None)
    ('no regression above +6.1%', 'no fall below -6.1%', 'no interval')
    """
    if bound is None:
        return "no interval"
    if higher_is_better:
        return f"no fall below {pct(-bound)}"
    return f"no regression above {pct(bound)}"


#: the verdict word of a time suspect its confirmation found slower, or that the screen
#: read slower and no A/B could decide (one the screen read otherwise keeps its word:
#: ``faster? UNCONFIRMED``, ``inconclusive, UNCONFIRMED``)
CONFIRMED_WORDS = {"confirmed": "SLOWER (confirmed)", "unconfirmed": "SLOWER? unconfirmed"}
#: the word of a screen's `faster` that no A/B measured: two runs taken apart, unpaired,
#: show a move of the machine as readily as one of the code
UNCONFIRMED_FASTER = "faster? unconfirmed"
#: what follows the screen's own word (``slower? cleared``: a move the A/B did not
#: confirm; ``inconclusive, not shown`` for a suspect made by its changed code) for a
#: time suspect: each passes but ``UNCONFIRMED`` (no A/B could decide; exit 3)
PASSED_WORDS = {
    "cleared": "cleared",
    "machine": "the machine's",
    "not shown": "not shown",
    "unconfirmed": "UNCONFIRMED",
}
#: the same for a suspect by its cost alone (CPU per item or peak memory); a time
#: suspect whose A/B confirmed its CPU per call or peak memory risen, not its time, reads
#: the screen's word and ``cost ROSE (confirmed)``
COST_CONFIRMED_WORDS = {
    "confirmed": "cost ROSE (confirmed)",
    "cleared": "cost rose, cleared",
    "machine": "cost rose, the machine's",
    "unconfirmed": "cost ROSE? unconfirmed",
    "not shown": "cost rose, not shown",
}


def _verdict_word(item: BenchVerdict) -> str:
    """The row's verdict word; a row that passes with no A/B's bound (the machine's move,
    an unconfirmed ``faster``, a bound under twice the threshold) says the screen's,
    its X: the largest regression its interval did not rule out."""
    if item.verdict is None:
        return "not comparable"
    word = item.verdict.value
    bound = f", {bound_text(item.bound)}" if item.bound is not None else ""
    if item.confirmation is not None and item.suspect:
        outcome = item.confirmation.outcome
        own = bound if outcome == MACHINE else ""  # an A/B's bound is in its note
        if item.time_suspect:
            moved = item.verdict in (Verdict.SLOWER, Verdict.FASTER)  # a move, unconfirmed
            after = f"{word}{'?' if moved else ','} "
            if outcome == "confirmed" and item.confirmation.cost:  # its time not shown
                return after + COST_CONFIRMED_WORDS[outcome]
            read_slower = item.verdict is Verdict.SLOWER
            if outcome == "confirmed" or (outcome == "unconfirmed" and read_slower):
                return CONFIRMED_WORDS[outcome]
            return f"{after}{PASSED_WORDS[outcome]}{own}"
        return f"{word}, {COST_CONFIRMED_WORDS[item.confirmation.outcome]}{own}"
    if item.verdict is Verdict.FASTER:  # two runs apart, unpaired: a move, not a verdict
        return UNCONFIRMED_FASTER + bound
    if item.bounded:
        return word + bound
    if item.too_noisy:
        return f"{word}, TOO NOISY: {bound_text(item.bound)}"
    return word.upper() if item.verdict is Verdict.SLOWER else word


def _time_cell(item: BenchVerdict) -> str:
    if item.time is None:
        return "-"
    cell = f"time {pct(item.time.change)}"
    if item.time.ci is not None:
        low, high = item.time.ci
        cell += f" [{pct(low)}, {pct(high)}]"
    return cell


def _rate_cell(item: BenchVerdict) -> str:
    if item.rate_change is None:
        return "-"
    return f"{item.unit}/s {pct(item.rate_change)}"


def _p_cell(item: BenchVerdict) -> str:
    if item.time is None or item.time.p is None:
        return "-"
    return f"{item.time.p:.2g}"


def _counter_cell(item: BenchVerdict) -> str:
    parts = []
    for change in item.counters:
        if change.rose:
            parts.append(f"{change} ROSE")
        elif change.fell:
            parts.append(f"{change} fell")
        elif change.baseline is None or change.current is None:
            parts.append(f"{change} (new)" if change.baseline is None else f"{change} (gone)")
        else:
            parts.append(f"{change.name} {change.current}")
    return ", ".join(parts) or "-"


def _cost_cell(item: BenchVerdict) -> str:
    """CPU per item (its change and verdict) and peak memory, where both runs recorded them."""
    parts = []
    if item.cpu is not None:
        word = CPU_WORDS[item.cpu.verdict.value]
        if item.cpu.fallback is not None:
            word = "not judged"
        parts.append(f"cpu/item {pct(item.cpu.change)} {word}")
    if item.memory is not None:
        parts.append(str(item.memory))
    return ", ".join(parts) or "-"


def _gpu_note(item: BenchVerdict) -> str | None:
    """Which side's GPU clocks moved or throttled during its timed rounds, if any."""
    sides = []
    for side, bench in (("baseline", item.baseline), ("current", item.current)):
        flags = bench.result.gpu_flags if bench.result is not None else []
        if flags:
            sides.append(f"{side} {' and '.join(flags)}")
    if not sides:
        return None
    return "GPU clocks not steady while timed (" + "; ".join(sides) + "): a change may be the GPU's"


def verdict_rows(comparison: RunComparison) -> tuple[list[list[str]], list[str]]:
    """Table rows and the numbered notes their ``[n]`` marks refer to."""
    rows: list[list[str]] = []
    notes: list[str] = []
    for item in comparison.verdicts:
        if item.not_comparable:
            continue
        word = _verdict_word(item)
        assert item.time is not None
        found = item.confirmation
        confirmation = found.text if found is not None else None
        command = found.to_confirm if found is not None else None
        notes_of = (
            item.time.fallback,
            item.note,
            item.suspected,
            confirmation,
            command,
            _gpu_note(item),
        )
        for note in notes_of:
            if note:
                if note not in notes:
                    notes.append(note)
                word += f" [{notes.index(note) + 1}]"
        rounds = f"{item.time.n_baseline}/{item.time.n_current}"
        threshold = f" (>{item.time.threshold * 100:.3g}%)"
        rows.append(
            [
                item.label,
                word + threshold,
                _time_cell(item),
                _rate_cell(item),
                _p_cell(item),
                rounds,
                _counter_cell(item),
                _cost_cell(item),
            ]
        )
    return rows, notes


def headline(comparison: RunComparison) -> str:
    """One line: how many benches got which verdict."""
    counts = {k: v for k, v in comparison.counts().items() if v}
    rose = sum(1 for v in comparison.verdicts if v.counters_rose)
    parts = [f"{n} {word}" for word, n in counts.items()]
    if rose:
        parts.append(f"exact counters rose in {rose}")
    cpu = sum(1 for v in comparison.verdicts if v.cpu_slower)
    if cpu:
        parts.append(f"CPU per item rose in {cpu}")
    memory = sum(1 for v in comparison.verdicts if v.memory_rose)
    if memory:
        parts.append(f"peak memory rose in {memory}")
    total = len(comparison.verdicts)
    return f"{total} bench{'es' if total != 1 else ''} compared: " + (", ".join(parts) or "none")


def _extra_lines(comparison: RunComparison) -> list[str]:
    lines: list[str] = []
    for item in comparison.not_comparable:
        lines.append(f"not comparable: {item.label}: {item.not_comparable}")
    for name in comparison.added:
        lines.append(f"added since the baseline (not judged): {name}")
    for name in comparison.removed:
        lines.append(f"removed since the baseline: {name}")
    if comparison.unselected:
        count = len(comparison.unselected)
        lines.append(
            f"outside this run's selection (-k, -m or its paths), not judged: {count} of the "
            f"baseline's benches, e.g. {comparison.unselected[0]}"
        )
    return lines


def mismatch_lines(comparison: RunComparison) -> list[str]:
    """What differs between the two runs' machines or stacks (empty when nothing does)."""
    if not comparison.mismatch:
        return []
    return [
        "baseline is from a different machine or stack: "
        + "; ".join(str(d) for d in comparison.mismatch)
    ]


def text_lines(comparison: RunComparison) -> list[str]:
    """The verdict table and its notes for a terminal."""
    lines = [f"baseline: {comparison.baseline.source}", f"current:  {comparison.current.source}"]
    lines.extend(mismatch_lines(comparison))
    rows, notes = verdict_rows(comparison)
    if rows:
        lines.extend(format_table(rows, HEADER))
    lines.extend(f"[{i}] {note}" for i, note in enumerate(notes, 1))
    lines.extend(_extra_lines(comparison))
    lines.append(headline(comparison))
    return lines


def code_span(text: str) -> str:
    """``text`` as one Markdown code span whatever backticks it holds: fenced by one
    backtick more than its longest run of them, padded by a space where it starts or
    ends with one (CommonMark).

    >>> code_span("t.py::test[a`b]"), code_span("`x`")
    ('``t.py::test[a`b]``', '`` `x` ``')
    """
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_escape(cell: str) -> str:
    return cell.replace("|", "\\|")


def markdown_table(
    rows: Sequence[Sequence[str]], header: Sequence[str], right: Collection[int] = ()
) -> list[str]:
    """A GitHub-flavoured Markdown table; the columns at the indices ``right`` align right."""
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|",
    ]
    lines.extend("| " + " | ".join(_md_escape(str(c)) for c in row) + " |" for row in rows)
    return lines


def _marked(row: Sequence[str]) -> bool:
    """A row that shows a regression: time, a counter, CPU per item or peak memory."""
    return row[1].startswith("SLOWER") or "ROSE" in row[6] or "ROSE" in row[7]


def markdown_lines(comparison: RunComparison) -> list[str]:
    """The verdict table and its notes as Markdown."""
    baseline, current = code_span(comparison.baseline.source), code_span(comparison.current.source)
    lines = [f"Baseline {baseline}, current {current}.", ""]
    for line in mismatch_lines(comparison):
        lines.extend([f"> **Warning:** {line}", ""])
    rows, notes = verdict_rows(comparison)
    if rows:
        spans = [code_span(r[0]) for r in rows]
        bold = [[f"**{s}**" if _marked(r) else s, *r[1:]] for s, r in zip(spans, rows, strict=True)]
        lines.extend(markdown_table(bold, HEADER))
        lines.append("")
    lines.extend(f"[{i}] {note}  " for i, note in enumerate(notes, 1))
    lines.extend(f"- {line}" for line in _extra_lines(comparison))
    lines.extend(["", headline(comparison)])
    return lines
