"""``perfsuite nightly``: screening tonight's run, confirming suspects, exit codes.

The confirmation step runs ``perfsuite ab`` as a child process and reads only its exit
status and ``summary.md``; here a small script stands in for it on that contract (it
records its command line and exits with the status it is told to), so the nightly's
handling of each answer is tested without running benches of two commits.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.cli import build_parser, main
from perfsuite.nightly.command import run_nightly
from perfsuite.nightly.keywords import keyword_expression, split_k
from perfsuite.nightly.screen import MIN_NIGHTLY_HISTORY, Suspect, screen
from perfsuite.verdict.history import Series
from perfsuite.verdict.judge import HISTORY_RUNS, pair_spread
from perfsuite.verdict.runs import Run
from tests.test_history_data import (
    FIXTURE,
    MACHINE_ID,
    commit_of,
    derive_document,
    make_history,
    run_name,
    saved_runs,
)

pytest_plugins = ["pytester"]

AB_STANDIN = """
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
report = Path(args[args.index("--report") + 1])
report.mkdir(parents=True, exist_ok=True)
(report / "summary.md").write_text("# perfsuite ab\\n\\nab said " + os.environ["AB_STATUS"] + "\\n")
if os.environ.get("AB_PAIRS"):
    (report / "pairs.json").write_text(os.environ["AB_PAIRS"])
Path(os.environ["AB_LOG"]).write_text(json.dumps(args))
for spread in [a[len("--spread="):] for a in args if a.startswith("--spread=")]:
    Path(os.environ["AB_LOG"] + ".spread").write_text(Path(spread).read_text())
with open(os.environ["AB_LOG"] + "l", "a") as every:
    every.write(json.dumps(args) + "\\n")
sys.exit(int(os.environ["AB_STATUS"]))
"""


@pytest.fixture
def ab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    script = tmp_path / "ab_standin.py"
    script.write_text(AB_STANDIN)
    # where the nightly asks git about the tree: outside any checkout, not this one's state
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AB_LOG", str(tmp_path / "ab-args.json"))
    monkeypatch.setenv("AB_STATUS", "0")
    return [sys.executable, str(script)]


def nightly(storage: Path, ab: list[str], *args: str) -> int:
    parsed = build_parser().parse_args(["nightly", "--storage", str(storage), *args])
    return run_nightly(parsed, ab_command=ab)


def runs_of(storage: Path) -> list[Run]:
    return saved_runs(storage)


def test_an_unchanged_night_has_no_suspect_and_passes(tmp_path: Path, ab: list[str]) -> None:
    make_history(tmp_path, nights=15, step_at=None, noise=0.03)
    screening = screen(runs_of(tmp_path))
    assert screening.suspects == []
    assert screening.screened == 2
    assert nightly(tmp_path, ab) == 0
    assert not (tmp_path / "ab-args.json").exists()


def test_a_slow_night_is_a_suspect_confirmed_by_ab(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    make_history(
        store, nights=15, step_at=14, step=0.3, noise=0.03, only=["bench_tiny.py::test_sum[large]"]
    )
    screening = screen(runs_of(store))
    assert [s.label for s in screening.suspects] == ["sum/n4000"]
    monkeypatch.setenv("AB_STATUS", "1")
    report = tmp_path / "report"
    status = nightly(store, ab, "--report", str(report), "--", "benches", "--perf-scale=smoke")
    assert status == 1
    args = json.loads((tmp_path / "ab-args.json").read_text())
    spread = args.pop(2)  # the suspect's spread over the 14 nights before, in a file
    assert spread.startswith("--spread=")
    given = json.loads((tmp_path / "ab-args.json.spread").read_text())
    medians = screening.suspects[0].series.medians
    assert list(given) == [screening.suspects[0].series.fullname]
    across, moved = given[screening.suspects[0].series.fullname]
    assert across == pair_spread(medians[-HISTORY_RUNS - 1 : -1])
    assert moved == pytest.approx(math.log(medians[-1] / medians[-2]))  # tonight's step
    assert moved > math.log(1.2)
    assert args == [
        commit_of(13),
        commit_of(14),  # tonight's run's commit, not whatever HEAD is now
        "--report",
        str(report / "ab"),
        "--",
        "benches",
        "--perf-scale=smoke",
        "-k",
        "test_sum[large]",
    ]
    summary = (report / "summary.md").read_text()
    assert "Verdict: **FAILED**: perfsuite ab confirmed a regression" in summary
    assert "| sum/n4000 |" in summary
    assert "ab said 1" in summary


def test_a_suspect_whose_code_ran_last_night_is_read_from_the_ab_base(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Last night already ran tonight's commit (+3%), tonight is +8%: a step starting
    tonight, whose A/B starts at the last run of the code before it (night 13), not at
    last night. The screen's reading sent with the spread is tonight's median over that
    run's, the move the A/B measures, not tonight's over last night's."""
    store = tmp_path / "store"
    base = json.loads(FIXTURE.read_text())
    large = "bench_tiny.py::test_sum[large]"
    levels = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.01]
    levels += [1.03, 1.08]  # last night, then tonight: one commit
    (store / MACHINE_ID).mkdir(parents=True)
    for night, level in enumerate(levels):
        doc = derive_document(base, night, {large: level}, {"traces": 1})
        if night == len(levels) - 2:
            doc["commit_info"]["id"] = commit_of(len(levels) - 1)
        (store / MACHINE_ID / f"{run_name(night)}.json").write_text(json.dumps(doc))
    screening = screen(runs_of(store))
    [suspect] = screening.suspects
    assert suspect.reason.startswith("a step starts tonight")
    assert [run.name for run, _ in screening.groups] == [run_name(13)]
    monkeypatch.setenv("AB_STATUS", "1")
    assert nightly(store, ab) == 1
    args = json.loads((tmp_path / "ab-args.json").read_text())
    assert args[:2] == [commit_of(13), commit_of(15)]
    [(across, moved)] = json.loads((tmp_path / "ab-args.json.spread").read_text()).values()
    medians = suspect.series.medians
    assert across == pair_spread(medians[-HISTORY_RUNS - 1 : -1])
    assert moved == pytest.approx(math.log(medians[-1] / medians[-3]))
    assert moved != pytest.approx(math.log(medians[-1] / medians[-2]))


