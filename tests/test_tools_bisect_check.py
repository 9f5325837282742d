"""tools/validation/bisect_check.py's history: 16 commits, the culprit where the seed puts
it, two commits that touch only README.md, the rest a comment in the bench files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tools.validation.bisect_check import build_history


def changed(root: Path, sha: str) -> list[str]:
    proc = subprocess.run(
        ["git", "show", "--name-only", "--format=", sha],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(proc.stdout.split())


def test_the_history_holds_one_culprit_where_the_seed_puts_it(tmp_path: Path) -> None:
    one = build_history(tmp_path / "a", seed=4)
    again = build_history(tmp_path / "b", seed=4)
    assert len(one.shas) == 16
    position = one.shas.index(one.culprits[0])
    assert position == again.shas.index(again.culprits[0])
    readme = [sha for sha in one.shas[1:] if changed(one.root, sha) == ["README.md"]]
    assert len(readme) == 2
    assert one.culprits[0] not in readme
    bench_files = ["test_decode.py", "tests/test_decode_pedantic.py"]
    for sha in one.shas[1:]:
        assert changed(one.root, sha) in (["README.md"], bench_files)
    text = subprocess.run(
        ["git", "show", f"{one.culprits[0]}:test_decode.py"],
        cwd=one.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "EXTRA = 0.1  #" in text


def test_a_broken_commit_does_not_import_and_the_next_mends_it(tmp_path: Path) -> None:
    history = build_history(tmp_path / "a", seed=1, broken=[7])
    assert history.broken == [history.shas[7]]
    for number, ok in ((7, False), (8, True)):
        source = subprocess.run(
            ["git", "show", f"{history.shas[number]}:test_decode.py"],
            cwd=history.root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        try:
            compile(source, "test_decode.py", "exec")
            compiled = True
        except SyntaxError:
            compiled = False
        assert compiled is ok
