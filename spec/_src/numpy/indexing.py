"""NumPy-style indexing (``x[idx]``, ``x.at[idx].op(...)``) lowered as JAX 0.12 does.

``x[idx]`` tries, in order: a static slice (ints, slices, ``...``, None:
slice + rev + squeeze + broadcast_in_dim), a dynamic slice (additionally
scalar integer arrays, unit-step slices: dynamic_slice + rev + squeeze +
broadcast_in_dim), and otherwise a gather. ``x.at[idx]`` updates lower to
scatter / scatter-add / scatter-mul / scatter-min / scatter-max with the
transposed dimension numbers of that gather.
"""

from __future__ import annotations

import operator

import builtins
import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core.canonical import canonical_axis, static_int
from spec._src.core import types as T
from spec._src.core import tree_util as tu
from spec._src.core.array import Array, host_value
from spec._src.core.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from spec._src.core.interpreter import (
    JaxprTrace,
    Tracer,
    canonical_aval_of,
    canonical_value,
    current_trace,
    to_concrete_value,
)
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax.control_flow import platform_dependent
from spec._src.lax import indexing as li
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)
from spec._src.lax.shaping import _convert_element_type, convert_element_type_p
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, reductions, util
from spec._src.numpy import hijax as jnp_hijax
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _where
from spec._src.numpy.ranges import _grid_1d
from spec._src.numpy.shape import ravel
from spec._src.numpy.util import _dtype, _ensure, _index, _jit, _shape, check_arraylike

__all__ = [
    "getitem", "take", "take_along_axis", "nonzero", "argwhere", "flatnonzero", "diagonal", "diag",
    "where", "c_", "r_", "choose", "compress", "put_along_axis", "ravel_multi_index", "select",
    "unravel_index", "diag_indices", "diag_indices_from", "index_exp", "indices", "ix_",
    "mask_indices", "place", "put", "s_", "tril_indices", "tril_indices_from", "triu_indices",
    "triu_indices_from",
]

INDEX_DTYPE = np.dtype(np.int32)


# ============================================================ value helpers


def _is_array(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray))


def _concrete(value: np.ndarray, dtype: T.DType, weak: bool) -> Array:
    return host_value(np.asarray(value).astype(dtype), T.ArrayType(
        np.shape(value), dtype, weak), "index")


def _convert(x: Any, dtype: T.DType, weak: bool = False) -> Any:
    """``lax.convert_element_type`` as JAX stages it: scalar constants fold
    (JAX's constant folding), arrays and tracers bind."""
    if isinstance(x, Tracer) or np.ndim(x) > 0:  # only scalar constants fold
        return _convert_element_type(x, dtype, weak)
    value, aval = _value_and_aval(x)
    if (aval.dtype, aval.weak_type) == (dtype, weak):
        return x if isinstance(x, Array) else _concrete(value, dtype, weak)
    out = convert_element_type_p.impl(value, new_dtype=dtype, weak_type=weak, sharding=None)[0]
    return _concrete(out, dtype, weak)


def _value_and_aval(x: Any) -> tuple[np.ndarray, T.ArrayType]:
    return canonical_value(x)


