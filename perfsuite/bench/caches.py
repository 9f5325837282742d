"""Compile caches that outlive a process, and how a session keeps them apart.

torch.compile and CUDA keep what they built on disk between processes: inductor's
FX graph, AOTAutograd and autotuning caches under ``TORCHINDUCTOR_CACHE_DIR``
(default ``/tmp/torchinductor_$USER``), Triton's kernels under ``TRITON_CACHE_DIR``
and the CUDA driver's JIT cache under ``CUDA_CACHE_PATH``. A session that finds
them filled by an earlier one starts from a different state than one that does not.

Every session warms them before timing: the compile bench makes one untimed call
per bench, a cold-process bench starts one untimed process first. In a session
that may use a GPU (``--perf-device`` other than ``cpu`` and a GPU found) they are
also kept apart: :func:`fresh_caches` points them at new folders for the session,
so what one session compiled is never found by the next. On the CPU they are left
where they are: inductor's C++ kernels take minutes of a 2-core machine to build,
and the untimed calls bring every session to the same state.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from perfsuite.options import Device

#: environment variable -> the folder under the session's root that it names
CACHE_ENV = {
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "cuda",
}


def keep_apart(device: Device, gpu_count: Callable[[], int]) -> bool:
    """Whether this session gets its own caches: it may use a GPU and one is found
    (``gpu_count`` is only asked when ``--perf-device`` is not ``cpu``)."""
    return device is not Device.CPU and gpu_count() > 0


@contextlib.contextmanager
def fresh_caches(root: Path) -> Iterator[dict[str, str]]:
    """Point every cache of :data:`CACHE_ENV` at a new folder under ``root`` until the
    block ends, then restore the environment; yields the variables set."""
    values = {name: str(root / folder) for name, folder in CACHE_ENV.items()}
    saved = {name: os.environ.get(name) for name in values}
    for path in values.values():
        Path(path).mkdir(parents=True, exist_ok=True)
    os.environ.update(values)
    try:
        yield values
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
