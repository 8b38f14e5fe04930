"""Reductions, cumulative reductions, sort and dot_general, with their lax
wrappers and jnp functions, checked live against real JAX."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import lax as slax
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.support.pair import raises_as

RNG = np.random.default_rng(0)
F32 = RNG.standard_normal((3, 4)).astype(np.float32)
I32 = RNG.integers(-50, 50, (3, 4)).astype(np.int32)
B = F32 > 0


def _run(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """(spec's value, jax's value) of ``fn(lax_or_jnp...)`` built per side."""
    return fn(spec, slax, snp)(*args), fn(jax, jax.lax, jnp)(*args)


def _check_value(s: Any, j: Any, exact: bool = True) -> None:
    assert str(spec.typeof(s)) == str(jax.typeof(j))
    assert s.aval.weak_type == j.weak_type
    sv, jv = np.asarray(s), np.asarray(j)
    assert sv.dtype == jv.dtype and sv.shape == jv.shape
    if exact:
        np.testing.assert_array_equal(sv, jv)
    else:
        np.testing.assert_allclose(sv.astype(np.float64), jv.astype(np.float64),
                                   rtol=2e-3 if sv.dtype.itemsize < 4 else 2e-6, atol=1e-6)


def same(fn: Callable[..., Any], *args: Any, exact: bool = True, jaxpr: bool = True) -> None:
    """Values, types, weak types and (optionally) jaxpr text agree with JAX."""
    s, j = _run(fn, *args)
    for a, b in zip(jax.tree_util.tree_leaves(s), jax.tree_util.tree_leaves(j)):
        _check_value(a, b, exact)
    if jaxpr:
        sj = str(spec.make_jaxpr(fn(spec, slax, snp))(*args))
        jj = str(jax.make_jaxpr(fn(jax, jax.lax, jnp))(*args))
        assert sj == jj


def raises_same(fn: Callable[..., Any], *args: Any) -> type[BaseException]:
    """spec raises iff JAX raises, and with an exception of JAX's class."""
    try:
        fn(jax, jax.lax, jnp)(*args)
    except Exception as err:  # noqa: BLE001 - the oracle's class is what we compare
        raises_as(lambda: fn(spec, slax, snp)(*args), err)
        return type(err)
    fn(spec, slax, snp)(*args)
    raise AssertionError("JAX did not raise")


def _needs(*names: str) -> None:
    """The lax functions of other families a test relies on must exist."""
    missing = [n for n in names if not hasattr(slax, n)]
    assert not missing, f"spec.lax lacks {missing}"


# ------------------------------------------------------------ lax reductions

@pytest.mark.parametrize("prim", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("x", [F32, I32, I32.astype(np.int8), I32.astype(np.uint8)],
                         ids=["f32", "i32", "i8", "u8"])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1), ()])
def test_lax_reduce_numeric(prim: str, x: np.ndarray, axes: tuple[int, ...]) -> None:
    same(lambda j, lax, n: lambda a: getattr(lax, prim)(a, axes), x, exact=x.dtype.kind != "f")


def test_reduce_sum_int_overflow_wraps() -> None:
    big = np.full((4,), 2**30, np.int32)
    same(lambda j, lax, n: lambda a: lax.reduce_sum(a, (0,)), big)
    small = np.full((300,), 100, np.int8)
    same(lambda j, lax, n: lambda a: lax.reduce_sum(a, (0,)), small)
    same(lambda j, lax, n: lambda a: lax.reduce_prod(a, (0,)), small)


@pytest.mark.parametrize("prim", ["reduce_and", "reduce_or", "reduce_xor"])
@pytest.mark.parametrize("x", [B, I32, I32.astype(np.uint16)], ids=["bool", "i32", "u16"])
def test_lax_reduce_logical(prim: str, x: np.ndarray) -> None:
    same(lambda j, lax, n: lambda a: getattr(lax, prim)(a, (1,)), x)


