"""The DALI study's pipelines: read ``file_list.txt``, decode, resize or random-resized-crop.

``device="cpu"`` builds a pipeline with ``device_id=None``: every operator runs on the
CPU and no GPU is needed at all. ``device="gpu"`` decodes with the ``mixed`` decoder
(nvImageCodec, hardware or CUDA) and resizes on the GPU; the outputs stay in GPU
memory. The per-image work matches :mod:`perfsuite.workloads.torch_models`.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from nvidia.dali import fn, types
from nvidia.dali.pipeline import Pipeline
from nvidia.dali.plugin.base_iterator import LastBatchPolicy
from nvidia.dali.plugin.pytorch import DALIGenericIterator

from perfsuite.data.datasets import ImageDataset
from perfsuite.workloads.torch_models import CROP, MEAN, RESIZE, STD, Kind

Device = Literal["cpu", "gpu"]

#: the reader's name, which the PyTorch iterator uses to know the epoch size
READER = "reader"
OUTPUTS = ["data", "label"]


def build_pipeline(
    dataset: ImageDataset,
    kind: Kind,
    *,
    device: Device,
    batch_size: int,
    num_threads: int,
    device_id: int | None = None,
    seed: int = 0,
    shuffle: bool = True,
) -> Any:
    """A built pipeline with outputs ``(images, labels)``.

    ``kind="resize"``: decode, resize to 240x240, cast to uint8 (HWC). ``kind="rrc"``:
    decode, random resized crop 224, normalize to float32 CHW. ``device="gpu"`` needs
    ``device_id``; ``device="cpu"`` ignores it and runs with ``device_id=None``.
    """
    if device == "gpu" and device_id is None:
        raise ValueError("a GPU pipeline needs device_id (0: the first visible CUDA device)")
    if kind not in ("resize", "rrc"):
        raise ValueError(f"kind must be 'resize' or 'rrc', got {kind!r}")
    # DALI's Pipeline and its graph nodes are only partly annotated: handled as Any here.
    pipe: Any = cast(Any, Pipeline)(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=device_id if device == "gpu" else None,
        seed=seed,
    )
    with pipe:
        jpegs, labels = fn.readers.file(
            file_root=str(dataset.root),
            file_list=str(dataset.file_list),
            random_shuffle=shuffle,
            name=READER,
        )
        images: Any = fn.decoders.image(
            jpegs, device="mixed" if device == "gpu" else "cpu", output_type=types.DALIImageType.RGB
        )
        # Operators after a mixed decoder run on the GPU (their input is in GPU memory).
        if kind == "resize":
            images = fn.resize(images, resize_x=RESIZE, resize_y=RESIZE)
            images = fn.cast(images, dtype=types.DALIDataType.UINT8)
        else:
            images = fn.random_resized_crop(images, size=[CROP, CROP])
            images = fn.crop_mirror_normalize(
                images,
                dtype=types.DALIDataType.FLOAT,
                output_layout="CHW",
                mean=list(MEAN),
                std=list(STD),
            )
        if device == "gpu":
            labels = labels.gpu()
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe


def torch_iterator(pipe: Pipeline) -> DALIGenericIterator:
    """DALI's PyTorch iterator over ``pipe``: epoch size from the reader, drop the short batch.

    Batches are ``[{"data": tensor, "label": tensor}]`` (one dict per pipeline), CPU
    tensors for a CPU pipeline and CUDA tensors for a GPU one; the iterator resets
    itself at the end of each epoch.
    """
    return DALIGenericIterator(
        [pipe], OUTPUTS, reader_name=READER, last_batch_policy=LastBatchPolicy.DROP, auto_reset=True
    )


def as_pairs(iterator: DALIGenericIterator) -> Any:
    """Adapt the iterator's ``[{"data": x, "label": y}]`` batches to ``(x, y)`` pairs."""
    while True:
        for batch in iterator:
            yield batch[0]["data"], batch[0]["label"]


def pipeline_params(
    kind: Kind, device: Device, batch_size: int, num_threads: int
) -> dict[str, Any]:
    """What a DALI bench records in ``params``."""
    return {
        "loader": "nvidia.dali",
        "decoder": "mixed" if device == "gpu" else "cpu",
        "ops_device": device,
        "batch": batch_size,
        "threads": num_threads,
        "output_layout": "NHWC uint8" if kind == "resize" else "NCHW float32",
        "iterator": "DALIGenericIterator(last_batch_policy=DROP, reader_name)",
    }
