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
from spec.rules._denormals import arithmetic, flush, flushing
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
                 constraint: str = "C1", first: int = 0) -> None:
    label, ok = accepted
    for i, a in enumerate(avals, start=first):
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
    # JAX keeps the weak flag of all-weak operands even for fixed result
    # dtypes: ``lax.eq(1.0, 2.0)`` is a weak bool.
    return [ArrayType(shape, dtype, all_weak(avals))]


def compute_dtype(dt: T.DType) -> T.DType:
    """Narrow floats are computed in float32 and rounded once, as XLA's CPU
    backend does; everything else is computed in its own dtype."""
    if T.is_float(dt) and dt.itemsize < 4:
        return T.float32
    return dt


def flush_subnormals(a: np.ndarray) -> np.ndarray:
    """XLA's CPU backend runs float32/float64 arithmetic with denormals
    flushed to zero, both as operands and as results (FTZ + DAZ): a
    subnormal becomes a zero of the same sign. Other dtypes pass through.
    See spec/rules/_denormals.py (and config ``spec_denormals``)."""
    return flush(a) if flushing() else a


def lifted(fn: Callable[..., Any], ftz: bool = True) -> Callable[..., list[np.ndarray]]:
    """Wrap a NumPy ufunc-like for elementwise use: narrow floats are upcast,
    results are cast back to the operand dtype, NumPy warnings silenced
    (IEEE semantics: inf/nan are results, not errors). With ``ftz``,
    float32/float64 operands and results have subnormals flushed to zero,
    as XLA's CPU backend does for arithmetic (not for sign-bit operations
    such as neg and abs)."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        dt = xs[0].dtype
        cd = compute_dtype(dt)
        args = [x.astype(cd) if x.dtype != cd else x for x in xs]
        with np.errstate(all="ignore"):
            out = np.asarray(arithmetic(fn, *args) if ftz else fn(*args))
            return [out.astype(dt) if out.dtype != dt else out]

    return impl


def lifted_to(result: T.DType, fn: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    """Like ``lifted`` for predicates and other fixed-dtype results (operands
    are flushed, so a subnormal compares equal to zero as on XLA's CPU)."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            out = np.asarray(arithmetic(fn, *xs))
        return [out.astype(result) if out.dtype != result else out]

    return impl


# ------------------------------------------------------------------ typing helpers

SIGNED_OR_INEXACT: tuple[str, DTypePredicate] = (
    "signed integer, floating or complex",
    lambda d: T.is_signed_int(d) or T.is_inexact(d))
ORDERED: tuple[str, DTypePredicate] = ("integer, floating or boolean",
                                       lambda d: not T.is_complex(d))
COMPLEX_PARTS: tuple[str, DTypePredicate] = (
    "float32 or float64", lambda d: d in (T.float32, T.float64))
CONJ_INPUT: tuple[str, DTypePredicate] = (
    "float32, float64 or complex", lambda d: d in (T.float32, T.float64) or T.is_complex(d))


def real_dtype(dt: T.DType) -> T.DType:
    """The component dtype of a complex dtype; other dtypes map to themselves."""
    return {T.complex64: T.float32, T.complex128: T.float64}.get(dt, dt)


def complex_dtype(dt: T.DType) -> T.DType:
    """The complex dtype whose components have dtype ``dt`` (f32 -> c64)."""
    return T.complex128 if dt in (T.float64, T.complex128) else T.complex64


# ------------------------------------------------------------------ integer kernels

def unsigned_view(dt: T.DType) -> T.DType:
    return np.dtype(f"u{dt.itemsize}")


def signed_view(dt: T.DType) -> T.DType:
    return np.dtype(f"i{dt.itemsize}")


def int_div_rem(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C-style integer division (quotient truncated toward zero, remainder with
    the dividend's sign), with XLA's CPU results where C is undefined:
    ``x / 0`` is all-ones bits (-1, or the max of an unsigned type) and
    ``x % 0`` is ``x``; ``MIN / -1`` wraps to ``MIN`` and ``MIN % -1`` is 0."""
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    safe = np.where(zero, np.ones_like(y), y)
    if T.is_signed_int(x.dtype):
        overflow = (x == np.iinfo(x.dtype).min) & (safe == -1)
        safe = np.where(overflow, np.ones_like(y), safe)
    rem = np.fmod(x, safe)  # C remainder: sign of the dividend
    quo = np.floor_divide(x - rem, safe)  # exact: x - rem is a multiple of safe
    all_ones = np.array(-1).astype(x.dtype) if T.is_signed_int(x.dtype) else \
        np.array(np.iinfo(x.dtype).max, x.dtype)
    quo = np.where(zero, all_ones, quo)
    rem = np.where(zero, x, rem)
    return quo.astype(x.dtype), rem.astype(x.dtype)


def shift(x: np.ndarray, s: np.ndarray, kind: str) -> np.ndarray:
    """XLA shifts: the amount is read as unsigned; amounts >= the bit width give
    0 (left, logical) or the sign fill (arithmetic)."""
    bits = x.dtype.itemsize * 8
    amount = s.view(unsigned_view(s.dtype)) if s.dtype.kind == "i" else s
    too_big = amount >= bits
    amt = np.where(too_big, 0, amount).astype(np.uint8)
    if kind == "left":
        out = np.left_shift(x.view(unsigned_view(x.dtype)), amt).view(x.dtype)
        return np.where(too_big, np.zeros_like(out), out)
    if kind == "logical":
        out = np.right_shift(x.view(unsigned_view(x.dtype)), amt).view(x.dtype)
        return np.where(too_big, np.zeros_like(out), out)
    sx = x.view(signed_view(x.dtype))
    out = np.right_shift(sx, amt)
    fill = np.where(sx < 0, np.array(-1, sx.dtype), np.array(0, sx.dtype))
    return np.where(too_big, fill, out).astype(sx.dtype).view(x.dtype)


def population_count(x: np.ndarray) -> np.ndarray:
    u = x.view(unsigned_view(x.dtype))
    return np.bitwise_count(u).astype(x.dtype)


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Smear the highest set bit rightwards; the zeros above it are the bits
    that stay clear."""
    u = x.view(unsigned_view(x.dtype)).copy()
    step = 1
    while step < u.dtype.itemsize * 8:  # log2(bits) whole-array steps
        u |= u >> np.array(step, u.dtype)
        step *= 2
    return (u.dtype.itemsize * 8 - np.bitwise_count(u)).astype(x.dtype)


# ------------------------------------------------------------------ float kernels
# The special functions are evaluated in float64 (float32 inputs, and the
# narrow floats computed in float32, round once at the end); the formulas are
# accurate to ~1e-15 relative, except within ~1e-15 absolute of a zero of the
# function (lgamma at 1 and 2, digamma at 1.4616...).

_SQRT_PI = float(np.sqrt(np.pi))


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!; every term
    is positive, so there is no cancellation. Used for |x| <= 2.5."""
    x2 = x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, 90):
        term = term * (2.0 * x2 / (2 * n + 1))
        total = total + term
    return np.asarray(2.0 / _SQRT_PI * np.exp(-x2) * total)


def _erfc_fraction(x: np.ndarray) -> np.ndarray:
    """erfc(x) for x >= 2.5 by its continued fraction
    exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
    evaluated bottom-up at a fixed depth."""
    tail = np.zeros_like(x)
    for k in range(120, 0, -1):
        tail = (k / 2.0) / (x + tail)
    return np.asarray(np.exp(-x * x) / _SQRT_PI / (x + tail))


def erf64(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    small = a <= 2.5
    with np.errstate(all="ignore"):
        lo = _erf_series(np.where(small, a, 0.0))
        hi = 1.0 - _erfc_fraction(np.where(small, 3.0, np.minimum(a, 30.0)))
    out = np.where(small, lo, hi)
    return np.where(np.isnan(x), x, np.copysign(out, x))


def erfc64(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    small = a <= 2.5
    with np.errstate(all="ignore"):
        lo = 1.0 - _erf_series(np.where(small, a, 0.0))
        hi = _erfc_fraction(np.where(small, 3.0, np.minimum(a, 30.0)))
        hi = np.where(a > 27.3, 0.0, hi)
    pos = np.where(small, lo, hi)
    out = np.where(x < 0, 2.0 - pos, pos)
    return np.where(np.isnan(x), x, out)


def erf_inv64(x: np.ndarray) -> np.ndarray:
    """Newton's method from Winitzki's closed-form estimate; near |x| = 1 the
    residual is taken on erfc, where 1 - |x| is exact."""
    a = np.abs(x)
    with np.errstate(all="ignore"):
        inside = a < 1.0
        aa = np.where(inside, a, 0.5)
        ln = np.log((1.0 - aa) * (1.0 + aa))
        c = 2.0 / (np.pi * 0.147) + ln / 2.0
        y = np.sqrt(np.sqrt(c * c - ln / 0.147) - c)
        one_minus = 1.0 - aa
        near_one = aa >= 0.5
        for _ in range(5):
            resid = np.where(near_one, one_minus - erfc64(y), erf64(y) - aa)
            y = y - resid / (2.0 / _SQRT_PI * np.exp(-y * y))
        out = np.where(inside, y, np.where(a == 1.0, np.inf, np.nan))
    return np.where(np.isnan(x), x, np.copysign(out, x))


def _stirling_lgamma(z: np.ndarray) -> np.ndarray:
    """lgamma(z) for z >= 20 by Stirling's series (next term < 1e-17)."""
    r = 1.0 / z
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
    return np.asarray((z - 0.5) * np.log(z) - z + 0.5 * np.log(2 * np.pi) + series)


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """lgamma for x > 0: shift to x + n >= 20 with Gamma(x+n) = Gamma(x) x...(x+n-1)."""
    shift_n = np.where(x < 20.0, np.ceil(20.0 - x), 0.0)
    prod = np.ones_like(x)
    for k in range(21):
        prod = np.where(k < shift_n, prod * (x + k), prod)
    return _stirling_lgamma(x + shift_n) - np.log(prod)


def _sin_pi(x: np.ndarray) -> np.ndarray:
    """sin(pi x), reduced to |x| <= 1/2 first so large x keeps its accuracy."""
    n = np.round(x)
    s = np.sin(np.pi * (x - n))
    return np.where(np.fmod(n, 2.0) == 0, s, -s)


def lgamma64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        pos = x > 0
        xp = np.where(pos, x, 1.0 - x)  # reflection for x <= 0
        xp = np.where(np.isfinite(xp), xp, 1.0)
        lg = _lgamma_positive(xp)
        reflected = np.log(np.pi / np.abs(_sin_pi(x))) - lg
        out = np.where(pos, lg, reflected)
        pole = (x <= 0) & (x == np.floor(x))
        out = np.where(pole | np.isinf(x), np.inf, out)
    return np.where(np.isnan(x), x, out)


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    shift_n = np.where(x < 20.0, np.ceil(20.0 - x), 0.0)
    acc = np.zeros_like(x)
    for k in range(21):
        acc = np.where(k < shift_n, acc + 1.0 / (x + k), acc)
    z = x + shift_n
    r2 = 1.0 / (z * z)
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))
    return np.asarray(np.log(z) - 0.5 / z - series - acc)


def digamma64(x: np.ndarray) -> np.ndarray:
    """psi(x); x <= 0 by reflection psi(x) = psi(1 - x) - pi / tan(pi x).
    As XLA: psi(0) = -inf, psi(negative integer) = nan, psi(-inf) = nan."""
    with np.errstate(all="ignore"):
        pos = x > 0
        xp = np.where(pos, x, 1.0 - x)
        xp = np.where(np.isfinite(xp), xp, 1.0)
        d = _digamma_positive(xp)
        frac = x - np.round(x)
        reflected = d - np.pi / np.tan(np.pi * frac)
        out = np.where(pos, d, reflected)
        out = np.where(x == 0, -np.inf, out)
        out = np.where((x < 0) & (x == np.floor(x)), np.nan, out)
        out = np.where(x == np.inf, np.inf, np.where(x == -np.inf, np.nan, out))
    return np.where(np.isnan(x), x, out)


def lifted64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., list[np.ndarray]]:
    """Evaluate a float64 kernel and round once to the operand dtype."""

    def impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            out = fn(flush_subnormals(x).astype(np.float64))
            return [flush_subnormals(np.asarray(out).astype(x.dtype))]

    return impl