def test_reduce_max_nan_and_empty() -> None:
    x = np.array([[1.0, np.nan, 3.0], [-1.0, 0.0, 2.0]], np.float32)
    same(lambda j, lax, n: lambda a: lax.reduce_max(a, (1,)), x)
    same(lambda j, lax, n: lambda a: lax.reduce_min(a, (1,)), x)
    e = np.zeros((2, 0), np.float32)
    same(lambda j, lax, n: lambda a: lax.reduce_max(a, (1,)), e)
    same(lambda j, lax, n: lambda a: lax.reduce_min(a, (1,)), e.astype(np.int32))


def test_reduce_weak_type() -> None:
    same(lambda j, lax, n: lambda: lax.reduce_sum(2.0, ()), jaxpr=False)
    same(lambda j, lax, n: lambda: lax.reduce_max(3, ()), jaxpr=False)


@pytest.mark.parametrize("fn", [
    lambda j, lax, n: lambda: lax.reduce_sum(n.asarray(F32), (2,)),
    lambda j, lax, n: lambda: lax.reduce_sum(n.asarray(F32), (0, 0)),
    lambda j, lax, n: lambda: lax.reduce_sum(n.asarray(B), (0,)),
    lambda j, lax, n: lambda: lax.reduce_and(n.asarray(F32), (0,)),
    lambda j, lax, n: lambda: lax.argmax(n.asarray(F32), 0, np.float32),
    lambda j, lax, n: lambda: lax.argmax(n.asarray(np.zeros((0, 2), np.float32)), 0, np.int32),
    lambda j, lax, n: lambda: lax.cumsum(n.asarray(F32), -1),
    lambda j, lax, n: lambda: lax.cumsum(n.asarray(F32), 2),
    lambda j, lax, n: lambda: lax.cumsum(n.asarray(B), 0),
    lambda j, lax, n: lambda: lax.sort((n.asarray(F32), n.asarray(I32[0]))),
    lambda j, lax, n: lambda: lax.sort(n.asarray(F32), num_keys=2),
    lambda j, lax, n: lambda: lax.sort((n.asarray(F32), n.asarray(F32)), num_keys=3),
])
def test_lax_errors(fn: Callable[..., Any]) -> None:
    raises_same(fn)


# --------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("x", [
    np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, -1.0, 2.0]], np.float32),
    np.array([[0.0, -0.0, 0.0], [-0.0, 0.0, -0.0]], np.float32),
    np.array([[True, False, True], [False, False, False]]),
    I32,
    F32.astype(ml_dtypes.bfloat16),
], ids=["nan", "zeros", "bool", "i32", "bf16"])
@pytest.mark.parametrize("prim", ["argmax", "argmin"])
def test_argminmax(x: np.ndarray, prim: str) -> None:
    for axis in range(x.ndim):
        same(lambda j, lax, n: lambda a: getattr(lax, prim)(a, axis, np.int32), x)
    same(lambda j, lax, n: lambda a: getattr(n, prim)(a, axis=1), x)


# -------------------------------------------------------------- cumulative

@pytest.mark.parametrize("prim", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative(prim: str, reverse: bool) -> None:
    exact = prim in ("cummax", "cummin")
    same(lambda j, lax, n: lambda a: getattr(lax, prim)(a, 1, reverse=reverse), F32,
         exact=exact)
    if prim != "cumlogsumexp":
        same(lambda j, lax, n: lambda a: getattr(lax, prim)(a, 0, reverse=reverse), I32)


def test_cumsum_nan_and_wrap() -> None:
    x = np.array([1.0, np.nan, 2.0, -np.inf], np.float32)
    same(lambda j, lax, n: lambda a: lax.cummax(a, 0), x)
    same(lambda j, lax, n: lambda a: lax.cumsum(a, 0), np.full((5,), 100, np.int8))


# --------------------------------------------------------------------- sort

SORT_X = np.array([[3.0, np.nan, -0.0, 0.0, -np.inf, -np.nan, 1.0, 0.0]], np.float32)


def test_sort_total_order() -> None:
    same(lambda j, lax, n: lambda a: lax.sort(a), SORT_X)
    idx = np.arange(SORT_X.size, dtype=np.int32).reshape(SORT_X.shape)
    # The permutation (carried by an index operand) shows -0.0/0.0 tie order and NaNs last.
    same(lambda j, lax, n: lambda a, i: lax.sort_key_val(a, i), SORT_X, idx)


def test_sort_multi_key() -> None:
    k1 = np.array([1, 0, 1, 0, 1, 0], np.int32)
    k2 = np.array([3.0, 1.0, 2.0, np.nan, 2.0, 1.0], np.float32)
    v = np.arange(6, dtype=np.int32)
    same(lambda j, lax, n: lambda a, b, c: lax.sort((a, b, c), num_keys=2), k1, k2, v)
    same(lambda j, lax, n: lambda a, b, c: lax.sort((a, b, c), num_keys=1, dimension=0),
         k1, k2, v)


def test_sort_complex_and_axis() -> None:
    c = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 2j, np.nan + 0j], np.complex64)
    same(lambda j, lax, n: lambda a: lax.sort(a), c)
    same(lambda j, lax, n: lambda a: lax.sort(a, dimension=0), F32)


