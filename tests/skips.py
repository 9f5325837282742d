"""The skip reasons an inner pytest run reports with ``-rs``."""

from __future__ import annotations

import re

import pytest

SKIP_LINE = re.compile(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$")


def skip_reasons(result: pytest.RunResult) -> list[str]:
    """The reasons of ``-rs`` lines, one per skipped test, sorted."""
    reasons = []
    for line in result.stdout.lines:
        match = SKIP_LINE.match(line)
        if match:
            reasons.extend([match[2]] * int(match[1]))
    return sorted(reasons)
