"""A temporary git repository with tiny pure-Python benches, and a way to run perfsuite ab in it."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from perfsuite.ab.outcome import BenchRun
from perfsuite.verdict.paired import PAIRED_ALPHA, judge

PERFSUITE_ROOT = Path(__file__).resolve().parent.parent


def forget_bytecode(root: Path) -> None:
    """Drop the bytecode Python cached under ``root``. Python reuses a module's cache
    while its source keeps the same size and modification second, so a source rewritten
    within the second of the last run (``FACTOR = 1.0`` to ``2.0``) would run as before."""
    for cache in root.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


#: work.py: the module the benches import; LOOPS sets how much work one call does
WORK = '''
"""The code under test: a busy loop whose length each revision sets."""
import json
import os
import time

LOOPS = {loops}
TAG = "{tag}"


def run() -> int:
    total = 0
    for i in range(LOOPS):
        total += i * i
    return total


def log(event: str) -> None:
    path = os.environ.get("AB_TEST_LOG")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps([TAG, os.getpid(), event, time.monotonic()]) + "\\n")
'''

BENCH = '''
"""Tiny benches for perfsuite ab's tests."""
import pytest

import work


@pytest.mark.perf(warmup_rounds=1)
@pytest.mark.parametrize("case", ["one", "two"])
def test_work(perf, case):
    calls = []

    def call():
        warm = not calls
        calls.append(1)
        work.log("warm-start" if warm else "start")
        work.run()
        work.log("warm-end" if warm else "end")

    perf.measure(call, items=10)
    perf.note(impl=work.TAG)
    perf.count("calls_per_round", {counter})