def _asarray(x: Any) -> Any:
    """``jnp.asarray`` of an index: arrays stay, Python/NumPy values become Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    value, aval = _value_and_aval(np.asarray(x) if isinstance(x, (list, tuple)) else x)
    return host_value(value, aval, "asarray")


def _expand_dims(x: Any, dims: Sequence[int]) -> Any:
    if not dims:
        return x
    shape = list(canonical_aval_of(x).shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(len(shape)) if i not in set(dims))
    return L.broadcast_in_dim(x, tuple(shape), kept)


def _squeeze(x: Any, dims: Sequence[int]) -> Any:
    return L.squeeze(x, tuple(dims)) if dims else x


def _broadcast_to(x: Any, shape: T.Shape) -> Any:
    """``lax.broadcast_to``: leading axes are added, size-1 axes stretch."""
    old = canonical_aval_of(x).shape
    if old == tuple(shape):
        return x
    lead = len(shape) - len(old)
    if lead < 0 or any(a not in (1, b) for a, b in zip(old, shape[lead:])):
        raise ValueError(f"Incompatible types for broadcasting: input shape {old} and "
                         f"requested shape {tuple(shape)}")
    return L.broadcast_in_dim(x, tuple(shape), tuple(range(lead, len(shape))))


def _broadcast_arrays(arrays: list[Any]) -> list[Any]:
    shapes = [canonical_aval_of(a).shape for a in arrays]
    if all(s == shapes[0] for s in shapes):
        return arrays
    try:  # NumPy rank promotion; JAX raises ValueError on a mismatch too
        out_shape = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None
    return [_broadcast_to(a, out_shape) for a in arrays]


# ================================================================ parsing


class _Kind(enum.Enum):
    NONE = "none"
    SLICE = "slice"
    ELLIPSIS = "ellipsis"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ARRAY = "array"


@dataclass(frozen=True)
class _Parsed:
    index: Any
    kind: _Kind
    axes: tuple[int, ...]


def _dtype_of(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype if isinstance(x, (Array, Tracer)) else np.asarray(x).dtype


def _kind(idx: Any) -> _Kind:
    if idx is None:
        return _Kind.NONE
    if idx is Ellipsis:
        return _Kind.ELLIPSIS
    if isinstance(idx, slice):
        return _Kind.SLICE
    if isinstance(idx, (bool, np.bool_)):
        return _Kind.BOOLEAN
    if isinstance(idx, (int, np.integer)):
        return _Kind.INTEGER
    if _is_array(idx):
        dt = _dtype_of(idx)
        if T.is_bool(dt):
            return _Kind.BOOLEAN
        if T.is_int(dt):
            return _Kind.ARRAY
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt}")
    if isinstance(idx, str):
        raise TypeError(f"JAX does not support string indexing; got idx={idx!r}")
    if isinstance(idx, Sequence):
        if not idx:
            return _Kind.ARRAY
        dt = np.asarray(idx).dtype
        if T.is_bool(dt):
            return _Kind.BOOLEAN
        if dt.kind in "iu":
            return _Kind.ARRAY
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt}")
    if isinstance(idx, (float, complex, np.generic)):
        raise TypeError("Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(type(idx))}")
    T.refuse_jax_array(idx)  # JAX takes an index's type (abstractifies it) here
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
                     f"integer or boolean arrays are valid indices. Got {idx}")


def _as_tuple(idx: Any) -> tuple[Any, ...]:
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, str):
        unpack = any(_is_array(i) and np.ndim(i) != 0 if not isinstance(i, Tracer)
                     else i.ndim != 0 for i in idx) or any(
            isinstance(i, (Sequence, slice)) or i is Ellipsis or i is None for i in idx)
        hint = "arr[tuple(seq)]" if unpack else "arr[array(seq)]"
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed; use `{hint}` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    return (idx,)


def _ndim(x: Any) -> int:
    return canonical_aval_of(x).ndim if isinstance(x, (Array, Tracer)) else int(np.ndim(x))


def _parse(idx: Any, shape: T.Shape) -> list[_Parsed]:
    items = _as_tuple(idx)
    kinds = [_kind(i) for i in items]
    consumed = [0 if k in (_Kind.NONE, _Kind.ELLIPSIS) else
                _ndim(i) if k == _Kind.BOOLEAN else 1 for i, k in zip(items, kinds)]
    ellipses = [n for n, k in enumerate(kinds) if k == _Kind.ELLIPSIS]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if sum(consumed) > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but "
                         f"{sum(consumed)} were indexed")
    if ellipses:
        consumed[ellipses[0]] = len(shape) - sum(consumed)
    out, axis = [], 0
    for i, k, n in zip(items, kinds, consumed):
        out.append(_Parsed(i, k, tuple(range(axis, axis + n))))
        axis += n
    return out


def _expand_ellipsis(parsed: list[_Parsed], rank: int) -> list[_Parsed]:
    out: list[_Parsed] = []
    used = 0
    for p in parsed:
        used += len(p.axes)
        if p.kind == _Kind.ELLIPSIS:
            out.extend(_Parsed(slice(None), _Kind.SLICE, (a,)) for a in p.axes)
        else:
            out.append(p)
    out.extend(_Parsed(slice(None), _Kind.SLICE, (a,)) for a in range(used, rank))
    return out


def _static_slice_parts(s: slice) -> bool:
    return all(v is None or not isinstance(v, Tracer) for v in (s.start, s.stop, s.step))


class _NotThisWay(Exception):
    """This lowering does not apply; try the next one (JAX's TypeError fallbacks)."""


# ================================================================ getitem


def getitem(arr: Any, idx: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
            fill_value: Any = None) -> Any:
    """``arr[idx]`` (and ``arr.at[idx].get(...)``) with JAX's lowering."""
    shape = canonical_aval_of(arr).shape
    parsed = _parse(idx, shape)
    parsed_mode = None if mode is None else GatherScatterMode.from_any(mode)
    slice_ok = parsed_mode in (None, GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP)
    if slice_ok:
        try:
            return _static_slice(arr, shape, parsed, parsed_mode)
        except _NotThisWay:
            pass
        try:
            return _dynamic_slice(arr, shape, parsed)
        except _NotThisWay:
            pass
    return _gather(arr, shape, _expand_bool(parsed, shape), indices_are_sorted=indices_are_sorted,
                   unique_indices=unique_indices, mode=mode, fill_value=fill_value)


def _static_slice(arr: Any, shape: T.Shape, parsed: list[_Parsed],
                  mode: GatherScatterMode | None) -> Any:
    for p in parsed:
        if p.kind in (_Kind.ARRAY, _Kind.BOOLEAN):
            raise _NotThisWay
        if p.kind == _Kind.INTEGER and mode != GatherScatterMode.CLIP:
            size = shape[p.axes[0]]
            i = int(p.index)
            if not 0 <= (i + size if i < 0 else i) < size:
                raise _NotThisWay  # JAX then clamps through dynamic_slice
        if p.kind == _Kind.SLICE and not _static_slice_parts(p.index):
            raise _NotThisWay
    start: list[int] = []
    limit: list[int] = []
    strides: list[int] = []
    rev: list[int] = []
    squeeze: list[int] = []
    newaxis: list[int] = []
    for p in _expand_ellipsis(parsed, len(shape)):
        if p.kind == _Kind.NONE:
            newaxis.append(len(start) - len(squeeze) + len(newaxis))
        elif p.kind == _Kind.INTEGER:
            (axis,) = p.axes
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            i = int(p.index)
            i = min(max(i + shape[axis] if i < 0 else i, 0), shape[axis] - 1)
            start.append(i)
            limit.append(i + 1)
            strides.append(1)
            squeeze.append(axis)
        else:
            (axis,) = p.axes
            lo, hi, step = _slice_indices(p.index, shape[axis])
            if step < 0:
                first = min(shape[axis], hi + 1 + abs(lo - hi - 1) % -step)
                start.append(first)
                limit.append(max(first, lo + 1))
                strides.append(-step)
                rev.append(axis)
            else:
                start.append(lo)
                limit.append(max(lo, hi))
                strides.append(step)
    trivial = all(s == 1 for s in strides) and all(
        (a, b) == (0, n) for a, b, n in zip(start, limit, shape))
    out = arr if trivial else slicing.slice(arr, tuple(start), tuple(limit),
                                        None if all(s == 1 for s in strides) else tuple(strides))
    if rev:
        out = slicing.rev(out, tuple(rev))
    out = _squeeze(out, squeeze)
    return _expand_dims(out, newaxis)


def _slice_indices(s: slice, size: int) -> tuple[int, int, int]:
    try:
        return s.indices(size)
    except TypeError as err:
        raise TypeError(f"slice indices must be integers or None, got {s}") from err


def _dynamic_slice(arr: Any, shape: T.Shape, parsed: list[_Parsed]) -> Any:
    for p in parsed:
        if p.kind == _Kind.BOOLEAN:
            raise _NotThisWay
        if p.kind == _Kind.SLICE and (not _static_slice_parts(p.index)
                                      or p.index.step not in (None, 1, -1)):
            raise _NotThisWay
        if p.kind == _Kind.ARRAY and (isinstance(p.index, Sequence) or _ndim(p.index) != 0):
            raise _NotThisWay
    starts: list[Any] = []
    sizes: list[int] = []
    rev: list[int] = []
    squeeze: list[int] = []
    newaxis: list[int] = []
    trivial = True
    for p in _expand_ellipsis(parsed, len(shape)):
        if p.kind == _Kind.NONE:
            newaxis.append(len(starts) - len(squeeze) + len(newaxis))
        elif p.kind in (_Kind.INTEGER, _Kind.ARRAY):
            trivial = False
            (axis,) = p.axes
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            starts.append(_asarray(p.index))
            sizes.append(1)
            squeeze.append(axis)
        else:
            (axis,) = p.axes
            if p.index != slice(None):
                trivial = False
            lo, hi, step = _slice_indices(p.index, shape[axis])
            if step < 0:
                first = hi + 1 + abs(lo - hi - 1) % -step
                starts.append(first)
                sizes.append(max(0, lo + 1 - first))
                rev.append(axis)
            else:
                starts.append(lo)
                sizes.append(max(0, hi - lo))
    if len(starts) > 1:
        starts = [_convert(s, INDEX_DTYPE) for s in starts]
    out = arr if trivial else slicing.dynamic_slice(arr, starts, tuple(sizes))
    if rev:
        out = slicing.rev(out, tuple(rev))
    out = _squeeze(out, squeeze)
    return _expand_dims(out, newaxis)


def _expand_bool(parsed: list[_Parsed], shape: T.Shape) -> list[_Parsed]:
    """Concrete boolean masks become integer index arrays (``np.nonzero``)."""
    out: list[_Parsed] = []
    for pos, p in enumerate(parsed):
        if p.kind != _Kind.BOOLEAN:
            out.append(p)
            continue
        if isinstance(p.index, Tracer):
            raise NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got {p.index.aval.str_short(True)}")
        mask = np.asarray(p.index)
        if mask.ndim == 0:
            out.append(_Parsed(bool(mask), p.kind, ()))
            continue
        expected = [shape[a] for a in p.axes]
        if not all(s in (0, e) for s, e in zip(mask.shape, expected)):
            raise IndexError("boolean index did not match shape of indexed array in index "
                             f"{pos}: got {mask.shape}, expected {expected}")
        out.extend(_Parsed(i, _Kind.ARRAY, (a,)) for i, a in zip(np.nonzero(mask), p.axes))
    return out


# ======================================================== gather indexer


@dataclass
class _GatherPlan:
    slice_shape: list[int]
    gather_slice_shape: list[int]
    indices: Any
    dnums: GatherDimensionNumbers
    unique: bool
    reversed_dims: list[int]
    newaxis_dims: list[int]
    scalar_bool_dims: list[int]


def _normalize(index: Any, size: int) -> Any:
    """Negative entries count from the end: select_n(index < 0, index, index + size)."""
    if isinstance(index, (int, np.integer)) and not isinstance(index, np.unsignedinteger):
        return index + size if index < 0 else index
    dt = _dtype_of(index)
    if T.is_unsigned_int(dt):
        return index
    if isinstance(index, np.ndarray):
        negative: Any = index < 0  # NumPy operands compare eagerly, as in JAX
    else:
        negative = ew.lt(index, _concrete(np.asarray(0), dt, True))
    # A weak scalar index meets the size as a weak constant (JAX's ``lax._const``), so the
    # normalized index stays weak.
    if _ndim(index) == 0 and canonical_aval_of(index).weak_type:
        size_const: Any = _concrete(np.asarray(size), dt, True)
    else:
        size_const = np.asarray(size, dtype=dt)
    return ew.select_n(negative, index, ew.add(index, size_const))


def _gather_plan(shape: T.Shape, parsed: list[_Parsed], normalize_indices: bool = True
                 ) -> _GatherPlan:
    for pos, p in enumerate(parsed):
        if p.kind == _Kind.SLICE and not _static_slice_parts(p.index):
            raise IndexError(
                "Array slice indices must have static start/stop/step to be used with NumPy "
                f"indexing syntax. Got {p.index} at position {pos}. To index an array at a "
                "dynamic position with a static slice size, use lax.dynamic_slice instead.")
    parsed = [_Parsed(_asarray(p.index), p.kind, p.axes)
              if isinstance(p.index, Sequence) and not isinstance(p.index, str) else p
              for p in parsed]
    advanced_pos = [n for n, p in enumerate(parsed) if p.kind in (_Kind.ARRAY, _Kind.INTEGER)]
    contiguous = all(b - a == 1 for a, b in zip(advanced_pos, advanced_pos[1:]))
    parsed = _expand_ellipsis(parsed, len(shape))
    scalar_bool_dims = [n for n, p in enumerate(parsed) if p.kind == _Kind.BOOLEAN]
    # Scalar booleans become an axis of size 1 indexed by arange(int(b)).
    new_shape = list(shape)
    expanded: list[_Parsed] = []
    dim = 0
    for n, p in enumerate(parsed):
        if p.kind == _Kind.BOOLEAN:
            new_shape.insert(n, 1)
            expanded.append(_Parsed(np.arange(int(p.index)), _Kind.ARRAY, (dim,)))
            dim += 1
        else:
            expanded.append(_Parsed(p.index, p.kind, tuple(range(dim, dim + len(p.axes)))))
            dim += len(p.axes)
    xshape = tuple(new_shape)
    normed = [_Parsed(_normalize(p.index, xshape[p.axes[0]]), p.kind, p.axes)
              if p.kind in (_Kind.ARRAY, _Kind.INTEGER) and normalize_indices else p
              for p in expanded]
    is_advanced = any(p.kind == _Kind.ARRAY and _ndim(p.index) > 0 for p in normed)
    adv_arrays: list[Any] = []
    adv_idx_pos: list[int] = []
    adv_x_axes: list[int] = []
    if is_advanced:
        without_none = [(n, p) for n, p in enumerate(normed) if p.kind != _Kind.NONE]
        for j, (n, p) in enumerate(without_none):
            if p.kind in (_Kind.ARRAY, _Kind.INTEGER):
                adv_arrays.append(_asarray(p.index))
                adv_idx_pos.append(n)
                adv_x_axes.append(j)
    x_axis = y_axis = collapsed_y = 0
    offset_dims: list[int] = []
    collapsed: list[int] = []
    start_map: list[int] = []
    pieces: list[tuple[Any, int]] = []
    ind_shape: list[int] = []
    slice_shape: list[int] = []
    newaxis_dims: list[int] = []
    reversed_dims: list[int] = []
    gshape: list[int] = []
    for pos, p in enumerate(normed):
        if adv_arrays and ((contiguous and pos == adv_idx_pos[0]) or
                           (not contiguous and pos == 0)):
            arrays = _broadcast_arrays(adv_arrays)
            bshape = canonical_aval_of(arrays[0]).shape
            first = len(ind_shape)
            pieces.extend((_convert(a, INDEX_DTYPE), first) for a in arrays)
            ind_shape += bshape
            start_map.extend(adv_x_axes)
            collapsed.extend(adv_x_axes)
            slice_shape.extend(bshape)
            y_axis += len(bshape)
            collapsed_y += len(bshape)
        if pos in adv_idx_pos:
            x_axis += 1
            gshape.append(1)
            continue
        if p.kind in (_Kind.INTEGER, _Kind.ARRAY):  # a scalar integer index
            if xshape[x_axis] == 0:
                raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
            pieces.append((_convert(p.index, INDEX_DTYPE), len(ind_shape)))
            collapsed.append(x_axis)
            gshape.append(1)
            start_map.append(x_axis)
            x_axis += 1
        elif p.kind == _Kind.NONE:
            slice_shape.append(1)
            newaxis_dims.append(y_axis)
            y_axis += 1
        else:
            lo, hi, step = _slice_indices(p.index, xshape[x_axis])
            size = len(range(lo, hi, step))
            slice_shape.append(size)
            if step == 1:
                if size != xshape[x_axis]:
                    pieces.append((_convert(lo, INDEX_DTYPE), len(ind_shape)))
                    start_map.append(x_axis)
                gshape.append(size)
                offset_dims.append(collapsed_y)
            else:
                iota = L.iota(INDEX_DTYPE, size)
                idx = ew.add(_concrete(np.asarray(lo), INDEX_DTYPE, False),
                              ew.mul(_concrete(np.asarray(step), INDEX_DTYPE, False), iota))
                if step < 0:
                    reversed_dims.append(collapsed_y)
                    idx = slicing.rev(idx, (0,))
                gshape.append(1)
                pieces.append((idx, len(ind_shape)))
                start_map.append(x_axis)
                ind_shape.append(size)
                collapsed.append(x_axis)
            collapsed_y += 1
            y_axis += 1
            x_axis += 1
    if not pieces:
        indices: Any = np.zeros((0,), INDEX_DTYPE)
    elif len(pieces) == 1:
        g = pieces[0][0]
        indices = _expand_dims(g, (canonical_aval_of(g).ndim,))
    else:
        full = tuple(ind_shape) + (1,)
        indices = slicing.concatenate([
            L.broadcast_in_dim(g, full, tuple(range(i, i + canonical_aval_of(g).ndim)))
            for g, i in pieces], len(ind_shape))
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(sorted(collapsed)),
                                   start_index_map=tuple(start_map))
    return _GatherPlan(slice_shape, gshape, indices, dnums, not adv_arrays, reversed_dims,
                       newaxis_dims, scalar_bool_dims)


