"""The DALI bench's helpers: the small CNN, the PIL DataLoader baseline, DALI CPU pipelines.

Everything here loads torch (and DALI), so the checks run in one pytest subprocess
on a tiny generated dataset (a framework cannot be imported twice in one process).
"""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

COUNT = 10  # 2 full batches of 4 and a short one that last_batch_policy DROP discards

TORCH_TESTS = f"""
import math

import numpy as np
import pytest
import torch

from perfsuite.workloads import torch_models as tm

COUNT = {COUNT}


@pytest.fixture(scope="module")
def ds(make_image_dataset):
    return make_image_dataset("imagenet-like", count=COUNT)


def test_flat_size_of_the_study_cnn():
    assert tm.flat_size(240) == 53824
    assert tm.flat_size(100) == 16 * 23 * 23
    assert tm.SmallCNN(240).fc1.in_features == 53824
    with pytest.raises(ValueError, match="too small"):
        tm.flat_size(9)


@pytest.mark.parametrize("size", [240, 100])
def test_small_cnn_forward_shape(size):
    model = tm.SmallCNN(size, num_classes=3).eval()
    with torch.inference_mode():
        out = model(torch.zeros(2, 3, size, size))
    assert out.shape == (2, 3)


def test_trainer_step_on_cpu():
    torch.manual_seed(0)
    trainer = tm.Trainer(tm.SmallCNN(240, num_classes=10), "cpu")
    images = torch.randint(0, 256, (2, 240, 240, 3), dtype=torch.uint8)
    loss = trainer.step(images, torch.tensor([[1], [7]], dtype=torch.int32))
    assert loss.shape == ()
    assert math.isfinite(float(loss))
    assert trainer.last_input_device == torch.device("cpu")


def test_dataset_items(ds):
    resize = tm.JpegDataset(ds.files, ds.labels, "resize")
    rrc = tm.JpegDataset(ds.files, ds.labels, "rrc")
    assert len(resize) == len(rrc) == COUNT
    image, label = resize[3]
    assert image.shape == (240, 240, 3) and image.dtype == torch.uint8
    assert label == ds.labels[3]
    image, label = rrc[3]
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32
    assert torch.isfinite(image).all()
    with pytest.raises(ValueError, match="kind"):
        tm.JpegDataset(ds.files, ds.labels, "nope")


def test_crop_box_stays_inside_the_image():
    generator = torch.Generator().manual_seed(1)
    for width, height in [(300, 500), (500, 300), (224, 224), (10, 400)]:
        for _ in range(50):
            left, top, right, bottom = tm.random_resized_crop_box(width, height, generator)
            assert 0 <= left < right <= width and 0 <= top < bottom <= height


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("kind", ["resize", "rrc"])
def test_loader_batches(ds, workers, kind):
    loader = tm.torch_loader(ds, kind, batch_size=4, workers=workers, seed=3)
    batches = list(loader)
    assert len(batches) == COUNT // 4  # drop_last
    for images, labels in batches:
        if kind == "resize":
            assert images.shape == (4, 240, 240, 3) and images.dtype == torch.uint8
        else:
            assert images.shape == (4, 3, 224, 224) and images.dtype == torch.float32
        assert labels.shape == (4,) and labels.dtype == torch.int64
        assert set(labels.tolist()) <= set(ds.labels)
    params = tm.loader_params(4, workers, kind)
    assert params["workers"] == workers and params["batch"] == 4


def test_endless_crosses_epochs(ds):
    loader = tm.torch_loader(ds, "resize", batch_size=4, workers=0)
    batches = tm.endless(loader)
    assert len([next(batches) for _ in range(5)]) == 5  # 2 batches per epoch
"""

DALI_TESTS = f"""
import pytest
import torch

from perfsuite.workloads import dali_pipelines as dali
from perfsuite.workloads import torch_models as tm

pytestmark = pytest.mark.dali
COUNT = {COUNT}


@pytest.fixture(scope="module")
def ds(make_image_dataset):
    return make_image_dataset("imagenet-like", count=COUNT)


@pytest.mark.parametrize("kind", ["resize", "rrc"])
def test_cpu_pipeline_batches(ds, kind):
    pipe = dali.build_pipeline(ds, kind, device="cpu", batch_size=4, num_threads=1,
                               shuffle=False)
    iterator = dali.torch_iterator(pipe)
    epoch = list(iterator)
    assert len(epoch) == COUNT // 4  # last_batch_policy DROP
    for i, batch in enumerate(epoch):
        images, labels = batch[0]["data"], batch[0]["label"]
        assert images.device == torch.device("cpu")
        if kind == "resize":
            assert images.shape == (4, 240, 240, 3) and images.dtype == torch.uint8
        else:
            assert images.shape == (4, 3, 224, 224) and images.dtype == torch.float32
        # unshuffled, the reader follows file_list.txt
        assert labels.reshape(-1).tolist() == list(ds.labels[4 * i:4 * i + 4])
    # the iterator resets itself: a second epoch has the same length
    assert len(list(iterator)) == COUNT // 4


def test_as_pairs_keeps_going_across_epochs(ds):
    pipe = dali.build_pipeline(ds, "resize", device="cpu", batch_size=4, num_threads=2)
    pairs = dali.as_pairs(dali.torch_iterator(pipe))
    for _ in range(5):
        images, labels = next(pairs)
        assert images.shape == (4, 240, 240, 3)
        assert labels.shape == (4, 1)


def test_gpu_pipeline_needs_a_device_id(ds):
    with pytest.raises(ValueError, match="device_id"):
        dali.build_pipeline(ds, "resize", device="gpu", batch_size=4, num_threads=1)


def test_dali_feeds_the_trainer(ds):
    pipe = dali.build_pipeline(ds, "resize", device="cpu", batch_size=4, num_threads=1)
    trainer = tm.Trainer(tm.SmallCNN(240, num_classes=ds.num_classes), "cpu")
    loss = trainer.steps(dali.as_pairs(dali.torch_iterator(pipe)), 2)
    assert loss.shape == () and torch.isfinite(loss)
"""


@pytest.mark.torch
@pytest.mark.dali
def test_torch_and_dali_helpers(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(test_torch_inner=TORCH_TESTS, test_dali_inner=DALI_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", *inner_args, "--perf-scale=smoke", "-W", "ignore::DeprecationWarning"
    )
    result.assert_outcomes(passed=16)
    assert result.ret == 0
