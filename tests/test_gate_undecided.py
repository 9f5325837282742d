"""A gate has its A/B decide the benches its screen left too noisy
(:func:`perfsuite.verdict.shift.mark_undecided`), and passes those the screen bounded
under twice their threshold, on constructed comparisons and an A/B that answers from a
table: which benches are asked, and the gate's exit status."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from perfsuite import suspects
from perfsuite.changed import Changes
from perfsuite.exitcodes import ExitCode
from perfsuite.options import Spread, parse_spreads
from perfsuite.suspects import CONFIRM, confirm_suspects
from perfsuite.verdict.commits import Commit
from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.gate_rules import gate_decision
from perfsuite.verdict.shift import UNDECIDED_AT_MOST, mark_undecided
from perfsuite.verdict.stats import Comparison, Verdict
from tests.gate_fakes import HEAD, FakeAb, comparison, git_tells, verdict

#: what the rank test says of a baseline saved without its rounds
NO_SAMPLES = "baseline has no raw samples (save it with --benchmark-save-data)"


def undecided(
    changes: dict[str, float], fallback: str | None = None, spread: float = 0.15
) -> RunComparison:
    """Benches the screen read ``inconclusive`` (or could not test: ``fallback``), their
    intervals ``spread`` about their change: too noisy at a 5% threshold by default."""
    found = comparison(changes)
    verdicts = [
        replace(
            v,
            time=replace(
                v.time,
                verdict=Verdict.INCONCLUSIVE,
                p=0.3,
                fallback=fallback,
                ci=(v.time.change - spread, v.time.change + spread),
            ),
        )
        if v.time is not None
        else v
        for v in found.verdicts
    ]
    benches = {v.fullname: v.baseline for v in verdicts}
    return replace(
        found,
        baseline=replace(found.baseline, benches=benches),
        current=replace(found.current, benches=benches),
        verdicts=verdicts,
    )


def gated(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, found: RunComparison, answers: dict[str, str]
) -> tuple[ExitCode, str, FakeAb]:
    """The gate's exit status and line once ``found``'s suspects are decided, an A/B able
    to run (as in a git checkout holding the baseline's commit)."""
    fake = FakeAb(answers)
    monkeypatch.setattr(suspects, "run_ab", fake)
    monkeypatch.setattr(suspects, "cannot_run", lambda cwd, base: None)
    result, _ = confirm_suspects(
        found,
        HEAD,
        [],
        tmp_path,
        lambda name: tmp_path / name,
        lambda ids, why: ["--changed"] if why != CONFIRM else [],
        lambda line: None,
    )
    decision = gate_decision(result, allow_mismatch=False, bounds=True)
    return decision.exit_status, decision.message, fake


@pytest.mark.parametrize("fallback", [None, NO_SAMPLES], ids=["inconclusive", "no-raw-samples"])
def test_an_unchanged_rerun_the_screen_could_not_decide_passes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fallback: str | None
) -> None:
    found = undecided({"x": 0.03, "y": -0.02}, fallback)
    status, message, fake = gated(monkeypatch, tmp_path, found, {"x": "same", "y": "same"})
    assert (status, fake.asked, fake.reports, fake.strict) == (
        ExitCode.OK,
        [["x", "y"]],
        ["ab"],
        [True],
    )
    assert message.startswith("no regression in 2 judged benches;")


def test_the_ab_is_given_the_spread_of_each_benchs_unchanged_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02})
    spreads = {"x": 0.3}  # y: too short a history
    found = replace(
        found, verdicts=[replace(v, spread=spreads.get(v.fullname)) for v in found.verdicts]
    )
    status, _, fake = gated(monkeypatch, tmp_path, found, {"x": "same", "y": "same"})
    # each with the screen's reading of its time: +3%
    assert (status, fake.spreads) == (ExitCode.OK, [{"x": (0.3, math.log1p(0.03))}])


