"""Cold-start samples in fresh Python processes: load, first call, steady calls.

Cold-start is a per-process effect (tracing, graph optimization, kernel and memory
set-up, a CUDA context), so an honest cold sample needs a process that has done none
of it. :class:`ColdProcess` starts ``python -m perfsuite.harness.coldstart`` (no shell, the
same interpreter) and drives it one step at a time over its stdin, so a bench can
time exactly one step (the first call) while the interpreter start, the framework
import and the model load happen outside the timed region::

    with ColdProcess("perfsuite.workloads.warmup_cases:savedmodel_case", [path, "8", "240"],
                     steady=5) as proc:
        proc.ready()       # {"import_s": ...}: the module and its framework imported
        proc.load()        # {"load_s": ...}
        proc.first()       # {"first_s": ...}: the first call
        proc.steady()      # {"steady_s": [...]}: then the process exits

The target ``module:function`` is called with the extra arguments (strings) and
returns a case with ``load()`` and ``call()``; the child times each step with its
own clock and answers each command with one JSON line. :func:`run_cold_sample`
runs every step and returns the parsed :class:`ColdTimings`. Any failure (a non-zero
exit, a step that exceeds ``timeout``) raises :class:`ColdStartError` naming the
target and carrying the tail of the child's stderr.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfsuite.errors import PerfsuiteError
from perfsuite.harness.closing import Closing
from perfsuite.harness.supervisor import (
    STDERR_TAIL_LINES,
    Child,
    ChildError,
    ChildExited,
    ChildTimeout,
    open_channel,
    reply,
)

#: every protocol line the child writes starts with this (library output is kept apart)
MARKER = "perfsuite-coldstart"
DEFAULT_TIMEOUT = 180.0


class ColdStartError(PerfsuiteError):
    """A cold-start child failed or timed out; the message holds its stderr tail."""


class ColdCase(Protocol):
    """What a cold-start target returns: ``load()`` once, then ``call()`` first and steady."""

    def load(self) -> None: ...

    def call(self) -> Any: ...


@dataclass
class ColdTimings:
    """One fresh process's figures, each timed by the child itself (seconds)."""

    import_s: float
    load_s: float
    first_s: float
    steady_s: list[float] = field(default_factory=list)

    @property
    def steady_median(self) -> float | None:
        return statistics.median(self.steady_s) if self.steady_s else None

    @property
    def cold_warm_ratio(self) -> float | None:
        """First-call latency over this process's median steady latency."""
        warm = self.steady_median
        return self.first_s / warm if warm else None


