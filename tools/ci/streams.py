"""Run ``make test``'s pytest as two processes side by side, and fail if either fails.

The tests that run ``perfsuite ab`` or the gate's confirming A/B in child processes
(``AB_GLOBS``) run in one pytest; everything else (the other tests, the benches at
smoke scale) runs in a second pytest beside it. Both keep a CPU busy, so the split is
chosen so that the two take about as long; on a 2-CPU machine they take about half the
time of one run.

The second pytest's output goes to the terminal as it runs; the A/B tests' output is
printed after it. The exit status is the first failing one; a stream that collected
nothing (pytest's 5, e.g. under a ``-k`` that selects only the other's tests) passes
when the other ran tests. Ctrl-C reaches both pytests (one process group) and is
waited for, so no test process is left behind.

Usage (from the repository root)::

    python tools/ci/streams.py PYTEST [PYTEST_ARGS ...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: the A/B tests and the gate's confirmation tests: their own pytest; with them, so that
#: the two streams take about as long, the gate's tests of a run's selection and the
#: bisection's (which run A/Bs too)
AB_GLOBS = (
    "tests/test_ab_*.py",
    "tests/test_gate_confirm*.py",
    "tests/test_gate_selection.py",
    "tests/test_bisect.py",
)
#: pytest's exit status when it collected no test
NO_TESTS = 5
#: seconds a stream gets to stop after Ctrl-C before it is killed
STOP_S = 30.0


def ab_tests(root: Path) -> list[str]:
    """The A/B tests' files, relative to ``root``, sorted."""
    return sorted(str(p.relative_to(root)) for glob in AB_GLOBS for p in root.glob(glob))


def commands(pytest: str, args: Sequence[str], root: Path) -> tuple[list[str], list[str]]:
    """The A/B tests' command and the rest's.

    >>> ab, rest = commands("pytest", ["-q"], Path("."))
    >>> ab[-1], rest[1:4]
    ('-q', ['tests', 'benches', '--perf-scale=smoke'])
    """
    files = ab_tests(root)
    ab = [pytest, *files, *args]
    rest = [pytest, "tests", "benches", "--perf-scale=smoke"]
    return ab, [*rest, *(f"--ignore={f}" for f in files), *args]


def combined(ab: int, rest: int) -> int:
    """The exit status of both streams.

    >>> combined(0, 0), combined(0, 1), combined(NO_TESTS, 0), combined(NO_TESTS, NO_TESTS)
    (0, 1, 0, 5)
    """
    if ab == rest == NO_TESTS:
        return NO_TESTS
    failed = [code for code in (rest, ab) if code not in (0, NO_TESTS)]
    return failed[0] if failed else 0


def _stop(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: python tools/ci/streams.py PYTEST [PYTEST_ARGS ...]", file=sys.stderr)
        return 4
    root = Path.cwd()
    ab_cmd, rest_cmd = commands(argv[0], argv[1:], root)
    with tempfile.TemporaryFile() as log:
        ab = subprocess.Popen(ab_cmd, stdout=log, stderr=subprocess.STDOUT)
        rest = subprocess.Popen(rest_cmd)
        try:
            rest_code = rest.wait()
            ab_code = ab.wait()
        except KeyboardInterrupt:
            rest_code, ab_code = _stop(rest), _stop(ab)
        log.seek(0)
        sys.stdout.flush()
        heading = "the A/B tests (with the gate's confirmation tests), run beside the rest"
        print(f"\n==== {heading}: {' '.join(ab_cmd)}", flush=True)
        sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
    return combined(ab_code, rest_code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