def _gather(arr: Any, shape: T.Shape, parsed: list[_Parsed], *, indices_are_sorted: bool,
            unique_indices: bool, mode: str | GatherScatterMode | None, fill_value: Any) -> Any:
    plan = _gather_plan(shape, parsed)
    if fill_value is not None:
        if isinstance(fill_value, Tracer):
            raise ConcretizationTypeError(
                "fill_value argument to indexed get() must be concrete, got a traced value")
        if np.ndim(fill_value) != 0:
            raise ValueError("fill_value argument to indexed get() must be a scalar")
        if isinstance(fill_value, (np.ndarray, Array)):
            fill_value = np.asarray(fill_value).item()
    y = _expand_dims(arr, plan.scalar_bool_dims)
    aval = canonical_aval_of(y)
    if 0 in plan.slice_shape:
        zero = _concrete(np.zeros((), aval.dtype), aval.dtype, False)
        return L.broadcast_in_dim(zero, tuple(plan.slice_shape), ())
    if 0 not in canonical_aval_of(plan.indices).shape:
        y = li.gather(y, plan.indices, plan.dnums, plan.gather_slice_shape,
                       unique_indices=unique_indices or plan.unique,
                       indices_are_sorted=indices_are_sorted or plan.unique,
                       mode=mode, fill_value=fill_value)
    if plan.reversed_dims:
        y = slicing.rev(y, tuple(plan.reversed_dims))
    return _expand_dims(y, plan.newaxis_dims)


