"""Finding the accelerator, warming it once, and synchronizing with it for honest timing."""

from __future__ import annotations

import contextlib
import glob
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from perfsuite.bench.clocks import ClockWatch, Nvml, Reader, first_visible
from perfsuite.bench.frameworks import is_installed


@dataclass(frozen=True)
class GPUInfo:
    """What the session knows about its GPUs; ``count == 0`` means there is none."""

    count: int
    name: str | None = None
    memory_bytes: int | None = None
    driver: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    source: str = "none"  # which library answered: torch, tensorflow or nvml
    reason: str = ""  # why there is none, when count == 0

    def facts(self) -> dict[str, Any]:
        return asdict(self)


def nvml_facts() -> dict[str, Any]:
    """Driver version and devices from NVML, if the library and a driver are present."""
    try:
        import pynvml  # from nvidia-ml-py
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return {}
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        out: dict[str, Any] = {"driver": _text(pynvml.nvmlSystemGetDriverVersion()), "count": count}
        if count:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            out["name"] = _text(pynvml.nvmlDeviceGetName(handle))
            out["memory_bytes"] = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
        return out
    finally:
        pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


#: what a GPU framework reaches a GPU through on Linux: NVIDIA's driver (its control node,
#: its devices, its /proc entry), WSL2's paravirtualized GPU, and AMD's ROCm (which
#: torch.cuda also drives)
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/proc/driver/nvidia", "/dev/dxg", "/dev/kfd")


def no_gpu_node(nodes: Sequence[str] = GPU_NODES) -> str | None:
    """Why no framework can see a GPU here, found without importing one; None if one may.

    Importing torch costs a second or two a process, which every saved session, every
    side of ``perfsuite ab`` and every gate run would pay on a CPU-only machine to hear
    that there is no GPU. Outside Linux this never answers.
    """
    if not sys.platform.startswith("linux"):
        return None
    if any(glob.glob(pattern) for pattern in nodes):
        return None
    return f"no GPU device found (none of {', '.join(nodes)})"


def detect_gpu(nodes: Sequence[str] = GPU_NODES) -> GPUInfo:
    """Look for a CUDA GPU through torch, then TensorFlow, then NVML; never raises.

    Where Linux shows no GPU device node at all (:func:`no_gpu_node`), neither framework
    is imported: the answer is no GPU, with that reason.
    """
    nvml = nvml_facts()
    driver = nvml.get("driver")
    absent = no_gpu_node(nodes)
    if absent is not None and not nvml.get("count"):
        return GPUInfo(count=0, driver=driver, reason=absent)
    reasons = []
    if is_installed("torch"):
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            props = torch.cuda.get_device_properties(0)
            backend: Any = torch.backends.cudnn  # untyped module functions
            cudnn = backend.version() if backend.is_available() else None
            return GPUInfo(
                count=torch.cuda.device_count(),
                name=props.name,
                memory_bytes=int(props.total_memory),
                driver=driver,
                cuda=torch.version.cuda,
                cudnn=str(cudnn) if cudnn else None,
                source="torch",
            )
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        reasons.append(f"torch {torch.__version__} ({build}) sees no CUDA device")
    # TensorFlow only where torch is absent: the same stack always gives the same facts.
    if not is_installed("torch") and is_installed("tensorflow"):
        import tensorflow as tf

        devices = tf.config.list_physical_devices("GPU")
        if devices:
            build = tf.sysconfig.get_build_info()
            return GPUInfo(
                count=len(devices),
                name=nvml.get("name", devices[0].name),
                memory_bytes=nvml.get("memory_bytes"),
                driver=driver,
                cuda=build.get("cuda_version"),
                cudnn=build.get("cudnn_version"),
                source="tensorflow",
            )
        reasons.append("TensorFlow sees no GPU")
    if nvml.get("count"):
        return GPUInfo(
            count=nvml["count"],
            name=nvml.get("name"),
            memory_bytes=nvml.get("memory_bytes"),
            driver=driver,
            source="nvml",
        )
    if not nvml:
        reasons.append("no NVIDIA driver found (NVML unavailable)")
    return GPUInfo(count=0, driver=driver, reason="; ".join(reasons) or "no GPU found")


def device_kind(device: object) -> str:
    """``cpu`` or ``gpu`` for where work runs: a ``torch.device``, ``"cuda:0"``, ``"cpu"``,
    ``"gpu"`` or a TensorFlow name such as ``"/GPU:0"``; other kinds by their own name.

    >>> device_kind("cuda:0"), device_kind("/GPU:0"), device_kind("cpu")
    ('gpu', 'gpu', 'cpu')
    """
    kind = getattr(device, "type", device)
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"not a device: {device!r}")
    name = kind.lower().lstrip("/").split(":")[0]
    return "gpu" if name in ("cuda", "gpu") else name


