"""Keras models and steps for the retracing and end-to-end training benches.

Retracing (study 2): a model's forward pass or training step (Adam, mean squared error
against a random target shaped like the model's output) run ``eager``, under plain
``tf.function``, under ``tf.function`` with an ``input_signature`` whose batch and
spatial dimensions are ``None``, or under ``tf.function(reduce_retracing=True)``.
:class:`RetracingRun` builds a fresh ``tf.function`` (an empty trace cache) before
every timed call, so each call pays the tracing it claims to measure, and counts the
traces of every call exactly.

End-to-end (study 1): :class:`TrainLoop` trains a classifier on batches pulled from a
tf.data iterator and measures, inside the timed call, how long the loop waits for
the next batch.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

from perfsuite.errors import PerfsuiteError, unknown_choice

MODES = ("eager", "tf_function", "input_signature", "reduce_retracing")
KINDS = ("forward", "train")
#: backbones for the retracing bench: small CNNs (``cnn-<layers>``) or keras.applications
BACKBONES = ("cnn-1", "cnn-2", "cnn-3", "vgg16", "resnet152v2")
CLASSIFIERS = ("small_cnn", "mobilenet_v2")


def model_device() -> str:
    """Where TensorFlow places a model's ops by default: ``gpu`` if it sees one, else ``cpu``."""
    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


@functools.cache
def backbone(name: str) -> Any:
    """A headless model taking ``[B, H, W, 3]`` of any H and W (built once per process).

    ``cnn-N``: N stride-2 3x3 convolutions (8, 16, 32, ... filters); ``vgg16`` and
    ``resnet152v2``: keras.applications with ``weights=None, include_top=False``.
    """
    import keras

    if name.startswith("cnn-") and name[4:].isdigit() and 1 <= int(name[4:]) <= 6:
        inputs = keras.Input((None, None, 3))
        x = inputs
        for layer in range(int(name[4:])):
            x = keras.layers.Conv2D(8 * 2**layer, 3, strides=2, padding="same", activation="relu")(
                x
            )
        return keras.Model(inputs, x, name=name.replace("-", "_"))
    if name == "vgg16":
        return keras.applications.VGG16(
            weights=None, include_top=False, input_shape=(None, None, 3)
        )
    if name == "resnet152v2":
        return keras.applications.ResNet152V2(
            weights=None, include_top=False, input_shape=(None, None, 3)
        )
    raise unknown_choice("backbone", name, BACKBONES)


@functools.cache
def adam_for(name: str) -> Any:
    """The Adam optimizer of backbone ``name``, its slots created before any timing."""
    import keras

    optimizer = keras.optimizers.Adam()
    optimizer.build(backbone(name).trainable_variables)
    return optimizer


def output_hw(model: Any, height: int, width: int) -> tuple[int, int, int]:
    """The model's output (height, width, channels) for one input size."""
    shape = model.compute_output_shape((1, height, width, 3))
    return int(shape[1]), int(shape[2]), int(shape[3])


def forward_fn(model: Any) -> Callable[..., Any]:
    """The forward pass, inference mode."""

    def forward(x: Any) -> Any:
        return model(x, training=False)

    return forward


def train_fn(model: Any, optimizer: Any) -> Callable[..., Any]:
    """One training step: mean squared error against ``target``, Adam update; returns the loss."""

    def train(x: Any, target: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - target))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train


def signature(kind: str, channels: int) -> list[Any]:
    """``input_signature`` with batch and spatial dimensions ``None``."""
    spec = [tf.TensorSpec([None, None, None, 3], tf.float32)]
    if kind == "train":
        spec.append(tf.TensorSpec([None, None, None, channels], tf.float32))
    return spec


def wrap(fn: Callable[..., Any], mode: str, input_signature: list[Any]) -> Callable[..., Any]:
    """``fn`` as the mode runs it: itself (eager) or a new ``tf.function`` with its own cache."""
    if mode == "eager":
        return fn
    options: dict[str, dict[str, Any]] = {
        "tf_function": {},
        "input_signature": {"input_signature": input_signature},
        "reduce_retracing": {"reduce_retracing": True},
    }
    if mode in options:
        wrapped: Callable[..., Any] = tf.function(fn, **options[mode])
        return wrapped
    raise unknown_choice("retracing mode", mode, MODES)


