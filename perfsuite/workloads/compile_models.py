"""torch.compile on fixed and variable input shapes: the retracing study under PyTorch.

A tiny model's forward pass or training step (Adam, mean squared error against a
seeded random target) runs ``eager``, under ``torch.compile`` with its defaults
(``compile``), with ``dynamic=True`` (``dynamic``), or with the input's height and
width marked with ``torch._dynamo.mark_dynamic`` (``mark_dynamic``). :class:`CompileRun`
resets dynamo and compiles afresh before every timed call, so each call pays the
compilations it claims to measure, and counts the graphs dynamo compiled in every
call exactly (:func:`perfsuite.bench.traces.torch_compile_count`).

What the modes compile over distinct shapes: ``compile`` compiles the first shape with
static sizes and recompiles on the first new shape with the sizes that changed made
symbolic ("automatic dynamic shapes"); ``dynamic`` and ``mark_dynamic`` start
symbolic. A symbolic graph can still recompile: inductor guards some kernel choices
on a size threshold (with torch 2.13 the training step's backward guards
``batch * (H // 4) * (W // 4) <= 4096``), so a shape past it compiles one more graph.

The model has no convolution on purpose: on the CPU, inductor specializes a
convolution's output strides on the input width, so a CNN recompiles at every new
width even with ``dynamic=True`` (and ``mark_dynamic`` fails with a constraint
violation when training). This bench measures what dynamic shapes buy where they
work; the README notes the convolution case.

The same run takes a device: on CUDA, inductor generates Triton kernels instead of
C++ ones, and its size guards are its own, so the graph counts on a GPU may differ
from the CPU's within :func:`compile_problem`'s bounds; on either device they are
exact and the same in every call.
"""

from __future__ import annotations

import functools
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.bench.traces import torch_compile_count
from perfsuite.errors import PerfsuiteError, unknown_choice

MODES = ("eager", "compile", "dynamic", "mark_dynamic")
KINDS = ("forward", "train")
CLASSES = 10
#: the input dimensions whose size varies between steps (NCHW: height and width)
VARIABLE_DIMS = (2, 3)


