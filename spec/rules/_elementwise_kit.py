"""Shared typing and impl helpers for elementwise primitives.

Elementwise operands broadcast only in the restricted lax sense: rank-0
operands stretch to any shape, the others must share a rank and agree per
axis up to size-1 stretching. All operands must have the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec import types as T
from spec.rules._registry import fail
from spec.types import ArrayType

DTypePredicate = Callable[[T.DType], bool]

# Accepted-dtype classes, named as in constraint messages.
NUMBER: tuple[str, DTypePredicate] = ("number", lambda d: d != T.bool_)
INEXACT: tuple[str, DTypePredicate] = ("floating or complex", T.is_inexact)
FLOAT: tuple[str, DTypePredicate] = ("floating", T.is_float)
INTEGER: tuple[str, DTypePredicate] = ("integer", T.is_int)
INT_OR_BOOL: tuple[str, DTypePredicate] = ("integer or boolean", lambda d: T.is_int(d) or d == T.bool_)
ANY: tuple[str, DTypePredicate] = ("any", lambda d: True)
NOT_COMPLEX: tuple[str, DTypePredicate] = ("real (non-complex)", lambda d: not T.is_complex(d))
REAL_NUMBER: tuple[str, DTypePredicate] = ("real number", lambda d: d != T.bool_ and not T.is_complex(d))
COMPLEX: tuple[str, DTypePredicate] = ("complex", T.is_complex)


def check_dtypes(name: str, avals: Sequence[ArrayType], accepted: tuple[str, DTypePredicate],
                 constraint: str = "C1") -> None:
    label, ok = accepted
    for i, a in enumerate(avals):
        if not ok(a.dtype):
            fail(name, constraint, f"operand {i} has dtype {a.dtype.name}; accepted dtypes "
                 f"are {label} types")


def check_same_dtypes(name: str, avals: Sequence[ArrayType], constraint: str = "C2") -> None:
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        got = ", ".join(a.dtype.name for a in avals)
        fail(name, constraint, f"operands must have the same dtype, got {got} "
             "(the jnp function of the same name promotes operand dtypes)")


def out_shape(name: str, avals: Sequence[ArrayType], constraint: str = "C3") -> T.Shape:
    try:
        return T.broadcast_shapes(name, [a.shape for a in avals])
    except TypeError as err:
        fail(name, constraint, str(err))


def all_weak(avals: Sequence[ArrayType]) -> bool:
    return all(a.weak_type for a in avals)


def nary_type(name: str, avals: Sequence[ArrayType], accepted: tuple[str, DTypePredicate],
              result_dtype: T.DType | None = None) -> list[ArrayType]:
    """The standard n-ary typing rule: C1 dtype class, C2 same dtypes, C3 shapes."""
    check_dtypes(name, avals, accepted)
    check_same_dtypes(name, avals)
    shape = out_shape(name, avals)
    dtype = avals[0].dtype if result_dtype is None else result_dtype
    weak = all_weak(avals) and result_dtype is None
    return [ArrayType(shape, dtype, weak)]


def compute_dtype(dt: T.DType) -> T.DType:
    """Narrow floats are computed in float32 and rounded once, as XLA's CPU
    backend does; everything else is computed in its own dtype."""
    if T.is_float(dt) and dt.itemsize < 4:
        return T.float32
    return dt


def lifted(fn: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    """Wrap a NumPy ufunc-like for elementwise use: narrow floats are upcast,
    results are cast back to the operand dtype, NumPy warnings silenced
    (IEEE semantics: inf/nan are results, not errors)."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        dt = xs[0].dtype
        cd = compute_dtype(dt)
        args = [x.astype(cd) if x.dtype != cd else x for x in xs]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*args))
        return [out.astype(dt) if out.dtype != dt else out]

    return impl


def lifted_to(result: T.DType, fn: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    """Like ``lifted`` for predicates and other fixed-dtype results."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*xs))
        return [out.astype(result) if out.dtype != result else out]

    return impl
