"""Structural primitives: dtype conversion, broadcasting, reshaping, slicing."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import types as T
from spec.interpreter import pp_hiding
from spec.rules._registry import declare, require
from spec.types import ArrayType


def _convert_type(x: ArrayType, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[ArrayType]:
    require(T.is_valid_dtype(new_dtype), "convert_element_type", "C1",
            f"new_dtype {new_dtype} is not a JAX dtype")
    return [ArrayType(x.shape, new_dtype, weak_type)]


def _convert_impl(x: np.ndarray, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        if T.is_complex(x.dtype) and not T.is_complex(new_dtype):
            x = x.real  # complex -> real keeps the real part, as XLA does
        return [x.astype(new_dtype)]


convert_element_type_p = declare(
    "convert_element_type", typing=_convert_type, impl=_convert_impl,
    pp_rule=pp_hiding("sharding"))


def _broadcast_in_dim_type(x: ArrayType, *, shape: T.Shape, broadcast_dimensions: T.Shape,
                           sharding: Any = None) -> list[ArrayType]:
    name = "broadcast_in_dim"
    require(len(broadcast_dimensions) == x.ndim, name, "C1",
            f"broadcast_dimensions {broadcast_dimensions} must have one entry per operand "
            f"axis, operand has rank {x.ndim}")
    require(all(0 <= d < len(shape) for d in broadcast_dimensions), name, "C2",
            f"broadcast_dimensions {broadcast_dimensions} must be axes of the result shape "
            f"{shape}")
    require(all(a < b for a, b in zip(broadcast_dimensions, broadcast_dimensions[1:])), name,
            "C3", f"broadcast_dimensions {broadcast_dimensions} must be strictly increasing")
    for axis, d in enumerate(broadcast_dimensions):
        require(x.shape[axis] in (1, shape[d]), name, "C4",
                f"operand axis {axis} has size {x.shape[axis]}, which cannot broadcast to "
                f"result axis {d} of size {shape[d]} (sizes must match or be 1)")
    return [ArrayType(tuple(shape), x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x: np.ndarray, *, shape: T.Shape, broadcast_dimensions: T.Shape,
                           sharding: Any = None) -> list[np.ndarray]:
    expanded = [1] * len(shape)
    for axis, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[axis]
    return [np.broadcast_to(x.reshape(expanded), shape)]


def _pp_broadcast_in_dim(eqn: Any, ctx: Any) -> Any:
    from spec.interpreter import pp_eqn_default
    params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
    if not params.get("broadcast_dimensions"):
        params.pop("broadcast_dimensions", None)
    return pp_eqn_default(eqn, ctx, params)


broadcast_in_dim_p = declare(
    "broadcast_in_dim", typing=_broadcast_in_dim_type, impl=_broadcast_in_dim_impl,
    pp_rule=_pp_broadcast_in_dim)
