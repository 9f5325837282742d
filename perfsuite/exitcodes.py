"""The exit statuses of every perfsuite command (:class:`ExitCode`): ``--perf-gate``,
``perfsuite compare``, ``ab``, ``bisect``, ``nightly`` and ``history`` end their
verdicts with them,
and ``perfsuite system``, which judges nothing, exits ``OK``.

* ``OK`` (0): no bench regressed, and every bench measured was judged at its threshold
  or ruled out a regression of twice it (its bound, which its row states);
* ``REGRESSION`` (1): a bench is slower (confirmed where the command confirms), or an
  exact counter rose;
* ``BAD_INPUT`` (2): a file, run id, option or revision is wrong (the line names it);
* ``NOT_JUDGED`` (3): no verdict could be reached: nothing was judged on both sides, a
  bench was too noisy to have caught a regression of twice its threshold (named with
  its bound), the runs come from different machines or stacks, or a suspect could not
  be confirmed; the line says why and what would judge it;
* ``BISECT_SKIP`` (125): only under ``perfsuite ab --bisect-exit``, which speaks ``git
  bisect run``'s language (0 good, 1 bad): nothing was judged, or a revision cannot be
  measured here (a side failed, its pins cannot be installed), so git skips the commit;
* ``BISECT_ABORT`` (128): only under ``--bisect-exit``: bad input, which stops git's
  bisection;
* ``INTERRUPTED`` (130).

A verdict that judged nothing never exits 0.
"""

from __future__ import annotations

import contextlib
import enum
import signal
from collections.abc import Iterator
from types import FrameType


class ExitCode(enum.IntEnum):
    """A perfsuite command's exit status (see the module doc).

    >>> int(ExitCode.NOT_JUDGED), ExitCode(1).name
    (3, 'REGRESSION')
    """

    OK = 0
    REGRESSION = 1
    BAD_INPUT = 2
    NOT_JUDGED = 3
    BISECT_SKIP = 125
    BISECT_ABORT = 128
    INTERRUPTED = 130


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` while the block runs, so a command
    stopped by them runs every cleanup and ends ``INTERRUPTED``, as after Ctrl-C. Off
    the main thread, where Python cannot set handlers, the signals stay as they are."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {}
    with contextlib.suppress(ValueError):
        previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
