"""Which pytest arguments after ``--`` name paths, read as pytest reads them.

pytest takes an argument for a path or a node id when it is no option's value; which
options take a value (and how many), its parser knows, with the options of every
installed plugin (pytest-benchmark's ``--benchmark-storage DIR``, perfsuite's own
``--perf-data-dir DIR``). So the arguments are read with the table of that parser,
built as pytest builds it before it loads any conftest file. An option a conftest
file adds is unknown there, as it is to pytest at that point: given with its value
after a space, the value is read as a path (give it as ``--my-option=VALUE``). Where
that parser cannot be read (another pytest's internals), ``perfsuite ab`` stops
with one line.

The paths named tell ``perfsuite ab`` where its sides start (none named: the default
selection, from the repository root) and which paths a side's checkout lacks (left
out of that side's arguments, so a bench added or removed is a row of one side only).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
from collections.abc import Collection, Sequence
from pathlib import Path

from perfsuite.errors import PerfsuiteError


@functools.cache
def value_counts() -> dict[str, int | str | None]:
    """Each option pytest and its installed plugins know, by name, with its argparse
    ``nargs`` (0 for a flag, None for one value, ``?``, ``*`` or ``+``): the table of
    pytest's own parser. A plugin that fails to load leaves out its own options;
    perfsuite's are always in. A pytest whose parser cannot be read raises one line."""
    import pytest
    from _pytest.config import get_config

    from perfsuite.options import OPTIONS

    counts: dict[str, int | str | None] = {s.flag: 0 if s.is_flag else None for s in OPTIONS}
    try:
        config = get_config()
        with contextlib.suppress(Exception):  # a broken plugin: pytest's own options serve
            config.pluginmanager.load_setuptools_entrypoints("pytest11")
        parser = config._parser
        built = getattr(parser, "optparser", None)
        if built is None:  # pytest before 9 builds its argparse parser on demand
            built = getattr(parser, "_getparser")()  # noqa: B009
        actions = built._actions
    except Exception as exc:  # another pytest's internals
        raise PerfsuiteError(
            f"cannot read which options pytest {pytest.__version__} takes ({exc!r}); "
            "install a pytest in the range perfsuite's pyproject.toml names"
        ) from None
    counts.update({name: action.nargs for action in actions for name in action.option_strings})
    return counts


def positional(args: Sequence[str], counts: dict[str, int | str | None] | None = None) -> list[int]:
    """The indices of ``args`` that pytest reads as paths or node ids: no option, no
    option's value (by ``counts``, default :func:`value_counts`), everything after a
    ``--``.

    >>> positional(["a.py", "-k", "x.py", "b.py::t", "-q"], {"-k": None, "-q": 0})
    [0, 3]
    >>> positional(["--opt", "v", "-kx", "t", "--", "-z"], {"--opt": "?", "-k": None})
    [3, 5]
    """
    counts = value_counts() if counts is None else counts
    found: list[int] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            return found + list(range(i, len(args)))
        if not arg.startswith("-") or arg == "-":
            found.append(i - 1)
            continue
        nargs = _wants(arg, counts)
        if nargs is None or isinstance(nargs, int):
            i += 1 if nargs is None else nargs
        elif nargs == "?":
            i += 1 if i < len(args) and not args[i].startswith("-") else 0
        else:  # "*" or "+": every value up to the next option
            while i < len(args) and not args[i].startswith("-"):
                i += 1
    return found


def _wants(arg: str, counts: dict[str, int | str | None]) -> int | str | None:
    """How many of the following arguments the option ``arg`` takes (its ``nargs``; 0
    where its value is attached: ``--opt=v``, ``-kx``). A group of short options
    (``-vk``) is read as argparse reads it: flags, then the first one that takes a
    value takes the rest of the group or, where nothing is left, what follows.

    >>> _wants("-vk", {"-v": 0, "-k": None}), _wants("-vkx", {"-v": 0, "-k": None})
    (None, 0)
    >>> _wants("--opt=v", {"--opt": None}), _wants("--unknown", {}), _wants("-q", {"-q": 0})
    (0, 0, 0)
    """
    if arg.startswith("--"):
        return 0 if "=" in arg else counts.get(arg, 0)
    for at in range(1, len(arg)):
        nargs = counts.get(f"-{arg[at]}", 0)
        if nargs != 0:
            return nargs if at == len(arg) - 1 else 0
    return 0


def path_part(arg: str) -> str:
    """The file or folder of a path or node id (``a.py::t`` -> ``a.py``)."""
    return arg.split("::", 1)[0]


def names_paths(args: Sequence[str], cwd: Path, root: Path) -> bool:
    """Whether ``args`` name a selection of their own: a positional argument that is a
    bench file or node id, or a path that is not an existing one outside ``root``."""
    for i in positional(args):
        part = path_part(args[i])
        if part.endswith(".py") or "::" in args[i]:
            return True
        path = (cwd / part).resolve()
        if not path.exists() or path == root.resolve() or root.resolve() in path.parents:
            return True
    return False


def missing_files(args: Sequence[str], cwd: Path) -> list[str]:
    """The bench files (``x.py``, ``x.py::test``) ``args`` name that are not under ``cwd``."""
    return [
        args[i]
        for i in positional(args)
        if path_part(args[i]).endswith(".py") and not (cwd / path_part(args[i])).exists()
    ]


def own_paths(args: Sequence[str], cwd: Path, elsewhere: Collection[Path] = ()) -> list[str]:
    """``args`` without the paths this side's checkout (``cwd``) lacks: a bench file
    (``x.py``, ``x.py::test``), or a path another side has (in ``elsewhere``, the other
    sides' folders). A bench file or folder added or removed between the revisions is
    then a row on one side only, as in the default selection, not a pytest usage error.
    Where the side lacks every path named, the first gives way to its nearest existing
    folder with everything in it ignored: the side collects nothing, yet loads the
    conftest files (and the options they add) that the path would have.

    >>> here = Path(__file__).parent
    >>> own_paths(["pytest_args.py", "gone.py::t", "-k", "x.py", "-q"], here)
    ['pytest_args.py', '-k', 'x.py', '-q']
    >>> own_paths(["new/gone.py::t", "-q", "gone2.py"], here)[:2]
    ['.', '-q']
    >>> own_paths(["new/gone.py::t", "-q", "gone2.py"], here)[2] == f"--ignore-glob={here}/*"
    True
    >>> own_paths(["pytest_args.py", "perfsuite", "-q"], here, [here.parent.parent])
    ['pytest_args.py', '-q']
    """
    named = positional(args)
    gone = set()
    for i in named:
        part = path_part(args[i])
        if (cwd / part).exists():
            continue
        if part.endswith(".py") or any((other / part).exists() for other in elsewhere):
            gone.add(i)
    if not gone:
        return list(args)
    if len(gone) < len(named):
        return [arg for i, arg in enumerate(args) if i not in gone]
    first = min(gone)
    folder = (cwd / path_part(args[first])).parent
    while not folder.is_dir():
        folder = folder.parent
    where = os.path.relpath(folder, cwd)
    kept = [
        where if i == first else arg for i, arg in enumerate(args) if i not in gone or i == first
    ]
    return [*kept, f"--ignore-glob={glob.escape(str(folder.resolve()))}/*"]
