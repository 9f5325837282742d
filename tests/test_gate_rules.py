"""The gate's rules (issue 12), each both ways, with exit codes: a gate that judged
nothing does not pass, a gate that could only pass is a usage error, too few samples
never fail on their own, and ``perfsuite compare --threshold`` wins over recorded ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from perfsuite.cli import main
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.result import BenchResult, DatasetRef, Role
from tests.fake_timer import FAKE_TIMER
from tests.test_verdict_gate import BENCH, CONFTEST, MACHINE_ID, run, save_baseline

pytest_plugins = ["pytester"]

IMAGES_BENCH = '''
"""A bench on the session's image dataset (--perf-images), timed by faketimer."""
import pytest


@pytest.mark.perf(group="img", variant="read")
def test_images(perf, image_dataset):
    perf.measure(lambda: None, items=4, dataset=image_dataset)
'''


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(bench_sleep=BENCH, faketimer=FAKE_TIMER)
    pytester.makeconftest(CONFTEST)
    return pytester


def gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, delay: float = 0.01
) -> Any:
    return run(pytester, monkeypatch, "--benchmark-compare", "--perf-gate", *args, delay=delay)


# -- a gate that judged nothing does not pass -------------------------------------------


def test_a_baseline_at_another_scale_is_refused(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch)  # --perf-scale=smoke
    result = gate(bench, monkeypatch, "--perf-scale=default")
    assert result.ret == ExitCode.NOT_JUDGED
    out = result.stdout.str()
    assert "perfsuite gate: REFUSED: cannot judge: none of the 1 benches was comparable" in out
    assert "1 x scale smoke -> default" in out
    assert "compare runs saved at the same --perf-scale" in out
    same = gate(bench, monkeypatch, "--perf-scale=smoke")
    assert same.ret == 0, same.stdout.str()


def test_a_selection_that_collects_nothing_exits_3_as_the_gate_says(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch)
    result = gate(bench, monkeypatch, "-k", "matches_no_bench")
    assert result.ret == ExitCode.NOT_JUDGED, result.stdout.str()  # not pytest's 5
    assert "perfsuite gate: REFUSED: cannot judge: this run measured no benches" in (
        result.stdout.str()
    )


def jpeg_folder(root: Path, color: tuple[int, int, int]) -> Path:
    folder = root / "cls"
    folder.mkdir(parents=True)
    for i in range(2):
        Image.new("RGB", (240, 240), color).save(folder / f"{i}.jpg")
    return root


def test_a_baseline_on_another_images_folder_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, perf_data_dir: Path
) -> None:
    pytester.makepyfile(bench_images=IMAGES_BENCH, faketimer=FAKE_TIMER)
    red = jpeg_folder(pytester.path / "red", (255, 0, 0))
    blue = jpeg_folder(pytester.path / "blue", (0, 0, 255))
    data = f"--perf-data-dir={perf_data_dir}"
    saved = run(pytester, monkeypatch, "--benchmark-autosave", f"--perf-images={red}", data)
    assert saved.ret == 0, saved.stdout.str()
    other = gate(pytester, monkeypatch, f"--perf-images={blue}", data)
    assert other.ret == ExitCode.NOT_JUDGED
    out = other.stdout.str()
    assert "perfsuite gate: REFUSED: cannot judge" in out
    assert "dataset_hash" in out
    assert "compare runs on the same --perf-images folder" in out
    same = gate(pytester, monkeypatch, f"--perf-images={red}", data)
    assert same.ret == 0, same.stdout.str()


def write_baseline(pytester: pytest.Pytester, doc: dict[str, Any]) -> None:
    path = pytester.path / "store" / MACHINE_ID / "0001_handmade.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))


def test_an_empty_baseline_is_refused(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_baseline(bench, {"version": "5.3.1", "benchmarks": [], "machine_info": {}})
    result = gate(bench, monkeypatch, "--perf-allow-machine-mismatch")
    assert result.ret == ExitCode.NOT_JUDGED
    assert "the baseline 0001_handmade holds no benches" in result.stdout.str()


def test_a_baseline_with_zero_timings_is_refused(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch)
    (saved,) = (bench.path / "store").rglob("0001_*.json")
    doc = json.loads(saved.read_text())
    for entry in doc["benchmarks"]:
        entry["stats"]["data"] = [0.0] * len(entry["stats"]["data"])
        entry["stats"]["median"] = 0.0
    saved.write_text(json.dumps(doc))
    result = gate(bench, monkeypatch)
    assert result.ret == ExitCode.NOT_JUDGED
    out = result.stdout.str()
    assert "perfsuite gate: REFUSED: cannot judge" in out
    assert "must be finite and positive" in out


def test_the_first_run_on_a_new_machine_passes_with_a_note(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = gate(bench, monkeypatch, "--benchmark-autosave")
    assert result.ret == ExitCode.NOT_JUDGED, result.stdout.str()  # saved, but nothing judged
    assert "this run becomes the first baseline" in result.stdout.str()


# -- a gate that could only pass is a usage error -----------------------------------------


@pytest.mark.parametrize("flag", ["--benchmark-disable", "--benchmark-skip"])
def test_gate_with_benchmarks_off_is_a_usage_error(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    result = gate(bench, monkeypatch, flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"ERROR: --perf-gate with {flag}: no bench is measured" in err
    assert "Traceback" not in err
    without_gate = run(bench, monkeypatch, "--benchmark-compare", flag)
    assert without_gate.ret == 0, without_gate.stdout.str()


# -- too few samples never fail on their own ----------------------------------------------


def test_too_few_samples_are_shown_not_judged(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = run(bench, monkeypatch, "--benchmark-autosave", "--perf-rounds=3", delay=0.01)
    assert saved.ret == 0, saved.stdout.str()
    result = gate(bench, monkeypatch, "--perf-rounds=3", delay=0.04)
    assert result.ret == ExitCode.NOT_JUDGED, result.stdout.str()
    out = result.stdout.str()
    assert "inconclusive, TOO NOISY: no interval [1]" in out  # +300%, never judged: 3 rounds
    assert "rank test needs >= 7 rounds per side" in out
    assert "perfsuite gate: REFUSED: cannot judge: none of the 1 benches could be decided" in out
    save_baseline(bench, monkeypatch, delay=0.01)  # 0002: 10 rounds, enough for the test
    judged = gate(bench, monkeypatch, "--benchmark-compare=0002", delay=0.04)
    # slower on the screen; outside a git checkout no A/B can confirm it
    assert judged.ret == ExitCode.NOT_JUDGED, judged.stdout.str()
    assert "perfsuite gate: UNCONFIRMED: 1 suspect(s)" in judged.stdout.str()


# -- perfsuite compare ------------------------------------------------------------------


def run_doc(
    median: float, *, scale: str = "smoke", threshold: float = 0.5, dataset: str = "abc123"
) -> dict[str, Any]:
    data = [median * (1 + 0.001 * (i % 5)) for i in range(12)]
    result = BenchResult(
        group="g",
        variant="v",
        role=Role.NONE,
        items=4,
        unit="images",
        scale=scale,
        device="cpu",
        threshold=threshold,
        dataset=DatasetRef(name="photos", hash=dataset),
    )
    bench = {
        "group": "g",
        "name": "test_x[v]",
        "fullname": "bench_x.py::test_x[v]",
        "extra_info": {"perfsuite": result.to_dict()},
        "stats": {"data": data, "median": sorted(data)[6]},
    }
    return {"version": "5.3.1", "benchmarks": [bench], "machine_info": {}, "commit_info": {}}


def compare(tmp_path: Path, base: dict[str, Any], cur: dict[str, Any], *args: str) -> int:
    paths = []
    for name, doc in (("base.json", base), ("cur.json", cur)):
        (tmp_path / name).write_text(json.dumps(doc))
        paths.append(str(tmp_path / name))
    return main(["compare", *paths, "--storage", str(tmp_path), *args])


def test_compare_refuses_another_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(tmp_path, run_doc(0.1), run_doc(0.1, scale="default")) == ExitCode.NOT_JUDGED
    assert "nothing judged: cannot judge: none of the 1 benches" in capsys.readouterr().out
    assert compare(tmp_path, run_doc(0.1), run_doc(0.1)) == ExitCode.OK


def test_compare_refuses_an_empty_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = {"version": "5.3.1", "benchmarks": [], "machine_info": {}}
    assert compare(tmp_path, empty, run_doc(0.1)) == ExitCode.NOT_JUDGED
    assert "holds no benches" in capsys.readouterr().out


def test_compare_threshold_wins_over_recorded_ones(tmp_path: Path) -> None:
    base, slower = run_doc(0.1, threshold=0.5), run_doc(0.13, threshold=0.5)
    assert compare(tmp_path, base, slower) == ExitCode.OK  # +30% is inside the recorded 50%
    assert compare(tmp_path, base, slower, "--threshold", "10%") == ExitCode.REGRESSION
    assert compare(tmp_path, base, slower, "--threshold", "0.4") == ExitCode.OK


def test_compare_refuses_another_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = run_doc(0.1, dataset="def456")
    assert compare(tmp_path, run_doc(0.1), other) == ExitCode.NOT_JUDGED
    out = capsys.readouterr().out
    assert "1 x dataset_hash abc123 -> def456" in out
    assert "compare runs on the same --perf-images folder" in out


def test_compare_refuses_zero_timings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zero = run_doc(0.1)
    stats = zero["benchmarks"][0]["stats"]
    stats["data"] = [0.0] * len(stats["data"])
    stats["median"] = 0.0
    assert compare(tmp_path, zero, run_doc(0.1)) == ExitCode.NOT_JUDGED
    assert "nothing judged: cannot judge" in capsys.readouterr().out
