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

import contextlib
import glob
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import iniconfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

#: pytest's configuration files, in the order it prefers them within one folder
CONFIG_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
#: the section that makes an ini-style file a pytest configuration
INI_SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}


def holds_config(path: Path) -> bool:
    """Whether pytest reads its configuration from ``path``, one of :data:`CONFIG_NAMES`.

    A file pytest cannot parse, or rejects, counts: handed to pytest, it is reported as
    pytest reports it.
    """
    if not path.is_file():
        return False
    if path.name == "pyproject.toml":
        try:
            document = tomllib.loads(path.read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return True
        tool = document.get("tool")
        table = tool.get("pytest") if isinstance(tool, dict) else None
        return isinstance(table, dict) and bool(table)
    section = INI_SECTIONS.get(path.name)
    if section is None:
        return True
    try:
        sections = iniconfig.IniConfig(str(path)).sections
    except (OSError, UnicodeDecodeError, iniconfig.ParseError):
        return True
    return section in sections or (path.name == "setup.cfg" and "pytest" in sections)


def config_file(cwd: Path, root: Path, pytest_args: Sequence[str]) -> Path | None:
    """The configuration file of a pytest started in ``cwd`` with ``pytest_args`` and
    rooted at ``root``, looked for inside ``root`` alone (see the module doc); a
    ``pyproject.toml`` without pytest's tables when nothing else is found, as pytest
    takes it; None when there is no such file."""
    from perfsuite.ab.pytest_args import path_part, positional

    root = root.resolve()
    paths = [(cwd / path_part(pytest_args[i])).resolve() for i in positional(pytest_args)]
    inside = [p for p in paths if p.exists() and p.is_relative_to(root)]
    folders = [p if p.is_dir() else p.parent for p in inside]
    start = Path(os.path.commonpath(folders or [cwd.resolve()]))
    if not start.is_relative_to(root):
        start = root
    fallback = None
    for folder in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if holds_config(candidate):
                return candidate
            if fallback is None and name == "pyproject.toml" and candidate.is_file():
                fallback = candidate
        if folder == root:
            break
    return fallback


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
    found = config_file(root, root, [])
    given: list[str] = []
    if found is not None and found.suffix == ".toml":
        with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            document = tomllib.loads(found.read_text())
            tool = document.get("tool", {}) if found.name == "pyproject.toml" else document
            table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            table = table.get("ini_options", table) if isinstance(table, dict) else {}
            value = table.get("testpaths", []) if isinstance(table, dict) else []
            given = value.split() if isinstance(value, str) else [str(v) for v in value]
    elif found is not None:
        section = INI_SECTIONS.get(found.name, "pytest")
        with contextlib.suppress(OSError, UnicodeDecodeError, iniconfig.ParseError, KeyError):
            sections = iniconfig.IniConfig(str(found)).sections
            if section not in sections and found.name == "setup.cfg":
                section = "pytest"
            given = sections[section].get("testpaths", "").split()
    paths = [
        Path(p) for pattern in given for p in sorted(glob.glob(str(root / pattern), recursive=True))
    ]
    return paths or [root]
