"""Pull batches on a helper thread, so a stalled or broken pipeline fails in bounded time."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.harness.closing import Closing

#: seconds one call may wait for its batches before the bench fails
BATCH_TIMEOUT = 60.0


class ConsumerError(PerfsuiteError):
    """The pipeline stalled or broke; the message is one line naming it."""


class BoundedConsumer(Closing):
    """Pulls batches on a helper thread, so a stalled or broken pipeline fails in bounded time.

    :meth:`take` waits for its batches while calling ``watch`` every ``poll`` seconds (it
    raises to abort, e.g. when a worker process died) and raises :class:`ConsumerError`
    after ``timeout`` seconds. A helper thread left blocked in the pipeline is a daemon and
    is abandoned. ``describe_error`` turns the pipeline's own errors into one-line
    :class:`ConsumerError` messages (perfsuite's errors and pytest's outcomes pass as they are).

    Usage::

        with BoundedConsumer(lambda: iter(ds), what="tf.data service") as consumer:
            perf.measure(lambda: consumer.take(4), items=4 * batch)
    """

    def __init__(
        self,
        open_iterator: Callable[[], Iterator[Any]],
        *,
        what: str,
        watch: Callable[[], None] | None = None,
        timeout: float = BATCH_TIMEOUT,
        poll: float = 0.05,
        describe_error: Callable[[BaseException], str] | None = None,
    ) -> None:
        self.what = what
        self.timeout = timeout
        self.poll = poll
        self._open = open_iterator
        self._watch = watch
        self._describe_error = describe_error
        self._requests: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._broken = False
        self._thread = threading.Thread(target=self._run, name="bounded-consumer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        iterator: Iterator[Any] | None = None
        while (count := self._requests.get()) is not None:
            try:
                if iterator is None:
                    iterator = self._open()
                last = None
                for _ in range(count):
                    last = next(iterator)
                self._results.put((True, last))
            except BaseException as exc:
                self._results.put((False, exc))
        del iterator

    def take(self, count: int = 1) -> Any:
        """Pull ``count`` batches and return the last; ``watch`` runs before and after too."""
        if self._broken:
            raise ConsumerError(f"{self.what}: the consumer was abandoned after an earlier failure")
        self._check()
        self._requests.put(count)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                ok, value = self._results.get(timeout=self.poll)
            except queue.Empty:
                self._check()
                if time.monotonic() > deadline:
                    self._broken = True
                    raise ConsumerError(
                        f"{self.what}: no batch within {self.timeout:g} s"
                    ) from None
                continue
            if not ok:
                described = (
                    self._describe_error is not None
                    and isinstance(value, Exception)  # pytest's outcomes are BaseExceptions
                    and not isinstance(value, PerfsuiteError)
                )
                if described:
                    assert self._describe_error is not None
                    raise ConsumerError(f"{self.what}: {self._describe_error(value)}") from None
                raise value
            self._check()  # batches buffered before a worker died must not hide its death
            return value

    def _check(self) -> None:
        if self._watch is None:
            return
        try:
            self._watch()
        except BaseException:
            self._broken = True
            raise

    def close(self, timeout: float = 10.0) -> None:
        """Release the iterator (on its own thread); a stuck thread is abandoned."""
        self._requests.put(None)
        if not self._broken:
            self._thread.join(timeout)
