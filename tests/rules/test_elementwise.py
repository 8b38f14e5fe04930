"""Elementwise primitives, their lax wrappers and the elementwise jnp functions,
checked live against real JAX (the oracle): values, dtypes, weak types,
exception classes and jaxpr text.

Accuracy bounds (ULPs of the result dtype, relative to JAX's value; exact
means bit-equal including the sign of zero):
- exact: neg sign floor ceil round is_finite abs(real) real imag conj add sub
  mul div rem max min nextafter and/or/xor/not shifts population_count clz
  comparisons complex select_n clamp square integer_pow(|y| <= 3) sqrt
- 1 ULP: float16/bfloat16 results of any function (f32 result rounded once,
  XLA rounds the same f32 value) plus the function's own f32 bound below
- 2 ULPs: exp exp2 expm1 log log1p log2 sin cos tan tanh logistic sinh cosh
  asin acos atan asinh acosh atanh atan2 rsqrt cbrt erf erfc pow integer_pow
- 4 ULPs: complex-valued transcendental functions (component-wise, relative
  to the magnitude of the result)
- 4 ULPs: sinh cosh (spec follows XLA's exp(|x| - ln 2) formulation)
- erf: 5 ULPs and erfc: 5 ULPs or 1e-7 absolute: spec's float32 erf/erfc/lgamma
  are correctly rounded (checked against math.erf below); XLA's are 2-5 ULPs
  off, and its erfc underflows to 0 early in the tail.
- erf_inv: 4 ULPs; lgamma: 4 ULPs or 2e-6 absolute (near its zeros at 1, 2);
  digamma: 1e-5 relative or 2e-6 absolute, because XLA's float32 digamma
  is itself only accurate to ~1e-6 (spec's is accurate to float32 rounding).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lax import elementwise as E
from spec._src.core.types import ArrayType
from tests.support.pair import raises_as

BF16 = np.dtype(ml_dtypes.bfloat16)
GRID = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16)] + \
    [BF16, np.dtype(np.float32), np.dtype(np.complex64)]
GRID64 = [np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64),
          np.dtype(np.complex128)]


# ------------------------------------------------------------------ inputs

def _values(dt: np.dtype[Any]) -> np.ndarray:
    if dt == np.bool_:
        return np.array([False, True, True, False])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        raw = [0, 1, -1, 2, -2, 3, 5, -7, 31, 100, -100, info.max, info.min, info.max - 1,
               info.min + 1, 8, 64, -65]
        return np.array([v for v in raw if info.min <= v <= info.max], dtype=dt)
    if dt.kind == "c":
        return np.array([0, 1 + 1j, -1 + 0.5j, 0.3 - 2j, 2.5 + 0j, -1.5 - 1.5j, 1e-3j, 4 + 3j,
                         -0.75 + 0.25j], dtype=dt)
    big = float(ml_dtypes.finfo(dt).max) / 2
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 3.7, -3.7, 1e-3, 0.99,
                     -0.9, 20.0, -20.0, 100.0, 1e4, big, -big, np.inf, -np.inf, np.nan],
                    dtype=dt)


def _pairs(dt: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    v = _values(dt)
    x, y = np.meshgrid(v, v, indexing="ij")
    return x.ravel(), y.ravel()


def _eps(dt: np.dtype[Any]) -> float:
    base = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}.get(dt, dt)
    return float(ml_dtypes.finfo(base).eps)


def _tiny(dt: np.dtype[Any]) -> float:
    base = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}.get(dt, dt)
    return float(ml_dtypes.finfo(base).smallest_subnormal)


# ------------------------------------------------------------------ comparison

def assert_same(ours: Any, theirs: Any, ulps: float = 0, atol: float = 0.0,
                rtol: float = 0.0) -> None:
    """Same dtype, weak type, shape; values equal within the bound (nan
    matches nan, infinities must match exactly)."""
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.aval.weak_type == theirs.weak_type, (ours.aval, jax.typeof(theirs))
    assert str(spec.typeof(ours)) == str(jax.typeof(theirs))
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape
    if a.dtype.kind not in "fcV":
        np.testing.assert_array_equal(a, b)
        return
    if a.dtype.kind == "c":
        for part in (np.real, np.imag):
            _close(part(a), part(b), ulps, atol, rtol, a.dtype, scale=np.abs(b))
        return
    _close(a, b, ulps, atol, rtol, a.dtype, scale=None)


def _close(a: np.ndarray, b: np.ndarray, ulps: float, atol: float, rtol: float,
           dt: np.dtype[Any], scale: np.ndarray | None) -> None:
    with np.errstate(all="ignore"):
        _close64(a, b, a.astype(np.float64), b.astype(np.float64), ulps, atol, rtol, dt, scale)


def _close64(a: np.ndarray, b: np.ndarray, a64: np.ndarray, b64: np.ndarray, ulps: float,
             atol: float, rtol: float, dt: np.dtype[Any], scale: np.ndarray | None) -> None:
    np.testing.assert_array_equal(np.isnan(a64), np.isnan(b64), err_msg=f"nan mismatch\n{a}\n{b}")
    inf = np.isinf(b64)
    np.testing.assert_array_equal(a64[inf], b64[inf], err_msg=f"inf mismatch\n{a}\n{b}")
    fin = np.isfinite(b64)
    if ulps == 0 and atol == 0 and rtol == 0:
        np.testing.assert_array_equal(a64[fin], b64[fin], err_msg=f"\n{a}\n{b}")
        np.testing.assert_array_equal(np.signbit(a64[fin]), np.signbit(b64[fin]),
                                      err_msg=f"sign of zero\n{a}\n{b}")
        return
    ref = np.abs(b64) if scale is None else scale.astype(np.float64)
    ref = np.where(np.isfinite(ref), ref, np.abs(b64))
    tol = ulps * _eps(dt) * ref + rtol * ref + atol + ulps * _tiny(dt)
    err = np.abs(a64 - b64)
    bad = fin & ~(err <= tol) & (a64 != b64)
    assert not bad.any(), f"beyond bound at {np.nonzero(bad)}:\nours   {a[bad]}\ntheirs {b[bad]}"


def _run_both(fs: Callable[..., Any], fj: Callable[..., Any], *args: Any
              ) -> tuple[Any, Any] | None:
    """Run spec and JAX; if JAX raises, spec must raise the same class."""
    try:
        theirs = fj(*args)
    except (TypeError, ValueError) as err:
        raises_as(lambda: fs(*args), err)
        return None
    return fs(*args), theirs


def _narrow(dt: np.dtype[Any]) -> bool:
    return dt in (np.dtype(np.float16), BF16)


# ------------------------------------------------------------------ unary lax

EXACT_UNARY = ["neg", "sign", "floor", "ceil", "is_finite", "abs", "real", "imag", "conj",
               "bitwise_not", "population_count", "clz", "square", "sqrt"]
# name -> (f32 ULPs, extra absolute tolerance, relative tolerance)
TRANSCENDENTAL: dict[str, tuple[float, float, float]] = {
    n: (2, 0.0, 0.0) for n in ["exp", "exp2", "expm1", "log", "log1p", "log2", "sin", "cos",
                               "tan", "tanh", "logistic", "sinh", "cosh", "asin", "acos",
                               "atan", "asinh", "acosh", "atanh", "rsqrt", "cbrt", "erf",
                               "erfc"]}
TRANSCENDENTAL["erf"] = (5, 0.0, 0.0)
TRANSCENDENTAL["erfc"] = (5, 1e-7, 0.0)
TRANSCENDENTAL["sinh"] = TRANSCENDENTAL["cosh"] = (4, 0.0, 0.0)
TRANSCENDENTAL["erf_inv"] = (4, 0.0, 0.0)
TRANSCENDENTAL["lgamma"] = (4, 2e-6, 0.0)
TRANSCENDENTAL["digamma"] = (4, 2e-6, 1e-5)


def _unary_bound(name: str, dt: np.dtype[Any]) -> tuple[float, float, float]:
    if name in EXACT_UNARY:
        if dt.kind == "c" and name in ("sqrt", "sign", "abs", "square"):
            return 2, 0.0, 0.0  # complex formulas round more than once
        return (1 if _narrow(dt) and name == "sqrt" else 0, 0.0, 0.0)
    ulps, atol, rtol = TRANSCENDENTAL[name]
    if dt.kind == "c":
        ulps = 4
    if _narrow(dt):
        ulps += 1
        atol *= 1000
    return ulps, atol, rtol


@pytest.mark.parametrize("dt", GRID, ids=str)
@pytest.mark.parametrize("name", EXACT_UNARY + list(TRANSCENDENTAL))
def test_unary_values(name: str, dt: np.dtype[Any]) -> None:
    x = _values(dt)
    if dt.kind == "c" and name in ("tan", "tanh", "sinh", "cosh", "exp", "expm1"):
        x = x[np.abs(x) < 3]
    got = _run_both(getattr(slax, name), getattr(jlax, name), x)
    if got is not None:
        ulps, atol, rtol = _unary_bound(name, dt)
        assert_same(*got, ulps=ulps, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dt", GRID64, ids=str)
@pytest.mark.parametrize("name", EXACT_UNARY + list(TRANSCENDENTAL))
def test_unary_values_x64(name: str, dt: np.dtype[Any], x64: None) -> None:
    x = _values(dt)
    if dt.kind == "c" and name in ("tan", "tanh", "sinh", "cosh", "exp", "expm1"):
        x = x[np.abs(x) < 3]
    got = _run_both(getattr(slax, name), getattr(jlax, name), x)
    if got is not None:
        ulps, atol, rtol = _unary_bound(name, dt)
        if name in ("erf", "erfc", "lgamma", "digamma", "erf_inv"):
            # float64 special functions: spec's kernels are good to ~1e-12.
            ulps, atol, rtol = 8, 1e-12, 1e-11
        assert_same(*got, ulps=ulps, atol=atol, rtol=rtol)


@pytest.mark.parametrize("method", [0, 1, jlax.RoundingMethod.TO_NEAREST_EVEN])
@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16], ids=str)
def test_round(method: Any, dt: np.dtype[Any]) -> None:
    with np.errstate(over="ignore"):
        extra = np.array([0.49999997, 4.5, -4.5, 1e7 + 0.5]).astype(dt)
    x = np.concatenate([_values(dt), extra])
    ours = slax.round(x, int(method))
    theirs = jlax.round(x, method)
    assert_same(ours, theirs)


def test_round_bad_method() -> None:
    with pytest.raises(ValueError):
        jlax.round(np.ones(2, np.float32), 2)
    with pytest.raises(ValueError):
        slax.round(np.ones(2, np.float32), 2)


# ------------------------------------------------------------------ binary lax

EXACT_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "nextafter", "bitwise_and",
                "bitwise_or", "bitwise_xor", "shift_left", "shift_right_logical",
                "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "complex"]


@pytest.mark.parametrize("dt", GRID, ids=str)
@pytest.mark.parametrize("name", EXACT_BINARY + ["atan2", "pow"])
def test_binary_values(name: str, dt: np.dtype[Any]) -> None:
    if name == "atan2" and dt.kind == "c":
        pytest.skip("complex atan2: XLA's expansion differs in branch and rounding")
    x, y = _pairs(dt)
    if dt.kind == "c" and name == "pow":
        x, y = x[np.abs(y) < 3], y[np.abs(y) < 3]
    got = _run_both(getattr(slax, name), getattr(jlax, name), x, y)
    if got is not None:
        ulps = 0 if name in EXACT_BINARY else (4 if dt.kind == "c" else 2) + _narrow(dt)
        if name == "mul" and dt.kind == "c":
            ulps = 2  # XLA may fuse the complex product's multiply-adds
        if name == "div" and dt.kind == "c":
            ulps = 4  # complex division algorithms differ in their roundings
        assert_same(*got, ulps=ulps)


@pytest.mark.parametrize("dt", GRID64, ids=str)
@pytest.mark.parametrize("name", EXACT_BINARY + ["atan2", "pow"])
def test_binary_values_x64(name: str, dt: np.dtype[Any], x64: None) -> None:
    if name == "atan2" and dt.kind == "c":
        pytest.skip("complex atan2: XLA's expansion differs in branch and rounding")
    x, y = _pairs(dt)
    if dt.kind == "c" and name == "pow":
        x, y = x[np.abs(y) < 3], y[np.abs(y) < 3]
    got = _run_both(getattr(slax, name), getattr(jlax, name), x, y)
    if got is not None:
        ulps = 0 if name in EXACT_BINARY else (4 if dt.kind == "c" else 2)
        if name in ("mul", "div") and dt.kind == "c":
            ulps = 4
        assert_same(*got, ulps=ulps)


def test_integer_division_semantics() -> None:
    # C semantics: truncation, remainder with the dividend's sign; XLA CPU's
    # results for division by zero and MIN / -1.
    for dt in (np.int8, np.int32, np.uint8, np.uint32):
        info = np.iinfo(dt)
        x = np.array([7, info.max, 5, info.min, 0], dt)
        y = np.array([0, 0, 2, -1 if info.min else 3, 0], dt)
        assert_same(slax.div(x, y), jlax.div(x, y))
        assert_same(slax.rem(x, y), jlax.rem(x, y))
    assert list(np.asarray(slax.div(np.int32(-7), np.int32(2)))[()].reshape(1)) == [-3]
    assert int(np.asarray(slax.rem(np.int32(-7), np.int32(2)))) == -1


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32, np.int16])
def test_shifts_by_large_and_negative_amounts(dt: Any) -> None:
    info = np.iinfo(dt)
    x = np.array([-3 if info.min else 200] * 9, dt)
    s = np.array([0, 1, 7, 8, 9, 15, 16, 31, info.max], dt)
    for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        assert_same(getattr(slax, name)(x, s), getattr(jlax, name)(x, s))


@pytest.mark.parametrize("y", [0, 1, 2, 3, 4, 5, 7, 12, -1, -2, -3, -7])
@pytest.mark.parametrize("dt", GRID, ids=str)
def test_integer_pow(y: int, dt: np.dtype[Any]) -> None:
    x = _values(dt)
    got = _run_both(lambda a: slax.integer_pow(a, y), lambda a: jlax.integer_pow(a, y), x)
    if got is not None:
        exact = abs(y) <= 3 and dt.kind != "c" and not _narrow(dt)
        assert_same(*got, ulps=0 if exact else 2 + 2 * (dt.kind == "c") + 2 * _narrow(dt))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.complex64], ids=str)
@pytest.mark.parametrize("edt", [np.int8, np.int32, np.uint8])
def test_pow_integer_exponent(dt: Any, edt: Any) -> None:
    x = _values(np.dtype(dt))
    y = np.resize(np.array([0, 1, 2, 3, -1, -2, 5], np.int64), x.shape).astype(edt)
    got = _run_both(slax.pow, jlax.pow, x, y)
    assert got is not None
    assert_same(*got, ulps=4 if np.dtype(dt).kind == "c" else 2)


def test_python_scalars_are_weak() -> None:
    assert_same(slax.add(2.0, 3.0), jlax.add(2.0, 3.0))
    assert_same(slax.neg(2), jlax.neg(2))
    assert_same(slax.eq(2.0, 2.0), jlax.eq(2.0, 2.0))
    assert_same(slax.is_finite(2.0), jlax.is_finite(2.0))
    assert_same(slax.abs(1j), jlax.abs(1j))
    assert_same(slax.complex(1.0, 2.0), jlax.complex(1.0, 2.0))
    assert_same(slax.pow(2.0, 3), jlax.pow(2.0, 3))
    assert_same(slax.pow(2.0, np.int32(3)), jlax.pow(2.0, np.int32(3)))
    assert_same(slax.bitwise_not(True), jlax.bitwise_not(True))
    assert_same(slax.select_n(True, 1.0, 2.0), jlax.select_n(True, 1.0, 2.0))
    assert_same(slax.clamp(0.0, 1.0, 2.0), jlax.clamp(0.0, 1.0, 2.0))
    x = np.arange(3, dtype=np.float32)
    assert_same(slax.mul(x, 2.0), jlax.mul(x, 2.0))


# ------------------------------------------------------------------ select_n / clamp

def test_select_n() -> None:
    cases = [np.arange(4, dtype=np.float32) * k for k in (1, 10, 100)]
    which32 = np.array([2, 0, 5, -1], np.int32)
    assert_same(slax.select_n(which32, *cases), jlax.select_n(which32, *cases))
    whichu8 = np.array([2, 0, 1, 200], np.uint8)
    assert_same(slax.select_n(whichu8, *cases), jlax.select_n(whichu8, *cases))
    pred = np.array([True, False, True, False])
    assert_same(slax.select_n(pred, *cases[:2]), jlax.select_n(pred, *cases[:2]))
    assert_same(slax.select(pred, *cases[:2]), jlax.select(pred, *cases[:2]))
    assert_same(slax.select_n(np.True_, *cases[:2]), jlax.select_n(np.True_, *cases[:2]))
    assert_same(slax.select_n(pred, cases[0]), jlax.select_n(pred, cases[0]))


@pytest.mark.parametrize("args", [
    (np.array([0.0]), np.ones(1), np.ones(1)),
    (np.array([0], np.int32), np.ones(3, np.float32), np.ones(3, np.int32)),
    (np.array([True, False]), np.ones(3, np.float32), np.zeros(3, np.float32)),
    (np.array([True]), np.ones(3, np.float32), np.zeros(3, np.float32)),
    (np.array([0, 1], np.int32), np.ones(2, np.float32), np.ones(2, np.float32),
     np.ones(3, np.float32)),
    (np.ones(2, bool), np.ones(2, np.float32), np.ones(2, np.float32), np.ones(2, np.float32)),
    (np.array([0], np.int32),),
])
def test_select_n_errors(args: tuple[Any, ...]) -> None:
    assert _run_both(slax.select_n, jlax.select_n, *args) is None


@pytest.mark.parametrize("dt", GRID, ids=str)
def test_clamp(dt: np.dtype[Any]) -> None:
    x = _values(dt)
    lo, hi = x[len(x) // 3], x[len(x) // 2]
    got = _run_both(slax.clamp, jlax.clamp, lo, x, hi)
    if got is not None:
        assert_same(*got)
    got = _run_both(slax.clamp, jlax.clamp, x[::-1].copy(), x, hi)
    if got is not None:
        assert_same(*got)


@pytest.mark.parametrize("args", [
    (np.zeros(3, np.float32), np.ones(3, np.float32), np.ones(2, np.float32)),
    (np.zeros(2, np.float32), np.ones(3, np.float32), np.float32(1)),
    (np.int32(0), np.ones(3, np.float32), np.float32(1)),
])
def test_clamp_errors(args: tuple[Any, ...]) -> None:
    assert _run_both(slax.clamp, jlax.clamp, *args) is None


# ------------------------------------------------------------------ typing errors

@pytest.mark.parametrize("name,args", [
    ("add", (np.ones(3, np.float32), np.ones(3, np.int32))),
    ("add", (np.ones(3, np.float16), 2.0)),
    ("add", (np.ones(3, bool), np.ones(3, bool))),
    ("add", (np.ones(3, np.float32), np.ones(2, np.float32))),
    ("add", (np.ones(3, np.float32), np.ones((1, 3), np.float32))),
    ("sin", (np.ones(3, np.int32),)),
    ("floor", (np.ones(3, np.complex64),)),
    ("abs", (np.ones(3, np.uint8),)),
    ("real", (np.ones(3, np.float32),)),
    ("conj", (np.ones(3, np.int32),)),
    ("conj", (np.ones(3, np.float16),)),
    ("complex", (np.ones(3, np.float16), np.ones(3, np.float16))),
    ("rem", (np.ones(3, np.complex64), np.ones(3, np.complex64))),
    ("lt", (np.ones(3, np.complex64), np.ones(3, np.complex64))),
    ("pow", (np.ones(3, np.int32), np.ones(3, np.int32))),
    ("pow", (np.ones(3, np.float32), np.ones(3, np.float16))),
    ("pow", (np.ones(3, np.float32), np.ones(3, bool))),
    ("pow", (np.ones(3, np.float32), np.ones(2, np.int32))),
    ("bitwise_and", (np.ones(3, np.float32), np.ones(3, np.float32))),
    ("shift_left", (np.ones(3, bool), np.ones(3, bool))),
    ("population_count", (np.ones(3, bool),)),
    ("nextafter", (np.ones(3, np.int32), np.ones(3, np.int32))),
    ("lgamma", (np.ones(3, np.complex64),)),
    ("add", ([1.0], [2.0])),
])
def test_typing_errors(name: str, args: tuple[Any, ...]) -> None:
    assert _run_both(getattr(slax, name), getattr(jlax, name), *args) is None


def test_integer_pow_errors() -> None:
    assert _run_both(lambda x: slax.integer_pow(x, -1), lambda x: jlax.integer_pow(x, -1),
                     np.ones(2, np.int32)) is None
    assert _run_both(lambda x: slax.integer_pow(x, 2), lambda x: jlax.integer_pow(x, 2),
                     np.ones(2, bool)) is None


def test_error_messages_cite_constraints() -> None:
    with pytest.raises(TypeError, match=r"add C2: .*float32, int32"):
        slax.add(np.ones(3, np.float32), np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"sin C1: .*int32"):
        slax.sin(np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"add C3: "):
        slax.add(np.ones(3, np.float32), np.ones(2, np.float32))


# ------------------------------------------------------------------ jaxpr text

F = np.ones((2, 3), np.float32)
I = np.ones((2, 3), np.int32)
C = np.ones((2, 3), np.complex64)
B = np.ones((2, 3), bool)

PRIM_CALLS: list[tuple[str, Callable[[Any], Callable[..., Any]], tuple[Any, ...]]] = [
    *[(n, lambda L, n=n: getattr(L, n), (C if n in ("real", "imag", "conj") else
                                        I if n in ("bitwise_not", "population_count", "clz")
                                        else F,))
      for n in EXACT_UNARY + list(TRANSCENDENTAL)],
    *[(n, lambda L, n=n: getattr(L, n), (I, I) if n.startswith(("bitwise", "shift")) else (F, F))
      for n in EXACT_BINARY + ["atan2", "pow"]],
    ("round0", lambda L: L.round, (F,)),
    ("round1", lambda L: lambda x: L.round(x, 1), (F,)),
    ("exp_acc", lambda L: lambda x: L.exp(x, accuracy=None), (F,)),
    ("integer_pow", lambda L: lambda x: L.integer_pow(x, 3), (F,)),
    ("pow_int", lambda L: lambda x: L.pow(x, 2), (F,)),
    ("pow_fi", lambda L: L.pow, (F, I)),
    ("mul_lit", lambda L: lambda x: L.mul(x, 2.0), (F,)),
    ("select_n", lambda L: lambda p, x: L.select_n(p, x, x, x), (I, F)),
    ("select", lambda L: lambda p, x: L.select(p, x, 2 * x), (B, F)),
    ("clamp", lambda L: lambda x: L.clamp(0.0, x, 1.0), (F,)),
    ("conj_f32", lambda L: L.conj, (F,)),
    ("not_bool", lambda L: L.bitwise_not, (B,)),
]


@pytest.mark.parametrize("builder,args", [(b, a) for _, b, a in PRIM_CALLS],
                         ids=[n for n, _, _ in PRIM_CALLS])
def test_primitive_jaxpr_text(builder: Callable[[Any], Callable[..., Any]],
                              args: tuple[Any, ...]) -> None:
    ours = str(spec.make_jaxpr(builder(slax))(*args))
    theirs = str(jax.make_jaxpr(builder(jlax))(*args))
    assert ours == theirs


def test_primitive_params_match_jax() -> None:
    x = np.ones(3, np.float32)
    for name in ("exp", "sin", "sqrt", "cbrt", "erfc", "logistic"):
        ours = spec.make_jaxpr(getattr(slax, name))(x).eqns[0].params
        theirs = jax.make_jaxpr(getattr(jlax, name))(x).eqns[0].params
        assert ours == theirs
    ours = spec.make_jaxpr(slax.conj)(C).eqns[0].params
    theirs = jax.make_jaxpr(jlax.conj)(C).eqns[0].params
    assert ours == theirs
    ours = spec.make_jaxpr(lambda v: slax.integer_pow(v, 3))(x).eqns[0].params
    assert ours == jax.make_jaxpr(lambda v: jlax.integer_pow(v, 3))(x).eqns[0].params
    rm = spec.make_jaxpr(lambda v: slax.round(v, 1))(x).eqns[0].params["rounding_method"]
    assert int(rm) == 1 and str(rm) == "1"


# ------------------------------------------------------------------ jnp

JNP_UNARY = ("negative positive sign floor ceil round around rint trunc isfinite isnan isinf exp "
             "exp2 expm1 log log2 log10 log1p sqrt cbrt square reciprocal abs absolute fabs sin "
             "cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh real imag conj "
             "conjugate angle bitwise_not invert logical_not deg2rad rad2deg degrees "
             "radians").split()
JNP_BINARY = ("add subtract multiply divide true_divide floor_divide remainder mod fmod power "
              "pow float_power arctan2 hypot maximum minimum fmax fmin nextafter bitwise_and "
              "bitwise_or bitwise_xor left_shift right_shift logical_and logical_or logical_xor "
              "equal not_equal less less_equal greater greater_equal divmod heaviside").split()
JNP_INEXACT = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos",
               "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
               "arccosh", "arctanh", "angle", "deg2rad", "rad2deg", "degrees", "radians",
               "arctan2", "hypot", "power", "pow", "float_power", "true_divide", "divide",
               "reciprocal", "sqrt"}

UNARY_ARGS = {"f": np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3),
              "i": np.array([[-3, 0, 1], [2, 5, -7]], np.int32),
              "b": np.array([[True, False, True], [False, False, True]]),
              "c": np.array([[1 + 1j, -0.5j, 2], [0.3 - 2j, 0, -1.5 + 0.2j]], np.complex64),
              "u": np.array([[0, 1, 2], [7, 200, 3]], np.uint8),
              "h": np.array([[0.5, -1.5, 2.5], [3, -0.25, 10]], np.float16)}
BINARY_ARGS = {"ff": (UNARY_ARGS["f"], UNARY_ARGS["f"][::-1].copy()),
               "ii": (UNARY_ARGS["i"], np.array([[2, -3, 0], [4, 2, -1]], np.int32)),
               "bb": (UNARY_ARGS["b"], UNARY_ARGS["b"][::-1].copy()),
               "cc": (UNARY_ARGS["c"], UNARY_ARGS["c"][::-1].copy()),
               "uu": (UNARY_ARGS["u"], np.array([[3, 1, 0], [2, 9, 1]], np.uint8)),
               "fi": (UNARY_ARGS["f"], UNARY_ARGS["i"]),
               "f2": (UNARY_ARGS["f"], 2),
               "i2.": (UNARY_ARGS["i"], 2.0),
               "rank": (np.arange(3, dtype=np.float32), UNARY_ARGS["f"]),
               "hi8": (UNARY_ARGS["h"], np.array([1, 2, 3], np.int8))}


def _jnp_bound(name: str, dt: np.dtype[Any]) -> tuple[float, float]:
    if name not in JNP_INEXACT:
        return 0, 0.0
    return (6 if dt.kind == "c" else 3) + 2 * _narrow(dt), 0.0


builtins_max = max


def _check_jnp(name: str, args: tuple[Any, ...]) -> None:
    got = _run_both(getattr(snp, name), getattr(jnp, name), *args)
    if got is None:
        return
    ours, theirs = got
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        pairs = list(zip(ours, theirs))
    else:
        pairs = [(ours, theirs)]
    complex_in = any(np.iscomplexobj(a) for a in args)
    for o, t in pairs:
        ulps, atol = _jnp_bound(name, np.dtype(t.dtype))
        if complex_in:
            ulps = builtins_max(ulps, 6)  # complex formulas round more than once
        assert_same(o, t, ulps=ulps, atol=atol)


@pytest.mark.parametrize("kind", list(UNARY_ARGS))
@pytest.mark.parametrize("name", JNP_UNARY)
def test_jnp_unary_values(name: str, kind: str) -> None:
    _check_jnp(name, (UNARY_ARGS[kind],))


@pytest.mark.parametrize("kind", list(BINARY_ARGS))
@pytest.mark.parametrize("name", JNP_BINARY)
def test_jnp_binary_values(name: str, kind: str) -> None:
    if name == "arctan2" and kind == "cc":
        pytest.skip("complex atan2: XLA's expansion differs in branch and rounding")
    _check_jnp(name, BINARY_ARGS[kind])


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "divmod"])
@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint8, np.float32], ids=str)
def test_jnp_division_grid(name: str, dt: Any) -> None:
    x, y = _pairs(np.dtype(dt))
    keep = np.isfinite(x.astype(np.float64)) & np.isfinite(y.astype(np.float64))
    _check_jnp(name, (x[keep], y[keep]))


@pytest.mark.parametrize("x2", [0, 1, 2, 3, 5, -1, -2, np.int32(3), 2.0, 0.5])
@pytest.mark.parametrize("kind", ["f", "i", "b", "c", "u"])
def test_jnp_power_concrete_exponent(x2: Any, kind: str) -> None:
    _check_jnp("power", (UNARY_ARGS[kind], x2))
    ours = str(spec.make_jaxpr(lambda a: snp.power(a, x2))(UNARY_ARGS[kind])) \
        if _run_both(snp.power, jnp.power, UNARY_ARGS[kind], x2) is not None else ""
    theirs = str(jax.make_jaxpr(lambda a: jnp.power(a, x2))(UNARY_ARGS[kind])) if ours else ""
    assert ours == theirs


def test_operators_map_to_jnp() -> None:
    x = snp.add(np.arange(1, 5, dtype=np.float32), 0.5)
    y = jnp.add(np.arange(1, 5, dtype=np.float32), 0.5)
    ops: list[Callable[[Any, Any], Any]] = [
        lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
        lambda a, b: a // b, lambda a, b: a % b, lambda a, b: a ** b, lambda a, b: 2 ** a,
        lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: -a, lambda a, b: +a,
        lambda a, b: abs(a), lambda a, b: 3.0 - a, lambda a, b: a ** 2, lambda a, b: 1 / a]
    for op in ops:
        assert_same(op(x, x[::-1] if False else x), op(y, y), ulps=2)
    xi = snp.add(np.arange(1, 5, dtype=np.int32), 0)
    yi = jnp.add(np.arange(1, 5, dtype=np.int32), 0)
    for op in [lambda a: a & 3, lambda a: a | 8, lambda a: a ^ 5, lambda a: a << 2,
               lambda a: a >> 1, lambda a: ~a, lambda a: divmod(a, 3)[0],
               lambda a: divmod(a, 3)[1], lambda a: 7 // a, lambda a: -7 % a]:
        assert_same(op(xi), op(yi))


JNP_TEXT_UNARY = [(n, k) for n in JNP_UNARY for k in ("f", "i", "b", "c")]
JNP_TEXT_BINARY = [(n, k) for n in JNP_BINARY if n != "hypot"
                   for k in ("ff", "ii", "bb", "fi", "f2", "i2.", "rank")]


@pytest.mark.parametrize("name,kind", JNP_TEXT_UNARY)
def test_jnp_unary_jaxpr_text(name: str, kind: str) -> None:
    x = UNARY_ARGS[kind]
    if _run_both(getattr(snp, name), getattr(jnp, name), x) is None:
        return
    assert str(spec.make_jaxpr(getattr(snp, name))(x)) == \
        str(jax.make_jaxpr(getattr(jnp, name))(x))


@pytest.mark.parametrize("name,kind", JNP_TEXT_BINARY)
def test_jnp_binary_jaxpr_text(name: str, kind: str) -> None:
    args = BINARY_ARGS[kind]
    if _run_both(getattr(snp, name), getattr(jnp, name), *args) is None:
        return
    assert str(spec.make_jaxpr(getattr(snp, name))(*args)) == \
        str(jax.make_jaxpr(getattr(jnp, name))(*args))


@pytest.mark.parametrize("args", [
    (B, F, 1), (F[0] > 0, F, I), (I, F, 0.5), (np.True_, F, C), (B, 1.0, 2),
    (np.ones((1, 3), bool), np.float32(1), F)])
def test_jnp_where(args: tuple[Any, ...]) -> None:
    got = _run_both(snp.where, jnp.where, *args)
    assert got is not None
    assert_same(*got)
    if all(np.ndim(a) != 2 or np.shape(a)[0] != 1 for a in args):
        assert str(spec.make_jaxpr(snp.where)(*args)) == str(jax.make_jaxpr(jnp.where)(*args))


@pytest.mark.parametrize("lo,hi", [(0, 1), (None, 1), (0.5, None), (np.float32(-1), 2.0),
                                   (-1, np.int32(2))])
@pytest.mark.parametrize("kind", ["f", "i", "u"])
def test_jnp_clip(lo: Any, hi: Any, kind: str) -> None:
    x = UNARY_ARGS[kind]
    got = _run_both(lambda a: snp.clip(a, lo, hi), lambda a: jnp.clip(a, lo, hi), x)
    assert got is not None
    assert_same(*got)
    assert str(spec.make_jaxpr(lambda a: snp.clip(a, lo, hi))(x)) == \
        str(jax.make_jaxpr(lambda a: jnp.clip(a, lo, hi))(x))


@pytest.mark.parametrize("decimals", [0, 1, 2])
@pytest.mark.parametrize("kind", ["f", "h", "c", "i"])
def test_jnp_round_decimals(decimals: int, kind: str) -> None:
    x = UNARY_ARGS[kind] * (1.2345 if kind != "i" else 1)
    got = _run_both(lambda a: snp.round(a, decimals), lambda a: jnp.round(a, decimals), x)
    assert got is not None
    assert_same(*got, ulps=1)


def test_jnp_true_divide_of_ints_converts_first() -> None:
    text = str(spec.make_jaxpr(snp.true_divide)(I, I))
    assert text == str(jax.make_jaxpr(jnp.true_divide)(I, I))
    assert text.count("convert_element_type") == 2


def test_jnp_x64_promotion(x64: None) -> None:
    i64 = np.array([1, -2, 3], np.int64)
    for name in ("sin", "sqrt", "true_divide", "floor_divide", "power", "add", "remainder"):
        args = (i64,) if name in ("sin", "sqrt") else (i64, np.int32(2))
        _check_jnp(name, args)
    _check_jnp("exp", (np.array([1, 2], np.int32),))
    _check_jnp("add", (np.array([1.5], np.float32), 2.0))
    _check_jnp("sin", (3,))


def test_jnp_rank_promotion_errors() -> None:
    assert _run_both(snp.add, jnp.add, np.ones(3), np.ones((2, 2))) is None
    assert _run_both(snp.add, jnp.add, np.ones(3), np.ones(2)) is None
    assert _run_both(snp.add, jnp.add, [1.0], [2.0]) is None
    assert _run_both(snp.floor_divide, jnp.floor_divide, C, C) is None
    assert _run_both(snp.fabs, jnp.fabs, C) is None
    assert _run_both(snp.hypot, jnp.hypot, C, C) is None


@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_jnp_rank_promotion_config_messages(mode: str) -> None:
    def outcome(lib: Any, add: Callable[..., Any]) -> list[str]:
        with lib.numpy_rank_promotion(mode), warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                add(np.ones(3, np.float32), np.ones((5, 3), np.float32))
            except ValueError as e:
                return ["raised", str(e)]
        return [str(w.message) for w in record if "rank promotion" in str(w.message)]

    assert outcome(spec, snp.add) == outcome(jax, jnp.add)


def test_jnp_all_exported() -> None:
    from spec._src.numpy import indexing as _indexing
    from spec._src.numpy import math as _math
    for name in JNP_UNARY + JNP_BINARY + ["clip"]:
        assert name in _math.__all__
        assert callable(getattr(snp, name))
    assert "where" in _indexing.__all__ and callable(snp.where)
    for name in ("add subtract multiply true_divide floor_divide remainder power bitwise_and "
                 "bitwise_or bitwise_xor left_shift right_shift divmod equal not_equal less "
                 "less_equal greater greater_equal negative positive abs invert").split():
        assert callable(getattr(snp, name))


# ------------------------------------------------------------------ typing property

_HYP_DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16,
                                     np.float32, np.complex64)]
_HYP_PRIMS = ["add", "mul", "max", "eq", "lt", "bitwise_and", "atan2", "rem", "pow",
              "shift_left", "nextafter", "complex", "sub", "div"]
_shape = st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=3).map(tuple)


@settings(max_examples=150, deadline=None)
@given(prim=st.sampled_from(_HYP_PRIMS), s1=_shape, s2=_shape,
       d1=st.sampled_from(_HYP_DTYPES), d2=st.sampled_from(_HYP_DTYPES),
       w1=st.booleans(), w2=st.booleans(), same=st.booleans())
def test_binary_typing_rule_matches_jax(prim: str, s1: tuple[int, ...], s2: tuple[int, ...],
                                        d1: np.dtype[Any], d2: np.dtype[Any], w1: bool,
                                        w2: bool, same: bool) -> None:
    if same:
        d2 = d1  # most interesting cases share a dtype
    w1, w2 = w1 and d1 != np.bool_, w2 and d2 != np.bool_
    rule = getattr(E, _prim_var(prim)).typing
    avals = (ArrayType(s1, d1, w1), ArrayType(s2, d2, w2))
    try:
        theirs = jax.eval_shape(getattr(jlax, prim), jax.ShapeDtypeStruct(s1, d1, weak_type=w1),
                                jax.ShapeDtypeStruct(s2, d2, weak_type=w2))
    except (TypeError, ValueError) as err:
        raises_as(lambda: rule(*avals), err)
        return
    (ours,) = rule(*avals)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    assert ours.weak_type == theirs.weak_type


def _prim_var(name: str) -> str:
    return {"bitwise_and": "and_p"}.get(name, f"{name}_p")


@settings(max_examples=30, deadline=None)
@given(s1=_shape, s2=_shape, d1=st.sampled_from(_HYP_DTYPES), d2=st.sampled_from(_HYP_DTYPES),
       name=st.sampled_from(["add", "multiply", "maximum", "less", "true_divide", "arctan2"]))
def test_jnp_binary_promotion_matches_jax(s1: tuple[int, ...], s2: tuple[int, ...],
                                          d1: np.dtype[Any], d2: np.dtype[Any],
                                          name: str) -> None:
    x, y = np.ones(s1, d1), np.ones(s2, d2)
    got = _run_both(getattr(snp, name), getattr(jnp, name), x, y)
    if got is not None:
        ours, theirs = got
        assert str(spec.typeof(ours)) == str(jax.typeof(theirs))


def test_every_task_primitive_is_declared() -> None:
    from spec.rules import REGISTRY
    names = ("neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh logistic sin cos "
             "tan asin acos atan sinh cosh asinh acosh atanh sqrt rsqrt cbrt abs erf erfc "
             "erf_inv lgamma digamma real imag conj not population_count clz add sub mul div "
             "rem pow integer_pow max min atan2 nextafter and or xor shift_left "
             "shift_right_logical shift_right_arithmetic eq ne lt le gt ge complex select_n "
             "clamp").split()
    missing = [n for n in names if n not in REGISTRY]
    assert not missing, missing