class PatchMLP(nn.Module):
    """4x4 average pooling, a two-layer MLP on every pooled pixel, global mean, a classifier.

    Any height and width of at least 4 pixels; no convolution (see the module docstring).
    """

    def __init__(self, width: int = 32, classes: int = CLASSES) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, width)
        self.fc2 = nn.Linear(width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(x, 4).permute(0, 2, 3, 1)
        x = F.relu(self.fc2(F.relu(self.fc1(x))))
        out: torch.Tensor = self.head(x.mean(dim=(1, 2)))
        return out


@functools.cache
def toolchain_problem(device_type: str = "cpu") -> str | None:
    """Why torch.compile cannot build kernels for ``device_type`` (``cpu`` or ``cuda``)
    here: a missing C++ compiler or Python headers (Triton's launcher needs them too),
    no Triton for CUDA, or a tiny compile that fails; None if it can. Checked once per
    process and device type."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception as exc:  # any failure means the same: no usable compiler
        return f"torch.compile needs a C++ compiler (g++ or $CXX) for inductor: {exc}"
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        return (
            f"torch.compile needs the Python headers (no Python.h in {include}): "
            "install python3-dev or your Python's development package"
        )
    if device_type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "torch.compile on CUDA needs Triton: pip install triton"
    try:
        torch._dynamo.reset()
        compiled = torch.compile(lambda x: x * 2 + 1)
        ones = torch.ones(3, device=device_type)
        if not torch.equal(compiled(ones).cpu(), torch.full((3,), 3.0)):
            return "torch.compile's tiny test compile gave a wrong result"
    except Exception as exc:  # report whatever stopped the compile
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"torch.compile failed on a tiny function: {type(exc).__name__}: {first}"
    finally:
        torch._dynamo.reset()
    return None


def compile_problem(mode: str, graphs: int, shapes: Sequence[tuple[int, int]]) -> str | None:
    """Why a call's graph count shows the bench timed the wrong thing, or None if it is sound.

    ``eager`` never compiles; every compiled mode compiles at least once and at most
    once per distinct shape; plain ``compile`` compiles its first graph with static
    sizes, so a second distinct shape always recompiles.
    """
    distinct = len(set(shapes))
    if mode == "eager":
        return None if graphs == 0 else f"eager mode compiled {graphs} graphs; expected 0"
    if mode not in MODES:
        raise unknown_choice("compile mode", mode, MODES)
    if graphs < 1:
        return f"{mode} never compiled: the steps did not run under torch.compile"
    if graphs > distinct:
        return f"{mode} compiled {graphs} graphs over only {distinct} distinct shapes"
    if mode == "compile" and distinct > 1 and graphs < 2:
        return (
            f"compile compiled {graphs} graph over {distinct} distinct shapes; its first "
            "graph has static sizes, so the second shape must recompile"
        )
    return None


def wrap(model: nn.Module, mode: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """``model`` as the mode runs it: itself (eager) or a new ``torch.compile`` wrapper."""
    if mode == "eager":
        return model
    if mode not in MODES:
        raise unknown_choice("compile mode", mode, MODES)
    compiled: Callable[[torch.Tensor], torch.Tensor] = torch.compile(
        model, dynamic=True if mode == "dynamic" else None
    )
    return compiled


@dataclass
class CompileRun:
    """A sequence of steps over given shapes, in one mode, compiled afresh per call.

    Pass :meth:`setup` as ``perf.measure(setup=...)`` and :meth:`run` as the timed
    callable: ``setup`` resets dynamo (its code caches and its record of which sizes
    changed) and wraps the model anew, outside the timed region, and ``run`` takes
    every step, paying every compilation. :attr:`graphs` holds the exact number of
    graphs each call compiled.
    """

    kind: str
    mode: str
    shapes: Sequence[tuple[int, int]]
    batch: int
    seed: int = 0
    device: str | torch.device = "cpu"
    graphs: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise unknown_choice("compile mode", self.mode, MODES)
        if self.kind not in KINDS:
            raise unknown_choice("step kind", self.kind, KINDS)
        if not self.shapes or self.batch < 1:
            raise PerfsuiteError("a compile run needs at least one step shape and batch >= 1")
        torch.manual_seed(self.seed)
        self.model = PatchMLP().to(self.device)
        self.model.train(self.kind == "train")
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.inputs = self._inputs()
        self._step: Callable[[torch.Tensor], torch.Tensor] | None = None
        self._before = 0

    def _inputs(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Seeded inputs, one tensor per distinct shape (marked dynamic in ``mark_dynamic``)."""
        rng = np.random.default_rng(self.seed)
        target = torch.from_numpy(rng.standard_normal((self.batch, CLASSES), dtype=np.float32))
        by_shape: dict[tuple[int, int], torch.Tensor] = {}
        for height, width in self.shapes:
            if (height, width) not in by_shape:
                x = torch.from_numpy(
                    rng.standard_normal((self.batch, 3, height, width), dtype=np.float32)
                ).to(self.device)
                if self.mode == "mark_dynamic":
                    for dim in VARIABLE_DIMS:
                        torch._dynamo.mark_dynamic(x, dim)
                by_shape[(height, width)] = x
        return [(by_shape[s], target.to(self.device)) for s in self.shapes]

    @property
    def params(self) -> dict[str, Any]:
        return {
            "model": "patch_mlp",
            "kind": self.kind,
            "mode": self.mode,
            "batch": self.batch,
            "steps": len(self.shapes),
            "distinct_shapes": len(set(self.shapes)),
            "seed": self.seed,
            "backend": None if self.mode == "eager" else "inductor",
            "dynamic": {"dynamic": True, "mark_dynamic": "height, width"}.get(self.mode),
            "optimizer": "adam (eager)" if self.kind == "train" else None,
            "loss": "mse" if self.kind == "train" else None,
            "fresh_compile_per_call": self.mode != "eager",
            "device": str(self.device),
            "torch": torch.__version__,
        }

    def setup(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Close the previous call's count, reset dynamo and wrap the model anew."""
        self._close()
        if self.mode != "eager":
            torch._dynamo.reset()
        self._before = torch_compile_count()
        self._step = wrap(self.model, self.mode)
        return (self._step,), {}

    def run(self, step: Callable[[torch.Tensor], torch.Tensor]) -> float:
        """Every step with ``step``; reads the last result back to the host, so the work
        has finished when it returns (on a GPU too)."""
        out = torch.zeros(())
        for x, target in self.inputs:
            if self.kind == "train":
                self.optimizer.zero_grad(set_to_none=True)
                loss: Any = F.mse_loss(step(x), target)
                loss.backward()
                self.optimizer.step()
                out = loss.detach()
            else:
                with torch.no_grad():
                    out = step(x)
        return float(out.sum().item())

    def finish(self) -> list[int]:
        """The exact graph count of every call so far."""
        self._close()
        return self.graphs

    def _close(self) -> None:
        if self._step is not None:
            self.graphs.append(torch_compile_count() - self._before)
            self._step = None