def test_the_spreads_go_to_the_ab_in_a_file_the_command_shown_leaves_out(tmp_path: Path) -> None:
    interpreter = list(suspects.AB_COMMAND[: suspects.AB_COMMAND.index("-m")])
    reads = "import sys; a = [x for x in sys.argv if x[:9] == '--spread='] or ['']; "
    reads += "print(a[0]); print(open(a[0][9:]).read() if a[0] else '')"
    echo = [*interpreter, "-c", reads]
    report, log = tmp_path / "ab", tmp_path / "ab.log"
    base = Commit("a" * 40, False)
    spreads: dict[str, Spread] = {"b.py::x": (0.3, 0.1)}
    ran = suspects.run_ab(
        base, ["b.py::x"], [], tmp_path, report, log, command=echo, refuse=None, spreads=spreads
    )
    argument, text = log.read_text().splitlines()
    assert argument.startswith("--spread=")
    assert json.loads(text) == {"b.py::x": [0.3, 0.1]}
    assert not Path(argument[9:]).exists()  # gone with the A/B
    assert "--spread" not in ran.shown
    suspects.run_ab(base, ["b.py::x"], [], tmp_path, report, log, command=echo, refuse=None)
    assert "--spread" not in log.read_text()


def test_a_slowdown_the_screen_could_not_decide_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02})
    status, message, _ = gated(monkeypatch, tmp_path, found, {"x": "slower", "y": "same"})
    assert status == ExitCode.REGRESSION
    assert message.startswith("1 regression: x (")


def test_a_regression_names_the_suspects_left_unconfirmed_beside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02, "z": 0.0})
    answers = {"x": "slower", "y": "beyond=0.05,beyond=0.05", "z": "same"}  # y: +11%
    status, message, _ = gated(monkeypatch, tmp_path, found, answers)
    assert status == ExitCode.REGRESSION
    regression, besides = message.split("; besides, ")
    assert regression.startswith("1 regression: x (")
    assert besides.startswith("1 suspect(s) could be neither confirmed nor cleared: y (")


def test_benches_the_ab_bounded_pass_and_too_noisy_ones_judge_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02})
    answers = {"x": "beyond=0.01", "y": "beyond=-0.02"}  # bounds +7% and +4%
    status, message, _ = gated(monkeypatch, tmp_path, found, answers)
    assert status == ExitCode.OK
    assert "2 suspect(s) not shown slower by their A/B (x, y)" in message
    answers = {"x": "beyond=0.05,beyond=0.05", "y": "beyond=0.05,beyond=0.05"}  # +11%
    status, message, _ = gated(monkeypatch, tmp_path, found, answers)
    assert status == ExitCode.NOT_JUDGED
    assert "the A/B did not decide them either (unconfirmed)" in message
    # the command that would decide them is said once, after both are named
    assert message.count("to confirm: ") == 1
    assert message.index("to confirm: ") > message.index("did not decide them either")


@pytest.mark.parametrize("answer", ["same", "beyond=0.05,beyond=0.05"], ids=["same", "noisy"])
def test_too_noisy_benches_of_unchanged_code_are_sampled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: str
) -> None:
    """Where git tells that no bench's code changed, the A/B measures the 3 too-noisy
    benches the screen read most surely slower, in its one A/B, and the rest pass or stay
    unconfirmed with them."""
    git_tells(monkeypatch)
    found = undecided({f"b{i}": i / 100 for i in range(6)})
    status, message, fake = gated(
        monkeypatch,
        tmp_path,
        found,
        dict.fromkeys(["b5"], "same") | dict.fromkeys(["b3", "b4"], answer),
    )
    assert (fake.asked, fake.strict) == ([["b3", "b4", "b5"]], [True])
    if answer == "same":
        assert status == ExitCode.OK
        assert message.endswith(
            "; 3 suspect(s) of unchanged code passed with those the A/B measured (b0, b1, b2)"
        )
    else:
        assert status == ExitCode.NOT_JUDGED
        assert message.startswith("5 suspect(s) could be neither confirmed nor cleared: ")
        # the three that followed the sample share one reason, said once after them
        assert message.count("did not clear all 3 suspect(s)") == 1
        assert "b0, b1, b2 (unconfirmed, not measured: its code is the same as at" in message


