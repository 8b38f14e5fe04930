"""lax wrappers for dot_general and friends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core import types as T
from spec._src.core.config import config
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.dot import PRECISION_STRINGS, DimensionNumbers, Precision, dot_general_p

__all__ = ["Precision", "dot", "dot_general", "batch_matmul", "canonicalize_precision"]

CanonicalPrecision = tuple[Precision, Precision] | None


def canonicalize_precision(precision: Any) -> CanonicalPrecision:
    """A precision spec (None, name, Precision, or a pair of either) as the
    pair of Precision values the primitive records, or None."""
    if precision is None:
        default = config.jax_default_matmul_precision
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, Precision):
        return precision, precision
    if isinstance(precision, str) and precision in PRECISION_STRINGS:
        p = PRECISION_STRINGS[precision]
        return p, p
    if isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return precision[0], precision[1]
        if all(isinstance(p, str) and p in PRECISION_STRINGS for p in precision):
            return PRECISION_STRINGS[precision[0]], PRECISION_STRINGS[precision[1]]
    raise ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(PRECISION_STRINGS)},\n- a lax.Precision value,\n"
        "- a tuple of two lax.Precision values or strings;\n"
        f"but got {precision}.")


def _index_tuple(xs: Any) -> tuple[int, ...]:
    if isinstance(xs, int):
        return (int(xs),)
    return tuple(int(x) for x in xs)


def _canonical_dims(dimension_numbers: Any) -> DimensionNumbers:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general dimension_numbers must be of the form "
                        "((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), got "
                        f"{dimension_numbers!r}") from None
    return ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``dot_general``; without dimension numbers, a vector/matrix product."""
    if dimension_numbers is None:
        ls, rs = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
        if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
            dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
        else:
            raise ValueError(
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={ls} rhs_shape={rs}")
    pet = None if preferred_element_type is None else T.to_dtype(preferred_element_type, "dot")
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canonical_dims(dimension_numbers),
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pet,
                              out_sharding=canonicalize_out_sharding(out_sharding,
                                                                     "dot_general"))


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    return dot(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
               preferred_element_type=preferred_element_type, out_sharding=out_sharding)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Matmul over the last two axes, batching over the leading ones."""
    la, ra = canonical_aval_of(lhs), canonical_aval_of(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise ValueError(f"batch_matmul requires arguments with the same number of "
                         f"dimensions, at least 2, got {la.ndim} and {ra.ndim}")
    batch: Sequence[int] = tuple(range(la.ndim - 2))
    dims = (((la.ndim - 1,), (ra.ndim - 2,)), (tuple(batch), tuple(batch)))
    return dot_general(lhs, rhs, dims, precision=precision)
