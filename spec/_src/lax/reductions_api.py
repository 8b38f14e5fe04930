"""lax wrappers for reductions, arg-reductions, cumulative reductions and sort."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.reductions import (
    argmax_p,
    argmin_p,
    cumlogsumexp_p,
    cummax_p,
    cummin_p,
    cumprod_p,
    cumsum_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_sum_p,
    reduce_precision_p,
    reduce_xor_p,
    sort_p,
    top_k_p,
)

__all__ = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
           "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
           "cumlogsumexp", "sort", "sort_key_val", "top_k", "reduce_precision"]


def _axes(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(a) for a in axes)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_sum_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_sum"))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_max(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_max_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_max"))


def reduce_min(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_min_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_min"))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_or_p.bind(operand, axes=_axes(axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_xor_p.bind(operand, axes=_axes(axes))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along ``axis`` (first NaN, else first maximum)."""
    return argmax_p.bind(operand, axes=(int(axis),),
                         index_dtype=T.to_dtype(index_dtype, "argmax"))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmin_p.bind(operand, axes=(int(axis),),
                         index_dtype=T.to_dtype(index_dtype, "argmin"))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cumsum_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cumprod_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cummax_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cummin_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cumlogsumexp_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def canonicalize_axis(axis: int, ndim: int) -> int:
    """A possibly negative axis as an index in [0, ndim); ValueError otherwise."""
    a = int(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a + ndim if a < 0 else a


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort along ``dimension``: floats in the total order -inf < ... < inf < NaN
    with -0.0 == 0.0; a sequence of operands is sorted by its first ``num_keys``."""
    if isinstance(operand, (list, tuple)):
        if not operand:
            raise TypeError("Sort requires at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise ValueError(f"num_keys={num_keys} must be between 1 and "
                             f"len(operand)={len(operand)}")
        dim = canonicalize_axis(dimension, canonical_aval_of(operand[0]).ndim)
        return tuple(sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable),
                                 num_keys=int(num_keys)))
    if num_keys != 1:
        raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
    dim = canonicalize_axis(dimension, canonical_aval_of(operand).ndim)
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
    dim = canonicalize_axis(dimension, canonical_aval_of(keys).ndim)
    k, v = sort_p.bind(keys, values, dimension=dim, is_stable=bool(is_stable), num_keys=1)
    return k, v


def top_k(operand: Any, k: int, *, axis: int = -1, is_stable: bool = True
          ) -> list[Any]:
    """The ``k`` largest entries along ``axis`` (XLA's total order: NaN above
    inf, 0.0 above -0.0), largest first, and their int32 indices; ties keep
    their input order."""
    k = operator.index(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    dim = canonicalize_axis(axis, canonical_aval_of(operand).ndim)
    values, indices = top_k_p.bind(operand, k=k, axis=dim, is_stable=bool(is_stable))
    return [values, indices]  # a list, as JAX returns


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with the given exponent and mantissa
    widths, keeping its dtype."""
    from spec._src.core.errors import ConcretizationTypeError
    from spec._src.core.interpreter import Tracer
    for name, v in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
        if isinstance(v, Tracer):
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: the "
                f"{name} argument of lax.reduce_precision must be static")
    return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                   mantissa_bits=operator.index(mantissa_bits))
