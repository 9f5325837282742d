"""A report is written as a unit: a failure half-way leaves the old report whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import perfsuite.verdict.report as report_module
from perfsuite.cli import main
from perfsuite.data import fsutil
from perfsuite.data.fsutil import atomic_write_bytes
from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.report import write_report
from perfsuite.verdict.runs import Run
from tests.test_report import run


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_write_failing_half_way_leaves_the_old_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report"
    old_run = run("0001_old")
    write_report(out, old_run, None, [old_run], notes=["the old report"])
    before = snapshot(out)
    assert "summary.md" in before
    assert any(name.startswith("history/") for name in before)

    real = atomic_write_bytes
    calls: list[Path] = []

    def fail_on_second_png(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:  # the first new PNG is on disk, the disk fills up
            raise OSError(28, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(report_module, "atomic_write_bytes", fail_on_second_png)
    new_run = run("0002_new", scale=2.0, seed=1)
    with pytest.raises(OSError, match="No space left"):
        write_report(out, new_run, None, [old_run, new_run], notes=["the new report"])
    assert len(calls) == 2
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no staging left


def test_a_new_report_replaces_the_old_one_entirely(tmp_path: Path) -> None:
    out = tmp_path / "report"
    first = run("0001_old")
    write_report(out, first, None, [first])
    stale = out / "history" / "gone-0000.png"
    stale.write_bytes(b"a plot of a bench that no longer exists")
    second = run("0002_new", scale=2.0, seed=1)
    files = write_report(out, second, None, [first, second])
    assert not stale.exists()
    assert sorted(files) == sorted(p for p in out.rglob("*") if p.is_file())
    assert "0002_new" in (out / "summary.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_folder_with_other_files_is_refused_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    current = run("0001_old")
    with pytest.raises(PerfsuiteError, match=r"holds notes.txt.*new or empty"):
        write_report(tmp_path, current, None, [current])
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_link_to_a_report_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A report replaces its folder whole, so a symlink in its place (the folder it
    names could be anything) is refused, as ``perfsuite ab --report`` refuses it."""
    current = run("0001_old")
    real = tmp_path / "real"
    write_report(real, current, None, [current])
    link = tmp_path / "link"
    link.symlink_to(real)
    before = snapshot(real)
    with pytest.raises(
        PerfsuiteError, match=rf"^{re.escape(str(link))}: not a folder; choose a new"
    ):
        write_report(link, current, None, [current])
    assert link.is_symlink()
    assert snapshot(real) == before


def test_perfsuite_report_command_keeps_the_old_report_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = tmp_path / "store"
    machine = storage / "Linux-CPython-3.11-64bit"
    machine.mkdir(parents=True)
    doc = (
        '{"version": "5.3.1", "machine_info": {}, "commit_info": {}, "datetime": "2025-01-01",'
        ' "benchmarks": [{"fullname": "b.py::test_b", "name": "test_b", "group": null,'
        ' "extra_info": {"items": 4}, "stats": {"median": 0.01, "data": [0.01, 0.011, 0.012]}}]}'
    )
    (machine / "0001_a.json").write_text(doc)
    out = tmp_path / "report"
    assert main(["report", "--storage", str(storage), "--out", str(out)]) == ExitCode.OK
    before = snapshot(out)

    def full_disk(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(report_module, "atomic_write_text", full_disk)
    assert main(["report", "--storage", str(storage), "--out", str(out)]) == ExitCode.BAD_INPUT
    assert "No space left on device" in capsys.readouterr().err
    assert snapshot(out) == before


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "rename-aside"])
def test_replace_dir_swaps_whole_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    if not exchange:  # a file system without RENAME_EXCHANGE
        monkeypatch.setattr(fsutil, "_exchange", lambda a, b: False)
    final = tmp_path / "report"
    final.mkdir()
    (final / "old.txt").write_text("old")
    new = tmp_path / ".report.new"
    (new / "sub").mkdir(parents=True)
    (new / "sub" / "new.txt").write_text("new")
    fsutil.replace_dir(new, final)
    assert snapshot(final) == {"sub/new.txt": b"new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_report_with_memory_plots_is_replaced_by_the_next(tmp_path: Path) -> None:
    """Every plot a report writes is its own: ``make bench`` reruns into one folder."""
    from dataclasses import replace

    from perfsuite.verdict.cost import Cost

    def with_cost(name: str, seed: int) -> Run:
        plain = run(name, seed=seed)
        cost = Cost(calls=10, round_calls=1, cpu_s=1.0, wall_s=1.0, rounds_rss_mb=(50.0, 60.0))
        benches = {k: replace(b, cost=cost) for k, b in plain.benches.items()}
        return replace(plain, benches=benches)

    out = tmp_path / "report"
    first = with_cost("0001_old", 0)
    write_report(out, first, None, [first])
    assert sorted(p.name for p in out.glob("memory-*.png"))  # the plots the next must replace
    second = with_cost("0002_new", 1)
    write_report(out, second, None, [first, second])
    assert "0002_new" in (out / "summary.md").read_text()


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_reports_and_atomic_writes_follow_the_umask(tmp_path: Path, mask: int) -> None:
    """A report folder and an atomically written file get the modes a plain mkdir and
    open give them: readable by others under umask 022 (a web server, a shared runner's
    cache), private under 077."""
    import os

    old = os.umask(mask)
    try:
        out = tmp_path / "report"
        first = run("0001_old")
        files = write_report(out, first, None, [first])
        atomic_write_bytes(tmp_path / "accepted.json", b"{}")
    finally:
        os.umask(old)
    assert (out.stat().st_mode & 0o777) == 0o777 & ~mask
    assert {p.stat().st_mode & 0o777 for p in files} == {0o666 & ~mask}
    assert ((tmp_path / "accepted.json").stat().st_mode & 0o777) == 0o666 & ~mask
