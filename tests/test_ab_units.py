"""perfsuite ab's small parts: argument handling, block order, drain, pins, the worktree cache."""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from perfsuite.ab.budget import (
    CHANGED_FILE_SECONDS,
    CHANGED_SUSPECTS,
    DECIDE_SECONDS,
    GATE_SUSPECTS,
    MIN_BENCH_SECONDS,
    MIN_SHARE,
    SESSION_SECONDS,
    budget_for,
    confirmation_for,
    gate_args,
    session_budget,
)
from perfsuite.ab.protocol import ProtocolError, decode, encode, pair_orders
from perfsuite.ab.remote import DRAIN_MAX_ROUNDS, drain
from perfsuite.ab.revisions import Revision, WorktreeCache, _git, resolve, tree_files
from perfsuite.ab.sidespec import side_pythonpath
from perfsuite.envs.pins import Pins, pin_difference, read_pins
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.paired import Budget, Sequential
from perfsuite.verdict.signtest import min_pairs_for


def _args(**values: int | float | str | None) -> argparse.Namespace:
    base: dict[str, int | float | str | None] = {"min_pairs": None, "max_pairs": None}
    base.update(max_seconds=None, confirm_seconds=None, suspects=None)
    return argparse.Namespace(**{**base, **values})


def test_budget_defaults_per_scale_and_validation() -> None:
    budget = budget_for(_args(), "default")
    assert (budget.min_pairs, budget.max_pairs, budget.max_seconds) == (12, 480, 60.0)
    assert budget_for(_args(), "full").max_pairs == 960
    assert budget_for(_args(), "smoke").looks == [10, 14, 18, 20]
    with pytest.raises(PerfsuiteError, match="--max-pairs 5 is below --min-pairs 8"):
        budget_for(_args(min_pairs=8, max_pairs=5), "smoke")
    with pytest.raises(PerfsuiteError, match="no verdict is possible below 9 pairs"):
        budget_for(_args(min_pairs=4, max_pairs=8), "smoke")


def test_confirm_seconds_default_by_scale_unless_given() -> None:
    assert [confirmation_for(_args(), s).confirm_seconds for s in ("smoke", "default", "full")] == [
        20.0,
        300.0,
        900.0,
    ]
    assert confirmation_for(_args(confirm_seconds=45.0), "full").confirm_seconds == 45.0


def test_suspects_default_by_scale_unless_given() -> None:
    kinds = [confirmation_for(_args(), s).suspects for s in ("smoke", "default", "full")]
    assert kinds == ["leaning-slower", "undecided", "undecided"]
    assert confirmation_for(_args(suspects="leaning"), "full").suspects == "leaning"
    assert confirmation_for(_args(suspects="undecided"), "smoke").suspects == "undecided"


def test_gate_ab_confirms_only_leans_slower_unless_the_user_chose() -> None:
    args = gate_args([], ["a.py::x"], 300.0, "default")
    assert GATE_SUSPECTS == "leaning-slower"
    assert "--suspects=leaning-slower" in args
    chosen = gate_args(["--suspects", "undecided"], ["a.py::x"], 300.0, "default")
    assert chosen[:2] == ["--suspects", "undecided"]
    assert not any(arg.startswith("--suspects=") for arg in chosen)


def test_a_gate_ab_that_must_decide_shares_at_least_decide_seconds() -> None:
    nodeids = ["a.py::x", "b.py::y"]
    # a gated run of 6 s: half of it is under the least share, which two benches split
    assert gate_args([], nodeids, 6.0, "default")[:2] == [
        f"--max-seconds={MIN_SHARE / 2:.0f}",
        "--confirm-seconds=20",
    ]
    decide = gate_args([], nodeids, 6.0, "default", "undecided", screen_decided_none=True)
    each = DECIDE_SECONDS / 2
    assert decide == [
        f"--max-seconds={each:.0f}",
        f"--confirm-seconds={each:.0f}",
        "--suspects=undecided",
    ]
    # a long run's own share is larger, and many benches still get the least budget each
    assert gate_args([], nodeids, 600.0, "default", screen_decided_none=True)[:2] == [
        "--max-seconds=60",
        "--confirm-seconds=150",
    ]
    many = [f"f{i}.py::t" for i in range(40)]
    assert gate_args([], many, 6.0, "default", screen_decided_none=True)[:2] == [
        "--max-seconds=10",
        "--confirm-seconds=20",
    ]


