"""A first-stage pass measured again in a second, fresh pair of processes.

A `same` from the first stage, or an inconclusive verdict whose bound is under twice
the threshold (it passes, saying its bound), rests on one pair of processes, and a
pair of processes can be off as a whole, for its life; below, `same` stands for both.
Its interval holds the noise between blocks, not that offset, which only another pair
of processes shows (asv runs every benchmark in 2 processes for the same reason).

So, whenever suspects are confirmed (``--confirm``, with one pair of processes per
file), every first-stage `same` is measured again in one more pair of processes, over
the file's `same` benches alone, at ``--min-pairs`` pairs of blocks. That pair is the
first pair's mirror: the other side sets up first and every pair of blocks runs in the
other order (:func:`perfsuite.ab.process_pairs.first_side`, ``session_seed``). The `same`
stands when the second pair does not lean beyond the threshold
(:func:`perfsuite.ab.rows.leans`; with ``--suspects leaning-slower``, the smoke
default, when it does not lean slower: :func:`perfsuite.ab.rows.suspicious`);
otherwise the bench becomes a suspect, tested by the confirmation on fresh pairs
alone, which must point the way the second pair leaned. Neither of the first two
pairs is pooled in.

A first-stage `same` could never end `slower`; now it can, at most at the chance that
its second pair leans slower beyond the threshold times that of the confirmation then
erring the same way (``CONFIRM_ALPHA``, shared by its looks): the two-stage risk of any
other suspect. What it costs is one pair of processes per bench file with a `same` (at
default scale, in an A/A, nearly every file).

Only a lean makes a suspect of a `same`, not an undecided second pair (an interval
still reaching past the threshold, which ``--suspects undecided`` takes from the first
stage): the second pair reads only ``--min-pairs`` pairs of blocks, whose sign-test
interval at 12 pairs spans nearly their whole range, so it would send most `same`
verdicts of an A/A on to a confirmation. It checks for a pair of processes that is
off by the threshold or more; it is not a second first stage.
"""

from __future__ import annotations

from dataclasses import replace

from perfsuite.ab.process_pairs import ProcessPairs, by_file, key
from perfsuite.ab.rows import suspicious
from perfsuite.ab.verdicts import Verdicts
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.table import pct

#: the offset of a file's second pair of processes (its first is at 0): odd, so it
#: mirrors the first in which side starts and in the order of each pair of blocks
SECOND = 1


def same_benches(verdicts: Verdicts) -> list[str]:
    """The first stage's benches that would pass on one pair of processes, in order:
    `same`, or inconclusive with a bound under twice the threshold
    (:attr:`perfsuite.ab.rows.Row.bounded`). What a second pair measures again."""
    return [
        row.nodeid
        for row in verdicts.rows
        if row.run is not None
        and (row.verdict is Verdict.SAME or row.bounded)
        and row.run.second is None
    ]


def rechecked(
    verdicts: Verdicts, checks: list[Verdicts], ids: list[str], kind: str = "leaning"
) -> Verdicts:
    """``verdicts`` with each `same` of ``ids`` carrying what its second pair of
    processes read (``checks``), shown in its status, which says when that makes it a
    suspect of ``--suspects kind``; a bench the second pair did not measure keeps its
    `same`, its status saying so."""
    again = {r.nodeid: r.run.result for part in checks for r in part.rows if r.run and r.run.result}
    rows = []
    for row in verdicts.rows:
        if row.nodeid not in ids or row.run is None:
            rows.append(row)
            continue
        second = again.get(row.nodeid)
        if second is None:
            rows.append(replace(row, status="the second pair of processes did not measure it"))
            continue
        said = f"second pair of processes {pct(second.change)}"
        said += ", a suspect" if suspicious(second, kind) else ""
        rows.append(replace(row, run=replace(row.run, second=second), status=said))
    return Verdicts(rows, verdicts.specs, verdicts.seed, [r.run for r in rows if r.run])


def recheck(pairs: ProcessPairs, verdicts: Verdicts, whole: bool, kind: str) -> Verdicts:
    """Measure every first-stage `same` of ``verdicts`` again in a second pair of
    processes per bench file (``whole``: one pair over the whole selection); ``kind``
    is ``--suspects``."""
    ids = same_benches(verdicts)
    if not ids:
        return verdicts
    files = by_file(ids)
    groups = [ids] if whole else list(files.values())
    keys = [key(None, SECOND)] if whole else [key([f], SECOND) for f in files]
    print(
        f"perfsuite ab: {len(ids)} `same` verdict(s) in {len(files)} file(s) measured "
        "again in a second pair of processes",
        flush=True,
    )
    return rechecked(verdicts, pairs.series(keys, groups), ids, kind)
