"""Autodiff rules (JVP and transpose) of the elementwise primitives, checked
live against real JAX: derivative values (jvp, vjp, grad), their dtypes and
weak types, jaxpr text of jvp/grad programs, numerical derivative checks
(finite differences and the dot-product test), both linearize paths, zero
tangents of integer/boolean primitives, and the helper primitives the rules
bind (one_minus_square, polygamma, polynomial).

Tolerances: derivative values are compared with a relative tolerance of a
few tens of ULPs of the dtype. A derivative evaluates several primitives
whose float kernels are each within a few ULPs of XLA's (see
tests/rules/test_elementwise.py), and formulas like 1 - tanh(x)^2 magnify the
primal's error; real-dtype rules that only multiply and add are exact.

bfloat16 is left out of the reverse-mode comparisons: the machinery in
spec/_src/interpreters/ad.py and spec/_src/lax/ad_prims.py currently reads numpy dtype kind "V"
as float0, which bfloat16 (an ml_dtypes type) also has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from jax import lax as jl

import spec
import spec.numpy as sjnp
from spec import lax as sl
from spec._src.core.interpreter import Primitive
from spec._src.lax import elementwise as E
from spec.test_util import check_grads

F32, F64, C64, C128, F16 = (np.dtype(d) for d in
                            (np.float32, np.float64, np.complex64, np.complex128, np.float16))

# name -> (low, high) of a real domain safely inside the function's domain
# and away from its singularities.
DOMAIN: dict[str, tuple[float, float]] = {
    "exp": (-2, 2), "exp2": (-2, 2), "log": (0.3, 3), "log2": (0.3, 3), "log1p": (-0.5, 3),
    "expm1": (-2, 2), "tanh": (-2, 2), "logistic": (-3, 3), "sin": (-3, 3), "cos": (-3, 3),
    "tan": (-1.2, 1.2), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atan": (-3, 3),
    "sinh": (-2, 2), "cosh": (-2, 2), "asinh": (-3, 3), "acosh": (1.3, 3),
    "atanh": (-0.8, 0.8), "sqrt": (0.3, 3), "rsqrt": (0.3, 3), "cbrt": (0.3, 3),
    "square": (-2, 2), "abs": (0.2, 2), "erf": (-2, 2), "erfc": (-2, 2),
    "erf_inv": (-0.8, 0.8), "lgamma": (0.4, 4), "digamma": (0.4, 4), "sign": (0.2, 2),
    "one_minus_square": (-2, 2), "reciprocal": (0.3, 3), "neg": (-2, 2),
}
HOLOMORPHIC = ["exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt",
               "rsqrt", "square", "one_minus_square", "reciprocal", "neg"]
COMPLEX_OK = set(HOLOMORPHIC) | {"abs", "sign"}
UNARY = sorted(DOMAIN)
# Functions of x alone whose float32 derivative values are combinations of
# kernels with larger errors (relative tolerance in ULPs).
LOOSE = {"tanh": 64, "digamma": 64, "lgamma": 16, "erf_inv": 16, "cbrt": 16, "atanh": 64}


def _eps(dt: np.dtype[Any]) -> float:
    return float(ml_dtypes.finfo(dt).eps)  # type: ignore[no-untyped-call]


def _real(dt: np.dtype[Any]) -> np.dtype[Any]:
    return {C64: F32, C128: F64}.get(dt, dt)


def assert_like(got: Any, want: Any, rtol_ulps: float = 8.0) -> None:
    """spec's array equals JAX's: dtype, shape, weak type, values within
    ``rtol_ulps`` ULPs (relative, with the same absolute floor)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    g_weak = getattr(getattr(got, "aval", None), "weak_type", False)
    assert g_weak == bool(getattr(want, "weak_type", False))
    if g.dtype.kind not in "fcV" and g.dtype != ml_dtypes.bfloat16:
        np.testing.assert_array_equal(g, w)
        return
    if g.dtype.kind == "V" and g.dtype.itemsize == 0:
        return  # float0: no data
    tol = rtol_ulps * _eps(_real(g.dtype))
    g64, w64 = g.astype(np.complex128), w.astype(np.complex128)
    np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol, equal_nan=True)


def _inputs(name: str, shape: tuple[int, ...], dt: np.dtype[Any], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = DOMAIN[name]
    x = np.asarray(rng.uniform(lo, hi, shape), np.complex128 if dt.kind == "c" else np.float64)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(-0.3, 0.3, shape)
    return x.astype(dt)


def _unary(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return getattr(sl, name), getattr(jl, name)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=2).map(tuple)


def _random_like(x: Any, rng: np.random.Generator) -> np.ndarray:
    a = np.asarray(x)
    v = np.asarray(rng.standard_normal(a.shape), np.complex128)
    if a.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(a.shape)
    return (v if a.dtype.kind == "c" else v.real).astype(a.dtype)


def _inner(xs: Any, ys: Any) -> float:
    return float(sum(np.real(np.vdot(np.asarray(x).astype(np.complex128).ravel(),
                                     np.asarray(y).astype(np.complex128).ravel()))
                     for x, y in zip(xs, ys)))


def dot_product_test(f: Callable[..., Any], args: tuple[Any, ...], seed: int = 0) -> None:
    """The VJP is the transpose of the JVP, with JAX's convention for complex
    values (jax.test_util.check_vjp): <t, conj(vjp(conj(ct)))> equals
    <jvp(t), ct> (real inner products). spec.test_util.check_vjp leaves out
    the conjugations, so it is used for real values only."""
    rng = np.random.default_rng(seed)
    tangents = tuple(_random_like(a, rng) for a in args)
    out, t_out = spec.jvp(f, args, tangents)
    ct = _random_like(out, rng)
    cts_in = spec.vjp(f, *args)[1](np.conj(ct))
    lhs = _inner(tangents, [np.conj(np.asarray(c)) for c in cts_in])
    rhs = _inner([t_out], [ct])
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


# ------------------------------------------------------------ rule coverage

def _my_primitives() -> list[Primitive]:
    return [v for k, v in vars(E).items() if k.endswith("_p") and isinstance(v, Primitive)]


def test_no_pending_jvp_or_transpose_sections() -> None:
    names = {p.name for p in _my_primitives()}
    assert {"one_minus_square", "polygamma", "polynomial", "tanh"} <= names
    missing = [m for m in spec.rules.missing_sections()
               if m[0] in names and m[1] in ("jvp", "transpose")]
    assert missing == []


# ----------------------------------------------------- unary: values vs JAX

@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(UNARY), shape=shapes, dt=st.sampled_from([F32, C64, F16]),
       seed=st.integers(0, 2**16))
