"""perfsuite ab end to end: real sides in a temporary git repository, tiny pure-Python benches."""

from __future__ import annotations

import json
import re
from pathlib import Path

from perfsuite.ab.revisions import WorktreeCache
from tests.ab_repo import (
    SIDE_ARGS,
    SMALL,
    make_repo,
    passed_unless_too_noisy,
    processes_with,
    read_log,
    table_rows,
)

LOOPS = 300_000
#: half the work a call (~8 ms), where the verdict is no `same`: a 3x slowdown, a risen counter
SHORT = LOOPS // 2
ONE_SIDE = "def test_{name}(perf):\n    perf.measure(lambda: sum(range(99)), items=1)\n"
#: room to decide `same` (exit 0, where an `inconclusive` is 3) on a busy machine
SAME = ["--max-pairs", "60"]


def _timed_rounds(log: list[tuple[str, int, str, float]]) -> list[tuple[str, float, float]]:
    """(tag, start, end) of each timed round, in start order."""
    starts: dict[tuple[str, int], float] = {}
    rounds = []
    for tag, pid, event, t in log:
        if event in ("start", "warm-start"):
            starts[(tag, pid)] = t
        else:
            rounds.append((tag if event == "end" else f"warm:{tag}", starts.pop((tag, pid)), t))
    return sorted(rounds, key=lambda r: r[1])


