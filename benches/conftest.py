"""What every bench shares: perfsuite's plugin, the ``torch_device`` fixture, the caches.

Without the plugin, the first ``pytest.mark.tf`` in a bench module fails
``--strict-markers`` with "'tf' not found in markers configuration option", which
never names perfsuite. ``pytest_configure`` runs before any bench module is imported,
so the missing plugin is reported first, as a usage error with the install hint.

``torch_device`` is the device of a bench parametrized with
:data:`perfsuite.bench.devices.ON_CPU_AND_GPU`. ``compile_caches`` gives a session
that may use a GPU its own compile caches (:mod:`perfsuite.bench.caches`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

PLUGIN_MODULE = "perfsuite.plugin"
HINT = (
    "the benches in benches/ need the perfsuite pytest plugin, which is not loaded: "
    "install it (pip install -e . in this checkout, or pip install 'perfsuite[all]') "
    "and drop -p no:perfsuite"
)


def perfsuite_loaded(config: pytest.Config) -> bool:
    """Whether perfsuite's plugin is registered (by its entry point or by ``-p``)."""
    return any(
        getattr(plugin, "__name__", None) == PLUGIN_MODULE
        for plugin in config.pluginmanager.get_plugins()
    )


def pytest_configure(config: pytest.Config) -> None:
    if not perfsuite_loaded(config):
        raise pytest.UsageError(HINT)


@pytest.fixture(scope="session", autouse=True)
def compile_caches(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """On a GPU, this session's own inductor, Triton and CUDA JIT caches; elsewhere the
    shared ones (every bench warms what it uses before timing)."""
    from perfsuite.bench.caches import fresh_caches, keep_apart
    from perfsuite.config import perf_config
    from perfsuite.plugin import session_gpu

    if not keep_apart(perf_config(pytestconfig).device, lambda: session_gpu(pytestconfig).count):
        yield
        return
    with fresh_caches(tmp_path_factory.mktemp("compile-caches")):
        yield


@pytest.fixture
def torch_device(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Any:
    """The ``torch.device`` of a bench parametrized with ``ON_CPU_AND_GPU``: the CPU, or
    the session's GPU (see :mod:`perfsuite.bench.devices`)."""
    from perfsuite.bench.devices import torch_device_for
    from perfsuite.config import perf_config

    return torch_device_for(request, perf_config(pytestconfig))
