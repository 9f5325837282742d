"""The gate inside pytest: real runs saved, compared, and the exit status both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_benchmark.utils import get_machine_id

from perfsuite.exitcodes import ExitCode
from tests.fake_timer import FAKE_TIMER

pytest_plugins = ["pytester"]

MACHINE_ID: str = get_machine_id()  # type: ignore[no-untyped-call]

BENCH = '''
"""A bench whose measured duration (through faketimer) and trace count come from the env."""
import os

import pytest


@pytest.mark.perf(group="sleep", variant="nap", baseline="nap")
def test_sleep(perf):
    perf.measure(lambda: None, items=4)
    perf.count("traces", int(os.environ.get("PERF_TEST_TRACES", "1")))
'''

CONFTEST = """
import os


def pytest_perfsuite_update_machine_facts(config, facts):
    if os.environ.get("PERF_TEST_CPU"):
        facts["cpu_model"] = os.environ["PERF_TEST_CPU"]
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(bench_sleep=BENCH, faketimer=FAKE_TIMER)
    pytester.makeconftest(CONFTEST)
    return pytester


def run(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    delay: float = 0.01,
    traces: int = 1,
    cpu: str = "",
) -> pytest.RunResult:
    monkeypatch.setenv("PERF_TEST_DELAY", str(delay))
    monkeypatch.setenv("PERF_TEST_TRACES", str(traces))
    monkeypatch.setenv("PERF_TEST_CPU", cpu)
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--perf-rounds=10",
        "--perf-scale=smoke",
        f"--benchmark-storage={pytester.path / 'store'}",
        "--benchmark-timer=faketimer.clock",
        *args,
    )


def save_baseline(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    *,
    delay: float = 0.01,
    traces: int = 1,
    cpu: str = "",
) -> None:
    result = run(pytester, monkeypatch, "--benchmark-autosave", delay=delay, traces=traces, cpu=cpu)
    assert result.ret == 0, result.stdout.str()


def test_gate_outside_git_leaves_a_slowdown_unconfirmed(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch, delay=0.01)
    result = run(bench, monkeypatch, "--benchmark-compare", "--perf-gate", delay=0.04)
    assert result.ret == ExitCode.NOT_JUDGED, result.stdout.str()
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "perfsuite verdict" in out
    assert "SLOWER? unconfirmed" in out
    assert "perfsuite gate: UNCONFIRMED: 1 suspect(s) could be neither confirmed nor cleared" in out
    assert "the baseline run has no commit id" in out
    assert "to confirm: perfsuite ab" in out


