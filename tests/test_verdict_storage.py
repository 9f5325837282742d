"""Storage: one order for saved runs (their recorded datetime, then the file counter)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from perfsuite.cli import main
from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.result import BenchResult, Role
from perfsuite.verdict.storage import Storage, storage_path, this_machine_id

MACHINE = "Linux-CPython-3.11-64bit"


def doc(stamp: str | None, mean: float = 0.1) -> dict[str, Any]:
    result = BenchResult(
        group="decode",
        variant="pil",
        role=Role.BASELINE,
        items=16,
        unit="images",
        scale="smoke",
        device="cpu",
        threshold=0.05,
    )
    data = [mean * (1 + 0.001 * (i % 5)) for i in range(10)]
    out: dict[str, Any] = {
        "version": "5.3.1",
        "machine_info": {
            "python_version": "3.11.9",
            "perfsuite": {"cpu_model": "T", "cpu_count": 2},
        },
        "benchmarks": [
            {
                "name": "test_decode[pil]",
                "fullname": "bench_decode.py::test_decode[pil]",
                "group": "decode",
                "extra_info": {"perfsuite": result.to_dict()},
                "stats": {"data": data, "median": sorted(data)[5]},
            }
        ],
    }
    if stamp is not None:
        out["datetime"] = stamp
    return out


def save(root: Path, name: str, stamp: str | None, machine: str = MACHINE, **kw: Any) -> Path:
    path = root / machine / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc(stamp, **kw)))
    return path


def day(n: int) -> str:
    return f"2025-01-{n:02d}T12:00:00+00:00"


def test_runs_are_ordered_by_their_recorded_datetime_not_name_or_mtime(tmp_path: Path) -> None:
    later = save(tmp_path, "0001_later", day(9))
    earlier = save(tmp_path, "0002_earlier", day(3))
    os.utime(earlier, (2e9, 2e9))  # as a copy or a cache restore would leave it: no effect
    storage = Storage(tmp_path, MACHINE)
    assert storage.runs() == [earlier, later]
    assert storage.latest() == later
    assert storage.before(later) == [earlier]
    assert storage.before(earlier) == []


def test_ties_are_broken_by_the_counter_past_9999(tmp_path: Path) -> None:
    big = save(tmp_path, "10000_b", day(1))
    small = save(tmp_path, "9999_a", day(1))
    assert Storage(tmp_path, MACHINE).runs() == [small, big]


def test_naive_and_offset_datetimes_compare_in_utc(tmp_path: Path) -> None:
    east = save(tmp_path, "0001_east", "2025-01-01T12:00:00+05:00")  # 07:00 UTC
    naive = save(tmp_path, "0002_naive", "2025-01-01T08:00:00")  # read as UTC
    assert Storage(tmp_path, MACHINE).runs() == [east, naive]


def test_unreadable_and_undated_runs_sort_last(tmp_path: Path) -> None:
    broken = tmp_path / MACHINE / "0001_broken.json"
    dated = save(tmp_path, "0002_dated", day(1))
    undated = save(tmp_path, "0003_undated", None)
    broken.write_text("{ not json")
    storage = Storage(tmp_path, MACHINE)
    assert storage.runs() == [dated, broken, undated]
    with pytest.raises(PerfsuiteError, match=r"0001_broken\.json: not valid JSON"):
        storage.load(broken)
    assert [r.source for r in storage.load_all(storage.runs())] == [str(dated), str(undated)]


def test_runs_before_a_moment(tmp_path: Path) -> None:
    first = save(tmp_path, "0001_a", day(1))
    save(tmp_path, "0002_b", day(5))
    save(tmp_path, "0003_undated", None)
    storage = Storage(tmp_path, MACHINE)
    assert storage.before(dt.datetime(2025, 1, 3, tzinfo=dt.timezone.utc)) == [first]
    assert storage.before(dt.datetime(2025, 1, 3)) == [first]  # naive: UTC


def test_runs_of_one_machine_and_of_all(tmp_path: Path) -> None:
    mine = save(tmp_path, "0001_mine", day(2))
    other = save(tmp_path, "0001_other", day(1), machine="Darwin-CPython-3.12-64bit")
    everything = Storage(tmp_path)
    assert everything.runs() == [other, mine]
    assert everything.of_machine(MACHINE).runs() == [mine]
    assert everything.beside(other).runs() == [other]
    session = Storage.for_session(tmp_path)
    assert session.machine_id == this_machine_id()


def test_run_ids_resolve_by_pytest_benchmark_rules(tmp_path: Path) -> None:
    first = save(tmp_path, "0001_nightly", day(1))
    second = save(tmp_path, "0002_nightly", day(2))
    other = save(tmp_path, "0003_x", day(3), machine="m2")
    storage = Storage(tmp_path, MACHINE)
    assert storage.resolve("0001") == first
    assert storage.resolve("*nightly") == second  # a glob: the newest match
    assert storage.query("*nightly") == [first, second]
    assert storage.resolve("m2/0003") == other
    assert storage.find(str(first)) == first
    with pytest.raises(PerfsuiteError, match="run 'a/b/c' not found"):
        storage.resolve("a/b/c")


def test_a_missing_storage_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    storage = Storage.from_option(f"file://{missing}")
    assert storage.runs() == []
    assert storage.latest() is None
    with pytest.raises(PerfsuiteError, match="missing: no such folder"):
        storage.resolve("0001")
    assert not missing.exists()
    (missing / "m1").mkdir(parents=True)  # a storage with no run yet
    with pytest.raises(PerfsuiteError, match="no saved runs"):
        Storage.from_option(missing, "m1").resolve("0001")


def test_other_storages_are_refused() -> None:
    with pytest.raises(PerfsuiteError, match="file storage only"):
        storage_path("elasticsearch+https://host/index")
    assert storage_path("file:///a/b") == Path("/a/b")


def test_a_storage_outside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ci-cache" / "benchmarks"
    save(root, "0002_base", day(1))
    save(root, "0001_slow", day(2), mean=0.15)  # copied in later, an older counter
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for option in (f"file://{root}", str(root)):
        storage = Storage.from_option(option)
        assert storage.latest() == root / MACHINE / "0001_slow.json"
        assert main(["compare", "0002", "0001", "--storage", option]) == ExitCode.REGRESSION
        # two ids of one run: both found there, and refused as a run against itself
        assert main(["compare", "0002", "0002_base", "--storage", option]) == ExitCode.BAD_INPUT
        assert "0002_base.json: the baseline and the current run are the same file" in (
            capsys.readouterr().err
        )
        out = elsewhere / "report"
        assert main(["report", "--storage", option, "--out", str(out)]) == ExitCode.OK
        summary = (out / "summary.md").read_text()
        # the newest run by datetime is reported, against the run saved before it
        assert f"Baseline `{root / MACHINE / '0002_base.json'}`" in summary
        assert f"current `{root / MACHINE / '0001_slow.json'}`" in summary
    capsys.readouterr()
