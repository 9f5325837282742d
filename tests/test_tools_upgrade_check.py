"""tools/validation/upgrade_check.py: the clone it measures moves exactly one pin."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tools.validation.upgrade_check import bumped_clone, side_stacks


def test_the_clone_moves_one_pin_in_its_own_commit(tmp_path: Path) -> None:
    clone, base, candidate = bumped_clone(tmp_path, "pillow", "12.3.0")
    diff = subprocess.run(
        ["git", "diff", "--unified=0", base, candidate],
        cwd=clone,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert len(changed) == 2, diff
    assert changed[0].startswith("-pillow==")
    assert changed[1] == "+pillow==12.3.0"


def test_a_package_the_constraints_do_not_pin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"constraints\.txt pins no nosuchpackage"):
        bumped_clone(tmp_path, "nosuchpackage", "1.0")


def test_side_stacks_reads_each_sides_saved_versions(tmp_path: Path) -> None:
    for side, version in (("A", "13.0.0"), ("B", "12.3.0")):
        facts = {"machine_info": {"perfsuite": {"versions": {"pillow": version}}}}
        (tmp_path / f"{side}.json").write_text(json.dumps(facts))
    assert side_stacks(tmp_path) == {"A": {"pillow": "13.0.0"}, "B": {"pillow": "12.3.0"}}
