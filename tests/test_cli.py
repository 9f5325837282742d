"""``perfsuite compare`` and ``perfsuite report``: exit codes both ways and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfsuite.cli import main
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.result import BenchResult, Role

MACHINE = "Linux-CPython-3.11-64bit"
FACTS: dict[str, Any] = {
    "cpu_model": "Test CPU 3000",
    "cpu_count": 2,
    "gpu_name": None,
    "gpu_count": 0,
    "gpu_driver": None,
    "cuda": None,
    "cudnn": None,
    "versions": {"numpy": "2.4.6", "perfsuite": "0.1.0"},
}


def run_doc(
    mean: float, *, traces: int = 3, facts: dict[str, Any] | None = None, seed: int = 0
) -> dict[str, Any]:
    data = [float(x) for x in np.random.default_rng(seed).normal(mean, mean / 100, 12)]
    result = BenchResult(
        group="decode",
        variant="pil",
        role=Role.BASELINE,
        items=16,
        unit="images",
        scale="smoke",
        device="cpu",
        threshold=0.05,
        counters={"traces": traces},
    )
    bench = {
        "group": "decode",
        "name": "test_decode[pil]",
        "fullname": "bench_decode.py::test_decode[pil]",
        "extra_info": {"perfsuite": result.to_dict()},
        "stats": {"data": data, "median": float(np.median(data))},
    }
    return {
        "machine_info": {"python_version": "3.11.9", "perfsuite": facts or FACTS},
        "commit_info": {},
        "benchmarks": [bench],
        "datetime": f"2025-01-0{seed + 1}T00:00:00+00:00",
        "version": "5.3.1",
    }


def save(storage: Path, name: str, doc: dict[str, Any]) -> Path:
    path = storage / MACHINE / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    save(store, "0001_base", run_doc(0.10))
    save(store, "0002_same", run_doc(0.10, seed=1))
    save(store, "0003_slow", run_doc(0.13, seed=2))
    save(store, "0004_traces", run_doc(0.10, traces=7, seed=3))
    save(store, "0005_other", run_doc(0.10, facts=dict(FACTS, cpu_count=8), seed=4))
    return store


def compare(storage: Path, *args: str) -> int:
    return main(["compare", *args, "--storage", str(storage)])


def test_compare_same_exits_0(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0001", "0002") == ExitCode.OK
    out = capsys.readouterr().out
    assert "decode/pil" in out
    assert "perfsuite compare: pass" in out


def test_compare_slower_exits_1(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0001", "0003_slow") == ExitCode.REGRESSION
    out = capsys.readouterr().out
    assert "SLOWER" in out
    assert "time +29.8%" in out
    assert "images/s -23.0%" in out
    assert "perfsuite compare: regression: 1 regression: decode/pil (slower)" in out


def test_compare_faster_exits_0(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0003", "0001") == ExitCode.OK
    assert "faster" in capsys.readouterr().out


def test_compare_counter_rise_exits_1(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0001", "0004") == ExitCode.REGRESSION
    assert "traces 3 -> 7 ROSE" in capsys.readouterr().out


def test_compare_machine_mismatch(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0001", "0005") == ExitCode.NOT_JUDGED
    out = capsys.readouterr().out
    assert "cpu_count 2 -> 8" in out
    assert "--allow-machine-mismatch" in out
    assert compare(storage, "0001", "0005", "--allow-machine-mismatch") == ExitCode.OK


def test_compare_file_paths_and_markdown(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = storage / MACHINE / "0001_base.json", storage / MACHINE / "0003_slow.json"
    assert main(["compare", str(base), str(cur), "--markdown"]) == ExitCode.REGRESSION
    out = capsys.readouterr().out
    assert "| bench | verdict |" in out
    assert "| **`decode/pil`** | SLOWER" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "not valid JSON"),
        ('{"version": "5.3.1", "benchmarks": [', "truncated JSON"),
        ('{"bad json\n', "truncated JSON (Invalid control character at line 1, column 11)"),
        ('{"version": "99.0.0", "benchmarks": []}', "saved by pytest-benchmark 99.0.0"),
        ('{"benchmarks": []}', "not a pytest-benchmark run (no 'version' field)"),
    ],
)
def test_compare_bad_file_exits_2(
    storage: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = storage / "bad.json"
    bad.write_text(content)
    assert compare(storage, str(bad), "0001") == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"perfsuite compare: error: {bad}: {message}")
    assert err.count("\n") == 1


def test_compare_never_asks_to_delete_a_file_that_is_no_saved_run(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = storage / "README.md"
    readme.write_text("# my project\n")
    assert compare(storage, "0001", str(readme)) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert f"{readme}: not a pytest-benchmark run (not valid JSON: " in err
    assert "delete it" not in err


def test_compare_unknown_run_id_exits_2(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0009_slow", "0001") == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "run '0009_slow' not found" in err
    assert "closest: " in err
    assert "0003_slow" in err


def test_compare_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path / "a" / "x.json"), "0001"]) == ExitCode.BAD_INPUT
    assert "no such file" in capsys.readouterr().err


def test_compare_of_a_root_folder_is_a_bad_run_id_not_a_traceback(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A one-part absolute path (``/tmp``) is a pattern pathlib's glob refuses."""
    assert compare(storage, "0001", "/tmp") == ExitCode.BAD_INPUT
    assert "run '/tmp' not found" in capsys.readouterr().err
    out = storage.parent / "report"
    args = ["report", "--storage", str(storage), "--current", "/tmp", "--out", str(out)]
    assert main(args) == ExitCode.BAD_INPUT
    assert "run '/tmp' not found" in capsys.readouterr().err
    assert not out.exists()


