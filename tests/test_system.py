"""``perfsuite system``: what it reads of the CPUs, the load and the GPU, what it calls
noisy, and that it runs anywhere (no GPU, no framework) and exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.ab.load import MachineLoad
from perfsuite.bench.clocks import ClockReading
from perfsuite.cli import main
from perfsuite.exitcodes import ExitCode
from perfsuite.system import (
    CpuFrequency,
    GpuState,
    Steadiness,
    SystemFacts,
    cpu_frequency,
    lines,
    noisy,
    time_rounds,
)

QUIET = SystemFacts(
    cpus=8,
    machine_cpus=8,
    model="a CPU",
    frequency=CpuFrequency("acpi-cpufreq", {"performance": [0, 1]}, 800, 3500, [3500], False),
    isolated="",
    load_average=(0.1, 0.2, 0.3),
    load=MachineLoad(8, 2.0, 0.125, 0.01, 0.0),
    steadiness=Steadiness(50, 0.04, 0.01, 0.005),
    gpu=None,
    no_gpu="no GPU device found",
)


def _sysfs(root: Path, governors: list[str], no_turbo: str | None) -> Path:
    for cpu, governor in enumerate(governors):
        folder = root / f"cpu{cpu}" / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(governor + "\n")
        (folder / "scaling_driver").write_text("intel_pstate\n")
        (folder / "cpuinfo_min_freq").write_text("800000\n")
        (folder / "cpuinfo_max_freq").write_text("4200000\n")
        (folder / "scaling_cur_freq").write_text(f"{1200000 + 100000 * cpu}\n")
    if no_turbo is not None:
        (root / "intel_pstate").mkdir()
        (root / "intel_pstate" / "no_turbo").write_text(no_turbo + "\n")
    return root


def test_frequency_scaling_is_read_from_sysfs(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, ["powersave", "powersave", "performance"], no_turbo="0")
    frequency = cpu_frequency(root)
    assert frequency == CpuFrequency(
        "intel_pstate",
        {"powersave": [0, 1], "performance": [2]},
        800,
        4200,
        [1200, 1300, 1400],
        True,
    )
    assert cpu_frequency(tmp_path / "none") is None  # no cpufreq: a VM's CPUs


def test_a_quiet_machine_has_nothing_noisy() -> None:
    assert noisy(QUIET) == []
    said = lines(QUIET)
    assert said[-1] == "Noisy: nothing found"
    assert "CPU frequency scaling: acpi-cpufreq, governor performance on CPU 0-1" in said[2]
    assert said[-2] == "GPU: none: no GPU device found"


def test_what_makes_timings_noisy_is_said_with_what_steadies_it(tmp_path: Path) -> None:
    frequency = cpu_frequency(_sysfs(tmp_path, ["powersave", "performance"], no_turbo="0"))
    busy = SystemFacts(
        **{
            **QUIET.__dict__,
            "frequency": frequency,
            "load_average": (9.5, 4.0, 2.0),
            "load": MachineLoad(8, 2.0, 0.125, 0.2, 0.05),
            "steadiness": Steadiness(50, 0.04, 0.12, 0.08),
            "gpu": GpuState("a GPU", "550.54", ClockReading(1410, 2619, 83, 300.0, 0x4 | 0x40)),
        }
    )
    found = noisy(busy)
    assert [line.split(":")[0] for line in found] == [
        "CPU governor powersave on CPU 0",
        "turbo on",
        "other work took 25% of the CPUs over 2.0 s (other processes 20%, steal 5%)",
        "the hypervisor gave 5% of these CPUs to other machines (steal)",
        "load average 9.50 over 8 CPUs",
        "the fixed work varied by 12.0% (cv) from round to round, over 5%",
        "GPU clocks held down now (sw_power_cap, hw_thermal_slowdown)",
    ]
    assert "sudo cpupower frequency-set -g performance" in found[0]
    assert lines(busy)[-len(found) - 1] == "Noisy: 7 finding(s)"
    unreadable = SystemFacts(**{**QUIET.__dict__, "gpu": GpuState("a GPU", None, None, "no NVML")})
    assert noisy(unreadable) == ["a GPU is here but its clocks cannot be watched: no NVML"]


def test_the_fixed_work_runs_for_the_sample_and_at_least_three_rounds() -> None:
    ticks = iter(range(100))
    times = time_rounds(5.0, lambda: None, clock=lambda: float(next(ticks)))
    assert len(times) == 3  # clock 0: end at 5; rounds at 1-2, 3-4, 5-6
    assert times == [1.0, 1.0, 1.0]


def test_system_runs_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["system", "--seconds", "0.2"]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("perfsuite system: ")
    assert out[1].startswith("CPUs: ")
    assert any(line.startswith("Fixed work: ") for line in out)
    assert any(line.startswith("GPU: ") for line in out)
    assert any(line.startswith("Noisy: ") for line in out)


def test_system_imports_no_framework() -> None:
    code = (
        "import sys\n"
        "from perfsuite.cli import main\n"
        "assert main(['system', '--seconds', '0.1']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'tensorflow')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"


def test_bad_seconds_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["system", "--seconds", "0"])
    assert exit_info.value.code == 2
    assert "invalid seconds '0'" in capsys.readouterr().err
