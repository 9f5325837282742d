"""Where ``perfsuite nightly`` and ``perfsuite history`` write: a ``--report`` folder
checked before anything runs, and a closed standard output that never replaces the
verdict's exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.exitcodes import ExitCode
from tests.test_history_data import MACHINE_ID, make_history


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 15-night history whose last night is 30% slower; the test runs in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "store"
    make_history(saved, nights=15, step_at=14, step=0.3, noise=0.03)
    return saved


def test_a_report_folder_holding_other_files_is_refused_before_anything_runs(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.md").write_text("MY OWN NOTES\n")
    (mine / "notes.txt").write_text("kept\n")
    code = main(["nightly", "--storage", str(store), "--report", str(mine)])
    assert code == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert f"--report {mine}: holds notes.txt" in err
    assert "name a new or empty folder, or an earlier nightly report" in err
    assert (mine / "summary.md").read_text() == "MY OWN NOTES\n"
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "summary.md"]
    assert not (mine / "ab").exists()  # no A/B started: it would report into DIR/ab
    assert not (tmp_path / "reports").exists()
    (mine / "notes.txt").unlink()  # a summary.md of the user's own alone is refused too
    assert main(["nightly", "--storage", str(store), "--report", str(mine)]) == 2
    assert f"--report {mine}: holds summary.md" in capsys.readouterr().err
    assert (mine / "summary.md").read_text() == "MY OWN NOTES\n"
    a_file = tmp_path / "report.txt"
    a_file.write_text("a file\n")
    assert main(["nightly", "--storage", str(store), "--report", str(a_file)]) == 2
    assert f"--report {a_file}: not a folder" in capsys.readouterr().err


def test_an_earlier_nightly_report_is_replaced(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "nightly"
    args = ["nightly", "--storage", str(store), "--report", str(report), "--no-confirm"]
    assert main(args) == ExitCode.NOT_JUDGED  # suspects left unconfirmed
    # an earlier night's A/B and bisection folders are the report's own, and go with it
    for folder in ("ab/report", "ab-0041", "bisect/step-03"):
        (report / folder).mkdir(parents=True)
    (report / "bisect" / "bisect.md").write_text("an earlier night's culprit\n")
    assert main(args) == ExitCode.NOT_JUDGED
    assert "UNCONFIRMED" in (report / "summary.md").read_text()
    assert sorted(p.name for p in report.iterdir()) == ["summary.md"]
    assert "error" not in capsys.readouterr().err


def test_a_reader_that_stops_early_leaves_the_verdict_s_exit_status(store: Path) -> None:
    """``perfsuite history --series | head -1``: the step's exit 1, not an error's 2."""
    command = [sys.executable, "-m", "perfsuite.cli", "history", "--storage", str(store)]
    command += ["--machine", MACHINE_ID, "--series"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == ExitCode.REGRESSION, err
    assert "Broken pipe" not in err
    assert "error" not in err


#: every command that reads a storage
COMMANDS = [
    ["history"],
    ["nightly", "--no-confirm"],
    ["compare", "0001", "0002"],
    ["report", "--out", "r"],
    ["report", "--html", "site"],
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_storage_that_is_no_storage_says_why_in_one_line(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """A machine folder, a file and a missing folder given as ``--storage``: each one
    line naming it and what is wrong, exit 2 (``compare`` of two run ids reads a
    machine folder as it is, as pytest-benchmark's storage query does)."""
    machine_folder = store / MACHINE_ID
    a_file = tmp_path / "notes.txt"
    a_file.write_text("notes\n")
    cases = {
        machine_folder: f"holds saved runs itself, so it is one machine's folder: name the "
        f"folder above it (--storage {store})",
        a_file: "a file, not a folder of saved runs",
        tmp_path / "missing": "no such folder",
    }
    if command[0] == "compare":
        del cases[machine_folder]
    for root, why in cases.items():
        assert main([*command, "--storage", str(root)]) == ExitCode.BAD_INPUT, root
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0, err
        assert f"{root}: {why}" in err