# ================================================================ scatter


def _scatter_update(x: Any, idx: Any, y: Any, op: Callable[..., Any], *,
                    indices_are_sorted: bool, unique_indices: bool,
                    mode: str | GatherScatterMode | None, normalize_indices: bool = True
                    ) -> Any:
    """``op`` of y into x at idx; negative indices count from the end unless
    ``normalize_indices`` is off (then the mode decides about them)."""
    x_aval = canonical_aval_of(x)
    y = T.from_jax_array(y)
    if (isinstance(y, int) and not isinstance(y, bool) and T.is_int(x_aval.dtype)
            and np.iinfo(x_aval.dtype).min <= y <= np.iinfo(x_aval.dtype).max):
        y = _concrete(np.asarray(y), x_aval.dtype, False)
    elif isinstance(y, (list, tuple)) and any(
            isinstance(v, Tracer) for v in tu.tree_leaves(y)):
        y = creation.asarray(y)  # traced entries stack, as jnp.asarray stacks them
    elif not isinstance(y, (Array, Tracer)):
        y = _asarray(y) if not isinstance(y, T.PYTHON_SCALAR_TYPES) else y
    _stage_now(y)
    parsed = _expand_bool(_parse(idx, x_aval.shape), x_aval.shape)
    plan = _gather_plan(x_aval.shape, parsed, normalize_indices)
    if 0 in plan.slice_shape:
        return x
    x2, y2 = _promote(x, y)
    y2 = _broadcast_to(y2, tuple(plan.slice_shape))
    y2 = jnp_shape.squeeze(y2, axis=tuple(plan.newaxis_dims))
    if plan.reversed_dims:
        y2 = slicing.rev(y2, tuple(plan.reversed_dims))
    x2 = _expand_dims(x2, plan.scalar_bool_dims)
    dn = plan.dnums
    sdn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    out = op(x2, plan.indices, y2, sdn, indices_are_sorted=plan.unique or indices_are_sorted,
             unique_indices=plan.unique or unique_indices, mode=mode)
    out = _squeeze(out, plan.scalar_bool_dims)
    return _convert(out, x_aval.dtype, x_aval.weak_type)


def _stage_now(v: Any) -> None:
    """JAX makes the updates array a jaxpr constant as soon as it converts it,
    before the index arrays; register it now so constvars come in JAX's order."""
    trace = current_trace()
    if isinstance(trace, JaxprTrace) and isinstance(v, Array) and v.ndim > 0:
        trace.to_atom(v)


def _promote(x: Any, y: Any) -> list[Any]:
    """jnp's promote_dtypes, with constants converted eagerly (JAX folds them)."""
    dtype, weak = T.result_type_and_weak(x, y)
    return [_convert(v, dtype, weak) for v in (x, y)]


class _IndexUpdateRef:
    """``x.at[idx]``: functional indexed reads and updates."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | GatherScatterMode | None = None, fill_value: Any = None,
            out_sharding: Any = None) -> Any:
        return getitem(self.array, self.index, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode, fill_value=fill_value)

    def _update(self, op: Callable[..., Any], values: Any, indices_are_sorted: bool,
                unique_indices: bool, mode: str | GatherScatterMode | None) -> Any:
        return _scatter_update(self.array, self.index, values, op,
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def set(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
            out_sharding: Any = None) -> Any:
        return self._update(li.scatter, values, indices_are_sorted, unique_indices, mode)

    def add(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
            out_sharding: Any = None) -> Any:
        return self._update(li.scatter_add, values, indices_are_sorted, unique_indices, mode)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
                 out_sharding: Any = None) -> Any:
        return self._update(li.scatter_sub, values, indices_are_sorted, unique_indices, mode)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
                 out_sharding: Any = None) -> Any:
        return self._update(li.scatter_mul, values, indices_are_sorted, unique_indices, mode)

    mul = multiply

    def min(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
            out_sharding: Any = None) -> Any:
        return self._update(li.scatter_min, values, indices_are_sorted, unique_indices, mode)

    def max(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
            out_sharding: Any = None) -> Any:
        return self._update(li.scatter_max, values, indices_are_sorted, unique_indices, mode)


    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
               out_sharding: Any = None) -> Any:
        """``x / d`` where ``d`` is 1 except at the indexed places, which hold the
        product of their updates (so ints divide into floats, as jnp.divide)."""
        divisor = _scatter_update(creation.ones_like(self.array), self.index, values,
                                  li.scatter_mul, indices_are_sorted=indices_are_sorted,
                                  unique_indices=unique_indices, mode=mode)
        return jnp_math.divide(self.array, divisor)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
              out_sharding: Any = None) -> Any:
        exponent = _scatter_update(creation.ones_like(self.array), self.index, values,
                                   li.scatter_mul, indices_are_sorted=indices_are_sorted,
                                   unique_indices=unique_indices, mode=mode)
        return jnp_math.power(self.array, exponent)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        """``func`` applied at the indexed places, once per time a place is
        indexed: one scatter whose update computation is ``func`` (JAX's
        ``scatter_apply``), its updates unused zeros of the indexed shape."""
        def scatter_apply(x: Any, indices: Any, y: Any, dims: ScatterDimensionNumbers,
                          **kwargs: Any) -> Any:
            return li.scatter_apply(x, indices, func, dims,
                                    update_shape=canonical_aval_of(y).shape, **kwargs)
        return _scatter_update(self.array, self.index, L.full_like(self.array, 0, shape=()),
                               scatter_apply, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)


class _IndexUpdateHelper:
    """The object ``x.at`` returns; ``x.at[idx]`` makes an ``_IndexUpdateRef``."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# ================================================================== take


