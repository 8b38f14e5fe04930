"""jnp statistics (NumPy's "Statistics": order statistics, averages and
variances, correlating, histograms) and the 1-D convolutions and ``interp``,
which are composed from the array-manipulation and reduction modules.

Functions that JAX 0.12 wraps in a visible ``jit`` are wrapped the same way, so
the jaxprs print alike; values, dtypes and weak types are what must match.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.canonical import static_hashable
from spec._src.core import types as T
from spec._src.lax import conv as lc
from spec._src.lax import elementwise as ew
from spec._src.lax import indexing as li
from spec._src.lax import reductions as lr
from spec._src.lax import shaping as L
from spec._src.numpy import creation, indexing, linalg, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.indexing import ravel_multi_index
from spec._src.numpy.math import (
    _named_jit,
    promote_args,
    promote_args_inexact,
)
from spec._src.numpy.reductions import diff
from spec._src.numpy.sorting import searchsorted
from spec._src.numpy.util import (
    _inline_jit,
    _aval,
    _axis_tuple,
    _concrete,
    _dtype,
    _ensure,
    _hashable_axis,
    _index,
    _jit,
    _ndim,
    _promote_inexact,
    _shape,
    _to_inexact,
    check_arraylike,
)

# ================================================================= statistics


@_inline_jit
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    axis = _hashable_axis(axis)
    if weights is None:
        arr = _ensure("average", a)
        (arr,) = _promote_inexact(arr)
        axes = _axis_tuple(axis, _ndim(arr))
        avg = reductions.mean(arr, axis=axis, keepdims=keepdims)
        count = math.prod(_shape(arr)[d] for d in axes)
        wsum = L.full((), count, _dtype(avg))
    else:
        arr, w = _ensure("average", a, weights)
        arr, w = _promote_inexact(arr, w)
        axes = _axis_tuple(axis, _ndim(arr))
        if _shape(arr) != _shape(w):
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if _shape(w) != tuple(_shape(arr)[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 f"specified axis: weights {_shape(w)}, a {_shape(arr)}, "
                                 f"axis {axis}")
            # Lay the weights along the reduced axes (in the order axis names them).
            w = jnp_shape.transpose(w, tuple(int(i) for i in np.argsort(axes)))
            w = jnp_shape.reshape(
                w, tuple(d if i in axes else 1 for i, d in enumerate(_shape(arr))))
        wsum = reductions.sum(w, axis=axis, keepdims=keepdims)
        avg = reductions.sum(arr * w, axis=axis, keepdims=keepdims) / wsum
    if returned:
        if _shape(avg) != _shape(wsum):
            wsum = jnp_shape.broadcast_to(wsum, _shape(avg))
        return avg, wsum
    return avg


def _ptp_fn(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
    return ew.sub(reductions.max(a, axis=axis, keepdims=keepdims),
                  reductions.min(a, axis=axis, keepdims=keepdims))


# A named jit, as JAX's (its reductions inlined in it).
_ptp = _jit("_ptp", _ptp_fn, ("axis", "keepdims"))


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    arr = _ensure("ptp", a)
    return _ptp(arr, _hashable_axis(axis), out, keepdims)


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile_impl(a: Any, q: Any, axis: Any, method: str, keepdims: bool,
                   squash_nans: bool) -> Any:
    """Quantiles ``q`` of ``a`` along ``axis``: sort, then interpolate between
    the two order statistics around ``q * (n - 1)`` (NaN-free counts for
    the nan-variants)."""
    if method not in _QUANTILE_METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         f"'nearest' or 'inverted_cdf', got {method!r}")
    if method == "inverted_cdf":
        raise NotImplementedError("spec: quantile method='inverted_cdf' is not implemented")
    (a,) = _promote_inexact(a)
    if T.is_complex(_dtype(a)):
        raise ValueError("quantile does not support complex input, as the operation is "
                         "poorly defined.")
    if _ndim(q) > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {_shape(q)}")
    nd = _ndim(a)
    axes = _axis_tuple(axis, nd)
    # Move the reduced axes last and merge them into one of length n.
    rest = tuple(d for d in range(nd) if d not in axes)
    rest_shape = tuple(_shape(a)[d] for d in rest)
    n = math.prod(_shape(a)[d] for d in axes)
    a2 = jnp_shape.reshape(jnp_shape.transpose(a, rest + axes), (*rest_shape, n))
    qdt = _dtype(q)
    q_nd = _ndim(q)
    if squash_nans and n == 0:
        out_shape = rest_shape
    else:
        if squash_nans:
            a2 = jnp_math._where(jnp_math.isnan(a2), np.nan, a2)  # one NaN sign: they sort last
        else:
            a2 = jnp_math._where(reductions.any(jnp_math.isnan(a2), axis=-1, keepdims=True),
                                 np.nan, a2)
        a2 = lr.sort(a2, dimension=_ndim(a2) - 1, is_stable=False)
        if squash_nans:
            count = reductions.sum(jnp_math.logical_not(jnp_math.isnan(a2)), axis=-1, dtype=qdt)
            count = L.expand_dims(count, tuple(range(q_nd)))      # q dims first
            qq = L.expand_dims(q, tuple(range(q_nd, q_nd + len(rest_shape))))
        else:
            count = L.full((), n, qdt)
            qq = q
        pos = ew.mul(qq, ew.sub(count, L.full((), 1, qdt)))
        low, high = ew.floor(pos), ew.ceil(pos)
        high_w = ew.sub(pos, low)
        low_w = ew.sub(L.full((), 1, qdt), high_w)
        zero = L.full((), 0, qdt)
        top = ew.sub(count, L.full((), 1, qdt))
        if squash_nans:  # per-row counts: clamp each position to its row
            low = ew.max(zero, ew.min(low, top))
            high = ew.max(zero, ew.min(high, ew.sub(count, L.full((), 1, qdt))))
        else:
            low = ew.clamp(zero, low, top)
            high = ew.clamp(zero, high, ew.sub(count, L.full((), 1, qdt)))
        low_i = L.convert_element_type(low, T.default_int())
        high_i = L.convert_element_type(high, T.default_int())
        if squash_nans:
            low_v, high_v = _pick_per_row(a2, low_i), _pick_per_row(a2, high_i)
        else:  # one position per q, shared by every row
            low_v, high_v = _pick_shared(a2, low_i), _pick_shared(a2, high_i)
            low_w = _weights_like(low_w, _shape(low_v))
            high_w = _weights_like(high_w, _shape(high_v))
        if method == "linear":
            res = ew.add(ew.mul(L.convert_element_type(low_v, qdt), low_w),
                          ew.mul(L.convert_element_type(high_v, qdt), high_w))
        elif method == "lower":
            res = low_v
        elif method == "higher":
            res = high_v
        elif method == "nearest":
            res = jnp_math._where(high_w <= 0.5, low_v, high_v)
        else:
            res = ew.mul(ew.add(low_v, high_v), L.full((), 0.5, _dtype(low_v)))
        out_shape = None
    if out_shape is not None:  # nanquantile of an empty reduction: all NaN
        res = L.full((*_shape(q), *out_shape), np.nan, _dtype(a))
    if keepdims:
        kept = tuple(1 if d in axes else s for d, s in enumerate(_shape(a)))
        res = jnp_shape.reshape(res, (*_shape(q), *kept))
    return L.convert_element_type(res, _dtype(a))


def _pick_shared(a2: Any, idx: Any) -> Any:
    """``a2[..., idx]`` for ``idx`` of shape q_shape (rank <= 1), one gather
    along the last axis: the result has shape q_shape + the leading axes."""
    q_nd = _ndim(idx)
    last = _ndim(a2) - 1
    dnums = li.GatherDimensionNumbers(
        offset_dims=tuple(range(q_nd, last + q_nd)), collapsed_slice_dims=(last,),
        start_index_map=(last,))
    sizes = (*_shape(a2)[:-1], 1)
    return li.gather(a2, L.expand_dims(idx, (q_nd,)), dnums, sizes)


def _pick_per_row(a2: Any, idx: Any) -> Any:
    """``a2[rows, idx]`` for ``idx`` of shape q_shape + the leading axes of
    ``a2``: advanced indexing by iotas over the leading axes and ``idx``."""
    out_shape = _shape(idx)
    q_nd = len(out_shape) - (_ndim(a2) - 1)
    rows = [L.broadcasted_iota(T.default_int(), out_shape, q_nd + d)
            for d in range(_ndim(a2) - 1)]
    return indexing.getitem(a2, (*rows, idx))


def _weights_like(w: Any, shape: tuple[int, ...]) -> Any:
    """Interpolation weights of shape q_shape broadcast against values of
    shape q_shape + the leading axes."""
    if _shape(w) == shape:
        return w
    return L.broadcast_in_dim(w, shape, tuple(range(_ndim(w))))


def _quantile_common(name: str, a: Any, q: Any, axis: Any, out: Any, overwrite_input: bool,
                     method: str, keepdims: bool, weights: Any, squash: bool) -> Any:
    arr, qa = _ensure(name, a, q)
    if weights is not None:
        raise NotImplementedError(f"spec: jnp.{name} with weights is not implemented")
    if overwrite_input or out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")
    staged = _nanquantile_jit if squash else _quantile_jit
    return staged(arr, qa, axis=static_hashable(axis, 'axis'), method=method,
                  keepdims=bool(keepdims))


def _quantile_of(name: str, squash_nans: bool) -> Any:
    """The jitted quantile (NaN-skipping with ``squash_nans``), its equation
    named ``name`` as JAX's."""
    def impl(a: Any, q: Any, axis: Any, method: str, keepdims: bool) -> Any:
        return _quantile_impl(a, q, axis, method, keepdims, squash_nans)
    return _jit(name, impl, ("axis", "method", "keepdims"))


