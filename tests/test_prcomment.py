"""perfsuite comment: the body built from an A/B report, one comment per pull request
edited on each push (against a local stand-in of GitHub's API), the job summary where
no token may comment."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from perfsuite.cli import main
from perfsuite.prcomment import MARKER, comment_body, post_comment

SUMMARY = """## perfsuite ab

A = main (abc), B = HEAD (def), blocks alternated in one session (seed 1).

| bench | verdict | time change [CI] |
|---|---|---:|
| `test_decode.py::test_decode` | SLOWER | +24.8% [+23.9%, +25.6%] |

**REGRESSION in 1 bench(es): test_decode.py::test_decode**
"""


def report(tmp_path: Path) -> Path:
    folder = tmp_path / "ab"
    folder.mkdir()
    (folder / "summary.md").write_text(SUMMARY)
    return folder


def test_the_body_names_the_verdict_each_bench_and_the_report(tmp_path: Path) -> None:
    body = comment_body(report(tmp_path), 1, "https://example.com/report")
    lines = body.splitlines()
    assert lines[0] == MARKER
    assert lines[1] == (
        "**perfsuite: failed: a regression (a bench slower, or an exact counter rose)** "
        "(exit status 1)"
    )
    assert "| `test_decode.py::test_decode` | SLOWER | +24.8% [+23.9%, +25.6%] |" in lines
    assert lines[-1].endswith("https://example.com/report")
    missing = comment_body(tmp_path / "none", 2)
    assert "wrote no report" in missing
    assert "(exit status 2)" in missing


class GitHub(BaseHTTPRequestHandler):
    """Issue comments of one pull request, as GitHub's REST API serves them."""

    comments: ClassVar[list[dict[str, Any]]] = []

    def _reply(self, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))  # type: ignore[no-any-return]

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == "Bearer token"
        page = int(self.path.rsplit("page=", 1)[1])
        self._reply(self.comments[(page - 1) * 100 : page * 100])

    def do_POST(self) -> None:
        made = {"id": len(self.comments) + 1, "body": self._body()["body"], "html_url": "new"}
        self.comments.append(made)
        self._reply(made)

    def do_PATCH(self) -> None:
        number = int(self.path.rsplit("/", 1)[1])
        comment = next(c for c in self.comments if c["id"] == number)
        comment["body"] = self._body()["body"]
        self._reply({**comment, "html_url": "edited"})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    GitHub.comments = [{"id": n, "body": f"a review comment {n}"} for n in range(1, 121)]
    server = HTTPServer(("127.0.0.1", 0), GitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_one_comment_per_pull_request_edited_on_each_push(tmp_path: Path, api: str) -> None:
    first = comment_body(report(tmp_path), 1)
    assert post_comment(first, "o/r", 7, "token", api) == "new"
    assert post_comment(first.replace("+24.8%", "+30.0%"), "o/r", 7, "token", api) == "edited"
    ours = [c for c in GitHub.comments if c["body"].startswith(MARKER)]
    assert len(ours) == 1
    assert "+30.0%" in ours[0]["body"]


def test_without_a_token_that_may_comment_the_verdict_goes_to_the_job_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_TOKEN", "token")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("PERFSUITE_FORK", "true")
    folder = report(tmp_path)
    assert main(["comment", "--report", str(folder), "--status", "1", "--post", "7"]) == 0
    assert "a fork's pull request gets no token that may comment" in capsys.readouterr().out
    text = summary.read_text()
    assert text.startswith("> a fork's pull request gets no token that may comment")
    assert "| `test_decode.py::test_decode` | SLOWER |" in text


def test_no_workflow_condition_reads_the_event_repository() -> None:
    workflows = Path(__file__).resolve().parent.parent / ".github" / "workflows"
    for path in workflows.glob("*.yml"):
        assert "github.event.repository" not in path.read_text(), path.name
