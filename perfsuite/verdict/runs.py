"""Saved pytest-benchmark runs: finding them in the storage by run id, loading and validating them.

A run is a pytest-benchmark JSON document (``--benchmark-save``/``--benchmark-autosave``
into ``--benchmark-storage``, or ``--benchmark-json``). Run ids resolve the way
pytest-benchmark's ``--benchmark-compare`` resolves them: an existing file path, or a
glob on the file name (``0004``, ``0004_abc``, ``*nightly``), optionally prefixed by
the machine folder (``Linux-CPython-3.11-64bit/0004``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError

#: the pytest-benchmark JSON major versions whose layout perfsuite reads
SUPPORTED_MAJOR_VERSIONS = frozenset({3, 4, 5})
#: file names pytest-benchmark gives saved runs: NNNN_name.json
RUN_GLOB = "[0-9][0-9][0-9][0-9]_*.json"


@dataclass(frozen=True)
class Bench:
    """One bench of a run: its name, group, extra_info, raw per-round seconds, median."""

    fullname: str
    name: str
    group: str | None
    extra_info: dict[str, Any]
    data: tuple[float, ...]
    median: float | None

    @property
    def items(self) -> int | None:
        items = self.extra_info.get("items")
        return int(items) if isinstance(items, int | float) and items > 0 else None

    @property
    def unit(self) -> str:
        return str(self.extra_info.get("unit") or "items")

    @property
    def label(self) -> str:
        """``group/variant`` where perfsuite recorded them, else the bench's name."""
        group, variant = self.extra_info.get("group"), self.extra_info.get("variant")
        return f"{group}/{variant}" if group and variant else self.name

    def rates(self) -> list[float]:
        """Per-round items/s (empty without ``items`` or raw samples)."""
        items = self.items
        if items is None:
            return []
        return [items / t for t in self.data if t > 0]

    def median_rate(self) -> float | None:
        """items/s at the median call time."""
        items = self.items
        if items is None or not self.median:
            return None
        return items / self.median

    def counters(self) -> dict[str, int]:
        """The exact counters this bench declared (``extra_info['exact_counters']``)."""
        names = self.extra_info.get("exact_counters") or []
        found: dict[str, int] = {}
        for name in names:
            value = self.extra_info.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                found[str(name)] = value
        return found


@dataclass(frozen=True)
class Run:
    """One saved (or the session's own) run."""

    source: str
    benches: dict[str, Bench]
    machine_info: dict[str, Any] = field(default_factory=dict)
    commit_info: dict[str, Any] = field(default_factory=dict)
    datetime: str | None = None
    version: str | None = None

    @property
    def facts(self) -> dict[str, Any]:
        """perfsuite's machine facts (``machine_info['perfsuite']``), empty if absent."""
        facts = self.machine_info.get("perfsuite")
        return facts if isinstance(facts, dict) else {}

    @property
    def name(self) -> str:
        return Path(self.source).stem if self.source.endswith(".json") else self.source


def _fail(source: str, why: str) -> PerfsuiteError:
    return PerfsuiteError(f"{source}: {why}")


