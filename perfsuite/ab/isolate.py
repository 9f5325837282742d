"""One pair of sides per bench file: which files a selection holds, and one merged JSON;
and the node of a test module that is collected but never imported (:class:`Unimported`,
the listing's and a side's for the files it does not run).

``perfsuite ab`` runs each bench file in its own pair of side processes (``--isolate
file``, the default), so no file's imports (TensorFlow, torch) move another file's
benches by an offset that alternating blocks cannot cancel
(``tools/validation/process_offsets.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from perfsuite.ab.protocol import COLLECT_OUT_ENV
from perfsuite.data.fsutil import atomic_write_text

if TYPE_CHECKING:
    from perfsuite.ab.sidespec import SideSpec

#: how long one side's file listing (``pytest --collect-only``) may take
COLLECT_TIMEOUT_S = 600.0
#: pytest's exit codes for "collected" and "collected nothing"
COLLECTED = (0, 5)


class Unimported(pytest.File):
    """A test module that yields no tests, so it is never imported. In a listing
    (``COLLECT_OUT_ENV`` set) its node id is noted when pytest collects it: it is in the
    selection, not merely beside it."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        out = os.environ.get(COLLECT_OUT_ENV)
        if out:
            with open(out, "a") as listing:
                listing.write(f"{self.nodeid}\n")
        return []


def unimported(
    found: Iterable[pytest.Item | pytest.Collector], parent: pytest.Collector
) -> list[pytest.Item | pytest.Collector]:
    """``found`` with each test module an :class:`Unimported` node."""
    return [
        Unimported.from_parent(parent, path=n.path) if isinstance(n, pytest.Module) else n
        for n in found
    ]


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Generator[None, Any, Any]:
    """Plugin hook (``-p perfsuite.ab.isolate``): each file pytest would collect as a test
    module becomes an :class:`Unimported` node."""
    found = yield
    return unimported(found, parent) if os.environ.get(COLLECT_OUT_ENV) else found


def collect_files(
    specs: Sequence[SideSpec], pytest_args: Sequence[str], workdir: Path
) -> list[list[str] | None]:
    """The bench files each side's pytest would collect from ``pytest_args`` (relative to
    the repository root, in pytest's order), listed by both sides at once, each rooted
    as it runs (:meth:`SideSpec.pytest_args`), without importing any bench module; None
    for a side whose listing fails or names a test inside a file (the lockstep run then
    reports any failure with the side's name)."""
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for spec in specs:
            listing = workdir / f"{spec.name}.collected"
            listing.unlink(missing_ok=True)
            # pytest-benchmark's storage (made on start) is the run's scratch folder
            proc = subprocess.Popen(
                [
                    spec.python,
                    "-m",
                    "pytest",
                    "-p",
                    "perfsuite.ab.isolate",
                    *spec.pytest_args(pytest_args),
                    "--collect-only",
                    "-q",
                    f"--benchmark-storage={workdir / 'listing-storage'}",
                ],
                cwd=spec.cwd,
                env={**spec.env(), COLLECT_OUT_ENV: str(listing)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append((proc, listing))
        found: list[list[str] | None] = []
        for proc, listing in procs:
            try:
                code = proc.wait(COLLECT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                found.append(None)
                continue
            files = listing.read_text().splitlines() if listing.is_file() else []
            found.append(list(dict.fromkeys(files)) if code in COLLECTED else None)
        return found
    finally:  # interrupted (Ctrl-C, SIGTERM) or timed out: no listing outlives the run
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def sessions(
    specs: Sequence[SideSpec], pytest_args: Sequence[str], workdir: Path
) -> list[list[str] | None]:
    """The files of each session: one per bench file either side collects, in order
    (base first); ``[None]`` (one session over the whole selection) when a side's
    listing fails or finds at most one file."""
    files: list[str] = []
    for found in collect_files(specs, pytest_args, workdir):
        if found is None:
            return [None]
        files += found
    unique = list(dict.fromkeys(files))
    return [[f] for f in unique] if len(unique) > 1 else [None]


def _key(bench: dict[str, Any]) -> str:
    return str(bench.get("fullname") or bench.get("name"))


def merge_json(parts: Sequence[Path], out: Path) -> None:
    """One pytest-benchmark JSON from several sessions' files of one side: the first
    file's machine and commit info, every file's benchmarks, each bench once (its
    first session's, where fresh pairs of processes ran it again). Written atomically; with
    no readable part, nothing is written."""
    merged: dict[str, Any] | None = None
    for part in parts:
        try:
            document = json.loads(part.read_text())
        except (OSError, ValueError):
            continue
        if merged is None:
            merged = document
            seen = {_key(b) for b in merged.get("benchmarks", [])}
            continue
        for bench in document.get("benchmarks", []):
            if _key(bench) not in seen:
                seen.add(_key(bench))
                merged.setdefault("benchmarks", []).append(bench)
    if merged is not None:
        atomic_write_text(out, json.dumps(merged, indent=4))
