"""The tf.data study's per-image work: read, decode, random crop 224x224x3, cast, scale.

Every tf.data bench (and the tf.data service bench) uses these functions, so their
variants differ only in how the pipeline is arranged, never in the work per image.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

CROP = (224, 224, 3)


def read_and_decode(path: Any) -> Any:
    """``read_file`` then ``decode_image`` to uint8 HxWx3 (the host's JPEG decode)."""
    data = tf.io.read_file(path)
    image = tf.io.decode_image(data, channels=3, expand_animations=False)
    image.set_shape([None, None, 3])
    return image


def crop_and_scale(image: Any) -> Any:
    """``random_crop`` to 224x224x3, cast to float32, divide by 255."""
    return tf.cast(tf.image.random_crop(image, CROP), tf.float32) / 255.0


def preprocess(path: Any, label: Any) -> tuple[Any, Any]:
    """The study's whole per-image work, with the label cast to float32."""
    return crop_and_scale(read_and_decode(path)), tf.cast(label, tf.float32)