def take(a: Any, indices: Any, axis: int | None = None, out: None = None,
         mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """``jnp.take``: one gather along ``axis`` (of ``a.ravel()`` when None),
    staged as JAX stages it, a ``jit`` named ``_take``.

    mode None/"fill": negative indices wrap once (a jitted ``where``),
    out-of-bounds ones fill; "clip": clamp (negative indices are NOT
    wrapped)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    # The axis is an operator.index integer before it becomes a static argument.
    axis = None if axis is None else static_int(axis, "axis")
    return _take(a, indices, axis=axis, mode=mode, unique_indices=unique_indices,
                 indices_are_sorted=indices_are_sorted, fill_value=fill_value)


def _take_fn(a: Any, indices: Any, axis: int | None, mode: str | None, unique_indices: bool,
             indices_are_sorted: bool, fill_value: Any) -> Any:
    check_arraylike("take", a, indices)
    if axis is None:
        a = L.reshape(a, (canonical_aval_of(a).size,))
        axis = 0
    shape = canonical_aval_of(a).shape
    axis = canonical_axis(axis, len(shape))
    if mode is None or mode == "fill":
        gmode = GatherScatterMode.FILL_OR_DROP
        indices = _wrap_negative(indices, shape[axis])
    elif mode == "clip":
        gmode = GatherScatterMode.CLIP
    elif mode in ("raise", "wrap"):
        raise NotImplementedError(f"The {mode!r} mode to jnp.take is not supported.")
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    ishape = canonical_aval_of(indices).shape
    sizes = list(shape)
    if sizes[axis] == 0:
        if 0 not in ishape and ishape != ():
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return a
    sizes[axis] = 1
    nd = len(ishape)
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + nd, len(shape) + nd - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    return li.gather(a, _expand_dims(indices, (nd,)), dnums, tuple(sizes), mode=gmode,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      fill_value=fill_value)


_take = _jit("_take", _take_fn,
             ("axis", "mode", "unique_indices", "indices_are_sorted", "fill_value"))


def _wrap_negative(indices: Any, size: int) -> Any:
    """Negative indices count from the end, through the jitted ``where``."""
    dt = _dtype_of(indices)
    if T.is_unsigned_int(dt):
        return indices
    work = T.default_int() if dt == T.bool_ else dt

    def promoted() -> Any:
        # Boolean indices meet the integer constants as JAX promotes them: each
        # comparison or sum converts them to the weak default integer.
        return _convert_element_type(indices, work, True) if dt == T.bool_ else indices
    negative = ew.lt(promoted(), _concrete(np.asarray(0), work, True))
    wrapped = ew.add(promoted(), _concrete(np.asarray(size), work, True))
    return _where(negative, wrapped, indices)


# ======================================================== take_along_axis


def _take_along_axis_fn(arr: Any, indices: Any, axis: int | None, mode: Any = None,
                        fill_value: Any = None) -> Any:
    check_arraylike("take_along_axis", arr, indices)
    a, idx = _asarray(arr), _asarray(indices)
    idx_aval = canonical_aval_of(idx)
    if not T.is_int(idx_aval.dtype):
        raise TypeError("take_along_axis indices must be of integer type, got "
                        f"{idx_aval.dtype}")
    if axis is None:
        if idx_aval.ndim != 1:
            raise ValueError("take_along_axis indices must be 1D if axis=None, got shape "
                             f"{idx_aval.shape}")
        a = L.reshape(a, (canonical_aval_of(a).size,))
        axis = 0
    shape = canonical_aval_of(a).shape
    rank = len(shape)
    if rank != idx_aval.ndim:
        raise ValueError("indices and arr must have the same number of dimensions; "
                         f"{idx_aval.ndim} vs. {rank}")
    ax = _canonical_axis(axis, rank)
    arr_shape = tuple(1 if d == ax else n for d, n in enumerate(shape))
    try:
        out_shape = tuple(int(d) for d in np.broadcast_shapes(idx_aval.shape, arr_shape))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                         f"{[idx_aval.shape, arr_shape]}") from None
    if shape[ax] == 0:
        return L.full(out_shape, 0, canonical_aval_of(a).dtype)
    index_dtype = T.int64 if shape[ax] > np.iinfo(np.int32).max else T.int32
    if idx_aval.dtype != index_dtype:
        idx = _convert_element_type(idx, index_dtype, False)
    idx = _normalize(idx, shape[ax])
    return _gather_along_axis(a, idx, ax, out_shape, mode, fill_value)


def _gather_along_axis(a: Any, idx: Any, ax: int, out_shape: tuple[int, ...], mode: Any,
                       fill_value: Any) -> Any:
    """One gather of ``a`` at ``idx`` along ``ax``: an index axis of size 1
    takes the whole operand axis (an offset axis), an operand axis of size 1
    facing a longer index axis is squeezed away, and equal axes are batching
    axes of the operand and the indices (no iota grid)."""
    shape = canonical_aval_of(a).shape
    idx_shape = canonical_aval_of(idx).shape
    index_dims = [d for d, n in enumerate(idx_shape) if d == ax or n != 1]
    gather_idx = L.reshape(idx, tuple(out_shape[d] for d in index_dims) + (1,))
    slice_sizes: list[int] = []
    offset_dims: list[int] = []
    squeezed: list[int] = []
    batch_operand: list[int] = []
    batch_index: list[int] = []
    kept = j = 0  # axis of the squeezed operand; axis of the gather indices
    for d in range(len(shape)):
        if d == ax:
            slice_sizes.append(1)
            axis_kept = kept
            kept += 1
            j += 1
        elif idx_shape[d] == 1:
            offset_dims.append(d)
            slice_sizes.append(shape[d])
            kept += 1
        elif shape[d] == 1:
            squeezed.append(d)
            j += 1
        else:
            slice_sizes.append(1)
            batch_operand.append(kept)
            batch_index.append(j)
            kept += 1
            j += 1
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(offset_dims), collapsed_slice_dims=(axis_kept,),
        start_index_map=(axis_kept,), operand_batching_dims=tuple(batch_operand),
        start_indices_batching_dims=tuple(batch_index))
    return li.gather(L.squeeze(a, squeezed), gather_idx, dnums, tuple(slice_sizes),
                     mode="fill" if mode is None else mode, fill_value=fill_value)


def _canonical_axis(axis: Any, ndim: int) -> int:
    return canonical_axis(axis, ndim)


_take_along_axis = _jit("take_along_axis", _take_along_axis_fn, ("axis", "mode", "fill_value"))


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: Any = None,
                    fill_value: Any = None) -> Any:
    """``arr`` gathered at ``indices`` along ``axis``; negative indices wrap
    once and out-of-bounds ones give ``fill_value`` (NaN for inexact types),
    unless mode="clip". Staged as a ``jit`` named ``take_along_axis``, as
    JAX; values match JAX, the gather inside is built differently."""
    check_arraylike("take_along_axis", arr, indices)
    return _take_along_axis(arr, indices, axis=axis, mode=mode, fill_value=fill_value)


# ============================================================ nonzero & co


def _nonzero_dtype(fill_value: Any) -> T.DType:
    leaves = tu.tree_leaves(fill_value)
    return T.result_type_and_weak(np.zeros((), T.default_int()), *leaves)[0]


def _fill_per_dim(fill_value: Any, nd: int) -> list[Any]:
    if fill_value is None:
        return [0] * nd
    if np.ndim(fill_value) == 0 and not isinstance(fill_value, (tuple, list)):
        return [fill_value] * nd
    fills = list(fill_value)
    if len(fills) != nd:
        raise ValueError(f"fill_value must be a scalar or a tuple of length {nd}; got "
                         f"{fill_value}")
    return fills


def _traced_count(arr: Tracer, aval: Any) -> int:
    """The number of nonzero entries of a traced ``arr``, counted by jnp
    operations as JAX counts them (the comparison is a staged function that
    autodiff records): known only when the tracer's value is (an autodiff
    tracer of a concrete primal)."""
    mask = arr if aval.dtype == T.bool_ else jnp_math.not_equal(arr, 0)
    count = reductions.sum(mask)
    known = to_concrete_value(count) if isinstance(count, Tracer) else count
    if known is None:
        raise ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: traced "
            f"array with shape {canonical_aval_of(count).str_short()}\n"
            "The size argument of jnp.nonzero must be statically specified to use "
            "jnp.nonzero within JAX transformations.")
    return int(np.asarray(known))


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Any, ...]:
    """Indices of the non-zero entries, one int array per axis. Without
    ``size`` the input must be concrete; with it the result is truncated or
    padded with ``fill_value`` (0 by default) to ``size`` entries."""
    check_arraylike("nonzero", a)
    arr = _asarray(a)
    aval = canonical_aval_of(arr)
    if aval.ndim == 0:  # (before the size is read, as in JAX)
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "jnp.atleast_1d(scalar).nonzero() instead.")
    size = None if size is None else static_int(size, "size argument of jnp.nonzero")
    if size is None and isinstance(arr, Tracer):
        size = _traced_count(arr, aval)
    dtype = _nonzero_dtype(fill_value)
    fills = _fill_per_dim(fill_value, aval.ndim)
    if aval.size == 0:
        fills = [0] * aval.ndim  # JAX ignores fill_value for an empty input
    if isinstance(arr, Tracer) or any(isinstance(f, Tracer) for f in fills):
        # Staged, nonzero is JAX's Nonzero hijax primitive, given the fill
        # values only when the caller gives them.
        fill_arrays = [] if fill_value is None else [L.convert_element_type(
            _asarray(f), dtype) for f in fills]
        return jnp_hijax.nonzero(arr, *fill_arrays, size=int(size),  # type: ignore[arg-type]
                                 dtype=dtype)
    coords = np.nonzero(np.asarray(arr))
    n = len(coords[0]) if size is None else int(size)
    out = []
    for c, f in zip(coords, fills):
        col = np.full(n, np.asarray(f).astype(dtype), dtype=dtype)
        k = min(n, len(c))
        col[:k] = c[:k]
        out.append(_concrete(col, dtype, False))
    return tuple(out)


def _where_one_arg(condition: Any, size: int | None = None, fill_value: Any = None
                   ) -> tuple[Any, ...]:
    """``jnp.where(condition)``: the same as ``jnp.nonzero(condition)``."""
    check_arraylike("where", condition)
    return nonzero(condition, size=size, fill_value=fill_value)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """One row of indices per non-zero entry: shape (count, a.ndim)."""
    check_arraylike("argwhere", a)
    nd = canonical_aval_of(_asarray(a)).ndim
    result = jnp_shape.transpose(jnp_shape.vstack(nonzero(jnp_shape.atleast_1d(a), size=size,
                                              fill_value=fill_value)))
    rows = canonical_aval_of(result).shape[0]
    if nd == 0:
        return result[:0].reshape(rows, 0)
    return result.reshape(rows, nd)


# ============================================================ diagonal / diag


def _diagonal_fn(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    shape = canonical_aval_of(a).shape
    nd = len(shape)
    if nd < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    a1, a2 = _canonical_axis(axis1, nd), _canonical_axis(axis2, nd)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")

    def gathered(a: Any) -> Any:
        moved = jnp_shape.moveaxis(a, (a1, a2), (-2, -1))
        n = max(0, min(shape[a1] + min(offset, 0), shape[a2] - max(offset, 0)))
        i = creation.arange(n)
        j = creation.arange(abs(offset), abs(offset) + n)
        return moved[..., i, j] if offset >= 0 else moved[..., j, i]

    # JAX stages a square matrix's main diagonal as platform-dependent: a
    # masked column sum on TPU kernels (Mosaic), the gather elsewhere.
    if shape[0] != shape[1] or nd != 2 or offset != 0 or canonical_aval_of(a).dtype == T.bool_:
        return gathered(a)
    eye = creation.eye(shape[0], dtype=canonical_aval_of(a).dtype)

    def masked_sum(a: Any) -> Any:
        return lr.reduce_sum(ew.mul(eye, a), (0,))

    return platform_dependent(a, default=gathered, mosaic=masked_sum)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset``-th diagonal of the (axis1, axis2) planes, as the last axis."""

    check_arraylike("diagonal", a)
    if isinstance(offset, Tracer):
        raise ConcretizationTypeError("Abstract tracer value encountered where concrete "
                                      "value is expected: 'offset' argument of "
                                      "jnp.diagonal()")
    return _jit_named("diagonal", _diagonal_fn, ("offset", "axis1", "axis2"))(
        _asarray(a), offset=operator.index(offset), axis1=axis1, axis2=axis2)


