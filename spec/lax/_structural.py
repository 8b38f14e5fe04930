"""lax wrappers for structural primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec import types as T
from spec.interpreter import canonical_aval_of
from spec.rules.structural import broadcast_in_dim_p, convert_element_type_p

__all__ = ["broadcast_in_dim", "convert_element_type", "index_in_dim"]


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast to ``new_dtype`` (a strong type)."""
    return _convert_element_type(operand, T.to_dtype(new_dtype, "convert_element_type"), False)


def _convert_element_type(operand: Any, new_dtype: T.DType, weak_type: bool) -> Any:
    aval = canonical_aval_of(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type,
                                       sharding=None)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: Any = None) -> Any:
    shape = T.check_shape(shape, "broadcast_in_dim")
    aval = canonical_aval_of(operand)
    dims = tuple(int(d) for d in broadcast_dimensions)
    if aval.shape == shape and dims == tuple(range(len(shape))) and hasattr(operand, "aval"):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims,
                                   sharding=out_sharding)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    raise NotImplementedError("index_in_dim lands with slice (structural family)")