def test_unary_jvp_vjp_match_jax(name: str, shape: tuple[int, ...], dt: np.dtype[Any],
                                 seed: int) -> None:
    if dt.kind == "c" and name not in COMPLEX_OK:
        dt = F32
    sf, jf = _unary(name)
    x = _inputs(name, shape, dt, seed)
    t = _inputs(name, shape, dt, seed + 1)
    tol = LOOSE.get(name, 8) * (4 if dt.kind == "c" else 1)
    s_out, s_t = spec.jvp(sf, (x,), (t,))
    j_out, j_t = jax.jvp(jf, (x,), (t,))
    assert_like(s_out, j_out, tol)
    assert_like(s_t, j_t, tol)
    if dt == F16:
        return
    ct = np.asarray(_inputs(name, shape, np.asarray(j_out).dtype, seed + 2))
    (s_ct,) = spec.vjp(sf, x)[1](ct)
    (j_ct,) = jax.vjp(jf, x)[1](ct)
    assert_like(s_ct, j_ct, tol)


@pytest.mark.parametrize("name", UNARY)
def test_unary_float64_and_complex128(name: str, x64: None) -> None:
    sf, jf = _unary(name)
    dts = [F64, C128] if name in COMPLEX_OK else [F64]
    for dt in dts:
        x = _inputs(name, (5,), dt, 7)
        t = _inputs(name, (5,), dt, 8)
        tol = 64 if name in ("tanh", "atanh", "tan") else 16
        assert_like(spec.jvp(sf, (x,), (t,))[1], jax.jvp(jf, (x,), (t,))[1], tol)
        out = np.asarray(jf(x))
        (s_ct,) = spec.vjp(sf, x)[1](out)
        (j_ct,) = jax.vjp(jf, x)[1](out)
        assert_like(s_ct, j_ct, tol)


@pytest.mark.parametrize("name", UNARY)
def test_unary_grad_of_python_scalar_is_weak_like_jax(name: str) -> None:
    sf, jf = _unary(name)
    x = float(np.mean(DOMAIN[name]))
    assert_like(spec.grad(sf)(x), jax.grad(jf)(x), LOOSE.get(name, 8))


# ----------------------------------------------------- numerical derivative checks

@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(UNARY), shape=shapes, cplx=st.booleans(), seed=st.integers(0, 999))
def test_unary_check_grads(name: str, shape: tuple[int, ...], cplx: bool, seed: int) -> None:
    dt = C64 if cplx and name in COMPLEX_OK else F32
    x = _inputs(name, shape, dt, seed)
    if dt.kind == "c":
        # spec.test_util's dot-product test has no complex convention: check
        # forward against finite differences and reverse with JAX's one.
        check_grads(getattr(sl, name), (x,), order=2, modes=("fwd",))
        dot_product_test(getattr(sl, name), (x,), seed)
    else:
        check_grads(getattr(sl, name), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["exp", "tanh", "asinh", "digamma", "erf", "lgamma", "atanh"])
def test_unary_check_grads_float64(name: str, x64: None) -> None:
    x = _inputs(name, (3,), F64, 3)
    check_grads(getattr(sl, name), (x,), order=2, modes=("fwd", "rev"))


BINARY_DOMAINS: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "add": ((-2, 2), (-2, 2)), "sub": ((-2, 2), (-2, 2)), "mul": ((-2, 2), (-2, 2)),
    "div": ((-2, 2), (0.5, 2)), "rem": ((0.1, 3), (0.7, 0.9)), "max": ((-2, 2), (-2, 2)),
    "min": ((-2, 2), (-2, 2)), "atan2": ((-2, 2), (0.5, 2)), "nextafter": ((-2, 2), (-2, 2)),
    "pow": ((0.5, 2), (-2, 2)), "complex": ((-2, 2), (-2, 2)),
    "polygamma": ((1, 1), (0.5, 3)),
}
BINARY = sorted(BINARY_DOMAINS)