def _diag_fn(v: Any, k: int = 0) -> Any:
    shape = canonical_aval_of(v).shape
    if len(shape) == 1:
        zero = L.full_like(v, 0, shape=())
        n = shape[0] + abs(k)
        v = slicing.pad(v, zero, ((max(0, -k), max(0, k), 0),))
        return jnp_math._where(creation.eye(n, k=k, dtype=bool), v[:, None], zero)
    if len(shape) == 2:
        return diagonal(v, offset=k)
    raise ValueError("diag input must be 1d or 2d")


def diag(v: Any, k: int = 0) -> Any:
    """A 1-D input becomes a matrix with it on diagonal ``k``; a 2-D input
    gives its ``k``-th diagonal."""

    check_arraylike("diag", v)
    return _jit_named("_diag", _diag_fn, ("k",))(_asarray(v), k=operator.index(k))


_JITS: dict[str, Callable[..., Any]] = {}


def _jit_named(name: str, fn: Callable[..., Any], statics: tuple[str, ...]
               ) -> Callable[..., Any]:
    """One persistent jitted function per name (a visible ``jit`` named as JAX's)."""
    if name not in _JITS:
        fn.__name__ = fn.__qualname__ = name
        _JITS[name] = jit(fn, static_argnames=statics)
    return _JITS[name]


# ======================================================== array methods


