"""What a revision pins: the requirements and constraints its environment is built from.

A revision's pins are read from the files at the top of its tree:

* ``requirements*.txt``, installed with ``-r``;
* ``constraints*.txt``, applied with ``-c``;
* ``pyproject.toml``'s ``[project] dependencies``, with the extras that
  ``[tool.perfsuite.env] extras`` names (the project's own extras it lists, as in
  ``all = ["proj[tf,torch]"]``, expanded in place);
* or, where the revision has a ``uv.lock``, what the lock pins for those extras and
  uv's default dependency groups (``uv export``, as ``uv sync`` installs it), in place
  of the dependencies.

``[tool.perfsuite.env]`` in that revision's ``pyproject.toml`` may narrow the files:
``requirements = [...]`` and ``constraints = [...]`` list them by name (an empty list
reads none). A project whose constraint files contradict each other (a lowest-versions
file beside the pinned one) names the one its environment is built with.

Comments, blank lines and the project itself (``.``, ``-e .``, ``.[extra]``: its code
is put on the side's path, never installed) are left out; option lines
(``--find-links DIR``) are kept.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

REQUIREMENTS, CONSTRAINTS, PYPROJECT = "requirements*.txt", "constraints*.txt", "pyproject.toml"
LOCK = "uv.lock"
#: the files at the top of a revision that may hold pins
PIN_FILES = (REQUIREMENTS, CONSTRAINTS, PYPROJECT, LOCK)
#: the project itself, as a requirements file names it: never installed (see module doc)
_SELF = re.compile(r"^(-e\s+|--editable\s+)?(\.|file:\.)/?(\[(?P<extras>[^\]]*)\])?$")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[(?P<extras>[^\]]*)\])?")


def requirement_name(requirement: str) -> tuple[str, list[str]]:
    """A requirement's distribution name (as :func:`normalize` gives it) and extras.

    >>> requirement_name("Proj[tf, torch]>=1; python_version < '3.11'")
    ('proj', ['tf', 'torch'])
    """
    match = _NAME.match(requirement)
    if match is None:
        return "", []
    extras = [e.strip() for e in (match.group("extras") or "").split(",") if e.strip()]
    return normalize(match.group(1)), extras


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares it.

    >>> normalize("Pillow"), normalize("nvidia_dali.cuda120")
    ('pillow', 'nvidia-dali-cuda120')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pins:
    """One revision's pins: ``requirements`` and ``constraints`` lines, and the files
    they came from (name: text), all in a stable order."""

    requirements: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    #: the extras installed from ``uv.lock``, where the revision has one (None: no lock)
    locked_extras: tuple[str, ...] | None = None

    @property
    def lines(self) -> list[str]:
        """Every pin, labelled by what it is, to compare two revisions by."""
        lock = []
        if self.locked_extras is not None:
            digest = hashlib.sha256(self.sources[LOCK].encode()).hexdigest()[:16]
            extras = ",".join(self.locked_extras)
            lock = [f"locks {LOCK} sha256:{digest}" + (f" [{extras}]" if extras else "")]
        return [
            *(f"requires {line}" for line in self.requirements),
            *lock,
            *(f"constrains {line}" for line in self.constraints),
        ]


def read_pins(files: Mapping[str, str], label: str) -> Pins:
    """The pins of a revision whose top-level files are ``files`` (name: text, those
    matching :data:`PIN_FILES`: :func:`perfsuite.ab.revisions.tree_files`);
    ``label`` names the revision in an error."""
    project, settings = _pyproject(files.get(PYPROJECT), label)
    chosen = {
        "requirements": _chosen(files, settings, "requirements", REQUIREMENTS, label),
        "constraints": _chosen(files, settings, "constraints", CONSTRAINTS, label),
    }
    requirements = [line for name in chosen["requirements"] for line in _lines(files[name])]
    constraints = [line for name in chosen["constraints"] for line in _lines(files[name])]
    sources = {name: files[name] for names in chosen.values() for name in names}
    locked: tuple[str, ...] | None = None
    if project is not None:
        extras = settings.get("extras", [])
        if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
            raise PerfsuiteError(
                f"{label}: pyproject.toml [tool.perfsuite.env] extras must be a list of "
                'extra names, such as ["all"]'
            )
        from_project = project_requirements(project, extras, label)
        sources[PYPROJECT] = files[PYPROJECT]
        if LOCK in files:
            locked, sources[LOCK] = tuple(extras), files[LOCK]
        else:
            requirements.extend(from_project)
    return Pins(tuple(requirements), tuple(constraints), sources, locked)


def _pyproject(text: str | None, label: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(``[project]``, ``[tool.perfsuite.env]``) of a pyproject.toml; (None, {}) without one."""
    if text is None:
        return None, {}
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PerfsuiteError(f"{label}: pyproject.toml is not valid TOML ({exc})") from None
    settings = document.get("tool", {}).get("perfsuite", {}).get("env", {})
    return document.get("project"), settings if isinstance(settings, dict) else {}