_quantile_jit = _quantile_of("quantile", False)
_nanquantile_jit = _quantile_of("nanquantile", True)


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    return _quantile_common("quantile", a, q, axis, out, overwrite_input, method, keepdims,
                            weights, False)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    return _quantile_common("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                            weights, True)


def _percent(name: str, q: Any) -> Any:
    check_arraylike(name, q)
    (qa,) = _promote_inexact(L.asarray(q))
    return qa / 100


# percentile, median and their nan-variants are jitted as in JAX: their
# equation (named as the function) holds the quantile's.

def _percentile_impl(a: Any, q: Any, axis: Any, overwrite_input: bool, method: str,
                     keepdims: bool, weights: Any, nan: bool) -> Any:
    name = "nanpercentile" if nan else "percentile"
    staged = nanquantile if nan else quantile
    return staged(a, _percent(name, q), axis=axis, overwrite_input=overwrite_input,
                  method=method, keepdims=keepdims, weights=weights)


def _percentile_of(name: str) -> Any:
    def impl(a: Any, q: Any, axis: Any, overwrite_input: bool, method: str, keepdims: bool,
             weights: Any) -> Any:
        return _percentile_impl(a, q, axis, overwrite_input, method, keepdims, weights,
                                name == "nanpercentile")
    return _jit(name, impl, ("axis", "overwrite_input", "method", "keepdims"))


_percentile_jit = _percentile_of("percentile")
_nanpercentile_jit = _percentile_of("nanpercentile")


def _percentile_call(name: str, a: Any, q: Any, axis: Any, out: Any, overwrite_input: bool,
                     method: str, keepdims: bool, weights: Any) -> Any:
    check_arraylike(name, a, q)
    if out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")
    staged = _nanpercentile_jit if name == "nanpercentile" else _percentile_jit
    return staged(a, q, axis=static_hashable(axis, 'axis'), overwrite_input=overwrite_input,
                  method=method, keepdims=keepdims, weights=weights)


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    return _percentile_call("percentile", a, q, axis, out, overwrite_input, method, keepdims,
                            weights)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    return _percentile_call("nanpercentile", a, q, axis, out, overwrite_input, method,
                            keepdims, weights)


def _median_impl(a: Any, axis: Any, overwrite_input: bool, keepdims: bool, nan: bool) -> Any:
    staged = nanquantile if nan else quantile
    return staged(a, 0.5, axis=axis, overwrite_input=overwrite_input, keepdims=keepdims,
                  method="midpoint")


def _median_of(name: str) -> Any:
    def impl(a: Any, axis: Any, overwrite_input: bool, keepdims: bool) -> Any:
        return _median_impl(a, axis, overwrite_input, keepdims, name == "nanmedian")
    return _jit(name, impl, ("axis", "overwrite_input", "keepdims"))


_median_jit = _median_of("median")
_nanmedian_jit = _median_of("nanmedian")


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    arr = _ensure("median", a)
    if any(_shape(arr)[d] == 0 for d in _axis_tuple(static_hashable(axis, 'axis'), _ndim(arr))):
        raise ValueError("jax.numpy.median reduction axis must be non-empty")
    if out is not None:
        raise ValueError("jax.numpy.median does not support overwrite_input=True or "
                         "out != None")
    return _median_jit(arr, axis=static_hashable(axis, 'axis'), overwrite_input=overwrite_input,
                       keepdims=keepdims)


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    arr = _ensure("nanmedian", a)
    if out is not None:
        raise ValueError("jax.numpy.nanmedian does not support overwrite_input=True or "
                         "out != None")
    return _nanmedian_jit(arr, axis=static_hashable(axis, 'axis'), overwrite_input=overwrite_input,
                          keepdims=keepdims)


def _check_inexact_dtype(name: str, dtype: Any) -> None:
    if dtype is not None and not T.is_inexact(T.to_dtype(dtype, name)):
        raise ValueError(f"{name}: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None,
        dtype: Any = None) -> Any:
    """``jnp.cov``, staged as JAX stages it: a ``jit`` named ``cov``."""
    return _cov(m, y, rowvar=rowvar, bias=bias, ddof=ddof, fweights=fweights,
                aweights=aweights, dtype=dtype)


def _cov_fn(m: Any, y: Any, rowvar: bool, bias: bool, ddof: int | None, fweights: Any,
            aweights: Any, dtype: Any) -> Any:
    if y is not None:
        check_arraylike("cov", m, y)
        m, y = _promote_inexact(m, y)
        if _ndim(y) > 2:
            raise ValueError(f"y has more than 2 dimensions: shape {_shape(y)}")
    else:
        check_arraylike("cov", m)
        (m,) = _promote_inexact(L.asarray(m))
    if _ndim(m) > 2:
        raise ValueError(f"m has more than 2 dimensions: shape {_shape(m)}")
    _check_inexact_dtype("cov", dtype)
    x = jnp_shape.atleast_2d(m)
    if not rowvar and _ndim(m) != 1:
        x = x.T
    if _shape(x)[0] == 0:
        return jnp_shape.reshape(creation.array([]), (0, 0))
    if y is not None:
        yy = jnp_shape.atleast_2d(y)
        if not rowvar and _shape(yy)[0] != 1:
            yy = yy.T
        x = jnp_shape.concatenate((x, yy), axis=0)
    rows, cols = _shape(x)
    if cols == 0:
        return creation.full(() if rows == 1 else (rows, rows), np.nan, dtype=_dtype(x))
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fw = _ensure("cov", fweights)
        if _ndim(fw) > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if _shape(fw)[0] != cols:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not T.is_int(_dtype(fw)):
            raise TypeError(f"fweights must be integer, got {_dtype(fw).name}")
        w = jnp_math.abs(fw)
    aw = None
    if aweights is not None:
        aw = _ensure("cov", aweights)
        if _ndim(aw) > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if _shape(aw)[0] != cols:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = jnp_math.abs(aw)
        w = aw if w is None else w * aw
    if dtype is not None:
        x = jnp_shape.astype(x, dtype)
        w = None if w is None else jnp_shape.astype(w, dtype)
    avg, wsum = average(x, axis=1, weights=w, returned=True)
    wsum = wsum[0]
    if w is None:
        f: Any = cols - ddof
    elif ddof == 0:
        f = wsum
    elif aw is None:
        f = wsum - ddof
    else:
        f = wsum - ddof * reductions.sum(w * aw) / wsum
    x = x - avg[:, None]
    xt = x.T if w is None else (x * w[None, :]).T
    return jnp_shape.squeeze(jnp_math.true_divide(linalg.dot(x, jnp_math.conj(xt)), f))


_cov = _jit("cov", _cov_fn, ("rowvar", "bias", "ddof", "dtype"))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """``jnp.corrcoef``, a ``jit`` named ``corrcoef`` (holding ``cov``'s), as JAX."""
    return _corrcoef(x, y, rowvar=rowvar, dtype=dtype)


def _corrcoef_fn(x: Any, y: Any, rowvar: bool, dtype: Any) -> Any:
    check_arraylike("corrcoef", x)
    _check_inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if _ndim(c) == 0:
        return jnp_math.divide(c, c)
    d = indexing.diag(c)
    std = jnp_shape.astype(jnp_math.sqrt(jnp_math.real(d)), _dtype(c))
    c = c / std[:, None] / std[None, :]
    re = jnp_math.clip(jnp_math.real(c), -1, 1)
    if T.is_complex(_dtype(c)):
        return ew.complex(re, jnp_math.clip(jnp_math.imag(c), -1, 1))
    return re


_corrcoef = _jit("corrcoef", _corrcoef_fn, ("rowvar", "dtype"))


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Any:
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = creation.asarray(a)
    dt = _to_inexact(_dtype(arr))
    if np.ndim(bins) == 1:
        return creation.asarray(bins, dtype=dt)
    nbins = _index(bins, "bins argument of histogram_bin_edges")
    if range is None:
        range = ([0, 1] if math.prod(_shape(arr)) == 0
                 else [reductions.min(arr), reductions.max(arr)])
    r = creation.asarray(range, dtype=dt)
    if _shape(r) != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    # The test is made once per end, as JAX makes it.
    lo = jnp_math._where(ptp(r) == 0, r[0] - 0.5, r[0])
    hi = jnp_math._where(ptp(r) == 0, r[1] + 0.5, r[1])
    return creation.linspace(lo, hi, nbins + 1, dtype=dt)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool | None = None, out_sharding: Any = None) -> tuple[Any, Any]:
    if weights is None:
        check_arraylike("histogram", a, bins)
        (arr,) = _promote_inexact(L.asarray(a))
        w = creation.ones_like(arr)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError(f"weights should have the same shape as a: {np.shape(weights)} vs "
                             f"{np.shape(a)}")
        arr, w = _promote_inexact(a, weights)
    edges = histogram_bin_edges(arr, bins, range, w)
    idx = searchsorted(edges, arr, side="right")
    nedges = _shape(edges)[0]
    # The last bin is closed: values equal to the right edge count in it.
    idx = jnp_math._where(arr == edges[-1], nedges - 1, idx)
    counts = creation.zeros(nedges, _dtype(w)).at[idx].add(w)[1:]
    if density:
        counts = counts / diff(edges) / reductions.sum(counts)
    return counts, edges


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding: Any = None) -> Any:
    arr = _ensure("bincount", x)
    if _dtype(arr) == T.bool_:
        arr = L.convert_element_type(arr, T.int32)
    if not T.is_int(_dtype(arr)):
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{_dtype(arr).name}")
    if _ndim(arr) != 1:
        raise ValueError(f"only 1-dimensional input supported, got shape {_shape(arr)}")
    minlength = _index(minlength, "argument 'minlength' of jnp.bincount")
    if length is None:
        value = _concrete(arr, "argument 'x' of jnp.bincount; pass a static `length` to use "
                          "it under jit")
        length = builtins.max(minlength, value.size and int(builtins.max(0, value.max())) + 1)
    else:
        length = _index(length, "argument 'length' of jnp.bincount")
    if weights is None:
        w: Any = L.full((), 1, T.default_int())
    else:
        w = _ensure("bincount", weights)
        if _shape(w) != _shape(arr):
            raise ValueError(f"type of weights must match type of x. Got typeof(x)="
                             f"{_aval(arr).str_short(True)} and typeof(weights)="
                             f"{_aval(w).str_short(True)}")
    return creation.zeros(length, _dtype(w)).at[jnp_math.clip(arr, 0)].add(w, mode="drop")