def _binary_args(name: str, sx: tuple[int, ...], sy: tuple[int, ...], dt: np.dtype[Any],
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    (a, b), (c, d) = BINARY_DOMAINS[name]
    x = rng.uniform(a, b, sx).astype(dt)
    y = rng.uniform(c, d, sy).astype(dt)
    if name == "polygamma":
        x = np.round(x)
    return x, y


def _pair_shapes() -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    base = st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)
    # rank-0 stretching, equal shapes, and size-1 stretching of one axis
    return base.flatmap(lambda s: st.sampled_from([
        (s, s), ((), s), (s, ()), ((), ()), (s, tuple(1 if i == 0 else d for i, d in enumerate(s)))
    ]))


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(BINARY), pair=_pair_shapes(), seed=st.integers(0, 999))
def test_binary_grads_match_jax(name: str, pair: tuple[tuple[int, ...], tuple[int, ...]],
                                seed: int) -> None:
    sx, sy = pair
    x, y = _binary_args(name, sx, sy, F32, seed)
    sf, jf = getattr(sl, name), getattr(jl, name)
    argnums = (1,) if name == "polygamma" else (0,) if name == "nextafter" else (0, 1)

    def s_loss(a: Any, b: Any) -> Any:
        out = sf(a, b)
        return sl.reduce_sum(sl.real(out) if name == "complex" else out,
                             tuple(range(np.ndim(out))))

    def j_loss(a: Any, b: Any) -> Any:
        out = jf(a, b)
        return jl.reduce_sum(jl.real(out) if name == "complex" else out,
                             tuple(range(np.ndim(out))))

    tol = 64 if name == "polygamma" else 8
    for g, w in zip(spec.grad(s_loss, argnums=argnums)(x, y),
                    jax.grad(j_loss, argnums=argnums)(x, y)):
        assert_like(g, w, tol)
    tx, ty = _binary_args(name, sx, sy, F32, seed + 1)
    if name == "polygamma":  # no derivative in m: differentiate in x only
        s_t = spec.jvp(lambda b: sf(x, b), (y,), (ty,))[1]
        j_t = jax.jvp(lambda b: jf(x, b), (y,), (ty,))[1]
    else:
        s_t = spec.jvp(sf, (x, y), (tx, ty))[1]
        j_t = jax.jvp(jf, (x, y), (tx, ty))[1]
    assert_like(s_t, j_t, tol)
    if name not in ("polygamma", "complex", "nextafter") and sx == sy:
        check_grads(sf, (x, y), order=2, modes=("fwd", "rev"))


def test_max_min_split_ties_evenly_like_jax() -> None:
    x = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    y = np.array([1.0, 5.0, 0.0, 1.0], np.float32)
    for name in ("max", "min"):
        for argnum in (0, 1):
            got = spec.grad(lambda a, b, n=name: getattr(sl, n)(a, b).sum(), argnums=argnum)(x, y)
            want = jax.grad(lambda a, b, n=name: getattr(jl, n)(a, b).sum(), argnums=argnum)(x, y)
            assert_like(got, want, 0)
            assert float(np.asarray(got)[0]) == 0.5


@pytest.mark.parametrize("k", [-3, -2, -1, 0, 1, 2, 3, 4, 7])
def test_integer_pow(k: int) -> None:
    x = np.array([0.5, -1.5, 2.0], np.float32)
    got = spec.grad(lambda a: sl.integer_pow(a, k).sum())(x)
    want = jax.grad(lambda a: jl.integer_pow(a, k).sum())(x)
    assert_like(got, want, 4)
    if k != 0:
        check_grads(lambda a: sl.integer_pow(a, k), (x,), order=2)
    assert_like(spec.jvp(lambda a: sl.integer_pow(a, k), (x,), (x,))[1],
                jax.jvp(lambda a: jl.integer_pow(a, k), (x,), (x,))[1], 4)


@pytest.mark.parametrize("y", [np.int32(3), np.array([0, 1, -2], np.int32),
                               np.float32(0.7), np.array([0.0, 1.5, -2.0], np.float32)])
def test_pow_grads(y: Any) -> None:
    x = np.array([0.0, 1.5, 2.0], np.float32)
    for argnum in ((0,) if np.asarray(y).dtype.kind == "i" else (0, 1)):
        got = spec.grad(lambda a, b: sl.pow(a, b).sum(), argnums=argnum)(x, y)
        want = jax.grad(lambda a, b: jl.pow(a, b).sum(), argnums=argnum)(x, y)
        assert_like(got, want, 4)


def test_polygamma_gradient_wrt_m_raises_like_jax() -> None:
    with pytest.raises(ValueError):
        jax.grad(lambda m: jl.polygamma(m, 2.0))(1.0)
    with pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        spec.grad(lambda m: sl.polygamma(m, 2.0))(1.0)


def test_tanh_logistic_highest_accuracy_branch() -> None:
    x = np.array([0.3, -1.2, 2.0], np.float32)
    for name in ("tanh", "logistic"):
        def sf(a: Any, n: str = name) -> Any:
            return getattr(sl, n)(a, accuracy=sl.AccuracyMode.HIGHEST).sum()

        def jf(a: Any, n: str = name) -> Any:
            return getattr(jl, n)(a, accuracy=jl.AccuracyMode.HIGHEST).sum()

        assert_like(spec.grad(sf)(x), jax.grad(jf)(x), 8)
        assert str(spec.make_jaxpr(spec.grad(sf))(x)) == str(jax.make_jaxpr(jax.grad(jf))(x))


# ----------------------------------------------------- select_n and clamp

@pytest.mark.parametrize("which", [np.array([True, False, True]), np.bool_(True),
                                   np.array([0, 2, 1], np.int32), np.array([5, -1, 1], np.int32)])