def test_jnp_sort_argsort() -> None:
    same(lambda j, lax, n: lambda a: n.sort(a, axis=0), F32)
    same(lambda j, lax, n: lambda a: n.sort(a), SORT_X)


def test_jnp_sort_extras() -> None:
    _needs("reshape", "rev", "broadcasted_iota")
    same(lambda j, lax, n: lambda a: n.sort(a, axis=None), F32)
    same(lambda j, lax, n: lambda a: n.sort(a, descending=True), F32)
    # Values only: the core prints the unused sorted-keys output of argsort's
    # sort equation as `_`, JAX names it (a core printer difference).
    same(lambda j, lax, n: lambda a: n.argsort(a), SORT_X, jaxpr=False)
    same(lambda j, lax, n: lambda a: n.argsort(a, descending=True), F32, jaxpr=False)


# --------------------------------------------------------------- dot_general

def _dg(dims: Any, **kw: Any) -> Callable[..., Any]:
    return lambda j, lax, n: lambda a, b: lax.dot_general(a, b, dims, **kw)


MM = (((1,), (0,)), ((), ()))


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int8, np.uint8, np.bool_,
                                np.float16, ml_dtypes.bfloat16, np.complex64])
def test_dot_general_dtypes(dt: Any) -> None:
    a = RNG.integers(0, 100, (4, 5)).astype(dt)
    b = RNG.integers(0, 100, (5, 3)).astype(dt)
    same(_dg(MM), a, b)


def test_dot_general_narrow_float_accumulates_in_f32() -> None:
    # 1 + 2048 * 2**-11 style cancellation: f16 accumulation would lose the small terms.
    a = np.concatenate([[2048.0], np.ones(64)]).astype(np.float16)[None, :]
    b = np.ones((65, 1), np.float16)
    same(_dg(MM), a, b)


def test_dot_general_int_wrap_and_mixed() -> None:
    a = np.full((2, 300), 100, np.int8)
    same(_dg(MM), a, a.T.copy())
    same(_dg(MM), I32, F32.T.copy(), exact=False)  # spec rounds once, XLA per add
    same(_dg(MM), I32, I32.T.astype(np.uint32).copy())
    same(_dg(MM, preferred_element_type=np.int32), a, a.T.copy())
    same(_dg(MM, preferred_element_type=np.float32), B, B.T.copy())


@pytest.mark.parametrize("precision", [None, "highest", jax.lax.Precision.HIGH,
                                       ("default", "high")])
def test_dot_general_precision_printing(precision: Any) -> None:
    sp = precision
    if isinstance(precision, jax.lax.Precision):
        sp = slax.Precision[precision.name]

    def fn(j: Any, lax: Any, n: Any) -> Any:
        p = sp if j is spec else precision
        return lambda a, b: lax.dot_general(a, b, (((1,), (1,)), ((0,), (0,))), precision=p)

    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    same(fn, x, x, exact=False)


def test_precision_enum() -> None:
    for p in ("DEFAULT", "HIGH", "HIGHEST"):
        assert repr(slax.Precision[p]) == repr(jax.lax.Precision[p])
        assert str(slax.Precision[p]) == str(jax.lax.Precision[p])
    assert slax.Precision("highest") is slax.Precision.HIGHEST


