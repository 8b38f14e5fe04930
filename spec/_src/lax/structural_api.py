"""lax wrappers for structural primitives, with JAX's signatures.

The wrappers canonicalise static arguments (shapes, axes, dtypes), skip the
bind where JAX returns its operand unchanged, and otherwise bind exactly one
primitive (or the short sequence JAX emits), so that jaxprs match JAX's.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import host_value
from spec._src.core.interpreter import canonical_aval_of, hooks
from spec._src.lax.elementwise import select_n_p
from spec._src.lax.structural import (
    copy_p,
    concatenate_p,
    dynamic_slice_p,
    dynamic_update_slice_p,
    pad_p,
    rev_p,
    slice_p,
    split_p,
    stack_p,
    tile_p,
    unstack_p,
)
# The conversion and shaping wrappers live with their primitives; they are
# re-exported here with the slicing wrappers, as the one module of structural
# wrappers that spec.numpy and spec.lax import.
from spec._src.lax.shaping import (
    _is_array as _is_array,
    canonicalize_axis as canonicalize_axis,
    _ndim as _ndim,
    _shape as _shape,
    convert_element_type as convert_element_type,
    _convert_element_type as _convert_element_type,
    _NUMPY_CONVERSIONS as _NUMPY_CONVERSIONS,
    _converted_numpy as _converted_numpy,
    asarray as asarray,
    bitcast_convert_type as bitcast_convert_type,
    NotAPlacementError as NotAPlacementError,
    _sharding_is_concrete as _sharding_is_concrete,
    _canonical_out_sharding as _canonical_out_sharding,
    iota as iota,
    broadcasted_iota as broadcasted_iota,
    empty as empty,
    full as full,
    _zeros_of_type as _zeros_of_type,
    _is_concrete_value as _is_concrete_value,
    _filled_on_devices as _filled_on_devices,
    _broadcast_scalar_sharded as _broadcast_scalar_sharded,
    _layout_kept as _layout_kept,
    full_like as full_like,
    like_sharding as like_sharding,
    reduced_like as reduced_like,
    _out_sharding as _out_sharding,
    broadcast_in_dim as broadcast_in_dim,
    broadcast as broadcast,
    broadcast_to_rank as broadcast_to_rank,
    expand_dims as expand_dims,
    reshape as reshape,
    transpose as transpose,
    squeeze as squeeze,
    collapse as collapse,
)


__all__ = [
    "asarray", "bitcast_convert_type", "broadcast", "broadcast_in_dim", "broadcast_to_rank",
    "broadcasted_iota", "collapse", "concatenate", "convert_element_type", "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "empty", "expand_dims", "full",
    "full_like", "index_in_dim", "iota", "pad", "reshape", "rev", "slice", "slice_in_dim",
    "split", "squeeze", "stack", "tile", "transpose", "unstack",
]

_builtin_slice = slice


def _array_copy(x: Any) -> Any:
    return copy_p.bind(x)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    return rev_p.bind(operand, dimensions=tuple(dimensions))


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1 and _is_array(operands[0]):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=operator.index(dimension))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    arrays = [asarray(op) for op in operands]
    if not arrays:
        raise ValueError("stack expects at least one operand, got 0.")
    ax = canonicalize_axis(axis, _ndim(arrays[0]) + 1)
    return stack_p.bind(*arrays, axis=ax)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> Sequence[Any]:
    operand = asarray(operand)
    return split_p.bind(operand, sizes=tuple(sizes),  # type: ignore[no-any-return]
                        axis=canonicalize_axis(axis, _ndim(operand)))


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices along ``axis`` (what iterating over a traced array gives in JAX)."""
    arr = asarray(x)
    return tuple(unstack_p.bind(arr, axis=canonicalize_axis(axis, _ndim(arr))))


hooks.unstack = unstack  # iterating over a tracer (Tracer.__iter__)

def tile(operand: Any, reps: Sequence[int]) -> Any:
    return tile_p.bind(operand, reps=tuple(reps))


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    config = tuple(tuple(operator.index(v) for v in entry) for entry in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# =================================================================== slicing

def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    return slice_p.bind(operand, start_indices=tuple(start_indices),
                        limit_indices=tuple(limit_indices),
                        strides=None if strides is None else tuple(strides))


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    shp = _shape(operand)
    starts, limits, strides = [0] * len(shp), list(shp), [1] * len(shp)
    axis = int(axis)
    size = shp[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = size if limit_index is None else operator.index(limit_index)
    starts[axis] = start + size if start < 0 else start
    limits[axis] = limit + size if limit < 0 else limit
    strides[axis] = operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    index, axis = operator.index(index), int(axis)
    size = _shape(operand)[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


def _dynamic_slice_indices(operand: Any, start_indices: Any,
                           allow_negative: bool | Sequence[bool]) -> list[Any]:
    shp = _shape(operand)
    if not isinstance(start_indices, (list, tuple)):
        idx_aval = canonical_aval_of(start_indices)
        if idx_aval.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {idx_aval.shape}")
        start_indices = list(start_indices)
    if len(start_indices) != len(shp):
        raise ValueError("Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shp})")
    flags = [allow_negative] * len(shp) if isinstance(allow_negative, bool) else list(
        allow_negative)
    out: list[Any] = []
    for i, d, neg in zip(start_indices, shp, flags):
        dt = canonical_aval_of(i).dtype
        if T.is_unsigned_int(dt):
            out.append(i)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            if i < 0 and not neg:
                raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                 "allow_negative_indices=False")
            out.append(_convert_element_type(int(i) + d if i < 0 else i, dt, False))
        elif neg:
            out.append(_wrap_negative(i, d, dt))
        else:
            out.append(i)
    return out


def _wrap_negative(i: Any, d: int, dt: T.DType) -> Any:
    """``select(i < 0, i + d, i)`` as JAX stages it for a dynamic index."""
    d_arr = _convert_element_type(d, dt, False)
    negative = i < 0
    return select_n_p.bind(negative, i, i + d_arr)


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    sizes = T.check_shape(slice_sizes, "dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *idx, slice_sizes=sizes)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idx)


def _zero_like_index(start_index: Any) -> Any:
    """The start index of the untouched axes: 0 of the given index's type."""
    if isinstance(start_index, int) and not isinstance(start_index, bool):
        return 0
    dt = canonical_aval_of(start_index).dtype
    return host_value(np.zeros((), dt), T.ArrayType((), dt, False), "index")


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    shp = _shape(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * len(shp)
    starts[axis] = start_index
    sizes = list(shp)
    sizes[axis] = operator.index(slice_size)
    flags = [False] * len(shp)
    flags[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=flags)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    nd = _ndim(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * nd
    starts[axis] = start_index
    flags = [False] * nd
    flags[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=flags)