def test_select_n_grads(which: Any) -> None:
    n = 2 if np.asarray(which).dtype == np.bool_ else 3
    cases = [np.arange(3, dtype=np.float32) * (i + 1) for i in range(n)]
    for argnum in range(1, n + 1):
        got = spec.grad(lambda *a: sl.select_n(*a).sum(), argnums=argnum)(which, *cases)
        want = jax.grad(lambda *a: jl.select_n(*a).sum(), argnums=argnum)(which, *cases)
        assert_like(got, want, 0)
    sj = spec.jvp(lambda *c: sl.select_n(which, *c), tuple(cases), tuple(cases))[1]
    jj = jax.jvp(lambda *c: jl.select_n(which, *c), tuple(cases), tuple(cases))[1]
    assert_like(sj, jj, 0)
    dot_product_test(lambda *c: sl.select_n(which, *c), tuple(cases))


def test_select_n_single_case_transpose() -> None:
    which = np.array([0, 0], np.int32)
    x = np.array([1.0, 2.0], np.float32)
    got = spec.grad(lambda a: sl.select_n(which, a).sum())(x)
    assert_like(got, jax.grad(lambda a: jl.select_n(which, a).sum())(x), 0)


@pytest.mark.parametrize("bounds", [(np.zeros(4, np.float32), np.ones(4, np.float32)),
                                    (0.0, 1.0)])
def test_clamp_grads(bounds: tuple[Any, Any]) -> None:
    lo, hi = bounds
    x = np.array([-0.5, 0.5, 1.5, 1.0], np.float32)
    argnums = (0, 1, 2) if np.ndim(lo) else (1,)
    got = spec.grad(lambda a, b, c: sl.clamp(a, b, c).sum(), argnums=argnums)(lo, x, hi)
    want = jax.grad(lambda a, b, c: jl.clamp(a, b, c).sum(), argnums=argnums)(lo, x, hi)
    for g, w in zip(got, want):
        assert_like(g, w, 0)


def test_clamp_scalar_bound_tangent_raises_like_jax() -> None:
    """JAX's clamp JVP selects between a rank-0 bound tangent and zeros of
    x's shape, which select_n rejects; spec raises the same class."""
    x = np.array([0.5, 1.5], np.float32)
    with pytest.raises(TypeError):
        jax.grad(lambda a: jl.clamp(a, x, 1.0).sum())(0.0)
    with pytest.raises(TypeError):
        spec.grad(lambda a: sl.clamp(a, x, 1.0).sum())(0.0)


# ----------------------------------------------------- linear primitives

LINEAR: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any]] = {
    "neg": (sl.neg, jl.neg, np.array([1.0, -2.0], np.float32)),
    "real": (sl.real, jl.real, np.array([1 + 2j, -3j], np.complex64)),
    "imag": (sl.imag, jl.imag, np.array([1 + 2j, -3j], np.complex64)),
    "conj": (sl.conj, jl.conj, np.array([1 + 2j, -3j], np.complex64)),
    "conj_real": (sl.conj, jl.conj, np.array([1.0, -2.0], np.float32)),
    "div_x": (lambda a: sl.div(a, np.float32(4.0)), lambda a: jl.div(a, np.float32(4.0)),
              np.array([1.0, -2.0], np.float32)),
    "complex_x": (lambda a: sl.complex(a, np.float32(2)), lambda a: jl.complex(a, np.float32(2)),
                  np.array([1.0, -2.0], np.float32)),
    "complex_y": (lambda a: sl.complex(np.float32(2), a), lambda a: jl.complex(np.float32(2), a),
                  np.array([1.0, -2.0], np.float32)),
    "ldexp": (lambda a: sjnp.ldexp(a, np.array([1, -3], np.int32)),
              lambda a: jjnp.ldexp(a, np.array([1, -3], np.int32)),
              np.array([1.5, -2.0], np.float32)),
    "polynomial_coeff": (lambda c: sl.polynomial(np.float32(2.0), [c, c]),
                         lambda c: jl.polynomial(np.float32(2.0), [c, c]),
                         np.array([1.5, -2.0], np.float32)),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_transpose_matches_jax(name: str) -> None:
    sf, jf, x = LINEAR[name]
    out = np.asarray(jf(x))
    ct = _random_like(out, np.random.default_rng(0))
    (got,) = spec.linear_transpose(sf, x)(ct)
    (want,) = jax.linear_transpose(jf, x)(ct)
    assert_like(got, want, 0)
    dot_product_test(sf, (x,))


def test_complex_transpose_with_broadcast_operand() -> None:
    x = np.float32(1.5)
    y = np.array([1.0, 2.0, 3.0], np.float32)

    def loss_s(a: Any, b: Any) -> Any:
        return sl.real(sl.mul(sl.complex(a, b), sl.complex(a, b))).sum()

    def loss_j(a: Any, b: Any) -> Any:
        return jl.real(jl.mul(jl.complex(a, b), jl.complex(a, b))).sum()

    for g, w in zip(spec.grad(loss_s, argnums=(0, 1))(x, y),
                    jax.grad(loss_j, argnums=(0, 1))(x, y)):
        assert_like(g, w, 0)


# ----------------------------------------------------- integer / boolean primitives

ZERO_DERIV: dict[str, Callable[..., Any]] = {
    "floor": lambda m, x: m.floor(x), "ceil": lambda m, x: m.ceil(x),
    "round": lambda m, x: m.round(x), "sign": lambda m, x: m.sign(x),
    "is_finite": lambda m, x: m.is_finite(x), "eq": lambda m, x: m.eq(x, x),
    "ne": lambda m, x: m.ne(x, 1.0), "lt": lambda m, x: m.lt(x, 1.0),
    "le": lambda m, x: m.le(x, 1.0), "gt": lambda m, x: m.gt(x, 1.0),
    "ge": lambda m, x: m.ge(x, 1.0),
}
INT_PRIMS: dict[str, Callable[..., Any]] = {
    "not": lambda m, i: m.bitwise_not(i), "and": lambda m, i: m.bitwise_and(i, i),
    "or": lambda m, i: m.bitwise_or(i, 3), "xor": lambda m, i: m.bitwise_xor(i, 5),
    "shift_left": lambda m, i: m.shift_left(i, 1),
    "shift_right_logical": lambda m, i: m.shift_right_logical(i, 1),
    "shift_right_arithmetic": lambda m, i: m.shift_right_arithmetic(i, 1),
    "population_count": lambda m, i: m.population_count(i), "clz": lambda m, i: m.clz(i),
    "integer_pow": lambda m, i: m.integer_pow(i, 2), "max": lambda m, i: m.max(i, 2),
    "rem": lambda m, i: m.rem(i, 3), "select_n": lambda m, i: m.select_n(m.lt(i, 2), i, i),
}


@pytest.mark.parametrize("name", sorted(ZERO_DERIV))
def test_piecewise_constant_and_predicates_have_zero_tangents(name: str) -> None:
    x = np.array([0.4, -1.6, 2.5], np.float32)
    f = ZERO_DERIV[name]
    s_out, s_t = spec.jvp(lambda a: f(sl, a), (x,), (np.ones_like(x),))
    j_out, j_t = jax.jvp(lambda a: f(jl, a), (x,), (np.ones_like(x),))
    assert_like(s_out, j_out, 0)
    assert np.asarray(s_t).dtype == np.asarray(j_t).dtype
    if np.asarray(j_t).dtype.kind != "V":
        assert_like(s_t, j_t, 0)
    if np.asarray(j_out).dtype == np.float32:
        assert_like(spec.grad(lambda a: f(sl, a).sum())(x),
                    jax.grad(lambda a: f(jl, a).sum())(x), 0)


@pytest.mark.parametrize("name", sorted(INT_PRIMS))
def test_integer_primitives_have_float0_tangents(name: str) -> None:
    i = np.array([1, 2, 7], np.int32)
    f = INT_PRIMS[name]
    t0 = np.zeros(i.shape, jax.dtypes.float0)
    s_out, s_t = spec.jvp(lambda a: f(sl, a), (i,), (t0,))
    j_out, j_t = jax.jvp(lambda a: f(jl, a), (i,), (t0,))
    assert_like(s_out, j_out, 0)
    assert np.asarray(s_t).dtype == np.asarray(j_t).dtype == jax.dtypes.float0
    assert np.shape(s_t) == np.shape(j_t)
    got = spec.grad(lambda a: sl.convert_element_type(f(sl, a), np.float32).sum(),
                    allow_int=True)(i)
    want = jax.grad(lambda a: jl.convert_element_type(f(jl, a), np.float32).sum(),
                    allow_int=True)(i)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want)


