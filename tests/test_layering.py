"""The package's layers: perfsuite.verdict stands alone, and no module imports form a
cycle, neither at load time nor inside functions."""

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


def imports_in(node: ast.AST, *, functions: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements anywhere below ``node`` but under ``if TYPE_CHECKING:``
    (whose ``else`` is walked). Without ``functions``, only those that run when the
    module loads: none in a function's body (it runs when called)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.orelse:
                yield from imports_in(ast.Module([statement], []), functions=functions)
        elif functions or not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from imports_in(child, functions=functions)


def import_graph(*, functions: bool = False) -> dict[str, set[str]]:
    """perfsuite module -> the perfsuite modules it imports: at module level, or with
    ``functions`` anywhere in it (inside functions too)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for node in imports_in(tree, functions=functions):
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


IMPORTS = """
from typing import TYPE_CHECKING

import perfsuite.errors

if TYPE_CHECKING:
    from perfsuite.config import PerfConfig
else:
    from perfsuite import options


class Holder:
    from perfsuite import outputs


def later():
    from perfsuite.verdict import runs
"""


def test_the_walk_skips_type_checking_and_sees_functions_when_asked() -> None:
    tree = ast.parse(IMPORTS)
    loaded = [ast.unparse(n) for n in imports_in(tree, functions=False)]
    assert loaded == [
        "from typing import TYPE_CHECKING",
        "import perfsuite.errors",
        "from perfsuite import options",
        "from perfsuite import outputs",
    ]
    anywhere = [ast.unparse(n) for n in imports_in(tree, functions=True)]
    assert anywhere == [*loaded, "from perfsuite.verdict import runs"]


def test_the_whole_graph_sees_imports_inside_functions() -> None:
    graph = import_graph(functions=True)
    assert "perfsuite.gate" in graph["perfsuite.plugin"]  # inside pytest_configure
    assert graph["perfsuite.plugin"] >= import_graph()["perfsuite.plugin"]


def test_no_import_cycle_even_inside_functions() -> None:
    """No two modules need each other, at load time or when a function runs:
    ``if TYPE_CHECKING:`` imports, which never run, are the only ones left out."""
    cycle = find_cycle(import_graph(functions=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