def step_inputs(
    model: Any, kind: str, shapes: Sequence[tuple[int, int]], batch: int, seed: int
) -> list[tuple[Any, ...]]:
    """Seeded random-normal inputs per step (and targets shaped like the output, to train).

    Built once, before timing: one tensor per distinct shape, shared by its steps.
    """
    rng = np.random.default_rng(seed)
    by_shape: dict[tuple[int, int], tuple[Any, ...]] = {}
    for height, width in shapes:
        if (height, width) in by_shape:
            continue
        x = tf.constant(rng.standard_normal((batch, height, width, 3), dtype=np.float32))
        if kind == "train":
            out = output_hw(model, height, width)
            target = tf.constant(rng.standard_normal((batch, *out), dtype=np.float32))
            by_shape[(height, width)] = (x, target)
        else:
            by_shape[(height, width)] = (x,)
    return [by_shape[s] for s in shapes]


def trace_problem(mode: str, traces: int, shapes: Sequence[tuple[int, int]]) -> str | None:
    """Why a round's trace count shows the bench timed the wrong thing, or None if it is sound.

    ``eager`` never traces; ``input_signature`` traces once, at most twice (Keras may
    trace again to create variables), whatever the shapes; plain ``tf_function``
    traces at least once per distinct shape; every function mode traces at least once
    and at most once per distinct shape, plus one.
    """
    distinct = len(set(shapes))
    if mode == "eager":
        return None if traces == 0 else f"eager mode traced {traces} times; expected 0"
    if traces < 1:
        return f"{mode} never traced: the step did not run under tf.function"
    if mode == "input_signature" and traces > 2:
        return f"input_signature traced {traces} times; expected at most 2 whatever the shapes"
    if mode == "tf_function" and traces < distinct:
        return (
            f"tf_function traced {traces} times over {distinct} distinct shapes; expected "
            "at least one trace per distinct shape"
        )
    if traces > distinct + 1:
        return f"{mode} traced {traces} times over only {distinct} distinct shapes"
    return None