class GPU:
    """The session's accelerator, as the ``gpu`` fixture hands it to benches.

    ``perf.measure(..., device="gpu")`` (or a CUDA ``torch.device``) synchronizes with it
    around every timed round, brings its clocks to a steady state before the first and
    records them (:meth:`clock_watch`).

    >>> def test_decode_on_gpu(gpu, perf):
    ...     perf.measure(lambda: run_gpu_step(), items=32, device="gpu")
    """

    def __init__(self, info: GPUInfo) -> None:
        self.info = info
        self._sync: Callable[[], None] | None = None
        self._work: Callable[[], None] | None = None
        self._nvml: Nvml | str | None = None

    @property
    def name(self) -> str | None:
        return self.info.name

    @property
    def count(self) -> int:
        return self.info.count

    @property
    def torch_device(self) -> str:
        """The first visible CUDA device (``CUDA_VISIBLE_DEVICES`` picks which)."""
        return "cuda:0"

    def sync(self) -> None:
        """Block until all GPU work queued so far is done (call before reading the clock)."""
        if self._sync is None:
            self._sync = self._find_sync()
        self._sync()

    def _find_sync(self) -> Callable[[], None]:
        """The synchronize call of a framework that sees the GPU, looked up once."""
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            sync: Callable[[], None] = torch.cuda.synchronize
            return sync
        tf = sys.modules.get("tensorflow")
        if tf is not None and tf.config.list_physical_devices("GPU"):
            sync = tf.test.experimental.sync_devices
            return sync
        raise RuntimeError(
            "gpu.sync(): no CUDA device is reachable through torch or TensorFlow; "
            "install a CUDA build, e.g. pip install 'perfsuite[torch]'"
        )

    def clock_watch(self) -> ClockWatch:
        """A new watch over the clocks of one bench's timed rounds; where NVML cannot be
        read, the clocks are neither settled by reading nor recorded (said once)."""
        return ClockWatch(self.burst, self._clock_reader())

    def _clock_reader(self) -> Reader | None:
        if self._nvml is None:
            self._nvml = Nvml.open(first_visible(os.environ.get("CUDA_VISIBLE_DEVICES")))
            if isinstance(self._nvml, str):
                warnings.warn(f"perfsuite: GPU clocks are not recorded: {self._nvml}", stacklevel=2)
        return self._nvml.read if isinstance(self._nvml, Nvml) else None

    def burst(self, seconds: float = 0.05) -> None:
        """Keep the GPU busy with matrix products for about ``seconds``, then return when
        they are done."""
        if self._work is None:
            self._work = self._find_work()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._work()

    def _find_work(self) -> Callable[[], None]:
        """Eight 2048x2048 products and a synchronize, through the framework that sees the GPU."""
        sync = self._sync or self._find_sync()
        torch = sys.modules.get("torch")
        if torch is not None and sync is getattr(torch.cuda, "synchronize", None):
            a = torch.randn(2048, 2048, device=self.torch_device)
            out = torch.empty_like(a)

            def torch_work() -> None:
                for _ in range(8):
                    torch.mm(a, a, out=out)
                sync()

            return torch_work
        import tensorflow as tf

        with tf.device("/GPU:0"):
            b = tf.random.normal([2048, 2048])

        def tf_work() -> None:
            with tf.device("/GPU:0"):
                for _ in range(8):
                    tf.linalg.matmul(b, b)
            sync()

        return tf_work

    def warm_up(self) -> None:
        """Pay one-off costs once: context creation, a first cuBLAS and cuDNN call."""
        if self.info.source == "torch":
            import torch

            device = torch.device(self.torch_device)
            a = torch.randn(512, 512, device=device)
            (a @ a).sum().item()
            x = torch.randn(8, 3, 64, 64, device=device)
            w = torch.randn(16, 3, 3, 3, device=device)
            torch.nn.functional.conv2d(x, w).sum().item()
            torch.cuda.synchronize()
        elif self.info.source == "tensorflow":
            import tensorflow as tf

            with tf.device("/GPU:0"):
                a = tf.random.normal([512, 512])
                tf.linalg.matmul(a, a).numpy()
                tf.nn.conv2d(
                    tf.random.normal([8, 64, 64, 3]), tf.random.normal([3, 3, 3, 16]), 1, "SAME"
                ).numpy()
        # Looked up here, never inside a timed region; sync() says what is missing if none.
        with contextlib.suppress(RuntimeError):
            self._sync = self._find_sync()
