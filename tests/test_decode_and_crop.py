"""The ``decode_and_crop`` tf.data variant: the fused path gives parallel_map's output.

What holds exactly with the pinned TensorFlow's libjpeg-turbo, at a fixed crop window
on a constructed JPEG: without chroma subsampling (4:4:4) the fused decode is
pixel-identical to decode-then-crop; with 4:2:0 (the recipes' subsampling) every row
and every column but the window's first and last is identical, and those two differ
only where the window cuts the horizontal chroma upsampling (see the inner tests).
TensorFlow runs in one pytest subprocess (it cannot be imported twice in one process).
"""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

TF_TESTS = r"""
from __future__ import annotations

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from perfsuite.data.datasets import materialize
from perfsuite.data.recipes import load_recipe
from perfsuite.workloads import tf_image
from perfsuite.workloads import tfdata_pipelines as pipes


def jpeg(height, width, subsampling):
    y, x = np.mgrid[0:height, 0:width]
    pixels = np.stack([(x * 3 + y) % 256, (y * 5) % 256, (x * y // 7) % 256], -1)
    noise = np.random.default_rng(7).integers(0, 40, pixels.shape)
    image = Image.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, subsampling=subsampling)
    return out.getvalue()


def fused_and_cropped(data, y, x):
    fused = tf_image.decode_and_crop(data, tf.constant([y, x, 224, 224])).numpy()
    full = tf_image.decode(data).numpy()
    return fused, full[y : y + 224, x : x + 224]


def test_fused_decode_is_pixel_identical_without_chroma_subsampling():
    data = jpeg(257, 333, subsampling=0)  # 4:4:4
    for y in (0, 7, 33):
        for x in range(0, 333 - 224 + 1):
            fused, cropped = fused_and_cropped(data, y, x)
            assert fused.dtype == np.uint8 and fused.shape == (224, 224, 3)
            assert np.array_equal(fused, cropped), (y, x)


def test_fused_decode_differs_only_at_the_cut_chroma_edges_with_420():
    width = 333
    data = jpeg(257, width, subsampling=2)  # 4:2:0
    for y in (0, 7, 33):
        for x in range(0, width - 224 + 1):
            fused, cropped = fused_and_cropped(data, y, x)
            differs = (fused != cropped).any(axis=(0, 2))
            # every column but the first and the last is identical, on every row
            assert not differs[1:-1].any(), (y, x)
            # the first column differs where decoding starts on an iMCU (16 px) boundary
            assert differs[0] == (x % 16 == 0 and x > 0), (y, x)
            # the last where the window ends on an even column inside the image
            assert differs[-1] == (x % 2 == 0 and x + 224 < width), (y, x)


def test_random_window_is_uniform_over_every_window_inside_the_image():
    data = tf.constant(jpeg(226, 240, subsampling=2))
    tf.random.set_seed(3)
    windows = np.array([tf_image.random_window(data).numpy() for _ in range(600)])
    assert set(windows[:, 2]) == {224} and set(windows[:, 3]) == {224}
    assert set(windows[:, 0]) == {0, 1, 2}
    assert set(windows[:, 1]) == set(range(0, 240 - 224 + 1))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(
        count=6, width=[226, 240], height=[224, 236], classes=3)
    return materialize(recipe, tmp_path_factory.mktemp("data"))


def test_decode_and_crop_yields_what_parallel_map_yields(tiny):
    spec = pipes.PipelineSpec(batch=3, shuffle_buffer=tiny.count, seed=1)
    fused = pipes.build("decode_and_crop", tiny, spec)
    plain = pipes.build("parallel_map", tiny, spec)
    assert fused.dataset.element_spec == plain.dataset.element_spec
    (a, la), (b, lb) = next(iter(fused.dataset)), next(iter(plain.dataset))
    assert a.shape == b.shape == (3, 224, 224, 3)
    assert a.dtype == b.dtype == tf.float32 and la.dtype == lb.dtype == tf.float32
    # the same shuffle seed: the same images, in the same order
    assert la.numpy().tolist() == lb.numpy().tolist()
    assert 0.0 <= float(tf.reduce_min(a)) and float(tf.reduce_max(a)) <= 1.0
    # both scale by 1/255: every value is a whole number of 255ths
    assert np.allclose(a.numpy() * 255.0, np.round(a.numpy() * 255.0), atol=1e-3)
    params = fused.params
    assert params["num_parallel_calls"] == "AUTOTUNE" and "crop window" in params["why"]
"""


@pytest.mark.tf
def test_decode_and_crop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_decode_and_crop_inner=TF_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"
    )
    result.assert_outcomes(passed=4)
    assert result.ret == 0
