"""The tf.data study's per-image work: read, decode, random crop 224x224x3, cast, scale.

Every tf.data bench (and the tf.data service bench) uses these functions, so their
variants differ only in how the pipeline is arranged, never in the work per image.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's C++ start-up chatter out

import tensorflow as tf

CROP = (224, 224, 3)


def decode(data: Any) -> Any:
    """``decode_image`` of encoded bytes to uint8 HxWx3 (the host's JPEG decode)."""
    image = tf.io.decode_image(data, channels=3, expand_animations=False)
    image.set_shape([None, None, 3])
    return image


def read_and_decode(path: Any) -> Any:
    """``read_file`` then ``decode_image`` to uint8 HxWx3 (the host's JPEG decode)."""
    return decode(tf.io.read_file(path))


def random_crop(image: Any) -> Any:
    """``random_crop`` of one uint8 image to 224x224x3."""
    return tf.image.random_crop(image, CROP)


def scale(images: Any) -> Any:
    """Cast to float32 and divide by 255: one image or a whole batch."""
    return tf.cast(images, tf.float32) / 255.0


def crop_and_scale(image: Any) -> Any:
    """``random_crop`` to 224x224x3, cast to float32, divide by 255."""
    return scale(random_crop(image))


def preprocess(path: Any, label: Any) -> tuple[Any, Any]:
    """The study's whole per-image work, with the label cast to float32."""
    return crop_and_scale(read_and_decode(path)), tf.cast(label, tf.float32)


def random_window(data: Any) -> Any:
    """A crop window ``[y, x, 224, 224]`` drawn as :func:`random_crop` draws it.

    Uniform over every window inside the image, whose size is read from the JPEG's
    header (``extract_jpeg_shape``) without decoding it.
    """
    shape = tf.io.extract_jpeg_shape(data)
    y = tf.random.uniform([], maxval=shape[0] - CROP[0] + 1, dtype=tf.int32)
    x = tf.random.uniform([], maxval=shape[1] - CROP[1] + 1, dtype=tf.int32)
    return tf.stack([y, x, CROP[0], CROP[1]])


def decode_and_crop(data: Any, window: Any) -> Any:
    """``decode_and_crop_jpeg``: decodes only the part of the JPEG under ``window``.

    ``window`` is ``[y, x, height, width]``. libjpeg-turbo still entropy-decodes the
    rows down to the window's last, but runs the inverse DCT, upsampling and colour
    conversion for the window alone and stops below it: less work than a full decode
    for the same 224x224x3 uint8 crop.
    """
    image = tf.io.decode_and_crop_jpeg(data, window, channels=3)
    image.set_shape(CROP)
    return image


def preprocess_fused(path: Any, label: Any) -> tuple[Any, Any]:
    """:func:`preprocess` with the random crop fused into the decode (JPEG only)."""
    data = tf.io.read_file(path)
    return scale(decode_and_crop(data, random_window(data))), tf.cast(label, tf.float32)
