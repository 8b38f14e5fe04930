"""pad, repeat, nan-reductions, top_k, reduce_precision, .at[].divide/power/apply,
nonzero & co, take_along_axis, diagonal/diag/trace/tril/triu: compared with
real JAX (the oracle) run live."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.lax as slax
import spec.numpy as snp
from spec._src.numpy.indexing import _where_one_arg

Fn = Callable[[Any], Any]


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _weak(x: Any) -> bool:
    return bool(x.aval.weak_type) if hasattr(x, "aval") else False


def assert_same(ours: Any, theirs: Any) -> None:
    """Values (bit-exact, NaN == NaN), dtypes, shapes and weak types agree."""
    a, b = _leaves(ours), _leaves(theirs)
    assert len(a) == len(b)
    for o, t in zip(a, b):
        o_np, t_np = np.asarray(o), np.asarray(t)
        assert o_np.dtype == t_np.dtype, (o_np.dtype, t_np.dtype)
        assert o_np.shape == t_np.shape, (o_np.shape, t_np.shape)
        np.testing.assert_array_equal(o_np, t_np)
        assert _weak(o) == bool(t.weak_type)


def run_both(f: Callable[[Any], Any], *args: Any) -> tuple[Any, Any]:
    """f(spec.numpy-or-lax namespace) in spec and in JAX; exceptions as classes."""
    out = []
    for ns in ((snp, slax), (jnp, jax.lax)):
        try:
            out.append(f(ns))
        except Exception as e:  # noqa: BLE001 (the class is what is compared)
            out.append(type(e))
    return out[0], out[1]


def check(f: Callable[[Any], Any]) -> None:
    ours, theirs = run_both(f)
    if isinstance(theirs, type):
        assert isinstance(ours, type) and issubclass(ours, theirs), (ours, theirs)
        return
    assert not isinstance(ours, type), ours
    assert_same(ours, theirs)


def check_jaxpr(fs: Fn, fj: Fn, *args: Any) -> None:
    assert str(spec.make_jaxpr(fs)(*args)) == str(jax.make_jaxpr(fj)(*args))


RNG = np.random.default_rng(0)
F32 = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan],
                [0.5, -np.inf, 2.0, np.nan]], np.float32)


# =================================================================== pad

PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "empty", "maximum",
             "minimum", "mean"]
PAD_WIDTHS: list[Any] = [0, 2, (1, 3), ((0, 2), (3, 1)), [[1, 1]], (4,)]


@pytest.mark.parametrize("mode", PAD_MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_modes_values(mode: str, dtype: Any) -> None:
    if dtype == np.bool_ and mode == "mean":
        return
    # Data of the test's own (the module's generator would depend on which tests ran first).
    x = np.random.default_rng(PAD_MODES.index(mode)).integers(-5, 6, (3, 4)).astype(dtype)
    # A float mean divides by the count, a constant in JAX's jit, which XLA turns into a
    # multiplication by its rounded reciprocal: an ULP from spec's division (SPEC.md
    # section 8, rule 5), per axis padded, the second axis's means taken over the first's.
    compare = _close_to_jax if mode == "mean" and dtype == np.float32 else check
    for pw in PAD_WIDTHS:
        compare(lambda ns: ns[0].pad(x, pw, mode=mode))
    compare(lambda ns: ns[0].pad(x[0], 7, mode=mode))  # padding beyond the size


def _close_to_jax(f: Callable[[Any], Any]) -> None:
    ours, theirs = run_both(f)
    assert str(spec.typeof(ours)) == str(jax.typeof(theirs))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=0)


def test_pad_options() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda ns: ns[0].pad(x, 2, constant_values=-1.5))
    check(lambda ns: ns[0].pad(x, 2, constant_values=((1, 2), (3, 4))))
    check(lambda ns: ns[0].pad(x, 2, constant_values=(7,)))
    check(lambda ns: ns[0].pad(x, (2, 5), mode="reflect", reflect_type="odd"))
    check(lambda ns: ns[0].pad(x, (2, 5), mode="symmetric", reflect_type="odd"))
    check(lambda ns: ns[0].pad(x, 3, mode="maximum", stat_length=2))
    check(lambda ns: ns[0].pad(x.astype(np.int32), 3, mode="mean", stat_length=(1, 2)))
    check(lambda ns: ns[0].pad(np.float32(3), 2))
    check(lambda ns: ns[0].pad(np.ones((2, 0), np.float32), 1))
    weak = jax.lax.broadcast(2.0, (3,))
    sweak = slax.broadcast(2.0, (3,))
    assert_same(snp.pad(sweak, 1), jnp.pad(weak, 1))


def test_pad_errors() -> None:
    x = np.ones((2, 3), np.float32)
    check(lambda ns: ns[0].pad(x, -1))
    check(lambda ns: ns[0].pad(x, 1.5))
    check(lambda ns: ns[0].pad(x, ((1, 2, 3),)))
    check(lambda ns: ns[0].pad(x, 1, mode="bogus"))
    check(lambda ns: ns[0].pad(x, 1, mode="edge", constant_values=1))
    check(lambda ns: ns[0].pad(np.ones((0, 3)), 1, mode="wrap"))
    check(lambda ns: ns[0].pad(x, 2, constant_values=np.ones(3)))


@pytest.mark.parametrize("kw", [dict(pad_width=1), dict(pad_width=((1, 2), (0, 1)),
                                                       constant_values=3),
                                dict(pad_width=1, mode="edge"),
                                dict(pad_width=(2, 5), mode="reflect"),
                                dict(pad_width=(2, 5), mode="symmetric"),
                                dict(pad_width=(2, 5), mode="wrap"),
                                dict(pad_width=2, mode="mean")])
def test_pad_jaxpr(kw: dict[str, Any]) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check_jaxpr(lambda a: snp.pad(a, **kw), lambda a: jnp.pad(a, **kw), x)


# ================================================================ repeat


@pytest.mark.parametrize("repeats", [np.array([1, 0, 2]), np.array([2]), 2,
                                     np.array([0, 0, 0]), [3, 1, 1]])
@pytest.mark.parametrize("total", [None, 0, 2, 6])
def test_repeat_array_repeats(repeats: Any, total: Any) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda ns: ns[0].repeat(x, repeats, axis=1, total_repeat_length=total))
    check(lambda ns: ns[0].repeat(x.astype(np.int16), repeats, axis=-1,
                                  total_repeat_length=total))


def test_repeat_flat_scalar_and_errors() -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(lambda ns: ns[0].repeat(x, np.arange(6) % 3))
    check(lambda ns: ns[0].repeat(np.float32(2), np.array([3])))
    check(lambda ns: ns[0].repeat(np.float32(2), np.array([3, 1])))
    check(lambda ns: ns[0].repeat(x, np.array([1, 2]), axis=1))


def test_repeat_traced() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = np.array([1, 0, 2], np.int32)
    ours = spec.jit(lambda a, r: snp.repeat(a, r, axis=1, total_repeat_length=4))(x, r)
    theirs = jax.jit(lambda a, r: jnp.repeat(a, r, axis=1, total_repeat_length=4))(x, r)
    assert_same(ours, theirs)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda a, r: jnp.repeat(a, r, axis=1))(x, r)
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(lambda a, r: snp.repeat(a, r, axis=1))(x, r)


# ======================================================== nan-reductions

NAN_FUNS = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
            "nanargmax", "nanargmin", "nancumsum", "nancumprod"]
CUMULATIVE = {"nancumsum", "nancumprod"}


@pytest.mark.parametrize("name", NAN_FUNS)
def test_nan_reductions(name: str) -> None:
    arrays = [F32, F32.astype(np.float16), np.arange(12, dtype=np.int32).reshape(3, 4),
              np.array([[True, False], [True, True]]), F32[0]]
    axes: list[Any] = [None, 0, 1, -1] if name not in CUMULATIVE else [None, 0, 1]
    for x in arrays:
        for axis in axes:
            if axis is not None and x.ndim == 1 and axis == 1:
                continue
            kw: dict[str, Any] = {} if name in CUMULATIVE or "arg" in name \
                else {"keepdims": axis == 0}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours, theirs = run_both(lambda ns: getattr(ns[0], name)(x, axis=axis, **kw))
            if isinstance(theirs, type):
                assert isinstance(ours, type) and issubclass(ours, theirs)
                continue
            o, t = np.asarray(ours), np.asarray(theirs)
            assert o.dtype == t.dtype and o.shape == t.shape
            assert _weak(ours) == theirs.weak_type
            # var/std/mean divide and take a root: allow rounding differences.
            np.testing.assert_allclose(o.astype(np.float64), t.astype(np.float64),
                                       rtol=2e-3 if o.dtype == np.float16 else 1e-6)


def test_nan_reductions_options(x64: None) -> None:
    x = F32.astype(np.float64)
    check(lambda ns: ns[0].nansum(x, axis=1, dtype=np.float32))
    check(lambda ns: ns[0].nanprod(x, where=np.isfinite(x), axis=0))
    check(lambda ns: ns[0].nanmax(x, axis=1, initial=-7.0))
    check(lambda ns: ns[0].nanmin(np.arange(4), initial=2))
    check(lambda ns: ns[0].nancumsum(np.array([True, False, True])))
    check(lambda ns: ns[0].nancumsum(x, dtype=np.int32, axis=1))
    check(lambda ns: ns[0].nanargmax(x, axis=1, keepdims=True))
    ours = snp.nanvar(x, axis=1, ddof=1)
    theirs = jnp.nanvar(x, axis=1, ddof=1)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype


@pytest.mark.parametrize("name", NAN_FUNS)
def test_nan_reductions_jaxpr(name: str) -> None:
    x = F32[:2]
    axis = None if name in CUMULATIVE else 0
    check_jaxpr(lambda a: getattr(snp, name)(a, axis=axis),
                lambda a: getattr(jnp, name)(a, axis=axis), x)
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    check_jaxpr(lambda a: getattr(snp, name)(a), lambda a: getattr(jnp, name)(a), xi)


# ================================================================= top_k

@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8,
                                   np.uint32, np.bool_])
def test_top_k_values(dtype: Any) -> None:
    if dtype == np.bool_:
        x = RNG.integers(0, 2, (4, 7)).astype(bool)
    else:
        x = RNG.integers(-3, 4, (4, 7)).astype(dtype)  # many ties: checks stability
    if np.dtype(dtype).kind == "f":
        x[0, 2] = np.nan
        x[1, :3] = [-0.0, 0.0, -0.0]
        x[2, 1] = -np.nan
        x[3, 4] = -np.inf
    for k in (0, 1, 3, 7):
        check(lambda ns: ns[1].top_k(x, k))
    check(lambda ns: ns[1].top_k(x, 2, axis=0))


def test_top_k_weak_jaxpr_and_errors() -> None:
    assert_same(slax.top_k(slax.broadcast(2.0, (3,)), 2), jax.lax.top_k(
        jax.lax.broadcast(2.0, (3,)), 2))
    x = np.ones((2, 3), np.float32)
    check_jaxpr(lambda a: slax.top_k(a, 2), lambda a: jax.lax.top_k(a, 2), x)
    check_jaxpr(lambda a: slax.top_k(a, 1, axis=0), lambda a: jax.lax.top_k(a, 1, axis=0), x)
    for bad in (lambda ns: ns[1].top_k(x, 4), lambda ns: ns[1].top_k(x, -1),
                lambda ns: ns[1].top_k(np.float32(1), 1),
                lambda ns: ns[1].top_k(x.astype(np.complex64), 1),
                lambda ns: ns[1].top_k(x, 1, axis=2)):
        ours, theirs = run_both(bad)
        assert isinstance(theirs, type) and isinstance(ours, type)
        assert issubclass(ours, theirs), (ours, theirs)


def test_top_k_rule_constraints() -> None:
    from spec._src.lax.reductions import top_k_p
    from spec._src.core.types import ArrayType
    with pytest.raises(TypeError, match="C3"):
        top_k_p.typing(ArrayType((), np.dtype(np.float32)), k=0, axis=0, is_stable=True)
    with pytest.raises(ValueError, match="C5"):
        top_k_p.typing(ArrayType((2,), np.dtype(np.float32)), k=3, axis=0, is_stable=True)


# ====================================================== reduce_precision

def _rp_bits(x: np.ndarray, e: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    u = f"uint{8 * x.dtype.itemsize}"
    ours = np.asarray(slax.reduce_precision(x, e, m)).view(u)
    theirs = np.asarray(jax.lax.reduce_precision(x, e, m)).view(u)
    return ours, theirs


@settings(max_examples=30, deadline=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64),
       e=st.integers(1, 10), m=st.integers(0, 25))
def test_reduce_precision_f32_bit_exact(bits: list[int], e: int, m: int) -> None:
    x = np.array(bits, np.uint32).view(np.float32)
    ours, theirs = _rp_bits(x, e, m)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
def test_reduce_precision_other_dtypes(dtype: Any, x64: None) -> None:
    nbits = 8 * np.dtype(dtype).itemsize
    bits = RNG.integers(0, 2**nbits, 4000, dtype=np.uint64).astype(f"uint{nbits}")
    x = bits.view(dtype)
    for e, m in [(1, 0), (2, 1), (4, 3), (5, 2), (5, 10), (8, 7), (11, 52), (8, 23)]:
        ours, theirs = _rp_bits(x, e, m)
        np.testing.assert_array_equal(ours, theirs)


def test_reduce_precision_typing_jaxpr_errors() -> None:
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    check_jaxpr(lambda a: slax.reduce_precision(a, 5, 10),
                lambda a: jax.lax.reduce_precision(a, 5, 10), x)
    assert_same(slax.reduce_precision(2.0, 5, 10), jax.lax.reduce_precision(2.0, 5, 10))
    for bad in (lambda ns: ns[1].reduce_precision(x.astype(np.int32), 5, 10),
                lambda ns: ns[1].reduce_precision(x.astype(np.complex64), 5, 10),
                lambda ns: ns[1].reduce_precision(x, 0, 10),
                lambda ns: ns[1].reduce_precision(x, 5, -1)):
        ours, theirs = run_both(bad)
        assert isinstance(theirs, type) and isinstance(ours, type)
        assert issubclass(ours, theirs), (ours, theirs)


# ================================================= .at[].divide/power/apply

def test_at_divide_power_apply() -> None:
    xi = np.arange(1, 6, dtype=np.int32)
    xf = np.linspace(0.5, 3, 5, dtype=np.float32)
    dup = np.array([1, 1, 4])
    for x in (xi, xf):
        check(lambda ns: ns[0].asarray(x).at[1].divide(2))
        check(lambda ns: ns[0].asarray(x).at[dup].divide(3))
        check(lambda ns: ns[0].asarray(x).at[::2].power(2))
        check(lambda ns: ns[0].asarray(x).at[dup].power(2))
        check(lambda ns: ns[0].asarray(x).at[dup].apply(lambda v: v * 3))
        check(lambda ns: ns[0].asarray(x).at[np.array([0, 0, 9])].apply(lambda v: v + 1))
        check(lambda ns: ns[0].asarray(x).at[np.array([0, 9])].apply(lambda v: v + 1,
                                                                     mode="clip"))
    ours = spec.jit(lambda a: a.at[dup].apply(snp.sin))(xf)
    theirs = jax.jit(lambda a: a.at[dup].apply(jnp.sin))(xf)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    # One scatter whose update computation is the function, as JAX stages it.
    assert str(spec.make_jaxpr(lambda a: a.at[dup].apply(lambda v: v * 3))(xf)) == \
        str(jax.make_jaxpr(lambda a: a.at[dup].apply(lambda v: v * 3))(xf))


# ========================================================== nonzero & co

NZ = [np.array([[0, 1, 0], [2, 0, 3]]), np.array([0.0, -0.0, 2.0]),
      np.array([[True, False], [False, True]]), np.zeros((2, 0))]


def test_nonzero_family() -> None:
    for x in NZ:
        for kw in ({}, {"size": 5}, {"size": 1, "fill_value": -1}):
            check(lambda ns: ns[0].nonzero(x, **kw))
            check(lambda ns: ns[0].argwhere(x, **kw))
            check(lambda ns: ns[0].flatnonzero(x, **kw))
        ours = _where_one_arg(x)
        assert_same(ours, jnp.where(x))
    check(lambda ns: ns[0].argwhere(np.array(3)))
    check(lambda ns: ns[0].argwhere(np.array(0)))
    check(lambda ns: ns[0].nonzero(np.array(1)))
    check(lambda ns: ns[0].nonzero(NZ[0], size=4, fill_value=(-1, -2)))


def test_nonzero_traced() -> None:
    x = NZ[0]
    ours = spec.jit(lambda a: snp.nonzero(a, size=5, fill_value=(-1, -2)))(x)
    theirs = jax.jit(lambda a: jnp.nonzero(a, size=5, fill_value=(-1, -2)))(x)
    assert_same(ours, theirs)
    assert_same(spec.jit(lambda a: snp.argwhere(a, size=2))(x),
                jax.jit(lambda a: jnp.argwhere(a, size=2))(x))
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(snp.nonzero)(x)


def test_nonzero_x64(x64: None) -> None:
    check(lambda ns: ns[0].nonzero(NZ[0], size=4, fill_value=np.int64(7)))
    check(lambda ns: ns[0].argwhere(NZ[1]))


# ============================================= take_along_axis / diagonal ...

def test_take_along_axis() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 3], [1, -1], [5, 2]])
    check(lambda ns: ns[0].take_along_axis(x, idx, axis=1))
    check(lambda ns: ns[0].take_along_axis(x.astype(np.int32), idx, axis=-1))
    check(lambda ns: ns[0].take_along_axis(x, idx, axis=1, mode="clip"))
    check(lambda ns: ns[0].take_along_axis(x, idx, axis=1, fill_value=-1))
    check(lambda ns: ns[0].take_along_axis(x, np.array([[0, 2, 1, 0]]), axis=0))
    check(lambda ns: ns[0].take_along_axis(x, np.array([[1], [0], [3]]), axis=1))
    check(lambda ns: ns[0].take_along_axis(x, np.array([1, 2]), axis=None))
    check(lambda ns: ns[0].take_along_axis(x, np.array([1, 2]), axis=0))
    check(lambda ns: ns[0].take_along_axis(x, idx.astype(np.float32), axis=1))
    a3 = np.arange(24).reshape(2, 3, 4)
    check(lambda ns: ns[0].take_along_axis(a3, np.argsort(-a3, axis=1), axis=1))


def test_diagonal_diag_trace() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a3 = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    for off in (-4, -1, 0, 1, 3):
        check(lambda ns: ns[0].diagonal(x, off))
        check(lambda ns: ns[0].diag(x, off))
        check(lambda ns: ns[0].trace(x, off))
        check(lambda ns: ns[0].diag(np.arange(3, dtype=np.float32), off))
    check(lambda ns: ns[0].diagonal(a3, 1, 2, 0))
    check(lambda ns: ns[0].diagonal(x[:3, :3]))
    check(lambda ns: ns[0].diagonal(np.eye(3, dtype=bool)))
    check(lambda ns: ns[0].trace(a3, 0, 0, 2))
    check(lambda ns: ns[0].trace(np.eye(3, dtype=bool)))
    check(lambda ns: ns[0].trace(x, dtype=np.int8))
    check(lambda ns: ns[0].trace(x, 0, 1, 1))
    check(lambda ns: ns[0].diagonal(np.ones(3)))
    check(lambda ns: ns[0].diag(np.ones((2, 2, 2))))
    check_jaxpr(lambda a: snp.trace(a), lambda a: jnp.trace(a), x)


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu(name: str) -> None:
    for x in (np.arange(12, dtype=np.float32).reshape(3, 4),
              np.arange(24, dtype=np.int32).reshape(2, 3, 4), np.ones((3, 3), bool)):
        for k in (-2, 0, 1, 5):
            check(lambda ns: getattr(ns[0], name)(x, k))
    check(lambda ns: getattr(ns[0], name)(np.ones(3)))
    x3 = np.ones((2, 3, 4), np.float32)
    check_jaxpr(lambda a: getattr(snp, name)(a, 1), lambda a: getattr(jnp, name)(a, 1), x3)
