"""The cost of a bench written with pytest-benchmark's own ``benchmark`` fixture.

:class:`CostPlugin` meters a ``benchmark``-fixture bench's rounds (see
:mod:`perfsuite.bench.cost`) and saves the cost, with the bench's peak-memory threshold, in
its ``extra_info`` draft. A ``perf`` bench meters itself in
``perf.measure``. A plain bench is metered where the session uses perfsuite (a
perfsuite option on the command line or in the ini file) or the bench carries a
``perf`` marker; elsewhere pytest-benchmark's saved runs stay exactly its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import pytest

from perfsuite.bench import cost
from perfsuite.config import PerfConfig, memory_threshold
from perfsuite.options import OPTIONS
from perfsuite.verdict.cost import COST_KEY
from perfsuite.verdict.result import RESULT_KEY, SCHEMA_VERSION, is_draft

PLUGIN_NAME = "perfsuite-cost"


def uses_perfsuite(config: pytest.Config) -> bool:
    """Whether any perfsuite option is set, on the command line or in the ini file."""
    for spec in OPTIONS:
        if config.getoption(spec.dest) not in (None, False):
            return True
        try:
            value = config.getini(spec.ini)
        except ValueError:
            return True  # a malformed value is still a value set
        if value not in ("", None, False, [], spec.default):
            return True
    return False


class CostPlugin:
    """Meters ``benchmark``-fixture benches (see the module docstring)."""

    def __init__(self, config: pytest.Config, settings: PerfConfig) -> None:
        self.settings = settings
        self.every_plain = uses_perfsuite(config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        funcargs: dict[str, Any] = getattr(item, "funcargs", None) or {}
        fixture = funcargs.get("benchmark")
        meter = None
        wanted = self.every_plain or item.get_closest_marker("perf") is not None
        if fixture is not None and "perf" not in funcargs and wanted:
            meter = cost.attach(fixture)
        try:
            return (yield)
        finally:
            if meter is not None:
                self._save(item, fixture, meter)

    def _save(self, item: pytest.Item, fixture: Any, meter: cost.CostMeter) -> None:
        """The cost into the fixture's ``extra_info`` draft (never over a full result)."""
        extra_info = getattr(fixture, "extra_info", None)
        spent = cost.finish(meter, fixture)
        if not isinstance(extra_info, dict) or spent is None:
            return
        draft = extra_info.setdefault(RESULT_KEY, {"schema": SCHEMA_VERSION})
        if is_draft(draft):
            limit = memory_threshold(self.settings, item)
            draft[COST_KEY] = dataclasses.replace(spent, memory_threshold=limit).to_dict()