def _digitize_fn(x: Any, bins: Any, right: bool = False, method: str | None = None) -> Any:
    kw = {} if method is None else {"method": method}
    side = "left" if right else "right"
    n = _shape(bins)[0]
    return jnp_math._where(bins[-1] >= bins[0], searchsorted(bins, x, side=side, **kw),
                           n - searchsorted(bins[::-1], x, side=side, **kw))


_digitize = _jit("digitize", _digitize_fn, ("right", "method"))


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    xa, ba = _ensure("digitize", x, bins)
    right = bool(_concrete(right, "right argument of jnp.digitize()"))
    if _ndim(ba) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if _shape(ba)[0] == 0:
        return creation.zeros_like(xa, dtype=T.int32)
    return _digitize(xa, ba, right=right, method=method)


# ------------------------------------------------------------ 1-D convolutions

def _conv_1d(x: Any, y: Any, mode: str, op: str, precision: Any,
             preferred_element_type: Any) -> Any:
    """Full/same/valid 1-D convolution or correlation as one conv_general_dilated
    over (batch 1, feature 1, length) views; the shorter operand is the kernel."""
    if jnp_shape.ndim(x) != 1 or jnp_shape.ndim(y) != 1:
        raise ValueError(f"{op}() only supports 1-dimensional inputs, got shapes "
                         f"{jnp_shape.shape(x)} and {jnp_shape.shape(y)}.")
    if preferred_element_type is None:  # NumPy's convolutions return inexact values
        x, y = promote_args_inexact(op, x, y)
    else:  # the caller picks the accumulation type: operands only agree in dtype
        x, y = promote_args(op, x, y)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    reverse_output = False
    if op == "correlate":
        y = jnp_math.conj(y)
        if x.shape[0] < y.shape[0]:
            x, y, reverse_output = y, x, True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = jnp_shape.flip(y)
    k = y.shape[0]
    pads = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}
    if mode not in pads:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lc.conv_general_dilated(x[None, None, :], y[None, None, :], (1,), [pads[mode]],
                                   precision=precision,
                                   preferred_element_type=preferred_element_type)
    return out[0, 0, ::-1] if reverse_output else out[0, 0]


