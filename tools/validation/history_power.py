"""Measure ``perfsuite history``: how often it finds a step, where, and its false steps.

Builds synthetic histories from the real saved run ``tests/data/tiny_run.json`` with
``tests/test_history_data.make_history``: ``--nights`` runs, every timing of a night's
run multiplied by a lognormal noise factor (``--noise`` is the sigma of its log, 0.05 by
default) and, from the step's night on, by ``1 + --step``. Each history holds the run's
two benches, so two series. The cases are a step at night 20, 10 and 25 (nights count
from 0, so a step at 20 has 20 nights before it), and no step. History ``i`` of every
case draws its noise from seed ``--seed + i``: the cases differ only by the step.

Each history is saved as JSON runs in a temporary storage and read back as
``perfsuite history`` reads it (``Storage``, ``bench_histories``, ``steps_of``). On the
flat histories the command itself also runs, and its exit status is counted.

It prints, per case, how many series had a time step at the step's exact night,
within one night of it, and anywhere; on the flat series, how many raised a step, how
many a regression step, and how many histories ``perfsuite history`` failed (exit 1).
The last line is a reference for placing a step: how often its likeliest place is
within one night of it when both levels are known, which the detector is not told.
Usage::

    python tools/validation/history_power.py [--series 200] [--seed 0] [--nights 30]
                                  [--noise 0.05] [--step 0.10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from perfsuite.cli import main as perfsuite_main
from perfsuite.verdict.history import bench_histories, steps_of
from tests.test_history_data import FIXTURE, make_history, saved_runs

STEP_NIGHTS = (20, 10, 25)


@dataclass
class Tally:
    """Counts over the series of one case."""

    series: int = 0
    exact: int = 0
    near: int = 0  # within one night
    anywhere: int = 0
    regression: int = 0
    failed_histories: int = 0
    histories: int = 0
    reference_near: int = 0  # the likeliest place, both levels known


def base_medians() -> dict[str, float]:
    """Each bench's median call time in the saved run the histories scale."""
    document = json.loads(FIXTURE.read_text())
    return {b["fullname"]: statistics.median(b["stats"]["data"]) for b in document["benchmarks"]}


def likeliest_place(medians: list[float], base: float, step: float) -> int:
    """The maximum-likelihood start of the step when both levels are known."""
    low, high = math.log(base), math.log(base * (1 + step))
    middle = (low + high) / 2
    gains = [math.log(m) - middle for m in medians]
    tails = [sum(gains[k:]) for k in range(1, len(gains))]
    return 1 + max(range(len(tails)), key=lambda k: (tails[k], -k))


def run_case(args: argparse.Namespace, step_at: int | None, histories: int) -> Tally:
    """Build ``histories`` histories with a step at ``step_at`` (``None``: none), count."""
    tally = Tally()
    bases = base_medians()
    for i in range(histories):
        with tempfile.TemporaryDirectory() as folder:
            storage = Path(folder)
            make_history(
                storage,
                args.nights,
                step_at=step_at,
                step=args.step,
                noise=args.noise,
                seed=args.seed + i,
            )
            tally.histories += 1
            for series in bench_histories(saved_runs(storage)):
                tally.series += 1
                steps = [s for s in steps_of(series) if s.change is not None]
                tally.anywhere += bool(steps)
                if step_at is None:
                    tally.regression += any(s.regression for s in steps)
                    continue
                if steps:
                    error = min(abs(s.index - step_at) for s in steps)
                    tally.exact += error == 0
                    tally.near += error <= 1
                place = likeliest_place(series.medians, bases[series.fullname], args.step)
                tally.reference_near += abs(place - step_at) <= 1
            if step_at is None:
                with contextlib.redirect_stdout(io.StringIO()):
                    status = perfsuite_main(["history", "--storage", str(storage)])
                tally.failed_histories += status == 1
    return tally


def rate(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.1f}%)" if total else "-"


def commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=200, help="series per case (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first history")
    parser.add_argument("--nights", type=int, default=30, help="runs per history (default 30)")
    parser.add_argument("--noise", type=float, default=0.05, help="sigma of log noise per night")
    parser.add_argument("--step", type=float, default=0.10, help="relative step (default 0.10)")
    args = parser.parse_args(argv)
    if args.series < 2 or args.nights < 2:
        parser.error("--series and --nights must be at least 2")
    histories = math.ceil(args.series / 2)  # each history holds two benches
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    print(
        f"perfsuite history power: {stamp}, commit {commit()}, seed {args.seed}, "
        f"{histories} histories x 2 benches per case, {args.nights} nights, "
        f"noise {args.noise:.1%} (lognormal), step {args.step:+.1%}"
    )
    references = []
    for night in STEP_NIGHTS:
        if not 0 < night < args.nights:
            continue
        tally = run_case(args, night, histories)
        print(
            f"step at night {night:>2}: exact {rate(tally.exact, tally.series)}, "
            f"within 1 night {rate(tally.near, tally.series)}, "
            f"anywhere {rate(tally.anywhere, tally.series)}"
        )
        references.append(f"night {night} {rate(tally.reference_near, tally.series)}")
    flat = run_case(args, None, histories)
    print(
        f"no step: false steps {rate(flat.anywhere, flat.series)}, "
        f"false regression steps {rate(flat.regression, flat.series)}, "
        f"perfsuite history exit 1 on {rate(flat.failed_histories, flat.histories)} histories"
    )
    print("reference (both levels known, likeliest place) within 1 night: " + ", ".join(references))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
