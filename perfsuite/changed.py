"""What changed of each bench since a baseline's commit: the gate's A/B measures the
benches whose code changed whatever its screen read, and a bench none of whose code or
data changed moves with the machine (:func:`perfsuite.suspects.confirm_suspects`).

A screen compares two runs taken in different processes, and on a busy machine a
bench's median moves by more than its threshold between unchanged runs; where the
history's noise band widens the threshold, a real regression of that size reads
``same``. An A/B in one session can see it, so the gate asks one about every bench
whose code changed.

A bench's code is its file, the ``conftest.py`` files from its folder up to the
repository's top, and every Python file of the repository these import, directly or
through each other: read from their ``import`` statements, wherever they stand (inside
functions too), each resolved against the importing file's folder and its parents up to
the top, and the top's ``src/``. A file changed when ``git diff`` between the commit and
the working tree names it, or it is new and not ignored. Modules from outside the
repository change no bench's code here. Where the bench's file is the only one of its
code that changed, and what changed in it is only the definitions of some of its
collected test functions or classes (compared statement by statement, line numbers
aside), only the benches of those definitions changed: no other bench of the file runs
them. A bench whose own file names a changed file that is not its code (a data file or
a document it reads, a script it runs) counts as changed too.

A bench is untouched where none of its code changed, its file names no changed file, and
every changed file is a document (:func:`perfsuite.verdict.commits.is_document`) or
Python: a data or configuration file (``labels.json``, ``pyproject.toml``) may be read
by any bench, so where one changed no bench is untouched.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison

#: the most changed benches, beyond the screen's suspects, one A/B measures: those
#: whose screen read them slowest first
CHANGED_AT_MOST = 16
#: git prints a path with non-ASCII characters quoted and escaped unless told not to
UNQUOTED = ("-c", "core.quotePath=false")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``cwd``, its output captured; OSError where git cannot start."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def git_lines(top: Path, *args: str) -> list[str] | None:
    """The lines ``git ARGS`` printed, or None where it failed or could not start."""
    try:
        proc = git(top, *args)
    except OSError:
        return None
    return proc.stdout.splitlines() if proc.returncode == 0 else None


def untracked_code(cwd: Path) -> list[str]:
    """The Python files of the git checkout holding ``cwd`` that git neither tracks nor
    ignores, relative to its top (none where git cannot say). A commit id and a clean
    ``git status`` of tracked files do not pin these, so two runs of one commit are not
    of the same code while any exists."""
    top = git_lines(cwd, "rev-parse", "--show-toplevel")
    if not top:
        return []
    new = git_lines(Path(top[0]), *UNQUOTED, "ls-files", "--others", "--exclude-standard")
    return sorted(name for name in new or [] if name.endswith(".py"))


def untracked_line(names: Sequence[str]) -> str:
    """What untracked Python files ``names`` (:func:`untracked_code`) mean for a verdict.

    >>> untracked_line(["lib/a.py", "b.py", "c.py", "d.py"]).split(":")[0]
    '4 Python file(s) git does not track (lib/a.py, b.py, c.py, ...)'
    """
    shown = ", ".join([*names[:3], "..."] if len(names) > 3 else names)
    return (
        f"{len(names)} Python file(s) git does not track ({shown}): one commit on a clean "
        "tree need not be the same code"
    )


class CodeGraph:
    """The repository's Python files under ``top`` and what each imports of them."""

    def __init__(self, top: Path) -> None:
        self.top = top.resolve()
        self._imports: dict[Path, set[Path]] = {}

    def _roots(self, path: Path) -> list[Path]:
        """Where an absolute import in ``path`` may resolve: its folder and each parent
        up to the top, then the top's ``src/``."""
        roots = [p for p in path.parents if p == self.top or self.top in p.parents]
        return [*roots, self.top / "src"]

    def _module_files(self, name: str, roots: Iterable[Path]) -> set[Path]:
        """The files of module ``name`` (and of each package on its way) under the
        first root that holds it."""
        parts = name.split(".")
        for root in roots:
            found: set[Path] = set()
            for depth in range(1, len(parts) + 1):
                base = root.joinpath(*parts[:depth])
                for candidate in (base / "__init__.py", base.with_suffix(".py")):
                    if candidate.is_file():
                        found.add(candidate.resolve())
                        break
                else:
                    if not base.is_dir():  # a namespace package's folder goes on
                        break
            if found:
                return found
        return set()

    def imports(self, path: Path) -> set[Path]:
        """The repository's files that ``path`` imports (unreadable source: none)."""
        if path in self._imports:
            return self._imports[path]
        found: set[Path] = set()
        self._imports[path] = found
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            return found
        roots = self._roots(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found |= self._module_files(alias.name, roots)
            elif isinstance(node, ast.ImportFrom):
                found |= self._from_import(node, path, roots)
        found.discard(path)
        return found

    def _from_import(self, node: ast.ImportFrom, path: Path, roots: list[Path]) -> set[Path]:
        """``from M import a, b``: M's files, and a and b where they are modules."""
        if node.level > len(path.parents):
            return set()
        module_roots = [path.parents[node.level - 1]] if node.level else roots
        prefix = node.module or ""
        found: set[Path] = set()
        if prefix:
            found |= self._module_files(prefix, module_roots)
        for alias in node.names:
            name = f"{prefix}.{alias.name}" if prefix else alias.name
            found |= self._module_files(name, module_roots)
        return found

    def code_of(self, bench_file: Path) -> set[Path]:
        """``bench_file``, the ``conftest.py`` files above it up to the top, and every
        repository file they import, directly or not."""
        bench_file = bench_file.resolve()
        start = {bench_file} | {
            folder / "conftest.py"
            for folder in self._roots(bench_file)[:-1]
            if (folder / "conftest.py").is_file()
        }
        seen: set[Path] = set()
        todo = list(start)
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            todo.extend(self.imports(path) - seen)
        return seen


def changed_files(
    cwd: Path, sha: str, revision: str | None = None
) -> tuple[Path, list[str]] | None:
    """The top of the git checkout holding ``cwd``, and its files that differ between
    commit ``sha`` and ``revision`` (None: the working tree, new files that git neither
    tracks nor ignores included), relative to that top; None where git cannot say."""
    top_line = git_lines(cwd, "rev-parse", "--show-toplevel")
    if not top_line:
        return None
    top = Path(top_line[0]).resolve()
    against = [revision] if revision is not None else []
    diff = git_lines(top, *UNQUOTED, "diff", "--name-only", "--no-renames", sha, *against, "--")
    new: list[str] | None = []
    if revision is None:
        new = git_lines(top, *UNQUOTED, "ls-files", "--others", "--exclude-standard")
    if diff is None or new is None:
        return None
    return top, sorted({*diff, *new})


def bench_file(nodeid: str, rootdir: Path, top: Path) -> Path | None:
    """The file of the bench ``nodeid`` (relative to ``rootdir`` or to ``top``), or None."""
    file = nodeid.split("::", 1)[0]
    return next((p.resolve() for p in (rootdir / file, top / file) if p.is_file()), None)


def _named(path: Path, names: Iterable[str]) -> str | None:
    """The first of the files ``names`` (none of them ``path``'s own code) whose file name
    the text of ``path`` holds (it may read that file as data, or run it), or None."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return next((name for name in names if Path(name).name in text), None)


@dataclass(frozen=True)
class Changes:
    """The files that differ between a baseline's commit and what is measured against it
    (relative to the checkout's top), and what they change of each bench."""

    files: tuple[str, ...]
    #: the benches whose code changed, or whose file names a changed file, each with why
    reasons: dict[str, str]
    #: the benches none of whose code or data changed: no changed file is of their code
    #: or named by their file, and every changed file is a document or Python
    untouched: frozenset[str]


def changed_benches(
    nodeids: Sequence[str], rootdir: Path, sha: str, revision: str | None = None
) -> Changes | None:
    """What changed of each of ``nodeids`` (relative to ``rootdir`` or to the top of the
    git checkout holding it) between commit ``sha`` and ``revision`` (None: the working
    tree); None where git cannot say."""
    from perfsuite.verdict.commits import is_document

    found = changed_files(rootdir, sha, revision)
    if found is None:
        return None
    top, names = found
    code = {(top / name).resolve() for name in names if name.endswith(".py")}
    data = any(not name.endswith(".py") and not is_document(name) for name in names)
    graph = CodeGraph(top)
    by_file: dict[str, list[str]] = {}
    for nodeid in nodeids:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    reasons: dict[str, str] = {}
    untouched: set[str] = set()
    for file, ids in by_file.items():
        path = bench_file(file, rootdir, top)
        if path is None:  # its code is not known: untouched only where no code changed
            untouched.update(ids if not code and not data else ())
            continue
        own = graph.code_of(path) if code else set()  # only a changed .py can be its code
        hit = sorted(own & code)
        tests = {top_name(nodeid) for nodeid in ids}
        only = changed_tests(top, sha, path, tests) if hit == [path] else None
        named = _named(path, [name for name in names if (top / name).resolve() not in own])
        for nodeid in ids:
            if hit and (only is None or top_name(nodeid) in only):
                where = hit[0].relative_to(top).as_posix()
                narrowed = f", {top_name(nodeid)}" if only is not None else ""
                reasons[nodeid] = f"its code changed since the baseline: {where}{narrowed}"
            elif named is not None:
                reasons[nodeid] = f"its file names {named}, which changed since the baseline"
            elif not data:
                untouched.add(nodeid)
    return Changes(tuple(names), reasons, frozenset(untouched))


def top_name(nodeid: str) -> str:
    """The name a bench's module defines it under: its function's, or its class's.

    >>> top_name("benches/b.py::TestX::test_y[a-b]")
    'TestX'
    """
    return nodeid.split("::")[1].split("[")[0] if "::" in nodeid else ""


def _definitions(source: bytes | str, name: str) -> dict[str, str] | None:
    """Each top-level statement of a module, as text without line numbers: a function
    or class under its name, any other under its own text; None where it does not
    parse."""
    try:
        tree = ast.parse(source, filename=name)
    except (SyntaxError, ValueError):
        return None
    defined: dict[str, str] = {}
    for node in tree.body:
        text = ast.dump(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined[node.name] = text
        else:
            defined[text] = text
    return defined


def changed_tests(top: Path, sha: str, path: Path, tests: set[str]) -> set[str] | None:
    """Of ``tests`` (top-level names of test functions or classes in ``path``), those
    whose definitions differ between commit ``sha`` and the working tree, where nothing
    else of the file changed; None where something else did, or git cannot say."""
    relative = path.relative_to(top).as_posix()
    before = git_lines(top, "show", f"{sha}:{relative}")
    try:
        now = _definitions(path.read_bytes(), str(path))
    except OSError:
        return None
    then = _definitions("\n".join(before), relative) if before is not None else None
    if now is None or then is None:
        return None
    differ = {key for key in now.keys() | then.keys() if now.get(key) != then.get(key)}
    return differ if differ <= tests else None


def mark_changed(
    comparison: RunComparison, changes: Changes, sha: str, say: Callable[[str], None]
) -> RunComparison:
    """``comparison`` with each measured bench whose code changed since ``sha``
    (``changes``) marked so (``changed``), and those of them not already a suspect made
    time suspects (``suspected``; at most ``CHANGED_AT_MOST``: those the screen read
    slowest), saying how many joined and how many were left out."""
    from perfsuite.verdict.shift import screen_change

    measured = [v for v in comparison.verdicts if v.time is not None and not v.not_comparable]
    names = {v.fullname for v in measured}
    reasons = {name: why for name, why in changes.reasons.items() if name in names}
    if not reasons:
        return comparison
    ranked = sorted(
        (v for v in measured if v.fullname in reasons and not v.suspect),
        key=screen_change,
        reverse=True,
    )
    chosen = {v.fullname for v in ranked[:CHANGED_AT_MOST]}
    left = len(ranked) - len(chosen)
    already = sum(1 for v in measured if v.fullname in reasons and v.suspect)
    if chosen:
        say(
            f"perfsuite gate: {len(chosen)} bench(es) whose code changed since {sha[:12]} join "
            "the A/B whatever the screen read"
            + (f" (beside {already} the screen made suspects)" if already else "")
            + (f"; {left} more are not measured (at most {CHANGED_AT_MOST})" if left else "")
        )
    else:
        say(
            f"perfsuite gate: {already} bench(es) whose code changed since {sha[:12]}, all suspects"
        )
    verdicts = [
        replace(
            v,
            changed=reasons[v.fullname],
            suspected=reasons[v.fullname] if v.fullname in chosen else v.suspected,
        )
        if v.fullname in reasons
        else v
        for v in comparison.verdicts
    ]
    return replace(comparison, verdicts=verdicts)