def test_every_too_noisy_bench_of_unchanged_code_passes_with_the_sample(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """More too-noisy benches than an A/B would take on its own: of unchanged code, each
    joins the sample's pool, so none is left too noisy and the gate passes with it."""
    git_tells(monkeypatch)
    names = [f"b{i:02}" for i in range(UNDECIDED_AT_MOST + 4)]
    found = undecided({name: i / 1000 for i, name in enumerate(names)})
    status, message, fake = gated(monkeypatch, tmp_path, found, dict.fromkeys(names, "same"))
    assert fake.asked == [names[-3:]]
    assert status == ExitCode.OK, message
    assert f"; {len(names) - 3} suspect(s) of unchanged code passed with those" in message


@pytest.mark.parametrize("dirty", [False, True], ids=["clean", "dirty-baseline"])
def test_where_only_documents_changed_too_noisy_benches_are_the_machines_move(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dirty: bool
) -> None:
    """Only documents changed since the baseline's commit: no A/B runs, and each bench the
    screen left too noisy passes as the machine's move, its bound stated; unless the
    baseline was saved from uncommitted changes, whose tree git cannot tell. A gate
    that judged none of its benches still does not pass."""
    git_tells(monkeypatch, ["README.md"], untouched=True)
    noisy = undecided({"x": 0.03, "y": -0.02}, spread=0.3)
    info = {"id": "a" * 40, "dirty": dirty}
    noisy = replace(noisy, baseline=replace(noisy.baseline, commit_info=info))
    found = replace(noisy, verdicts=[*noisy.verdicts, verdict("z", 0.0)])
    status, message, fake = gated(monkeypatch, tmp_path, found, dict.fromkeys("xyz", "same"))
    assert status == ExitCode.OK, message
    if dirty:
        assert fake.asked == [["x", "y"]]
        assert "the machine's" not in message
        return
    assert fake.asked == []
    assert message == (
        "no regression in 1 judged bench; 2 suspect(s) the machine's, no code or data "
        "changed (x: no regression above +33.0%, y: no regression above +28.0%)"
    )
    status, message, _ = gated(monkeypatch, tmp_path, noisy, {})
    assert status == ExitCode.NOT_JUDGED
    assert message == (
        "cannot judge: none of the 2 benches could be decided (every comparison "
        "inconclusive: x no regression above +33.0%, y no regression above +28.0%); more "
        "rounds (--perf-rounds) or a quieter machine would decide; a gate that judged "
        "nothing does not pass"
    )


def test_on_one_commit_too_noisy_benches_are_the_machines_move(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Both runs of one commit on a clean tree: no A/B, and the benches the screen left
    too noisy pass as the machine's move, each named with its bound."""
    noisy = undecided({"x": 0.03}, spread=0.3)
    noisy = replace(noisy, baseline=replace(noisy.baseline, commit_info=HEAD))
    found = replace(noisy, verdicts=[*noisy.verdicts, verdict("z", 0.0)])
    status, message, fake = gated(monkeypatch, tmp_path, found, {})
    assert (status, fake.asked) == (ExitCode.OK, [])
    assert message == (
        "no regression in 1 judged bench; 1 suspect(s) the machine's, both runs of one "
        "commit on a clean tree (x: no regression above +33.0%)"
    )


def test_a_screen_that_judged_a_bench_still_sends_its_too_noisy_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02})
    found = replace(found, verdicts=[*found.verdicts, *comparison({"z": 0.0}).verdicts])
    assert mark_undecided(found)[1] == {"x", "y"}
    status, message, fake = gated(monkeypatch, tmp_path, found, {"x": "same", "y": "same"})
    assert (status, fake.asked) == (ExitCode.OK, [["x", "y"]])
    assert message.startswith("no regression in 3 judged benches")