def test_changed_code_first_stage_shares_half_and_its_confirmation_the_whole() -> None:
    # 16 benches of one changed function after a 284-s gated run: a share of 142 s
    function = [f"bench_r.py::test_r[{i}]" for i in range(16)]
    changed = gate_args([], function, 284.0, "default", CHANGED_SUSPECTS)
    assert changed == ["--max-seconds=4", "--confirm-seconds=142", "--suspects=undecided"]
    # the screen's suspects keep the whole share and its floor for their first stage
    suspects = gate_args([], function, 284.0, "default")
    assert suspects[:2] == [f"--max-seconds={MIN_BENCH_SECONDS:.0f}", "--confirm-seconds=142"]
    # many changed benches: each still alternates a fresh pair's seconds, and their
    # file confirms at least CHANGED_FILE_SECONDS
    many = gate_args([], function * 4, 60.0, "default", CHANGED_SUSPECTS)
    assert many[:2] == [
        f"--max-seconds={SESSION_SECONDS:.0f}",
        f"--confirm-seconds={CHANGED_FILE_SECONDS:.0f}",
    ]
    # one changed bench: the first stage is capped by the scale, as before
    assert gate_args([], function[:1], 284.0, "default", CHANGED_SUSPECTS)[0] == (
        "--max-seconds=60"
    )


def test_a_first_look_that_cannot_decide_is_raised() -> None:
    # from 4 pairs to 90, the level needs 10 pairs; a schedule starting at 10 has a
    # lower level, which needs 11: the first look is raised until it can decide
    assert min_pairs_for(Budget(4, 90, 1.0).alpha_per_look) == 10
    assert min_pairs_for(Budget(10, 90, 1.0).alpha_per_look) == 11
    raised = budget_for(_args(min_pairs=4, max_pairs=90), "default")
    assert (raised.min_pairs, raised.looks[0], raised.max_pairs) == (11, 11, 90)
    assert min_pairs_for(raised.alpha_per_look) <= 11
    # the default schedules already start where they can decide
    for scale, first in [("smoke", 10), ("default", 12), ("full", 16)]:
        budget = budget_for(_args(), scale)
        assert budget.min_pairs == first >= min_pairs_for(budget.alpha_per_look)
    # whatever the start, the budget's first look can decide
    for least, most in [(1, 25), (4, 25), (1, 116), (4, 168), (1, 1000), (10, 1000)]:
        budget = budget_for(_args(min_pairs=least, max_pairs=most), "default")
        assert budget.min_pairs >= min_pairs_for(budget.alpha_per_look)


def test_a_session_judged_across_pairs_of_processes_runs_a_fixed_plan() -> None:
    budget = budget_for(_args(), "default")
    assert session_budget(budget, None) is budget  # judged alone: the whole budget
    across = session_budget(budget, ["b.py::t"])  # judged across pairs of processes
    assert (across.min_pairs, across.max_pairs) == (12, 4 * 12)
    assert (across.least_seconds, across.max_seconds) == (4.0, budget.max_seconds)
    decisive = [0.3] * 48  # a session's own interval never stops it early

    def stops(pace: float) -> int:
        seq = Sequential(across, 0.05)
        for n in range(1, 49):
            if seq.look(decisive[:n], elapsed=pace * n) is not None:
                return n
        raise AssertionError("never stopped")

    assert stops(1.0) == 12  # slow rounds: min_pairs, past the seconds already
    assert stops(0.2) == 20  # cheap rounds: on to 4 s
    assert stops(0.01) == 48  # at most 4 x min_pairs
    assert stops(59.0 / 12) == 12


def test_pair_orders_are_mirrored_and_seeded() -> None:
    rng = random.Random(5)
    orders = [pair_orders(rng) for _ in range(50)]
    assert all(second == first[::-1] for first, second in orders)
    assert {first for first, _ in orders} == {"AB", "BA"}
    again = random.Random(5)
    assert orders == [pair_orders(again) for _ in range(50)]


