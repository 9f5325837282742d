"""The gate's suspects of the same code (:mod:`perfsuite.suspects`), on constructed
comparisons: the A/B is replaced by one that answers each suspect from a table, so
what is asked of it (which benches, in how many A/Bs) and each row's outcome are
exact.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfsuite import suspects
from perfsuite.exitcodes import ExitCode
from perfsuite.outcomes import AbRun, decide, decide_all
from perfsuite.suspects import confirm_suspects
from perfsuite.verdict.gate_rules import gate_decision
from perfsuite.verdict.judge import CLEARED, CONFIRMED, NOT_SHOWN, UNCONFIRMED
from perfsuite.verdict.report import report_entry
from perfsuite.verdict.stats import Verdict
from tests.gate_fakes import HEAD, FakeAb, comparison, confirm, git_tells


def shifted(moved: int, flat: int, change: float = 0.08) -> dict[str, float]:
    """``moved`` benches ``change`` slower, ``flat`` unchanged benches at +4% (not slower)."""
    benches = {f"m{i}": change + i * 0.001 for i in range(moved)}
    return benches | {f"f{i}": 0.04 for i in range(flat)}


def test_a_cleared_sample_clears_the_suspects_of_the_same_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = shifted(8, 4)
    answers = dict.fromkeys(changes, "same")
    outcomes, fake, said = confirm(monkeypatch, tmp_path, changes, answers, known=True)
    assert fake.asked == [["m5", "m6", "m7"]]  # the three read most surely slower, one A/B
    assert outcomes == dict.fromkeys([f"m{i}" for i in range(8)], CLEARED)
    assert any(
        "the code of 8 suspect(s) is the same as at aaaaaaaaaaaa: the A/B measures the 3" in line
        for line in said
    )


def test_a_sample_not_shown_slower_leaves_the_rest_not_shown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = shifted(8, 4)
    answers = dict.fromkeys(changes, "same") | {"m6": "inconclusive"}
    found = comparison(changes)
    fake = FakeAb(answers)
    monkeypatch.setattr(suspects, "run_ab", fake)
    git_tells(monkeypatch)
    result, _ = confirm_suspects(
        found, HEAD, [], tmp_path, lambda name: tmp_path / name, lambda *_: [], print
    )
    rows = {v.fullname: v.confirmation for v in result.verdicts if v.confirmation is not None}
    assert len(fake.asked) == 1
    assert rows["m6"].outcome == rows["m0"].outcome == NOT_SHOWN  # within the threshold
    assert rows["m7"].outcome == CLEARED
    assert rows["m0"].text == (
        "not measured: its code is the same as at aaaaaaaaaaaa, and the A/B showed none "
        "slower of the 3 suspect(s) of the same code the screen read most surely slower "
        "(m7, m6, m5)"
    )
    decision = gate_decision(result, allow_mismatch=False)
    assert decision.exit_status == ExitCode.OK
    assert decision.message == (
        "no regression in 12 judged benches; 2 suspect(s) cleared (m5, m7); 1 suspect(s) not "
        "shown slower by their A/B (m6); 5 suspect(s) of unchanged code passed with those "
        "the A/B measured (m0, m1, m2, m3, m4)"
    )


@pytest.mark.parametrize("answer", ["slower", "beyond"])
def test_a_sample_not_cleared_leaves_the_rest_unconfirmed_in_one_ab(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: str
) -> None:
    changes = shifted(8, 4)
    answers = dict.fromkeys(changes, "same") | {"m7": answer}
    outcomes, fake, _ = confirm(monkeypatch, tmp_path, changes, answers, known=True)
    assert (fake.asked, fake.reports) == ([["m5", "m6", "m7"]], ["ab"])  # at most one A/B
    assert outcomes["m7"] == (CONFIRMED if answer == "slower" else UNCONFIRMED)
    assert {outcomes[f"m{i}"] for i in range(5)} == {UNCONFIRMED}


def test_a_peak_memory_that_rose_is_always_measured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from perfsuite.verdict.cost import MemoryChange

    found = comparison(shifted(8, 4))
    rose = MemoryChange(100.0, 500.0, 0.2)
    found = replace(
        found,
        verdicts=[replace(v, memory=rose) if v.fullname == "m0" else v for v in found.verdicts],
    )
    answers = dict.fromkeys(shifted(8, 4), "same") | {"m0": "same,same"}  # no peaks: again
    outcomes, fake, _ = confirm(monkeypatch, tmp_path, {}, answers, found=found, known=True)
    assert fake.asked[0] == ["m0", "m5", "m6", "m7"]
    assert outcomes["m1"] == CLEARED


def test_where_git_cannot_tell_every_suspect_is_measured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = shifted(8, 4)  # tmp_path is no git checkout: no bench is known to be the same
    outcomes, fake, said = confirm(monkeypatch, tmp_path, changes, dict.fromkeys(changes, "same"))
    assert [sorted(asked) for asked in fake.asked] == [[f"m{i}" for i in range(8)]]
    assert not any("is the same as at" in line for line in said)
    assert set(outcomes.values()) == {CLEARED}


def ab_with(row: dict[str, Any]) -> AbRun:
    return AbRun(("ab",), "perfsuite ab", 0, 1.0, {"b.py::x": {"nodeid": "b.py::x", **row}})


@pytest.mark.parametrize(
    ("ci", "outcome"),
    [
        ([-0.05, 0.06], NOT_SHOWN),  # rules out +10%: passes, saying +6%
        ([-0.05, 0.099], NOT_SHOWN),
        ([-0.05, 0.10], UNCONFIRMED),  # twice the threshold not ruled out: too noisy
        ([0.01, 0.14], UNCONFIRMED),
        (None, UNCONFIRMED),  # no interval: it says nothing
    ],
)
def test_an_undecided_ab_passes_only_with_a_bound_under_twice_its_threshold(
    ci: list[float] | None, outcome: str
) -> None:
    row = {"verdict": "inconclusive", "change": 0.03, "ci": ci, "threshold": 0.05}
    found = decide("b.py::x", ab_with(row | {"pairs": 72}))
    assert found.outcome == outcome
    assert not found.regressed if outcome == NOT_SHOWN else found.regressed
    if ci is not None:
        said = "no regression above" if outcome == NOT_SHOWN else "did not rule out"
        assert f"{said} {ci[1] * 100:+.1f}%" in found.text


def test_an_undecided_ab_is_held_to_its_own_threshold() -> None:
    """A bound of +41% is too noisy at the A/B's 5% whatever threshold the screen judged
    the bench at (the history may have widened it to 40%: that spread between runs is not
    in the A/B's evidence); +9% passes; a slower verdict confirms."""
    row = {"verdict": "inconclusive", "change": 0.01, "ci": [-0.12, 0.41], "threshold": 0.05}
    ab = ab_with(row | {"pairs": 12})
    found = decide("b.py::x", ab)
    assert found.outcome == UNCONFIRMED
    assert "did not rule out +41.0%, over twice the 5% threshold" in found.text
    assert decide_all("b.py::x", ab, ["time"]).outcome == UNCONFIRMED
    bounded = decide("b.py::x", ab_with(row | {"ci": [-0.06, 0.09], "pairs": 12}))
    assert bounded.outcome == NOT_SHOWN
    assert bounded.text.endswith("in 12 pairs; threshold 5%)")
    slower = ab_with(row | {"verdict": "slower", "ci": [0.06, 0.41], "pairs": 12})
    assert decide("b.py::x", slower).outcome == CONFIRMED


def test_a_suspect_the_ab_did_not_measure_again_is_unconfirmed_saying_why() -> None:
    said = "not measured again: the file's 68 s (--confirm-seconds) went to the suspects"
    row = {"verdict": "inconclusive", "change": 0.01, "ci": None, "pairs": 5, "status": said}
    found = decide("b.py::x", ab_with(row | {"threshold": 0.05}))
    assert found.outcome == UNCONFIRMED
    assert found.text == f"unconfirmed: {said}"


def test_a_cpu_suspect_is_held_to_the_same_bound() -> None:
    cpu = {"verdict": "inconclusive", "change": 0.108, "ci": [0.0, 0.2], "pairs": 7}
    row = {"verdict": "same", "change": 0.0, "threshold": 0.05, "pairs": 7, "cpu": cpu}
    assert decide("b.py::x", ab_with(row), "cpu").outcome == UNCONFIRMED
    cpu["ci"] = [-0.02, 0.07]
    assert decide("b.py::x", ab_with(row), "cpu").outcome == NOT_SHOWN


def test_a_peak_memory_suspect_takes_the_abs_two_peaks() -> None:
    rose = ab_with({"verdict": "same", "memory": {"a_mb": 10.0, "b_mb": 50.0, "rose": True}})
    flat = ab_with({"verdict": "same", "memory": {"a_mb": 40.0, "b_mb": 42.0, "rose": False}})
    assert decide("b.py::x", rose, "memory").outcome == CONFIRMED
    assert decide("b.py::x", flat, "memory").outcome == CLEARED
    assert decide("b.py::x", ab_with({"verdict": "same"}), "memory").outcome == UNCONFIRMED
    # slower in time and risen in memory: confirmed if either is
    both = decide_all("b.py::x", rose, ["time", "memory"])
    assert both.outcome == CONFIRMED
    assert "memory confirmed by A/B: peak 10 -> 50 MB" in both.text


def test_a_bench_whose_code_changed_fails_for_a_cpu_its_ab_confirmed_risen() -> None:
    """The gate's A/B of a changed file: the slowed bench's six fresh pairs read its time
    +10.5% [-2.0%, +24.6%] (one pair -2.6%), too noisy, and its CPU per call +14.8%,
    confirmed; `perfsuite ab` called it a regression. The changed bench fails the gate
    for it; a suspect by its time alone, whose code did not change, stays unconfirmed."""
    cpu = {"verdict": "slower", "change": 0.148, "ci": [0.03, 0.27], "pairs": 6}
    time = {"verdict": "inconclusive", "change": 0.105, "ci": [-0.02, 0.246], "pairs": 6}
    ab = AbRun(("ab",), "perfsuite ab", 1, 1.0, {"x": {"nodeid": "x", "threshold": 0.05}})
    ab.rows["x"] |= time | {"cpu": cpu, "memory": {"a_mb": 43.0, "b_mb": 44.0, "rose": False}}
    x = next(v for v in comparison({"x": 0.1, "y": 0.0}).verdicts if v.fullname == "x")
    changed = replace(x, changed="its code changed", suspected="its code changed")
    found = suspects._decide(changed, ab)
    assert found.outcome == CONFIRMED
    assert found.text == "cpu confirmed by A/B: +14.8% [+3.0%, +27.0%] in 6 pairs"
    assert found.cost  # its time was not confirmed: the row says its cost rose
    assert suspects._decide(x, ab).outcome == UNCONFIRMED
    ab.rows["x"]["cpu"] = cpu | {"verdict": "inconclusive"}  # nothing confirmed: as before
    assert suspects._decide(changed, ab).outcome == UNCONFIRMED
    ab.rows["x"]["cpu"] = cpu | {"verdict": "faster", "change": -0.148}  # a fall is no rise
    assert suspects._decide(changed, ab).outcome == UNCONFIRMED
    ab.rows["x"]["memory"] = {"a_mb": 43.0, "b_mb": 88.0, "rose": True}
    memory = suspects._decide(changed, ab)
    assert (memory.outcome, memory.text) == (
        CONFIRMED,
        "memory confirmed by A/B: peak 43 -> 88 MB",
    )
    ab.rows["x"]["cpu"] = cpu  # both risen: both named
    both = suspects._decide(changed, ab)
    assert both.text == (
        "cpu confirmed by A/B: +14.8% [+3.0%, +27.0%] in 6 pairs; "
        "memory confirmed by A/B: peak 43 -> 88 MB"
    )
    ab.rows["x"] |= {"verdict": "slower", "ci": [0.03, 0.18]}  # its time confirmed too
    assert not suspects._decide(changed, ab).cost


def test_a_changed_bench_whose_time_may_have_fallen_is_not_failed_for_its_cpu() -> None:
    """The gate's A/B of a changed file, a bench nothing slowed (a multi-threaded eager
    torch bench): its three fresh pairs read its CPU per call +13.5% [+3.5%, +24.4%],
    its time +7.2% [-38.0%, +85.3%]. A time that may have fallen by its threshold says
    nothing against the CPU's reading being the processes' modes, or a gain bought with
    cores: the bench stays as its time leaves it. A peak that rose still counts."""
    cpu = {"verdict": "slower", "change": 0.135, "ci": [0.035, 0.244], "pairs": 3}
    time = {"verdict": "inconclusive", "change": 0.072, "ci": [-0.38, 0.853], "pairs": 3}
    peaks = {"a_mb": 12.0, "b_mb": 12.0, "rose": False}
    row = {"nodeid": "x", "threshold": 0.05} | time | {"cpu": cpu, "memory": peaks}
    ab = AbRun(("ab",), "perfsuite ab", 1, 1.0, {"x": row})
    x = next(v for v in comparison({"x": 0.1, "y": 0.0}).verdicts if v.fullname == "x")
    changed = replace(x, changed="its code changed", suspected="its code changed")
    found = suspects._decide(changed, ab)
    assert found.outcome == UNCONFIRMED
    assert found.text.endswith(
        "; not counted, its time may have fallen by its threshold: "
        "cpu confirmed by A/B: +13.5% [+3.5%, +24.4%] in 3 pairs"
    )
    ab.rows["x"]["memory"] = {"a_mb": 12.0, "b_mb": 40.0, "rose": True}
    rose = suspects._decide(changed, ab)
    assert (rose.outcome, rose.text) == (CONFIRMED, "memory confirmed by A/B: peak 12 -> 40 MB")
    ab.rows["x"]["ci"] = [-0.049, 0.30]  # a gain of its 5% ruled out: the CPU counts too
    assert suspects._decide(changed, ab).text.startswith("cpu confirmed by A/B: +13.5%")


def test_a_gate_whose_suspects_were_not_shown_passes_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = {"x": 0.4} | {f"f{i}": 0.0 for i in range(3)}
    fake = FakeAb({"x": "inconclusive"})
    monkeypatch.setattr(suspects, "run_ab", fake)
    result, _ = confirm_suspects(
        comparison(changes), HEAD, [], tmp_path, lambda name: tmp_path / name, lambda *_: [], print
    )
    decision = gate_decision(result, allow_mismatch=False)
    assert decision.exit_status == ExitCode.OK
    assert "1 suspect(s) not shown slower by their A/B (x)" in decision.message


def test_a_too_noisy_suspect_is_unconfirmed_after_the_one_ab(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = {"x": 0.08, "y": 0.09, "f": 0.0}
    answers = {"x": "beyond", "y": "same"}
    outcomes, fake, _ = confirm(monkeypatch, tmp_path, changes, answers)
    assert fake.asked == [["x", "y"]]
    assert outcomes == {"x": UNCONFIRMED, "y": CLEARED}


def test_benches_whose_code_changed_join_the_one_ab_strict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes = shifted(8, 4) | {"c0": 0.0, "c1": 0.02}
    found = comparison(changes)
    edited = {"c0", "c1", "m7"}  # m7 moved most with the session, and its code changed
    found = replace(
        found,
        verdicts=[
            replace(v, changed="its code changed", suspected=v.suspected or "its code changed")
            if v.fullname in edited
            else v
            for v in found.verdicts
        ],
    )
    answers = dict.fromkeys(changes, "same") | {"c1": "slower"}
    outcomes, fake, _ = confirm(monkeypatch, tmp_path, changes, answers, found=found, known=True)
    # one A/B: the changed benches and the sample of the same code's, strict
    assert fake.asked == [["m4", "m5", "m6", "m7", "c0", "c1"]]
    assert fake.reports == ["ab"]
    assert fake.strict == [True]
    assert outcomes["c1"] == CONFIRMED
    assert outcomes["c0"] == outcomes["m0"] == CLEARED


@pytest.mark.parametrize(
    ("answer", "status"), [("slower", ExitCode.REGRESSION), ("same", ExitCode.OK)]
)
def test_an_ab_judges_a_bench_the_screen_could_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: str, status: ExitCode
) -> None:
    found = comparison({"x": 0.0, "y": 0.0})
    fallback = "rank test needs >= 7 rounds per side (has 3)"
    found = replace(
        found,
        verdicts=[
            replace(  # three rounds a side: no rank test and no interval
                v,
                time=replace(
                    v.time, verdict=Verdict.INCONCLUSIVE, p=None, ci=None, fallback=fallback
                ),
            )
            if v.time is not None
            else v
            for v in found.verdicts
        ],
    )
    assert gate_decision(found, allow_mismatch=False).exit_status == ExitCode.NOT_JUDGED
    x = next(v for v in found.verdicts if v.fullname == "x")
    changed = replace(x, changed="its code changed", suspected="its code changed")
    found = replace(found, verdicts=[changed, *found.verdicts[1:]])
    fake = FakeAb({"x": answer})
    monkeypatch.setattr(suspects, "run_ab", fake)
    result, _ = confirm_suspects(
        found, HEAD, [], tmp_path, lambda name: tmp_path / name, lambda *_: [], print
    )
    decision = gate_decision(result, allow_mismatch=False)
    assert (decision.exit_status, fake.asked) == (status, [["x"]])
    if status == ExitCode.OK:
        assert decision.message.startswith("no regression in 1 judged bench;")


def test_the_one_ab_report_is_kept_whole_and_a_missing_one_is_no_error(tmp_path: Path) -> None:
    report = tmp_path / "scratch" / "ab"
    (report / "plots").mkdir(parents=True)
    (report / "pairs.json").write_text("[]")
    (report / "plots" / "x.png").write_bytes(b"png")
    (report.parent / "ab.log").write_text("perfsuite ab: fresh pairs of processes: ...\n")
    suspects.keep_confirmations(report, tmp_path / "kept" / "confirmation")
    kept = tmp_path / "kept" / "confirmation"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
        "pairs.json",
        "plots",
        "plots/x.png",
    ]
    log = tmp_path / "kept" / "confirmation.log"
    assert log.read_text() == "perfsuite ab: fresh pairs of processes: ...\n"
    assert report_entry(log)  # the next report may replace it
    suspects.keep_confirmations(tmp_path / "never-written", tmp_path / "none")
    assert not (tmp_path / "none").exists()
    assert not (tmp_path / "none.log").exists()
