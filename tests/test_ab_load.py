"""How busy the machine was during an A/B: /proc/stat parsed, this process tree's CPU
time counted, the shares of the CPUs worked out on constructed counters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.ab.load import (
    BUSY,
    MACHINE_JSON,
    CpuTimes,
    MachineLoad,
    Snapshot,
    measured,
    own_cpu_seconds,
    parse_stat,
    snapshot,
)

STAT = """cpu  1000 10 200 5000 30 5 15 40 0 0
cpu0 500 5 100 2500 15 2 8 20 0 0
cpu1 500 5 100 2500 15 3 7 20 0 0
intr 12345 0 0
ctxt 999
"""


def test_stat_first_line_gives_busy_and_steal_seconds_over_every_cpu() -> None:
    times = parse_stat(STAT, 100)
    # user + nice + system + irq + softirq; idle and iowait are not work
    assert times == CpuTimes(cpus=2, busy=(1000 + 10 + 200 + 5 + 15) / 100, steal=0.4)


def test_an_old_kernel_without_a_steal_field_reads_as_no_steal() -> None:
    assert parse_stat("cpu  100 0 50 900\ncpu0 100 0 50 900\n", 100) == CpuTimes(1, 1.5, 0.0)


def test_shares_of_the_cpus_between_two_snapshots() -> None:
    start = Snapshot(100.0, CpuTimes(4, 1000.0, 10.0), 50.0)
    end = Snapshot(120.0, CpuTimes(4, 1040.0, 14.0), 78.0)  # 80 CPU-seconds in 20 s
    load = MachineLoad.between(start, end)
    assert load == MachineLoad(cpus=4, seconds=20.0, own=0.35, other=0.15, steal=0.05)
    assert load.busy  # 0.15 + 0.05 >= BUSY
    assert "busy with other work" in load.line()
    assert json.loads(load.to_json()) == {
        "cpus": 4.0,
        "seconds": 20.0,
        "own": 0.35,
        "other": 0.15,
        "steal": 0.05,
    }


def test_a_quiet_machine_is_not_called_busy_and_other_is_never_negative() -> None:
    start = Snapshot(0.0, CpuTimes(2, 0.0, 0.0), 0.0)
    # the tree's own count ran ahead of the machine's (a counter's granularity)
    end = Snapshot(10.0, CpuTimes(2, 9.0, 0.0), 9.5)
    load = MachineLoad.between(start, end)
    assert load.other == 0.0
    assert load.own == 0.475
    assert not load.busy
    assert load.line() == (
        "machine during the A/B (10 s, 2 CPUs): this A/B 48%, other processes 0%, steal 0%"
    )
    just = MachineLoad(2, 10.0, 0.5, BUSY - 0.02, 0.02)
    assert just.busy


def test_no_time_no_shares() -> None:
    same = Snapshot(5.0, CpuTimes(2, 1.0, 0.0), 1.0)
    assert MachineLoad.between(same, same) == MachineLoad(2, 0.0, 0.0, 0.0, 0.0)


def test_without_proc_stat_there_is_no_load(tmp_path: Path) -> None:
    assert snapshot(tmp_path / "missing") is None
    assert measured(None) is None
    start = Snapshot(0.0, CpuTimes(2, 0.0, 0.0), 0.0)
    assert measured(start, lambda: None) is None


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux's /proc/stat")
def test_cpu_time_of_a_reaped_child_counts_as_this_trees() -> None:
    before = own_cpu_seconds()
    start = snapshot()
    assert start is not None
    assert start.machine.cpus >= 1
    spin = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    subprocess.run([sys.executable, "-c", spin], check=True)
    # the child's 0.3 s of CPU time, whatever else the machine did meanwhile
    assert own_cpu_seconds() - before >= 0.3
    load = measured(start)
    assert load is not None
    assert load.own > 0


def test_machine_json_round_trips_through_a_report_folder(tmp_path: Path) -> None:
    load = MachineLoad(cpus=2, seconds=32.0, own=0.92, other=0.0, steal=0.0)
    (tmp_path / MACHINE_JSON).write_text(load.to_json())
    assert MachineLoad.from_report(tmp_path) == load
    assert MachineLoad.from_report(tmp_path / "none") is None
    # the first version wrote the CPU count as a float
    (tmp_path / MACHINE_JSON).write_text(
        '{"cpus": 2.0, "seconds": 32.0, "own": 0.92, "other": 0.0, "steal": 0.0}'
    )
    read = MachineLoad.from_report(tmp_path)
    assert read == load
    assert read is not None
    assert "(32 s, 2 CPUs)" in read.line()
