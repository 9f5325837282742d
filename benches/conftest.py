"""The benches run inside perfsuite's pytest plugin: say so when it is not loaded.

Without the plugin, the first ``pytest.mark.tf`` in a bench module fails
``--strict-markers`` with "'tf' not found in markers configuration option", which
never names perfsuite. ``pytest_configure`` runs before any bench module is imported,
so the missing plugin is reported first, as a usage error with the install hint.
"""

from __future__ import annotations

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
