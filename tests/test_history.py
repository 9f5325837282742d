"""``perfsuite history``: steps in a synthetic history derived from a real saved run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.verdict.changepoint import find_steps
from perfsuite.verdict.history import HistoryStep, bench_histories, failing_steps, steps_of
from tests.test_history_data import (
    MACHINE_ID,
    bench_names,
    commit_of,
    make_history,
    run_name,
    saved_runs,
)


def history(storage: Path, *args: str) -> int:
    return main(["history", "--storage", str(storage), *args])


def series_of(storage: Path) -> dict[str, list[HistoryStep]]:
    runs = saved_runs(storage)
    return {s.fullname: steps_of(s) for s in bench_histories(runs)}


def test_a_10_percent_step_is_found_at_run_20_with_its_commit_range(tmp_path: Path) -> None:
    make_history(tmp_path, step_at=20, step=0.10)
    found = series_of(tmp_path)
    assert sorted(found) == sorted(bench_names())
    for steps in found.values():
        (step,) = steps
        assert step.index == 20
        assert step.regression
        assert step.before.commit == commit_of(step.index - 1)
        assert step.after.commit == commit_of(step.index)
        assert step.commits == f"{commit_of(step.index - 1)[:10]}..{commit_of(step.index)[:10]}"
        assert step.change is not None
        assert step.ci is not None
        assert 0.05 < step.change < 0.15
        assert step.ci[0] > 0


#: flat histories whose noise raises steps: (bench label, run indexes, a regression)
FALSE_STEPS = {
    5: ("sum/n1000", [28], True),
    30: ("sum/n4000", [9], False),
    35: ("sum/n4000", [14, 24], True),
}


@pytest.mark.parametrize("seed", sorted({*range(12), *FALSE_STEPS}))
def test_the_same_history_without_the_step_raises_one_only_where_noise_does(
    tmp_path: Path, seed: int
) -> None:
    make_history(tmp_path, step_at=None, seed=seed)
    found = {
        s.label: [step.index for step in steps_of(s)] for s in bench_histories(saved_runs(tmp_path))
    }
    expected: dict[str, list[int]] = {label: [] for label in found}
    regression = False
    if seed in FALSE_STEPS:
        label, indexes, regression = FALSE_STEPS[seed]
        expected[label] = indexes
    assert found == expected
    assert history(tmp_path) == (1 if regression else 0)


def test_a_step_under_the_threshold_is_left_out(tmp_path: Path) -> None:
    make_history(tmp_path, step_at=20, step=0.03, noise=0.005)
    for series in bench_histories(saved_runs(tmp_path)):
        assert [s.index for s in find_steps(series.medians)] == [20]
        assert series.threshold == 0.05
        assert steps_of(series) == []
    assert history(tmp_path) == 0


def test_a_10_percent_improvement_is_not_a_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, step_at=20, step=-0.10)
    for steps in series_of(tmp_path).values():
        (step,) = steps
        assert step.index == 20
        assert step.change is not None
        assert step.change < 0
        assert not step.regression
    assert history(tmp_path) == 0
    assert "no regression step" in capsys.readouterr().out


def test_a_regression_step_fails_until_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, step_at=20, step=0.10)
    assert history(tmp_path) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out
    assert "accept a known change with perfsuite history --accept RUN" in out
    assert history(tmp_path, "--accept", commit_of(21)[:8]) == 0
    record = json.loads((tmp_path / "perfsuite-accepted.json").read_text())
    assert record[MACHINE_ID]["run"] == run_name(21)
    assert record[MACHINE_ID]["commit"] == commit_of(21)
    capsys.readouterr()
    assert history(tmp_path) == 0
    assert "(accepted)" in capsys.readouterr().out


def test_accepting_a_run_before_the_step_keeps_it_failing(tmp_path: Path) -> None:
    make_history(tmp_path, step_at=20, step=0.10)
    assert history(tmp_path, "--accept", "0010") == 0
    assert history(tmp_path) == 1


def test_a_run_number_without_its_zeros_names_the_run(tmp_path: Path) -> None:
    make_history(tmp_path, step_at=20, step=0.10)
    assert history(tmp_path, "--accept", "25") == 0
    record = json.loads((tmp_path / "perfsuite-accepted.json").read_text())
    assert record[MACHINE_ID]["run"] == run_name(24)
    assert history(tmp_path) == 0


def test_runs_of_another_stack_are_counted_as_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = make_history(tmp_path, step_at=None)
    for path in paths[3:6]:
        document = json.loads(path.read_text())
        document["machine_info"]["python_version"] = "3.9.18"
        path.write_text(json.dumps(document))
    assert history(tmp_path) == 0
    out = capsys.readouterr().out
    assert (
        f"left out 3 saved run(s) of another machine or stack than the newest run's "
        f"(the newest of them, {run_name(5)}: python 3.9 -> 3.11)"
    ) in out
    assert "27 runs" in out


def test_a_history_of_one_stack_leaves_nothing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, step_at=None)
    assert history(tmp_path) == 0
    assert "left out" not in capsys.readouterr().out


def test_an_accepted_run_pruned_from_the_storage_still_counts(tmp_path: Path) -> None:
    paths = make_history(tmp_path, step_at=20, step=0.10)
    assert history(tmp_path, "--accept", "0025") == 0
    paths[24].unlink()  # the accepted run itself is pruned (the workflow keeps the newest 60)
    assert history(tmp_path) == 0  # placed by the moment it was saved: after the step


def test_a_step_at_the_newest_run_fails(tmp_path: Path) -> None:
    make_history(tmp_path, nights=12, step_at=11, step=0.5, noise=0.02)
    for steps in series_of(tmp_path).values():
        assert steps[-1].index == 11
        assert steps[-1] in failing_steps(steps, accepted=None)
    assert history(tmp_path) == 1


def test_a_counter_rise_is_a_step_outright(tmp_path: Path) -> None:
    make_history(tmp_path, nights=8, step_at=None, counter_rise_at=5, noise=0.02)
    for steps in series_of(tmp_path).values():
        (step,) = steps
        assert step.index == 5
        assert step.regression
        assert step.what == "counter traces 1 -> 2"
    assert history(tmp_path) == 1


def test_k_selects_benches_and_series_prints_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, nights=6, step_at=None)
    # 6 runs: too few for a step search, so nothing is judged (exit 3), and it says so
    assert history(tmp_path, "-k", "small and not large", "--series") == 3
    out = capsys.readouterr().out
    assert "NOTHING JUDGED: no bench has the 8 comparable runs a step search needs" in out
    assert "sum/n1000: 6 runs" in out
    assert "n4000" not in out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("  ")] == [
        run_name(night) for night in range(6)
    ]


def test_a_storage_that_does_not_exist_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history(tmp_path / "nowhere") == 2
    assert f"--storage {tmp_path / 'nowhere'}: no such folder" in (capsys.readouterr().err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-k", "nothing_like_this"], "-k 'nothing_like_this': no saved bench matches"),
        (["-k", "small and ("], "-k 'small and (': not a valid expression"),
        (["--accept", "9999"], "--accept 9999: no saved run or commit matches"),
        (["--machine", "elsewhere"], "no saved runs of this machine"),
    ],
)
def test_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    make_history(tmp_path, nights=6, step_at=None)
    assert history(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_a_damaged_accepted_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, nights=6, step_at=None)
    (tmp_path / "perfsuite-accepted.json").write_text("{broken")
    assert history(tmp_path) == 2
    assert "perfsuite-accepted.json: cannot be read" in capsys.readouterr().err


def test_find_steps_on_constructed_series() -> None:
    assert find_steps([1.0] * 10) == []
    assert [s.index for s in find_steps([1.0] * 6 + [1.2] * 6)] == [6]
    assert find_steps([1.0, 2.0, 3.0]) == []  # too short to judge


def test_the_report_marks_the_steps(tmp_path: Path) -> None:
    from perfsuite.verdict.plots import _mark_steps, history_png, new_figure

    make_history(tmp_path, step_at=20, step=0.10)
    runs = saved_runs(tmp_path)
    name = bench_names()[0]
    axes = new_figure(6, 4).add_subplot(1, 1, 1)
    _mark_steps(axes, name, runs, [run.name for run in runs])
    (line,) = axes.get_lines()
    (step,) = series_of(tmp_path)[name]
    assert step.change is not None
    assert line.get_label() == f"step time +{step.change * 100:.0f}% at {step.after.run}"
    assert list(line.get_xdata()) == [step.index - 0.5, step.index - 0.5]
    assert line.get_color() == "#e63946"
    png = history_png(name, runs, runs[-1])
    assert png is not None
    assert png.startswith(b"\x89PNG")


def test_a_bench_too_short_to_search_says_so_not_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A series too short for a step search is not searched: its line says so, never
    ``newest step: none``, and the command judged nothing (exit 3)."""
    make_history(tmp_path, nights=1, step_at=None)
    assert history(tmp_path) == 3
    out = capsys.readouterr().out
    assert "sum/n1000: 1 run, newest" in out
    assert "newest step: not searched (a step search needs 8 runs)" in out
    assert "newest step: none" not in out