def test_drain_empties_a_prefetch_buffer() -> None:
    # a full buffer: rounds of 0.1 ms until it is empty, then the side's 10 ms rounds
    times = iter([0.0001] * 6 + [0.01] * 10)
    assert drain(lambda: next(times), 1, [0.01]) == 8  # two slow rounds end it
    blip = iter([0.0001] * 3 + [0.01] + [0.0001] * 3 + [0.01] * 10)  # a preempted round
    assert drain(lambda: next(blip), 1, [0.01]) == 9
    steady = iter([0.01] * 10)
    assert drain(lambda: next(steady), 1, [0.01]) == 1  # a synchronous bench: one round
    assert drain(lambda: next(steady), 3, [0.01]) == 3
    assert drain(lambda: 0.0001, 0, [0.01]) == 0
    assert drain(lambda: 0.0001, 1, [0.01]) == DRAIN_MAX_ROUNDS


def test_protocol_lines() -> None:
    assert decode(encode("block", rounds=2)) == {"type": "block", "v": 1, "rounds": 2}
    with pytest.raises(ProtocolError, match="not a JSON line"):
        decode(b"{oops")
    with pytest.raises(ProtocolError, match="not a protocol message"):
        decode(b"[1]")


def test_side_pythonpath_puts_the_side_first(tmp_path: Path) -> None:
    assert side_pythonpath(tmp_path, "/x") == f"{tmp_path}:/x"
    (tmp_path / "src").mkdir()
    assert side_pythonpath(tmp_path, None) == f"{tmp_path}:{tmp_path / 'src'}"


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "t"],
        ["config", "user.email", "t@t.invalid"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def _commit(root: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "c"], cwd=root, check=True)
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return out.stdout.strip()


def test_pyproject_pins_are_compared_as_dependencies(tmp_path: Path) -> None:
    root = _repo(tmp_path)

    def pins(rev: Revision) -> Pins:
        return read_pins(tree_files(root, rev.sha), rev.label)

    def difference(old: Revision, new: Revision) -> str | None:
        return pin_difference(pins(old), pins(new), old.label, new.label)

    project = '[project]\nname = "x"\ndependencies = ["numpy>=1.26"]\n'
    a = resolve(root, _commit(root, {"pyproject.toml": project}))
    b = _commit(root, {"pyproject.toml": project + "\n[tool.ruff]\nline-length = 99\n"})
    assert difference(a, resolve(root, b)) is None
    c = resolve(root, _commit(root, {"pyproject.toml": project.replace("1.26", "2.0")}))
    assert difference(a, c) == (
        f"pins differ between {a.label} and {c.label}: -requires numpy>=1.26; +requires numpy>=2.0"
    )
    (root / "constraints.txt").write_text("scipy==1.0\n")  # uncommitted: the working tree
    assert difference(c, Revision("working tree", None)) == (
        f"pins differ between {c.label} and working tree: +constrains scipy==1.0"
    )


def test_worktree_cache_reuses_resets_and_cleans(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    sha = _commit(root, {"a.txt": "one\n"})
    cache = WorktreeCache(root, tmp_path / "cache")
    with cache.checkout(sha) as path:
        assert (path / "a.txt").read_text() == "one\n"
        (path / "a.txt").write_text("changed\n")
        (path / "junk.txt").write_text("left behind\n")
    with cache.checkout(sha) as again:
        assert again == path
        assert (path / "a.txt").read_text() == "one\n"
        assert not (path / "junk.txt").exists()
    assert cache.clean() == [path]
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=root, capture_output=True, text=True
    ).stdout
    assert str(path) not in listed
    assert not cache.folder.exists()


def test_a_locked_half_made_worktree_is_removed_and_recreated(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    sha = _commit(root, {"a.txt": "one\n"})
    cache = WorktreeCache(root, tmp_path / "cache")
    path = cache.path(sha)
    subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=root, check=True)
    subprocess.run(["git", "worktree", "lock", str(path)], cwd=root, check=True)
    shutil.rmtree(path)  # as an interrupted add can leave it: registered, locked, missing
    with cache.checkout(sha) as again:
        assert (again / "a.txt").read_text() == "one\n"
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=root, capture_output=True, text=True
    ).stdout
    assert not [line for line in listed.splitlines() if line.startswith("locked")]
    cache.clean()
    assert not list((root / ".git" / "worktrees").glob("*"))


