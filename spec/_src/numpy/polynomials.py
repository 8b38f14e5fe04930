"""jnp polynomials (NumPy's "Polynomials", the ``poly1d``-style functions on
coefficient arrays, highest power first)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.lax.elementwise_kit import complex_dtype
from spec._src.lax.reductions import sort_key_val
from spec._src.numpy import creation, indexing, reductions
from spec._src.numpy import linalg as jnp_linalg
from spec._src.numpy import linalg_solve
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.dtypes import finfo
from spec._src.numpy.elements import trim_zeros
from spec._src.numpy.matrices import vander
from spec._src.numpy.math import _named_jit, _where
from spec._src.numpy.statistics import convolve
from spec._src.numpy.util import (
    _concrete,
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


def _roots_no_zeros_fn(p: Any) -> Any:
    """The eigenvalues of the companion matrix of ``p`` (leading coefficient nonzero)."""
    if _shape(p)[0] < 2:
        return creation.array([], dtype=complex_dtype(_dtype(p)))
    a = indexing.diag(creation.ones((_shape(p)[0] - 2,), _dtype(p)), -1)
    a = a.at[0, :].set(-p[1:] / p[0])
    return linalg_solve.eigvals(a)


_roots_no_zeros = _named_jit("_roots_no_zeros", _roots_no_zeros_fn)


def _roots_with_zeros_fn(p: Any, num_leading_zeros: Any) -> Any:
    # An all-zero p would have no companion matrix: solve for ones instead,
    # every root of which is then masked.
    p = _where(_shape(p)[0] == num_leading_zeros, 1.0, p)
    # The leading zeros rolled to the end are zero roots: sorted last, then NaN.
    found = _roots_no_zeros(jnp_shape.roll(p, -num_leading_zeros))
    found = sort_key_val(found == 0, found)[1]
    n = _shape(found)[0]
    return _where(creation.arange(n) < n - num_leading_zeros, found,
                  complex(np.nan, np.nan))


_roots_with_zeros = _named_jit("_roots_with_zeros", _roots_with_zeros_fn)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The (complex) roots of the polynomial with coefficients ``p``. With
    ``strip_zeros`` leading zero coefficients are dropped (a concrete ``p``
    needed); without, each leading zero gives a NaN root, and ``p`` may be traced."""
    p = _ensure("roots", p)
    (p,) = _promote_inexact(p)
    p_arr = jnp_shape.atleast_1d(p)
    if _ndim(p_arr) != 1:
        raise ValueError("Input must be a rank-1 array.")
    if _shape(p_arr)[0] < 2:
        return creation.array([], dtype=complex_dtype(_dtype(p_arr)))
    num_leading_zeros = _where(reductions.all(p_arr == 0), _shape(p_arr)[0],
                               reductions.argmin(p_arr == 0))
    if strip_zeros:
        count = int(_concrete(
            num_leading_zeros,
            "The error occurred in the jnp.roots() function. To use this within a "
            "JIT-compiled context, pass strip_zeros=False, but be aware that leading zeros "
            "will result in some returned roots being set to NaN."))
        return _roots_no_zeros(p_arr[count:])
    return _roots_with_zeros(p_arr, num_leading_zeros)


def _polyfit_checked(x: Any, y: Any, deg: int, w: Any) -> tuple[Any, Any, Any, int]:
    if w is None:
        x_arr, y_arr = _ensure("polyfit", x, y)
    else:
        x_arr, y_arr, w = _ensure("polyfit", x, y, w)
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if _ndim(x_arr) != 1:
        raise TypeError("expected 1D vector for x")
    if _shape(x_arr)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if _ndim(y_arr) < 1 or _ndim(y_arr) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if _shape(x_arr)[0] != _shape(y_arr)[0]:
        raise TypeError("expected x and y to have same length")
    return x_arr, y_arr, w, deg + 1


def _weighted(lhs: Any, rhs: Any, w: Any, n: int) -> tuple[Any, Any]:
    (w_arr,) = _promote_inexact(w)
    if _ndim(w_arr) != 1:
        raise TypeError("expected a 1-d array for weights")
    if _shape(w_arr)[0] != n:
        raise TypeError("expected w and y to have the same length")
    lhs = lhs * w_arr[:, np.newaxis]
    rhs = rhs * (w_arr[:, np.newaxis] if _ndim(rhs) == 2 else w_arr)
    return lhs, rhs


def _polyfit_fn(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
                w: Any = None, cov: Any = False) -> Any:
    x_arr, y_arr, w, order = _polyfit_checked(x, y, deg, w)
    n = _shape(x_arr)[0]
    if rcond is None:
        rcond = n * float(finfo(_dtype(x_arr)).eps)  # type: ignore[no-untyped-call]
    lhs, rhs = vander(x_arr, order), y_arr
    if w is not None:
        lhs, rhs = _weighted(lhs, rhs, w, _shape(y_arr)[0])
    # Unit columns condition the least-squares problem; the scale is undone after.
    scale = jnp_math.sqrt(reductions.sum(lhs * lhs, axis=0))
    lhs = lhs / scale[np.newaxis, :]
    c, resids, rank, s = linalg_solve.lstsq(lhs, rhs, rcond)
    c = (c.T / scale[np.newaxis, :]).T if _ndim(c) > 1 else c / scale
    if full:
        return c, resids, rank, s, L.asarray(rcond)
    if not cov:
        return c
    vbase = linalg_solve.inv(jnp_linalg.dot(lhs.T, lhs))
    vbase = vbase / jnp_linalg.outer(scale, scale)
    if cov == "unscaled":
        fac = creation.array(1.0)
    else:
        if n <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = resids / (n - order)
    if _ndim(y_arr) == 1:
        return c, vbase * jnp_shape.atleast_1d(fac)[np.newaxis]
    return c, vbase[:, :, np.newaxis] * jnp_shape.atleast_1d(fac)[np.newaxis, np.newaxis, :]


_polyfit = _named_jit("polyfit", _polyfit_fn, static_argnames=("deg", "rcond", "full", "cov"))


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: Any = False) -> Any:
    """Least-squares coefficients (highest power first) of the degree-``deg``
    polynomial through ``(x, y)``, optionally weighted by ``w``: JAX's scaled
    Vandermonde ``lstsq``. ``full`` adds the residuals, rank, singular values
    and ``rcond``; ``cov`` adds the covariance (``"unscaled"``: not scaled by
    the residual variance)."""
    return _polyfit(x, y, deg, rcond, full, w, cov)


__all__ = [
    "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
    "polyval", "roots",
]
