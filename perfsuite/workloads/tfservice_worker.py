"""The tf.data service's two sides: its server processes, and the pipelines the bench sends them.

Run as a child process by :mod:`perfsuite.harness.tfcluster`, never by hand::

    python -m perfsuite.workloads.tfservice_worker dispatcher --port 0
    python -m perfsuite.workloads.tfservice_worker worker --dispatcher 127.0.0.1:PORT
    python -m perfsuite.workloads.tfservice_worker worker --dispatcher -   # HOST:PORT on stdin

Each server prints one ``perfsuite-tfservice-ready {json}`` line on stdout once it is
serving (its bound port included, as ``--port 0`` lets the OS choose), then sends
anything else it prints to stderr. It exits when its stdin reaches end of file, so a
server never outlives the process that started it, however that process ended. A
worker given ``--dispatcher -`` reads the address as the first line of stdin, so it
can import TensorFlow while the dispatcher starts.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import tensorflow as tf

from perfsuite.harness.supervisor import open_channel, reply
from perfsuite.workloads.tf_image import CROP, preprocess, read_and_decode

READY = "perfsuite-tfservice-ready"
LOOPBACK = "127.0.0.1"

#: how the bench moves a batch from the workers to the consumer
SHIPPED = ("float32", "uint8")
MODES = ("parallel_epochs", "distributed_epoch")


def decode_and_crop(path: Any, label: Any) -> tuple[Any, Any]:
    """The worker half of the uint8 variant: decode and random crop, left as uint8."""
    return tf.image.random_crop(read_and_decode(path), CROP), tf.cast(label, tf.float32)


def scale_batch(images: Any, labels: Any) -> tuple[Any, Any]:
    """The consumer half of the uint8 variant: cast a whole batch to float32 and divide by 255."""
    return tf.cast(images, tf.float32) / 255.0, labels


def source(files: Sequence[Path], labels: Sequence[int], seed: int) -> tf.data.Dataset:
    """Shuffled, endlessly repeated (path, label) pairs: the start of every variant."""
    paths = [str(f) for f in files]
    ds = tf.data.Dataset.from_tensor_slices((paths, list(labels)))
    return ds.shuffle(len(paths), seed=seed).repeat()


def local_pipeline(
    files: Sequence[Path], labels: Sequence[int], *, batch: int, seed: int
) -> tf.data.Dataset:
    """The in-process pipeline with the same work: parallel map, batch, prefetch."""
    ds = source(files, labels, seed).map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def service_pipeline(
    files: Sequence[Path],
    labels: Sequence[int],
    *,
    batch: int,
    seed: int,
    service: str,
    mode: str,
    shipped: str,
    compression: str | None = "AUTO",
) -> tf.data.Dataset:
    """The same work run by the tf.data service's workers; the consumer only receives batches.

    ``shipped="float32"`` runs the whole preprocessing on the workers; ``"uint8"`` ships the
    uint8 crops (a quarter of the bytes) and casts and scales each batch on the consumer.
    """
    if mode not in MODES:
        raise ValueError(f"processing mode {mode!r} is not one of {', '.join(MODES)}")
    if shipped not in SHIPPED:
        raise ValueError(f"shipped dtype {shipped!r} is not one of {', '.join(SHIPPED)}")
    work = preprocess if shipped == "float32" else decode_and_crop
    ds = source(files, labels, seed).map(work, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch, drop_remainder=True)
    ds = ds.apply(
        tf.data.experimental.service.distribute(
            processing_mode=mode, service=service, target_workers="ANY", compression=compression
        )
    )
    if shipped == "uint8":
        ds = ds.map(scale_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def _exit_when_parent_goes() -> None:
    """End this process once stdin reaches end of file (the parent closed it or died)."""

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _announce(channel: IO[str], role: str, port: int) -> None:
    """Write the ready line on the protocol channel (everything else printed goes to stderr)."""
    reply(channel, READY, role=role, port=port, pid=os.getpid())


def serve_dispatcher(channel: IO[str], port: int, job_gc_ms: int) -> None:
    """Run a dispatcher until stdin closes or a signal ends the process."""
    service = tf.data.experimental.service
    server = service.DispatchServer(
        service.DispatcherConfig(
            port=port, job_gc_check_interval_ms=job_gc_ms, job_gc_timeout_ms=job_gc_ms
        )
    )
    _announce(channel, "dispatcher", int(server.target.rsplit(":", 1)[1]))
    server.join()


def serve_worker(channel: IO[str], dispatcher: str, port: int, heartbeat_ms: int) -> None:
    """Run a worker registered with ``dispatcher`` and reachable on loopback only."""
    service = tf.data.experimental.service
    server = service.WorkerServer(
        service.WorkerConfig(
            dispatcher_address=dispatcher,
            worker_address=f"{LOOPBACK}:%port%",
            port=port,
            heartbeat_interval_ms=heartbeat_ms,
            data_transfer_address=f"{LOOPBACK}:%dts_port%",
        )
    )
    _announce(channel, "worker", int(server._address.rsplit(":", 1)[1]))
    server.join()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perfsuite.workloads.tfservice_worker")
    roles = parser.add_subparsers(dest="role", required=True)
    dispatcher = roles.add_parser("dispatcher", help="run a tf.data service dispatcher")
    dispatcher.add_argument("--port", type=int, default=0)
    dispatcher.add_argument("--job-gc-ms", type=int, default=2000)
    worker = roles.add_parser("worker", help="run a tf.data service worker")
    worker.add_argument(
        "--dispatcher",
        required=True,
        help="HOST:PORT of the dispatcher, or - to read it from stdin",
    )
    worker.add_argument("--port", type=int, default=0)
    worker.add_argument("--heartbeat-ms", type=int, default=1000)
    args = parser.parse_args(argv)
    channel = open_channel()
    if args.role == "worker" and args.dispatcher == "-":
        args.dispatcher = sys.stdin.buffer.readline().decode().strip()
        if not args.dispatcher:
            return  # the parent closed stdin before the dispatcher started
    _exit_when_parent_goes()
    if args.role == "dispatcher":
        serve_dispatcher(channel, args.port, args.job_gc_ms)
    else:
        serve_worker(channel, args.dispatcher, args.port, args.heartbeat_ms)


if __name__ == "__main__":
    main()