def test_benches_the_screen_bounded_pass_without_an_ab_saying_their_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = undecided({"x": 0.03, "y": -0.02}, spread=0.04)  # bounds +7% and +2%
    assert mark_undecided(found)[1] == set()
    status, message, fake = gated(monkeypatch, tmp_path, found, {})
    assert (status, fake.asked) == (ExitCode.OK, [])
    assert message == (
        "no regression in 0 judged benches; 2 with a bound under twice their threshold "
        "(x: no regression above +7.0%, y: no regression above +2.0%)"
    )


def test_without_an_ab_the_too_noisy_stay_undecided(tmp_path: Path) -> None:
    """``tmp_path`` is no git checkout: no A/B can run, and the gate refuses, naming each
    bench with its bound."""
    found = undecided({"x": 0.03, "y": -0.02})
    result, note = confirm_suspects(
        found, HEAD, [], tmp_path, lambda name: tmp_path / name, lambda *_: [], lambda _: None
    )
    assert (note, [v.suspect for v in result.verdicts]) == (None, [False, False])
    decision = gate_decision(result, allow_mismatch=False)
    assert decision.exit_status == ExitCode.NOT_JUDGED
    assert (
        "every comparison inconclusive: x no regression above +18.0%, "
        "y no regression above +13.0%" in decision.message
    )
    bounded = replace(
        found, verdicts=[*found.verdicts, *undecided({"z": 0.0}, spread=0.02).verdicts]
    )
    decision = gate_decision(bounded, allow_mismatch=False, bounds=True)
    assert decision.exit_status == ExitCode.NOT_JUDGED
    assert decision.message.startswith(
        "2 bench(es) too noisy to have caught a regression of twice their threshold: "
        "x (no regression above +18.0%, threshold 5%); y (no regression above +13.0%"
    )


def test_the_ab_decides_at_most_the_slowest_undecided() -> None:
    changes = {f"b{i:02}": i / 1000 for i in range(UNDECIDED_AT_MOST + 3)}
    marked, names = mark_undecided(undecided(changes))
    assert names == set(sorted(changes)[3:])
    why = next(v.suspected for v in marked.verdicts if v.fullname == "b18")
    assert why == (
        "too noisy on the screen (+1.8%, no regression above +16.8%); the A/B decides it"
    )


#: what the rank test says of 5 rounds a side
FEW_ROUNDS = "rank test needs >= 7 rounds per side to reach p < 0.002 (has 5)"


def few_rounds(change: float, spread: float) -> RunComparison:
    """One bench of 5 rounds a side: no rank test, but an interval."""
    found = undecided({"x": change}, FEW_ROUNDS, spread)
    verdicts = [replace(v, time=replace(v.time, p=None)) for v in found.verdicts if v.time]
    return replace(found, verdicts=verdicts)