def test_dot_general_batch_order() -> None:
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 4, 2, 6)).astype(np.float32)
    same(_dg((((3, 2), (0, 1)), ((0,), (2,)))), a, b, exact=False)


@pytest.mark.parametrize("dims,shapes", [
    ((((1,), (0,)), ((), ())), ((2, 3), (4, 5))),
    ((((2,), (0,)), ((), ())), ((2, 3), (3,))),
    ((((0, 0), (0, 1)), ((), ())), ((3, 3), (3, 3))),
    ((((1,), (1,)), ((0,), ())), ((3, 3), (3, 3))),
    ((((1,), (1,)), ((0,), (0,))), ((3, 3), (4, 3))),
    ((((1,), (1,)), ((1,), (0,))), ((3, 3), (3, 3))),
])
def test_dot_general_errors(dims: Any, shapes: Any) -> None:
    a, b = np.ones(shapes[0], np.float32), np.ones(shapes[1], np.float32)
    raises_same(lambda j, lax, n: lambda: lax.dot_general(n.asarray(a), n.asarray(b), dims))


def test_dot_general_error_message() -> None:
    with pytest.raises(TypeError, match="dot_general C3: contracting dimensions must have "
                                        "equal sizes, got 3 and 4"):
        slax.dot_general(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32), MM)


def test_dot_general_dtype_errors() -> None:
    f, i = np.ones(3, np.float32), np.ones(3, np.int32)
    d = (((0,), (0,)), ((), ()))
    raises_same(lambda j, lax, n: lambda: lax.dot_general(i, i, d,
                                                           preferred_element_type=np.int16))
    raises_same(lambda j, lax, n: lambda: lax.dot_general(f, f, d, precision="bogus"))
    raises_same(lambda j, lax, n: lambda: lax.dot(np.ones((3, 2, 2)), f))
    same(lambda j, lax, n: lambda a, b: lax.dot_general(a, b, d, preferred_element_type=np.int8),
         f, i, jaxpr=False)


# ---------------------------------------------------------- jnp reductions

JNP_CASES: list[tuple[str, Callable[..., Any], np.ndarray]] = [
    ("sum", lambda n: lambda a: n.sum(a), F32),
    ("sum_axis_keep", lambda n: lambda a: n.sum(a, axis=-1, keepdims=True), F32),
    ("sum_tuple", lambda n: lambda a: n.sum(a, axis=(0, 1), keepdims=True), F32),
    ("sum_bool", lambda n: lambda a: n.sum(a, axis=0), B),
    ("sum_i8", lambda n: lambda a: n.sum(a), I32.astype(np.int8)),
    ("sum_u8", lambda n: lambda a: n.sum(a), I32.astype(np.uint8)),
    ("sum_f16", lambda n: lambda a: n.sum(a), F32.astype(np.float16)),
    ("sum_dtype", lambda n: lambda a: n.sum(a, dtype=np.float32), I32),
    ("sum_dtype_bool", lambda n: lambda a: n.sum(a, dtype=bool), F32),
    ("sum_nopromote", lambda n: lambda a: n.sum(a, promote_integers=False),
     I32.astype(np.int8)),
    ("prod", lambda n: lambda a: n.prod(a, axis=0), F32),
    ("prod_i8", lambda n: lambda a: n.prod(a), I32.astype(np.int8)),
    ("max", lambda n: lambda a: n.max(a, axis=1), F32),
    ("amin_keep", lambda n: lambda a: n.amin(a, keepdims=True), I32),
    ("max_bool", lambda n: lambda a: n.max(a), B),
    ("all", lambda n: lambda a: n.all(a), F32),
    ("any", lambda n: lambda a: n.any(a, axis=1), B),
    ("any_int", lambda n: lambda a: n.any(a, axis=1), I32),
    ("argmax_axis", lambda n: lambda a: n.argmax(a, axis=1, keepdims=True), F32),
    ("argmin_neg", lambda n: lambda a: n.argmin(a, axis=-2), I32),
    ("cumsum", lambda n: lambda a: n.cumsum(a, axis=1), F32),
    ("cumsum_bool", lambda n: lambda a: n.cumsum(a, axis=0), B),
    ("cumsum_i8", lambda n: lambda a: n.cumsum(a, axis=0), I32.astype(np.int8)),
    ("cumsum_dtype", lambda n: lambda a: n.cumsum(a, axis=-1, dtype=np.float32), I32),
    ("cumprod", lambda n: lambda a: n.cumprod(a, axis=0), I32.astype(np.uint8)),
    ("method_sum", lambda n: lambda a: n.asarray(a).sum(axis=0), F32),
    ("method_max", lambda n: lambda a: n.asarray(a).max(), F32),
    ("method_argmin", lambda n: lambda a: n.asarray(a).argmin(axis=1), F32),
    ("method_cumsum", lambda n: lambda a: n.asarray(a).cumsum(axis=1), F32),
    ("method_any", lambda n: lambda a: n.asarray(a).any(), B),
]


