"""jnp window functions (NumPy's "Window functions")."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer
from spec._src.lax import shaping as L
from spec._src.numpy import math as jnp_math
from spec._src.numpy.math import i0


def _window(M: int, name: str) -> tuple[int, T.DType]:
    try:
        m = operator.index(M)
    except TypeError as err:
        if isinstance(M, Tracer):
            raise ConcretizationTypeError(f"M argument of jnp.{name} must be concrete") from err
        raise
    return m, T.default_float()


def bartlett(M: int) -> Any:
    m, dt = _window(M, "bartlett")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 1 - jnp_math.abs(2 * n + 1 - m) / (m - 1)


def blackman(M: int) -> Any:
    m, dt = _window(M, "blackman")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return (0.42 - 0.5 * jnp_math.cos(2 * np.pi * n / (m - 1))
            + 0.08 * jnp_math.cos(4 * np.pi * n / (m - 1)))


def hamming(M: int) -> Any:
    m, dt = _window(M, "hamming")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 0.54 - 0.46 * jnp_math.cos(2 * np.pi * n / (m - 1))


def hanning(M: int) -> Any:
    m, dt = _window(M, "hanning")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 0.5 * (1 - jnp_math.cos(2 * np.pi * n / (m - 1)))


def kaiser(M: int, beta: Any) -> Any:
    m, dt = _window(M, "kaiser")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    alpha = 0.5 * (m - 1)
    return i0(beta * jnp_math.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


__all__ = [
    "bartlett", "blackman", "hamming", "hanning", "kaiser",
]
