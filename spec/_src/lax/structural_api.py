"""The structural wrappers in one namespace: the conversion and shaping
wrappers (spec._src.lax.shaping) and the slicing ones
(spec._src.lax.structural), for the numpy and api layers."""

from __future__ import annotations

from spec._src.lax.structural import (
    concatenate as concatenate,
    dynamic_slice as dynamic_slice,
    dynamic_slice_in_dim as dynamic_slice_in_dim,
    dynamic_update_slice as dynamic_update_slice,
    dynamic_update_slice_in_dim as dynamic_update_slice_in_dim,
    index_in_dim as index_in_dim,
    pad as pad,
    rev as rev,
    slice as slice,
    slice_in_dim as slice_in_dim,
    split as split,
    stack as stack,
    tile as tile,
    unstack as unstack,
    _array_copy as _array_copy,
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