@pytest.mark.parametrize("name,fn,x", JNP_CASES, ids=[c[0] for c in JNP_CASES])
def test_jnp_reduction(name: str, fn: Callable[..., Any], x: np.ndarray) -> None:
    exact = x.dtype.kind != "f" or name.startswith(("max", "amin", "arg", "method_max",
                                                    "method_arg"))
    same(lambda j, lax, n: fn(n), x, exact=exact)


def test_jnp_reductions_needing_other_families() -> None:
    _needs("div", "reshape")
    same(lambda j, lax, n: lambda a: n.mean(a, axis=1), F32, exact=False)
    same(lambda j, lax, n: lambda a: n.mean(a), I32, exact=False)
    same(lambda j, lax, n: lambda a: n.mean(a, axis=0, keepdims=True), B, exact=False)
    same(lambda j, lax, n: lambda a: n.mean(a), F32.astype(np.float16), exact=False)
    same(lambda j, lax, n: lambda a: n.argmax(a), F32)
    same(lambda j, lax, n: lambda a: n.cumsum(a), F32, exact=False)


def test_jnp_var_std() -> None:
    _needs("div", "sub", "square", "sqrt", "select_n")
    same(lambda j, lax, n: lambda a: n.var(a, axis=1), F32, exact=False)
    same(lambda j, lax, n: lambda a: n.var(a, ddof=1), I32, exact=False)
    same(lambda j, lax, n: lambda a: n.std(a), F32, exact=False)


def test_jnp_sum_where_initial() -> None:
    _needs("select_n")
    same(lambda j, lax, n: lambda a: n.sum(a, where=a > 0), F32, exact=False)
    same(lambda j, lax, n: lambda a: n.max(a, where=a > 0, initial=0.0), F32)


def test_jnp_sum_weak_scalar() -> None:
    same(lambda j, lax, n: lambda: n.sum(3.0))
    same(lambda j, lax, n: lambda a: n.sum(a), 2.0)


def test_jnp_sum_x64(x64: None) -> None:
    for x in (I32, I32.astype(np.int8), I32.astype(np.uint16), B,
              F32.astype(np.float64)):
        same(lambda j, lax, n: lambda a: n.sum(a, axis=0), x, exact=x.dtype.kind != "f")
    same(lambda j, lax, n: lambda a: n.argmax(a, axis=0), F32)
    same(lambda j, lax, n: lambda a, b: n.matmul(a, b), I32.astype(np.int64),
         I32.T.astype(np.int64).copy())


