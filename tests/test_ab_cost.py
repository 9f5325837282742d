"""perfsuite ab judges what a bench costs: CPU per call and peak memory, side by side.

Real A/B runs in a temporary git repository with no pytest configuration file, on a
bench at its root written with pytest-benchmark's ``benchmark`` fixture alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from perfsuite.exitcodes import ExitCode
from tests.ab_repo import Repo, make_repo

#: the code under test: each call holds HOLD_MB (every page touched) and loops LOOPS times
WORK = """
HOLD_MB = {hold}
LOOPS = {loops}


def run():
    block = bytearray(HOLD_MB * 1024 * 1024)
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    total = 0
    for i in range(LOOPS):
        total += i
    return total
"""

BENCH = """
import work


def test_hold(benchmark):
    benchmark.pedantic(work.run, rounds=12, warmup_rounds=1)
"""

BUDGET = ["--min-pairs", "10", "--block-rounds", "3", "--seed", "7"]
TIMEOUT_S = 600


def _repo(tmp_path: Path, base: tuple[int, int], candidate: tuple[int, int]) -> Repo:
    repo = make_repo(tmp_path)
    repo.write("test_hold.py", BENCH)
    repo.write("work.py", WORK.format(hold=base[0], loops=base[1]))
    repo.commit("base")
    repo.write("work.py", WORK.format(hold=candidate[0], loops=candidate[1]) + "# candidate\n")
    repo.commit("candidate")
    return repo


def _entry(report: Path) -> dict[str, object]:
    [entry] = json.loads((report / "pairs.json").read_text())
    assert isinstance(entry, dict)
    return entry


def test_more_memory_and_cpu_per_call_fail_the_ab(tmp_path: Path) -> None:
    repo = _repo(tmp_path, base=(10, 100_000), candidate=(110, 200_000))
    report = tmp_path / "report"
    result = repo.ab(
        "HEAD~1",
        "HEAD",
        *BUDGET,
        *("--max-pairs", "20", "--max-seconds", "30"),
        "--confirm",
        "0",
        "--report",
        str(report),
        "--",
        "test_hold.py",
        timeout=TIMEOUT_S,
    )
    assert result.code == ExitCode.REGRESSION, result.out + result.err
    [row] = [line for line in result.out.splitlines() if line.startswith("test_hold.py::")]
    assert "(cost rose)" in row
    assert "ROSE" in row  # peak memory, 10 MB against 110 MB held a call
    assert "cpu/call +" in row
    entry = _entry(report)
    memory = entry["memory"]
    assert isinstance(memory, dict)
    assert memory["rose"] is True
    assert 9 <= memory["a_mb"] <= 25  # 10 MB held, within the interpreter's own noise
    assert 109 <= memory["b_mb"] <= 130
    cpu = entry["cpu"]
    assert isinstance(cpu, dict)
    assert cpu["verdict"] == "slower"  # twice the loop and eleven times the pages
    a_cpu, b_cpu = entry["a_cpu"], entry["b_cpu"]
    assert isinstance(a_cpu, list)
    assert isinstance(b_cpu, list)
    assert len(a_cpu) == len(b_cpu) == cpu["pairs"]  # one CPU block per time block


def test_equal_memory_does_not_rise(tmp_path: Path) -> None:
    repo = _repo(tmp_path, base=(30, 100_000), candidate=(30, 100_000))
    report = tmp_path / "report"
    # no confirmation in fresh processes: the peak is read in the first pair, and equal
    # work need not be decided: 12 pairs at most. Without a confirmation the first
    # pair's time is judged alone, and beside other work (make test's other pytest) it
    # can lean a few per cent: the threshold of 50% keeps this test to the peak.
    args = [*BUDGET, "--max-pairs", "12", "--max-seconds", "12", "--confirm", "0"]
    args += ["--threshold", "0.5", "--report", str(report), "--", "test_hold.py"]
    result = repo.ab("HEAD~1", "HEAD", *args, timeout=TIMEOUT_S)
    # equal work: no regression; whether `same` is decided depends on the machine
    assert result.code in (ExitCode.OK, ExitCode.NOT_JUDGED), result.out + result.err
    assert "ROSE" not in result.out
    assert "(cost rose)" not in result.out
    memory = _entry(report)["memory"]
    assert isinstance(memory, dict)
    assert memory["rose"] is False
