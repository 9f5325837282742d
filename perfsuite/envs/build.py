"""A side's own environment: its revision's pins resolved by uv, built once, reused.

``uv pip compile`` resolves a revision's pins (:mod:`perfsuite.envs.pins`) together with
what perfsuite needs inside a side (its own requirements: pytest, pytest-benchmark,
numpy, ...), for this interpreter. The resolved pins name the environment:
``$XDG_CACHE_HOME/perfsuite/envs/<digest>`` (``~/.cache`` without it), a relocatable
virtual environment that ``uv pip install`` fills from uv's cache, hard-linking where
the file system allows, so environments share their files with each other and with uv's
cache. It is built beside its place and renamed into it under a lock
(:func:`perfsuite.data.fsutil.build_dir_once`): one whose build failed or was killed is
never reused. Its marker file, written last, lists what it holds.

uv is the one from perfsuite's own environment (the ``uv`` package), else the first on
``PATH``. It reads its own settings (``UV_INDEX_URL``, ``UV_EXTRA_INDEX_URL``,
``UV_FIND_LINKS``); ``PIP_FIND_LINKS`` is passed on where ``UV_FIND_LINKS`` is unset.

perfsuite itself is never installed there: a side finds the controller's perfsuite,
with its pytest entry point, through a folder on its ``PYTHONPATH``
(:func:`perfsuite_shim`), after the revision's own code, so a revision of perfsuite
itself runs its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from perfsuite.data.fsutil import atomic_write_text, build_dir_once, cache_home, discard_dir
from perfsuite.envs.pins import Pins, normalize, requirement_name
from perfsuite.errors import CannotMeasure, PerfsuiteError

MARKER = "perfsuite-env.json"
#: how long one uv command may take (a cold build of a deep-learning stack downloads GBs)
UV_TIMEOUT_S = 3600.0
#: most package changes :func:`changes_text` spells out
SHOWN = 6
#: perfsuite's requirements that only the controller uses
CONTROLLER_ONLY = frozenset({"uv"})
#: the marks uv draws before its lines (a cross, a tree's branches)
_DECOR = re.compile(r"^[\s\u00d7\u2570\u2500\u25b6|]+")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;]+)")


class EnvBuildError(CannotMeasure):
    """A revision's pins cannot be resolved or installed: the message names the revision
    and what uv said."""


def envs_root() -> Path:
    """``$XDG_CACHE_HOME/perfsuite/envs``, else ``~/.cache/perfsuite/envs``."""
    return cache_home("envs")


def uv_binary() -> str:
    """The uv executable: perfsuite's environment's, else the first on ``PATH``."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found is None:
        raise PerfsuiteError(
            "per-side environments are built with uv, which is not installed here: pip install uv"
        )
    return found


