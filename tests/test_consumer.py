"""The bounded consumer: the last batch per call; stalls and errors fail in bounded time."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from perfsuite.harness import tfcluster as tfservice
from perfsuite.harness.consumer import BoundedConsumer, ConsumerError


def test_consumer_returns_the_last_batch_of_each_call() -> None:
    with BoundedConsumer(lambda: iter(range(10)), what="numbers") as consumer:
        assert consumer.take(3) == 2
        assert consumer.take(2) == 4


def test_consumer_fails_a_stalled_pipeline_in_bounded_time() -> None:
    release = threading.Event()

    def stalled() -> Iterator[int]:
        release.wait()
        yield 1

    consumer = BoundedConsumer(stalled, what="stalled pipeline", timeout=0.2)
    with pytest.raises(ConsumerError, match=r"stalled pipeline: no batch within 0\.2 s"):
        consumer.take()
    with pytest.raises(ConsumerError, match="abandoned"):
        consumer.take()
    release.set()
    consumer.close()


def test_consumer_watch_aborts_the_wait() -> None:
    def watch() -> None:
        raise tfservice.ServiceLost("worker 1 went away")

    release = threading.Event()

    def stalled() -> Iterator[int]:
        release.wait()
        yield 1

    consumer = BoundedConsumer(stalled, what="x", watch=watch)
    with pytest.raises(tfservice.ServiceLost, match="worker 1 went away"):
        consumer.take()
    release.set()
    consumer.close()


def test_consumer_names_pipeline_errors_in_one_line() -> None:
    def broken() -> Iterator[int]:
        raise OSError("no such file: a.jpg\nmore detail")

    consumer = BoundedConsumer(broken, what="svc", describe_error=lambda e: str(e).splitlines()[0])
    with pytest.raises(ConsumerError, match=r"^svc: no such file: a\.jpg$"):
        consumer.take()
    consumer.close()
