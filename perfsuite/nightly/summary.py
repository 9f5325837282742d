"""The nightly verdict as Markdown, fit for ``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

from collections.abc import Sequence

from perfsuite.nightly.confirm import Confirmation
from perfsuite.nightly.screen import Screening, Suspect
from perfsuite.verdict.table import markdown_table


def _series_cell(suspect: Suspect, last: int = 6) -> str:
    points = suspect.series.points[-last:]
    return " ".join(f"{p.median * 1000:.3g}" for p in points) + " ms"


def _suspect_rows(suspects: Sequence[Suspect]) -> list[list[str]]:
    return [[s.label, f"{s.change * 100:+.1f}%", s.reason, _series_cell(s)] for s in suspects]


def verdict_line(screening: Screening, confirmation: Confirmation | None, status: int) -> str:
    if status == 1:
        parts = []
        if screening.counters:
            parts.append(f"exact counters rose in {len(screening.counters)}")
        if confirmation is not None and confirmation.confirmed:
            parts.append("perfsuite ab confirmed a regression")
        return "**FAILED**: " + "; ".join(parts)
    if status == 3 and screening.screened == 0:
        return "**NOTHING JUDGED**: tonight's run screened no bench"
    if status == 3:
        why = "--no-confirm" if confirmation is None else confirmation.skipped
        why = why or "perfsuite ab could not decide"
        return (
            f"**UNCONFIRMED**: {len(screening.suspects)} suspect(s) could not be confirmed ({why})"
        )
    if status != 0:
        return "**ERROR**: the suspects could not be confirmed (perfsuite ab failed)"
    if not screening.suspects:
        return f"passed: no suspect among {screening.screened} benches"
    count = f"{len(screening.suspects)} suspect{'s' if len(screening.suspects) != 1 else ''}"
    if confirmation is not None and confirmation.skipped:
        return f"passed: {count}, not confirmed: {confirmation.skipped}"
    return f"passed: {count}, perfsuite ab found no regression"


def nightly_markdown(screening: Screening, confirmation: Confirmation | None, status: int) -> str:
    tonight = screening.tonight
    commit = tonight.commit_info.get("id") or "?"
    lines = ["# perfsuite nightly", ""]
    lines.append(
        f"Tonight: `{tonight.name}` (commit `{str(commit)[:10]}`, {tonight.datetime or '?'}), "
        f"{screening.screened} benches screened"
        + (f" against `{screening.previous.name}` and earlier runs." if screening.previous else ".")
    )
    if screening.short_history:
        lines.append(
            f"{len(screening.short_history)} benches have too little history for a noise band "
            "and were screened against the previous run only."
        )
    lines.extend(["", "Verdict: " + verdict_line(screening, confirmation, status), ""])
    header = ["bench", "change", "why", "recent medians"]
    if screening.counters:
        lines.extend(["## Exact counters that rose (regressions)", ""])
        lines.extend(markdown_table(_suspect_rows(screening.counters), header))
        lines.append("")
    lines.extend(["## Suspects", ""])
    if screening.suspects:
        lines.extend(markdown_table(_suspect_rows(screening.suspects), header))
    else:
        lines.append("None.")
    lines.append("")
    if screening.suspects:
        lines.extend(["## Confirmation", ""])
        if confirmation is None:
            lines.append("Not run (--no-confirm).")
        elif confirmation.skipped:
            lines.append(f"Not run: {confirmation.skipped}.")
        else:
            words = {0: "no regression", 1: "regression confirmed", 3: "nothing judged"}
            outcome = words.get(confirmation.status or 0, f"fault (exit {confirmation.status})")
            lines.append(f"`{' '.join(confirmation.command)}`: {outcome}.")
            if confirmation.summary:
                lines.extend(["", confirmation.summary.replace("\n# ", "\n### ")])
        lines.append("")
    return "\n".join(lines)
