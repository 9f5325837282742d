"""The hooks perfsuite offers to other plugins and conftest files.

Convention (as in pytest-benchmark): ``*_update_*`` hooks let every plugin amend a
value in place.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_perfsuite_update_machine_facts(config: pytest.Config, facts: dict[str, Any]) -> None:
    """Amend the machine facts perfsuite saves with every run (``machine_info['perfsuite']``).

    >>> def pytest_perfsuite_update_machine_facts(config, facts):
    ...     facts["runner_pool"] = "a100-spot"
    """


def pytest_perfsuite_update_extra_info(item: pytest.Item, extra_info: dict[str, Any]) -> None:
    """Amend a bench's ``extra_info`` after it was measured, before results are saved."""
