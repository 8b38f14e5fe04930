"""Reductions, arg-reductions, cumulative reductions and sort.

Constraint numbering (cited in error messages, see notes/spec/reductions_dot.md):

- reduce_*:  C1 every axis is in [0, rank); C2 axes are distinct; C3 dtype class.
- argmax/argmin: C1 exactly one axis, in [0, rank); C2 the reduced axis is
  non-empty; C3 index_dtype is an integer type.
- cum*: C1 axis is in [0, rank) (negative axes are rejected); C2 dtype is a number.
- sort: C1 at least one operand; C2 operands share one shape; C3 dimension in
  [0, rank); C4 1 <= num_keys <= number of operands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec import types as T
from spec.rules._elementwise_kit import compute_dtype
from spec.rules._registry import declare, require
from spec.types import ArrayType

Impl = Callable[..., list[np.ndarray]]


# ------------------------------------------------------------------ helpers

# Bad axes raise NumPy's AxisError, which is both a ValueError (what JAX's
# arithmetic reductions raise) and an IndexError (what its logical ones raise).
_AxisError = np.exceptions.AxisError


def _check_axes(name: str, x: ArrayType, axes: tuple[int, ...]) -> None:
    require(len(set(axes)) == len(axes), name, "C2", f"duplicate value in 'axes': {axes}",
            _AxisError)
    for a in axes:
        require(0 <= a < x.ndim, name, "C1", f"axis {a} in axes {axes} is out of bounds for "
                f"operand of type {x}", _AxisError)


def _is_number(dt: T.DType) -> bool:
    return dt != T.bool_


def _reduced_shape(x: ArrayType, axes: tuple[int, ...]) -> T.Shape:
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _reduce_type(name: str, accepts: Callable[[T.DType], bool], accepted: str,
                 keep_weak: bool) -> Any:
    def typing(x: ArrayType, *, axes: tuple[int, ...], **params: Any) -> list[ArrayType]:
        # JAX checks the logical reductions' dtype before their axes, the
        # arithmetic ones' axes first; the order decides which error wins.
        if not keep_weak:
            require(accepts(x.dtype), name, "C3", f"operand dtype {x.dtype.name} is not "
                    f"accepted; accepted dtypes are {accepted}")
        _check_axes(name, x, axes)
        require(accepts(x.dtype), name, "C3", f"operand dtype {x.dtype.name} is not accepted; "
                f"accepted dtypes are {accepted}")
        return [ArrayType(_reduced_shape(x, axes), x.dtype, x.weak_type and keep_weak)]
    return typing


def _lift(x: np.ndarray) -> np.ndarray:
    """Narrow floats are reduced in float32 and rounded once (XLA CPU does
    the same); other dtypes are reduced in their own dtype."""
    cd = compute_dtype(x.dtype)
    return x.astype(cd) if cd != x.dtype else x


def _identity_fill(x: np.ndarray, axes: tuple[int, ...], value: Any) -> np.ndarray:
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return np.full(shape, value, dtype=x.dtype)


def _min_value(dt: T.DType) -> Any:
    if dt == T.bool_:
        return False
    if T.is_int(dt):
        return np.iinfo(dt).min
    return -np.inf


def _max_value(dt: T.DType) -> Any:
    if dt == T.bool_:
        return True
    if T.is_int(dt):
        return np.iinfo(dt).max
    return np.inf


def _empty_reduction(x: np.ndarray, axes: tuple[int, ...]) -> bool:
    return any(x.shape[a] == 0 for a in axes)


# ------------------------------------------------------------ arithmetic

def _reduce_sum_impl(x: np.ndarray, *, axes: tuple[int, ...], out_sharding: Any = None
                     ) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        lx = _lift(x)
        # Integer sums wrap modulo 2**bits, as XLA's do: NumPy sums in the dtype itself.
        return [np.asarray(np.sum(lx, axis=axes, dtype=lx.dtype)).astype(x.dtype)]


def _reduce_prod_impl(x: np.ndarray, *, axes: tuple[int, ...]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        lx = _lift(x)
        return [np.asarray(np.prod(lx, axis=axes, dtype=lx.dtype)).astype(x.dtype)]


def _chooser_impl(fn: Callable[..., Any], identity: Callable[[T.DType], Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...], out_sharding: Any = None
             ) -> list[np.ndarray]:
        if _empty_reduction(x, axes):  # XLA returns the monoid identity
            return [_identity_fill(x, axes, identity(x.dtype))]
        lx = _lift(x)
        with np.errstate(all="ignore"):  # NaN propagates, as in XLA's max/min
            return [np.asarray(fn(lx, axis=axes)).astype(x.dtype)]
    return impl


def _logical_impl(ufunc: np.ufunc, bool_fn: Callable[..., Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...]) -> list[np.ndarray]:
        if x.dtype == T.bool_:
            return [np.asarray(bool_fn(x, axis=axes))]
        # Integers: bitwise reduction; the identity covers empty axes.
        init = x.dtype.type(-1 if ufunc is np.bitwise_and else 0) if T.is_signed_int(x.dtype) \
            else (~x.dtype.type(0) if ufunc is np.bitwise_and else x.dtype.type(0))
        return [np.asarray(ufunc.reduce(x, axis=axes, initial=init)).astype(x.dtype)]
    return impl


def _xor_bool(x: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    return np.asarray(np.logical_xor.reduce(x, axis=axis, initial=False))


_NUMBER = "number types (not bool)"
reduce_sum_p = declare("reduce_sum", typing=_reduce_type("reduce_sum", _is_number, _NUMBER, True),
                       impl=_reduce_sum_impl)
reduce_prod_p = declare("reduce_prod", typing=_reduce_type("reduce_prod", _is_number, _NUMBER,
                                                            True), impl=_reduce_prod_impl)
reduce_max_p = declare("reduce_max", typing=_reduce_type("reduce_max", lambda d: True, "any",
                                                          True),
                       impl=_chooser_impl(np.max, _min_value))
reduce_min_p = declare("reduce_min", typing=_reduce_type("reduce_min", lambda d: True, "any",
                                                          True),
                       impl=_chooser_impl(np.min, _max_value))

_INT_OR_BOOL = "bool or integer types"


def _int_or_bool(dt: T.DType) -> bool:
    return dt == T.bool_ or T.is_int(dt)


reduce_and_p = declare("reduce_and", typing=_reduce_type("reduce_and", _int_or_bool,
                                                          _INT_OR_BOOL, False),
                       impl=_logical_impl(np.bitwise_and, np.all))
reduce_or_p = declare("reduce_or", typing=_reduce_type("reduce_or", _int_or_bool, _INT_OR_BOOL,
                                                        False),
                      impl=_logical_impl(np.bitwise_or, np.any))
reduce_xor_p = declare("reduce_xor", typing=_reduce_type("reduce_xor", _int_or_bool,
                                                          _INT_OR_BOOL, False),
                       impl=_logical_impl(np.bitwise_xor, _xor_bool))


# --------------------------------------------------------- argmax / argmin

def _argminmax_type(name: str) -> Any:
    def typing(x: ArrayType, *, axes: tuple[int, ...], index_dtype: T.DType
               ) -> list[ArrayType]:
        require(len(axes) == 1 and 0 <= axes[0] < x.ndim, name, "C1",
                f"axes must be one axis of the operand, got {axes} for operand of type {x}",
                ValueError)
        (axis,) = axes
        require(x.shape[axis] >= 1, name, "C2", f"the reduced axis {axis} of operand {x} is "
                "empty; argmin and argmax require a non-empty reduced dimension", ValueError)
        require(T.is_int(np.dtype(index_dtype)), name, "C3",
                f"index_dtype must be an integer type, got {np.dtype(index_dtype).name}")
        return [ArrayType(_reduced_shape(x, axes), np.dtype(index_dtype), False)]
    return typing


def _argminmax_impl(fn: Callable[..., Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...], index_dtype: T.DType
             ) -> list[np.ndarray]:
        # NumPy's argmax/argmin already pick the first NaN, else the first
        # extremal element: JAX's comparator gives the same answer.
        if T.is_float(x.dtype) and x.dtype.itemsize < 4:
            x = x.astype(T.float32)  # exact; ml_dtypes floats lack fast arg-reductions
        return [np.asarray(fn(x, axis=axes[0])).astype(index_dtype)]
    return impl


argmax_p = declare("argmax", typing=_argminmax_type("argmax"), impl=_argminmax_impl(np.argmax))
argmin_p = declare("argmin", typing=_argminmax_type("argmin"), impl=_argminmax_impl(np.argmin))


# ----------------------------------------------------- cumulative reductions

def _cum_type(name: str) -> Any:
    def typing(x: ArrayType, *, axis: int, reverse: bool) -> list[ArrayType]:
        require(axis >= 0, name, "C1", f"axis {axis} is negative; the primitive takes a "
                "non-negative axis (lax.cumsum and friends do not wrap negative axes)",
                ValueError)
        require(axis < x.ndim, name, "C1", f"axis {axis} is out of bounds for operand of type "
                f"{x}", ValueError)
        require(_is_number(x.dtype), name, "C2", f"operand dtype {x.dtype.name} is not "
                f"accepted; accepted dtypes are {_NUMBER}")
        return [x]
    return typing


def _cum_impl(accumulate: Callable[[np.ndarray, int], np.ndarray]) -> Impl:
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> list[np.ndarray]:
        lx = _lift(x)
        if reverse:
            lx = np.flip(lx, axis)
        with np.errstate(all="ignore"):
            out = np.asarray(accumulate(lx, axis))
        if reverse:
            out = np.flip(out, axis)
        return [np.ascontiguousarray(out).astype(x.dtype)]
    return impl


def _cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumsum(x, axis=axis, dtype=x.dtype)  # ints wrap, as XLA's


def _cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumprod(x, axis=axis, dtype=x.dtype)


def _cummax(x: np.ndarray, axis: int) -> np.ndarray:
    return np.asarray(np.maximum.accumulate(x, axis=axis))


def _cummin(x: np.ndarray, axis: int) -> np.ndarray:
    return np.asarray(np.minimum.accumulate(x, axis=axis))


def _cumlogsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    if not T.is_inexact(x.dtype):
        x = x.astype(T.float64)
    return np.asarray(np.logaddexp.accumulate(x, axis=axis))


cumsum_p = declare("cumsum", typing=_cum_type("cumsum"), impl=_cum_impl(_cumsum))
cumprod_p = declare("cumprod", typing=_cum_type("cumprod"), impl=_cum_impl(_cumprod))
cummax_p = declare("cummax", typing=_cum_type("cummax"), impl=_cum_impl(_cummax))
cummin_p = declare("cummin", typing=_cum_type("cummin"), impl=_cum_impl(_cummin))
cumlogsumexp_p = declare("cumlogsumexp", typing=_cum_type("cumlogsumexp"),
                         impl=_cum_impl(_cumlogsumexp))


# --------------------------------------------------------------------- sort

def _sort_type(*xs: ArrayType, dimension: int, is_stable: bool, num_keys: int
               ) -> list[ArrayType]:
    name = "sort"
    require(len(xs) >= 1, name, "C1", "sort requires at least one operand")
    shapes = [x.shape for x in xs]
    require(all(s == shapes[0] for s in shapes), name, "C2",
            f"operands must have equal shapes, got {' '.join(str(s) for s in shapes)}")
    require(0 <= dimension < len(shapes[0]), name, "C3",
            f"dimension {dimension} is out of bounds for operands of shape {shapes[0]}",
            ValueError)
    require(1 <= num_keys <= len(xs), name, "C4",
            f"num_keys={num_keys} must be between 1 and the number of operands {len(xs)}",
            ValueError)
    return list(xs)


def _float_sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """Keys giving JAX's total order on floats: -0.0 == 0.0, every NaN last
    (and all NaNs equal). Listed most significant first."""
    if T.is_float(x.dtype) and x.dtype.itemsize < 4:
        x = x.astype(T.float32)  # exact widening; preserves the order
    nan = np.isnan(x)
    value = np.where(nan, 0, x) + x.dtype.type(0)  # + 0.0 turns -0.0 into 0.0
    return [nan, value]


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    if T.is_complex(x.dtype):
        return _float_sort_keys(x.real) + _float_sort_keys(x.imag)
    if T.is_float(x.dtype):
        return _float_sort_keys(x)
    return [x]


def _sort_impl(*xs: np.ndarray, dimension: int, is_stable: bool, num_keys: int
               ) -> list[np.ndarray]:
    keys: list[np.ndarray] = []
    for x in xs[:num_keys]:
        keys.extend(_sort_keys(x))
    # np.lexsort is stable and takes its most significant key last.
    perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


sort_p = declare("sort", typing=_sort_type, impl=_sort_impl, multiple_results=True)
