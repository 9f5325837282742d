"""``perfsuite report --html DIR``: the dashboard's command-line options and their run.

``--html DIR`` writes the static site (:mod:`perfsuite.dashboard.site`) from every
machine folder of ``--storage``; ``--ab-report DIR`` and ``--nightly-report DIR``
(each repeatable) add the folders ``perfsuite ab --report`` and ``perfsuite nightly
--report`` wrote, linked from the runs they belong to. Exit status 0 when the site is
written, 2 on bad input (no saved runs, ``DIR`` a file or a foreign folder, a report
folder that is not one); the line names the thing at fault.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from perfsuite.exitcodes import ExitCode


def add_arguments(report: argparse.ArgumentParser) -> None:
    """The dashboard's options on ``perfsuite report``."""
    report.add_argument(
        "--html",
        type=Path,
        metavar="DIR",
        help="write the dashboard, a static HTML site of every bench's history, into DIR "
        "(opens offline; replaces an earlier dashboard there)",
    )
    report.add_argument(
        "--ab-report",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="with --html: an A/B report folder (perfsuite ab --report) to copy into the "
        "site, linked from the run of its candidate's commit (repeatable)",
    )
    report.add_argument(
        "--nightly-report",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="with --html: a nightly report folder (perfsuite nightly --report) to copy "
        "into the site, linked from tonight's run (repeatable)",
    )


def run_html(args: argparse.Namespace) -> int:
    """Build the site ``--html`` names; print where it is and what it holds."""
    from perfsuite.dashboard.site import build_site
    from perfsuite.verdict.storage import Storage

    site = build_site(
        Storage.from_option(args.storage), args.html, args.ab_report, args.nightly_report
    )
    counts = (
        (site.groups, "group"),
        (site.benches, "bench history"),
        (site.reports, "report"),
        (len(site.files), "file"),
    )
    held = ", ".join(f"{n} {what if n == 1 else _plural(what)}" for n, what in counts)
    print(
        f"perfsuite report: wrote the dashboard into {site.root} ({held}, "
        f"{site.size:,} bytes; open {site.root / 'index.html'})"
    )
    return ExitCode.OK


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") else word + "s"