@dataclass
class RetracingRun:
    """A sequence of steps over given shapes, in one mode, with a fresh function per call.

    Pass :meth:`setup` as ``perf.measure(setup=...)`` and :meth:`run` as the timed
    callable: ``setup`` builds a new ``tf.function`` (outside the timed region) and
    ``run`` takes every step with it, paying every trace (count them with the
    ``trace_counter`` fixture).
    """

    model_name: str
    kind: str
    mode: str
    shapes: Sequence[tuple[int, int]]
    batch: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise unknown_choice("retracing mode", self.mode, MODES)
        if self.kind not in KINDS:
            raise unknown_choice("step kind", self.kind, KINDS)
        if not self.shapes or self.batch < 1:
            raise PerfsuiteError("a retracing run needs at least one step shape and batch >= 1")
        model = backbone(self.model_name)
        channels = output_hw(model, *self.shapes[0])[2]
        self._fn = (
            train_fn(model, adam_for(self.model_name))
            if self.kind == "train"
            else forward_fn(model)
        )
        self._signature = signature(self.kind, channels)
        self.inputs = step_inputs(model, self.kind, self.shapes, self.batch, self.seed)
        # Before timing: one eager step creates variables and kernels, and one trace of a
        # throwaway function pays the process's first-trace costs, so every timed call
        # (fresh function, first trace included) is alike and warm-up rounds are not needed.
        self._fn(*self.inputs[0])
        if self.mode != "eager":
            wrap(self._fn, self.mode, self._signature)(*self.inputs[0])

    @property
    def params(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "kind": self.kind,
            "mode": self.mode,
            "batch": self.batch,
            "steps": len(self.shapes),
            "distinct_shapes": len(set(self.shapes)),
            "seed": self.seed,
            "optimizer": "adam" if self.kind == "train" else None,
            "loss": "mse" if self.kind == "train" else None,
            "fresh_function_per_call": self.mode != "eager",
        }

    def setup(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """A fresh step function (a new ``tf.function``, or the eager step itself)."""
        return (wrap(self._fn, self.mode, self._signature),), {}

    def run(self, step: Callable[..., Any]) -> Any:
        """Every step with ``step``; reads the last result so the work has finished."""
        out = None
        for args in self.inputs:
            out = step(*args)
        return np.asarray(out)


@functools.cache
def classifier(name: str, num_classes: int) -> Any:
    """The end-to-end bench's model on 224x224x3 inputs (built once per process).

    ``small_cnn``: a stride-4 4x4 convolution (16 filters), a stride-2 3x3 convolution
    (32 filters), global average pooling and a dense layer, about 6 M multiply-adds per
    image; ``mobilenet_v2``: keras.applications with ``weights=None``.
    """
    import keras

    if name == "small_cnn":
        inputs = keras.Input((224, 224, 3))
        x = keras.layers.Conv2D(16, 4, strides=4, activation="relu")(inputs)
        x = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
        x = keras.layers.GlobalAveragePooling2D()(x)
        return keras.Model(inputs, keras.layers.Dense(num_classes)(x), name="small_cnn")
    if name == "mobilenet_v2":
        return keras.applications.MobileNetV2(
            weights=None, input_shape=(224, 224, 3), classes=num_classes
        )
    raise unknown_choice("classifier", name, CLASSIFIERS)


def input_bound_share(waits: Sequence[float], calls: Sequence[float]) -> float:
    """The share of the timed calls spent waiting for the next batch: sum(waits) / sum(calls).

    ``waits[i]`` is the time call ``i`` waited on ``next(iterator)``, measured inside
    the call that took ``calls[i]`` seconds.
    """
    if len(waits) != len(calls) or not calls:
        raise ValueError(
            f"need one wait per timed call, got {len(waits)} waits for {len(calls)} calls"
        )
    for wait, call in zip(waits, calls, strict=True):
        if wait < 0 or call <= 0 or wait > call:
            raise ValueError(f"a wait of {wait}s cannot belong to a call of {call}s")
    return sum(waits) / sum(calls)


class TrainLoop:
    """``steps`` training steps per call on batches from :attr:`iterator`, timing each wait.

    The training step is traced on zeros of the batch's shape when the loop is built,
    before any pipeline exists, so no batches pile up in a pipeline's prefetch buffer
    while it traces and the timed waits start from the pipeline's steady state.

    Usage::

        loop = TrainLoop(classifier("small_cnn", 10), batch=32, steps=4)
        loop.iterator = pipeline.warm(1.0)
        perf.measure(loop, items=4 * 32, ...)
        input_bound_share(loop.waits[-len(perf.timings()):], perf.timings())
    """

    def __init__(self, model: Any, batch: int, steps: int) -> None:
        import keras

        if steps < 1 or batch < 1:
            raise PerfsuiteError(f"TrainLoop needs batch and steps >= 1, got {batch}, {steps}")
        self.iterator: Iterator[Any] | None = None
        self.steps = steps
        self.waits: list[float] = []
        optimizer = keras.optimizers.Adam()
        optimizer.build(model.trainable_variables)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def step(images: Any, labels: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_fn(tf.cast(labels, tf.int32), model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        # The step closes over locals, not self: no cycle keeps the iterator (and its
        # background threads) alive after the bench lets go of the loop.
        self._step = tf.function(step)
        shape = [batch, *model.input_shape[1:]]
        self._step(tf.zeros(shape, tf.float32), tf.zeros([batch], tf.float32)).numpy()

    def __call__(self) -> float:
        if self.iterator is None:
            raise PerfsuiteError("TrainLoop.iterator is not set: assign a warmed pipeline iterator")
        wait = 0.0
        loss = None
        for _ in range(self.steps):
            start = time.perf_counter()
            images, labels = next(self.iterator)
            wait += time.perf_counter() - start
            loss = self._step(images, labels)
        self.waits.append(wait)
        return float(np.asarray(loss))

    @property
    def traces(self) -> int:
        return int(self._step.experimental_get_tracing_count())
