"""One pair of sides per bench file: which files a selection holds, and one merged JSON.

``perfsuite ab`` runs each bench file in its own pair of side processes (``--isolate
file``, the default), so no file's imports enter another file's processes. Importing
TensorFlow or torch made a single-threaded PIL-decode bench in the same process drift
between processes by up to 30% on a 2-core machine (``tools/process_offsets.py``), which
alternating blocks inside one pair of processes cannot cancel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfsuite.ab.sides import SideSpec
from perfsuite.data.fsutil import atomic_write_text

#: how long one side's ``pytest --collect-only`` may take (framework imports included)
COLLECT_TIMEOUT_S = 600.0
#: where this module, loaded as a pytest plugin by :func:`collect`, writes the node ids
COLLECT_OUT_ENV = "PERFSUITE_AB_COLLECT_OUT"
#: pytest's exit codes for "collected" and "collected nothing"
COLLECTED = (0, 5)


def bench_files(nodeids: Sequence[str]) -> list[str]:
    """The files of these node ids, in first-seen order (the part before ``::``)."""
    return list(dict.fromkeys(n.split("::", 1)[0] for n in nodeids if "::" in n))


def pytest_collection_finish(session: Any) -> None:
    """Plugin hook (``-p perfsuite.ab.isolate``): write the collected node ids, one per
    line, where :data:`COLLECT_OUT_ENV` says; pytest's own listing changes with -q/-v."""
    out = os.environ.get(COLLECT_OUT_ENV)
    if out:
        Path(out).write_text("".join(f"{item.nodeid}\n" for item in session.items))


def collect(spec: SideSpec, pytest_args: Sequence[str], workdir: Path) -> list[str] | None:
    """The node ids one side's pytest collects from ``pytest_args``, or None when its
    collection fails (the lockstep run then reports the failure with the side's name)."""
    listing = workdir / f"{spec.name}.collected"
    env = spec.env()
    env[COLLECT_OUT_ENV] = str(listing)
    command = [
        sys.executable, "-m", "pytest", "-p", "perfsuite.ab.isolate", *pytest_args,
        "--collect-only", "-q",
    ]  # fmt: skip
    try:
        # subprocess.run kills the child when it is interrupted (Ctrl-C, SIGTERM).
        proc = subprocess.run(
            command,
            cwd=spec.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=COLLECT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode not in COLLECTED or not listing.is_file():
        return None
    return listing.read_text().splitlines()


def sessions(
    specs: Sequence[SideSpec], pytest_args: Sequence[str], workdir: Path
) -> list[list[str] | None]:
    """The files of each session: one per bench file either side collects, in order
    (base first); ``[None]`` (one session over the whole selection) when a side's
    collection fails or finds at most one file."""
    files: list[str] = []
    for spec in specs:
        nodeids = collect(spec, pytest_args, workdir)
        if nodeids is None:
            return [None]
        files += bench_files(nodeids)
    unique = list(dict.fromkeys(files))
    return [[f] for f in unique] if len(unique) > 1 else [None]


def _key(bench: dict[str, Any]) -> str:
    return str(bench.get("fullname") or bench.get("name"))


def merge_json(parts: Sequence[Path], out: Path) -> None:
    """One pytest-benchmark JSON from several sessions' files of one side: the first
    file's machine and commit info, every file's benchmarks, each bench once (its
    first session's, when ``--processes`` ran it in several). Written atomically; with
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