# ----------------------------------------------------- jaxpr text

def _loss(m: Any, name: str) -> Callable[..., Any]:
    """fn summed to a scalar (rank-0 values are left alone: spec's
    reduce_sum over no axes transposes with an extra broadcast_in_dim)."""
    fn = getattr(m, name)
    return lambda x: m.reduce_sum(fn(x), tuple(range(np.ndim(x)))) if np.ndim(x) else fn(x)


JAXPR_UNARY = UNARY + ["sin", "cos"]


@pytest.mark.parametrize("name", JAXPR_UNARY)
@pytest.mark.parametrize("arg", ["f32", "weak", "vec"])
def test_unary_jaxpr_text_matches_jax(name: str, arg: str) -> None:
    mid = float(np.mean(DOMAIN[name]))
    x: Any = {"f32": np.float32(mid), "weak": mid, "vec": np.full((3,), mid, np.float32)}[arg]
    sf, jf = _unary(name)
    assert str(spec.make_jaxpr(spec.grad(_loss(sl, name)))(x)) == \
        str(jax.make_jaxpr(jax.grad(_loss(jl, name)))(x))
    assert str(spec.make_jaxpr(lambda a, t: spec.jvp(sf, (a,), (t,)))(x, x)) == \
        str(jax.make_jaxpr(lambda a, t: jax.jvp(jf, (a,), (t,)))(x, x))


@pytest.mark.parametrize("name", ["exp", "sqrt", "log", "tanh", "asinh", "abs", "sign",
                                  "logistic", "atanh", "rsqrt"])
def test_complex_jaxpr_text_matches_jax(name: str) -> None:
    z = np.array([0.5 + 1j, -1.5 + 0.2j], np.complex64)
    sf, jf = _unary(name)
    assert str(spec.make_jaxpr(lambda a, t: spec.jvp(sf, (a,), (t,)))(z, z)) == \
        str(jax.make_jaxpr(lambda a, t: jax.jvp(jf, (a,), (t,)))(z, z))


@pytest.mark.parametrize("name", ["div", "rem", "max", "min", "atan2", "pow", "add", "sub",
                                  "mul", "nextafter"])
@pytest.mark.parametrize("shapes", [((), ()), ((3,), ()), ((), (3,)), ((3, 1), (1, 4))])
def test_binary_jaxpr_text_matches_jax(name: str, shapes: tuple[Any, Any]) -> None:
    sx, sy = shapes
    x = np.full(sx, 1.5, np.float32)
    y = np.full(sy, 0.7, np.float32)
    if name == "pow" and sx != sy and sx and sy:
        return
    sf, jf = getattr(sl, name), getattr(jl, name)
    rank = len(np.broadcast_shapes(sx, sy))

    def s_loss(a: Any, b: Any) -> Any:
        return sl.reduce_sum(sf(a, b), tuple(range(rank))) if rank else sf(a, b)

    def j_loss(a: Any, b: Any) -> Any:
        return jl.reduce_sum(jf(a, b), tuple(range(rank))) if rank else jf(a, b)

    for argnums in ((0,), (1,), (0, 1)):
        assert str(spec.make_jaxpr(spec.grad(s_loss, argnums=argnums))(x, y)) == \
            str(jax.make_jaxpr(jax.grad(j_loss, argnums=argnums))(x, y))
    assert str(spec.make_jaxpr(lambda a, b: spec.jvp(sf, (a, b), (a, b)))(x, y)) == \
        str(jax.make_jaxpr(lambda a, b: jax.jvp(jf, (a, b), (a, b)))(x, y))


