"""Autodiff rules (JVP and transpose) of the structural primitives
(spec/_src/lax/slicing.py), against real JAX run live and against
mathematics (finite differences, the dot-product test)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec.config import config
from spec._src.lax import shaping, slicing
from spec._src.core.registry import REGISTRY, missing_sections
from spec.test_util import check_grads

# make(lax, jnp) -> a function of array arguments
Make = Callable[[Any, Any], Callable[..., Any]]

STRUCTURAL = sorted({p.name for module in (shaping, slicing) for p in vars(module).values()
                     if isinstance(p, type(slicing.copy_p))})
HYP = settings(max_examples=8, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _random(shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    v = rng.standard_normal(tuple(shape))
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(tuple(shape))
    return np.asarray(v).astype(dt)


def assert_same(ours: Any, theirs: Any, exact: bool | float = True) -> None:
    """Same leaves: shape, dtype, weak type and values (exact by default:
    these rules only move, copy or add elements; a float is an absolute
    tolerance for sums)."""
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        oa, ta = np.asarray(o), np.asarray(t)
        assert oa.dtype == ta.dtype and oa.shape == ta.shape, (spec.typeof(o), jax.typeof(t))
        if oa.dtype.kind != "V":
            if exact is True:
                np.testing.assert_array_equal(oa, ta)
            else:  # sums (reduce_sum in a transpose) may round differently
                tol = 4e-3 if oa.dtype.itemsize <= 2 else 1e-5
                if not isinstance(exact, bool):
                    tol = max(tol, exact)
                np.testing.assert_allclose(oa.astype(np.complex128), ta.astype(np.complex128),
                                           rtol=tol, atol=tol)
        assert bool(getattr(o, "weak_type", False)) == bool(getattr(t, "weak_type", False))


def run_case(make: Make, args: Sequence[np.ndarray], order: int = 2, exact: bool | float = True,
             **check: Any) -> None:
    """check_grads on spec, then jvp and vjp (with the same random tangents and
    cotangents) equal to JAX's, cotangent types included, on both linearize
    paths."""
    f_s, f_j = make(slax, snp), make(jlax, jnp)
    s_args = [snp.asarray(a) for a in args]
    j_args = [jnp.asarray(a) for a in args]
    check_grads(f_s, s_args, order=order, modes=("fwd", "rev"), **check)
    rng = np.random.default_rng(0)
    ts = [_random(np.shape(a), np.asarray(a).dtype, rng) for a in args]
    ours = spec.jvp(f_s, tuple(s_args), tuple(snp.asarray(t) for t in ts))
    theirs = jax.jvp(f_j, tuple(j_args), tuple(jnp.asarray(t) for t in ts))
    assert_same(ours, theirs, exact)
    out_j, pull_j = jax.vjp(f_j, *j_args)
    cts = jax.tree_util.tree_map(lambda o: _random(o.shape, o.dtype, rng), out_j)
    want = pull_j(jax.tree_util.tree_map(jnp.asarray, cts))
    s_cts = spec.tree_util.tree_map(snp.asarray, cts)
    got = spec.vjp(f_s, *s_args)[1](s_cts)
    assert_same(got, want, exact)
    with config.use_direct_linearize(False):
        legacy = spec.vjp(f_s, *s_args)[1](s_cts)
    for a, b in zip(spec.tree_util.tree_leaves(got), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


# ------------------------------------------------------------ strategies

FLOATS = st.sampled_from([np.float32, np.complex64, np.float16])


@st.composite
def shapes(draw: Any, min_rank: int = 0, max_rank: int = 3, min_side: int = 0) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.lists(st.integers(min_side, 3), min_size=rank, max_size=rank)))


def test_no_pending_ad_sections() -> None:
    left = [m for m in missing_sections()
            if m[0] in STRUCTURAL and m[1] in ("jvp", "transpose")]
    assert left == []
    assert len(STRUCTURAL) >= 19


@given(shapes(), st.data(), FLOATS)
@HYP
def test_broadcast_in_dim(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    rank = len(shape) + data.draw(st.integers(0, 2))
    dims = tuple(sorted(data.draw(st.permutations(range(rank)))[:len(shape)]))
    out = [data.draw(st.integers(0, 3)) for _ in range(rank)]
    for i, d in enumerate(dims):
        out[d] = shape[i] if shape[i] != 1 else data.draw(st.integers(1, 3))
    x = _random(shape, dtype, np.random.default_rng(1))
    run_case(lambda L, N: lambda x: L.broadcast_in_dim(x, tuple(out), dims), [x], exact=False)


@given(shapes(), st.data(), FLOATS)
@HYP
def test_reshape(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    sides = list(data.draw(st.permutations(shape)))
    new: list[int] = []
    for s in sides:  # merge some neighbours, insert some unit axes
        if new and data.draw(st.booleans()):
            new[-1] *= s
        else:
            new.append(s)
    new += [1] * data.draw(st.integers(0, 1))
    dims = (None if data.draw(st.booleans())
            else tuple(data.draw(st.permutations(range(len(shape))))))
    x = _random(shape, dtype, np.random.default_rng(2))
    run_case(lambda L, N: lambda x: L.reshape(x, tuple(new), dims), [x])


@given(shapes(min_rank=1), st.data(), FLOATS)
@HYP
def test_transpose_rev(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    flips = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    x = _random(shape, dtype, np.random.default_rng(3))
    run_case(lambda L, N: lambda x: L.rev(L.transpose(x, perm), flips), [x])


@given(shapes(), st.data(), FLOATS)
@HYP
def test_squeeze_expand_dims(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    ones = sorted(data.draw(st.sets(st.integers(0, len(shape)))))
    grown = list(shape)
    for i in ones:
        grown.insert(i, 1)
    x = _random(grown, dtype, np.random.default_rng(4))
    run_case(lambda L, N: lambda x: L.squeeze(x, ones), [x])
    y = _random(shape, dtype, np.random.default_rng(5))
    run_case(lambda L, N: lambda y: L.expand_dims(y, ones), [y])


@given(shapes(), st.data(), FLOATS)
@HYP
def test_slice(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    starts, limits = [], []
    for d in shape:
        a, b = sorted((data.draw(st.integers(0, d)), data.draw(st.integers(0, d))))
        starts.append(a)
        limits.append(b)
    strides = None if data.draw(st.booleans()) else [data.draw(st.integers(1, 3)) for _ in shape]
    x = _random(shape, dtype, np.random.default_rng(6))
    run_case(lambda L, N: lambda x: L.slice(x, starts, limits, strides), [x])


@given(shapes(), st.data(), FLOATS)
@HYP
def test_pad(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    config_ = []
    for d in shape:
        interior = data.draw(st.integers(0, 2))
        full = d + max(d - 1, 0) * interior
        lo = data.draw(st.integers(-full, 2))
        hi = data.draw(st.integers(-(full + lo) if full + lo > 0 else 0, 2))
        config_.append((lo, hi, interior))
    x = _random(shape, dtype, np.random.default_rng(7))
    pv = _random((), dtype, np.random.default_rng(8))
    # The padding value's cotangent is total(ct) - total(interior of ct): XLA
    # sums float16 in an order of its own with float16 partial sums, spec in
    # float32 rounded once, and the subtraction cancels. Bound the difference
    # by the sequential-summation error bound n * eps * max|ct| (|ct| < 4).
    n_out = int(np.prod([d + lo + hi + max(d - 1, 0) * i
                         for d, (lo, hi, i) in zip(shape, config_)]))
    tol = float(np.finfo(dtype).eps) * n_out * 4 if np.dtype(dtype).itemsize <= 2 else False
    run_case(lambda L, N: lambda x, p: L.pad(x, p, config_), [x, pv], exact=tol)


@given(shapes(min_rank=1), st.data(), FLOATS)
@HYP
def test_concatenate_split(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    rng = np.random.default_rng(9)
    xs = [_random(shape[:axis] + (s,) + shape[axis + 1:], dtype, rng) for s in sizes]
    run_case(lambda L, N: lambda *xs: L.concatenate(xs, axis), xs)
    whole = np.concatenate(xs, axis=axis)
    run_case(lambda L, N: lambda x: L.split(x, sizes, axis), [whole])
    # Only some pieces used: the others' cotangents are symbolic zeros.
    run_case(lambda L, N: lambda x: L.split(x, sizes, axis)[-1], [whole])


@given(shapes(), st.data(), FLOATS)
@HYP
def test_stack_unstack_tile(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    n = data.draw(st.integers(1, 3))
    axis = data.draw(st.integers(0, len(shape)))
    rng = np.random.default_rng(10)
    xs = [_random(shape, dtype, rng) for _ in range(n)]
    run_case(lambda L, N: lambda *xs: L.stack(xs, axis), xs)
    stacked = np.stack(xs, axis=axis)
    run_case(lambda L, N: lambda x: L.unstack(x, axis), [stacked])
    run_case(lambda L, N: lambda x: L.unstack(x, axis)[0], [stacked])
    reps = tuple(data.draw(st.integers(0, 2)) for _ in shape)
    run_case(lambda L, N: lambda x: L.tile(x, reps), [xs[0]], exact=False)


@given(shapes(min_rank=1, min_side=1), st.data(), FLOATS)
@HYP
def test_dynamic_slice_and_update(shape: tuple[int, ...], data: Any, dtype: Any) -> None:
    sizes = [data.draw(st.integers(0, d)) for d in shape]
    # Out-of-range starts are clamped (both in the primal and its transpose).
    starts = [np.int32(data.draw(st.integers(-4, 4))) for _ in shape]
    x = _random(shape, dtype, np.random.default_rng(11))
    run_case(lambda L, N: lambda x: L.dynamic_slice(x, starts, sizes), [x])
    u = _random(sizes, dtype, np.random.default_rng(12))
    run_case(lambda L, N: lambda x, u: L.dynamic_update_slice(x, u, starts), [x, u])
    run_case(lambda L, N: lambda u: L.dynamic_update_slice(N.asarray(x), u, starts), [u])


def test_copy() -> None:
    x = _random((2, 3), np.float32, np.random.default_rng(13))
    run_case(lambda L, N: lambda x: L.copy_p.bind(x) * 2.0, [x])


# --------------------------------------------------- convert_element_type

CONVERSIONS = [(np.float32, np.float16), (np.float16, np.float32), (np.float32, np.complex64),
               (np.complex64, np.float32), (np.float32, jnp.bfloat16)]


@pytest.mark.parametrize("src,dst", CONVERSIONS)
def test_convert_element_type(src: Any, dst: Any) -> None:
    x = _random((2, 3), src, np.random.default_rng(14))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Finite differences of a rounding to a narrower type need a wide step.
        narrow = np.dtype(dst).itemsize < np.dtype(src).itemsize
        wide: dict[str, Any] = {"eps": 0.1, "atol": 0.05, "rtol": 0.05} if narrow else {}
        run_case(lambda L, N: lambda x: L.convert_element_type(x, dst), [x], exact=False,
                 **wide)


def test_convert_element_type_x64(x64: None) -> None:
    x = _random((3,), np.float32, np.random.default_rng(15))
    run_case(lambda L, N: lambda x: L.convert_element_type(x, np.float64), [x])
    y = _random((3,), np.float64, np.random.default_rng(16))
    run_case(lambda L, N: lambda y: L.convert_element_type(y, np.float32) * 3.0, [y],
             exact=False, eps=1e-2, atol=2e-3, rtol=2e-3)


def test_convert_weak_cotangent() -> None:
    """The cotangent of a weak input comes back weak (a convert with
    weak_type=True), as in JAX."""
    theirs = jax.grad(lambda x: jlax.convert_element_type(x, jnp.float32) * 2)(3.0)
    ours = spec.grad(lambda x: slax.convert_element_type(x, snp.float32) * 2)(3.0)
    assert theirs.weak_type and ours.aval.weak_type
    assert_same(ours, theirs)
    theirs = jax.vjp(lambda x: jlax.convert_element_type(x, jnp.float16), 2.0)[1](
        jnp.float16(1.5))
    ours = spec.vjp(lambda x: slax.convert_element_type(x, snp.float16), 2.0)[1](
        snp.float16(1.5))
    assert_same(ours, theirs)


def test_convert_int_float_zero_tangents() -> None:
    """int -> float: the integer input gets a float0 cotangent; float -> int:
    the output tangent is float0 (zero)."""
    def f(L: Any, N: Any) -> Callable[..., Any]:
        return lambda x, i: x * L.convert_element_type(i, N.float32)
    ours = spec.grad(f(slax, snp), argnums=(0, 1), allow_int=True)(2.0, np.int32(3))
    theirs = jax.grad(f(jlax, jnp), argnums=(0, 1), allow_int=True)(2.0, np.int32(3))
    assert_same(ours, theirs)
    x = np.array([1.5, -2.5], np.float32)
    ours = spec.jvp(lambda x: slax.convert_element_type(x, snp.int32), (x,), (x,))
    theirs = jax.jvp(lambda x: jlax.convert_element_type(x, jnp.int32), (x,), (x,))
    assert_same(ours, theirs)
    ours = spec.grad(lambda x: slax.convert_element_type(
        slax.convert_element_type(x, snp.int32), snp.float32) + x)(1.5)
    theirs = jax.grad(lambda x: jlax.convert_element_type(
        jlax.convert_element_type(x, jnp.int32), jnp.float32) + x)(1.5)
    assert_same(ours, theirs)


def test_zero_derivative_primitives() -> None:
    """bitcast_convert_type, iota and empty have zero tangents."""
    x = np.array([1.5, -2.0], np.float32)

    def f(L: Any, N: Any) -> Callable[..., Any]:
        return lambda x: (L.bitcast_convert_type(x, N.int32),
                          x + L.iota(N.float32, 2) + L.empty((2,), N.float32) * 0)
    assert_same(spec.jvp(f(slax, snp), (x,), (x,)), jax.jvp(f(jlax, jnp), (x,), (x,)))
    assert isinstance(REGISTRY["bitcast_convert_type"].transpose,
                      type(REGISTRY["iota"].transpose))


# ------------------------------------------------------- linear_transpose


LINEAR: list[tuple[Make, tuple[int, ...], Any]] = [
    (lambda L, N: lambda x: L.broadcast_in_dim(x, (4, 2, 3), (1, 2)), (2, 3), np.float32),
    (lambda L, N: lambda x: L.broadcast_in_dim(x, (2, 4, 3), (0, 2)), (2, 1), np.float32),
    (lambda L, N: lambda x: L.reshape(x, (3, 2), (1, 0)), (2, 3), np.complex64),
    (lambda L, N: lambda x: L.pad(x, N.float32(0), [(1, -1, 2), (0, 2, 0)]), (2, 3),
     np.float32),
    (lambda L, N: lambda x: L.slice(x, (0, 1), (2, 3), (2, 1)), (2, 3), np.float16),
    (lambda L, N: lambda x: L.concatenate([x, x], 1), (2, 3), np.float32),
    (lambda L, N: lambda x: L.split(x, (1, 2), 1), (2, 3), np.float32),
    (lambda L, N: lambda x: L.tile(x, (2, 1)), (2, 3), np.float32),
    (lambda L, N: lambda x: L.convert_element_type(x, N.float16), (2,), np.float32),
    (lambda L, N: lambda x: L.dynamic_slice(x, (1, 1), (1, 2)), (2, 3), np.float32),
]


@pytest.mark.parametrize("make,shape,dtype", LINEAR)
def test_linear_transpose_matches_jax(make: Make, shape: tuple[int, ...], dtype: Any) -> None:
    x = _random(shape, dtype, np.random.default_rng(17))
    out = jax.eval_shape(make(jlax, jnp), x)
    rng = np.random.default_rng(18)
    cts = jax.tree_util.tree_map(lambda o: _random(o.shape, o.dtype, rng), out)
    theirs = jax.linear_transpose(make(jlax, jnp), x)(cts)
    ours = spec.linear_transpose(make(slax, snp), x)(cts)
    assert_same(ours, theirs, exact=False)
    # The dot-product test <ct, f(x)> == <f^T(ct), x>.
    fx = spec.tree_util.tree_leaves(make(slax, snp)(x))
    wide = np.complex128
    lhs = sum(np.vdot(np.asarray(c).astype(wide), np.asarray(y).astype(wide)) for c, y in
              zip(jax.tree_util.tree_leaves(cts), fx))
    rhs = np.vdot(np.asarray(ours[0]).astype(wide), x.astype(wide))
    narrow = min(np.asarray(y).dtype.itemsize for y in [x, *fx]) <= 2
    np.testing.assert_allclose(lhs, rhs, rtol=1e-2 if narrow else 1e-5)


WEAK: list[Make] = [
    lambda L, N: lambda x: L.reshape(L.broadcast_in_dim(x, (2, 3), ()), (3, 2)),
    lambda L, N: lambda x: L.slice(L.broadcast_in_dim(x, (5,), ()), (1,), (4,), (2,)),
    lambda L, N: lambda x: L.pad(L.broadcast_in_dim(x, (2,), ()), x, ((1, 1, 1),)),
    lambda L, N: lambda x: L.concatenate([L.broadcast_in_dim(x, (2,), ()), N.ones(1)], 0),
    lambda L, N: lambda x: L.dynamic_slice(L.broadcast_in_dim(x, (4,), ()), (1,), (2,)),
    lambda L, N: lambda x: L.tile(L.broadcast_in_dim(x, (2,), ()), (2,)),
    lambda L, N: lambda x: L.convert_element_type(x, N.float16),
]


@pytest.mark.parametrize("make", WEAK)
def test_weak_input_cotangent_types(make: Make) -> None:
    """A weak primal (a Python scalar): the cotangent types equal JAX's."""
    out = jax.eval_shape(make(jlax, jnp), 2.0)
    ct = np.linspace(1, 2, int(np.prod(out.shape))).reshape(out.shape).astype(out.dtype)
    assert_same(spec.vjp(make(slax, snp), 2.0)[1](ct), jax.vjp(make(jlax, jnp), 2.0)[1](ct),
                exact=False)


