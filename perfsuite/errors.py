"""The one exception type perfsuite raises for bad input."""

from __future__ import annotations

from collections.abc import Iterable


class PerfsuiteError(Exception):
    """Bad input or environment: the message is one line naming the thing at fault and the fix."""


class CannotMeasure(PerfsuiteError):
    """A revision cannot be measured here (its side failed, its pins cannot be installed): for a
    bisection, a commit to skip rather than a mistake of the user's."""


def unknown_choice(what: str, value: object, choices: Iterable[str]) -> PerfsuiteError:
    """The one-line error for a name that is not one of ``choices``.

    >>> str(unknown_choice("step kind", "jump", ["forward", "train"]))
    "unknown step kind 'jump'; choose one of forward, train"
    """
    return PerfsuiteError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")