def test_a_run_against_itself_is_refused(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(storage, "0002", "0002_same") == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "0002_same.json: the baseline and the current run are the same file" in err
    args = ["report", "--storage", str(storage), "--baseline", "0001", "--current", "0001"]
    assert main([*args, "--out", str(storage.parent / "r")]) == ExitCode.BAD_INPUT
    assert "the same file" in capsys.readouterr().err


def test_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "only-one"])
    assert info.value.code == ExitCode.BAD_INPUT


def test_report_command(storage: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (storage / MACHINE / "0005_other.json").unlink()
    out = tmp_path / "report"
    assert main(["report", "--storage", str(storage), "--out", str(out)]) == ExitCode.OK
    summary = (out / "summary.md").read_text()
    assert "Baseline `" in summary
    assert "0003_slow.json" in summary
    assert "traces 3 -> 7 ROSE" in summary
    assert len(list(out.rglob("*.png"))) == 2
    assert "perfsuite report: wrote 3 files" in capsys.readouterr().out


def test_report_without_runs_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--storage", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "no saved runs to report" in capsys.readouterr().err


def test_console_script_runs(storage: Path) -> None:
    script = Path(sys.executable).parent / "perfsuite"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "perfsuite.cli"]
    args = ["compare", "0001", "0003", "--storage", str(storage)]
    slower = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
    assert slower.returncode == ExitCode.REGRESSION, slower.stderr
    same = subprocess.run(
        [*command, "compare", "0001", "0002", "--storage", f"file://{storage}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert same.returncode == ExitCode.OK, same.stderr


def test_report_of_a_file_outside_the_storage_compares_with_its_newest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pytest --benchmark-json out.json`` then ``perfsuite report --current out.json``:
    the baseline is the newest run of this machine in the storage, as for a saved run."""
    from tests.test_history_data import make_history, run_name

    store = tmp_path / "store"
    paths = make_history(store, nights=3, step_at=None)
    document = json.loads(paths[-1].read_text())
    document["datetime"] = "2031-01-01T00:00:00+00:00"  # taken after every saved run
    outside = tmp_path / "out.json"
    outside.write_text(json.dumps(document))
    out = tmp_path / "report"
    args = ["report", "--storage", str(store), "--current", str(outside), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    summary = (out / "summary.md").read_text()
    assert "No baseline was compared" not in summary
    assert "no run saved before" not in summary
    assert run_name(2) in summary


def test_a_run_number_names_its_run_and_nothing_close_lists_the_newest(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``perfsuite compare 1 3`` is ``0001 0003``, as ``history --accept 1`` reads it;
    an id close to no saved run lists the newest runs as such, not as closest."""
    assert compare(storage, "1", "3") == ExitCode.REGRESSION
    assert compare(storage, "zz", "0001") == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "run 'zz' not found" in err
    assert "newest: 0001_" in err
    assert "closest" not in err
