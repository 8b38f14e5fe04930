"""jnp sorting and searching (NumPy's "Sorting, searching, and counting") beyond
the sorts in the reductions module: ``searchsorted``, ``lexsort``, partitions,
``sort_complex``, ``top_k`` and ``extract``."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.core.canonical import static_hashable
from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import reductions
from spec._src.numpy import hijax as jnp_hijax
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.indexing import compress
from spec._src.numpy.math import _named_jit
from spec._src.numpy.util import (
    _dtype,
    _ensure,
    _index,
    _jit,
    _ndim,
    _promote,
    _shape,
    check_arraylike,
)


def _searchsorted_fn(a: Any, v: Any, side: str = "left", sorter: Any = None,
                     method: str = "scan") -> Any:
    if _ndim(a) != 1:
        raise ValueError(f"a should be 1-dimensional, got shape {_shape(a)}")
    if method not in ("scan", "scan_unrolled", "compare_all", "sort"):
        raise ValueError(f"Unsupported method: {method}")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a, v = _promote(a, v)
    if sorter is not None:
        a = a[sorter]
    n = _shape(a)[0]
    dt = T.int64 if n > np.iinfo(np.int32).max else T.int32
    return jnp_hijax.searchsorted(a, v, side=side, method=method, dtype=dt)


_searchsorted = _jit("searchsorted", _searchsorted_fn, ("side", "method"))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    if sorter is None:
        check_arraylike("searchsorted", a, v)
    else:
        check_arraylike("searchsorted", a, v, sorter)
    return _searchsorted(L.asarray(a), L.asarray(v), side=side, sorter=sorter,
                         method=method)


def _lexsort_dtype(n: int) -> T.DType:
    return T.int64 if n > np.iinfo(np.int32).max else T.default_int()


def _lexsort_fn(keys: Any, axis: int = -1, *, batch_size: int = 16) -> Any:
    batch_size = _index(batch_size, "batch_size argument of jnp.lexsort()")
    if batch_size < 1:
        raise ValueError(f"lexsort: batch_size must be positive, got {batch_size}")
    stacked = isinstance(keys, (np.ndarray, Array, Tracer))
    if stacked:
        k = _ensure("lexsort", keys)
        if _ndim(k) == 0 or _shape(k)[0] == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        if _ndim(k) == 1:
            return L.full((), 0, T.default_int())
        shape = _shape(k)[1:]
    else:
        check_arraylike("lexsort", *keys)
        key_list = [L.asarray(x) for x in keys]
        if not key_list:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        if len({_shape(x) for x in key_list}) > 1:
            raise ValueError("all keys need to be the same shape")
        if _ndim(key_list[0]) == 0:
            return L.full((), 0, T.default_int())
        shape = _shape(key_list[0])
    ax = canonicalize_axis(axis, len(shape))
    iota = L.broadcasted_iota(_lexsort_dtype(shape[ax]), shape, ax)
    if stacked:
        key_list = list(slicing.unstack(k, 0))
    # The last key is the primary one; ties fall through to earlier keys,
    # then to the position (the sort is stable).
    out = lr.sort((*key_list[::-1], iota), dimension=ax, num_keys=len(key_list))
    return out[-1]


lexsort = _jit("lexsort", _lexsort_fn, ("axis", "batch_size"))


def _order_reversing(x: Any) -> Any:
    return ew.bitwise_not(x) if (T.is_int(_dtype(x)) or _dtype(x) == T.bool_) else ew.neg(x)


def _partition_prep(name: str, a: Any, kth: int, axis: int) -> tuple[Any, int, int]:
    arr = _ensure(name, a)
    if T.is_complex(_dtype(arr)):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    ax = canonicalize_axis(axis, _ndim(arr))
    k = canonicalize_axis(kth, _shape(arr)[ax])
    return jnp_shape.swapaxes(arr, ax, -1), ax, k


def _partition_fn(a: Any, kth: int, axis: int = -1) -> Any:
    arr, ax, k = _partition_prep("partition", a, kth, axis)
    bottom = _order_reversing(lr.top_k(_order_reversing(arr), k + 1)[0])
    top = lr.top_k(arr, _shape(arr)[-1] - k - 1)[0]
    return jnp_shape.swapaxes(slicing.concatenate([bottom, top], _ndim(arr) - 1), -1, ax)


def _argpartition_fn(a: Any, kth: int, axis: int = -1) -> Any:
    arr, ax, k = _partition_prep("argpartition", a, kth, axis)
    n = _shape(arr)[-1]
    bottom = lr.top_k(_order_reversing(arr), k + 1)[1]
    # The rest are the positions not among ``bottom``, in increasing order:
    # top_k of a 0/1 marker (ties keep the lower index first).
    positions = L.broadcasted_iota(_dtype(bottom), (*_shape(arr)[:-1], 1, n), _ndim(arr))
    taken = reductions.any(bottom[..., :, None] == positions, axis=-2)
    marker = jnp_math._where(taken, np.float32(0), np.float32(1))
    top = lr.top_k(marker, n - k - 1)[1]
    return jnp_shape.swapaxes(slicing.concatenate([bottom, top], _ndim(arr) - 1), -1, ax)


_partition = _jit("partition", _partition_fn, ("kth", "axis"))


_argpartition = _jit("argpartition", _argpartition_fn, ("kth", "axis"))


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    return _partition(_ensure("partition", a), kth=operator.index(kth),
                      axis=operator.index(static_hashable(axis, 'axis')))


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    return _argpartition(_ensure("argpartition", a), kth=operator.index(kth),
                         axis=operator.index(static_hashable(axis, 'axis')))


def _to_complex(dt: T.DType) -> T.DType:
    if T.is_complex(dt):
        return dt
    return T.complex128 if dt in (T.float64, T.int64, T.uint64) else T.complex64


def _sort_complex_fn(a: Any) -> Any:
    out = lr.sort(a, dimension=_ndim(a) - 1)
    return L.convert_element_type(out, T.canonicalize_dtype(_to_complex(_dtype(out))))


_sort_complex = _jit("sort_complex", _sort_complex_fn)


def sort_complex(a: Any) -> Any:
    arr = _ensure("sort_complex", a)
    if _ndim(arr) == 0:
        raise ValueError("sort_complex requires an array of rank >= 1")
    return _sort_complex(arr)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    check_arraylike("extract", condition, arr, fill_value)
    return compress(jnp_shape.ravel(condition), jnp_shape.ravel(arr), size=size,
                    fill_value=fill_value)


def _top_k(a: Any, k: int, axis: int = -1, mode: str = "largest") -> tuple[Any, Any]:
    arr = _ensure("top_k", a)
    if T.is_complex(_dtype(arr)):
        raise ValueError("top_k is not compatible with complex inputs.")
    if mode not in ("largest", "smallest"):
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    axis = canonicalize_axis(axis, _ndim(arr))
    if mode == "largest":
        vals, idx = lr.top_k(arr, k, axis=axis)
        return vals, idx
    # The k smallest are the k largest of an order-reversed copy; undo after.
    vals, idx = lr.top_k(_order_reverse(arr), k, axis=axis)
    return _order_reverse(vals), idx


def _order_reverse(x: Any) -> Any:
    """A map that reverses the total order of x's dtype (its own inverse)."""
    if T.is_inexact(_dtype(x)):
        return ew.neg(x)
    # Integers and bool: ~x reverses the order (-x - 1 when signed) and cannot overflow.
    return ew.bitwise_not(x)


_top_k_jit = _named_jit("top_k", _top_k, static_argnames=("k", "axis", "mode"))


def top_k(a: Any, k: int, /, *, axis: int = -1, mode: str = "largest",
          sorted: bool = True) -> tuple[Any, Any]:
    return _top_k_jit(a, k, axis=axis, mode=mode)  # type: ignore[no-any-return]


__all__ = [
    "top_k", "extract", "argpartition", "lexsort", "partition", "searchsorted", "sort_complex",
]
