"""What makes two runs comparable: the same machine and the same measured stack.

``machine_mismatch`` compares the same machine class (``$PERFSUITE_MACHINE_CLASS``,
for runner pools that the hardware does not tell apart), the same CPU model and usable
CPU count, the same GPU model and count, GPU driver, CUDA and cuDNN, the same Python
minor version, and the same versions of the measured stack (TensorFlow, PyTorch, DALI,
NumPy, Pillow, pytest-benchmark). perfsuite's own version is left out on purpose: a perfsuite change
is what a comparison is often meant to judge. GPU memory size is left out too: the GPU
model already fixes it. A plugin can add facts through
``pytest_perfsuite_update_machine_facts``; those under the ``extra`` key of the facts
are compared as well.

A run saved without perfsuite's facts (pytest-benchmark alone, or ``-p no:perfsuite``)
is compared on what pytest-benchmark records itself: its CPU's model and count
(py-cpuinfo's ``brand_raw`` and ``count``) and the Python minor version. So the runs a
project saved before it installed perfsuite stay baselines on the same machine; what
neither can show (GPU, stack versions) is not held against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfsuite.verdict.runs import Run

#: perfsuite machine facts that define "the same machine and stack"
MACHINE_KEYS: tuple[str, ...] = (
    "machine_class",
    "cpu_model",
    "cpu_count",
    "gpu_name",
    "gpu_count",
    "gpu_driver",
    "cuda",
    "cudnn",
)
#: versions (``facts['versions']``) that define "the same stack"; perfsuite's own is left out
VERSION_KEYS: tuple[str, ...] = (
    "tensorflow",
    "torch",
    "nvidia.dali",
    "numpy",
    "pillow",
    "pytest-benchmark",
)


@dataclass(frozen=True)
class Difference:
    """One machine or stack fact that differs between baseline and current."""

    key: str
    baseline: Any
    current: Any

    def __str__(self) -> str:
        def show(value: Any) -> str:
            return "-" if value is None else str(value)

        return f"{self.key} {show(self.baseline)} -> {show(self.current)}"


def python_minor(machine_info: dict[str, Any]) -> str | None:
    version = machine_info.get("python_version")
    return ".".join(str(version).split(".")[:2]) if version else None


#: the facts a run saved without perfsuite's can show (see the module doc)
PLAIN_KEYS = ("cpu_model", "cpu_count", "python")


def _machine_view(run: Run, plain: bool = False) -> dict[str, Any]:
    """The facts of ``run`` to compare; ``plain``: only what pytest-benchmark records."""
    facts = run.facts
    if plain or not facts:  # pytest-benchmark's own record of the machine
        cpu = run.machine_info.get("cpu")
        cpu = cpu if isinstance(cpu, dict) else {}
        shown = (cpu.get("brand_raw"), cpu.get("count"), python_minor(run.machine_info))
        return dict(zip(PLAIN_KEYS, shown, strict=True))
    return stack_view(facts, python_minor(run.machine_info))


def stack_view(facts: dict[str, Any], python: str | None) -> dict[str, Any]:
    """The facts that define "the same machine and stack", from perfsuite's machine
    facts and the Python minor version (``3.11``)."""
    view: dict[str, Any] = {key: facts.get(key) for key in MACHINE_KEYS}
    versions = facts.get("versions")
    versions = versions if isinstance(versions, dict) else {}
    view.update({key: versions.get(key) for key in VERSION_KEYS})
    extra = facts.get("extra")
    if isinstance(extra, dict):
        view.update({f"extra.{k}": v for k, v in extra.items()})
    view["python"] = python
    return view


def machine_mismatch(baseline: Run, current: Run) -> list[Difference]:
    """Facts that differ; where a run was saved without perfsuite's facts, those
    pytest-benchmark recorded for both (``PLAIN_KEYS``), each read the same way."""
    plain = not baseline.facts or not current.facts
    base, cur = _machine_view(baseline, plain), _machine_view(current, plain)
    keys = list(dict.fromkeys([*base, *cur]))
    return [Difference(k, base.get(k), cur.get(k)) for k in keys if base.get(k) != cur.get(k)]
