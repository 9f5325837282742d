"""Shared fixtures: every inner pytest run gets a private dataset cache, and is no xdist worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

#: what pytest-xdist sets in each worker's environment
XDIST_WORKER_VARIABLES = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
)


@pytest.fixture(autouse=True, scope="session")
def not_an_xdist_worker() -> Iterator[None]:
    """Inner pytest runs do not inherit pytest-xdist's worker variables.

    pytest-benchmark and perfsuite's gate switch themselves off in an xdist worker, and
    they tell one by ``PYTEST_XDIST_WORKER``: an inner run that inherited it would
    measure and save nothing. The suite turns xdist off (pyproject.toml's addopts); this
    keeps the inner runs right where someone turns it back on (``-p xdist -n 4``).
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in XDIST_WORKER_VARIABLES:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture
def perf_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh dataset cache for one test's inner runs."""
    return tmp_path_factory.mktemp("perf-data")


@pytest.fixture
def inner_args(perf_data_dir: Path) -> list[str]:
    """Arguments every inner pytest run gets: no cache provider, a private dataset cache."""
    return ["-p", "no:cacheprovider", "--strict-markers", f"--perf-data-dir={perf_data_dir}"]