class ColdProcess(Closing):
    """One fresh ``python -m perfsuite.harness.coldstart`` process, driven step by step."""

    def __init__(
        self,
        target: str,
        args: Sequence[str] = (),
        *,
        steady: int = 5,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        python: str = sys.executable,
    ) -> None:
        if ":" not in target:
            raise ValueError(f"cold-start target {target!r} must be 'module:function'")
        if steady < 0:
            raise ValueError(f"steady must be >= 0, got {steady}")
        self.target = target
        self.timeout = timeout
        self.figures: dict[str, Any] = {}
        self.command = [
            python,
            "-m",
            "perfsuite.harness.coldstart",
            "--steady",
            str(steady),
            target,
            *map(str, args),
        ]
        self._child = Child(self.command, name=target, marker=MARKER, env=env, cwd=cwd)
        self._ready: dict[str, Any] | None = None

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def running(self) -> bool:
        """Whether the child process is still alive."""
        return self._child.running

    def stderr_text(self) -> str:
        """Everything the child wrote to stderr (kept after :meth:`close`)."""
        return self._child.stderr_text()

    def stderr_tail(self) -> str:
        return self._child.stderr_tail(STDERR_TAIL_LINES)

    def _error(self, problem: str) -> ColdStartError:
        return ColdStartError(
            f"cold-start sample {self.target}: {problem}; stderr: {self.stderr_tail()}"
        )

    def _expect(self, what: str) -> dict[str, Any]:
        try:
            reply = self._child.expect(self.timeout, exit_timeout=self.timeout)
        except ChildTimeout:
            self.close()
            raise self._error(f"timed out after {self.timeout:g} s waiting for {what}") from None
        except ChildExited as exc:
            if exc.returncode is None:
                self.close()
                raise self._error(
                    f"closed its stdout but did not exit within {self.timeout:g} s"
                ) from None
            raise self._error(f"exited with code {exc.returncode} before {what}") from None
        except ChildError as exc:
            self.close()
            raise self._error(str(exc).removeprefix(f"{self.target}: ")) from None
        self.figures.update(reply)
        return reply

    def _send(self, command: str) -> dict[str, Any]:
        self.ready()
        self._child.send(command)  # a child that exited is reported by _expect
        return self._expect(command)

    def ready(self) -> dict[str, Any]:
        """Wait until the target is imported and its case built: ``{"import_s": ...}``."""
        if self._ready is None:
            self._ready = self._expect("ready")
        return self._ready

    def load(self) -> dict[str, Any]:
        """Run ``case.load()``: ``{"load_s": ...}``."""
        return self._send("load")

    def first(self) -> dict[str, Any]:
        """Run the first ``case.call()``: ``{"first_s": ...}``."""
        return self._send("first")

    def steady(self) -> dict[str, Any]:
        """Run the steady calls, then wait for a clean exit: ``{"steady_s": [...]}``."""
        reply = self._send("steady")
        try:
            code = self._child.popen.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise self._error(
                f"did not exit within {self.timeout:g} s after its last step"
            ) from None
        if code != 0:
            raise self._error(f"exited with code {code}")
        return reply

    def timings(self) -> ColdTimings:
        """The figures gathered so far (after :meth:`steady`, all of them)."""
        try:
            return ColdTimings(
                import_s=float(self.figures["import_s"]),
                load_s=float(self.figures["load_s"]),
                first_s=float(self.figures["first_s"]),
                steady_s=[float(s) for s in self.figures.get("steady_s", [])],
            )
        except KeyError as exc:
            raise self._error(f"no {exc.args[0]} reported") from None

    def close(self) -> None:
        """Stop the child if it still runs and release its pipes (idempotent)."""
        self._child.close()


def start_many(
    count: int, target: str, args: Sequence[str] = (), **kwargs: Any
) -> list[ColdProcess]:
    """Start ``count`` fresh processes together and wait until each is ready.

    Starting them together overlaps their interpreter start and framework import
    (the expensive, untimed part); drive their timed steps one process at a time.
    """
    procs: list[ColdProcess] = []
    try:
        for _ in range(count):
            procs.append(ColdProcess(target, args, **kwargs))
        for proc in procs:
            proc.ready()
    except BaseException:
        for proc in procs:
            proc.close()
        raise
    return procs


def run_cold_sample(target: str, args: Sequence[str] = (), **kwargs: Any) -> ColdTimings:
    """Every step in one fresh process; returns the child's timings."""
    with ColdProcess(target, args, **kwargs) as proc:
        proc.ready()
        proc.load()
        proc.first()
        proc.steady()
        return proc.timings()


# --- the child side: python -m perfsuite.harness.coldstart [--steady N] module:function [args...]


def child_main(argv: Sequence[str] | None = None) -> int:
    """Run one cold-start case, answering each command read from stdin with a JSON line."""
    parser = argparse.ArgumentParser(prog="python -m perfsuite.harness.coldstart")
    parser.add_argument("--steady", type=int, default=5)
    parser.add_argument("target", help="module:function returning a case (load, call)")
    parser.add_argument("args", nargs="*")
    ns = parser.parse_args(argv)
    out = open_channel()  # anything a library prints goes to stderr

    start = time.perf_counter()
    module_name, _, function = ns.target.partition(":")
    case: ColdCase = getattr(importlib.import_module(module_name), function)(list(ns.args))
    reply(out, MARKER, import_s=time.perf_counter() - start)
    for line in sys.stdin:
        command = line.strip()
        if command == "load":
            start = time.perf_counter()
            case.load()
            reply(out, MARKER, load_s=time.perf_counter() - start)
        elif command == "first":
            start = time.perf_counter()
            case.call()
            reply(out, MARKER, first_s=time.perf_counter() - start)
        elif command == "steady":
            steady = []
            for _ in range(ns.steady):
                start = time.perf_counter()
                case.call()
                steady.append(time.perf_counter() - start)
            reply(out, MARKER, steady_s=steady)
            return 0
        else:
            print(f"perfsuite.harness.coldstart: unknown command {command!r}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