# ---------------------------------------------------- jaxprs equal JAX's


def _sum_sin(n: Any, y: Any) -> Any:
    return n.sum(n.sin(y))


X = np.arange(6.0, dtype=np.float32).reshape(2, 3) * 0.5 - 1

JAXPRS: list[tuple[Make, tuple[Any, ...], Any]] = [
    (lambda L, N: lambda x: N.sum(N.broadcast_to(x, (4, 2, 3))), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, L.broadcast_in_dim(x[:, :1], (4, 2, 3), (1, 2))),
     (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x.reshape(3, 2)), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, L.reshape(x, (3, 2), (1, 0))), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x.T), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x[:, 1:]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x[:, ::2]), (X,), 0),
    (lambda L, N: lambda x, p: _sum_sin(N, L.pad(x, p, ((1, 2, 1), (-1, 1, 0)))),
     (X, np.float32(2.0)), (0, 1)),
    (lambda L, N: lambda x: _sum_sin(N, L.pad(x, 3.0, ((1, 2, 1), (-1, 1, 0)))), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.concatenate([x, 2 * x, x[:1]])), (X,), 0),
    (lambda L, N: lambda x, i: _sum_sin(N, L.dynamic_slice(x, (i, 1), (1, 2))), (X, 1), 0),
    (lambda L, N: lambda x, i: _sum_sin(N, L.dynamic_update_slice(x, x[:1, :2] * 3, (i, 1))),
     (X, 1), 0),
    (lambda L, N: lambda x: (x * 2.0).astype(N.float16).sum().astype(N.float32), (X,), 0),
    (lambda L, N: lambda x: L.convert_element_type(x, N.float32) * 2, (3.0,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.squeeze(x[:1]) + N.flip(x[0])), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.stack([x, x * 2], axis=1)), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.tile(x, (2, 1))), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.split(x, [1, 2], axis=1)[2]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, L.unstack(x, 1)[1]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, N.expand_dims(x, 1)), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, L.copy_p.bind(x)), (X,), 0),
]


