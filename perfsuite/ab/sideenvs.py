"""Each side of an A/B in an environment of its own revision's pins
(:mod:`perfsuite.envs`): resolved before the run starts, built or reused, then named in
the run's first line and its report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from perfsuite.ab.sidespec import SideSpec
from perfsuite.envs.build import Resolved, ensure, perfsuite_shim, resolve
from perfsuite.envs.pins import Pins


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
