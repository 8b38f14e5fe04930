"""Building matrices (NumPy's "Array creation > Building matrices") that need
the elementwise and manipulation modules: ``diagflat`` and ``vander``."""

from __future__ import annotations

import builtins
import operator
from typing import Any

from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.numpy import creation
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.util import _dtype, _ensure, _index, _jit, _ndim, _shape, check_arraylike


def diagflat(v: Any, k: int = 0) -> Any:
    check_arraylike("diagflat", v)
    flat = jnp_shape.ravel(v)
    length = _shape(flat)[0]
    k = operator.index(k)
    size = length + builtins.abs(k)
    res = creation.zeros(size * size, dtype=_dtype(flat))
    i = creation.arange(0, size - builtins.abs(k))
    pos = i + k + i * size if k >= 0 else i + (i - k) * size
    return res.at[pos].set(flat).reshape(size, size)


def _vander_fn(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    if _ndim(x) != 1:
        raise ValueError(f"x must be a one-dimensional array, got shape {_shape(x)}")
    n = _shape(x)[0] if N is None else N
    if n < 0:
        raise ValueError(f"N must be nonnegative, got {n}")
    powers = L.iota(_dtype(x), n)
    if not increasing:
        powers = ew.sub(L.full((), n - 1, _dtype(x)), powers)
    return jnp_math.power(x[..., None], powers[None])


_vander = _jit("vander", _vander_fn, ("N", "increasing"))


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    arr = _ensure("vander", x)
    n = None if N is None else _index(N, "'N' argument of jnp.vander()")
    return _vander(arr, N=n, increasing=bool(increasing))


__all__ = [
    "diagflat", "vander",
]
