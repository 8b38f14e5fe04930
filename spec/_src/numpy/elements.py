"""Adding, removing and inserting elements (NumPy's "Adding and removing
elements" and ``fill_diagonal``): ``append``, ``delete``, ``insert``,
``trim_zeros``, ``resize``, composed from the manipulation and searching modules."""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.canonical import static_hashable
from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer
from spec._src.lax import shaping as L
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, indexing, reductions, tiling
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.indexing import diag_indices
from spec._src.numpy.shape import broadcast_shapes
from spec._src.numpy.util import (
    _concrete,
    _concrete_or_error,
    _dtype,
    _ensure,
    _index,
    _jit,
    _ndim,
    _shape,
    check_arraylike,
)


def _append_fn(arr: Any, values: Any, axis: int | None = None) -> Any:
    if axis is None:
        return jnp_shape.concatenate([jnp_shape.ravel(arr), jnp_shape.ravel(values)], 0)
    return jnp_shape.concatenate([arr, values], axis=axis)


_append = _jit("append", _append_fn, ("axis",))


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    check_arraylike("append", arr, values)
    return _append(arr, values, axis=None if axis is None
                   else operator.index(static_hashable(axis, 'axis')))


def _resize_fn(a: Any, new_shape: tuple[int, ...]) -> Any:
    arr = jnp_shape.ravel(a)
    new_size = math.prod(new_shape)
    size = math.prod(_shape(arr))
    if size == 0 or new_size == 0:
        return creation.zeros_like(arr, shape=new_shape)
    reps = -(-new_size // size)
    return jnp_shape.reshape(tiling.tile(arr, reps)[:new_size], new_shape)


_resize = _jit("resize", _resize_fn, ("new_shape",))


def resize(a: Any, new_shape: Any) -> Any:
    check_arraylike("resize", a)
    new_shape = static_hashable(new_shape, "new_shape")
    shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else tuple(
        operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"all elements of `new_shape` must be non-negative, got {shape}")
    return _resize(a, new_shape=shape)


def _axis_set(axis: Any, nd: int) -> set[int]:
    if axis is None:
        return set(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return {canonicalize_axis(a, nd) for a in axes}


def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
    arr = _ensure("trim_zeros", filt)
    _concrete_or_error(arr, "Error arose in the `filt` argument of trim_zeros()")
    nd = _ndim(arr)
    axes = _axis_set(axis, nd)
    mode = trim.lower()
    if not axes or ("f" not in mode and "b" not in mode):
        return arr
    idx = []
    for ax in range(nd):
        if ax not in axes:
            idx.append(slice(None))
            continue
        # As JAX, the mask is reduced from the array itself (a jnp reduction
        # of the traced value) and only its scalars are made concrete.
        mask = reductions.any(arr, axis=tuple(i for i in range(nd) if i != ax))
        if not bool(reductions.any(mask)):
            idx.append(slice(0, 0))
            continue
        start = int(reductions.argmax(mask)) if "f" in mode else None
        stop = _shape(arr)[ax] - int(reductions.argmax(mask[::-1])) if "b" in mode else None
        idx.append(slice(start, stop))
    return arr[tuple(idx)]


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    a = _ensure("delete", arr)
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    ax = canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[ax]
    lead = (slice(None),) * ax
    if not isinstance(obj, (np.ndarray, Array, Tracer, slice, list, tuple)):
        try:
            i = operator.index(obj)
        except TypeError:
            pass
        else:
            i = canonicalize_axis(i, n)
            return jnp_shape.concatenate(
                [a[lead + (slice(0, i),)], a[lead + (slice(i + 1, None),)]], axis=ax)
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
        assume_unique_indices = True
    check_arraylike("delete", a, obj)
    obj_dtype = _dtype(obj) if isinstance(obj, (Array, Tracer)) else np.asarray(obj).dtype
    if T.is_int(obj_dtype) and assume_unique_indices:
        # Traceable: the kept positions are 0..n-k-1 shifted past each deleted index.
        idx = jnp_shape.ravel(creation.asarray(obj))
        idx = jnp_math.clip(jnp_math._where(idx < 0, idx + n, idx), 0, n)
        idx = reductions.sort(idx)
        k = _shape(idx)[0]
        idx = idx - creation.arange(k, dtype=_dtype(idx))
        keep = creation.arange(n - k, dtype=_dtype(idx))
        keep = keep + reductions.sum(keep[None, :] >= idx[:, None], axis=0, dtype=_dtype(keep))
        return a[lead + (keep,)]
    value = _concrete(obj, "'obj' array argument of jnp.delete()")
    if np.issubdtype(value.dtype, np.integer):
        mask = np.ones(n, dtype=bool)
        mask[value] = False
    elif value.dtype == np.bool_:
        if value.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~value
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={value.dtype}; must be integer "
                         "or bool.")
    return a[lead + (mask,)]


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = L.asarray(arr)
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    ax = canonicalize_axis(_index(axis, "axis argument of jnp.insert()"), _ndim(a))
    n_input = _shape(a)[ax]
    if isinstance(obj, slice):
        indices = creation.arange(*obj.indices(n_input))
    else:
        indices = creation.asarray(obj)
    if _ndim(indices) > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if not T.is_int(_dtype(indices)):
        if math.prod(_shape(indices)) == 0 and not isinstance(obj, (Array, Tracer)):
            indices = jnp_shape.astype(indices, int)
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    vals = creation.array(values, ndmin=_ndim(a), dtype=_dtype(a), copy=False)
    if math.prod(_shape(indices)) == 1:
        first = jnp_shape.ravel(indices)[0]
        if _ndim(indices) == 0:
            vals = jnp_shape.moveaxis(vals, 0, ax)
        indices = creation.full(_shape(vals)[ax], first)
    n_insert = broadcast_shapes(_shape(indices), (_shape(vals)[ax],))[0]
    out_shape = list(_shape(a))
    out_shape[ax] += n_insert
    out = creation.zeros_like(a, shape=tuple(out_shape))
    indices = jnp_math.clip(jnp_math._where(indices < 0, indices + n_input, indices), 0, n_input)
    # Inserted item j lands at its index plus the number of inserts before it.
    values_ind = indices.at[reductions.argsort(indices)].add(
        creation.arange(n_insert, dtype=_dtype(indices)))
    arr_mask = creation.ones(n_input + n_insert, dtype=bool).at[values_ind].set(False)
    arr_ind = indexing.where(arr_mask, size=n_input)[0]
    lead = (slice(None),) * ax
    out = out.at[lead + (values_ind,)].set(vals)
    return out.at[lead + (arr_ind,)].set(a)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a, val = _ensure("fill_diagonal", a, val)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and any(n != shape[0] for n in shape[1:]):
        raise ValueError(f"All dimensions of input must be of equal length, got {shape}")
    n = builtins.min(shape)
    idx = diag_indices(n, len(shape))
    if _ndim(val) == 0:
        return a.at[idx].set(val)
    flat = jnp_shape.ravel(val)
    size = _shape(flat)[0]
    if size == 0:  # JAX's tiling divides by the size of val
        raise ZeroDivisionError(f"fill_diagonal: val has shape {_shape(val)}, no values to "
                                f"fill a diagonal of length {n} with")
    reps = -(-n // size)
    return a.at[idx].set(tiling.tile(flat, reps)[:n])


__all__ = [
    "fill_diagonal", "append", "delete", "insert", "resize", "trim_zeros",
]