@pytest.mark.parametrize("fn", [
    lambda j, lax, n: lambda: n.sum(n.asarray(F32), axis=2),
    lambda j, lax, n: lambda: n.sum(n.asarray(F32), axis=(0, 0)),
    lambda j, lax, n: lambda: n.max(n.asarray(np.zeros((0, 3), np.float32))),
    lambda j, lax, n: lambda: n.argmax(n.asarray(np.zeros((2, 0), np.float32)), axis=1),
    lambda j, lax, n: lambda: n.sum([1, 2]),
    lambda j, lax, n: lambda: n.cumsum(n.asarray(F32), axis=3),
    lambda j, lax, n: lambda: n.sort(n.asarray(F32), axis=3),
    lambda j, lax, n: lambda: n.matmul(n.asarray(1.0), n.asarray(F32)),
    lambda j, lax, n: lambda: n.matmul(n.asarray(F32), n.asarray(F32)),
    lambda j, lax, n: lambda: n.dot(n.asarray(F32), n.asarray(F32)),
    lambda j, lax, n: lambda: n.einsum("ij,jk->ik", n.asarray(F32), n.asarray(F32)),
    lambda j, lax, n: lambda: n.tensordot(n.asarray(F32), n.asarray(F32), 3),
])
def test_jnp_errors(fn: Callable[..., Any]) -> None:
    raises_same(fn)


# -------------------------------------------------------------- jnp linalg

def _r(*shape: int, dt: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dt)


LINALG: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("dot_vv", lambda n: n.dot, (_r(3), _r(3))),
    ("dot_mv", lambda n: n.dot, (_r(2, 3), _r(3))),
    ("dot_3d", lambda n: n.dot, (_r(5, 2, 3), _r(4, 3, 6))),
    ("dot_mixed", lambda n: n.dot, (_r(2, 3).astype(np.int32), _r(3, 4))),
    ("matmul", lambda n: n.matmul, (_r(2, 3), _r(3, 4))),
    ("matmul_batch", lambda n: n.matmul, (_r(5, 2, 3), _r(5, 3, 4))),
    ("matmul_bcast", lambda n: n.matmul, (_r(5, 2, 3), _r(3, 4))),
    ("matmul_vm", lambda n: n.matmul, (_r(3), _r(5, 3, 4))),
    ("matmul_mv", lambda n: n.matmul, (_r(5, 2, 3), _r(3))),
    ("matmul_int", lambda n: n.matmul, (I32, I32.T.copy())),
    ("matmul_bf16", lambda n: n.matmul, (_r(2, 3, dt=ml_dtypes.bfloat16),
                                         _r(3, 4, dt=ml_dtypes.bfloat16))),
    ("matmul_op", lambda n: lambda a, b: n.asarray(a) @ b, (_r(2, 3), _r(3, 4))),
    ("method_dot", lambda n: lambda a, b: n.asarray(a).dot(b), (_r(2, 3), _r(3, 4))),
    ("inner", lambda n: n.inner, (_r(2, 3), _r(4, 3))),
    ("tensordot2", lambda n: n.tensordot, (_r(2, 3, 4), _r(3, 4, 5))),
    ("tensordot_pair", lambda n: lambda a, b: n.tensordot(a, b, axes=([0], [1])),
     (_r(2, 3, 4), _r(3, 2, 5))),
    ("tensordot0", lambda n: lambda a, b: n.tensordot(a, b, axes=0), (_r(2), _r(3))),
    ("outer", lambda n: n.outer, (_r(3), _r(4))),
]
EINSUMS = [
    ("ij,jk->ik", (2, 3), (3, 4)), ("ij,jk->ki", (2, 3), (3, 4)),
    ("bij,bjk->bik", (5, 2, 3), (5, 3, 4)), ("i,i->", (3,), (3,)), ("i,j->ij", (3,), (4,)),
    ("ij,ij->i", (3, 4), (3, 4)), ("ijk,jl->ilk", (2, 3, 4), (3, 5)), ("ij,kj", (2, 3), (4, 3)),
    ("...ij,...jk->...ik", (5, 2, 3), (5, 3, 4)), ("ij,k->ijk", (2, 3), (4,)),
    ("ij,jk->i", (2, 3), (3, 4)), ("ij,jk", (2, 3), (3, 4)), ("bi,bi->b", (4, 3), (4, 3)),
]
LINALG += [(f"einsum_{s}", (lambda s: lambda n: lambda a, b: n.einsum(s, a, b))(s),
            (_r(*sa), _r(*sb))) for s, sa, sb in EINSUMS]
LINALG += [
    ("einsum_sum", lambda n: lambda a: n.einsum("ij->", a), (_r(3, 4),)),
    ("einsum_int", lambda n: lambda a, b: n.einsum("ij,jk->ik", a, b), (I32, I32.T.copy())),
]