@pytest.mark.parametrize("y", [np.int32(3), np.array([0, 1, 2], np.int32)])
def test_pow_integer_exponent_jaxpr_text(y: Any) -> None:
    x = np.array([0.5, 1.5, -2.0], np.float32)
    assert str(spec.make_jaxpr(spec.grad(lambda a: sl.pow(a, y).sum()))(x)) == \
        str(jax.make_jaxpr(jax.grad(lambda a: jl.pow(a, y).sum()))(x))


@pytest.mark.parametrize("k", [-2, -1, 1, 2, 3, 5])
@pytest.mark.parametrize("x", [np.float32(1.5), 1.5])
def test_integer_pow_jaxpr_text(k: int, x: Any) -> None:
    assert str(spec.make_jaxpr(spec.grad(lambda a: sl.integer_pow(a, k)))(x)) == \
        str(jax.make_jaxpr(jax.grad(lambda a: jl.integer_pow(a, k)))(x))


def test_select_clamp_complex_polynomial_jaxpr_text() -> None:
    b3 = np.array([True, False, True])
    i3 = np.array([0, 2, 1], np.int32)
    v = np.array([0.5, 1.5, -2.0], np.float32)
    progs: list[tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = [
        (spec.grad(lambda a, b: sl.select_n(b3, a, b).sum(), argnums=(0, 1)),
         jax.grad(lambda a, b: jl.select_n(b3, a, b).sum(), argnums=(0, 1)), (v, v)),
        (spec.grad(lambda a, c: sl.select_n(i3, a, v, c).sum(), argnums=(0, 1)),
         jax.grad(lambda a, c: jl.select_n(i3, a, v, c).sum(), argnums=(0, 1)), (v, v)),
        (spec.grad(lambda a, b, c: sl.clamp(a, b, c).sum(), argnums=(0, 1, 2)),
         jax.grad(lambda a, b, c: jl.clamp(a, b, c).sum(), argnums=(0, 1, 2)), (v * 0, v, v + 1)),
        (lambda a, b: spec.jvp(sl.clamp, (a, v, b), (a, v, b)),
         lambda a, b: jax.jvp(jl.clamp, (a, v, b), (a, v, b)), (v * 0, v + 1)),
        (spec.grad(lambda a, b: sl.real(sl.mul(sl.complex(a, b), sl.complex(a, b))).sum(),
                   argnums=(0, 1)),
         jax.grad(lambda a, b: jl.real(jl.mul(jl.complex(a, b), jl.complex(a, b))).sum(),
                  argnums=(0, 1)), (v, v)),
        (spec.grad(lambda x: sl.polynomial(x, [1.0, 2.0, 3.0]).sum()),
         jax.grad(lambda x: jl.polynomial(x, [1.0, 2.0, 3.0]).sum()), (v,)),
        (spec.grad(lambda c, x: sl.polynomial(x, [c, c, 2.0]).sum()),
         jax.grad(lambda c, x: jl.polynomial(x, [c, c, 2.0]).sum()), (np.float32(1), v)),
        (spec.grad(spec.grad(sl.digamma)), jax.grad(jax.grad(jl.digamma)), (np.float32(2.5),)),
        (spec.grad(lambda x: sl.real(sl.conj(x))), jax.grad(lambda x: jl.real(jl.conj(x))),
         (np.float32(1.5),)),
        (lambda x, t: spec.jvp(lambda a: sjnp.frexp(a)[0], (x,), (t,)),
         lambda x, t: jax.jvp(lambda a: jjnp.frexp(a)[0], (x,), (t,)), (v, v)),
        (lambda x, t: spec.jvp(lambda a: sjnp.ldexp(a, i3), (x,), (t,)),
         lambda x, t: jax.jvp(lambda a: jjnp.ldexp(a, i3), (x,), (t,)), (v, v)),
    ]
    for sf, jf, args in progs:
        assert str(spec.make_jaxpr(sf)(*args)) == str(jax.make_jaxpr(jf)(*args))


# ----------------------------------------------------- erf and erfc

@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("x", [np.float32(0.5), 0.5, np.array([0.3, -2.0, 20.0, np.inf],
                                                               np.float32), np.float16(0.5)])
def test_erf_second_derivative_uses_exp_neg_sq_rule(name: str, x: Any) -> None:
    """exp(-x^2) in these derivatives is JAX's custom_jvp function
    exp_neg_sq: the jaxprs of the second derivative match, and its value at
    inf is 0 (not inf * 0)."""
    def s_g(a: Any) -> Any:
        return spec.grad(_loss(sl, name))(a)

    def j_g(a: Any) -> Any:
        return jax.grad(_loss(jl, name))(a)

    s_gg = spec.grad(lambda a: s_g(a).sum() if np.ndim(a) else s_g(a))
    j_gg = jax.grad(lambda a: j_g(a).sum() if np.ndim(a) else j_g(a))
    assert str(spec.make_jaxpr(s_gg)(x)) == str(jax.make_jaxpr(j_gg)(x))
    assert_like(s_gg(x), j_gg(x), 8)


@pytest.mark.parametrize("dt", [F32, F64, F16])
def test_exp_neg_sq_matches_jax(dt: np.dtype[Any], x64: None) -> None:
    from jax._src.lax.erf import exp_neg_sq
    x = np.array([0.0, 0.3, -1.7, 4.0, 11.5, 30.0, np.inf], dt)
    assert str(spec.make_jaxpr(E.exp_neg_sq)(x)) == str(jax.make_jaxpr(exp_neg_sq)(x))
    assert_like(E.exp_neg_sq(x), exp_neg_sq(x), 4)
    s_t = spec.jvp(E.exp_neg_sq, (x,), (x,))[1]
    j_t = jax.jvp(exp_neg_sq, (x,), (x,))[1]
    assert_like(s_t, j_t, 4)


# ----------------------------------------------------- linearize paths

COMPOSITES: list[tuple[str, Callable[[Any], Any]]] = [
    ("tanh_exp", lambda m: lambda x: m.tanh(m.exp(x)) * m.log(x + 2.0)),
    ("pow_div", lambda m: lambda x: m.pow(x + 2.0, x) / m.max(x, 0.3)),
    ("asin_erf", lambda m: lambda x: m.asin(x * 0.5) + m.erf(x) * m.atan2(x, 1.5)),
    ("select_clamp", lambda m: lambda x: m.select_n(x > 0, x * 2.0, m.clamp(-1.0, x, 1.0))),
    ("complex", lambda m: lambda x: m.real(m.sqrt(m.complex(x, x + 1.0)) * m.conj(
        m.complex(x, x)))),
    ("digamma", lambda m: lambda x: m.digamma(x + 3.0) * m.integer_pow(x, 3)),
]


@pytest.mark.parametrize("name", [n for n, _ in COMPOSITES])
def test_both_linearize_paths_bitwise_equal(name: str) -> None:
    make = dict(COMPOSITES)[name]
    x = np.array([0.25, -0.5, 1.0], np.float32)
    f = make(sl)
    direct = spec.grad(lambda a: f(a).sum())(x)
    with spec.config.use_direct_linearize(False):
        legacy = spec.grad(lambda a: f(a).sum())(x)
    np.testing.assert_array_equal(np.asarray(direct), np.asarray(legacy))
    assert_like(direct, jax.grad(lambda a: make(jl)(a).sum())(x), 16)


# ----------------------------------------------------- helper primitives

@settings(max_examples=25, deadline=None)
@given(dt=st.sampled_from([F32, F16, np.dtype(ml_dtypes.bfloat16), np.dtype(np.int32),
                           np.dtype(np.int8)]), shape=shapes, seed=st.integers(0, 999))
def test_one_minus_square_values_match_jax(dt: np.dtype[Any], shape: tuple[int, ...],
                                           seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.integers(-20, 20, shape) if dt.kind == "i" else rng.uniform(-3, 3, shape)).astype(dt)
    assert_like(sl.one_minus_square(x), jl.one_minus_square(x), 0)


def test_one_minus_square_special_values_and_typing() -> None:
    x = np.array([1.0, -1.0, 0.99999994, 1e-30, np.inf, -np.inf, np.nan, 0.0], np.float32)
    assert_like(sl.one_minus_square(x), jl.one_minus_square(x), 0)
    assert_like(sl.one_minus_square(2.0), jl.one_minus_square(2.0), 0)
    with pytest.raises(TypeError):
        jl.one_minus_square(np.array([True]))
    with pytest.raises(TypeError, match="one_minus_square C1"):
        sl.one_minus_square(np.array([True]))
    z = np.array([0.5 + 1j, -2 + 0.1j], np.complex64)
    assert_like(sl.one_minus_square(z), jl.one_minus_square(z), 4)
    for x_ in (np.float32(0.5), 0.5, z):
        assert str(spec.make_jaxpr(sl.one_minus_square)(x_)) == \
            str(jax.make_jaxpr(jl.one_minus_square)(x_))


def test_one_minus_square_derivative_has_no_cancellation() -> None:
    x = np.float32(1e-30)
    assert float(spec.grad(sl.one_minus_square)(x)) == float(jax.grad(jl.one_minus_square)(x))
    assert float(spec.grad(sl.one_minus_square)(x)) == pytest.approx(-2e-30)


def _horner(x: np.ndarray, coeffs: list[float], fused: bool, unroll: int | None) -> np.ndarray:
    """Horner's rule in x's dtype as JAX builds it: up to ``unroll`` (8 by default)
    coefficients start from the highest one, more from a zero accumulator (a loop: inf * 0
    is nan there). Each product and sum rounded (NumPy's float16 arithmetic rounds every
    result), or each step one fused multiply-add rounded once."""
    first = len(coeffs) <= (8 if unroll is None else unroll)
    acc = np.full_like(x, coeffs[-1] if first and coeffs else 0)
    for c in reversed(coeffs[:-1] if first else coeffs):
        if fused:
            acc = (acc.astype(F64) * x.astype(F64) + np.float64(x.dtype.type(c))).astype(x.dtype)
        else:
            acc = acc * x + x.dtype.type(c)
    return acc


def _check_float16_horner(x: np.ndarray, coeffs: list[float]) -> None:
    """spec rounds each multiply and add of the rule (the jaxpr's own operations); XLA on a
    CPU with native float16 arithmetic (AVX512-FP16) contracts each step into one fused
    multiply-add, so JAX's bits depend on the machine: it must give one of the two."""
    for unroll in (None, 2):
        with np.errstate(invalid="ignore", over="ignore"):
            stepwise, fused = (_horner(x, coeffs, f, unroll) for f in (False, True))
        ours = sl.polynomial(x, coeffs, unroll=unroll)
        theirs = np.asarray(jl.polynomial(x, coeffs, unroll=unroll))
        assert_like(ours, stepwise, 0)
        assert any(np.array_equal(theirs, want, equal_nan=True) for want in (stepwise, fused))


@pytest.mark.parametrize("coeffs", [[1.0, 0.5, 1 / 6], [2.0, -1.0], [1.0],
                                    [0.3, -0.2, 0.1, 0.5, -0.7, 0.2, 0.9, -0.1, 0.4, 0.8], []])
@pytest.mark.parametrize("dt", [F32, F16, F64])
def test_polynomial_values_and_jaxpr(coeffs: list[float], dt: np.dtype[Any],
                                     x64: None) -> None:
    x = np.array([0.0, 0.5, -1.5, 3.0, np.inf, np.nan], dt)
    if dt == F16:
        _check_float16_horner(x, coeffs)
    else:
        assert_like(sl.polynomial(x, coeffs), jl.polynomial(x, coeffs), 0)
        assert_like(sl.polynomial(x, coeffs, unroll=2), jl.polynomial(x, coeffs, unroll=2), 0)
    assert str(spec.make_jaxpr(lambda a: sl.polynomial(a, coeffs))(x)) == \
        str(jax.make_jaxpr(lambda a: jl.polynomial(a, coeffs))(x))
    if coeffs:
        check_grads(lambda a: sl.polynomial(a, coeffs), (np.asarray(x[:4], F64),), order=2)


def test_polynomial_broadcast_coefficients_and_typing() -> None:
    x = np.array([[0.5], [1.5]], np.float32)
    c = np.array([[1.0, 2.0, 3.0]], np.float32)
    assert_like(sl.polynomial(x, [c, 2.0]), jl.polynomial(x, [c, 2.0]), 0)
    with pytest.raises(TypeError):
        jl.polynomial_p.bind(np.float32(1), np.int32(1))
    with pytest.raises(TypeError, match="polynomial C3"):
        E.polynomial_p.bind(np.float32(1), np.int32(1))
    # JAX fails late (an IndexError while lowering); spec rejects it when typing.
    with pytest.raises(ValueError, match="polynomial C1"):
        E.polynomial_p.bind(np.float32(1))


@pytest.mark.parametrize("dt", [F32, F16, F64])
def test_polygamma_values(dt: np.dtype[Any], x64: None) -> None:
    x = np.array([0.3, 1.0, 2.5, 7.0, 30.0, -1.5, -2.0, 0.0, np.inf, np.nan], dt)
    for m in (0.0, 1.0, 2.0, 1.5, -1.0):
        mm = np.full_like(x, m)
        # m = 0, 1 (the derivatives of lgamma and digamma) agree bitwise;
        # higher m within XLA's float32 lgamma/exp differences.
        tol = 0 if m in (0.0, 1.0) or dt == F64 else 64
        assert_like(sl.polygamma(mm, x), jl.polygamma(mm, x), tol)
    assert str(spec.make_jaxpr(lambda a: sl.polygamma(sjnp.ones_like(a), a))(x)) == \
        str(jax.make_jaxpr(lambda a: jl.polygamma(jjnp.ones_like(a), a))(x))
    with pytest.raises(TypeError):
        jl.polygamma(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="polygamma C1"):
        sl.polygamma(np.int32(1), np.int32(2))


def test_lax_exports() -> None:
    for name in ("one_minus_square", "polygamma", "polynomial", "reciprocal", "AccuracyMode"):
        assert hasattr(sl, name) and hasattr(jl, name)
    assert str(sl.AccuracyMode.HIGHEST) == str(jl.AccuracyMode.HIGHEST)
    assert re.fullmatch(r"AccuracyMode\.HIGHEST", str(sl.AccuracyMode.HIGHEST))
    assert_like(sl.reciprocal(np.float32(4.0)), jl.reciprocal(np.float32(4.0)), 0)


# ----------------------------------------------------- ldexp / frexp

def test_ldexp_frexp_derivatives() -> None:
    x = np.array([1.5, -0.3, 8.0], np.float32)
    e = np.array([2, -1, 0], np.int32)
    assert_like(spec.grad(lambda a: sjnp.ldexp(a, e).sum())(x),
                jax.grad(lambda a: jjnp.ldexp(a, e).sum())(x), 0)
    s_t = spec.jvp(lambda a: sjnp.frexp(a)[0], (x,), (x,))[1]
    j_t = jax.jvp(lambda a: jjnp.frexp(a)[0], (x,), (x,))[1]
    assert_like(s_t, j_t, 0)
    _, (_, s_te) = spec.jvp(sjnp.frexp, (x,), (x,))
    _, (_, j_te) = jax.jvp(jjnp.frexp, (x,), (x,))
    assert np.asarray(s_te).dtype == np.asarray(j_te).dtype == jax.dtypes.float0


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 99))
def test_transposes_reject_nonlinear_use(seed: int) -> None:
    """Non-linear primitives have no transpose: transposing them fails like
    JAX (NotImplementedError), not with an internal error."""
    x = np.float32(seed / 100 + 0.5)
    with pytest.raises(NotImplementedError):
        jax.linear_transpose(jl.exp, x)(x)
    with pytest.raises(NotImplementedError):
        spec.linear_transpose(sl.exp, x)(x)
