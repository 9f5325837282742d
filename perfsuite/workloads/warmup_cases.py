"""The warm-up study's cases: what a first call costs in TensorFlow, PyTorch and DALI.

Each case has a way to get a fresh, never-called object (so a cold sample never
reuses anything already warm) and a call to time. Unlike the other workload modules
this one imports its frameworks inside the functions: it serves four frameworks,
and a cold-start child (``python -m perfsuite.harness.coldstart``) running one case must pay
for importing that case's framework only.

The model everywhere is the DALI study's small CNN (conv 3->6, pool, conv 6->16,
pool, fc 53824->128->84->classes at 240x240), so the cases differ only in the
framework and in what is cold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

INPUT_SIZE = 240
NUM_CLASSES = 2


def example_batch(batch: int, size: int = INPUT_SIZE, seed: int = 0) -> np.ndarray:
    """A seeded float32 NHWC batch in 0..1."""
    return np.random.default_rng(seed).random((batch, size, size, 3), dtype=np.float32)


# --- TensorFlow: a Keras model under tf.function, and a SavedModel


def tf_input(batch: int, size: int = INPUT_SIZE) -> Any:
    """:func:`example_batch` as a TensorFlow tensor."""
    import tensorflow as tf

    return tf.constant(example_batch(batch, size))


def keras_small_cnn(size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> Any:
    """The small CNN as a fresh Keras model (NHWC input); its weights exist on return."""
    import keras

    return keras.Sequential(
        [
            keras.Input((size, size, 3)),
            keras.layers.Conv2D(6, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(84, activation="relu"),
            keras.layers.Dense(num_classes),
        ]
    )


def fresh_tf_function(size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> Any:
    """A fresh model wrapped in a fresh, never-traced ``tf.function`` (inference mode)."""
    import tensorflow as tf

    model = keras_small_cnn(size, num_classes)

    def infer(x: Any) -> Any:
        return model(x, training=False)

    return tf.function(infer)


def tf_call(fn: Callable[[Any], Any], x: Any) -> np.ndarray:
    """Call and fetch the result to the host (the value is ready when this returns)."""
    result: np.ndarray = fn(x).numpy()
    return result


def tf_prepare(fn: Callable[[Any], Any], shape: Sequence[int]) -> None:
    """Study 003's fix: run once on a zero input of the right shape at load time."""
    import tensorflow as tf

    tf_call(fn, tf.zeros(shape, tf.float32))


def export_savedmodel(path: Path, size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> Path:
    """Save the small CNN as a TF SavedModel with a ``serve`` endpoint; returns ``path``."""
    model = keras_small_cnn(size, num_classes)
    model.export(str(path), format="tf_saved_model", verbose=False)
    return path


class SavedModelCase:
    """Cold-start child case: ``load`` a SavedModel, ``call`` its ``serve`` endpoint."""

    def __init__(self, path: str, batch: int, size: int) -> None:
        import tensorflow as tf

        self.tf = tf
        self.path = path
        self.batch = batch
        self.size = size
        self.serve: Callable[[Any], Any] | None = None
        self.x: Any = None

    def load(self) -> None:
        loaded = self.tf.saved_model.load(self.path)
        self.serve = loaded.serve
        self._keep = loaded  # the endpoint needs its object alive
        self.x = self.tf.constant(example_batch(self.batch, self.size))

    def call(self) -> np.ndarray:
        assert self.serve is not None, "load() first"
        return tf_call(self.serve, self.x)


def savedmodel_case(args: Sequence[str]) -> SavedModelCase:
    """``perfsuite.workloads.warmup_cases:savedmodel_case PATH BATCH SIZE``."""
    path, batch, size = args
    return SavedModelCase(path, int(batch), int(size))


def load_savedmodel(path: Path) -> tuple[Any, Callable[[Any], Any]]:
    """Load in this process: (the loaded object, its ``serve`` endpoint)."""
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    return loaded, loaded.serve


# --- PyTorch: the small CNN's first forward, on the CPU and on CUDA


def fresh_torch_model(
    size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES, device: str | torch.device = "cpu"
) -> Any:
    """A fresh small CNN in eval mode on ``device``."""
    from perfsuite.workloads.torch_models import SmallCNN

    return SmallCNN(size, num_classes).eval().to(device)


def torch_input(batch: int, size: int = INPUT_SIZE, device: str | torch.device = "cpu") -> Any:
    """:func:`example_batch` as an NCHW torch tensor on ``device``."""
    import torch

    return torch.from_numpy(example_batch(batch, size)).permute(0, 3, 1, 2).contiguous().to(device)


def torch_forward(model: Any, x: Any, sync: Callable[[], None] | None = None) -> Any:
    """One inference-mode forward; ``sync`` (e.g. ``torch.cuda.synchronize``) before returning."""
    import torch

    with torch.inference_mode():
        out = model(x)
    if sync is not None:
        sync()
    return out


class TorchCudaCase:
    """Cold-start child case: the process's first CUDA call is the first ``call``.

    ``load`` builds the model and input on the CPU and sets
    ``torch.backends.cudnn.benchmark``; the first ``call`` moves them to the GPU
    (creating the CUDA context) and runs a synchronized forward.
    """

    def __init__(self, batch: int, size: int, cudnn_benchmark: bool) -> None:
        import torch

        self.torch = torch
        self.batch = batch
        self.size = size
        self.cudnn_benchmark = cudnn_benchmark
        self.model: Any = None
        self.x: Any = None
        self.on_gpu = False

    def load(self) -> None:
        self.torch.backends.cudnn.benchmark = self.cudnn_benchmark
        self.model = fresh_torch_model(self.size)
        self.x = torch_input(self.batch, self.size)

    def call(self) -> Any:
        if not self.on_gpu:
            self.model = self.model.to("cuda")
            self.x = self.x.to("cuda")
            self.on_gpu = True
        return torch_forward(self.model, self.x, self.torch.cuda.synchronize)


def torch_cuda_case(args: Sequence[str]) -> TorchCudaCase:
    """``perfsuite.workloads.warmup_cases:torch_cuda_case BATCH SIZE CUDNN_BENCHMARK(0|1)``."""
    batch, size, benchmark = args
    return TorchCudaCase(int(batch), int(size), benchmark == "1")


# --- DALI: pipeline build plus first batch


def dali_build_and_first_batch(dataset: Any, *, batch_size: int, num_threads: int) -> Any:
    """Build a fresh CPU pipeline (decode, resize 240, cast) and run its first batch.

    Returns the pipeline, so the caller decides when it is destroyed (not inside a
    timed region).
    """
    from perfsuite.workloads.dali_pipelines import build_pipeline

    pipe = build_pipeline(
        dataset,
        "resize",
        device="cpu",
        batch_size=batch_size,
        num_threads=num_threads,
        shuffle=False,
    )
    pipe.run()
    return pipe
