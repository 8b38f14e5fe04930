"""lax.reduce (monoid dispatch and the variadic reduce primitive),
approx_max_k/approx_min_k, optimization_barrier and the lax functions composed
of other primitives: values, dtypes, jaxprs and errors twinned with JAX run
live; JVPs by finite differences; vmap against a loop; the lowerings
compiled by jaxlib against spec's evaluation."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from jax import lax as jlax

import spec
from spec import lax as slax
from spec.test_util import check_grads
from spec._src.core.interpreter import dce_jaxpr
from tests.lowering.xla_run import assert_bitwise, spec_and_compiled
from tests.support.pair import errors_alike

_rng = np.random.default_rng(7)
X = _rng.normal(size=(3, 5)).astype(np.float32)
INTS = _rng.integers(-20, 20, (3, 5)).astype(np.int32)


def _argmax_pair(lax: Any) -> Callable[[Any, Any], Any]:
    def comb(a: Any, b: Any) -> Any:
        (av, ai), (bv, bi) = a, b
        take = lax.ge(av, bv)
        return lax.select(take, av, bv), lax.select(take, ai, bi)
    return comb


def _argmax_reduce(lax: Any, dims: tuple[int, ...] = (1,)) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        idx = lax.broadcasted_iota(np.int32, x.shape, 1)
        return lax.reduce((x, idx), (-np.inf, np.int32(0)), _argmax_pair(lax), dims)
    return f


# (name, lax -> function of x, input); each row compares values, dtypes and jaxprs.
REDUCE_ROWS: list[tuple[str, Callable[[Any], Callable[[Any], Any]], np.ndarray]] = [
    ("variadic_argmax", _argmax_reduce, X),
    ("monoid_sum", lambda lax: lambda x: lax.reduce(x, 0.0, lax.add, (0,)), X),
    ("monoid_max_int", lambda lax: lambda x: lax.reduce(
        x, np.int32(np.iinfo(np.int32).min), lax.max, (0, 1)), INTS),
    ("monoid_or_int", lambda lax: lambda x: lax.reduce(x, np.int32(0), lax.bitwise_or, (1,)),
     INTS),
    ("not_identity_init", lambda lax: lambda x: lax.reduce(x, np.int32(3), lax.add, (1,)),
     INTS),
    ("custom_integer", lambda lax: lambda x: lax.reduce(
        x, np.int32(0), lambda a, b: a + 2 * b - b, (0,)), INTS),
    ("no_dimensions", lambda lax: lambda x: lax.reduce(x, np.int32(1), lax.mul, ()), INTS),
    ("empty_axis", lambda lax: lambda x: lax.reduce(x[:, :0], np.int32(5), lax.add, (1,)),
     INTS),
    ("scalar", lambda lax: lambda x: lax.reduce(x, np.float32(0), lax.add, ()),
     np.float32(2.0)),
]


@pytest.mark.parametrize("name,make,x", REDUCE_ROWS, ids=[r[0] for r in REDUCE_ROWS])
def test_reduce_matches_jax(name: str, make: Callable[[Any], Any], x: np.ndarray) -> None:
    ours, theirs = make(slax), make(jlax)
    for a, e in zip(jax.tree_util.tree_leaves(ours(x)), jax.tree_util.tree_leaves(theirs(x))):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        assert np.array_equal(np.asarray(a), np.asarray(e))
        assert spec.typeof(a).weak_type == jax.typeof(e).weak_type
    if x.ndim:
        assert str(spec.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))


def _poly(lax: Any) -> Callable[[Any], Any]:
    """A commutative, associative computation with identity 0 that is no lax monoid."""
    return lambda x: lax.reduce(x, 0.0, lambda a, b: a * b + a + b, (0,))


def test_reduce_jvp_matches_jax_and_finite_differences() -> None:
    x, t = X[:, :2] * 0.3, X[:, 2:4]
    ours = spec.jvp(_poly(slax), (x,), (t,))
    theirs = jax.jit(lambda p, d: jax.jvp(_poly(jlax), (p,), (d,)))(x, t)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6)
    assert str(spec.make_jaxpr(lambda v: spec.jvp(_poly(slax), (v,), (v,)))(x)) == \
        str(jax.make_jaxpr(lambda v: jax.jvp(_poly(jlax), (v,), (v,)))(x))
    check_grads(_poly(slax), (x.astype(np.float64),), 1, modes=("fwd",))


def test_reduce_vmap_matches_a_loop() -> None:
    xs = np.stack([X, X[::-1], -X])
    batched = spec.vmap(_argmax_reduce(slax), in_axes=1)(xs)
    looped = [_argmax_reduce(slax)(xs[:, i]) for i in range(xs.shape[1])]
    for k in range(2):
        assert np.array_equal(np.asarray(batched[k]), np.stack([np.asarray(r[k]) for r in looped]))


@pytest.mark.parametrize("make,exc", [
    (lambda lax: lambda x: lax.reduce(x, np.int32(0), lambda a, b: a * b, (0,)), TypeError),
    (lambda lax: lambda x: lax.reduce((x, x), (0.0,), lax.add, (0,)), ValueError),
    (lambda lax: lambda x: lax.reduce(x, np.zeros(2, np.float32), lambda a, b: a * b, (0,)),
     ValueError),
], ids=["dtype_mismatch", "tree_mismatch", "non_scalar_init"])
def test_reduce_errors_match_jax(make: Callable[[Any], Any], exc: type[Exception]) -> None:
    with pytest.raises(exc):
        make(jlax)(X)
    with pytest.raises(exc):
        make(slax)(X)


APPROX_ROWS = [
    ("max_last", lambda lax: lambda x: lax.approx_max_k(x, 2)),
    ("min_axis0", lambda lax: lambda x: lax.approx_min_k(x, 2, reduction_dimension=0)),
    ("max_not_aggregated", lambda lax: lambda x: lax.approx_max_k(x, 3,
                                                                  aggregate_to_topk=False)),
    ("ties_and_nan", lambda lax: lambda x: lax.approx_max_k(x, 4)),
]
TIES = X.copy()
TIES[0, :3] = 1.0
TIES[1, 2] = np.nan


@pytest.mark.parametrize("name,make", APPROX_ROWS, ids=[r[0] for r in APPROX_ROWS])
def test_approx_top_k_matches_jax(name: str, make: Callable[[Any], Any]) -> None:
    x = TIES if name == "ties_and_nan" else X
    for a, e in zip(make(slax)(x), make(jlax)(x)):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        assert np.array_equal(np.asarray(a), np.asarray(e), equal_nan=True)
    assert str(spec.make_jaxpr(make(slax))(x)) == str(jax.make_jaxpr(make(jlax))(x))


def test_approx_top_k_jvp_vmap_and_errors() -> None:
    f = lambda x: slax.approx_min_k(x, 2)[0]  # noqa: E731
    check_grads(f, (X.astype(np.float64),), 1, modes=("fwd", "rev"))
    batched = spec.vmap(lambda x: slax.approx_max_k(x, 2, reduction_dimension=0)[1],
                        in_axes=1)(X)
    looped = np.stack([np.asarray(slax.approx_max_k(X[:, i], 2)[1]) for i in range(5)])
    assert np.array_equal(np.asarray(batched), looped)
    for lax in (slax, jlax):
        with pytest.raises(ValueError):
            lax.approx_max_k(INTS, 2)
        with pytest.raises(ValueError):
            lax.approx_max_k(X, 6)


def _barrier_loss(lax: Any) -> Callable[[Any], Any]:
    return lambda x: lax.optimization_barrier((x * 2.0, x))[0].sum()


def test_optimization_barrier_matches_jax() -> None:
    assert str(spec.make_jaxpr(spec.grad(_barrier_loss(slax)))(X)) == \
        str(jax.make_jaxpr(jax.grad(_barrier_loss(jlax)))(X))
    pair = lambda lax: lambda x: lax.optimization_barrier({"a": x, "b": x + 1})  # noqa: E731
    assert str(spec.make_jaxpr(spec.vmap(pair(slax)))(X)) == \
        str(jax.make_jaxpr(jax.vmap(pair(jlax)))(X))
    assert np.array_equal(np.asarray(pair(slax)(X)["b"]), X + 1)


@pytest.mark.parametrize("fn", [
    _argmax_reduce(slax),
    # Integers: XLA's fold order shows in float roundings of a non-monoid.
    lambda x: slax.reduce(slax.convert_element_type(x * 9, np.int32), np.int32(0),
                          lambda a, b: a * b + a + b, (0,)),
    lambda x: slax.approx_max_k(x, 2),
    lambda x: slax.approx_min_k(x, 3, reduction_dimension=0),
    lambda x: slax.optimization_barrier((x, x * 2)),
], ids=["variadic", "custom", "approx_max", "approx_min", "barrier"])
def test_lowerings_compile_and_agree(fn: Callable[[Any], Any]) -> None:
    ours, theirs, _ = spec_and_compiled(fn, X)
    assert_bitwise(ours, theirs)


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.uint64])
def test_mulhi_matches_jax(dtype: Any, x64: None) -> None:
    info = np.iinfo(dtype)
    a = _rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    b = _rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    a[:4] = [info.min, info.max, 0, info.max]
    b[:4] = [info.min, info.min, info.max, info.max]
    ours, theirs = np.asarray(slax.mulhi(a, b)), np.asarray(jlax.mulhi(a, b))
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_mulhi_lowering_and_errors() -> None:
    x = INTS * 99991
    ours, theirs, _ = spec_and_compiled(lambda v: slax.mulhi(v, v[::-1]), x)
    assert_bitwise(ours, theirs)
    assert str(spec.make_jaxpr(slax.mulhi)(x, x)) == str(jax.make_jaxpr(jlax.mulhi)(x, x))
    for lax in (slax, jlax):
        with pytest.raises(TypeError):
            lax.mulhi(X, X)


# ----------------------------------------------- composed lax functions

_LHS = _rng.normal(size=(1, 4, 3, 2)).astype(np.float32)
_LOCAL_LHS = _rng.normal(size=(1, 2, 3, 3)).astype(np.float32)
_LOCAL_RHS = _rng.normal(size=(2, 2, 8, 2)).astype(np.float32)
_SRC = _rng.normal(size=(4, 5, 3)).astype(np.float32)
_IDX = (np.array([0, -1, 3]), np.array([4, 2, -2]))
_RAGGED_LHS = _rng.normal(size=(7, 3)).astype(np.float32)
_RAGGED_RHS = _rng.normal(size=(3, 3, 4)).astype(np.float32)
_GROUPS = np.array([2, 0, 3], np.int32)  # an empty group, and rows past the groups

COMPOSED_ROWS: list[tuple[str, Callable[[Any], Any], float]] = [
    ("patches_layouts", lambda lax: lax.conv_general_dilated_patches(
        _LHS, (3, 2), (2, 1), "SAME", dimension_numbers=("NHWC", "OIHW", "NCHW")), 0.0),
    ("local", lambda lax: lax.conv_general_dilated_local(
        _LOCAL_LHS, _LOCAL_RHS, (1, 1), "VALID", (2, 2),
        dimension_numbers=("NCHW", "HWIO", "NHWC")), 1e-5),
    ("index_take", lambda lax: lax.index_take(_SRC, _IDX, (0, 1)), 0.0),
    ("broadcast_like", lambda lax: lax.broadcast_like(np.arange(3.0), np.zeros((2, 3))), 0.0),
    ("ragged_dot", lambda lax: lax.ragged_dot(_RAGGED_LHS, _RAGGED_RHS, _GROUPS), 1e-6),
    ("ragged_dot_int8", lambda lax: lax.ragged_dot(
        _RAGGED_LHS.astype(np.int8), _RAGGED_RHS.astype(np.int8), _GROUPS), 0.0),
    ("platform_dependent", lambda lax: lax.platform_dependent(
        np.float32(2.0), cpu=lambda v: v * 3, default=lambda v: v), 0.0),
]


@pytest.mark.parametrize("name,make,atol", COMPOSED_ROWS, ids=[r[0] for r in COMPOSED_ROWS])
def test_composed_functions_match_jax(name: str, make: Callable[[Any], Any],
                                      atol: float) -> None:
    # JAX's side as one compilation: eagerly, each of its equations compiles alone.
    a, e = np.asarray(make(slax)), np.asarray(jax.jit(lambda: make(jlax))())
    assert a.dtype == e.dtype and a.shape == e.shape
    np.testing.assert_allclose(a, e, rtol=0, atol=atol)


def test_ragged_dot_derivatives_by_finite_differences() -> None:
    f = lambda a, b: slax.ragged_dot(a, b, _GROUPS)  # noqa: E731
    check_grads(f, (_RAGGED_LHS.astype(np.float64), _RAGGED_RHS.astype(np.float64)), 1,
                modes=("fwd", "rev"))


def test_lax_names_match_jax() -> None:
    assert slax.broadcast_shapes((1, 3), (2, 1), (3,)) == jlax.broadcast_shapes((1, 3), (2, 1),
                                                                                  (3,))
    with pytest.raises(ValueError):
        slax.broadcast_shapes((2,), (3,))
    assert slax.dtype(1.0) == jlax.dtype(1.0) and slax.dtype(True) == jlax.dtype(True)
    assert {m.name: m.value for m in slax.RandomAlgorithm} == \
        {m.name: m.value for m in jlax.RandomAlgorithm}
    for bad in ({}, {"atol": -1.0}):
        for lax in (slax, jlax):
            with pytest.raises(ValueError):
                lax.Tolerance(**bad)
    assert slax.Tolerance(rtol=0.5).rtol == jlax.Tolerance(rtol=0.5).rtol
    for shape in ((2, 3), ()):
        a, e = np.asarray(slax.shape_as_value(shape)), np.asarray(jlax.shape_as_value(shape))
        assert a.dtype == e.dtype and np.array_equal(a, e)


# ---------------------------------------------------------------- lax.stage

STAGED: list[tuple[str, Callable[[Any], Callable[[Any], Any]]]] = [
    ("argument", lambda lax: lax.stage),
    ("used", lambda lax: (lambda x: lax.stage(x) * 2)),
    ("array constant", lambda lax: (lambda x: lax.stage(np.arange(3.0)) + x)),
    ("scalar literal", lambda lax: (lambda x: lax.stage(3.0) + x)),
]


@pytest.mark.parametrize("name,program", STAGED, ids=[s[0] for s in STAGED])
def test_stage_jaxprs_match_jax(name: str, program: Any) -> None:
    """stage lifts without an equation: the jaxprs of JAX, under grad and vmap too."""
    f, g = program(slax), program(jlax)
    assert str(spec.make_jaxpr(f)(1.0)) == str(jax.make_jaxpr(g)(1.0))
    if name == "used":
        assert str(spec.make_jaxpr(spec.grad(f))(1.0)) == str(jax.make_jaxpr(jax.grad(g))(1.0))
        xs = np.ones(3, np.float32)
        assert str(spec.make_jaxpr(spec.vmap(f))(xs)) == str(jax.make_jaxpr(jax.vmap(g))(xs))


def test_stage_outside_transforms_is_an_array_as_jax() -> None:
    for x in (3.0, np.arange(3), np.float16(2)):
        ours, theirs = slax.stage(x), jlax.stage(x)
        assert isinstance(ours, spec.Array)
        assert str(spec.typeof(ours)) == str(jax.typeof(theirs))
        assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()


def test_stage_primitive_is_the_linear_identity() -> None:
    x = np.arange(3.0, dtype=np.float32)
    check_grads(slax.stage_p.bind, (x,), order=1, modes=("fwd", "rev"))
    assert np.asarray(spec.vmap(slax.stage_p.bind)(np.stack([x, x]))).tobytes() == \
        np.stack([x, x]).tobytes()


# ------------------------------------------------------------ lax.composite

def _composite(lax: Any) -> Callable[..., Any]:
    @functools.partial(lax.composite, name="my.affine", version=2)
    def affine(x: Any, pair: Any, *, scale: float = 2.0, tag: str = "t") -> Any:
        return x * scale + pair[0] - pair[1] + np.arange(3, dtype=np.float32)
    return affine


def test_composite_matches_jax() -> None:
    """One equation holding the decomposition (its constants as leading
    operands, keyword arguments as attributes); values, jaxpr, the lowering's
    composite op and decomposition function; JAX's errors for grad and vmap."""
    x = np.arange(3.0, dtype=np.float32)
    args = (x, (x + 1, np.float32(0.5)))
    ours = lambda v: _composite(slax)(v, args[1], scale=3.0, tag="u")  # noqa: E731
    theirs = lambda v: _composite(jlax)(v, args[1], scale=3.0, tag="u")  # noqa: E731
    assert np.asarray(ours(x)).tobytes() == np.asarray(theirs(x)).tobytes()
    assert str(spec.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    spec_values, compiled, text = spec_and_compiled(ours, x)
    assert_bitwise(spec_values, compiled)
    assert ('stablehlo.composite "my.affine"' in text and "version = 2 : i32" in text
            and 'tag = "u"' in text and "func.func private @my.affine" in text)
    for transform in (lambda lib, f: lib.grad(lambda v: f(v).sum())(x),
                      lambda lib, f: lib.vmap(f)(np.stack([x, x]))):
        got, want = errors_alike(lambda: transform(spec, ours), lambda: transform(jax, theirs))
        assert re.search(str(want)[:30], str(got)), (str(got), str(want))


# ------------------------------------------------------------- lax.dce_sink

def test_dce_sink_matches_jax() -> None:
    """No results, an effect DCE keeps: the jaxprs of JAX (plain, under grad,
    vmap), the lowering (a side-effecting custom call only when asked), and
    the kept equation surviving dead-code elimination."""
    programs = [
        (lambda lax: (lambda x: (lax.dce_sink((x, x * 2)), x + 1)[1]), lambda f: f),
        (lambda lax: (lambda x: (lax.dce_sink(x), x * 3)[1]), lambda f: spec.grad(f)),
        (lambda lax: (lambda x: (lax.dce_sink(x), x * 3)[1]), lambda f: spec.vmap(f)),
    ]
    for k, (program, transform) in enumerate(programs):
        arg = np.ones(2, np.float32) if k == 2 else np.float32(1)
        jtransform = {0: lambda f: f, 1: jax.grad, 2: jax.vmap}[k]
        assert str(spec.make_jaxpr(transform(program(slax)))(arg)) == \
            str(jax.make_jaxpr(jtransform(program(jlax)))(arg))
    f = lambda lax, keep: (  # noqa: E731
        lambda x: (lax.dce_sink(x * 2, prevent_mlir_dce=keep), x)[1])
    for keep in (False, True):
        ours = spec.jit(f(slax, keep)).lower(np.float32(1)).as_text()
        assert ("custom_call @dce_sink" in ours) == keep
        assert ("custom_call @dce_sink" in jax.jit(f(jlax, keep)).lower(np.float32(1))
                .as_text()) == keep
    kept = dce_jaxpr(spec.make_jaxpr(f(slax, False))(np.float32(1)).jaxpr)
    assert [e.primitive.name for e in kept.eqns] == ["mul", "dce_sink"]
    assert slax.dce_sink(1.0) is None
