"""Confirming suspects with ``perfsuite ab``: both commits interleaved in one session.

The nightly runs ``perfsuite ab <baseline commit> HEAD --report DIR -- <pytest args> -k
<suspects>`` as a child process and reads its exit status (0 no regression, 1 a
regression, anything else a fault) and its ``summary.md``. Nothing of ``perfsuite ab``
is imported: the command line is the contract.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfsuite.nightly.screen import Suspect

AB_COMMAND: tuple[str, ...] = (sys.executable, "-m", "perfsuite.cli", "ab")
SAME_COMMIT = "same commit"


@dataclass(frozen=True)
class Confirmation:
    """What ``perfsuite ab`` said about the suspects."""

    command: tuple[str, ...]
    status: int | None  # None when ab was not run
    summary: str  # ab's summary.md, or why it was not run
    skipped: str | None = None

    @property
    def confirmed(self) -> bool:
        return self.status == 1

    @property
    def fault(self) -> bool:
        return self.status is not None and self.status not in (0, 1, 3)

    @property
    def machine(self) -> bool:
        """Not run: both runs are of one commit, so a move is the machine's."""
        return self.status is None and self.skipped is not None and SAME_COMMIT in self.skipped

    @property
    def unconfirmed(self) -> bool:
        """The suspects stay undecided: no A/B could run (other than on one commit), or
        it judged nothing (exit 3)."""
        return self.status == 3 or (self.status is None and not self.machine)


def keyword_expression(suspects: Sequence[Suspect], user_k: str | None = None) -> str:
    """``-k`` selecting the suspects' tests (and the user's own ``-k``, if any)."""
    names = sorted({s.test_name for s in suspects})
    expression = " or ".join(names)
    return f"({user_k}) and ({expression})" if user_k else expression


def split_k(pytest_args: Sequence[str]) -> tuple[list[str], str | None]:
    """The pytest arguments without ``-k``, and the ``-k`` expression they held."""
    rest: list[str] = []
    expression = None
    args = list(pytest_args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-k" and i + 1 < len(args):
            expression = args[i + 1]
            i += 2
            continue
        if arg.startswith("-k") and len(arg) > 2:
            expression = arg[2:].lstrip("=")
        else:
            rest.append(arg)
        i += 1
    return rest, expression


def ab_command_line(
    base_commit: str,
    suspects: Sequence[Suspect],
    pytest_args: Sequence[str],
    report: Path,
    ab_command: Sequence[str] = AB_COMMAND,
) -> tuple[str, ...]:
    rest, user_k = split_k(pytest_args)
    return (
        *ab_command,
        base_commit,
        "HEAD",
        "--report",
        str(report),
        "--",
        *rest,
        "-k",
        keyword_expression(suspects, user_k),
    )


def confirm(
    base_commit: str | None,
    head_commit: str | None,
    suspects: Sequence[Suspect],
    pytest_args: Sequence[str],
    report: Path,
    ab_command: Sequence[str] = AB_COMMAND,
) -> Confirmation:
    """Run ``perfsuite ab`` on the suspects, or say why it cannot tell anything."""
    if not base_commit:
        return Confirmation((), None, "", "the baseline run has no commit id (saved outside git)")
    if head_commit and head_commit == base_commit:
        return Confirmation(
            (),
            None,
            "",
            f"tonight's run is of the {SAME_COMMIT} as the baseline run ({base_commit[:10]}): "
            "no code change to confirm, the move is the machine's",
        )
    command = ab_command_line(base_commit, suspects, pytest_args, report, ab_command)
    print("perfsuite nightly: confirming: " + " ".join(command), flush=True)
    try:
        status = subprocess.run(command, check=False).returncode
    except OSError as exc:
        return Confirmation(command, 2, f"could not start perfsuite ab: {exc}")
    summary_file = report / "summary.md"
    summary = summary_file.read_text(encoding="utf-8") if summary_file.is_file() else ""
    return Confirmation(command, status, summary)
