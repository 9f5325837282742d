"""The exit statuses of every perfsuite command (:class:`ExitCode`): ``--perf-gate``,
``perfsuite compare``, ``ab``, ``nightly`` and ``history`` end their verdicts with them,
and ``perfsuite system``, which judges nothing, exits ``OK``.

* ``OK`` (0): at least one bench was judged, and none regressed;
* ``REGRESSION`` (1): a bench is slower (confirmed where the command confirms), or an
  exact counter rose;
* ``BAD_INPUT`` (2): a file, run id, option or revision is wrong (the line names it);
* ``NOT_JUDGED`` (3): no verdict could be reached: nothing was judged on both sides, the
  runs come from different machines or stacks, or a suspect could not be confirmed;
  the line says why and what would judge it;
* ``INTERRUPTED`` (130).

``perfsuite ab --bisect-exit`` speaks ``git bisect run``'s language instead: 0 good, 1
bad, ``BISECT_SKIP`` (125) for a verdict that decided nothing or a revision that cannot
be measured, ``BISECT_ABORT`` (128, which stops the bisection) for bad input.

A verdict that judged nothing never exits 0.
"""

from __future__ import annotations

import enum


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
