"""Exact trace and recompile counts: noise-free counters beside the timings."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perfsuite.bench.measure import record_counter


def tracing_count(fn: Any) -> int:
    """How many times a ``tf.function`` has traced (``experimental_get_tracing_count``)."""
    getter = getattr(fn, "experimental_get_tracing_count", None)
    if getter is None:
        raise TypeError(f"{fn!r} is not a tf.function: it has no experimental_get_tracing_count")
    return int(getter())


def torch_compile_count() -> int:
    """Graphs torch.compile (dynamo) has compiled in this process so far; 0 if never used."""
    if "torch._dynamo" not in sys.modules:
        return 0
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


@dataclass
class Tally:
    """The number of traces counted by one ``track`` block (set when the block ends)."""

    name: str
    value: int = 0


class TraceCounter:
    """Counts traces exactly and records them in the running bench's ``extra_info``.

    >>> def test_retrace(trace_counter, perf):
    ...     f = tf.function(step)
    ...     with trace_counter.track(f) as tally:
    ...         for shape in shapes:
    ...             f(tf.zeros(shape))
    ...     assert tally.value == len(set(shapes))

    ``track(fn)`` counts a tf.function's traces; ``track()`` with no function counts
    torch.compile graph compilations. Counts are added up across blocks under the
    same ``name``, and the total lands in ``extra_info[name]`` as an exact counter;
    ``track(fn, record=False)`` only fills the tally (for counts per call, recorded
    afterwards with :meth:`add`).
    """

    def __init__(self, extra_info: dict[str, Any] | None) -> None:
        self._extra_info = extra_info
        self.totals: dict[str, int] = {}

    @contextlib.contextmanager
    def track(
        self, fn: Any = None, *, name: str = "traces", record: bool = True
    ) -> Iterator[Tally]:
        def read() -> int:
            return tracing_count(fn) if fn is not None else torch_compile_count()

        tally = Tally(name)
        before = read()
        try:
            yield tally
        finally:
            tally.value = read() - before
            if record:
                self.add(name, tally.value)

    def add(self, name: str, value: int) -> None:
        """Add ``value`` to counter ``name`` and record the total."""
        self.totals[name] = self.totals.get(name, 0) + value
        if self._extra_info is not None:
            record_counter(self._extra_info, name, self.totals[name])