'''

#: conftest.py for a repository whose A/A must read `same` however loaded this machine is:
#: in a side, each ``time.perf_counter`` reading advances 10 ms, give or take a fixed
#: 0-0.4% pattern, so every round of every bench lasts one step
STEADY_CLOCK = """
import itertools
import time

_now = 0.0
_wobble = itertools.cycle([1.0, 1.001, 1.002, 1.003, 1.004])


def _clock():
    global _now
    _now += 0.01 * next(_wobble)
    return _now


time.perf_counter = _clock
"""


def uv_cache() -> Path:
    """The folder uv keeps its cache in, as it finds it in this environment."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("UV_CACHE_DIR") or Path(base) / "uv")


@dataclass
class Repo:
    """A git repository in a temporary folder, with helpers to commit and run perfsuite ab."""

    root: Path
    cache: Path
    tmpdir: Path | None = None  # TMPDIR of the controller (where its private folder goes)

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", *args], cwd=self.root, check=True, capture_output=True, text=True
        )
        return out.stdout.strip()

    def write(self, name: str, text: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        forget_bytecode(self.root)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def set_work(self, loops: int, tag: str, counter: int = 1, extra: str = "") -> None:
        self.write("work.py", WORK.format(loops=loops, tag=tag))
        self.write("benches/bench_work.py", BENCH.format(counter=counter) + extra)

    def env(self, log: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        # uv's own cache stays where it is: environments built from pins link its files
        env.setdefault("UV_CACHE_DIR", str(uv_cache()))
        env["XDG_CACHE_HOME"] = str(self.cache)
        env["PYTHONPATH"] = str(PERFSUITE_ROOT)
        env.pop("PYTEST_ADDOPTS", None)
        if self.tmpdir is not None:
            env["TMPDIR"] = str(self.tmpdir)
        if log is not None:
            env["AB_TEST_LOG"] = str(log)
        return env

    def command(self, *args: str) -> list[str]:
        # This file as the script: the repository's folder is not put on sys.path first.
        return [sys.executable, __file__, "ab", *args]

    def ab(
        self, *args: str, log: Path | None = None, timeout: float = 120, cwd: Path | None = None
    ) -> Result:
        proc = subprocess.run(
            self.command(*args),
            cwd=cwd or self.root,
            env=self.env(log),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def popen(self, *args: str, log: Path | None = None) -> subprocess.Popen[str]:
        """perfsuite ab started in the background, with Ctrl-C's SIGINT as a terminal's."""
        return subprocess.Popen(
            self.command(*args),
            cwd=self.root,
            env=self.env(log),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )

    def worktrees(self) -> list[str]:
        """git's registered worktrees other than the main one."""
        lines = self.git("worktree", "list", "--porcelain").splitlines()
        paths = [line.split(" ", 1)[1] for line in lines if line.startswith("worktree ")]
        return [p for p in paths if Path(p).resolve() != self.root.resolve()]


@dataclass
class Result:
    code: int
    out: str
    err: str


def table_rows(out: str) -> dict[str, tuple[str, int]]:
    """bench -> (verdict cell, pairs) from perfsuite ab's table: the benches measured on
    both sides."""
    found = {}
    for line in out.splitlines():
        match = re.match(r"(\S+::\S+) +(.+?) +[+-]\d+\.\d%.*?/s [+-]\d+\.\d% +(\d+)\b", line)
        if match:
            found[match.group(1)] = (match.group(2), int(match.group(3)))
    return found


def passed_unless_too_noisy(result: Result) -> list[str]:
    """Asserts perfsuite ab's rule for equal work, and returns the benches too noisy:
    never `slower`; exit 0 with `no regression:` unless a bench measured on both sides
    is too noisy to have caught twice its threshold, and then exit 3, `UNDECIDED`,
    naming each such bench. Which of the two a loaded machine gives is its noise's."""
    table = table_rows(result.out)
    assert table, result.out + result.err
    assert not any(verdict.startswith("SLOWER") for verdict, _ in table.values()), result.out
    noisy = [nodeid for nodeid, (verdict, _) in table.items() if verdict.startswith("TOO NOISY")]
    assert result.code == (3 if noisy else 0), result.out + result.err
    if noisy:
        said = result.out.rpartition("perfsuite ab: UNDECIDED: ")[2].splitlines()[0]
        assert said.startswith(f"{len(noisy)} bench(es) too noisy"), result.out
        assert all(nodeid in said for nodeid in noisy), result.out
    else:
        assert "perfsuite ab: no regression: " in result.out
    return noisy


#: a generous time budget, so the pair counts (not a loaded machine's clock) end each bench
SMALL = [
    *("--min-pairs", "10", "--max-pairs", "12"),
    *("--block-rounds", "3", "--seed", "7", "--max-seconds", "300"),
]
#: pytest arguments for the sides: the tiny benches at smoke scale, quietly
SIDE_ARGS = ["--", "benches", "--perf-scale=smoke", "-q", "-p", "no:randomly"]


def make_repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    repo = Repo(root, tmp_path / "cache")
    repo.git("init", "-q", "-b", "main")
    repo.git("config", "user.name", "perfsuite tests")
    repo.git("config", "user.email", "tests@perfsuite.invalid")
    repo.git("config", "commit.gpgsign", "false")
    repo.write(".gitignore", ".benchmarks/\n__pycache__/\n")
    return repo


def read_log(path: Path) -> list[tuple[str, int, str, float]]:
    rows = []
    for line in path.read_text().splitlines():
        tag, pid, event, t = json.loads(line)
        rows.append((str(tag), int(pid), str(event), float(t)))
    return rows


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line or environment mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if marker.encode() in blob and state != "Z":
            found.append(int(entry.name))
    return found


def default_sigint() -> None:
    """In a child before it runs: SIGINT's default action, whatever this process inherited.

    A shell without job control starts a background command with SIGINT ignored, and
    Python then leaves it ignored (no KeyboardInterrupt): a test that plays Ctrl-C
    would otherwise pass or fail by how its test run was started.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)


if __name__ == "__main__":
    from perfsuite.cli import main

    sys.exit(main())


def bench_run(nodeid: str, ratios: list[float], threshold: float = 0.05) -> BenchRun:
    """A bench's alternation whose pairs of blocks give exactly ``ratios`` (log B/A),
    judged as the first stage judges it."""
    run = BenchRun(nodeid, threshold)
    run.a_blocks = [[1.0] for _ in ratios]
    run.b_blocks = [[math.exp(r)] for r in ratios]
    run.order = ["A", "B"] * len(ratios)
    run.result = judge(run.ratios, threshold, PAIRED_ALPHA)
    return run
