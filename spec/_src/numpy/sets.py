"""jnp set routines (NumPy's "Set routines"): ``unique`` and its array-API
variants, ``isin`` and the 1-D set operations, with JAX's static ``size``."""

from __future__ import annotations

import collections

import builtins
import math
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax import shaping as L
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, indexing, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.reductions import diff
from spec._src.numpy.sorting import lexsort
from spec._src.numpy.util import (
    _concrete_or_error,
    _dtype,
    _ensure,
    _index,
    _jit,
    _ndim,
    _promote,
    _shape,
)

_UNIQUE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                "specify a concrete value for the size argument, which will determine the "
                "output size.")


def _unique_sorted_mask_fn(ar: Any, axis: int, equal_nan: bool) -> tuple[Any, Any, Any]:
    """The slices of ``ar`` along ``axis`` sorted lexicographically, a mask of
    the first of each run of equal slices, and the sorting permutation."""
    aux = jnp_shape.moveaxis(ar, axis, 0)
    if T.is_complex(_dtype(aux)):
        # One canonical NaN, so that complex NaNs compare (and sort) together.
        aux = jnp_math._where(jnp_math.isnan(aux), L.full((), np.nan, _dtype(aux)), aux)
    size, *rest = _shape(aux)
    inner = math.prod(rest)
    if inner == 0:
        size = builtins.min(size, 1)  # empty slices are all equal: keep at most one
        perm = creation.zeros(size, dtype=int)
    else:
        perm = lexsort(jnp_shape.reshape(aux, (size, inner)).T[::-1])
    aux = aux[perm]
    if math.prod(_shape(aux)):
        if T.is_inexact(_dtype(aux)) and equal_nan:
            def neq(x: Any, y: Any) -> Any:
                return ew.ne(x, y) & jnp_math.logical_not(jnp_math.isnan(x) & jnp_math.isnan(y))
        else:
            neq = ew.ne
        mask = creation.ones(size, dtype=bool).at[1:].set(
            reductions.any(neq(aux[1:], aux[:-1]), tuple(range(1, _ndim(aux)))))
    else:
        mask = creation.zeros(size, dtype=bool)
    return aux, mask, perm


_unique_sorted_mask = _jit("_unique_sorted_mask", _unique_sorted_mask_fn, ("axis", "equal_nan"))


def _unique_impl(ar: Any, axis: int, return_index: bool = False, return_inverse: bool = False,
                 return_counts: bool = False, equal_nan: bool = True, size: int | None = None,
                 fill_value: Any = None, return_true_size: bool = False) -> Any:
    axis = canonicalize_axis(axis, _ndim(ar))
    if _shape(ar)[axis] == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _unique_sorted_mask(ar, axis=axis, equal_nan=equal_nan)
    nonempty = math.prod(_shape(aux)) > 0
    if size is None:
        ind = indexing.nonzero(
            _concrete_or_error(mask, "The error arose in jnp.unique(). " + _UNIQUE_HINT))[0]
    else:
        ind = indexing.nonzero(mask, size=size)[0]
    result = aux[ind] if nonempty else aux
    if size is not None and fill_value is not None:
        fill = jnp_shape.astype(L.asarray(fill_value), _dtype(result))
        if _shape(result)[0]:
            valid = L.expand_dims(creation.arange(size) < reductions.sum(mask),
                                    tuple(range(1, _ndim(result))))
            result = jnp_math._where(valid, result, fill)
        else:
            result = creation.full_like(result, fill, shape=(size, *_shape(result)[1:]))
    result = jnp_shape.moveaxis(result, 0, axis)
    ret: list[Any] = [result]
    if return_index:
        ret.append(perm[ind] if nonempty else perm)
    if return_inverse:
        if nonempty:
            inv = creation.zeros(_shape(mask), dtype=int).at[perm].set(reductions.cumsum(mask) - 1)
        else:
            inv = creation.zeros(_shape(ar)[axis], dtype=int)
        ret.append(inv)
    if return_counts:
        if nonempty:
            n = _shape(mask)[0]
            if size is None:
                idx = jnp_shape.concatenate([indexing.nonzero(mask)[0], creation.array([n])])
            else:
                idx = indexing.nonzero(mask, size=size + 1)[0]
                idx = idx.at[1:].set(jnp_math._where(idx[1:], idx[1:], n))
            ret.append(diff(idx))
        elif _shape(ar)[axis]:
            ret.append(creation.full((1,), _shape(ar)[axis], dtype=int))
        else:
            ret.append(creation.empty(0, dtype=int))
    if return_true_size:
        ret.append(reductions.sum(mask))
    return ret[0] if len(ret) == 1 else tuple(ret)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    arr = _ensure("unique", ar)
    if size is None:
        arr = _concrete_or_error(arr, "The error arose for the first argument of "
                                 "jnp.unique(). " + _UNIQUE_HINT)
    else:
        size = _index(size, "The error arose for the size argument of jnp.unique(). " +
                      _UNIQUE_HINT)
    shape = _shape(arr)
    if axis is None:
        arr = jnp_shape.ravel(arr)
        ax = 0
    else:
        ax = canonicalize_axis(axis, _ndim(arr))
    out = _unique_impl(arr, ax, return_index, return_inverse, return_counts,
                       equal_nan=equal_nan, size=size, fill_value=fill_value)
    if return_inverse and axis is None:
        k = 2 if return_index else 1
        out = (*out[:k], jnp_shape.reshape(out[k], shape), *out[k + 1:])
    return out


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    return unique(_ensure("unique_values", x), equal_nan=False, size=size,
                  fill_value=fill_value)


