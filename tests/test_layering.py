"""The package's layers: perfsuite.verdict stands alone, and no module imports form a cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import perfsuite

PACKAGE = Path(perfsuite.__file__).parent
VERDICT_MODULES = sorted(
    f"perfsuite.verdict.{p.stem}"
    for p in (PACKAGE / "verdict").glob("*.py")
    if p.stem != "__init__"
)

#: what importing any perfsuite.verdict module must not load
FORBIDDEN = ("pytest", "_pytest", "perfsuite.bench", "perfsuite.plugin", "perfsuite.gate")

LOADED = """
import sys
import {module}
forbidden = {forbidden!r}
print("\\n".join(sorted(m for m in sys.modules if m in forbidden or m.startswith(
    tuple(f + "." for f in forbidden)))))
"""


def test_the_verdict_package_has_the_expected_modules() -> None:
    assert {"perfsuite.verdict.compare", "perfsuite.verdict.storage"} <= set(VERDICT_MODULES)
    assert "perfsuite.verdict.result" in VERDICT_MODULES


@pytest.mark.parametrize("module", VERDICT_MODULES)
def test_a_verdict_module_loads_neither_pytest_nor_the_measuring_side(module: str) -> None:
    code = LOADED.format(module=module, forbidden=FORBIDDEN)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [], f"importing {module} loaded {proc.stdout.split()}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads: not in functions, not under TYPE_CHECKING."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)


def import_graph() -> dict[str, set[str]]:
    """perfsuite module -> the perfsuite modules it imports at module level."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _module_level(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that returns to its start), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_module_level_imports_only() -> None:
    graph = import_graph()
    assert "perfsuite.verdict.runs" in graph["perfsuite.verdict.compare"]
    assert "perfsuite.gate" in graph  # imported by plugin.py inside a function only
    assert "perfsuite.gate" not in graph["perfsuite.plugin"]


def test_no_import_cycle_among_perfsuite_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