def test_lockstep_turns_order_and_a_slowdown(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(SHORT, "base")
    base = repo.commit("base")
    repo.set_work(3 * SHORT, "candidate")  # uncommitted: the working tree is the candidate
    log = tmp_path / "rounds.jsonl"
    report = tmp_path / "report"
    # one pair of processes (no confirmation), so the log holds one lockstep's rounds;
    # room for looks past 12 pairs, where a busy machine flips a few pairs of blocks
    args = [*SMALL, "--max-pairs", "24", "--confirm", "0", "--report", str(report), *SIDE_ARGS]
    result = repo.ab(base, *args, log=log)
    assert result.code == 1, result.out + result.err
    assert result.out.count("SLOWER") == 2
    assert "REGRESSION in 2 bench(es)" in result.out

    # Each side ran its own revision's code, and saved every round it timed.
    pairs = json.loads((report / "pairs.json").read_text())
    for side, tag in (("A", "base"), ("B", "candidate")):
        saved = json.loads((report / f"{side}.json").read_text())["benchmarks"]
        assert {b["extra_info"]["perfsuite"]["notes"]["impl"] for b in saved} == {tag}
        for bench in saved:
            run = next(p for p in pairs if p["nodeid"] == bench["fullname"])
            blocks = run["a_blocks"] if side == "A" else run["b_blocks"]
            assert bench["stats"]["data"] == [s for block in blocks for s in block]

    # Turn-taking: no round of one side (timed, drain or warm-up) overlaps one of the other.
    rounds = _timed_rounds(read_log(log))
    timed = [r for r in rounds if not r[0].startswith("warm:")]
    for tag, start, end in rounds:
        for other, o_start, o_end in rounds:
            if other.removeprefix("warm:") != tag.removeprefix("warm:"):
                assert end <= o_start or o_end <= start, (tag, other)

    # Balanced order: every two pairs are AB then BA or BA then AB; one block per turn.
    for run in pairs:
        order = "".join(run["order"])
        assert len(run["a_blocks"]) == len(run["b_blocks"]) >= 10
        assert all(len(block) == 3 for block in run["a_blocks"] + run["b_blocks"])
        for i in range(0, len(order) - 3, 4):
            assert order[i : i + 4] in ("ABBA", "BAAB"), order
    # every round the bench ran after its warm-up: the timed ones and each block's drain
    assert len(timed) == sum(3 * len(r["order"]) + sum(r["drained"]) for r in pairs)
    assert all(n >= 1 for r in pairs for n in r["drained"])
    # the pair's first bench has no set-up of its own (its way there is the start-up);
    # the next one's, from the first's end to both sides ready, holds both warm-ups
    first, second = sorted(pairs, key=lambda r: r["setup"])
    assert first["setup"] == 0
    assert second["setup"] >= sum(sum(rounds) for rounds in second["warmup"].values()) > 0

    # The report: Markdown table and a PNG per bench.
    summary = (report / "summary.md").read_text()
    assert "| `benches/bench_work.py::test_work[one]` | SLOWER |" in summary
    assert len(list(report.glob("*.png"))) == 2
    assert "passed" in (report / "B.log").read_text()
    # How busy the machine was: in the terminal, summary.md and machine.json alike.
    machine = json.loads((report / "machine.json").read_text())
    assert set(machine) == {"cpus", "seconds", "own", "other", "steal"}
    assert machine["cpus"] >= 1
    assert machine["seconds"] > 0
    assert machine["own"] > 0
    said = re.search(r"machine during the A/B \(\d+ s, \d+ CPUs\): this A/B \d+%", summary)
    assert said is not None
    assert f"perfsuite ab: {said.group(0)}" in result.out
    assert not list(tmp_path.glob(".report-*"))  # no temporary folder left beside it

    # Nothing left: no side process, no held lock, the candidate ran in the repository.
    assert processes_with(str(repo.cache)) == []
    assert not list(Path(repo.git("rev-parse", "--git-common-dir")).glob("worktrees/*/locked"))


def test_unchanged_passes_and_cached_worktrees_are_reused_then_cleaned(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(LOOPS, "same")
    base = repo.commit("base")
    repo.write("work.py", (repo.root / "work.py").read_text() + "# a comment only\n")
    head = repo.commit("comment")
    # A wide threshold: two processes of identical code can differ by a few percent on a
    # shared machine (see the README's A/B figures); this test is about the exit status
    # and the worktree cache, not about the statistics' power.
    result = repo.ab(base, head, *SMALL, *SAME, "--confirm", "0", "--threshold", "0.3", *SIDE_ARGS)
    passed_unless_too_noisy(result)
    cache = WorktreeCache(repo.root.resolve(), repo.cache / "perfsuite" / "ab")
    assert sorted(Path(p).name for p in repo.worktrees()) == sorted([base, head])
    (cache.path(base) / "stray.txt").write_text("left by a run")

    cleaned = repo.ab("--clean")
    assert cleaned.code == 0, cleaned.err
    assert "removed 2 cached worktree(s)" in cleaned.out
    assert repo.worktrees() == []
    assert not cache.folder.exists()


def test_added_removed_and_a_risen_counter(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(SHORT, "base")
    repo.write(
        "benches/bench_old.py",
        "def test_old(perf):\n    perf.measure(lambda: sum(range(99)), items=1)\n",
    )
    base = repo.commit("base")
    (repo.root / "benches/bench_old.py").unlink()
    repo.write(
        "benches/bench_new.py",
        "def test_new(perf):\n    perf.measure(lambda: sum(range(99)), items=1)\n",
    )
    repo.set_work(SHORT, "candidate", counter=2)
    result = repo.ab(base, *SMALL, "--confirm", "0", *SIDE_ARGS)
    assert result.code == 1, result.out + result.err
    assert re.search(r"bench_old.py::test_old +removed \(base only\)", result.out)
    assert re.search(r"bench_new.py::test_new +added \(candidate only\)", result.out)
    assert "calls_per_round 1 -> 2 ROSE" in result.out
    assert "(counter rose)" in result.out


def test_a_named_file_on_one_side_only_is_a_row_not_a_fault(tmp_path: Path) -> None:
    """``-- NEW KEPT``, NEW added by the candidate: each side collects what it has of
    the named files, so KEPT is judged and NEW is a row of its own."""
    repo = make_repo(tmp_path)
    repo.set_work(SHORT, "base")
    base = repo.commit("base")
    repo.write(
        "benches/bench_new.py",
        "def test_new(perf):\n    perf.measure(lambda: sum(range(99)), items=1)\n",
    )
    repo.commit("a new bench file")
    named = ["benches/bench_new.py", "benches/bench_work.py", "--perf-scale=smoke", "-q"]
    result = repo.ab(
        base, "HEAD", *SMALL, *SAME, "--threshold", "0.3", "--confirm", "0", "--", *named
    )
    # judged on both sides: a verdict or a bound, whichever a busy machine leaves
    passed_unless_too_noisy(result)
    judged = ["benches/bench_work.py::test_work[one]", "benches/bench_work.py::test_work[two]"]
    assert sorted(table_rows(result.out)) == judged
    assert re.search(r"bench_new.py::test_new +added \(candidate only\)", result.out)


def test_pytest_args_are_taken_from_the_folder_it_was_started_in(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.set_work(LOOPS, "same")
    base = repo.commit("base")
    # identical code: a 30% threshold keeps a per-process offset from flagging a suspect
    args = [
        *SMALL,
        *SAME,
        "--threshold",
        "0.3",
        "--",
        "bench_work.py",
        "-k",
        "one",
        "--perf-scale=smoke",
        "-q",
    ]
    result = repo.ab(base, *args, cwd=repo.root / "benches")
    passed_unless_too_noisy(result)
    assert list(table_rows(result.out)) == ["benches/bench_work.py::test_work[one]"]
    assert "test_work[two]" not in result.out
