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
