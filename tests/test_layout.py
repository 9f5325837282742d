"""The README's layout table names every module of the package, and none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_layout_names_every_module() -> None:
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout") :]
    named = set(re.findall(r"^\| `(?:perfsuite/)?([\w/]+\.py)` \|", layout, flags=re.M))
    package = ROOT / "perfsuite"
    modules = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "__init__.py" or path.parent == package
    }
    assert modules - named == set(), "modules missing from the README's layout table"
    assert named - modules == set(), "the README's layout table names modules that are gone"
