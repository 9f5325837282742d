"""A side of ``perfsuite ab`` finds the CPU's facts once per run, the commit's once per side."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark import plugin

from perfsuite.ab.sidefacts import COMMIT, CPU, FACTS_ENV, cached, keep_facts


def found(finder: str, *args: object) -> Any:
    """What pytest-benchmark's ``finder`` (as its plugin module now holds it) returns."""
    return getattr(plugin, finder)(*args)


@pytest.fixture
def finders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """pytest-benchmark's finders replaced by counting ones (restored afterwards)."""
    calls: list[str] = []

    def cpu() -> dict[str, Any]:
        calls.append("cpu")
        return {"brand_raw": f"cpu {len(calls)}"}

    def commit(project_name: str | None = None) -> dict[str, Any]:
        calls.append(f"commit {project_name}")
        return {"id": f"c{len(calls)}", "project": project_name}

    monkeypatch.setattr(plugin, CPU, cpu)
    monkeypatch.setattr(plugin, COMMIT, commit)
    return calls


def test_each_fact_is_found_once_per_run_and_side(
    finders: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FACTS_ENV, str(tmp_path))
    keep_facts("A")
    assert FACTS_ENV not in os.environ  # no child process takes it
    first = found(CPU), found(COMMIT, "p")
    again = found(CPU), found(COMMIT, "p")
    assert first == again == ({"brand_raw": "cpu 1"}, {"id": "c2", "project": "p"})
    assert finders == ["cpu", "commit p"]
    assert json.loads((tmp_path / "cpu.json").read_text()) == {"brand_raw": "cpu 1"}
    # another project name is another commit fact
    assert found(COMMIT, None) == {"id": "c3", "project": None}
    assert finders == ["cpu", "commit p", "commit None"]


def test_the_other_side_finds_its_own_commit(
    finders: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cpu.json").write_text('{"brand_raw": "saved"}')
    monkeypatch.setenv(FACTS_ENV, str(tmp_path))
    keep_facts("B")
    assert found(CPU) == {"brand_raw": "saved"}
    assert found(COMMIT, "p") == {"id": "c1", "project": "p"}
    assert finders == ["commit p"]
    assert [p.name.split("-")[1] for p in tmp_path.glob("commit-*.json")] == ["B"]


def test_without_the_variable_nothing_is_wrapped(
    finders: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FACTS_ENV, raising=False)
    keep_facts("A")
    found(CPU)
    found(CPU)
    assert finders == ["cpu", "cpu"]


def test_a_torn_file_is_found_again_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    path.write_text('{"brand_raw": ')
    assert cached(path, lambda: {"brand_raw": "found"}) == {"brand_raw": "found"}
    assert json.loads(path.read_text()) == {"brand_raw": "found"}
    assert [p.name for p in tmp_path.iterdir()] == ["cpu.json"]  # no temporary file left
