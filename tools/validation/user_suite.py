"""A pytest-benchmark user's bench suite, the gate run over a case, and reading its output.

Used by ``tools/validation/ab_power.py --suite benchmark`` and ``--via gate`` and by
``tools/validation/gate_check.py``; run nothing by itself.

* :func:`write_benchmark_case` writes the suite a pytest-benchmark user has: no pytest
  configuration file, no perfsuite API, only the ``benchmark`` fixture. ``test_decode.py``
  at the root times ``benchmark(decode_all, jpegs)`` and ``tests/test_decode_pedantic.py``
  times ``benchmark.pedantic(decode_all, ..., iterations=1, warmup_rounds=1)``: PIL
  decoding of 20 JPEGs (400x300, quality 90) that each module makes from a fixed seed
  (smooth waves plus noise) once per session, in pytest's temporary folder. A case's
  ``extra`` is the fraction of the images decoded a second time.
* :func:`run_gate` saves a baseline at one commit and gates another against it, as a
  user of ``pytest --benchmark-compare --perf-gate`` would, and returns what the gate
  said (:func:`parse_gate_output`).
* :func:`provenance` is the date, machine and perfsuite commit a measurement names.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

#: the module body both bench files share: the images, and the work a call does
COMMON = '''
import io

import numpy as np
import pytest
from PIL import Image

IMAGES = 20
WIDTH, HEIGHT = 400, 300
EXTRA = {extra}  # the fraction of the images decoded a second time{comment}


def _picture(rng):
    """A photo-like picture: smooth waves per channel, plus sensor-like noise."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    picture = np.empty((HEIGHT, WIDTH, 3), np.float32)
    for channel in range(3):
        fx, fy = rng.uniform(0.004, 0.03, size=2)
        phase = rng.uniform(0.0, 2 * np.pi)
        picture[..., channel] = 128 + 90 * np.sin(fx * x + phase) * np.cos(fy * y)
    picture += rng.normal(0.0, 10.0, size=picture.shape)
    return np.clip(picture, 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def jpegs(tmp_path_factory):
    """IMAGES JPEGs from a fixed seed, written once per session, read back as bytes."""
    folder = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(20240601)
    for i in range(IMAGES):
        Image.fromarray(_picture(rng)).save(folder / f"{{i:02d}}.jpg", quality=90)
    return [path.read_bytes() for path in sorted(folder.glob("*.jpg"))]


def _decode(data):
    with Image.open(io.BytesIO(data)) as image:
        image.load()


def decode_all(files):
    """Decode every image, then the first EXTRA of them again."""
    for data in files:
        _decode(data)
    for data in files[: round(EXTRA * IMAGES)]:
        _decode(data)
'''

DECODE = '''"""PIL decoding of 20 JPEGs, timed by pytest-benchmark's ``benchmark`` fixture."""
{common}

def test_decode(benchmark, jpegs):
    benchmark(decode_all, jpegs)
'''

PEDANTIC = '''"""PIL decoding of 20 JPEGs, timed by ``benchmark.pedantic``."""
{common}
ROUNDS = 20


def test_decode_pedantic(benchmark, jpegs):
    benchmark.pedantic(
        decode_all, args=(jpegs,), rounds=ROUNDS, iterations=1, warmup_rounds=1
    )
'''

#: the files of the benchmark suite, relative to the repository root
BENCHMARK_FILES = ("test_decode.py", "tests/test_decode_pedantic.py")

#: a gated row's confirmation, by its verdict word (``SLOWER (confirmed)``) or the end of
#: it after the screen's word (``slower? cleared``, ``inconclusive, cleared``:
#: ``perfsuite.verdict.table``)
ROW_OUTCOMES = {
    "SLOWER (confirmed)": "confirmed",
    " cost ROSE (confirmed)": "confirmed",
    "SLOWER? unconfirmed": "unconfirmed",
    " cleared": "cleared",
    " the machine's": "machine",
    " not shown": "not shown",
}
GATE = "perfsuite gate: "
GATE_STATUSES = ("passed", "FAILED", "UNCONFIRMED", "REFUSED")
CONFIRMATIONS = re.compile(
    r"perfsuite gate: confirmations took (\d+) s \((\d+) suspect\(s\): (.*)\)"
)


def benchmark_sources(extra: float, comment: str = "") -> dict[str, str]:
    """The benchmark suite's files (path relative to the root -> text) for one case."""
    common = COMMON.format(extra=extra, comment=comment)
    return {
        BENCHMARK_FILES[0]: DECODE.format(common=common),
        BENCHMARK_FILES[1]: PEDANTIC.format(common=common),
    }


def write_benchmark_case(root: Path, extra: float, comment: str = "") -> None:
    """Write the benchmark suite's files for one case into the repository at ``root``."""
    for name, text in benchmark_sources(extra, comment).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)


def run_stoppable(
    command: Sequence[str], root: Path, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """(exit status, output and errors as they came) of ``command`` in ``root``, run in a
    session of its own. Stopped (Ctrl-C, SIGTERM), this sends it one SIGINT, the stop
    pytest and ``perfsuite ab`` handle by stopping their own children, then kills it
    after a grace (:func:`perfsuite.suspects.wait_or_stop`): nothing outlives the tool."""
    from perfsuite.suspects import wait_or_stop

    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            list(command),
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        code = wait_or_stop(child)
        out.seek(0)
        return code, out.read().decode(errors="replace")


def exit_stoppable(main: Callable[[], int]) -> NoReturn:
    """Exit with ``main()``'s status; stopped (Ctrl-C, SIGTERM: the run in progress stopped
    with its children, :func:`run_stoppable`), with one line saying so."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("stopped: the runs finished so far are in --out")


def run_pytest(
    root: Path, args: Sequence[str], env: dict[str, str] | None = None
) -> tuple[int, float, list[str]]:
    """(exit status, wall seconds, output lines) of ``python -m pytest ARGS`` in ``root``
    (:func:`run_stoppable`)."""
    start = time.monotonic()
    code, output = run_stoppable([sys.executable, "-m", "pytest", *args], root, env)
    return code, time.monotonic() - start, output.splitlines()


def with_ab_options(args: Sequence[str], options: Sequence[str]) -> list[str]:
    """``args`` with ``options`` added to the value of their ``--perf-ab-args`` (one is
    added when none is given); the gate passes that value to its A/B."""
    if not options:
        return list(args)
    out = list(args)
    for i, arg in enumerate(out):
        if arg.startswith("--perf-ab-args="):
            out[i] = f"{arg} {shlex.join(options)}"
            return out
        if arg == "--perf-ab-args" and i + 1 < len(out):
            out[i + 1] = f"{out[i + 1]} {shlex.join(options)}"
            return out
    return [*out, f"--perf-ab-args={shlex.join(options)}"]


def run_gate(
    root: Path, base: str, head: str, pytest_args: Sequence[str], ab_options: Sequence[str]
) -> dict[str, Any]:
    """One gate run: at ``base``, ``pytest ARGS --benchmark-autosave --benchmark-save-data``
    saves a baseline into a fresh storage; at ``head``, ``pytest ARGS --benchmark-compare
    --perf-gate`` gates against it (``ab_options`` go to its A/B). Returns the gated run's
    exit status (``code``) and wall seconds, the baseline run's, and what the gate said
    (:func:`parse_gate_output`); the checkout is back on its branch afterwards."""
    storage = Path(tempfile.mkdtemp(prefix="user-suite-storage-"))
    branch = subprocess.run(
        ["git", "rev-parse", "--abbrev-ref", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    where = f"--benchmark-storage={storage}"
    try:
        _git(root, "checkout", "-q", base)
        saved = run_pytest(
            root, [*pytest_args, "--benchmark-autosave", "--benchmark-save-data", where]
        )
        run: dict[str, Any] = {"baseline_code": saved[0], "baseline_seconds": saved[1]}
        if saved[0] != 0:
            return {**run, "code": None, "seconds": None, "tail": saved[2][-20:]}
        _git(root, "checkout", "-q", head)
        gated = with_ab_options(
            [*pytest_args, "--benchmark-compare", "--perf-gate", where], ab_options
        )
        code, seconds, lines = run_pytest(root, gated)
    finally:
        _git(root, "checkout", "-q", branch)
        shutil.rmtree(storage, ignore_errors=True)
    return {
        **run,
        "code": code,
        "seconds": seconds,
        **parse_gate_output(lines),
        "tail": lines[-20:],
    }


def _row_word(cell: str) -> str:
    """A verdict cell without its note marks and threshold: ``SLOWER (confirmed)``."""
    word = re.sub(r" \(>[^)]*\)$", "", cell.strip())
    return re.sub(r"( \[\d+\])+$", "", word)


def parse_gate_output(lines: Sequence[str]) -> dict[str, Any]:
    """What a ``--perf-gate`` run printed: ``gate`` (its last ``perfsuite gate: <status>:``
    line, else None), ``status`` (passed, FAILED, UNCONFIRMED, REFUSED or None),
    ``confirmations`` (seconds, suspects and the tally of the confirmations line, else
    None), ``rows`` (bench label -> verdict words of its table row) and ``outcomes``
    (each suspect's confirmation, from its row: confirmed, cleared, machine, not shown
    or unconfirmed -> count)."""
    gate: str | None = None
    status: str | None = None
    confirmations: dict[str, Any] | None = None
    rows: dict[str, str] = {}
    in_table = False
    for line in lines:
        text = line.strip()
        for word in GATE_STATUSES:
            if text.startswith(f"{GATE}{word}:"):
                gate, status = text, word
        found = CONFIRMATIONS.match(text)
        if found:
            tally = {}
            for part in found.group(3).split(", "):
                count, _, outcome = part.partition(" ")
                if count.isdigit():
                    tally[outcome] = int(count)
            confirmations = {
                "seconds": int(found.group(1)),
                "suspects": int(found.group(2)),
                "tally": tally,
            }
        cells = re.split(r"\s{2,}", text)
        if cells[:2] == ["bench", "verdict"]:
            in_table = True
        elif in_table and text.startswith("-"):
            continue
        elif in_table and len(cells) >= 3 and not text.startswith("["):
            rows[cells[0]] = _row_word(cells[1])
        else:
            in_table = False
    outcomes: dict[str, int] = {}
    for word in rows.values():
        said = word.split(", no regression above")[0]  # the screen's bound, where it has one
        ends = [outcome for end, outcome in ROW_OUTCOMES.items() if said.endswith(end)]
        for outcome in ends[:1]:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {
        "gate": gate,
        "status": status,
        "confirmations": confirmations,
        "rows": rows,
        "outcomes": outcomes,
    }


def regressed(rows: dict[str, str]) -> list[str]:
    """The labels whose row calls them a regression (``SLOWER`` or ``cost ROSE``,
    confirmed or not)."""
    return [
        label for label, word in rows.items() if word.startswith("SLOWER") or "cost ROSE" in word
    ]


def provenance(repo: Path) -> dict[str, Any]:
    """When, where and with which perfsuite a measurement ran: the date (UTC), the host,
    the CPUs this process may use (what ``nproc`` prints), Python, and the commit of
    ``repo`` with whether its tracked files had uncommitted changes."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
        return out.stdout.strip()

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "nproc": cpus,
        "python": platform.python_version(),
        "perfsuite_commit": git("rev-parse", "HEAD") or None,
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def provenance_line(about: dict[str, Any]) -> str:
    """One line: ``2026-11-25T10:00:00+00:00, host x, nproc 2, perfsuite 00ab321108bb``."""
    commit = (about.get("perfsuite_commit") or "?")[:12]
    dirty = " (+ uncommitted changes)" if about.get("uncommitted_changes") else ""
    return (
        f"{about['date']}, host {about['host']}, nproc {about['nproc']}, "
        f"Python {about['python']}, perfsuite {commit}{dirty}"
    )


def spread(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    """``min / median / max`` of ``values`` (``-`` when there are none)."""
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return " / ".join(fmt.format(v) for v in (low, mid, high))


def gate_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per case of gate runs: the exit statuses, how many runs failed (exit 1), the gated
    runs' wall seconds (min / median / max), each bench's verdict words and the
    suspects' confirmations, counted over the runs."""
    lines = []
    for case, runs in results.items():
        codes = Counter(str(run["code"]) for run in runs)
        failed = sum(1 for run in runs if run["code"] == 1)
        seconds = [run["seconds"] for run in runs if run["seconds"] is not None]
        lines.append(
            f"{case}: {len(runs)} runs, exit statuses {dict(sorted(codes.items()))}, "
            f"{failed} failed; gated run s (min / median / max) {spread(seconds)}"
        )
        words: dict[str, Counter[str]] = {}
        for run in runs:
            for label, word in run.get("rows", {}).items():
                words.setdefault(label, Counter())[word] += 1
        for label, tally in sorted(words.items()):
            lines.append(f"  {label}: " + ", ".join(f"{n} {w}" for w, n in tally.most_common()))
        outcomes = Counter[str]()
        for run in runs:
            outcomes.update(run.get("outcomes", {}))
        if outcomes:
            lines.append(f"  suspects: {dict(outcomes)}")
    return lines
