"""``perfsuite comment``: a pull request's verdict as one comment, updated on each push.

The body (:func:`comment_body`) is the A/B report's ``summary.md`` (the verdict table
and its conclusion) under a headline saying what the check's exit status means, with
a link to the whole report. It starts with :data:`MARKER`, by which the next push finds
and edits the same comment (:func:`post_comment`) instead of adding one. Where the
job's token may not write (a fork's pull request gets a read-only one) or there is no
token, the body goes to the job summary, with a line saying why.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode

#: the first line of perfsuite's comment on a pull request
MARKER = "<!-- perfsuite-pr-comment -->"
#: GitHub refuses comments over 65,536 characters
LIMIT = 60_000

HEADLINES = {
    ExitCode.OK: "passed: no regression (each bench judged or bounded: see its row)",
    ExitCode.REGRESSION: "failed: a regression (a bench slower, or an exact counter rose)",
    ExitCode.BAD_INPUT: "failed: bad input or a fault (the job's log names it)",
    ExitCode.NOT_JUDGED: "failed: undecided (the table and its last line say why)",
    ExitCode.INTERRUPTED: "interrupted",
}


def _status(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an exit status") from None


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``comment`` on the ``perfsuite`` command line."""
    comment = commands.add_parser(
        "comment",
        help="the pull request comment of an A/B report: print it, or post it",
        description="Build the pull request comment from perfsuite ab's report and its "
        "exit status; with --post, create or update perfsuite's one comment on the pull "
        "request (GITHUB_TOKEN, GITHUB_REPOSITORY), or, where the token may not write, "
        "add it to the job summary. Exit status: 0, or 2 on bad input.",
    )
    comment.add_argument(
        "--report", type=Path, required=True, metavar="DIR", help="perfsuite ab --report"
    )
    comment.add_argument(
        "--status", type=_status, required=True, metavar="N", help="perfsuite ab's exit status"
    )
    comment.add_argument("--link", default="", metavar="URL", help="where the whole report is")
    comment.add_argument("--out", type=Path, metavar="FILE", help="also write the body here")
    comment.add_argument("--post", type=int, metavar="PR", help="post on this pull request")


def comment_body(report: Path, status: int, link: str = "") -> str:
    """The comment for an A/B that wrote ``report`` (maybe not: it failed first) and
    exited ``status``."""
    try:
        headline = HEADLINES[ExitCode(status)]
    except ValueError:
        headline = f"failed (exit status {status})"
    summary = report / "summary.md"
    if summary.is_file():
        text = summary.read_text(encoding="utf-8", errors="replace").strip()
    else:
        text = f"perfsuite ab wrote no report into `{report}`: see the job's log."
    if len(text) > LIMIT:
        text = text[:LIMIT] + "\n\n(cut: the whole table is in the report)"
    lines = [MARKER, f"**perfsuite: {headline}** (exit status {status})", "", text, ""]
    if link:
        lines.append(f"The whole report (a plot per bench, both sides' runs and logs): {link}")
    return "\n".join(lines) + "\n"


def _request(url: str, token: str, method: str = "GET", data: Any = None) -> Any:
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/vnd.github+json")
    request.add_header("X-GitHub-Api-Version", "2022-11-28")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def post_comment(body: str, repository: str, pr: int, token: str, api: str) -> str:
    """Create perfsuite's comment on pull request ``pr``, or edit the one it made
    before; its URL."""
    base = f"{api.rstrip('/')}/repos/{repository}/issues"
    page = 1
    while True:
        found = _request(f"{base}/{pr}/comments?per_page=100&page={page}", token)
        for comment in found:
            if str(comment.get("body", "")).startswith(MARKER):
                edited = _request(
                    f"{base}/comments/{comment['id']}", token, "PATCH", {"body": body}
                )
                return str(edited.get("html_url", ""))
        if len(found) < 100:
            break
        page += 1
    made = _request(f"{base}/{pr}/comments", token, "POST", {"body": body})
    return str(made.get("html_url", ""))


def _to_summary(body: str, why: str) -> str:
    """Append ``body`` to the job summary, after a line saying ``why``; what to print."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return f"{why}; no job summary either (GITHUB_STEP_SUMMARY unset): the body is above"
    with open(summary, "a", encoding="utf-8") as handle:
        handle.write(f"> {why}: the verdict is here, not in a comment.\n\n{body}")
    return f"{why}: wrote the verdict into the job summary instead"


def run(args: argparse.Namespace) -> int:
    """Build the comment; print it, write it (``--out``), post it (``--post``)."""
    if args.report.exists() and not args.report.is_dir():
        raise PerfsuiteError(f"--report {args.report}: a file, not perfsuite ab's report folder")
    body = comment_body(args.report, args.status, args.link)
    print(body, end="")
    if args.out is not None:
        from perfsuite.data.fsutil import atomic_write_text

        atomic_write_text(args.out, body)
    if args.post is None:
        return ExitCode.OK
    token = os.environ.get("GITHUB_TOKEN", "")
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    if os.environ.get("PERFSUITE_FORK") == "true":
        note = _to_summary(body, "a fork's pull request gets no token that may comment")
    elif not token or not repository:
        note = _to_summary(body, "no GITHUB_TOKEN or GITHUB_REPOSITORY to comment with")
    else:
        try:
            note = f"commented: {post_comment(body, repository, args.post, token, api)}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            note = _to_summary(body, f"could not comment on #{args.post} ({exc})")
    print(f"perfsuite comment: {note}")
    return ExitCode.OK