def test_a_suspect_ab_does_not_confirm_passes(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_history(tmp_path, nights=15, step_at=14, step=0.3, noise=0.03)
    monkeypatch.setenv("AB_STATUS", "0")
    assert nightly(tmp_path, ab, "--", "-k", "sum") == 0
    args = json.loads((tmp_path / "ab-args.json").read_text())
    assert args[-2:] == ["-k", "(sum) and (test_sum[large] or test_sum[small])"]


def test_an_ab_fault_exits_2(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_history(tmp_path, nights=15, step_at=14, step=0.3, noise=0.03)
    monkeypatch.setenv("AB_STATUS", "2")
    assert nightly(tmp_path, ab) == 2


def test_no_confirm_lists_suspects_and_says_they_are_unconfirmed(
    tmp_path: Path, ab: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    make_history(tmp_path, nights=15, step_at=14, step=0.3, noise=0.03)
    assert nightly(tmp_path, ab, "--no-confirm") == 3
    assert not (tmp_path / "ab-args.json").exists()
    assert "**UNCONFIRMED**: 2 suspect(s) could not be confirmed (--no-confirm)" in (
        capsys.readouterr().out
    )


def test_an_ab_that_judged_nothing_leaves_the_suspects_unconfirmed(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_history(tmp_path, nights=15, step_at=14, step=0.3, noise=0.03)
    monkeypatch.setenv("AB_STATUS", "3")
    assert nightly(tmp_path, ab) == 3


def test_a_risen_counter_fails_without_confirmation(tmp_path: Path, ab: list[str]) -> None:
    make_history(tmp_path, nights=6, step_at=None, counter_rise_at=5, noise=0.02)
    screening = screen(runs_of(tmp_path))
    assert [c.reason for c in screening.counters] == ["exact counter rose: traces 1 -> 2"] * 2
    assert nightly(tmp_path, ab, "--no-confirm") == 1


def test_too_little_history_screens_against_the_previous_run(tmp_path: Path) -> None:
    nights = MIN_NIGHTLY_HISTORY  # tonight plus MIN_NIGHTLY_HISTORY - 1 earlier runs
    make_history(tmp_path, nights=nights, step_at=nights - 1, step=0.08, noise=0.0)
    screening = screen(runs_of(tmp_path))
    assert sorted(screening.short_history) == ["sum/n1000", "sum/n4000"]
    assert len(screening.suspects) == 2
    assert "against the previous run" in screening.suspects[0].reason
    make_history(tmp_path / "below", nights=nights, step_at=nights - 1, step=0.04, noise=0.0)
    # +4% is no move past the threshold; but 7 rounds a side with one far-off round
    # (tiny_run.json's) cannot rule out twice it: a suspect by its bound, for the A/B
    below = screen(runs_of(tmp_path / "below")).suspects
    assert len(below) == 2
    for suspect in below:
        assert suspect.reason.startswith("too noisy tonight: no regression above +"), suspect
        assert suspect.compared_from == nights - 2  # the previous run alone


def test_the_same_commit_is_not_sent_to_ab(
    tmp_path: Path, ab: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = make_history(tmp_path, nights=15, step_at=14, step=0.3, noise=0.03)
    last = json.loads(paths[-1].read_text())
    last["commit_info"]["id"] = commit_of(13)
    paths[-1].write_text(json.dumps(last))
    assert nightly(tmp_path, ab) == 0
    assert not (tmp_path / "ab-args.json").exists()
    assert "no code change to confirm" in capsys.readouterr().out


def test_one_commit_with_untracked_python_files_is_unconfirmed(
    tmp_path: Path,
    ab: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = make_history(tmp_path / "store", nights=15, step_at=14, step=0.3, noise=0.03)
    last = json.loads(paths[-1].read_text())
    last["commit_info"]["id"] = commit_of(13)
    paths[-1].write_text(json.dumps(last))
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    (checkout / "mylib.py").write_text("SIZE = 2\n")
    monkeypatch.chdir(checkout)
    assert nightly(tmp_path / "store", ab) == 3
    assert not (tmp_path / "ab-args.json").exists()
    out = capsys.readouterr().out
    assert "1 Python file(s) git does not track (mylib.py)" in out
    assert "no code change to confirm" not in out


def test_a_bench_with_no_earlier_point_is_not_screened(
    tmp_path: Path, ab: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Tonight alone (the first run, every bench renamed, a new machine or stack) screens
    nothing: the nightly judged nothing, exit 3, never `passed`."""
    make_history(tmp_path, nights=1, step_at=None)
    screening = screen(runs_of(tmp_path))
    assert (screening.screened, sorted(screening.unscreened)) == (0, ["sum/n1000", "sum/n4000"])
    assert nightly(tmp_path, ab) == 3
    out = capsys.readouterr().out
    assert "NOTHING JUDGED" in out
    assert "2 benches of tonight have no earlier comparable run" in out


def test_the_ab_starts_at_the_suspects_previous_point(tmp_path: Path, ab: list[str]) -> None:
    """A run that skipped the bench (``-k``) after its step is no point of its series:
    the A/B starts from the run before the step, or it would hold the step on both
    sides."""
    slowed = "bench_tiny.py::test_sum[large]"
    paths = make_history(tmp_path, nights=15, step_at=13, step=0.3, noise=0.03, only=[slowed])
    partial = json.loads(paths[13].read_text())
    partial["benchmarks"] = [b for b in partial["benchmarks"] if b["fullname"] != slowed]
    paths[13].write_text(json.dumps(partial))
    screening = screen(runs_of(tmp_path))
    assert [s.label for s in screening.suspects] == ["sum/n4000"]
    assert screening.base is not None
    assert screening.base.commit_info["id"] == commit_of(12)
    assert nightly(tmp_path, ab) == 0
    args = json.loads((tmp_path / "ab-args.json").read_text())
    assert args[:2] == [commit_of(12), commit_of(14)]


def test_suspects_screened_against_different_runs_get_an_ab_each(
    tmp_path: Path, ab: list[str]
) -> None:
    """One bench skipped last night, so it was screened against the night before: its
    A/B starts there, the other suspect's at last night, each over its own suspect."""
    store, report = tmp_path / "store", tmp_path / "report"
    paths = make_history(store, nights=15, step_at=14, step=0.3, noise=0.03)
    large = "bench_tiny.py::test_sum[large]"
    partial = json.loads(paths[13].read_text())
    partial["benchmarks"] = [b for b in partial["benchmarks"] if b["fullname"] != large]
    paths[13].write_text(json.dumps(partial))
    screening = screen(runs_of(store))
    groups = [(run.name, [s.label for s in found]) for run, found in screening.groups]
    assert groups == [(run_name(12), ["sum/n4000"]), (run_name(13), ["sum/n1000"])]
    assert nightly(store, ab, "--report", str(report)) == 0
    calls = [json.loads(line) for line in (tmp_path / "ab-args.jsonl").read_text().splitlines()]
    calls = [[a for a in c if not a.startswith("--spread=")] for c in calls]  # each's spread
    assert [(c[0], c[1], c[3], c[-1]) for c in calls] == [
        (commit_of(12), commit_of(14), str(report / "ab-0013"), "test_sum[large]"),
        (commit_of(13), commit_of(14), str(report / "ab-0014"), "test_sum[small]"),
    ]
    summary = (report / "summary.md").read_text()
    assert f"From `{run_name(12)}`: sum/n4000." in summary
    assert f"From `{run_name(13)}`: sum/n1000." in summary
    assert "passed: 2 suspects, perfsuite ab found no regression" in summary


def test_one_group_is_confirmed_while_the_other_is_the_machines(
    tmp_path: Path, ab: list[str]
) -> None:
    """Last night ran tonight's commit: the suspect screened against it moved with the
    machine; the one screened against the night before is A/B'd."""
    store = tmp_path / "store"
    paths = make_history(store, nights=15, step_at=14, step=0.3, noise=0.03)
    large = "bench_tiny.py::test_sum[large]"
    partial = json.loads(paths[13].read_text())
    partial["benchmarks"] = [b for b in partial["benchmarks"] if b["fullname"] != large]
    partial["commit_info"]["id"] = commit_of(14)
    paths[13].write_text(json.dumps(partial))
    assert nightly(store, ab) == 0
    calls = (tmp_path / "ab-args.jsonl").read_text().splitlines()
    assert [json.loads(c)[:2] for c in calls] == [[commit_of(12), commit_of(14)]]


def _checkout(folder: Path) -> str:
    """A git checkout of one commit in ``folder``; its commit id."""
    folder.mkdir()
    for command in (
        ["git", "init", "-q"],
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "tonight",
        ],
    ):
        subprocess.run(command, cwd=folder, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True)
    return head.stdout.strip()


@pytest.mark.parametrize("head_moved", [False, True])
def test_a_run_of_uncommitted_changes_is_measured_as_the_working_tree(
    tmp_path: Path,
    ab: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    head_moved: bool,
) -> None:
    """Tonight's run measured uncommitted changes: its commit does not hold them, so
    the A/B measures the working tree where HEAD is still that commit, and otherwise
    leaves the suspect unconfirmed, saying which tree to check out."""
    head = _checkout(tmp_path / "checkout")
    paths = make_history(tmp_path / "store", nights=15, step_at=14, step=0.3, noise=0.03)
    last = json.loads(paths[-1].read_text())
    last["commit_info"].update(id=commit_of(14) if head_moved else head, dirty=True)
    paths[-1].write_text(json.dumps(last))
    monkeypatch.chdir(tmp_path / "checkout")
    status = nightly(tmp_path / "store", ab)
    out = capsys.readouterr().out
    if head_moved:
        assert status == 3
        assert not (tmp_path / "ab-args.json").exists()
        assert (
            f"tonight's run measured uncommitted changes to {commit_of(14)[:12]}, which no "
            f"revision here holds (HEAD is {head[:12]}): check that tree out and run "
            f"perfsuite ab {commit_of(13)[:12]}"
        ) in out
    else:
        assert status == 0
        args = json.loads((tmp_path / "ab-args.json").read_text())
        args = [a for a in args if not a.startswith("--spread=")]  # its spread, if any
        assert args[:2] == [commit_of(13), "--report"]  # B: the working tree
        assert "against the working tree" in out


@pytest.mark.parametrize("changed", ["README.md", "labels.json", "README.md+untracked"])
def test_a_night_whose_commit_changed_only_documents_is_the_machines(
    tmp_path: Path,
    ab: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    changed: str,
) -> None:
    """Between last night's commit and tonight's only a document changed: no bench's
    code or data did, so tonight's move is the machine's and no A/B runs; a data file
    changed instead, or a Python file git does not track beside the document, is
    A/B'd."""
    last_night = _checkout(tmp_path / "checkout")
    folder = tmp_path / "checkout"
    (folder / changed.split("+")[0]).write_text("edited\n")
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", *who, "commit", "-q", "-m", "edit"], cwd=folder, check=True)
    tonight = _checkout_head(folder)
    paths = make_history(tmp_path / "store", nights=15, step_at=14, step=0.3, noise=0.03)
    for path, sha in ((paths[-2], last_night), (paths[-1], tonight)):
        run = json.loads(path.read_text())
        run["commit_info"].update(id=sha, dirty=False)
        path.write_text(json.dumps(run))
    if changed.endswith("+untracked"):
        (folder / "helper.py").write_text("SIZE = 1\n")
    monkeypatch.chdir(folder)
    status = nightly(tmp_path / "store", ab)
    out = capsys.readouterr().out
    assert status == 0, out
    if changed == "README.md":
        assert not (tmp_path / "ab-args.json").exists()
        assert f"only documents changed since commit {last_night[:12]} (README.md)" in out
    else:
        args = json.loads((tmp_path / "ab-args.json").read_text())
        assert args[0] == last_night


def _checkout_head(folder: Path) -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True)
    return head.stdout.strip()


def test_an_unreadable_newest_run_is_refused_not_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreadable run sorts newest (its date cannot be read): it may be tonight's, so
    the history and the nightly name it and stop (exit 2) rather than judge without it."""
    paths = make_history(tmp_path, nights=10, step_at=None)
    for broken in (paths[-1], paths[5]):
        broken.write_text(broken.read_text()[:100])
        for command in ("history", "nightly"):
            assert main([command, "--storage", str(tmp_path)]) == 2
            err = capsys.readouterr().err
            assert f"{broken}: truncated JSON" in err, err
        broken.unlink()


def test_no_saved_runs_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nightly", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "perfsuite nightly: error: " in err
    assert "no saved runs of this machine" in err


def test_split_k_and_keyword_expression() -> None:
    assert split_k(["benches", "-k", "tfdata", "-x"]) == (["benches", "-x"], "tfdata")
    assert split_k(["-ktfdata"]) == ([], "tfdata")


ODD_IDS = """
import pytest

IDS = ["two blocks", "a/b", "x=(1, 2)", "c or d", "two"]

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5], ids=IDS)
def test_hash(n):
    pass

def test_sort():
    pass
"""


def suspect_named(nodeid: str) -> Suspect:
    return Suspect(Series(nodeid, nodeid, "s", 0.05, ()), "constructed", 0.1)


@pytest.mark.parametrize(
    "wanted",
    [
        ["test_hash[two blocks]", "test_hash[a/b]"],
        ["test_hash[x=(1, 2)]", "test_hash[c or d]"],
        ["test_hash[two]", "test_sort"],
    ],
)
def test_the_suspects_keyword_selects_them_whatever_their_ids_hold(
    pytester: pytest.Pytester, wanted: list[str]
) -> None:
    """pytest itself, given the nightly's ``-k``, collects exactly the suspects."""
    pytester.makepyfile(test_odd=ODD_IDS)
    expression = keyword_expression([suspect_named(f"test_odd.py::{name}") for name in wanted])
    result = pytester.runpytest_subprocess(
        "--collect-only", "-q", "-p", "no:perfsuite", "-k", expression
    )
    assert result.ret == 0, result.outlines
    collected = {line.split("::", 1)[1] for line in result.outlines if "::" in line}
    assert collected == set(wanted)


def test_the_ab_child_keeps_every_line_it_printed_when_it_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perfsuite.suspects import AB_COMMAND

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    interpreter = list(AB_COMMAND[: AB_COMMAND.index("-m")])
    dies = "import os, signal; print('measured 3 of 5'); os.kill(os.getpid(), signal.SIGKILL)"
    log = tmp_path / "ab.log"
    with log.open("wb") as out:
        subprocess.run([*interpreter, "-c", dies], stdout=out, check=False)
    assert log.read_text() == "measured 3 of 5\n"


def test_the_summary_gives_every_bench_its_bound(
    tmp_path: Path, ab: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No suspect: each bench's row says ``same`` or the largest regression tonight did
    not rule out, and the verdict line counts them; a short history is bounded by
    tonight's rounds against the previous run's."""
    make_history(tmp_path / "long", nights=15, step_at=None, noise=0.03)
    report = tmp_path / "report"
    assert nightly(tmp_path / "long", ab, "--report", str(report)) == 0
    summary = (report / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| sum/")]
    assert len(rows) == 2, summary
    for row in rows:
        assert "| same |" in row or "| no regression above +" in row, row
    verdict = next(line for line in summary.splitlines() if line.startswith("Verdict: "))
    assert verdict.startswith("Verdict: passed: no suspect among 2 benches; ")
    assert "judged at their threshold" in verdict
    capsys.readouterr()
    # tiny_run.json's first 5 rounds of each bench, its steady ones
    keep_rounds(make_history(tmp_path / "short", nights=3, step_at=None, noise=0.0), 5)
    assert nightly(tmp_path / "short", ab) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| sum/")]
    assert len(rows) == 2, out
    for row in rows:
        assert "| same |" in row or "| no regression above +" in row, row
    assert "no bound" not in out, out
    assert "without a bound" not in out, out
    assert "their bound is the interval of tonight's rounds against that run's" in out
    # too few rounds for an interval, too few runs for a band: no bound, counted
    keep_rounds(make_history(tmp_path / "few", nights=3, step_at=None, noise=0.0), 4)
    assert nightly(tmp_path / "few", ab) == 0
    out = capsys.readouterr().out
    no_bound = "| no bound: 2 earlier runs (a noise band needs 5) and fewer than 5 saved rounds"
    assert out.count(no_bound) == 2, out
    assert "2 without a bound yet (fewer than 5 earlier runs since their last step" in out


def keep_rounds(paths: list[Path], rounds: int) -> None:
    """Keep the first ``rounds`` raw rounds of each bench of the saved runs ``paths``."""
    for path in paths:
        document = json.loads(path.read_text())
        for bench in document["benchmarks"]:
            bench["stats"]["data"] = bench["stats"]["data"][:rounds]
        path.write_text(json.dumps(document))


def test_each_suspects_row_is_its_ab_row_and_one_left_undecided_is_unconfirmed(
    tmp_path: Path, ab: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The A/B's row for a suspect decides it, as the gate's do: ``same`` clears it,
    an interval that does not rule out twice its threshold leaves it unconfirmed, and
    then the night is not passed, whatever the A/B's own exit status."""
    store = tmp_path / "store"
    make_history(
        store, nights=15, step_at=14, step=0.3, noise=0.03, only=["bench_tiny.py::test_sum[large]"]
    )
    row = {"nodeid": "bench_tiny.py::test_sum[large]", "threshold": 0.05, "pairs": 12}
    same = {**row, "verdict": "same", "change": 0.01, "ci": [-0.02, 0.03]}
    monkeypatch.setenv("AB_PAIRS", json.dumps([same]))
    report = tmp_path / "report"
    assert nightly(store, ab, "--report", str(report)) == 0
    summary = (report / "summary.md").read_text()
    assert "| slower? cleared: cleared by A/B (same): +1.0% [-2.0%, +3.0%] in 12 pairs |" in (
        summary
    ), summary
    noisy = {**row, "verdict": "inconclusive", "change": 0.04, "ci": [-0.05, 0.14]}
    monkeypatch.setenv("AB_PAIRS", json.dumps([noisy]))
    assert nightly(store, ab, "--report", str(report)) == 3
    summary = (report / "summary.md").read_text()
    assert "Verdict: **UNCONFIRMED**: 1 suspect(s) could not be confirmed" in summary
    assert "| SLOWER? unconfirmed: unconfirmed: A/B too noisy (+4.0% [-5.0%, +14.0%]" in summary
