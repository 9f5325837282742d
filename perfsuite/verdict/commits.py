"""A run's commit, and the rule that no code changed between two runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from perfsuite.verdict.judge import MACHINE, Confirmed


@dataclass(frozen=True)
class Commit:
    """A run's commit, as pytest-benchmark's ``commit_info`` saved it."""

    sha: str | None
    dirty: bool

    @classmethod
    def of(cls, commit_info: Mapping[str, Any]) -> Commit:
        sha = commit_info.get("id")
        usable = isinstance(sha, str) and sha not in ("", *NO_COMMIT_WORDS)
        return cls(sha if usable else None, bool(commit_info.get("dirty")))


#: what pytest-benchmark records as a run's commit outside a repository it can read
NO_COMMIT_WORDS = ("unversioned", "unknown")


def short_sha(sha: object, length: int = 10) -> str:
    """A commit id cut to ``length``, for a table; pytest-benchmark's word for a run
    outside git whole (``unversioned``, not ``unversione``), ``?`` for none.

    >>> short_sha("unversioned"), short_sha("0123456789abcdef"), short_sha(None)
    ('unversioned', '0123456789', '?')
    """
    if not isinstance(sha, str) or not sha:
        return "?"
    return sha if sha in NO_COMMIT_WORDS else sha[:length]


def commit_label(sha: object, dirty: bool) -> str:
    """A run's commit as a plot's axis names it: 8 characters, ``+`` when the run was
    saved from uncommitted changes, ``?`` for none.

    >>> commit_label("eb1eee44f501ef5545", True), commit_label(None, False)
    ('eb1eee44+', '?')
    """
    return short_sha(sha, 8) + ("+" if dirty else "")


def day_label(moment: datetime) -> str:
    """A run's date as a plot's axis names it: ``Nov 25``."""
    return moment.strftime("%b %d")


def same_code(baseline: Commit, current: Commit) -> bool:
    """Both runs are of one commit, neither with uncommitted changes."""
    return (
        baseline.sha is not None
        and baseline.sha == current.sha
        and not baseline.dirty
        and not current.dirty
    )


MACHINE_TEXT = (
    "the machine's move: both runs are of commit {sha} on a clean tree, no code change to confirm"
)
DOCUMENTS_TEXT = (
    "the machine's move: only documents changed since commit {sha} ({names}), no code or "
    "data change to confirm"
)
SAME_TREE_TEXT = (
    "the machine's move: no file changed since commit {sha}, no code or data change to confirm"
)
#: the suffixes of documents: files no bench reads as code or data, so that a change of
#: only these changes no bench (a bench that reads one as data: ``perfsuite ab`` it)
DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst", ".adoc", ".asciidoc")
UNTOUCHED_TEXT = (
    "the machine's move: none of the files changed since commit {sha} ({names}) is its "
    "code or data, no code or data change to confirm"
)


def is_document(name: str) -> bool:
    """Whether the file ``name`` is a document (:data:`DOCUMENT_SUFFIXES`), which no
    bench reads as code or data.

    >>> is_document("README.md"), is_document("docs/a.RST"), is_document("labels.txt")
    (True, True, False)
    """
    return name.lower().endswith(DOCUMENT_SUFFIXES)


def machine_reason(move: Confirmed) -> str:
    """Why the machine's move ``move`` (:func:`machine_move`) is the machine's, as a
    gate's closing line says it.

    >>> machine_reason(machine_move(Commit("0123456789abcdef", False)))
    'both runs of one commit on a clean tree'
    >>> machine_reason(machine_move(Commit("0123456789abcdef", False), []))
    'no code or data changed'
    """
    if move.text.startswith(MACHINE_TEXT.split("{sha}")[0]):
        return "both runs of one commit on a clean tree"
    return "no code or data changed"


def machine_move(commit: Commit, files: Sequence[str] | None = None) -> Confirmed:
    """A suspect's outcome where :func:`same_code` holds, or where ``files`` changed since
    ``commit`` (none: the same tree) and none is its code or data
    (:class:`perfsuite.changed.Changes`): the move is the machine's.

    >>> machine_move(Commit("0123456789abcdef", False), ["README.md"]).text.split(" (")[0]
    "the machine's move: only documents changed since commit 0123456789ab"
    >>> machine_move(Commit("0123456789abcdef", False), ["a.py"]).text.split(" is ")[0]
    "the machine's move: none of the files changed since commit 0123456789ab (a.py)"
    """
    sha = (commit.sha or "?")[:12]
    if files is None:
        return Confirmed(MACHINE, MACHINE_TEXT.format(sha=sha))
    if not files:
        return Confirmed(MACHINE, SAME_TREE_TEXT.format(sha=sha))
    names = ", ".join([*files[:3], "..."] if len(files) > 3 else files)
    text = DOCUMENTS_TEXT if all(is_document(name) for name in files) else UNTOUCHED_TEXT
    return Confirmed(MACHINE, text.format(sha=sha, names=names))
