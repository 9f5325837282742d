"""Pull a machine's history from the results branch into pytest-benchmark's storage,
and push its new runs, reports and accepted steps back.

After :func:`pull`, the machine folder of the local storage holds exactly the branch's
runs of this machine key, under their branch names, plus the runs saved here that no
push has published yet. :func:`push` publishes those under their branch names, renames
them so locally, and prunes the branch (:func:`runs_to_drop`). A damaged file on the
branch is left out and named; it never stops a night.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.data.fsutil import atomic_write_bytes
from perfsuite.errors import PerfsuiteError
from perfsuite.results.gitbranch import Changes, ResultsBranch
from perfsuite.results.key import run_key
from perfsuite.results.layout import (
    ACCEPTED,
    BRANCH_RUN,
    README,
    README_TEXT,
    branch_name,
    report_folder,
    run_path,
    split_run_path,
)
from perfsuite.verdict.runs import Run, parse_run
from perfsuite.verdict.storage import RUN_NAME

#: saved runs kept per machine key on the branch, unless a step or acceptance needs more
DEFAULT_KEEP = 60


@dataclass(frozen=True)
class LocalRun:
    """A run saved in the local storage, with what places it on the branch."""

    path: Path
    content: bytes
    run: Run
    key: str
    name: str  # its file name on the branch

    @property
    def published_name(self) -> bool:
        return self.path.name == self.name


def _parse(content: bytes, source: str) -> tuple[dict[str, Any], Run]:
    """A run file's JSON and :class:`Run`; PerfsuiteError says why it cannot be read."""
    try:
        document = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PerfsuiteError(f"{source}: not JSON ({exc})") from None
    return document, parse_run(document, source)


def local_runs(folder: Path) -> tuple[list[LocalRun], list[str]]:
    """The runs saved in a machine folder, oldest first, and a line for each left out."""
    found: list[LocalRun] = []
    notes: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if not RUN_NAME.match(path.name):
            continue
        try:
            content = path.read_bytes()
            document, run = _parse(content, str(path))
        except (OSError, PerfsuiteError) as exc:
            notes.append(f"{path}: cannot be read, not pushed ({exc})")
            continue
        key = run_key(run)
        if key is None:
            notes.append(f"{path}: saved without perfsuite's machine facts, not pushed")
            continue
        found.append(LocalRun(path, content, run, key, branch_name(document)))
    found.sort(key=lambda local: (local.run.datetime or "", local.name))
    return found, notes