def _result_tuple(name: str, fields: tuple[str, ...]) -> Any:
    return collections.namedtuple(name, fields)


_UniqueCounts = _result_tuple("_UniqueCountsResult", ("values", "counts"))


_UniqueInverse = _result_tuple("_UniqueInverseResult", ("values", "inverse_indices"))


_UniqueAll = _result_tuple("_UniqueAllResult",
                           ("values", "indices", "inverse_indices", "counts"))


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, c = unique(_ensure("unique_counts", x), return_counts=True, equal_nan=False, size=size,
                  fill_value=fill_value)
    return _UniqueCounts(values=v, counts=c)


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, i = unique(_ensure("unique_inverse", x), return_inverse=True, equal_nan=False,
                  size=size, fill_value=fill_value)
    return _UniqueInverse(values=v, inverse_indices=i)


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, i, inv, c = unique(_ensure("unique_all", x), return_index=True, return_inverse=True,
                          return_counts=True, equal_nan=False, size=size,
                          fill_value=fill_value)
    return _UniqueAll(values=v, indices=i, inverse_indices=inv, counts=c)


def _in1d_fn(ar1: Any, ar2: Any, invert: bool, method: str = "auto",
             assume_unique: bool = False) -> Any:
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    a, b = _promote(*_ensure("in1d", ar1, ar2))
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if not math.prod(_shape(a)) or not math.prod(_shape(b)):
        return (creation.ones if invert else creation.zeros)(_shape(a), dtype=bool)
    # Every method gives the same answer; compare all pairs.
    if invert:
        return reductions.all(a[:, None] != b[None, :], axis=-1)
    return reductions.any(a[:, None] == b[None, :], axis=-1)


_in1d_jit = _jit("_in1d", _in1d_fn, ("assume_unique", "invert", "method"))


