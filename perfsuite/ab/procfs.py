"""What Linux's ``/proc`` says about a side and the processes it started.

Every function answers for processes that may end while it reads: a process or thread
that is gone is skipped, never an error. Off Linux (no ``/proc``) they answer as for
processes that are gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a ``stat`` file after the command name (state first), or None."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _tasks(pid: int) -> list[Path] | None:
    """The ``/proc`` folders of ``pid``'s threads, or None when it is gone."""
    try:
        return list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    """CPU time of every thread of ``pid`` so far (Linux schedstat, ns), or None."""
    tasks = _tasks(pid)
    if tasks is None:
        return None
    total = 0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just ended
    return total / 1e9


#: ``PF_FORKNOEXEC`` in a ``stat`` file's flags: forked and not yet exec'd
_FORKED_NOT_EXECED = 0x40
_STOPPED = ("T", "t", "Z", "X")


def _held_by_stopped_vfork_child(task: Path) -> bool:
    """Whether ``task`` waits (``D``) in ``vfork`` on a child that is stopped before its
    ``exec``: it cannot run again until that child does, so it is as good as stopped.
    ``sh`` and Python's ``subprocess`` start commands with ``vfork``; a stop that reaches
    the child between the ``vfork`` and the ``exec`` leaves its parent there."""
    for kid in _task_children(task):
        fields = _stat_fields(Path(f"/proc/{kid}/stat")) or []
        stopped = len(fields) > 6 and fields[0] in ("T", "t")
        if stopped and int(fields[6]) & _FORKED_NOT_EXECED:
            return True
    return False


def all_stopped(pids: Iterable[int]) -> bool:
    """Whether every thread of every process in ``pids`` is stopped (state ``T``), gone,
    or held in ``vfork`` by a stopped child that has not yet run its ``exec``."""
    for pid in pids:
        for task in _tasks(pid) or []:
            fields = _stat_fields(task / "stat")
            if not fields or fields[0] in _STOPPED:
                continue  # stopped, or gone
            if fields[0] == "D" and _held_by_stopped_vfork_child(task):
                continue
            return False
    return True


def process_group(pid: int) -> int | None:
    """The process group of ``pid``, or None when it is gone."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return int(fields[2]) if fields and len(fields) > 2 else None


def _task_children(task: Path) -> list[int]:
    """The processes one thread started and that still run (its ``children``)."""
    try:
        return [int(p) for p in (task / "children").read_text().split()]
    except (OSError, ValueError):
        return []


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``: the children its threads started and that still run
    (``task/*/children``), theirs, and so on."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        kids = {kid for task in _tasks(todo.pop()) or [] for kid in _task_children(task)}
        for child in kids - found:
            found.add(child)
            todo.append(child)
    return found
