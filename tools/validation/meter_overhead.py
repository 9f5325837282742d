"""Measure what metering a ``benchmark``-fixture bench costs beside live child processes.

With any perfsuite option set, a ``benchmark``-fixture bench's rounds are metered
(:mod:`perfsuite.bench.cost`). pytest-benchmark counts only its timed rounds against
``--benchmark-max-time``, so whatever the meter does between rounds lengthens the bench
without showing in its timings. This script builds a bench of microsecond rounds,
``benchmark(sum, range(10))``, beside ``--children`` idle child processes, in a
temporary folder with no pytest configuration, and runs it ``--runs`` times three ways,
interleaved:

- ``plain``: no perfsuite option (pytest-benchmark alone, as it documents);
- ``metered``: ``--perf-scale=smoke``, so the meter runs;
- ``meter off``: the same under ``PERFSUITE_COST=off``.

It prints each session's wall time and, per run, ``metered`` over ``plain`` and over
``meter off``, with their median and range. Usage::

    python tools/validation/meter_overhead.py [--runs 5] [--children 4] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BENCH = """
import subprocess
import sys

import pytest

CHILDREN = {children}


@pytest.fixture(scope="module")
def workers():
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        for _ in range(CHILDREN)
    ]
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def test_sum(benchmark, workers):
    assert benchmark(sum, range(10)) == 45
"""

#: the three ways, in the order each run takes them: (name, extra arguments, cost meter on)
WAYS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("plain", (), True),
    ("metered", ("--perf-scale=smoke",), True),
    ("meter off", ("--perf-scale=smoke",), False),
)


def session(folder: Path, args: Sequence[str], meter: bool) -> float:
    """The wall seconds of one pytest session in ``folder``; exits on a failed session."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    if not meter:
        env["PERFSUITE_COST"] = "off"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    start = time.perf_counter()
    proc = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"meter_overhead: {' '.join(command)} exited {proc.returncode}:\n{proc.stdout}")
    return seconds


def spread(values: Sequence[float]) -> str:
    """``median (min-max)`` of ``values``.

    >>> spread([1.0, 3.0, 2.0])
    '2.00x (1.00-3.00)'
    """
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--children", type=int, default=4)
    parser.add_argument("--out", type=Path)
    opts = parser.parse_args(argv)
    if opts.runs < 1 or opts.children < 0:
        parser.error("--runs must be at least 1 and --children at least 0")
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="meter-overhead-") as tmp:
        folder = Path(tmp)
        (folder / "test_sum.py").write_text(BENCH.format(children=opts.children))
        for run in range(1, opts.runs + 1):
            times = {name: session(folder, args, meter) for name, args, meter in WAYS}
            runs.append(times)
            shown = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in times.items())
            print(f"run {run}: {shown}", flush=True)
    over_plain = [t["metered"] / t["plain"] for t in runs]
    over_off = [t["metered"] / t["meter off"] for t in runs]
    print(f"{opts.children} live children, {opts.runs} runs:")
    print(f"  metered over plain:     {spread(over_plain)}")
    print(f"  metered over meter off: {spread(over_off)}")
    if opts.out is not None:
        summary = {"children": opts.children, "runs": runs}
        opts.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
