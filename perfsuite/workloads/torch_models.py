"""PyTorch side of the DALI study: its small CNN, a training step, and the PIL DataLoader baseline.

The DataLoader baseline does the same work per image as the DALI pipelines in
:mod:`perfsuite.workloads.dali_pipelines` (decode, resize to 240x240 and keep uint8
HWC; or random resized crop 224 and normalize to float CHW), written the way a
PyTorch user writes it without DALI: a ``Dataset`` decoding with PIL, in a
``DataLoader`` with worker processes. torchvision is not required: the resize and
crop are PIL calls and the crop's parameters follow torchvision's
``RandomResizedCrop`` sampling.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.context
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset

from perfsuite.data.datasets import ImageDataset

Kind = Literal["resize", "rrc"]

RESIZE = 240
CROP = 224
#: ImageNet mean and standard deviation on the 0..255 scale (as DALI's crop_mirror_normalize)
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
#: torchvision RandomResizedCrop defaults, which DALI's random_resized_crop shares
AREA = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)
ATTEMPTS = 10


def flat_size(input_size: int) -> int:
    """Features after the two conv (3x3, no padding) + max-pool (2) stages: 53824 for 240."""
    side = input_size
    for _ in range(2):
        side = (side - 2) // 2
    if side < 1:
        raise ValueError(f"input size {input_size} is too small for the small CNN (minimum 10)")
    return 16 * side * side


class SmallCNN(nn.Module):
    """The study's CNN: conv 3->6, pool, conv 6->16, pool, fc flat->128->84->classes."""

    def __init__(self, input_size: int = RESIZE, num_classes: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(flat_size(input_size), 128)
        self.fc2 = nn.Linear(128, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        out: torch.Tensor = self.fc3(x)
        return out


class Trainer:
    """The study's training loop: NHWC uint8 batch -> NCHW float on the device, Adam lr 0.01.

    Usage::

        trainer = Trainer(SmallCNN(num_classes=10), "cpu")
        loss = trainer.steps(endless(loader), 4)
    """

    def __init__(self, model: nn.Module, device: str | torch.device, lr: float = 0.01) -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.last_input_device: torch.device | None = None

    def step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """One optimizer step on an NHWC uint8 batch; returns the (device) loss."""
        x = images.to(self.device, non_blocking=True)
        self.last_input_device = images.device
        # Permute and cast on the device, as the study does; scaling to 0..1 keeps Adam
        # at lr 0.01 finite on raw pixel values.
        x = x.permute(0, 3, 1, 2).float().div_(255.0)
        y = labels.to(self.device, non_blocking=True).reshape(-1).long()
        self.optimizer.zero_grad(set_to_none=True)
        loss: Any = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        detached: torch.Tensor = loss.detach()
        return detached

    def steps(self, batches: Iterator[tuple[torch.Tensor, torch.Tensor]], n: int) -> torch.Tensor:
        """``n`` steps on the next ``n`` batches; returns the last loss (not synchronized)."""
        loss = torch.zeros((), device=self.device)
        for _ in range(n):
            images, labels = next(batches)
            loss = self.step(images, labels)
        return loss


def endless(loader: Iterable[Any]) -> Iterator[Any]:
    """Batches from ``loader``, epoch after epoch (a DataLoader, a self-resetting DALI iterator)."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise RuntimeError(f"{loader!r} yielded no batch in a whole epoch")


def decode_rgb(path: Path) -> Image.Image:
    """Read and decode a JPEG to an RGB PIL image."""
    with Image.open(path) as image:
        rgb: Image.Image = image.convert("RGB")
        return rgb


def resize_uint8(image: Image.Image, size: int = RESIZE) -> np.ndarray:
    """Resize to ``size`` x ``size`` (bilinear, antialiased) as uint8 HWC."""
    return np.array(image.resize((size, size), Image.Resampling.BILINEAR), dtype=np.uint8)


def random_resized_crop_box(
    width: int, height: int, generator: torch.Generator | None = None
) -> tuple[int, int, int, int]:
    """A crop box (left, top, right, bottom) drawn as torchvision's RandomResizedCrop does."""
    area = width * height
    log_ratio = (math.log(RATIO[0]), math.log(RATIO[1]))
    for _ in range(ATTEMPTS):
        target = area * torch.empty(1).uniform_(*AREA, generator=generator).item()
        aspect = math.exp(torch.empty(1).uniform_(*log_ratio, generator=generator).item())
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, (1,), generator=generator).item())
            left = int(torch.randint(0, width - w + 1, (1,), generator=generator).item())
            return left, top, left + w, top + h
    # Fallback: a central crop with the aspect ratio clamped into range.
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, round(width / RATIO[0])
    elif in_ratio > RATIO[1]:
        w, h = round(height * RATIO[1]), height
    else:
        w, h = width, height
    left, top = (width - w) // 2, (height - h) // 2
    return left, top, left + w, top + h


