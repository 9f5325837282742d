"""The saved runs of a pytest-benchmark file storage, in one order.

A storage is the folder ``--benchmark-storage`` names (a path or a ``file://`` URI,
inside the working directory or not), holding ``<machine id>/NNNN_name.json``. The
gate (:mod:`perfsuite.gate`), the report and the ``perfsuite`` command all ask a
:class:`Storage` for "the newest run", "the runs before this one", "the runs of this
machine" and "the run this id names", so they agree on what came before what.

The order. Runs are ordered by the ``datetime`` pytest-benchmark records inside each
saved JSON (the moment the run was saved, in UTC), ties broken by the counter in the
file name (``0004_...`` before ``0005_...``). Not by

* the file's mtime: copying a storage or restoring it from a CI cache rewrites it;
* the file name: ``10000_x`` sorts before ``9999_x``, and two machines' folders
  interleave arbitrarily;
* the commit: commit order is not the order runs were taken in (a rebase, a
  benchmark of an old commit).

A file that cannot be read, or records no ``datetime``, sorts after every dated one
(by its counter), so "the newest run" names it and loading it reports why, rather than
silently judging against an older run.

Looking runs up by id uses pytest-benchmark's own ``FileStorage.query`` (the rules of
``--benchmark-compare``: an existing file, or a glob on the file name, optionally
prefixed by the machine folder: ``0004``, ``*nightly``, ``Linux-CPython-3.11-64bit/0004``).
Its loading is not used: it skips a broken file with a warning, where a verdict needs
the reason as an error, and its constructor creates the folder, which a read-only
``perfsuite compare`` must not do.

A gated run that ends in a regression or an unconfirmed suspect, or whose confirmation
was interrupted, is marked so in its
saved JSON (``GATE_KEY``, beside pytest-benchmark's keys, written atomically), and a
gate's default baseline is the newest run not so marked (:meth:`Storage.gate_baseline`):
a run that failed its gate is what the gate found wrong, not what the next run is
judged against. A run saved without ``--perf-gate`` is never marked.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.data.fsutil import atomic_write_text
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.runs import Run, load_run, parse_run

#: pytest-benchmark's saved-run file names: a counter of 4 or more digits, ``_``, a name
RUN_NAME = re.compile(r"^(\d{4,})_.*\.json$")
#: the key of a saved run's JSON that holds its gate's mark
GATE_KEY = "perfsuite_gate"
#: the gate outcomes (:class:`perfsuite.verdict.gate_rules.GateOutcome` values, and an
#: interrupted confirmation) that keep a run from being a gate's default baseline
NOT_A_BASELINE = ("regression", "unconfirmed", "interrupted")


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


def this_machine_id() -> str:
    """The machine folder pytest-benchmark saves this machine's runs into."""
    from pytest_benchmark.utils import get_machine_id

    machine_id: str = get_machine_id()  # type: ignore[no-untyped-call]
    return machine_id


def root_problem(root: Path) -> str | None:
    """Why ``root`` cannot be a storage (one folder per machine, each holding saved
    runs), said to the user after ``--storage ROOT``; None when it can."""
    if not root.exists():
        return "no such folder"
    if not root.is_dir():
        return "a file, not a folder of saved runs"
    if any(RUN_NAME.match(p.name) for p in root.glob("*.json")):
        return (
            f"holds saved runs itself, so it is one machine's folder: name the folder "
            f"above it (--storage {root.parent})"
        )
    return None


def check_storage_root(root: Path) -> None:
    """Refuse ``root`` as a storage, in one line naming it, where :func:`root_problem`
    finds it cannot be one."""
    why = root_problem(root)
    if why:
        raise PerfsuiteError(f"--storage {root}: {why}")


def _counter(path: Path) -> int | None:
    """A saved run's counter (``12`` for ``0012_...json``), or None."""
    found = RUN_NAME.match(path.name)
    return int(found.group(1)) if found else None


def _moment(stamp: Any) -> dt.datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class RunFile:
    """A saved run file and what orders it: its ``datetime`` and its name's counter."""

    path: Path
    saved_at: dt.datetime | None  # None: unreadable, or no datetime recorded

    @property
    def counter(self) -> int:
        match = RUN_NAME.match(self.path.name)
        return int(match.group(1)) if match else -1

    @property
    def order(self) -> tuple[Any, ...]:
        """The sort key: dated runs by time, then undated ones; the counter breaks ties."""
        if self.saved_at is None:
            return (1, self.counter, self.path.name, str(self.path.parent))
        return (0, self.saved_at, self.counter, self.path.name, str(self.path.parent))


