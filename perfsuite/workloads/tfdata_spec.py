"""The shape every tf.data variant shares: its inputs, the built pipeline, options, warm-up.

tf.data's own benchmark harness turns its default static optimizations off; here they
stay on, as every user gets them (among them ``parallel_batch``, which copies a
batch's elements in parallel), except ``map_parallelization``, which would be free to
turn the baseline's sequential map into a parallel one. Autotuning stays on, and an
autotuned pipeline is warmed long enough to settle before timing (:meth:`Pipeline.warm`).
Each :class:`Pipeline` records these choices in its ``params`` (:func:`common_params`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from perfsuite.bench.machine import usable_cpus as host_cores
from perfsuite.data.tfrecords import TFRecordShards
from perfsuite.errors import PerfsuiteError

DEFAULT_OPTIMIZATIONS = True
MAP_PARALLELIZATION = False
#: how long a pipeline is warmed before timing, per scale: (at least seconds, at most
#: batches); autotuning settles within about a second on the CPUs measured so far
WARM: dict[str, tuple[float, int]] = {"smoke": (0.1, 8), "default": (1.0, 32), "full": (2.0, 32)}


@dataclass(frozen=True)
class PipelineSpec:
    """What every variant shares: batch size, shuffling, and the variant-specific inputs.

    ``cache_batches`` bounds ``cache_after_batch``: the number of batches it may put in
    its cache, which must exceed the batches the bench will ever pull (see
    :func:`cache_bound`). ``shards`` are the TFRecord files the ``tfrecord`` variant reads.
    """

    batch: int
    shuffle_buffer: int
    seed: int = 0
    cache_batches: int = 0
    shards: TFRecordShards | None = None


@dataclass
class Pipeline:
    """A built variant: its dataset, the parameters to record, and how much to warm it."""

    variant: str
    dataset: tf.data.Dataset
    params: dict[str, Any]
    warm_batches: int = 2
    warmed: int = 0
    iterator: Iterator[Any] | None = field(default=None, repr=False)

    def warm(self, min_seconds: float = 0.0, max_batches: int | None = None) -> Iterator[Any]:
        """An iterator over the pipeline, past its start-up (buffers filled, caches built).

        Pulls at least :attr:`warm_batches`, then keeps pulling until ``min_seconds``
        have passed (autotuning settles) or ``max_batches`` were pulled, whichever
        comes first; :attr:`warmed` says how many it pulled. :meth:`take` pulls from it.
        """
        limit = max(self.warm_batches, max_batches if max_batches is not None else 1 << 62)
        iterator: Iterator[Any] = iter(self.dataset)
        start = time.perf_counter()
        take_batches(iterator, self.warm_batches)
        self.warmed = self.warm_batches
        while self.warmed < limit and time.perf_counter() - start < min_seconds:
            next(iterator)
            self.warmed += 1
        self.iterator = iterator
        return iterator

    def take(self, count: int) -> Any:
        """Pull ``count`` batches from the warmed iterator (one timed call); returns the last."""
        if self.iterator is None:
            raise PerfsuiteError(f"tf.data variant {self.variant}: warm() it before take()")
        return take_batches(self.iterator, count)


def warmed(pipeline: Pipeline, scale: str) -> Iterator[Any]:
    """``pipeline``'s iterator, warmed as every tf.data bench warms at ``scale`` (:data:`WARM`).

    Records ``warm_seconds`` and ``warmed_batches`` in the pipeline's params.
    """
    seconds, most = WARM[scale]
    iterator = pipeline.warm(seconds, most)
    pipeline.params.update(warm_seconds=seconds, warmed_batches=pipeline.warmed)
    return iterator


def take_batches(iterator: Iterator[Any], count: int) -> Any:
    """Pull ``count`` batches (one timed call); returns the last."""
    batch = None
    for _ in range(count):
        batch = next(iterator)
    return batch


def cache_bound(warm_batches: int, calls: int, batches_per_call: int) -> int:
    """Batches ``cache_after_batch`` may cache: more than a bench pulls, so it never replays.

    ``warm_batches`` is the most :meth:`Pipeline.warm` may pull, ``calls`` the warm-up
    and measured calls, each pulling ``batches_per_call``.
    """
    if min(warm_batches, calls, batches_per_call) < 0 or calls * batches_per_call == 0:
        raise ValueError("cache_bound needs a positive number of calls and batches per call")
    return warm_batches + calls * batches_per_call + 1


def options() -> tf.data.Options:
    """The tf.data options every variant runs with (see the module docstring)."""
    opts = tf.data.Options()
    opts.experimental_optimization.apply_default_optimizations = DEFAULT_OPTIMIZATIONS
    opts.experimental_optimization.map_parallelization = MAP_PARALLELIZATION
    opts.autotune.enabled = True
    return opts


def common_params(spec: PipelineSpec, order: str, **params: Any) -> dict[str, Any]:
    """The parameters every variant records: its order, batching, shuffling and tf.data options."""
    return {
        "order": order,
        "batch": spec.batch,
        "shuffle_buffer": spec.shuffle_buffer,
        "shuffle_seed": spec.seed,
        "tfdata_default_optimizations": DEFAULT_OPTIMIZATIONS,
        "tfdata_map_parallelization": MAP_PARALLELIZATION,
        "tfdata_autotune": True,
        "host_cores": host_cores(),
        "deterministic": True,
        **params,
    }