def test_a_stale_index_lock_in_a_cached_worktree_is_made_afresh(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    sha = _commit(root, {"a.txt": "one\n"})
    cache = WorktreeCache(root, tmp_path / "cache")
    with cache.checkout(sha) as path:
        (path / "a.txt").write_text("changed\n")
    git_dir = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir"], cwd=path, capture_output=True, text=True
    ).stdout.strip()
    lock = Path(git_dir) / "index.lock"
    lock.write_text("")  # as a git killed with SIGKILL leaves it
    with pytest.raises(PerfsuiteError, match=r"git reset --hard failed: fatal: .*index\.lock"):
        _git(path, "reset", "--hard")  # git's own error names the file
    with cache.checkout(sha) as again:
        assert (again / "a.txt").read_text() == "one\n"
        subprocess.run(["git", "reset", "--hard", "--quiet"], cwd=again, check=True)
    cache.clean()


@pytest.mark.parametrize("pool", [None, 10])
def test_each_block_draws_a_new_memory_layout(pool: int | None) -> None:
    """The side replaces its layout spacers before every block (and its drain rounds),
    and a block's rounds all run on the one layout it drew; a bench whose rounds are a
    pool of fresh processes draws nothing (and drains nothing)."""
    import socket

    from perfsuite.ab import remote as side_module
    from perfsuite.ab.protocol import Channel

    ours, theirs = socket.socketpair()
    side = side_module.LockstepSide(Channel(ours), "A", None, random.Random(7))
    controller = Channel(theirs)
    side_module.shuffle_layout(side.layout)  # as at registration, before any bench
    seen: list[tuple[int, int]] = []

    def call() -> None:
        heap = side_module._spacers[0]
        assert isinstance(heap, bytearray)
        seen.append((len(heap), len(side_module._spacers)))

    controller.send("go")  # the warm-up's turn
    for _ in range(3):
        controller.send("block", rounds=2, drain=1, typical=0.0)  # one drain round
    controller.send("skip", reason="enough")
    with pytest.raises(pytest.skip.Exception, match="enough"):
        side.measure(
            None, "b::t", call, setup=None, warmup_rounds=1, max_rounds=pool, threshold=0.05
        )
    arrive = controller.receive()
    assert (arrive["type"], arrive["phase"]) == ("arrive", "warmup")
    ready = controller.receive()
    assert ready["type"] == "ready"
    assert [controller.receive()["type"] for _ in range(3)] == ["block_done"] * 3
    ours.close()
    theirs.close()
    if pool is not None:  # one warm-up round, then two timed rounds per block
        assert len(seen) == 7
        assert len(set(seen)) == 1, "a pool bench keeps the layout it started with"
        return
    # one warm-up round, then per block one drain round and two timed ones
    blocks = [seen[i : i + 3] for i in range(1, 10, 3)]
    assert len(seen) == 10
    assert seen[0] != blocks[0][0], "the first block draws anew after the warm-up"
    assert all(len(set(block)) == 1 for block in blocks), "one layout within a block"
    assert len({block[0] for block in blocks}) == 3, "a new layout every block"
    # the last draw's spacers are freed, not kept beside the new ones
    assert len(side_module._spacers) == blocks[-1][0][1] <= 4096 + 1


@pytest.mark.parametrize(
    ("option", "value", "least"),
    [
        ("--confirm", "-0", 0),
        ("--confirm", "+3", 0),
        ("--block-warmup", " 1", 0),
        ("--min-pairs", "0", 1),
        ("--max-pairs", "1_000", 1),
        ("--block-rounds", "two", 1),
    ],
)
def test_a_count_is_digits_alone_or_a_one_line_usage_error(
    option: str, value: str, least: int, capsys: pytest.CaptureFixture[str]
) -> None:
    from perfsuite.cli import build_parser

    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["ab", "HEAD", option, value])
    assert info.value.code == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.endswith(f"invalid count {value!r} (a whole number >= {least})"), said
    counts = build_parser().parse_args(["ab", "HEAD", "--confirm", "0", "--min-pairs", "12"])
    assert (counts.confirm, counts.min_pairs) == (0, 12)