def test_five_rounds_bound_a_bench_and_one_above_zero_is_a_suspect(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Five rounds a side: an interval within twice the threshold passes with its bound;
    one lying above 0 and past the threshold passes nowhere: too noisy for a plain
    comparison, a suspect the gate's A/B decides."""
    within = few_rounds(0.01, 0.05)  # [-4%, +6%]
    assert within.verdicts[0].bounded
    assert gate_decision(within, allow_mismatch=False).exit_status == ExitCode.OK
    above = few_rounds(0.06, 0.02)  # [+4%, +8%]: bound under 10%, yet above 0
    assert not above.verdicts[0].bounded
    assert above.verdicts[0].too_noisy
    assert gate_decision(above, allow_mismatch=False).exit_status == ExitCode.NOT_JUDGED
    status, _, fake = gated(monkeypatch, tmp_path, above, {"x": "slower"})
    assert fake.asked == [["x"]]
    assert status == ExitCode.REGRESSION


def test_only_the_bench_whose_code_changed_is_measured_the_rest_are_the_machines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One bench file changed, and with it one bench's code: the A/B measures that bench
    alone. The suspects and the too-noisy benches of code that did not change, with no
    data changed, move with the machine: each passes with its bound, and the gate names
    the confirmed regression alone."""
    noisy = undecided({"n": 0.03}, spread=0.3)
    found = replace(
        noisy, verdicts=[*noisy.verdicts, verdict("a", 0.10), verdict("b", 0.12), verdict("c", 0.0)]
    )
    changes = Changes(
        ("benches/c.py", "README.md"),
        {"c": "its code changed since the baseline: benches/c.py"},
        frozenset("abn"),
    )
    monkeypatch.setattr(suspects, "changed_benches", lambda nodeids, rootdir, sha: changes)
    status, message, fake = gated(monkeypatch, tmp_path, found, {"c": "slower"})
    assert fake.asked == [["c"]]
    assert status == ExitCode.REGRESSION
    assert message == "1 regression: c (confirmed by A/B: +0.0% [-6.0%, +6.0%] in 3 pairs)"
    status, message, fake = gated(monkeypatch, tmp_path, found, {"c": "same"})
    assert (status, fake.asked) == (ExitCode.OK, [["c"]])
    assert message == (
        "no regression in 3 judged benches; 1 suspect(s) cleared (c); 3 suspect(s) the "
        "machine's, no code or data changed (n: no regression above +33.0%, a: no regression "
        "above +12.0%, b: no regression above +14.0%)"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "cannot read"),
        ("{", "cannot read"),
        ('{"b.py::x": 0}', "is not an object of node ids to spreads > 0"),
        ("[0.3]", "is not an object of node ids to spreads > 0"),
        ('{"b.py::x": [0.3]}', "(or [spread, screen])"),
        ('{"b.py::x": [0.3, "up"]}', "(or [spread, screen])"),
        ('{"b.py::x": NaN}', "(or [spread, screen])"),
        ('{"b.py::x": [0.3, Infinity]}', "(or [spread, screen])"),
        ('{"b.py::x": [true, 0.1]}', "(or [spread, screen])"),
        ('{"b.py::x": 1' + "0" * 400 + "}", "(or [spread, screen])"),
    ],
    ids=[
        "missing",
        "torn",
        "zero",
        "list",
        "no-screen",
        "screen-text",
        "nan",
        "inf",
        "bool",
        "huge",
    ],
)
def test_a_spread_file_the_ab_cannot_use_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, why: str
) -> None:
    from perfsuite.cli import main

    file = tmp_path / "spread.json"
    if text is not None:
        file.write_text(text)
    with pytest.raises(SystemExit) as info:
        main(["ab", "HEAD", "--spread", str(file)])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    said = "cannot read " if text in (None, "{") else ""
    assert last.startswith(f"perfsuite ab: error: argument --spread: {said}{file}")
    assert why in last


def test_a_suspect_by_its_cost_that_is_the_machines_move_states_its_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only documents changed: a bench whose CPU per item rose, its time too noisy to
    decide, passes as the machine's move with its time's bound, as its row says."""
    git_tells(monkeypatch, ["README.md"], untouched=True)
    noisy = undecided({"w": 0.03}, spread=0.3)
    cpu = Comparison(Verdict.SLOWER, 0.2, (0.1, 0.3), 1e-4, 0.05, 10, 10)
    found = replace(noisy, verdicts=[replace(noisy.verdicts[0], cpu=cpu), verdict("z", 0.0)])
    assert found.verdicts[0].cpu_slower
    status, message, fake = gated(monkeypatch, tmp_path, found, {})
    assert fake.asked == []
    assert status == ExitCode.OK, message
    assert "the machine's, no code or data changed (w: no regression above +33.0%)" in message


def test_a_spread_file_gives_each_bench_its_spread_and_the_screens_reading(
    tmp_path: Path,
) -> None:
    file = tmp_path / "spread.json"
    file.write_text('{"b.py::x": 0.3, "b.py::y": [0.2, -0.05], "b.py::z": [0.1, null]}')
    assert parse_spreads(str(file)) == {
        "b.py::x": (0.3, None),
        "b.py::y": (0.2, -0.05),
        "b.py::z": (0.1, None),
    }