def _getitem_method(self: Any, idx: Any) -> Any:
    return getitem(self, idx)


def _at_property(self: Any) -> _IndexUpdateHelper:
    return _IndexUpdateHelper(self)


def _nonzero_method(self: Any, *, size: int | None = None, fill_value: Any = None
                    ) -> tuple[Any, ...]:
    return nonzero(self, size=size, fill_value=fill_value)


def _diagonal_method(self: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return diagonal(self, offset, axis1, axis2)


def _install_array_methods() -> None:
    for cls in (Array, Tracer):
        setattr(cls, "__getitem__", _getitem_method)
        setattr(cls, "at", property(_at_property))
        setattr(cls, "nonzero", _nonzero_method)
        setattr(cls, "diagonal", _diagonal_method)


_install_array_methods()


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: Any = None,
          fill_value: Any = None) -> Any:
    """``x`` where ``condition`` else ``y`` (promoted, broadcast): a select_n.
    With only ``condition``, the indices of its nonzero elements."""
    if x is None and y is None:
        return _where_one_arg(condition, size=size, fill_value=fill_value)
    # The operands are checked first, as in JAX; a missing x or y (None) is one of them.
    check_arraylike("where", condition, x, y)
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    return _where(condition, x, y)


def indices(dimensions: Sequence[int], dtype: Any = None,
            sparse: bool = False) -> Any:
    dt = T.to_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(_index(d, "dimensions argument of jnp.indices") for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(L.broadcast_in_dim(L.iota(dt, d), shape, (i,)))
    if sparse:
        return tuple(out)
    return jnp_shape.stack(out, 0) if out else creation.array([], dtype=dt)


def _triu_size(n: int, m: int, k: int) -> int:
    """How many (i, j) in an n x m grid have j - i >= k."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    if k >= m:
        return 0
    mk = builtins.min(n, m - k)
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def _tri_indices(name: str, n: Any, k: Any, m: Any, lower: bool) -> tuple[Any, Any]:
    n = _index(n, f"n argument of jnp.{name}")
    k = _index(k, f"k argument of jnp.{name}")
    m = n if m is None else _index(m, f"m argument of jnp.{name}")
    if lower:
        mask, size = jnp_shape.tril(creation.ones((n, m)), k=k), _triu_size(m, n, -k)
    else:
        mask, size = jnp_shape.triu(creation.ones((n, m)), k=k), _triu_size(n, m, k)
    i, j = nonzero(mask, size=size)
    return i, j


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return _tri_indices("triu_indices", n, k, m, False)


def _shape_2d(name: str, arr: Any) -> tuple[int, ...]:
    if hasattr(arr, "shape"):
        shape = tuple(arr.shape)
    else:
        shape = _shape(_ensure(name, arr))
    if len(shape) != 2:
        raise ValueError(f"{name}: only 2-D inputs are accepted, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    s = _shape_2d("tril_indices_from", arr)
    return tril_indices(s[0], k=k, m=s[1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    s = _shape_2d("triu_indices_from", arr)
    return triu_indices(s[0], k=k, m=s[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    n = _index(n, "'n' argument of jnp.diag_indices()")
    ndim = _index(ndim, "'ndim' argument of jnp.diag_indices()")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    # The smallest signed type that holds n, but never narrower than the default int.
    dt = T.default_int() if n <= np.iinfo(np.int32).max else T.int64
    return (L.iota(dt, n),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    a = _ensure("diag_indices_from", arr)
    nd = util._ndim(a)
    if nd < 2:
        raise ValueError(f"input array must be at least 2-d, got shape {_shape(a)}")
    if len(set(_shape(a))) != 1:
        raise ValueError(f"All dimensions of input must be of equal length, got {_shape(a)}")
    return diag_indices(_shape(a)[0], ndim=nd)


def ix_(*args: Any) -> tuple[Any, ...]:
    check_arraylike("ix", *args)
    arrs = [L.asarray(a) for a in args]
    n = len(arrs)
    out = []
    for i, a in enumerate(arrs):
        if util._ndim(a) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{_shape(a)}")
        if _dtype(a) == T.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = _shape(a)[0]
        if shape[i] == 0:
            out.append(L.full(tuple(shape), 0, T.canonicalize_dtype(np.dtype(np.intp))))
        else:
            out.append(L.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:
    i, j = nonzero(mask_func(creation.ones((n, n)), k), size=size)
    return i, j


# NumPy's index-expression builders; JAX re-exports the very same objects.
index_exp = np.index_exp


s_ = np.s_


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    conds = [creation.asarray(c) for c in condlist]
    choices = util._promote(creation.asarray(default), *[creation.asarray(c) for c in choicelist])
    # The first true condition wins; index 0 (the default) where none holds.
    stacked = jnp_shape.stack(jnp_shape.broadcast_arrays(False, *conds))
    idx = reductions.argmax(jnp_shape.astype(stacked, bool), axis=0)
    return ew.select_n(*jnp_shape.broadcast_arrays(idx, *choices))


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    items = [a, *choices]
    check_arraylike("choose", *items)
    idx, *opts = [L.asarray(v) for v in items]
    if not T.is_int(_dtype(idx)):
        raise ValueError(f"`a` array must be integer typed, got {_dtype(idx).name}")
    n = len(opts)
    if mode == "raise":
        value = util._concrete(idx, "jnp.choose was jit-compiled with mode='raise'. Use "
                          "mode='wrap' or mode='clip' instead.")
        if np.any((value < 0) | (value >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = jnp_math.clip(idx, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    idx, *opts = jnp_shape.broadcast_arrays(idx, *opts)
    return creation.array(opts)[(idx, *indices(_shape(idx), sparse=True))]


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    check_arraylike("compress", condition, a, fill_value)
    cond = jnp_shape.astype(L.asarray(condition), bool)
    arr = L.asarray(a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    if util._ndim(cond) != 1:
        raise ValueError(f"condition must be a 1D array, got shape {_shape(cond)}")
    if axis is None:
        axis = 0
        arr = jnp_shape.ravel(arr)
    else:
        arr = jnp_shape.moveaxis(arr, axis, 0)
    n = _shape(arr)[0]
    cond, extra = cond[:n], cond[n:]
    arr = arr[:_shape(cond)[0]]
    if size is None:
        msg = ("The size argument of jnp.compress must be specified in order to use "
               "jnp.compress within JAX transformations like jax.jit.")
        c = util._concrete(cond, msg)
        if util._concrete(extra, msg).any():
            raise ValueError("condition contains entries that are out of bounds")
        result = arr[c]
    elif not 0 <= size <= _shape(arr)[0]:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={_shape(arr)[0]}")
    else:
        mask = L.expand_dims(cond, tuple(range(1, util._ndim(arr))))
        arr = jnp_math._where(mask, arr, creation.array(fill_value, dtype=_dtype(arr)))
        result = arr[reductions.argsort(cond, stable=True, descending=True)][:size]
    return jnp_shape.moveaxis(result, 0, axis)


def _put_along_axis_fn(arr: Any, indices: Any, values: Any, axis: int | None,
                       mode: str | None = None) -> Any:
    shape = _shape(arr)
    if axis is None:
        arr = jnp_shape.ravel(arr)
        ax = 0
    else:
        ax = canonicalize_axis(axis, util._ndim(arr))
    if util._ndim(arr) != util._ndim(indices):
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={util._ndim(arr)} and indices.ndim={util._ndim(indices)}.")
    try:
        values = jnp_shape.broadcast_to(values, _shape(indices))
    except (ValueError, TypeError):
        raise ValueError("put_along_axis argument 'values' must be broadcastable to "
                         f"'indices'. Got values.shape={_shape(values)} and "
                         f"indices.shape={_shape(indices)}.") from None
    # Index every other axis by its own (broadcast) position.
    idx = []
    for d in range(util._ndim(arr)):
        if d == ax:
            idx.append(indices)
        else:
            s = [1] * util._ndim(arr)
            s[d] = _shape(indices)[d]
            idx.append(jnp_shape.reshape(creation.arange(_shape(indices)[d]), tuple(s)))
    out = arr.at[tuple(idx)].set(values, mode=mode)
    return jnp_shape.reshape(out, shape) if axis is None else out


_put_along_axis = _jit("put_along_axis", _put_along_axis_fn, ("axis", "mode"))


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True,
                   *, mode: str | None = None) -> Any:
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                         "arrays are immutable. Pass inplace=False to instead return an "
                         "updated array.")
    a, i, v = _ensure("put_along_axis", arr, indices, values)
    return _put_along_axis(a, i, v, axis=axis, mode=mode)


def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    idx = _ensure("unravel_index", indices)
    try:
        dims = list(shape)
    except TypeError:
        dims = [shape]
    if any(np.ndim(s) != 0 for s in dims):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    out: list[Any] = [0] * len(dims)
    for i, s in reversed(list(enumerate(dims))):
        idx, out[i] = jnp_math.divmod(idx, s)
    oob_pos = idx > 0
    oob_neg = creation.asarray(False) if T.is_unsigned_int(_dtype(idx)) else idx < -1
    # Out-of-range flat indices clip to the last (or first) position, as JAX.
    return tuple(jnp_math._where(oob_pos, s - 1, jnp_math._where(oob_neg, 0, i))
                 for s, i in zip(dims, out))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                         f"len(dims)={len(dims)}")
    dims_t = tuple(_index(d, "in `dims` argument of ravel_multi_index().") for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    idx = [L.asarray(i) for i in multi_index]
    if dtype is None:
        dt = T.result_type_and_weak(int, *idx)[0]
    else:
        dt = T.to_dtype(dtype, "ravel_multi_index")
    if not T.is_int(dt):
        raise ValueError(f"dtype={dt} is not an integer type.")
    if math.prod(dims_t) - 1 > np.iinfo(dt).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dt} not large enough to hold "
                         f"flattened index for dims={dims_t}.")
    for i in idx:
        if mode == "raise":
            util._concrete(i, "ravel_multi_index was jit-compiled with mode='raise'. Use "
                      "mode='wrap' or mode='clip' instead.")
        if not T.is_int(_dtype(i)):
            raise TypeError(f"only int indices permitted, got {_dtype(i).name}")
    if mode == "raise":
        if any(np.any((util._concrete(i, "") < 0) | (util._concrete(i, "") >= d))
               for i, d in zip(idx, dims_t)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [jnp_math.clip(i, 0, d - 1) for i, d in zip(idx, dims_t)]
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims_t)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         "'ignore'.")
    if order == "F":
        strides = np.cumprod((1,) + dims_t[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims_t[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = creation.array(0, dtype=dt)
    for i, s in zip(idx, strides):
        result = result + jnp_shape.astype(i, dt) * int(s)
    return result


class _AxisConcat:
    """r_/c_: concatenate slices, arrays and scalars along an axis."""
    axis: int = 0
    ndmin: int = 1
    trans1d: int = -1
    op_name: str = "r_"

    def __getitem__(self, key: Any) -> Any:
        items: tuple[Any, ...] = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec: list[Any] = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.op_name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")  # noqa: TRY004 (JAX raises ValueError)
            else:
                obj = creation.array(item, copy=False)
                item_ndim = util._ndim(obj)
            obj = creation.array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # The item's own axes go where trans1d says among the ndmin axes.
                shift = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
                order = tuple(range(ndmin))
                obj = jnp_shape.transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        res = jnp_shape.concatenate(tuple(out), axis=axis)
        if matrix != -1 and util._ndim(res) == 1:
            res = jnp_shape.expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0


class _RClass(_AxisConcat):
    pass


class _CClass(_AxisConcat):
    axis = -1
    ndmin = 2
    trans1d = 0
    op_name = "c_"


r_ = _RClass()


c_ = _CClass()


# ================================================================ put / place
# NumPy's in-place updates, returning the updated copy; ``inplace=False`` must
# be passed as the reminder JAX asks for.

def _tile_to_size(arr: Any, size: int) -> Any:
    """A 1-d ``arr`` repeated whole as often as needed, then cut to ``size``."""
    n = util._aval(arr).size
    if n < size:
        arr = slicing.tile(arr, (-(-size // n),))
    return arr[:size] if util._aval(arr).size > size else arr


def _refuse_inplace(name: str) -> None:
    raise ValueError(
        f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays are immutable. "
        "Pass inplace=False to instead return an updated array.")


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """``arr`` with its entries where ``mask`` is true (in flat order) taken
    from ``vals``, which is repeated or cut to the number of true entries."""
    data, mask_arr, vals_arr = _ensure("place", arr, mask, vals)
    vals_arr = ravel(vals_arr)
    if inplace:
        _refuse_inplace("place")
    size = util._aval(data).size
    if size != util._aval(mask_arr).size:
        raise ValueError("place: arr and mask must be the same size")
    if not util._aval(vals_arr).size:
        raise ValueError("Cannot place values from an empty array")
    if not size:
        return data
    # Every masked position, padded with an out-of-range index the scatter drops.
    msize = util._aval(mask_arr).size
    indices = where(ravel(mask_arr), size=msize, fill_value=msize)[0]
    vals_arr = _tile_to_size(vals_arr, msize)
    return ravel(data).at[indices].set(vals_arr, mode="drop").reshape(_shape(data))


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """``a`` with the entries at flat indices ``ind`` set from ``v`` (repeated
    or cut to ``ind``'s size). ``mode``: None drops out-of-range indices,
    ``"clip"`` clips them to the ends, ``"wrap"`` takes them modulo the size."""
    if inplace:
        _refuse_inplace("put")
    arr, ind_arr, _ = _ensure("put", a, ind, v)
    ind_arr = ravel(ind_arr)
    v_arr = ravel(v)
    size = util._aval(arr).size
    if not size or not util._aval(ind_arr).size or not util._aval(v_arr).size:
        return arr
    v_arr = _tile_to_size(v_arr, util._aval(ind_arr).size)
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind_arr = jnp_math.clip(ind_arr, 0, size - 1)
        scatter_mode = "promise_in_bounds"
    elif mode == "wrap":
        ind_arr = ind_arr % size
        scatter_mode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return arr.at[unravel_index(ind_arr, _shape(arr))].set(v_arr, mode=scatter_mode)
