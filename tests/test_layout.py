"""The design page's layout table names every module of the package, and none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_design_layout_names_every_module() -> None:
    design = (ROOT / "docs" / "design.md").read_text()
    layout = design[design.index("## Layout") :]
    named = set(re.findall(r"^\| `(?:perfsuite/)?([\w/]+\.py)` \|", layout, flags=re.M))
    package = ROOT / "perfsuite"
    modules = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "__init__.py" or path.parent == package
    }
    assert modules - named == set(), "modules missing from docs/design.md's layout table"
    assert named - modules == set(), "docs/design.md's layout table names modules that are gone"
