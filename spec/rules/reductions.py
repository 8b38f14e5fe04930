"""Reductions, arg-reductions, cumulative reductions and sort."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec.rules._registry import declare, require
from spec.types import ArrayType


def _check_axes(name: str, x: ArrayType, axes: tuple[int, ...]) -> None:
    for a in axes:
        require(0 <= a < x.ndim, name, "C1", f"axis {a} is out of bounds for operand of rank "
                f"{x.ndim}", ValueError)
    require(len(set(axes)) == len(axes), name, "C2", f"duplicate value in 'axes': {axes}",
            ValueError)


def _reduce_type(name: str) -> Any:
    def typing(x: ArrayType, *, axes: tuple[int, ...], out_sharding: Any = None
               ) -> list[ArrayType]:
        _check_axes(name, x, axes)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return [ArrayType(shape, x.dtype, x.weak_type)]
    return typing


def _reduce_sum_impl(x: np.ndarray, *, axes: tuple[int, ...], out_sharding: Any = None
                     ) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.asarray(np.sum(x, axis=axes, dtype=x.dtype))]


reduce_sum_p = declare("reduce_sum", typing=_reduce_type("reduce_sum"), impl=_reduce_sum_impl)
