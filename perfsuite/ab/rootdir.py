"""Where each side's pytest is rooted: its checkout's root, so node ids match between sides.

pytest derives its rootdir, and where it looks for a configuration file, from the
common folder of every argument naming an existing path, an option's value given
after a space included (``--perf-data-dir /data``). Left to that, a side's node ids
could start anywhere above its checkout, with the checkout's own path in them, and
name the same bench differently on the two sides. So each side's pytest starts with

* ``--rootdir=<its checkout's root>``: node ids are relative to the repository root,
  the same on both sides, from whichever folder pytest starts and whatever the
  arguments;
* ``--config-file=<file>``: the configuration file pytest finds when its arguments
  name only paths inside the checkout: the first of pytest's configuration files in
  the common folder of those paths (the folder pytest starts in when there are none),
  or in a folder above it up to the checkout's root. With none there, pytest looks on
  by itself. Given ``-c``/``--config-file``, pytest takes the user's file (a relative
  path names each side's own copy).

A ``--rootdir`` of the user's would move one side's node ids or both away from the
repository root: :func:`perfsuite.ab.command.side_args` rejects it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from perfsuite.errors import PerfsuiteError


def _locate(folder: Path, root: Path) -> tuple[Path | None, Mapping[str, object]]:
    """The configuration file, and its values, of a pytest whose paths share ``folder``:
    pytest's own search from there up (``locate_config``, whose file names and rules
    are those of the installed pytest), kept inside ``root``; a ``pyproject.toml``
    without pytest's tables when nothing else is found, as pytest takes it. A file
    pytest cannot read raises one line naming it."""
    import pytest
    from _pytest.config.findpaths import locate_config

    try:
        found = locate_config(folder, [folder])
    except (pytest.UsageError, pytest.fail.Exception, OSError, UnicodeDecodeError) as exc:
        raise PerfsuiteError(f"pytest cannot read its configuration: {exc}; fix it") from None
    path, values = found[1], found[2]
    if path is not None and path.is_relative_to(root):
        return path, values
    up = [folder, *folder.parents]
    bare = [f / "pyproject.toml" for f in up[: up.index(root) + 1]]
    return next((p for p in bare if p.is_file()), None), {}


def config_file(cwd: Path, root: Path, pytest_args: Sequence[str]) -> Path | None:
    """The configuration file of a pytest started in ``cwd`` with ``pytest_args`` and
    rooted at ``root``, looked for inside ``root`` alone (see the module doc and
    :func:`_locate`); None when there is no such file."""
    from perfsuite.ab.pytest_args import path_part, positional

    root = root.resolve()
    paths = [(cwd / path_part(pytest_args[i])).resolve() for i in positional(pytest_args)]
    inside = [p for p in paths if p.exists() and p.is_relative_to(root)]
    folders = [p if p.is_dir() else p.parent for p in inside]
    start = Path(os.path.commonpath(folders or [cwd.resolve()]))
    return _locate(start if start.is_relative_to(root) else root, root)[0]


def rooted(cwd: Path, root: Path, pytest_args: Sequence[str]) -> list[str]:
    """The options that root a side's pytest at ``root``: ``--rootdir`` and, unless the
    arguments name one, the configuration file (see the module doc)."""
    options = [f"--rootdir={root.resolve()}"]
    config = ("--config-file=", "-c")  # -c FILE, -cFILE, --config-file[=]FILE
    if not any(arg == "--config-file" or arg.startswith(config) for arg in pytest_args):
        found = config_file(cwd, root, pytest_args)
        if found is not None:
            options.append(f"--config-file={found}")
    return options


def default_paths(root: Path) -> list[Path]:
    """What pytest started at ``root`` with no path collects: the ``testpaths`` of its
    configuration file there, each a glob from ``root`` (in pytest's order), else
    ``root``, as pytest's own default does."""
    value = _locate(root.resolve(), root.resolve())[1].get("testpaths")
    value = getattr(value, "value", value)  # pytest 9 wraps each value with its origin
    value = value.split() if isinstance(value, str) else value  # an ini file's: one line
    given = [str(v) for v in value] if isinstance(value, list) else []
    paths = [
        Path(p) for pattern in given for p in sorted(glob.glob(str(root / pattern), recursive=True))
    ]
    return paths or [root]
