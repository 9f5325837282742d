"""Who a side of an A/B is: its revision, its folder, where its pytest starts and in
which environment (its own revision's pins, :mod:`perfsuite.envs`, where they differ:
:func:`in_own_environments`), and the checks made of the sides before either starts
(:func:`peered`, :func:`check_sides`). Its running process is
:class:`perfsuite.ab.sidemanage.SideProcess`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfsuite.ab.pytest_args import missing_files, own_paths
from perfsuite.ab.revisions import Revision
from perfsuite.ab.rootdir import rooted
from perfsuite.envs.build import Resolved, ensure, interpreter, perfsuite_shim, resolve
from perfsuite.envs.pins import Pins
from perfsuite.errors import PerfsuiteError


def side_pythonpath(root: Path, inherited: str | None, after: Sequence[Path] = ()) -> str:
    """The side's root (and ``src/`` where present) first, so its own package wins; then
    ``after`` (the controller's perfsuite, in an environment of the side's own)."""
    parts = [str(root)]
    if (root / "src").is_dir():
        parts.append(str(root / "src"))
    parts.extend(str(path) for path in after)
    if inherited:
        parts.append(inherited)
    return os.pathsep.join(parts)


#: the module that runs inside a side, as a revision of perfsuite itself names it
#: (``perfsuite/ab/``): a revision with none of them predates the lockstep protocol
SIDE_MODULES = ("remote.py", "side.py")


def peered(specs: Sequence[SideSpec]) -> list[SideSpec]:
    """``specs``, each knowing the other sides' folders (:attr:`SideSpec.peers`); a
    checkout that lacks the folder perfsuite ab was started in gets it, empty, so that
    its pytest starts there and the arguments name the same paths on every side."""
    for spec in specs:
        folder = spec.root / spec.subdir
        if spec.revision.sha is None or folder.is_dir():  # the working tree is never changed
            continue
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            raise PerfsuiteError(
                f"{spec.title}: cannot start pytest in {spec.subdir.as_posix()} ({exc}); "
                "start perfsuite ab from the repository root"
            ) from None
    return [
        replace(spec, peers=tuple(other.cwd for other in specs if other is not spec))
        for spec in specs
    ]


def check_sides(specs: Sequence[SideSpec], args: Sequence[str]) -> None:
    """Refuse, in one line, a revision of perfsuite itself whose perfsuite predates the
    lockstep protocol, and a bench file ``args`` name that no side has."""
    for spec in specs:
        for package in (spec.root / "perfsuite", spec.root / "src" / "perfsuite"):
            if not (package / "__init__.py").is_file():
                continue
            if not any((package / "ab" / name).is_file() for name in SIDE_MODULES):
                raise PerfsuiteError(
                    f"{spec.title}: its perfsuite predates the lockstep protocol "
                    "(no perfsuite/ab/remote.py); perfsuite ab refuses it: pick a later "
                    "revision or compare saved runs with perfsuite compare"
                )
    nowhere = set.intersection(*(set(missing_files(args, spec.cwd)) for spec in specs))
    if nowhere:
        first = next(arg for arg in args if arg in nowhere)
        sides = ", ".join(
            f"{s.name} = {s.revision.spec if s.revision.sha else s.revision.label}" for s in specs
        )
        raise PerfsuiteError(
            f"{first}: neither side has it ({sides}); name a bench file of either "
            "revision, relative to where perfsuite ab starts"
        )


@dataclass
class SideSpec:
    """Who a side is: ``A`` (base) or ``B`` (candidate), its revision and its folder."""

    name: str
    revision: Revision
    root: Path
    subdir: Path = Path()  # where pytest starts, relative to the root (PYTEST_ARGS' base)
    peers: tuple[Path, ...] = ()  # the other sides' folders (:meth:`cwd`)
    #: the side's own environment (:mod:`perfsuite.envs.build`) and the folder through
    #: which it finds the controller's perfsuite; None: this process's environment
    environment: Path | None = None
    shim: Path | None = None
    #: the packages whose versions differ from the base side's environment ("numpy
    #: 1.26.4 -> 2.0.0"): the candidate side's, where each side has its own
    upgrade: tuple[str, ...] = ()

    @property
    def python(self) -> str:
        """The interpreter the side's pytest runs in."""
        return sys.executable if self.environment is None else str(interpreter(self.environment))

    @property
    def cwd(self) -> Path:
        folder = self.root / self.subdir
        return folder if folder.is_dir() else self.root

    @property
    def title(self) -> str:
        role = "base" if self.name == "A" else "candidate"
        return f"side {self.name} ({role}, {self.revision.label})"

    def pytest_args(self, args: Sequence[str]) -> list[str]:
        """``args`` for this side's pytest, rooted at its folder: node ids are relative to
        the repository root whatever the arguments (:mod:`perfsuite.ab.rootdir`). Named
        bench files, and paths a peer has, that this side lacks are left out
        (:func:`perfsuite.ab.pytest_args.own_paths`)."""
        kept = own_paths(args, self.cwd, self.peers)
        return [*rooted(self.cwd, self.root, kept), *kept]

    def env(self) -> dict[str, str]:
        """This environment, with the side's own code first on ``PYTHONPATH``; in an
        environment of the side's own, that environment activated."""
        env = dict(os.environ)
        after = [self.shim] if self.shim is not None else []
        env["PYTHONPATH"] = side_pythonpath(self.root, os.environ.get("PYTHONPATH"), after)
        if self.environment is not None:
            env["VIRTUAL_ENV"] = str(self.environment)
            env["PATH"] = os.pathsep.join([str(self.environment / "bin"), env.get("PATH", "")])
            env.pop("PYTHONHOME", None)
        return env


def resolve_sides(specs: Sequence[SideSpec], pins: Sequence[Pins], workdir: Path) -> list[Resolved]:
    """Each side's pins resolved for this interpreter (one line naming the side where
    they cannot be)."""
    return [
        resolve(side_pins, spec.root, workdir / f"pins-{spec.name}", spec.title)
        for spec, side_pins in zip(specs, pins, strict=True)
    ]


def in_own_environments(
    specs: Sequence[SideSpec], resolved: Sequence[Resolved], upgrade: Sequence[str], workdir: Path
) -> tuple[list[SideSpec], list[str]]:
    """The sides, each in the environment of its resolved pins (built now where none is
    cached), and one line per side saying which and how long it took. The candidate
    side's :attr:`SideSpec.upgrade` is ``upgrade``, what differs from the base's
    (:func:`perfsuite.envs.build.changes`)."""
    shim = perfsuite_shim(workdir / "perfsuite-shim")
    sides, lines = [], []
    for spec, pins in zip(specs, resolved, strict=True):
        what = f"its environment ({len(pins.lines)} pins)"
        print(f"perfsuite ab: {spec.title}: {what} ...", flush=True)
        env = ensure(pins, spec.root, spec.title)
        lines.append(f"{spec.title}: environment {env.describe()}")
        print(f"perfsuite ab: {lines[-1]}", flush=True)
        moved = tuple(upgrade) if spec is specs[-1] else ()
        sides.append(replace(spec, environment=env.path, shim=shim, upgrade=moved))
    return sides, lines
