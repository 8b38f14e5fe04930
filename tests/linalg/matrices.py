"""Operands shared by the linear-algebra tests."""

from __future__ import annotations

from typing import Any

import numpy as np


def random_matrices(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Standard normal entries of ``dtype`` (real and imaginary parts drawn
    apart for a complex dtype)."""
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def conj_t(x: np.ndarray) -> np.ndarray:
    """The conjugate transpose of the trailing two axes."""
    return np.conj(np.swapaxes(x, -1, -2))
