"""The README's command listing is the console script's own ``--help``."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsuite.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
PROMPT = "$ .venv/bin/perfsuite --help"


def _shown_help(text: str) -> str:
    """The lines the README shows after ``PROMPT``, up to the end of that code block."""
    lines = text.splitlines()
    start = lines.index(PROMPT) + 1
    end = lines.index("```", start)
    return "\n".join(lines[start:end])


def test_readme_shows_the_current_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps to the terminal's width
    assert _shown_help(README.read_text()) == build_parser().format_help().rstrip("\n")