def _uv(
    args: Sequence[str],
    cwd: Path,
    failed: str,
    fix: str,
    error: type[PerfsuiteError] = EnvBuildError,
) -> None:
    """``uv ARGS`` in ``cwd``; where it fails, ``error`` ``"{failed}: <uv's reason> (uv
    <command>); {fix}"`` (by default :class:`EnvBuildError`: the revision's pins are at
    fault)."""
    env = dict(os.environ)
    if "UV_FIND_LINKS" not in env and env.get("PIP_FIND_LINKS"):
        env["UV_FIND_LINKS"] = ",".join(env["PIP_FIND_LINKS"].split())
    env.pop("VIRTUAL_ENV", None)  # every command names its --python
    proc = subprocess.run(
        [uv_binary(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=UV_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        command = " ".join(args[:2] if args[0] == "pip" else args[:1])
        raise error(f"{failed}: {uv_said(proc.stderr)} (uv {command}); {fix}")


def uv_said(stderr: str) -> str:
    """uv's reason for a failure, on one line: its ``cause:`` (or ``Because ...``)
    line where it gives one, else its ``error:`` line, else its last line.

    >>> uv_said("error: No solution found when resolving dependencies\\n  cause: Because "
    ...         "there is no version of pillow==99.0 we can conclude ... unsatisfiable.\\n")
    'Because there is no version of pillow==99.0 we can conclude ... unsatisfiable.'
    """
    lines = [_DECOR.sub("", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    for prefix in ("cause: ", "Because ", "error: "):
        for line in lines:
            if line.startswith(prefix):
                return line.removeprefix("cause: ").removeprefix("error: ")
    return lines[-1] if lines else "(no output)"


def side_requirements() -> list[str]:
    """What perfsuite needs inside a side: its own requirements but those of its extras
    and those only the controller uses (uv)."""
    try:
        found = metadata.requires("perfsuite") or []
    except metadata.PackageNotFoundError:
        return ["pytest>=8.1", "pytest-benchmark>=5.1"]
    wanted = (req for req in found if not re.search(r"\bextra\s*==", req))
    return [req for req in wanted if requirement_name(req)[0] not in CONTROLLER_ONLY]


@dataclass(frozen=True)
class Resolved:
    """A revision's pins resolved for this interpreter: ``lines`` as uv wrote them."""

    lines: tuple[str, ...]

    @property
    def key(self) -> str:
        """The environment's name: a digest of the interpreter and the resolved pins."""
        text = "\n".join([sys.version, os.path.realpath(sys.executable), *self.lines])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def versions(self) -> dict[str, str]:
        """Distribution (normalized name) -> its pinned version."""
        found = {}
        for line in self.lines:
            match = _PIN.match(line)
            if match:
                found[normalize(match.group(1))] = match.group(3)
        return found


def resolve(pins: Pins, checkout: Path, scratch: Path, label: str) -> Resolved:
    """Resolve ``pins`` (a revision checked out at ``checkout``; files are written in
    ``scratch``) with uv; pins that cannot be resolved raise one line naming ``label``
    and what uv said."""
    scratch.mkdir(parents=True, exist_ok=True)
    locked = [] if pins.locked_extras is None else _export_lock(pins, checkout, scratch, label)
    wanted = scratch / "requirements.in"
    wanted.write_text("\n".join([*pins.requirements, *locked, *side_requirements()]) + "\n")
    args = ["pip", "compile", "--python", sys.executable, "--quiet", "--no-header"]
    args += ["--no-annotate", "--emit-find-links", "--emit-index-url", str(wanted)]
    if pins.constraints:
        limits = scratch / "constraints.in"
        limits.write_text("\n".join(pins.constraints) + "\n")
        args += ["-c", str(limits)]
    out = scratch / "resolved.txt"
    files = ", ".join(pins.sources) or "its pins"
    _uv(
        [*args, "-o", str(out)],
        checkout,
        f"{label}: its pins cannot be installed",
        f"fix {files} in that revision",
    )
    lines = (line.strip() for line in out.read_text().splitlines())
    return Resolved(tuple(line for line in lines if line and not line.startswith("#")))


def _export_lock(pins: Pins, checkout: Path, scratch: Path, label: str) -> list[str]:
    """What the revision's ``uv.lock`` pins for its extras and uv's default groups."""
    out = scratch / "locked.txt"
    args = ["export", "--frozen", "--no-hashes", "--no-emit-project", "--quiet"]
    args += ["--format", "requirements-txt", "-o", str(out)]
    for extra in pins.locked_extras or ():
        args += ["--extra", extra]
    _uv(args, checkout, f"{label}: its uv.lock cannot be exported", "run uv lock in that revision")
    return [line for line in out.read_text().splitlines() if not line.lstrip().startswith("#")]


def interpreter(environment: Path) -> Path:
    """The Python of a virtual environment."""
    return environment / "bin" / "python"


@dataclass(frozen=True)
class Environment:
    """A built environment: its folder, and how long it took to get (built or reused)."""

    path: Path
    seconds: float
    built: bool

    def describe(self) -> str:
        how = f"built in {self.seconds:.0f} s" if self.built else "reused"
        return f"{self.path} ({how})"


def ensure(resolved: Resolved, checkout: Path, label: str, root: Path | None = None) -> Environment:
    """The environment of ``resolved``: the cached one, else built now (in
    ``checkout``, where relative paths in the pins point) and kept."""
    final = (root or envs_root()) / resolved.key
    start = time.monotonic()
    built = False

    def load(path: Path) -> Path | None:
        return path if (path / MARKER).is_file() and interpreter(path).exists() else None

    def build(tmp: Path) -> None:
        nonlocal built
        built = True
        requirements = tmp / "resolved.txt"
        requirements.write_text("\n".join(resolved.lines) + "\n")
        venv = ["venv", "--quiet", "--allow-existing", "--relocatable", "--python", sys.executable]
        failed, fix = f"{label}: no virtual environment could be made in {tmp}", "check the disk"
        _uv([*venv, str(tmp)], checkout, failed, fix, error=PerfsuiteError)
        install = ["pip", "install", "--quiet", "--compile-bytecode", "--no-deps"]
        install += ["--python", str(interpreter(tmp)), "-r", str(requirements)]
        _uv(
            install, checkout, f"{label}: its pins cannot be installed", "fix them in that revision"
        )
        marker = {"python": sys.version.split()[0], "pins": list(resolved.lines)}
        atomic_write_text(tmp / MARKER, json.dumps(marker, indent=1))

    path = build_dir_once(final, load, build, "environment")
    return Environment(path, time.monotonic() - start, built)


def perfsuite_shim(folder: Path) -> Path:
    """A folder holding only the controller's perfsuite (a link to its package) and its
    distribution's metadata (so pytest loads its plugin through the entry point)."""
    import perfsuite

    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "perfsuite"
    if not link.exists():
        link.symlink_to(Path(perfsuite.__file__).resolve().parent, target_is_directory=True)
    info = folder / "perfsuite.dist-info"
    info.mkdir(exist_ok=True)
    try:
        dist = metadata.distribution("perfsuite")
        version, entry_points = dist.version, dist.read_text("entry_points.txt") or ""
    except metadata.PackageNotFoundError:
        version, entry_points = "0", ""
    if "[pytest11]" not in entry_points:
        entry_points = "[pytest11]\nperfsuite = perfsuite.plugin\n"
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: perfsuite\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)
    return folder


def changes(old: Resolved, new: Resolved) -> list[str]:
    """What differs between two resolved environments, package by package.

    >>> changes(Resolved(("numpy==1.26.4", "six==1.0")), Resolved(("numpy==2.0.0", "tqdm==4")))
    ['numpy 1.26.4 -> 2.0.0', 'six 1.0 -> (none)', 'tqdm (none) -> 4']
    """
    a, b = old.versions, new.versions
    return [
        f"{name} {a.get(name, '(none)')} -> {b.get(name, '(none)')}"
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]


def changes_text(found: Sequence[str]) -> str:
    """The packages that differ, as the first line names them.

    >>> changes_text(["numpy 1.26.4 -> 2.0.0"]), changes_text([])
    ('numpy 1.26.4 -> 2.0.0', 'the same packages')
    >>> changes_text([f"p{i} 1 -> 2" for i in range(8)])[-17:]
    'p5 1 -> 2, 2 more'
    """
    if not found:
        return "the same packages"
    shown = ", ".join(found[:SHOWN])
    return shown + (f", {len(found) - SHOWN} more" if len(found) > SHOWN else "")


def clean(root: Path | None = None) -> int:
    """Remove every cached environment; returns how many there were."""
    folder = root or envs_root()
    if not folder.is_dir():
        return 0
    count = sum(1 for path in folder.iterdir() if (path / MARKER).is_file())
    discard_dir(folder)
    return count
