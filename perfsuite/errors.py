"""The one exception type perfsuite raises for bad input."""

from __future__ import annotations

from collections.abc import Iterable


class PerfsuiteError(Exception):
    """Bad input or environment: the message is one line naming the thing at fault and the fix."""


def unknown_choice(what: str, value: object, choices: Iterable[str]) -> PerfsuiteError:
    """The one-line error for a name that is not one of ``choices``.

    >>> str(unknown_choice("step kind", "jump", ["forward", "train"]))
    "unknown step kind 'jump'; choose one of forward, train"
    """
    return PerfsuiteError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")