def _branch_accepted(branch: ResultsBranch, files: dict[str, str]) -> dict[str, Any]:
    if ACCEPTED not in files:
        return {}
    try:
        document = json.loads(branch.read(files[ACCEPTED]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def pull(branch: ResultsBranch, root: Path, machine_id: str, key: str) -> list[str]:
    """Make ``root/machine_id`` hold the branch's runs of ``key`` and the unpublished
    runs saved here; the lines to print."""
    from perfsuite.verdict.history import accepted_run, write_accepted

    tip = branch.fetch()
    if tip is None:
        return [
            f"{branch.where} does not exist yet: no history of {key} to pull "
            "(tonight's push creates it)"
        ]
    files = branch.files(tip)
    wanted: dict[str, bytes] = {}
    lines: list[str] = []
    damaged: set[str] = set()
    for path, blob in files.items():
        place = split_run_path(path)
        if place is None or place[0] != key:
            continue
        content = branch.read(blob)
        try:
            _parse(content, f"{branch.where}:{path}")
        except PerfsuiteError as exc:
            damaged.add(place[1])
            lines.append(f"left out a damaged run: {exc} (delete it from the branch)")
            continue
        wanted[place[1]] = content
    folder = root / machine_id
    folder.mkdir(parents=True, exist_ok=True)
    unpublished = 0
    for saved in sorted(folder.glob("*.json")):
        if BRANCH_RUN.match(saved.name):
            if saved.name not in wanted and saved.name not in damaged:
                saved.unlink()  # pruned from the branch, or another key's (kept there)
            continue
        if not RUN_NAME.match(saved.name):
            continue
        try:
            document = json.loads(saved.read_bytes())
            name = branch_name(document) if isinstance(document, dict) else None
        except (OSError, ValueError):
            name = None
        if name in wanted:
            saved.unlink()  # published already: the branch's copy replaces it
        else:
            unpublished += 1
    for name, content in wanted.items():
        target = folder / name
        if not target.is_file() or target.read_bytes() != content:
            atomic_write_bytes(target, content)
    record = _branch_accepted(branch, files).get(key)
    if isinstance(record, dict) and record != accepted_run(root, machine_id):
        write_accepted(root, machine_id, record)
    extra = f", and {unpublished} saved here not pushed yet" if unpublished else ""
    lines.append(f"pulled {len(wanted)} run(s) of {key} from {branch.where} into {folder}{extra}")
    return lines


def runs_to_drop(
    runs: Sequence[tuple[str, Run]], keep: int, record: dict[str, Any] | None
) -> set[str]:
    """The names among ``runs`` (one key's, any order) that pruning may remove: all but
    the newest ``keep``, the accepted run, and, for each regression step after it that
    ``perfsuite history`` fails on, the runs from ``MIN_POINTS`` before the step on, so
    a step search still finds it."""
    from perfsuite.verdict.changepoint import MIN_POINTS
    from perfsuite.verdict.history import (
        accepted_position,
        bench_histories,
        failing_steps,
        steps_of,
    )

    ordered = sorted(runs, key=lambda item: (item[1].datetime or "", item[0]))
    if len(ordered) <= keep:
        return set()
    names = [name for name, _ in ordered]
    kept = set(names[len(names) - keep :])
    history = [run for _, run in ordered]
    if record is not None:
        kept.update(
            name
            for name, run in ordered
            if run.name == record.get("run") or run.datetime == record.get("datetime")
        )
    accepted = accepted_position(history, record)
    for series in bench_histories(history):
        for step in failing_steps(steps_of(series), accepted):
            kept.update(names[max(0, step.before.position - MIN_POINTS + 1) :])
    return set(names) - kept


@dataclass(frozen=True)
class PushPlan:
    """What :func:`push` publishes: the runs saved here, tonight's report, the accepted
    record, and how many runs of each key the branch keeps."""

    runs: tuple[LocalRun, ...]
    report: Path | None
    accepted: dict[str, Any] | None  # this machine folder's record, run names mapped
    keep: int

    def changes(self, branch: ResultsBranch, files: dict[str, str]) -> dict[str, bytes | None]:
        """The changes to the branch whose files are ``files``."""
        changes: dict[str, bytes | None] = {}
        if README not in files:
            changes[README] = README_TEXT.encode()
        for local in self.runs:
            path = run_path(local.key, local.name)
            if path not in files:
                changes[path] = local.content
        if self.report is not None and self.runs:
            tonight = self.runs[-1]
            folder = report_folder(tonight.key, tonight.name)
            for item in sorted(self.report.rglob("*")):
                if item.is_file() and not item.is_symlink():
                    content = item.read_bytes()
                    if item == self.report / "summary.md":  # the run's name from now on
                        old, new = (
                            f"`{n.removesuffix('.json')}`"
                            for n in (tonight.path.name, tonight.name)
                        )
                        content = content.replace(old.encode(), new.encode())
                    changes[f"{folder}/{item.relative_to(self.report).as_posix()}"] = content
        if self.accepted is not None and self.runs:
            document = _branch_accepted(branch, files)
            key = self.runs[-1].key
            if document.get(key) != self.accepted:
                document[key] = self.accepted
                text = json.dumps(document, indent=2, sort_keys=True) + "\n"
                changes[ACCEPTED] = text.encode()
        for key in sorted({local.key for local in self.runs}):
            changes.update(self._pruned(branch, files, key, changes))
        return changes

    def _pruned(
        self, branch: ResultsBranch, files: dict[str, str], key: str, changes: Changes
    ) -> dict[str, bytes | None]:
        """The removals that prune ``key``'s runs, and their reports, to :attr:`keep`."""
        stored = {
            place[1]: path
            for path in [*files, *changes]
            if (place := split_run_path(path)) is not None and place[0] == key
        }
        if len(stored) <= self.keep:
            return {}
        here = {local.name: local.run for local in self.runs if local.key == key}
        runs: list[tuple[str, Run]] = []
        for name, path in stored.items():
            if name in here:
                runs.append((name, here[name]))
                continue
            try:
                runs.append((name, _parse(branch.read(files[path]), path)[1]))
            except PerfsuiteError:
                continue  # a damaged run is neither kept nor counted
        record = self.accepted if self.runs and self.runs[-1].key == key else None
        removed: dict[str, bytes | None] = {}
        for name in runs_to_drop(runs, self.keep, record):
            removed[stored[name]] = None
            prefix = report_folder(key, name) + "/"
            removed.update({path: None for path in files if path.startswith(prefix)})
        return removed


def push(
    branch: ResultsBranch,
    root: Path,
    machine_id: str,
    report: Path | None,
    keep: int = DEFAULT_KEEP,
    attempts: int = 5,
) -> list[str]:
    """Publish the runs of ``root/machine_id`` (and ``report``, tonight's, with the
    newest of them) on the branch; the lines to print. A push that keeps losing races
    raises :class:`perfsuite.results.gitbranch.PushRejected`, and everything stays here."""
    from perfsuite.verdict.history import accepted_run, write_accepted

    folder = root / machine_id
    runs, lines = local_runs(folder)
    if not runs:
        raise PerfsuiteError(
            f"{folder}: no saved runs to push (save one with pytest --benchmark-autosave)"
        )
    if report is not None and not (report / "summary.md").is_file():
        # a night whose verdict failed early still saves its run
        lines.append(f"--report {report}: no summary.md there; pushing the runs alone")
        report = None
    renamed = {local.run.name: local.name.removesuffix(".json") for local in runs}
    record = accepted_run(root, machine_id)
    if record is not None and record["run"] in renamed:
        record = {**record, "run": renamed[record["run"]]}
    plan = PushPlan(tuple(runs), report, record, keep)
    message = f"perfsuite: {runs[-1].name} ({runs[-1].key})"
    dropped: list[str] = []

    def changes(files: dict[str, str], tip: str | None) -> Changes:
        found = plan.changes(branch, files)
        dropped[:] = [path for path, content in found.items() if content is None]
        return found

    commit = branch.publish(changes, message, attempts)
    new = [local for local in runs if not local.published_name]
    for local in new:  # the branch's name from now on, so no later push stores it twice
        os.replace(local.path, local.path.with_name(local.name))
    for path in dropped:
        place = split_run_path(path)
        if place is not None:
            (folder / place[1]).unlink(missing_ok=True)
    if record is not None:
        write_accepted(root, machine_id, record)
    if commit is None:
        lines.append(f"{branch.where} already holds every run saved in {folder}")
        return lines
    pruned = sum(1 for path in dropped if split_run_path(path) is not None)
    shown = ", ".join(local.name for local in new[-3:]) or "no new run"
    extra = f" and tonight's report ({report})" if report is not None else ""
    lines.append(
        f"pushed {len(new)} run(s) ({shown}){extra} to {branch.where} as {commit[:12]}; "
        f"pruned {pruned} run(s) past the newest {keep} of a machine"
    )
    return lines