def rrc_normalized(image: Image.Image, size: int = CROP) -> np.ndarray:
    """Random resized crop to ``size`` x ``size``, normalized, as float32 CHW."""
    box = random_resized_crop_box(*image.size)
    crop = image.resize((size, size), Image.Resampling.BILINEAR, box=box)
    array = (np.asarray(crop, dtype=np.float32) - np.array(MEAN, dtype=np.float32)) / np.array(
        STD, dtype=np.float32
    )
    return np.ascontiguousarray(array.transpose(2, 0, 1))


class JpegDataset(Dataset[tuple[torch.Tensor, int]]):
    """JPEG files and labels, decoded with PIL: ``kind`` ``resize`` (uint8 HWC) or ``rrc``."""

    def __init__(self, files: Sequence[Path], labels: Sequence[int], kind: Kind) -> None:
        if len(files) != len(labels):
            raise ValueError(f"{len(files)} files but {len(labels)} labels")
        if kind not in ("resize", "rrc"):
            raise ValueError(f"kind must be 'resize' or 'rrc', got {kind!r}")
        self.files = [Path(f) for f in files]
        self.labels = [int(label) for label in labels]
        self.kind: Kind = kind

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = decode_rgb(self.files[index])
        array = resize_uint8(image) if self.kind == "resize" else rrc_normalized(image)
        return torch.from_numpy(array), self.labels[index]


#: Worker start method. The bench process holds TensorFlow, DALI and torch threads, and
#: fork()ing a multi-threaded process can deadlock (Python 3.12+ warns about it);
#: forkserver forks workers from a clean single-threaded server instead, which imports
#: this module (and so torch and PIL) once rather than once per worker.
WORKER_START = "forkserver"


def _worker_context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context(WORKER_START)
    if WORKER_START == "forkserver":
        context.set_forkserver_preload([__name__])
    return context


def torch_loader(
    dataset: ImageDataset,
    kind: Kind,
    *,
    batch_size: int,
    workers: int,
    seed: int = 0,
    pin_memory: bool = False,
) -> DataLoader[Any]:
    """A shuffling, drop-last DataLoader over ``dataset`` with persistent worker processes."""
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(
        JpegDataset(dataset.files, dataset.labels, kind),
        batch_size=batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=workers,
        persistent_workers=workers > 0,
        multiprocessing_context=_worker_context() if workers > 0 else None,
        pin_memory=pin_memory,
        generator=generator,
    )


def loader_params(batch_size: int, workers: int, kind: Kind) -> dict[str, Any]:
    """What a DataLoader bench records in ``params``."""
    return {
        "loader": "torch.utils.data.DataLoader",
        "decoder": "PIL",
        "batch": batch_size,
        "workers": workers,
        "worker_start": WORKER_START,
        "output_layout": "NHWC uint8" if kind == "resize" else "NCHW float32",
    }
