"""The machine key: which runs on the results branch are one machine's history.

The key is a readable name (the machine class where ``$PERFSUITE_MACHINE_CLASS`` names
one, then the GPU model and count, else the CPU model and count)
followed by a hash of the facts that make two runs comparable
(:func:`perfsuite.verdict.machine.stack_view`: CPU, GPU, driver, CUDA, cuDNN, the
measured stack's versions and the Python minor version). Identical runners share one
key, so they share one history; a driver or framework upgrade starts a new one. The
runner's name, and pins of tools that are not measured (linters, docs), are never part
of it. Facts a plugin adds through ``pytest_perfsuite_update_machine_facts`` are left
out (they are not known outside pytest); the verdict still compares them.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from typing import Any

from perfsuite.verdict.runs import Run


def machine_key(facts: dict[str, Any], python: str | None) -> str:
    """The key of a machine with perfsuite's machine ``facts`` running Python ``python``
    (its minor version, ``3.11``).

    >>> machine_key({"cpu_model": "AMD EPYC 7B13", "cpu_count": 2}, "3.11")[:21]
    'cpu-AMD-EPYC-7B13-x2-'
    """
    from perfsuite.verdict.machine import stack_view

    view = {k: v for k, v in stack_view(facts, python).items() if not k.startswith("extra.")}
    digest = hashlib.sha256(json.dumps(view, sort_keys=True, default=str).encode()).hexdigest()
    gpu = facts.get("gpu_name")
    if gpu:
        count = facts.get("gpu_count") or 1
        label = f"{gpu}-x{count}"
    else:
        label = f"cpu-{facts.get('cpu_model') or 'unknown'}-x{facts.get('cpu_count') or 0}"
    if facts.get("machine_class"):
        label = f"{facts['machine_class']}-{label}"
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", label).strip("-.")[:48]
    return f"{slug}-{digest[:10]}"


def run_key(run: Run) -> str | None:
    """The key of the machine a saved run was made on; None for a run saved without
    perfsuite's machine facts (it cannot be placed in a machine's history)."""
    if not run.facts:
        return None
    from perfsuite.verdict.machine import python_minor

    return machine_key(run.facts, python_minor(run.machine_info))


def this_machine_key() -> str:
    """The key of this machine and the stack installed beside perfsuite."""
    from perfsuite.bench.machine import machine_facts

    return machine_key(machine_facts(), ".".join(platform.python_version_tuple()[:2]))
