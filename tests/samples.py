"""Constructed timing samples for verdict tests."""

from __future__ import annotations

import numpy as np


def normal(mean: float, sd: float, n: int = 12, seed: int = 0) -> list[float]:
    return [float(x) for x in np.random.default_rng(seed).normal(mean, sd, n)]
