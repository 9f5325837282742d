"""Replay a storage's saved runs: which peak-memory rises the gate's screen would flag.

Each saved run of one machine folder of a pytest-benchmark storage, from the second on,
is judged against the run before it with the runs before it as history, as
``--benchmark-compare --perf-gate`` judges a rerun that autosaves
(:func:`perfsuite.verdict.compare.compare_runs`). For each, it counts the benches whose
peak memory rose past the bench's own threshold alone (``fixed``) and past the threshold
the history's noise band widens (``banded``, what the gate uses), and names the latter.
A gate confirms each such suspect in fresh pairs of processes, so every flag of an
unchanged rerun costs an A/B.

Usage::

    python tools/validation/memory_band_replay.py STORAGE_FOLDER [--out F]

``STORAGE_FOLDER`` holds the saved ``NNNN_*.json`` runs (e.g.
``.benchmarks/Linux-CPython-3.11-64bit``); ``gate_check.py --keep DIR`` keeps one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.compare import compare_runs, pairs
from perfsuite.verdict.judge import judge_bench
from perfsuite.verdict.runs import load_run


def replay(folder: Path) -> list[dict[str, Any]]:
    """One row per run from the second: the run, and the benches flagged each way."""
    runs = [load_run(p) for p in sorted(folder.glob("[0-9][0-9][0-9][0-9]_*.json"))]
    rows = []
    for k in range(1, len(runs)):
        baseline, current, history = runs[k - 1], runs[k], runs[:k]
        judged = compare_runs(baseline, current, history=history).verdicts
        banded_rose = [v.fullname for v in judged if v.memory_rose]
        fixed_rose = [
            b.fullname for b, c in pairs(baseline, current) if judge_bench(b, c).memory_rose
        ]
        rows.append(
            {
                "run": Path(current.source).stem,
                "history": k,
                "benches": len(judged),
                "fixed": len(fixed_rose),
                "banded": len(banded_rose),
                "banded_benches": banded_rose,
                "cleared_by_band": sorted(set(fixed_rose) - set(banded_rose)),
            }
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"memory_band_replay: {args.folder} is not a folder of saved runs", file=sys.stderr)
        return 2
    try:
        rows = replay(args.folder)
    except PerfsuiteError as exc:
        print(f"memory_band_replay: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(f"memory_band_replay: {args.folder} holds fewer than 2 saved runs", file=sys.stderr)
        return 2
    for row in rows:
        flagged = ", ".join(row["banded_benches"]) or "-"
        print(
            f"{row['run']}: {row['history']} earlier runs, {row['benches']} benches; peak rose: "
            f"{row['fixed']} at the bench's threshold, {row['banded']} with the band ({flagged})"
        )
    print(
        f"in all: {sum(r['fixed'] for r in rows)} at the bench's threshold, "
        f"{sum(r['banded'] for r in rows)} with the band, over {len(rows)} runs"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
