"""One bench, two devices: the ``torch_device`` fixture and the parametrization that feeds it.

A torch bench written once runs on the CPU and on the session's GPU::

    @ON_CPU_AND_GPU
    @pytest.mark.perf(group="warmup_torch_{torch_device}", baseline="cold")
    def test_warmup_torch(perf: Perf, torch_device: torch.device) -> None:
        model = fresh_model().to(torch_device)
        perf.measure(lambda: model(x), items=1, device=torch_device)

``--perf-device`` picks the variants: ``cpu`` runs the ``cpu`` variant only (the ``gpu``
one skips, as every ``gpu``-marked bench does), ``gpu`` runs the ``gpu`` variant only
(the ``cpu`` one skips, so a GPU run measures the GPU), ``auto`` runs both where a GPU
is found and the ``cpu`` variant alone elsewhere. The group names the device, so each
device has its own baseline. benches/conftest.py defines the fixture with
:func:`torch_device_for`.
"""

from __future__ import annotations

from typing import Any

import pytest

from perfsuite.config import PerfConfig
from perfsuite.options import Device

#: the values of the ``torch_device`` parameter, and the ids they give a bench
DEVICES = ("cpu", "gpu")

#: ``@ON_CPU_AND_GPU``: the bench once per device; the ``gpu`` variant is marked ``gpu``
ON_CPU_AND_GPU = pytest.mark.parametrize(
    "torch_device",
    [pytest.param("cpu", id="cpu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)],
    indirect=True,
)


def cpu_variant_skip(device: Device) -> str | None:
    """Why a bench's ``cpu`` variant does not run under ``--perf-device``, or None."""
    if device is Device.GPU:
        return "--perf-device gpu: this bench runs on the GPU only (its gpu variant)"
    return None


def torch_device_for(request: pytest.FixtureRequest, cfg: PerfConfig) -> Any:
    """The ``torch.device`` of the ``torch_device`` fixture (benches/conftest.py): the CPU,
    or the session's GPU, warmed. Benches get it through :data:`ON_CPU_AND_GPU`;
    unparametrized, it is the CPU."""
    import torch

    kind = getattr(request, "param", None)
    if kind is None:
        return torch.device("cpu")
    if kind not in DEVICES:
        raise pytest.UsageError(f"torch_device must be one of {', '.join(DEVICES)}, got {kind!r}")
    if kind == "gpu":
        return torch.device(request.getfixturevalue("gpu").torch_device)
    reason = cpu_variant_skip(cfg.device)
    if reason is not None:
        pytest.skip(reason)
    return torch.device("cpu")
