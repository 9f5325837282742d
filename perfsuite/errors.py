"""The one exception type perfsuite raises for bad input."""

from __future__ import annotations


class PerfsuiteError(Exception):
    """Bad input or environment: the message is one line naming the thing at fault and the fix."""