@pytest.mark.parametrize("name,fn,args", LINALG, ids=[c[0] for c in LINALG])
def test_jnp_linalg(name: str, fn: Callable[..., Any], args: tuple[np.ndarray, ...]) -> None:
    if name == "einsum_ijk,jl->ilk":
        _needs("transpose")
    exact = all(a.dtype.kind not in "fV" for a in args)
    same(lambda j, lax, n: fn(n), *args, exact=exact)


def test_einsum_more_operands_and_diagonal() -> None:
    a, b, c = _r(2, 3), _r(3, 4), _r(4, 5)
    s = snp.einsum("ij,jk,kl->il", a, b, c)
    np.testing.assert_allclose(np.asarray(s), np.einsum("ij,jk,kl->il", a, b, c), rtol=1e-5)
    _needs("broadcasted_iota", "eq", "select_n")
    same(lambda j, lax, n: lambda x: n.einsum("ii->i", x), _r(3, 3))


def test_matmul_leading_one_batch() -> None:
    _needs("squeeze", "transpose")
    same(lambda j, lax, n: n.matmul, _r(1, 2, 3), _r(5, 3, 4), exact=False)


# ---------------------------------------------------------- property tests

_DT = st.sampled_from([np.float32, np.int32, np.int8, np.uint8, np.bool_, np.float16,
                       np.uint32, np.complex64])


@st.composite
def _dot_case(draw: Any) -> tuple[Any, ...]:
    lr_ = draw(st.integers(0, 3))
    rr = draw(st.integers(0, 3))
    ls = tuple(draw(st.lists(st.integers(1, 3), min_size=lr_, max_size=lr_)))
    rs = tuple(draw(st.lists(st.integers(1, 3), min_size=rr, max_size=rr)))
    axis = st.integers(-1, 3)
    nc = draw(st.integers(0, 2))
    nb = draw(st.integers(0, 1))
    lc = tuple(draw(st.lists(axis, min_size=nc, max_size=nc)))
    rc = tuple(draw(st.lists(axis, min_size=nc, max_size=nc)))
    lb = tuple(draw(st.lists(axis, min_size=nb, max_size=nb)))
    rb = tuple(draw(st.lists(axis, min_size=draw(st.sampled_from([nb, nb, 1 - nb])),
                             max_size=2)))
    return ls, rs, draw(_DT), draw(_DT), ((lc, rc), (lb, rb))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_dot_case())
def test_dot_general_typing_property(case: tuple[Any, ...]) -> None:
    ls, rs, ld_, rd, dims = case
    if any(d < 0 for side in dims for part in side for d in part):
        return  # negative dimension numbers are not canonicalised by either side
    a, b = jax.ShapeDtypeStruct(ls, ld_), jax.ShapeDtypeStruct(rs, rd)
    try:
        want = jax.eval_shape(lambda x, y: jax.lax.dot_general(x, y, dims), a, b)
    except Exception as err:  # noqa: BLE001
        raises_as(lambda: slax.dot_general(np.zeros(ls, ld_), np.zeros(rs, rd), dims), err)
        return
    got = slax.dot_general(np.ones(ls, ld_), np.ones(rs, rd), dims)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    ref = jax.lax.dot_general(np.ones(ls, ld_), np.ones(rs, rd), dims)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple), dt=_DT,
       axes=st.lists(st.integers(-1, 3), max_size=3).map(tuple),
       prim=st.sampled_from(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
                             "reduce_and", "reduce_or"]))