_conv_jit = _named_jit("_conv", _conv_1d, static_argnames=(
    "mode", "op", "precision", "preferred_element_type"))


def _convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    return _conv_jit(a, v, mode, "convolve", precision, preferred_element_type)


def _correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
               preferred_element_type: Any = None) -> Any:
    return _conv_jit(a, v, mode, "correlate", precision, preferred_element_type)


convolve = _named_jit("convolve", _convolve,
                     static_argnames=("mode", "precision", "preferred_element_type"))
correlate = _named_jit("correlate", _correlate,
                      static_argnames=("mode", "precision", "preferred_element_type"))




# ------------------------------------------------------------------ interp

def _interp(x: Any, xp: Any, fp: Any, left: Any, right: Any, period: Any) -> Any:
    x, xp, fp = _ensure("interp", x, xp, fp)
    if _shape(xp) != _shape(fp) or _ndim(xp) != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = _promote_inexact(x, xp)
    (fp,) = _promote_inexact(fp)
    ext_left = isinstance(left, str)
    ext_right = isinstance(right, str)
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', "
                             f"but got: {v!r}")
    if T.is_complex(_dtype(x)):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = jnp_math.abs(period)
        x = x % period
        xp = xp % period
        xp, fp = lr.sort_key_val(xp, fp)
        # Wrap one point around each end so every x has a bracketing pair.
        xp = jnp_shape.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = jnp_shape.concatenate([fp[-1:], fp, fp[:1]])
    i = jnp_math.clip(searchsorted(xp, x, side="right"), 1, _shape(xp)[0] - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    # Coincident xp points: take the left value rather than divide by ~0.
    eps = np.spacing(np.finfo(np.dtype(_dtype(xp))).eps)
    dx0 = jnp_math.abs(dx) <= eps
    f = jnp_math._where(dx0, fp[i - 1], fp[i - 1] + (delta / jnp_math._where(dx0, 1, dx)) * df)
    # The fill value is taken before the comparison, in JAX's order.
    if not ext_left:
        left_value = fp[0] if left is None else left
        if period is None:
            f = jnp_math._where(x < xp[0], left_value, f)
    if not ext_right:
        right_value = fp[-1] if right is None else right
        if period is None:
            f = jnp_math._where(x > xp[-1], right_value, f)
    return f


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    statics = tuple(n for n, v in (("left", left), ("right", right), ("period", period))
                    if v is None or isinstance(v, str))
    fn = _jit("_interp", _interp, statics)
    return fn(x, xp, fp, left=left, right=right, period=period)


# ---------------------------------------------------------- histogram2d/dd

def histogramdd(sample: Any, bins: Any = 10, range: Sequence[None | Sequence[Any]] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, list[Any]]:
    if weights is None:
        check_arraylike("histogramdd", sample)
        (sample,) = _promote_inexact(L.asarray(sample))
    else:
        check_arraylike("histogramdd", sample, weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError(f"should have one weight for each sample, got weights shape "
                             f"{np.shape(weights)} for sample shape {np.shape(sample)}.")
        sample, weights = _promote_inexact(sample, weights)
    n, d = _shape(sample)
    if range is not None and (len(range) != d or not all(r is None or len(r) == 2
                                                         for r in range)):
        raise ValueError(f"For sample.shape={(n, d)}, range must be a sequence "
                         f"of {d} pairs or Nones; got {range=}")
    try:
        num_bins = len(bins)
    except TypeError:
        bins_per_dim: list[Any] = d * [bins]
    else:
        if num_bins != d:
            raise ValueError("should be a bin for each dimension.")
        bins_per_dim = list(bins)
    bin_idx, nbins, edges = [], [], []
    for i in builtins.range(d):
        rng = None if range is None else range[i]
        e_i = histogram_bin_edges(sample[:, i], bins_per_dim[i], rng, weights)
        idx = searchsorted(e_i, sample[:, i], side="right")
        # The last bin is closed on the right.
        bin_idx.append(jnp_math._where(sample[:, i] == e_i[-1], idx - 1, idx))
        nbins.append(_shape(e_i)[0] + 1)
        edges.append(e_i)
    # The bin widths are computed whether or not density needs them, as JAX
    # computes them (each a staged diff).
    widths = [diff(e_i) for e_i in edges]
    flat = ravel_multi_index(tuple(bin_idx), tuple(nbins), mode="clip")
    hist = bincount(flat, weights, length=math.prod(nbins))
    hist = jnp_shape.reshape(hist, tuple(nbins))
    hist = hist[tuple(builtins.slice(1, -1) for _ in builtins.range(d))]
    if density:
        hist = hist.astype(_dtype(sample))
        hist = hist / hist.sum()
        for norm in indexing.ix_(*widths):
            hist = hist / norm
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence[None | Sequence[Any]] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, Any, Any]:
    check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]
    sample = jnp_shape.transpose(creation.array([x, y]))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


__all__ = [
    "average", "bincount", "corrcoef", "cov", "digitize", "histogram", "histogram_bin_edges",
    "median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "ptp", "quantile",
    "convolve", "correlate", "histogram2d", "histogramdd", "interp",
]