def _in1d(ar1: Any, ar2: Any, invert: bool, method: str = "auto",
          assume_unique: bool = False) -> Any:
    return _in1d_jit(ar1, ar2, invert=invert, method=method, assume_unique=assume_unique)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    el, te = _ensure("isin", element, test_elements)
    result = _in1d(el, te, invert=invert, method=method, assume_unique=assume_unique)
    return jnp_shape.reshape(result, _shape(el))


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    a, b = _ensure("union1d", ar1, ar2)
    if size is None:
        a = _concrete_or_error(a, "The error arose in union1d()")
        b = _concrete_or_error(b, "The error arose in union1d()")
    else:
        size = _index(size, "The error arose in union1d()")
    return unique(jnp_shape.concatenate((a, b), axis=None), size=size, fill_value=fill_value)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    a, b = _ensure("setdiff1d", ar1, ar2)
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if size is None:
        # JAX checks the value here but goes on with the array itself.
        _concrete_or_error(a, "The error arose in setdiff1d()")
    else:
        size = _index(size, "The error arose in setdiff1d()")
    fill = creation.full_like(a, 0 if fill_value is None else fill_value, shape=())
    n = math.prod(_shape(a))
    if n == 0 or size == 0:
        return creation.full_like(a, fill, shape=size or 0)
    if not assume_unique:
        a = unique(a, size=size and n)
    mask = _in1d(a, b, invert=True, assume_unique=assume_unique)
    if size is None:
        return a[mask]
    if not assume_unique:
        # unique(size=n) repeats its first value as padding: not part of the set.
        n_unique = n + 1 - reductions.sum(a == a[0])
        mask = jnp_math._where(creation.arange(n) < n_unique, mask, False)
    return jnp_math._where(creation.arange(size) < reductions.sum(mask),
                           a[indexing.where(mask, size=size)], fill)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    a, b = _ensure("intersect1d", ar1, ar2)
    a, b = _promote(a, b)
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if size is not None:
        return _intersect1d_size(a, b, assume_unique, return_indices,
                                 _index(size, "size argument of intersect1d"), fill_value)
    ind1 = ind2 = creation.arange(0)
    if not assume_unique:
        if return_indices:
            a, ind1 = unique(a, return_index=True)
            b, ind2 = unique(b, return_index=True)
        else:
            a, b = unique(a), unique(b)
    both = jnp_shape.concatenate((a, b))
    if return_indices:
        n = _shape(both)[0]
        iota = L.broadcasted_iota(T.int64 if n > np.iinfo(np.int32).max else T.int32,
                                    (n,), 0)
        aux, order = lr.sort((both, iota), dimension=0, num_keys=1)
    else:
        aux = reductions.sort(both)
    mask = aux[1:] == aux[:-1]
    common = aux[:-1][mask]
    if not return_indices:
        return common
    i1 = order[:-1][mask]
    i2 = order[1:][mask] - _shape(a)[0]
    if not assume_unique:
        i1, i2 = ind1[i1], ind2[i2]
    return common, i1, i2


def _intersect1d_size(a: Any, b: Any, assume_unique: bool, return_indices: bool, size: int,
                      fill_value: Any) -> Any:
    """Traceable intersect1d: the sorted common values, padded to ``size``
    (with ``fill_value``, else the smallest common value, else 0)."""
    if return_indices:
        raise NotImplementedError("spec: intersect1d(size=..., return_indices=True) is not "
                                  "implemented")
    n = _shape(a)[0]
    if assume_unique:
        ua, valid = reductions.sort(a), creation.ones(n, dtype=bool)
    elif n:
        ua, count = _unique_impl(a, 0, size=n, fill_value=0, return_true_size=True)
        valid = creation.arange(n) < count
    else:
        ua, valid = a, creation.zeros(0, dtype=bool)
    keep = valid & _in1d(ua, b, invert=False)
    if size == 0:
        return creation.zeros(size, _dtype(a))
    num = reductions.sum(keep)
    vals = (ua[indexing.nonzero(keep, size=size, fill_value=0)[0]] if n
            else creation.zeros(size, _dtype(a)))
    inside = creation.arange(size) < num
    if fill_value is None:
        vals = jnp_math._where(inside, vals, reductions.max(jnp_math._where(inside, vals, 0)))
        return jnp_math._where(inside, vals, reductions.min(vals))
    return jnp_math._where(inside, vals, fill_value)


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    a, b = _ensure("setxor1d", ar1, ar2)
    a, b = _promote(jnp_shape.ravel(a), jnp_shape.ravel(b))
    if size is not None:
        raise NotImplementedError("spec: setxor1d(size=...) is not implemented")
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = jnp_shape.concatenate((a, b))
    if math.prod(_shape(aux)) == 0:
        return aux
    aux = reductions.sort(aux)
    edge = creation.array([True])
    flag = jnp_shape.concatenate((edge, aux[1:] != aux[:-1], edge))
    return aux[flag[1:] & flag[:-1]]


__all__ = [
    "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique", "unique_all",
    "unique_counts", "unique_inverse", "unique_values",
]
