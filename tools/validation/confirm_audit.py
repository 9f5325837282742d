"""Audit the confirmations of ``perfsuite ab`` reports: do fresh pairs share the first's offset?

A confirmation re-measures a suspect in fresh pairs of processes and judges it on those
alone (Student's t over their medians), on the premise that a fresh pair does not share
whatever offset made the first pair of processes read the bench as changed. Over the
report folders given (``--report DIR`` of A/A runs, e.g. from
``tools/validation/ab_suite_time.py``), this prints, per confirmed bench and in total:

* ``first``: the first pair's change (``pairs.json``'s ``first``; reports written
  before it was kept there are read from ``summary.md``'s ``first pair +x%``);
* the confirming pairs' mean change, their sd and t, and whether the mean has the
  first change's sign. With no shared offset the sign matches about half the time
  whatever the first read; a shared offset makes it match far more often;
* ``predicted sd``: the sd of one pair's median predicted from the spread of its blocks
  alone (a robust sd of the log-ratios, times 1.2533 / sqrt(pairs of blocks)), beside
  the sd the pairs showed: near it, the pairs scatter no more than their blocks do;
* ``smallest at 3``: the smallest change the confirmation's first look (3 pairs, at its
  share of alpha) could call, were every pair to read it with the predicted sd.

Usage::

    python tools/validation/confirm_audit.py REPORT_DIR [REPORT_DIR ...] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from perfsuite.ab.command import DEFAULT_CONFIRM
from perfsuite.ab.confirm import CONFIRM_ALPHA, FIRST_LOOK, looks
from perfsuite.verdict.paired import log_ratios

FIRST_PAIR = re.compile(r"`([^`]+)` \|.*first pair ([+-][0-9.]+)%")


@dataclass
class Audit:
    """One confirmed bench of one report."""

    report: str
    nodeid: str
    first: float
    sessions: list[float]
    predicted_sd: float
    smallest: float

    @property
    def mean(self) -> float:
        return statistics.fmean(self.sessions)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.sessions)

    @property
    def t(self) -> float:
        if not self.sd:
            return math.copysign(math.inf, self.mean)
        return self.mean / (self.sd / math.sqrt(len(self.sessions)))


def first_changes(report: Path) -> dict[str, float]:
    """Each confirmed bench's first-pair change as ``summary.md`` shows it."""
    path = report / "summary.md"
    found = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        match = FIRST_PAIR.search(line)
        if match:
            found[match.group(1)] = float(match.group(2)) / 100
    return found


def predicted_sd(entry: dict[str, Any]) -> float:
    """The sd of one pair of processes' median change, from its blocks' spread alone."""
    d = log_ratios(entry["a_blocks"], entry["b_blocks"])
    q1, q3 = np.percentile(d, [25, 75])
    per_pair = min(entry.get("session_pairs") or [len(d)])
    return float(1.2533 * (q3 - q1) / 1.349 / math.sqrt(per_pair))


def audit(report: Path) -> list[Audit]:
    """The confirmed benches of one report folder (3 or more confirming pairs)."""
    try:
        entries = json.loads((report / "pairs.json").read_text())
    except (OSError, ValueError) as exc:
        message = f"{report}: no readable pairs.json ({exc}); pass a --report folder"
        raise SystemExit(message) from None
    shown = first_changes(report)
    found = []
    for entry in entries:
        sessions = entry.get("sessions") or []
        # the estimate that made it a suspect: a rechecked `same`'s second pair, else its first
        lead = entry.get("second") or entry.get("first") or {}
        first = lead.get("change", shown.get(entry["nodeid"]))
        if len(sessions) < FIRST_LOOK or first is None or not entry.get("a_blocks"):
            continue
        sd = predicted_sd(entry)
        alpha = entry.get("alpha_per_look") or CONFIRM_ALPHA / len(looks(DEFAULT_CONFIRM))
        crit = float(student_t.ppf(1 - alpha / 2, FIRST_LOOK - 1))
        smallest = math.expm1(crit * sd / math.sqrt(FIRST_LOOK))
        found.append(Audit(report.name, entry["nodeid"], first, sessions, sd, smallest))
    return found


def _share(value: float) -> str:
    """A change as a whole percentage, capped where it stops meaning anything."""
    return f"{value:.0%}" if value < 10 else ">1000%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="--report folders of A/B runs")
    parser.add_argument("--quiet", action="store_true", help="the totals only")
    args = parser.parse_args(argv)
    rows = [row for report in args.reports for row in audit(report)]
    if not rows:
        print("no confirmed bench (3 or more confirming pairs) in these reports")
        return 1
    if not args.quiet:
        print("report  first  mean  sd  t  pairs  predicted-sd  smallest-at-3  bench")
        for r in rows:
            print(
                f"{r.report}  {r.first:+.1%}  {r.mean:+.1%}  {r.sd:.1%}  {r.t:+.1f}  "
                f"{len(r.sessions)}  {r.predicted_sd:.1%}  {_share(r.smallest)}  {r.nodeid}"
            )
    same_sign = sum((r.mean > 0) == (r.first > 0) for r in rows)
    firsts, means = [r.first for r in rows], [r.mean for r in rows]
    corr = float(np.corrcoef(firsts, means)[0, 1]) if len(rows) > 2 else math.nan
    ratio = statistics.median(r.sd / r.predicted_sd for r in rows if r.predicted_sd > 0)
    print(f"confirmed benches: {len(rows)} in {len(args.reports)} report(s)")
    print(f"confirming mean with the first pair's sign: {same_sign} of {len(rows)}")
    print(f"correlation of first change and confirming mean: {corr:+.2f}")
    print(f"median sd shown / sd predicted from blocks: {ratio:.2f}")
    smallest = sorted(r.smallest for r in rows)
    print(
        "smallest change the first look could call: median "
        f"{_share(statistics.median(smallest))} ({_share(smallest[0])} to {_share(smallest[-1])})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