class Storage:
    """A pytest-benchmark file storage: ``<root>/<machine id>/NNNN_name.json``.

    ``machine_id`` limits plain run ids, :meth:`runs` and :meth:`latest` to one machine's
    folder, as ``--benchmark-compare`` does inside pytest; ``None`` searches every
    machine folder, as ``pytest-benchmark compare`` does offline.

    Usage::

        storage = Storage.from_option("file:///ci/cache/benchmarks")
        storage.latest()                      # the newest saved run, any machine
        storage.before(run_path)              # saved before it, oldest first
        storage.resolve("0004")               # the file a run id names
    """

    def __init__(self, root: Path, machine_id: str | None = None) -> None:
        self.root = Path(root)
        self.machine_id = machine_id
        self._documents: dict[Path, tuple[tuple[int, int], Any]] = {}

    @classmethod
    def from_option(cls, storage: str | Path, machine_id: str | None = None) -> Storage:
        """The storage a ``--benchmark-storage`` value (path or ``file://``) names."""
        return cls(storage_path(storage), machine_id)

    @classmethod
    def for_session(cls, storage: str | Path) -> Storage:
        """This machine's runs in the storage a pytest session saves into."""
        return cls.from_option(storage, this_machine_id())

    def of_machine(self, machine_id: str | None) -> Storage:
        """The same storage, limited to one machine folder (``None``: every machine)."""
        other = Storage(self.root, machine_id)
        other._documents = self._documents
        return other

    def beside(self, path: Path) -> Storage:
        """The machine folder ``path`` lies in, as a storage (its runs are its history);
        for a file that is no saved run of this storage (``pytest --benchmark-json
        FILE``), this storage's folder of this machine, or of its ``machine_id``."""
        saved = RUN_NAME.match(path.name) and path.resolve().parent.parent == self.root.resolve()
        if not saved:
            return self.of_machine(self.machine_id or this_machine_id())
        other = Storage(path.parent.parent, path.parent.name)
        other._documents = self._documents
        return other

    def __repr__(self) -> str:
        return f"Storage({str(self.root)!r}, machine_id={self.machine_id!r})"

    @property
    def where(self) -> str:
        """The folder searched, for messages."""
        return str(self.root / self.machine_id) if self.machine_id else str(self.root)

    # -- reading -------------------------------------------------------------------

    def _document(self, path: Path) -> Any:
        """The file's parsed JSON (cached while the file is unchanged); raises on failure."""
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = self._documents.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        document = json.loads(path.read_text(encoding="utf-8"))
        self._documents[path] = (stamp, document)
        return document

    def run_file(self, path: Path) -> RunFile:
        """``path`` with the moment its run was saved (``None`` if unreadable)."""
        try:
            document = self._document(path)
        except (OSError, UnicodeDecodeError, ValueError):
            return RunFile(path, None)
        stamp = document.get("datetime") if isinstance(document, dict) else None
        return RunFile(path, _moment(stamp))

    def load(self, path: Path) -> Run:
        """Read and validate one run; errors name the file and say what to do."""
        try:
            document = self._document(path)
        except (OSError, UnicodeDecodeError, ValueError):
            return load_run(path)  # reads it again to word the error
        return parse_run(document, str(path))

    def load_all(self, paths: Sequence[Path]) -> list[Run]:
        """Several runs for a history; unreadable ones are skipped (history is best-effort)."""
        runs: list[Run] = []
        for path in paths:
            try:
                runs.append(self.load(path))
            except PerfsuiteError:
                continue
        return runs

    # -- finding -------------------------------------------------------------------

    def _query(self, *globs: str) -> list[Path]:
        """pytest-benchmark's ``FileStorage.query``, mapped back under :attr:`root`."""
        if not self.root.is_dir():
            return []
        from pytest_benchmark.storage.file import FileStorage

        store = FileStorage(  # type: ignore[no-untyped-call]
            self.root, logger=None, default_machine_id=self.machine_id
        )
        try:
            found = store.query(*globs)  # type: ignore[no-untyped-call]
        except (ValueError, NotImplementedError):  # not a run id: more than machine/name,
            return []  # or an absolute pattern pathlib's glob refuses ("/tmp")
        paths = []
        for path in found:
            try:
                paths.append(self.root / Path(path).relative_to(store.path))
            except ValueError:  # an existing file named directly
                paths.append(Path(path))
        return paths

    def ordered(self, paths: Sequence[Path]) -> list[Path]:
        """``paths`` oldest first, by the storage's one order (see the module docstring)."""
        files = {p: self.run_file(p) for p in dict.fromkeys(paths)}
        return sorted(files, key=lambda p: files[p].order)

    def runs(self) -> list[Path]:
        """Every saved run of this storage (or machine folder), oldest first."""
        paths = [
            p
            for p in self._query("[0-9]*_")
            if RUN_NAME.match(p.name) and p.parent.parent == self.root
        ]
        return self.ordered(paths)

    def latest(self) -> Path | None:
        """The newest saved run, or ``None`` when the storage holds none yet."""
        runs = self.runs()
        return runs[-1] if runs else None

    def gate_outcome(self, path: Path) -> str | None:
        """The outcome a gate marked ``path``'s run with (``NOT_A_BASELINE``), if any."""
        try:
            document = self._document(path)
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        mark = document.get(GATE_KEY) if isinstance(document, dict) else None
        outcome = mark.get("outcome") if isinstance(mark, dict) else None
        return outcome if isinstance(outcome, str) else None

    def gate_baseline(self) -> tuple[Path | None, list[Path]]:
        """A gate's default baseline: the newest run its gate did not mark
        ``NOT_A_BASELINE``, and the newer ones passed over, newest first."""
        skipped: list[Path] = []
        for path in reversed(self.runs()):
            if self.gate_outcome(path) not in NOT_A_BASELINE:
                return path, skipped
            skipped.append(path)
        return None, skipped

    def mark_gate(self, saved_at: str, outcome: str, line: str) -> list[str]:
        """Record a gate's ``outcome`` (one of ``NOT_A_BASELINE``) and its ``line`` in the
        run saved at ``saved_at`` (its ``datetime``), rewriting the file atomically as
        pytest-benchmark wrote it (its permissions kept); a line for the user where the
        run could not be marked, and so stays a baseline."""
        for path in reversed(self.runs()[-3:]):
            try:
                document = self._document(path)
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if isinstance(document, dict) and document.get("datetime") == saved_at:
                marked = {**document, GATE_KEY: {"outcome": outcome, "line": line}}
                try:
                    mode = path.stat().st_mode & 0o7777
                    atomic_write_text(path, json.dumps(marked, indent=4, ensure_ascii=True))
                    path.chmod(mode)
                except OSError as exc:
                    return [f"could not mark {path} as {outcome} ({exc}): it stays a baseline"]
                return []
        return [f"found no saved run of {saved_at} to mark as {outcome}: it stays a baseline"]

    def before(self, when: Path | dt.datetime) -> list[Path]:
        """The runs saved before ``when`` (a run file, or a moment), oldest first."""
        runs = self.runs()
        if isinstance(when, dt.datetime):
            moment = when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
            return [p for p in runs if (saved := self.run_file(p).saved_at) and saved < moment]
        key = self.run_file(when).order
        same = when.resolve()
        return [p for p in runs if self.run_file(p).order < key and p.resolve() != same]

    def query(self, run_id: str) -> list[Path]:
        """Files matching a run id or glob (pytest-benchmark's rules), oldest first."""
        return self.ordered([p for p in self._query(run_id) if p.is_file()])

    def resolve(self, run_id: str, numbers: bool = False) -> Path:
        """The one file ``run_id`` names (the newest if a glob matches several); with
        ``numbers``, a number pytest-benchmark finds nothing for names the run of that
        counter (``12`` is ``0012_...``), as ``perfsuite history --accept`` reads it.

        A run id that matches nothing raises an error listing the closest stored names,
        or the newest where none is close.
        """
        matches = self.query(run_id)
        if matches:
            return matches[-1]
        runs = self.runs()
        if numbers and run_id.isdigit():
            numbered = [p for p in runs if _counter(p) == int(run_id)]
            if numbered:
                return numbered[-1]
        names = [p.stem for p in runs]
        if not names:
            why = root_problem(self.root)
            raise PerfsuiteError(
                f"run {run_id!r} not found: {self.root}: {why}"
                if why
                else f"run {run_id!r} not found: no saved runs in {self.where} "
                "(save one with --benchmark-autosave)"
            )
        close = difflib.get_close_matches(run_id, names, n=5, cutoff=0.3)
        close = close or [n for n in names if n.startswith(run_id[:4])][:5]
        listed = f"closest: {', '.join(close)}" if close else f"newest: {', '.join(names[-5:])}"
        raise PerfsuiteError(f"run {run_id!r} not found in {self.where}; {listed}")

    def find(self, spec: str) -> Path:
        """A path to an existing file, or a run id (or run number) resolved in this
        storage: the console script's way of naming a run."""
        path = Path(spec)
        if path.is_file():
            return path
        if path.suffix == ".json" and len(path.parts) > 1 and not path.exists():
            raise PerfsuiteError(f"{spec}: no such file")
        return self.resolve(spec, numbers=True)


def gate_skip_note(storage: Storage, failed: Sequence[Path], chosen: Path | None) -> str:
    """The line saying which newer runs a gate's baseline passed over
    (:meth:`Storage.gate_baseline`), and how to make one the baseline after all."""
    newest = failed[0]
    why = f"{newest.stem} ended {storage.gate_outcome(newest)}"
    head = f"{len(failed)} newer run(s) failed their gate ({why}), so no baseline"
    if chosen is None:
        head = f"every saved run failed its gate ({why}): no baseline"
    return (
        f"{head}{'' if chosen is None else f': judged against {chosen.stem}'}; to accept a "
        "change, save a run without --perf-gate, or name a run with --benchmark-compare=ID"
    )