def _chosen(
    files: Mapping[str, str], settings: Mapping[str, Any], key: str, pattern: str, label: str
) -> list[str]:
    named = settings.get(key)
    if named is None:
        return sorted(name for name in files if Path(name).match(pattern))
    if not isinstance(named, list) or not all(isinstance(n, str) for n in named):
        raise PerfsuiteError(
            f"{label}: pyproject.toml [tool.perfsuite.env] {key} must be a list of file "
            f'names at the repository\'s top, such as ["{pattern.replace("*", "")}"]'
        )
    missing = [name for name in named if name not in files]
    if missing:
        raise PerfsuiteError(
            f"{label}: pyproject.toml [tool.perfsuite.env] {key} names {missing[0]}, "
            "which that revision does not have at its top"
        )
    return list(named)


def _lines(text: str) -> list[str]:
    """A requirements file's pins: no comment, blank line or the project itself.

    >>> _lines("numpy==2.0  # fast\\n# note\\n\\n-e .[tf]\\n--find-links wheels\\n")
    ['numpy==2.0', '--find-links wheels']
    """
    found = []
    for raw in text.splitlines():
        line = re.sub(r"(^|\s+)#.*$", "", raw).strip()
        if line and not _SELF.match(line):
            found.append(line)
    return found


def project_requirements(
    project: Mapping[str, Any], extras: Sequence[str], label: str
) -> list[str]:
    """``[project] dependencies`` and those of ``extras``; an extra that names the project
    itself (``all = ["proj[tf,torch]"]``) is expanded in its place.

    >>> project = {"name": "Proj", "dependencies": ["numpy"], "optional-dependencies": {
    ...     "tf": ["tensorflow>=2.16"], "all": ["proj[tf]", "psutil"]}}
    >>> project_requirements(project, ["all"], "A")
    ['numpy', 'tensorflow>=2.16', 'psutil']
    """
    own = normalize(str(project.get("name", "")))
    optional = project.get("optional-dependencies", {})
    found: list[str] = list(project.get("dependencies", []))
    seen: set[str] = set()

    def expand(extra: str) -> None:
        if extra in seen:
            return
        seen.add(extra)
        if extra not in optional:
            raise PerfsuiteError(
                f"{label}: pyproject.toml has no extra {extra!r} ([tool.perfsuite.env] "
                f"extras); it has: {', '.join(sorted(optional)) or 'none'}"
            )
        for requirement in optional[extra]:
            name, inner = requirement_name(requirement)
            if name == own:
                for each in inner:
                    expand(each)
            else:
                found.append(requirement)

    for extra in extras:
        expand(extra)
    return found


def pin_difference(old: Pins, new: Pins, old_label: str, new_label: str) -> str | None:
    """One line naming the pins that differ between two revisions, or None when they agree.

    >>> a, b = Pins(("numpy==1.26.4", "pillow==10.0")), Pins(("numpy==2.0.0", "pillow==10.0"))
    >>> pin_difference(a, b, "main", "working tree")
    'pins differ between main and working tree: -requires numpy==1.26.4; +requires numpy==2.0.0'
    """
    if old.lines == new.lines:
        return None
    before, after = set(old.lines), set(new.lines)
    diff = [f"-{line}" for line in old.lines if line not in after]
    diff += [f"+{line}" for line in new.lines if line not in before]
    shown = "; ".join(diff[:6]) + ("; ..." if len(diff) > 6 else "")
    return f"pins differ between {old_label} and {new_label}: {shown or 'their order'}"