@pytest.mark.parametrize("make,args,argnums", JAXPRS)
def test_grad_and_jvp_jaxprs_match_jax(make: Make, args: tuple[Any, ...], argnums: Any
                                       ) -> None:
    f_s, f_j = make(slax, snp), make(jlax, jnp)
    want = str(jax.make_jaxpr(jax.grad(f_j, argnums=argnums))(*args))
    have = str(spec.make_jaxpr(spec.grad(f_s, argnums=argnums))(*args))
    assert have == want
    floats = [i for i, a in enumerate(args) if not isinstance(a, int)]

    def jvp_of(j: Any, f: Callable[..., Any]) -> Callable[..., Any]:
        def g(*a: Any) -> Any:
            def h(*fl: Any) -> Any:
                full = list(a)
                for i, v in zip(floats, fl):
                    full[i] = v
                return f(*full)
            prim = tuple(a[i] for i in floats)
            return j.jvp(h, prim, prim)
        return g
    want = str(jax.make_jaxpr(jvp_of(jax, f_j))(*args))
    have = str(spec.make_jaxpr(jvp_of(spec, f_s))(*args))
    assert have == want
    # Both linearize paths give bitwise-identical gradients.
    direct = spec.grad(f_s, argnums=argnums)(*args)
    with config.use_direct_linearize(False):
        legacy = spec.grad(f_s, argnums=argnums)(*args)
    for a, b in zip(spec.tree_util.tree_leaves(direct), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert_same(direct, jax.grad(f_j, argnums=argnums)(*args), exact=False)


def test_jnp_pad_grad_values() -> None:
    """jnp.pad (a jit around pad): gradients equal JAX's."""
    def f(N: Any) -> Callable[..., Any]:
        return lambda x: _sum_sin(N, N.pad(x, ((1, 2), (0, 1))))
    assert_same(spec.grad(f(snp))(X), jax.grad(f(jnp))(X), exact=False)
    check_grads(f(snp), [snp.asarray(X)], order=2)


def test_broadcast_identity_is_forwarded() -> None:
    """lax.broadcast_in_dim to the operand's own shape adds no equation (JAX
    forwards it when staging), so its transpose's expand_dims(ct, ()) adds none."""
    def f(L: Any) -> Callable[..., Any]:
        return lambda x: L.broadcast_in_dim(x, (2, 3), (0, 1)) * 2
    assert str(spec.make_jaxpr(f(slax))(X)) == str(jax.make_jaxpr(f(jlax))(X))
