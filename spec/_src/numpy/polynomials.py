"""jnp polynomials (NumPy's "Polynomials", the ``poly1d``-style functions on
coefficient arrays, highest power first)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.numpy import creation, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.elements import trim_zeros
from spec._src.numpy.math import _named_jit
from spec._src.numpy.statistics import convolve
from spec._src.numpy.util import (
    _concrete_or_error,
    _dtype,
    _ensure,
    _ndim,
    _promote,
    _promote_inexact,
    _shape,
)


def _polyval(p: Any, x: Any, *, unroll: int | None = None) -> Any:
    p, x = _ensure("polyval", p, x)
    p, x = _promote(p, x)
    shape = tuple(np.broadcast_shapes(_shape(p)[1:], _shape(x)))
    if _shape(p)[0] == 0:
        return L.full_like(x, 0, shape=shape)
    if 0 < _ndim(x) < len(shape):
        x = L.broadcast_to_rank(x, len(shape))
    # Horner's rule from the leading coefficient, lowest power first here.
    coeffs = [L.broadcast_to_rank(p[i], len(shape)) if 0 < _ndim(p) - 1 < len(shape) else p[i]
              for i in reversed(range(_shape(p)[0]))]
    return ew.polynomial(x, coeffs, unroll=unroll)


polyval = _named_jit("polyval", _polyval, static_argnames=("unroll",))


def _polyadd(a1: Any, a2: Any) -> Any:
    a1, a2 = _ensure("polyadd", a1, a2)
    a1, a2 = _promote(a1, a2)
    if _ndim(a1) == 0 or _ndim(a2) == 0:  # JAX fails indexing a scalar's shape here
        raise IndexError(f"polyadd: coefficient arrays must be at least 1-d, got shapes "
                         f"{_shape(a1)} and {_shape(a2)}")
    if _shape(a2)[0] <= _shape(a1)[0]:
        return a1.at[-_shape(a2)[0]:].add(a2)
    return a2.at[-_shape(a1)[0]:].add(a1)


polyadd = _named_jit("polyadd", _polyadd)


def _polysub(a1: Any, a2: Any) -> Any:
    a1, a2 = _ensure("polysub", a1, a2)
    a1, a2 = _promote(a1, a2)
    return polyadd(a1, -a2)


polysub = _named_jit("polysub", _polysub)


def _polyder(p: Any, m: int = 1) -> Any:
    p = _ensure("polyder", p)
    m = operator.index(m)
    (p,) = _promote_inexact(p)
    if m < 0:
        raise ValueError(f"Order of derivative must be positive, got m={m}")
    if m == 0:
        return p
    dt = _dtype(p)
    grid = (creation.arange(m, _shape(p)[0], dtype=dt)[None]
            - creation.arange(m, dtype=dt)[:, None])
    coeff = reductions.prod(grid, 0)
    return p[:-m] * coeff[::-1]


_polyder_jit = _named_jit("polyder", _polyder, static_argnames=("m",))


def polyder(p: Any, m: int = 1) -> Any:
    return _polyder_jit(p, m=m)


def _polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    m = operator.index(m)
    p, k = _ensure("polyint", p, 0 if k is None else k)
    p, k = _promote_inexact(p, k)
    if m < 0:
        raise ValueError(f"Order of integral must be positive (see polyder), got m={m}")
    k = jnp_shape.atleast_1d(k)
    if _shape(k)[0] == 1:
        k = creation.full((m,), k[0])
    if _shape(k) != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dt = _dtype(p)
    grid = (creation.arange(_shape(p)[0] + m, dtype=dt)[None]
            - creation.arange(m, dtype=dt)[:, None])
    coeff = reductions.prod(jnp_math.maximum(1, grid), 0)[::-1]
    return jnp_math.true_divide(jnp_shape.concatenate((p, k)), coeff)


_polyint_jit = _named_jit("polyint", _polyint, static_argnames=("m",))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    return _polyint_jit(p, m=m, k=k)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    a1, a2 = _ensure("polymul", a1, a2)
    a1, a2 = _promote_inexact(a1, a2)
    if trim_leading_zeros and (_shape(a1)[0] > 1 or _shape(a2)[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _shape(a1)[0] == 0:
        a1 = creation.zeros(1, dtype=_dtype(a2))
    if _shape(a2)[0] == 0:
        a2 = creation.zeros(1, dtype=_dtype(a1))
    return convolve(a1, a2, mode="full")


def _trim_zeros_tol(filt: Any, tol: Any, trim: str = "fb") -> Any:
    """``filt`` without the leading (``f``) and trailing (``b``) entries of
    magnitude below ``tol``, on its concrete value as JAX's."""
    filt = creation.asarray(_concrete_or_error(filt, "Error arose in the `filt` argument of "
                                               "trim_zeros_tol()"))
    small = jnp_math.abs(filt) < tol
    if bool(reductions.all(small)):
        return creation.empty(0, _dtype(filt))
    start = int(reductions.argmin(small)) if "f" in trim.lower() else 0
    end = int(reductions.argmin(small[::-1])) if "b" in trim.lower() else 0
    return filt[start:_shape(filt)[0] - end]


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of u / v by long division, one leading
    coefficient at a time (unjitted, as JAX's)."""
    u, v = _ensure("polydiv", u, v)
    ua, va = _promote_inexact(u, v)
    m, n = _shape(ua)[0] - 1, _shape(va)[0] - 1
    scale = 1. / va[0]
    q = creation.zeros(max(m - n + 1, 1), dtype=_dtype(ua))
    for k in range(0, m - n + 1):
        d = scale * ua[k]
        q = q.at[k].set(d)
        ua = ua.at[k:k + n + 1].add(-d * va)
    if trim_leading_zeros:
        eps = float(np.finfo(np.dtype(_dtype(ua))).eps)
        ua = _trim_zeros_tol(ua, tol=np.sqrt(eps), trim="f")
    return q, ua


def _poly(seq_of_zeros: Any) -> Any:
    z = _ensure("poly", seq_of_zeros)
    (z,) = _promote_inexact(z)
    z = jnp_shape.atleast_1d(z)
    sh = _shape(z)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        raise NotImplementedError("poly of a square matrix (its eigenvalues) is not "
                                  "implemented in spec")
    if len(sh) != 1:
        raise ValueError(f"input must be 1d or non-empty square 2d array, got shape {sh}.")
    dt = _dtype(z)
    if sh[0] == 0:
        return creation.ones((), dtype=dt)
    a = creation.ones((1,), dtype=dt)
    for k in range(sh[0]):
        a = convolve(a, creation.array([1, -z[k]], dtype=dt), mode="full")
    return a


poly = _named_jit("poly", _poly)


__all__ = [
    "poly", "polyadd", "polyder", "polydiv", "polyint", "polymul", "polysub", "polyval",
]
