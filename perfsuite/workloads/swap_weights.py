"""One warmed graph serving many models of one architecture, by swapping their weights.

The warm-up study ends on a cost it leaves open: every model pays its own session and
warm-up. Where N models share an architecture (say one per customer, retrained
apart), one warmed ``tf.function`` can serve them all: a model's first request
assigns its weights to the function's variables (``tf.Variable.assign``) and runs a
graph that is already traced and optimized. The cold path loads each model as its
own fresh Keras model and ``tf.function``, whose first request traces and optimizes
it. PyTorch's equivalent: one module, ``load_state_dict`` per model, against a fresh
module per model.

The model is the warm-up cases' small CNN (:mod:`perfsuite.workloads.warmup_cases`),
its N weight sets seeded random arrays standing in for N trained checkpoints held
in host memory. On a GPU the PyTorch models live on the device and a swap copies a
weight set from host memory into the one module's parameters there. Frameworks are
imported inside the functions, as in warmup_cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perfsuite.workloads import warmup_cases as wc

if TYPE_CHECKING:
    import torch


def array_bytes(arrays: Sequence[Any]) -> int:
    """Bytes of the arrays or tensors of one weight set (``nbytes``, or elements x size)."""
    total = 0
    for a in arrays:
        nbytes = getattr(a, "nbytes", None)
        total += int(nbytes) if nbytes is not None else int(a.numel() * a.element_size())
    return total


def rss_bytes() -> int:
    """This process's resident set size now (Linux ``/proc/self/statm``), 0 where unknown."""
    import os

    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


# --- TensorFlow: one tf.function over one Keras model, its variables assigned per model


def tf_weight_sets(count: int, size: int = wc.INPUT_SIZE, seed: int = 0) -> list[list[np.ndarray]]:
    """``count`` seeded weight sets for the small CNN, in ``model.weights`` order."""
    shapes = [tuple(v.shape) for v in wc.keras_small_cnn(size).weights]
    sets = []
    for index in range(count):
        rng = np.random.default_rng([seed, index])
        sets.append([(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes])
    return sets


def tf_cold_model(weights: Sequence[np.ndarray], size: int = wc.INPUT_SIZE) -> Any:
    """A model loaded cold: a fresh Keras model with ``weights`` in a never-traced tf.function."""
    import tensorflow as tf

    model = wc.keras_small_cnn(size)
    model.set_weights(list(weights))

    def infer(x: Any) -> Any:
        return model(x, training=False)

    fn = tf.function(infer)
    fn.model = model  # the function holds its model, as a server holding N models does
    return fn


class TfSwapServer:
    """One Keras model and one ``tf.function`` serving any weight set of the architecture.

    Usage::

        server = TfSwapServer()
        server.prepare((1, 240, 240, 3))      # traced once, on zeros
        server.serve(weight_sets[2], x)        # assign model 2's weights, then infer
    """

    def __init__(self, size: int = wc.INPUT_SIZE) -> None:
        import tensorflow as tf

        self.model = wc.keras_small_cnn(size)
        model = self.model

        def infer(x: Any) -> Any:
            return model(x, training=False)

        self.fn = tf.function(infer)

    def prepare(self, shape: Sequence[int]) -> None:
        """Trace and run the function once on zeros (the study's "prepare session")."""
        wc.tf_prepare(self.fn, shape)

    def swap(self, weights: Sequence[np.ndarray]) -> None:
        """Assign a weight set to the model's variables in place (no new variables, no trace)."""
        for variable, value in zip(self.model.weights, weights, strict=True):
            variable.assign(value)

    def serve(self, weights: Sequence[np.ndarray], x: Any) -> np.ndarray:
        """A model's first request: swap its weights in, then infer."""
        self.swap(weights)
        return wc.tf_call(self.fn, x)


# --- PyTorch: one module, load_state_dict per model


def torch_state_dicts(count: int, size: int = wc.INPUT_SIZE, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` seeded state dicts of the small CNN (default PyTorch initialization)."""
    import torch

    from perfsuite.workloads.torch_models import SmallCNN

    sets = []
    for index in range(count):
        torch.manual_seed(seed * 1000 + index)
        sets.append({k: v.detach().clone() for k, v in SmallCNN(size).state_dict().items()})
    return sets


def torch_cold_model(
    state: dict[str, Any], size: int = wc.INPUT_SIZE, device: str | torch.device = "cpu"
) -> Any:
    """A model loaded cold: a fresh small CNN in eval mode on ``device`` with ``state`` loaded."""
    model = wc.fresh_torch_model(size, device=device)
    model.load_state_dict(state)
    return model


class TorchSwapServer:
    """One small CNN module on ``device`` serving any state dict of the architecture
    (``load_state_dict`` copies the weights into its parameters, in place)."""

    def __init__(self, size: int = wc.INPUT_SIZE, device: str | torch.device = "cpu") -> None:
        self.model = wc.fresh_torch_model(size, device=device)

    def serve(self, state: dict[str, Any], x: Any) -> Any:
        """A model's first request: copy its parameters in place, then infer."""
        self.model.load_state_dict(state)
        return wc.torch_forward(self.model, x)