def test_reduce_typing_property(shape: tuple[int, ...], dt: Any, axes: tuple[int, ...],
                                prim: str) -> None:
    if prim in ("reduce_and", "reduce_or") and (any(a < 0 for a in axes)
                                                or len(set(axes)) != len(axes)):
        return  # JAX's logical reductions do not validate these (np.delete wraps/dedups)
    x = np.ones(shape, dt)
    try:
        want = jax.eval_shape(lambda v: getattr(jax.lax, prim)(v, axes), x)
    except Exception as err:  # noqa: BLE001
        raises_as(lambda: getattr(slax, prim)(x, axes), err)
        return
    got = getattr(slax, prim)(x, axes)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(np.asarray(got),
                                  np.asarray(getattr(jax.lax, prim)(x, axes)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
       dt=st.sampled_from([np.float32, np.int8, np.bool_, np.uint16]),
       axis=st.one_of(st.none(), st.integers(-3, 2),
                      st.lists(st.integers(-3, 2), max_size=3).map(tuple)),
       keepdims=st.booleans(), fn=st.sampled_from(["sum", "prod", "max", "min", "all", "any"]))
def test_jnp_reduction_property(shape: tuple[int, ...], dt: Any, axis: Any, keepdims: bool,
                                fn: str) -> None:
    x = (RNG.integers(0, 3, shape)).astype(dt)
    try:
        want = getattr(jnp, fn)(x, axis=axis, keepdims=keepdims)
    except Exception as err:  # noqa: BLE001
        raises_as(lambda: getattr(snp, fn)(x, axis=axis, keepdims=keepdims), err)
        return
    got = getattr(snp, fn)(x, axis=axis, keepdims=keepdims)
    _check_value(got, want)


# ------------------------------------------------------------------ scaled_dot

def _scaled_operands() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(11)
    lhs = rng.normal(size=(2, 4, 8)).astype(ml_dtypes.float8_e4m3fn)
    rhs = rng.normal(size=(2, 8, 3)).astype(ml_dtypes.float8_e4m3fn)
    scales = [(2.0 ** rng.integers(-3, 4, s)).astype(ml_dtypes.float8_e8m0fnu)
              for s in ((2, 4, 2), (2, 2, 3))]
    return lhs, rhs, *scales


def test_scaled_dot_matches_jax() -> None:
    """Values (bit for bit), dtypes and the one-equation jaxpr; the default
    unit scales; vmap (JAX's rule); errors; the lowering's composite compiled
    by jaxlib and its text JAX's."""
    lhs, rhs, ls, rs = _scaled_operands()
    f = lambda lax: (lambda a, b, c, d: lax.scaled_dot(  # noqa: E731
        a, b, lhs_scale=c, rhs_scale=d, preferred_element_type=np.float32))
    ours, theirs = f(slax)(lhs, rhs, ls, rs), f(jax.lax)(lhs, rhs, ls, rs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()
    assert str(spec.make_jaxpr(f(slax))(lhs, rhs, ls, rs)) == \
        str(jax.make_jaxpr(f(jax.lax))(lhs, rhs, ls, rs))
    unit = lambda lax: (lambda a, b: lax.scaled_dot(a[0], b[0]))  # noqa: E731
    assert np.asarray(unit(slax)(lhs, rhs)).tobytes() == \
        np.asarray(unit(jax.lax)(lhs, rhs)).tobytes()
    assert str(spec.make_jaxpr(unit(slax))(lhs, rhs)) == \
        str(jax.make_jaxpr(unit(jax.lax))(lhs, rhs))
    g = lambda lax: (lambda a, b, c, d: lax.scaled_dot(a, b, lhs_scale=c, rhs_scale=d))  # noqa: E731
    assert np.asarray(spec.vmap(g(slax))(lhs, rhs, ls, rs)).tobytes() == \
        np.asarray(jax.vmap(g(jax.lax))(lhs, rhs, ls, rs)).tobytes()
    for bad in [(lhs, rhs, ls[..., :1].repeat(8, -1), rs),   # a block of one element
                (lhs, rhs, ls[:, :3], rs), (lhs[0], rhs, ls, rs)]:
        with pytest.raises(TypeError) as want:
            g(jax.lax)(*bad)
        with pytest.raises(TypeError, match=str(want.value)[:25].replace("(", ".")):
            g(slax)(*bad)
    values, compiled, _ = spec_and_compiled(g(slax), lhs, rhs, ls, rs)
    assert_bitwise(values, compiled)
    assert canonical(spec.jit(g(slax)).lower(lhs, rhs, ls, rs).as_text()) == \
        canonical(jax.jit(g(jax.lax)).lower(lhs, rhs, ls, rs).as_text())