def parse_run(document: Any, source: str) -> Run:
    """Validate a pytest-benchmark JSON document and build a :class:`Run` from it."""
    hint = "save a new baseline with --benchmark-autosave"
    if not isinstance(document, dict):
        raise _fail(source, f"not a pytest-benchmark run (top level is not an object); {hint}")
    version = document.get("version")
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        raise _fail(source, f"not a pytest-benchmark run (no 'version' field); {hint}")
    major = int(version.split(".")[0])
    if major not in SUPPORTED_MAJOR_VERSIONS:
        supported = ", ".join(f"{v}.x" for v in sorted(SUPPORTED_MAJOR_VERSIONS))
        raise _fail(
            source, f"saved by pytest-benchmark {version}, perfsuite reads {supported}; {hint}"
        )
    raw = document.get("benchmarks")
    if not isinstance(raw, list):
        raise _fail(source, f"not a pytest-benchmark run (no 'benchmarks' list); {hint}")
    benches: dict[str, Bench] = {}
    for index, entry in enumerate(raw):
        bench = _parse_bench(entry, source, index)
        benches[bench.fullname] = bench
    machine = document.get("machine_info")
    commit = document.get("commit_info")
    stamp = document.get("datetime")
    return Run(
        source=source,
        benches=benches,
        machine_info=machine if isinstance(machine, dict) else {},
        commit_info=commit if isinstance(commit, dict) else {},
        datetime=stamp if isinstance(stamp, str) else None,
        version=version,
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_bench(entry: Any, source: str, index: int) -> Bench:
    where = f"benchmark #{index + 1}"
    if not isinstance(entry, dict) or not isinstance(entry.get("fullname"), str):
        raise _fail(source, f"{where} has no 'fullname'; the file is damaged")
    stats = entry.get("stats")
    if not isinstance(stats, dict):
        raise _fail(source, f"{where} ({entry['fullname']}) has no 'stats'; the file is damaged")
    raw_data = stats.get("data")
    data: tuple[float, ...] = ()
    if isinstance(raw_data, list) and all(_number(x) for x in raw_data):
        data = tuple(float(x) for x in raw_data)
    median: Any = stats.get("median")
    extra = entry.get("extra_info")
    group = entry.get("group")
    return Bench(
        fullname=entry["fullname"],
        name=str(entry.get("name") or entry["fullname"]),
        group=group if isinstance(group, str) else None,
        extra_info=extra if isinstance(extra, dict) else {},
        data=data,
        median=float(median) if _number(median) and float(median) > 0 else None,
    )


def load_run(path: Path) -> Run:
    """Read and validate one run file; errors name the file and say what to do."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PerfsuiteError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfsuiteError(f"{path}: cannot be read ({exc})") from None
    if not text.strip():
        raise _fail(str(path), "empty file, not a pytest-benchmark run")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated")
        what = "truncated JSON" if truncated else "not valid JSON"
        raise _fail(
            str(path),
            f"{what} ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "delete it or save a new baseline with --benchmark-autosave",
        ) from None
    return parse_run(document, str(path))


def storage_path(storage: str | Path) -> Path:
    """The folder of a file storage (``file://`` URIs accepted); other storages are refused."""
    text = str(storage)
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif "://" in text:
        raise PerfsuiteError(
            f"storage {text!r}: perfsuite compares runs in file storage only "
            "(use --benchmark-storage file://PATH)"
        )
    return Path(text)


def _machine_id() -> str:
    from pytest_benchmark.utils import get_machine_id

    machine_id: str = get_machine_id()  # type: ignore[no-untyped-call]
    return machine_id


@dataclass(frozen=True)
class Storage:
    """A pytest-benchmark file storage: ``<root>/<machine id>/NNNN_name.json``.

    ``machine_id`` limits plain run ids and "latest" to one machine's folder, as
    ``--benchmark-compare`` does inside pytest; ``None`` searches every machine folder,
    as ``pytest-benchmark compare`` does offline.
    """

    root: Path
    machine_id: str | None = None

    @classmethod
    def for_session(cls, storage: str | Path) -> Storage:
        """The storage and machine folder a pytest session saves into."""
        return cls(storage_path(storage), _machine_id())

    def _platform_glob(self) -> str:
        return self.machine_id or "*"

    def runs(self) -> list[Path]:
        """Every saved run file, oldest first (sorted by name, as pytest-benchmark does)."""
        if not self.root.is_dir():
            return []
        files = {
            p
            for folder in self.root.glob(self._platform_glob())
            if folder.is_dir()
            for p in folder.glob(RUN_GLOB)
        }
        return sorted(files, key=lambda p: (p.name, str(p.parent)))

    def latest(self) -> Path | None:
        """The newest saved run, or ``None`` when the storage holds none yet."""
        runs = self.runs()
        return runs[-1] if runs else None

    def query(self, run_id: str) -> list[Path]:
        """Files matching a run id or glob (pytest-benchmark's rules), oldest first."""
        candidate = Path(run_id)
        if candidate.is_file():
            return [candidate]
        parts = candidate.parts
        if len(parts) > 2 or not parts:
            return []
        platform_glob, name_glob = parts if len(parts) == 2 else (self._platform_glob(), parts[0])
        name_glob = name_glob.rstrip("*") + "*.json"
        found = {
            p
            for folder in self.root.glob(platform_glob)
            if folder.is_dir()
            for p in folder.glob(name_glob)
        }
        found.update(self.root.glob(name_glob))
        return sorted((p for p in found if p.is_file()), key=lambda p: (p.name, str(p.parent)))

    def resolve(self, run_id: str) -> Path:
        """The one file ``run_id`` names (the newest if a glob matches several).

        A run id that matches nothing raises an error listing the closest stored names.
        """
        matches = self.query(run_id)
        if matches:
            return matches[-1]
        names = [p.stem for p in self.runs()]
        where = f"{self.root}" + (f"/{self.machine_id}" if self.machine_id else "")
        if not names:
            raise PerfsuiteError(
                f"run {run_id!r} not found: no saved runs in {where} "
                "(save one with --benchmark-autosave)"
            )
        close = difflib.get_close_matches(run_id, names, n=5, cutoff=0.3)
        if not close:
            close = [n for n in names if n.startswith(run_id[:4])][:5] or names[-5:]
        raise PerfsuiteError(f"run {run_id!r} not found in {where}; closest: {', '.join(close)}")


def find_run(spec: str, storage: Storage) -> Path:
    """A path to an existing file, or a run id resolved in ``storage``."""
    path = Path(spec)
    if path.is_file():
        return path
    if path.suffix == ".json" and len(path.parts) > 1 and not path.exists():
        raise PerfsuiteError(f"{spec}: no such file")
    return storage.resolve(spec)


def load_runs(paths: Sequence[Path]) -> list[Run]:
    """Load several runs for a history; unreadable ones are skipped (history is best-effort)."""
    runs: list[Run] = []
    for path in paths:
        try:
            runs.append(load_run(path))
        except PerfsuiteError:
            continue
    return runs
