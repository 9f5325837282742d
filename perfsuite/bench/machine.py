"""Facts about the machine and stack saved with every run, so unlike runs are never compared."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from perfsuite.bench.frameworks import framework_versions
from perfsuite.bench.gpu import GPUInfo, detect_gpu


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus() -> int:
    """CPUs this process may run on (affinity), which is what parallel pipelines get."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


#: names a class of machines whose runs are kept apart from others' of the same
#: hardware and stack (runner pools a model name does not tell apart)
MACHINE_CLASS_ENV = "PERFSUITE_MACHINE_CLASS"


def machine_facts(gpu: GPUInfo | None = None) -> dict[str, Any]:
    """CPU, GPU, driver, CUDA/cuDNN and framework versions, as saved in ``machine_info``,
    and the machine class ``$PERFSUITE_MACHINE_CLASS`` names (None where unset)."""
    gpu = gpu if gpu is not None else detect_gpu()
    return {
        "machine_class": os.environ.get(MACHINE_CLASS_ENV) or None,
        "cpu_model": cpu_model(),
        "cpu_count": usable_cpus(),
        "gpu_name": gpu.name,
        "gpu_count": gpu.count,
        "gpu_memory_bytes": gpu.memory_bytes,
        "gpu_driver": gpu.driver,
        "cuda": gpu.cuda,
        "cudnn": gpu.cudnn,
        "versions": framework_versions(),
    }
