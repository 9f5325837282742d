"""``perfsuite results``: the results branch from the command line.

* ``perfsuite results key`` prints this machine's key (:mod:`perfsuite.results.key`);
* ``perfsuite results pull`` fills the storage's machine folder with this key's runs;
* ``perfsuite results push [--report DIR]`` publishes the runs saved here, tonight's
  report and the accepted steps, and prunes the branch to ``--keep`` runs per key;
* ``perfsuite results site DIR`` writes the dashboard of every machine on the branch,
  with the nightly reports kept there.

Exit status: 0 done, 2 bad input or a fault (the line names it: no git repository, an
unreachable remote, a push refused ``--attempts`` times, after which every run is still
in the storage).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode

if TYPE_CHECKING:
    from perfsuite.results.gitbranch import ResultsBranch

DEFAULT_BRANCH = "perfsuite-results"
DEFAULT_REMOTE = "origin"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``results`` and its actions on the ``perfsuite`` command line."""
    from perfsuite.options import parse_count

    results = commands.add_parser(
        "results",
        help="pull and push saved runs and nightly reports on a git branch runners share",
        description="Keep the history on a git branch (default perfsuite-results of "
        "origin): pull this machine's runs before the benches, push tonight's after the "
        "verdict, build the dashboard of every machine. Exit status: 0 done, 2 bad input "
        "or a fault (nothing saved here is lost).",
    )
    actions = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("key", help="print this machine's key (hardware and stack)")
    pull = actions.add_parser("pull", help="fill the storage with this machine's runs")
    push = actions.add_parser("push", help="publish the runs saved here, and tonight's report")
    site = actions.add_parser("site", help="write the dashboard of every machine on the branch")
    site.add_argument("out", type=Path, metavar="DIR", help="the site's folder")
    for sub in (pull, push, site):
        sub.add_argument(
            "--remote",
            default=DEFAULT_REMOTE,
            help=f"the git remote (a name or a URL) holding the branch (default: {DEFAULT_REMOTE})",
        )
        sub.add_argument(
            "--branch",
            default=DEFAULT_BRANCH,
            help=f"the results branch (default: {DEFAULT_BRANCH}; created by the first push)",
        )
    for sub in (pull, push):
        sub.add_argument(
            "--storage",
            default=".benchmarks",
            metavar="DIR",
            help="pytest-benchmark's file storage (default: .benchmarks)",
        )
    pull.add_argument("--key", help="the machine key to pull (default: this machine's)")
    push.add_argument(
        "--report", type=Path, metavar="DIR", help="tonight's report (perfsuite nightly --report)"
    )
    push.add_argument(
        "--keep",
        type=parse_count,
        default=60,
        metavar="N",
        help="saved runs kept per machine key, besides those an unaccepted regression "
        "step or the accepted run needs (default: 60)",
    )
    push.add_argument(
        "--attempts",
        type=parse_count,
        default=5,
        metavar="N",
        help="pushes tried, each on the branch's newest tip, before giving up (default: 5)",
    )


def run(args: argparse.Namespace) -> int:
    """Carry out ``perfsuite results ACTION``."""
    if args.action == "key":
        from perfsuite.results.key import this_machine_key

        print(this_machine_key())
        return ExitCode.OK
    from perfsuite.results.gitbranch import ResultsBranch

    branch = ResultsBranch(Path.cwd(), args.remote, args.branch)
    if args.action == "site":
        return _site(branch, args.out)
    from perfsuite.results import sync
    from perfsuite.verdict.storage import storage_path, this_machine_id

    root = storage_path(args.storage)
    if args.action == "pull":
        from perfsuite.results.key import this_machine_key

        lines = sync.pull(branch, root, this_machine_id(), args.key or this_machine_key())
    else:
        lines = sync.push(branch, root, this_machine_id(), args.report, args.keep, args.attempts)
    for line in lines:
        print(f"perfsuite results: {line}")
    return ExitCode.OK


def _site(branch: ResultsBranch, out: Path) -> int:
    """The dashboard of every machine key on the branch, with its nightly reports."""
    from perfsuite.dashboard.site import build_site
    from perfsuite.results.layout import REPORTS, RUNS
    from perfsuite.verdict.storage import Storage

    tip = branch.fetch()
    if tip is None:
        raise PerfsuiteError(f"{branch.where} does not exist yet: push a run first")
    with tempfile.TemporaryDirectory(prefix="perfsuite-results-") as folder:
        top = Path(folder)
        for path, blob in branch.files(tip).items():
            if path.startswith((f"{RUNS}/", f"{REPORTS}/")):
                target = top / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(branch.read(blob))
        nightly = sorted(p.parent for p in (top / REPORTS).glob("*/*/summary.md"))
        site = build_site(Storage(top / RUNS), out, nightly_reports=nightly)
        machines = sorted({p.parent.name for p in (top / RUNS).glob("*/*.json")})
    print(
        f"perfsuite results: wrote the dashboard of {len(machines)} machine(s) "
        f"({', '.join(machines)}) and {site.reports} nightly report(s) into {site.root}"
    )
    return ExitCode.OK
