"""lax wrappers for gather and scatter, with JAX's signatures."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core import types as T
from spec._src.core.interpreter import Jaxpr, canonical_aval_of, trace_to_jaxpr
from spec._src.lax.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
    scatter_sub_p,
)

__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "gather",
    "scatter", "scatter_add", "scatter_max", "scatter_min", "scatter_mul", "scatter_sub",
]


def _default_fill_value(dtype: T.DType) -> Any:
    """The fill of an out-of-bounds FILL_OR_DROP gather, as a Python scalar."""
    import numpy as np
    if T.is_inexact(dtype):
        return np.nan
    if T.is_signed_int(dtype):
        return int(np.iinfo(dtype).min)
    if T.is_unsigned_int(dtype):
        return int(np.iinfo(dtype).max)
    return True


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """Gather windows of ``slice_sizes`` from ``operand`` at ``start_indices``.

    ``mode`` None means PROMISE_IN_BOUNDS; ``fill_value`` only matters for
    FILL_OR_DROP and defaults to NaN / the int minimum / uint maximum / True.
    """
    parsed = GatherScatterMode.from_any(
        GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill_value(canonical_aval_of(operand).dtype)
    else:
        fill_value = None
    sizes = tuple(operator.index(s) for s in slice_sizes)
    return gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
                         slice_sizes=sizes, unique_indices=bool(unique_indices),
                         indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                         fill_value=fill_value)


_UPDATE_JAXPRS: dict[tuple[str, T.DType], Jaxpr] = {}


def _update_jaxpr(op_name: str, dtype: T.DType) -> Jaxpr | None:
    """The scalar combiner ``op(a, b)`` on ``dtype`` as a jaxpr (cached, as JAX
    caches it, so two scatters of one kind share one jaxpr object)."""
    known = _UPDATE_JAXPRS.get((op_name, dtype))
    if known is not None:
        return known
    from spec import lax
    fn: Callable[[Any, Any], Any] | None = getattr(lax, op_name, None)
    if fn is None:  # the combiner's lax function has not landed yet
        return None
    scalar = T.ArrayType((), dtype, False)
    jaxpr, _ = trace_to_jaxpr(lambda a, b: [fn(a, b)], [scalar, scalar])
    _UPDATE_JAXPRS[(op_name, dtype)] = jaxpr
    return jaxpr


def _scatter(prim: Any, op_name: str | None, operand: Any, scatter_indices: Any,
             updates: Any, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool,
             mode: str | GatherScatterMode | None) -> Any:
    jaxpr = None
    if op_name is not None:
        jaxpr = _update_jaxpr(op_name, canonical_aval_of(operand).dtype)
    return prim.bind(operand, scatter_indices, updates, update_jaxpr=jaxpr, update_consts=(),
                     dimension_numbers=dimension_numbers,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                     mode=GatherScatterMode.from_any(mode))


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Replace windows of ``operand`` by ``updates`` (last duplicate wins)."""
    return _scatter(scatter_p, None, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_add_p, "add", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_sub_p, "sub", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_mul_p, "mul", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_min_p, "min", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_max_p, "max", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)
