"""Shared fixtures: every inner pytest run gets a private dataset cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def perf_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh dataset cache for one test's inner runs."""
    return tmp_path_factory.mktemp("perf-data")


@pytest.fixture
def inner_args(perf_data_dir: Path) -> list[str]:
    """Arguments every inner pytest run gets: no cache provider, a private dataset cache."""
    return ["-p", "no:cacheprovider", "--strict-markers", f"--perf-data-dir={perf_data_dir}"]