def test_gate_passes_when_same(bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    save_baseline(bench, monkeypatch, delay=0.02)
    result = run(bench, monkeypatch, "--benchmark-compare=0001", "--perf-gate", delay=0.02)
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "perfsuite gate: passed" in out
    assert "SLOWER" not in out


def test_without_gate_a_slowdown_is_only_reported(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch, delay=0.01)
    result = run(bench, monkeypatch, "--benchmark-compare", delay=0.04)
    assert result.ret == 0
    assert "SLOWER" in result.stdout.str()
    assert "perfsuite gate" not in result.stdout.str()


def test_gate_fails_when_a_counter_rose(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch, traces=4)
    result = run(bench, monkeypatch, "--benchmark-compare", "--perf-gate", traces=9)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "traces 4 -> 9 ROSE" in out
    assert "perfsuite gate: FAILED" in out
    assert "traces 4 -> 9" in out


def test_gate_refuses_another_machine(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch, cpu="Some Other CPU")
    result = run(bench, monkeypatch, "--benchmark-compare", "--perf-gate")
    assert result.ret == ExitCode.NOT_JUDGED
    out = result.stdout.str()
    assert "baseline is from a different machine or stack: cpu_model Some Other CPU ->" in out
    assert "perfsuite gate: REFUSED" in out
    assert "--perf-allow-machine-mismatch" in out
    allowed = run(
        bench, monkeypatch, "--benchmark-compare", "--perf-gate", "--perf-allow-machine-mismatch"
    )
    assert allowed.ret == 0, allowed.stdout.str()
    assert "cpu_model Some Other CPU ->" in allowed.stdout.str()


def test_no_baseline_yet_is_a_note(bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(bench, monkeypatch, "--benchmark-autosave", "--benchmark-compare", "--perf-gate")
    assert result.ret == ExitCode.NOT_JUDGED, result.stdout.str()
    assert "perfsuite gate: REFUSED: cannot judge: no baseline" in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*no baseline in *store* yet: this run becomes the first baseline"]
    )
    assert "(this run is saved: gate the next one against it)" in result.stdout.str()
    assert "--benchmark-autosave, then" not in result.stdout.str()  # it was given


def test_gate_without_compare_says_so(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gate that could only pass is a usage error at startup (issue 12), no longer a note.
    result = run(bench, monkeypatch, "--perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--perf-gate has nothing to judge: add --benchmark-compare" in result.stderr.str()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"machine_info": {}, "benchmarks": [{"fullname": "b', "truncated JSON"),
        ("<html>not json</html>", "not valid JSON"),
        ('{"version": "1.0.0", "benchmarks": []}', "saved by pytest-benchmark 1.0.0"),
    ],
)
def test_bad_baseline_is_a_usage_error(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, content: str, message: str
) -> None:
    path = bench.path / "store" / MACHINE_ID / "0001_broken.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = run(bench, monkeypatch, "--benchmark-compare", "--perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"ERROR: perfsuite: baseline {path}: {message}" in err
    assert "Traceback" not in err


def test_unknown_run_id_lists_the_closest(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = bench.path / "store" / MACHINE_ID
    folder.mkdir(parents=True)
    doc = {"version": "5.3.1", "benchmarks": [], "machine_info": {}}
    for name in ("0001_main", "0002_main"):
        (folder / f"{name}.json").write_text(json.dumps(doc))
    result = run(bench, monkeypatch, "--benchmark-compare=0003_main", "--perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "run '0003_main' not found in" in err
    assert "closest: " in err
    assert "0002_main" in err


def test_report_written_at_session_end(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch)
    out = bench.path / "report"
    result = run(bench, monkeypatch, "--benchmark-compare", f"--perf-report={out}")
    assert result.ret == 0, result.stdout.str()
    summary = (out / "summary.md").read_text()
    assert "## Verdict" in summary
    assert "sleep/nap" in summary
    pngs = sorted(p.name for p in out.rglob("*.png"))
    assert len(pngs) == 2
    assert pngs[1].startswith("throughput-sleep")
    assert f"perfsuite report: 3 files in {out}" in result.stdout.str()


def test_saved_runs_keep_raw_samples(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_baseline(bench, monkeypatch)
    (saved,) = (bench.path / "store").rglob("0001_*.json")
    (entry,) = json.loads(saved.read_text())["benchmarks"]
    assert len(entry["stats"]["data"]) == 10
    assert Path(saved).parent.name == MACHINE_ID


def test_storage_outside_the_working_directory(
    bench: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    store = tmp_path_factory.mktemp("ci-cache") / "benchmarks"
    uri = f"--benchmark-storage=file://{store}"  # given last: it wins over run()'s own
    save = run(bench, monkeypatch, "--benchmark-autosave", uri)
    assert save.ret == 0, save.stdout.str()
    (saved,) = store.rglob("0001_*.json")
    assert saved.parent.name == MACHINE_ID
    out = bench.path / "report"
    same = run(
        bench, monkeypatch, "--benchmark-compare", "--perf-gate", f"--perf-report={out}", uri
    )
    assert same.ret == 0, same.stdout.str()
    assert "perfsuite gate: passed" in same.stdout.str()
    assert str(saved) in (out / "summary.md").read_text()
    slower = run(bench, monkeypatch, "--benchmark-compare=0001", "--perf-gate", uri, delay=0.04)
    assert slower.ret == ExitCode.NOT_JUDGED, slower.stdout.str()
    assert "perfsuite gate: UNCONFIRMED: 1 suspect(s)" in slower.stdout.str()
