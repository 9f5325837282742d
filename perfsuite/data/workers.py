"""A process pool whose workers end with their parent, however the parent ends.

A ``spawn`` :class:`~concurrent.futures.ProcessPoolExecutor` outlives a parent killed
with SIGKILL: its workers block for good on the call queue (each holds both ends of
its pipe, so none sees end-of-file), and multiprocessing's resource tracker waits
for end-of-file on a pipe the workers keep open. So each worker, first thing, asks
the kernel to SIGKILL it when its parent dies (Linux ``PR_SET_PDEATHSIG``), then
checks that the parent is still the one that started it (a parent that died before
the request took effect). Once the workers are gone, the last writer of the resource
tracker's pipe is gone too, and the tracker exits by itself: nothing is left behind.

``PR_SET_PDEATHSIG`` fires when the *thread* that started the worker ends; the pool
starts its workers from the thread that submits work (spawn context, no
``max_tasks_per_child``), which is the one that waits for the results.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import multiprocessing
import os
import signal
import sys

#: linux/prctl.h
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Pool initializer: be SIGKILLed when ``parent`` dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")
    if os.getppid() != parent:
        os._exit(1)  # orphaned before the request took effect: the results have no reader


def spawn_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes that die with this one.

    ``spawn``, not ``fork``: the parent may hold TensorFlow or torch threads.
    """
    return concurrent.futures.ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
