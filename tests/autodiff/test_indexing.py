"""Autodiff rules (JVP and transpose) of gather and the scatters
(spec/_src/lax/indexing.py), against real JAX run live and against mathematics
(finite differences, the dot-product test)."""

from __future__ import annotations

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
from spec._src.core.interpreter import Pending
from spec._src.lax import indexing
from spec._src.core.registry import REGISTRY, missing_sections
from spec.test_util import check_grads

# make(lax, jnp) -> a function of array arguments
Make = Callable[[Any, Any], Callable[..., Any]]

# The primitives the indexing module declares (it also imports others it uses).
INDEXING = sorted(p.name for p in vars(indexing).values()
                  if isinstance(p, type(indexing.gather_p))
                  and p.impl.__module__ == indexing.__name__)
HYP = settings(max_examples=7, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _random(shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    v = rng.standard_normal(tuple(shape))
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(tuple(shape))
    return np.asarray(v).astype(dt)


def _distinct(shape: Sequence[int], rng: np.random.Generator, offset: float = 0.0
              ) -> np.ndarray:
    """Values with no ties (min/max derivatives are discontinuous at ties)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (rng.permutation(n).reshape(tuple(shape)) * 0.37 + offset).astype(np.float32)


def assert_same(ours: Any, theirs: Any, exact: bool = True) -> None:
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        oa, ta = np.asarray(o), np.asarray(t)
        assert oa.dtype == ta.dtype and oa.shape == ta.shape, (spec.typeof(o), jax.typeof(t))
        if oa.dtype.kind != "V":
            if exact:
                np.testing.assert_array_equal(oa, ta)
            else:  # accumulation order of duplicates may differ
                np.testing.assert_allclose(oa.astype(np.complex128), ta.astype(np.complex128),
                                           rtol=1e-5, atol=1e-6)
        assert bool(getattr(o, "weak_type", False)) == bool(getattr(t, "weak_type", False))


def run_case(make: Make, args: Sequence[np.ndarray], order: int = 2, exact: bool = False,
             fd: bool = True) -> None:
    """check_grads on spec (the dot-product test always; finite differences
    unless ``fd`` is False), then jvp and vjp with the same random tangents
    and cotangents equal to JAX's (cotangent types included), and the two
    linearize paths bitwise equal."""
    f_s, f_j = make(slax, snp), make(jlax, jnp)
    s_args = [snp.asarray(a) for a in args]
    j_args = [jnp.asarray(a) for a in args]
    if fd:
        check_grads(f_s, s_args, order=order, modes=("fwd", "rev"))
    else:
        dot_product_test(f_s, s_args)
    rng = np.random.default_rng(0)
    ts = [_random(np.shape(a), np.asarray(a).dtype, rng) for a in args]
    ours = spec.jvp(f_s, tuple(s_args), tuple(snp.asarray(t) for t in ts))
    # JAX's side: one jit (one compilation, where eagerly each primitive of the
    # transformed program compiles on its own) where values are compared up to a
    # tolerance on finite operands; eager where bits are compared or operands are
    # not finite (XLA simplifies a jitted program's nan and inf differently).
    jit = not exact and all(np.isfinite(np.asarray(a)).all() for a in args
                            if np.asarray(a).dtype.kind in "fc")
    jvp_j = lambda p, t: jax.jvp(f_j, tuple(p), tuple(t))  # noqa: E731
    theirs = (jax.jit(jvp_j) if jit else jvp_j)(j_args, [jnp.asarray(t) for t in ts])
    assert_same(ours, theirs, exact)
    cts = jax.tree_util.tree_map(lambda o: _random(o.shape, o.dtype, rng),
                                 jax.eval_shape(f_j, *j_args))
    vjp_j = lambda p, c: jax.vjp(f_j, *p)[1](c)  # noqa: E731
    want = (jax.jit(vjp_j) if jit else vjp_j)(j_args, jax.tree_util.tree_map(jnp.asarray, cts))
    s_cts = spec.tree_util.tree_map(snp.asarray, cts)
    got = spec.vjp(f_s, *s_args)[1](s_cts)
    assert_same(got, want, exact)
    with config.use_direct_linearize(False):
        legacy = spec.vjp(f_s, *s_args)[1](s_cts)
    for a, b in zip(spec.tree_util.tree_leaves(got), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def dot_product_test(f: Callable[..., Any], args: Sequence[Any]) -> None:
    """<ct, J t> = <J^T ct, t> with spec's own JVP and VJP: the check that holds where ``f`` is
    not differentiable in the finite-difference sense (ties of min/max), since the VJP must
    still be the transpose of the JVP."""
    rng = np.random.default_rng(3)
    ts = [_random(np.shape(a), np.asarray(a).dtype, rng) for a in args]
    out, out_t = spec.jvp(f, tuple(args), tuple(snp.asarray(t) for t in ts))
    ct = _random(np.shape(out), np.asarray(out).dtype, rng)
    ct_in = spec.vjp(f, *args)[1](snp.asarray(ct))
    lhs = float(np.vdot(ct.astype(np.float64), np.asarray(out_t, np.float64)))
    rhs = sum(float(np.vdot(np.asarray(c, np.float64), t.astype(np.float64)))
              for c, t in zip(ct_in, ts))
    assert abs(lhs - rhs) <= 1e-5 * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


def _has_rule(prim: str, section: str) -> bool:
    return not isinstance(getattr(REGISTRY[prim], section), Pending)


def test_no_pending_ad_sections() -> None:
    left = [m for m in missing_sections() if m[0] in INDEXING and m[1] in ("jvp", "transpose")]
    assert left == []
    assert set(INDEXING) == {"gather", "scatter", "scatter-add", "scatter-sub", "scatter-mul",
                             "scatter-min", "scatter-max"}


# ------------------------------------------------------------ strategies


@st.composite
def indexed(draw: Any, allow_oob: bool = False) -> tuple[tuple[int, ...], np.ndarray]:
    """An operand shape and an int32 array of indices into its first axis
    (negative ones included; out of bounds ones if ``allow_oob``)."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    n = shape[0]
    lo, hi = (-n - 2, n + 1) if allow_oob else (-n, n - 1)
    idx_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    size = int(np.prod(idx_shape, dtype=np.int64))
    idx = draw(st.lists(st.integers(lo, hi), min_size=size, max_size=size))
    return shape, np.asarray(idx, np.int32).reshape(idx_shape)


DTYPES = st.sampled_from([np.float32, np.complex64])


@given(indexed(), DTYPES)
@HYP
def test_gather_getitem(case: tuple[tuple[int, ...], np.ndarray], dtype: Any) -> None:
    shape, idx = case
    x = _random(shape, dtype, np.random.default_rng(1))
    run_case(lambda L, N: lambda x: x[N.asarray(idx)], [x])
    if len(shape) > 1:
        last = np.clip(idx, -shape[-1], shape[-1] - 1)
        run_case(lambda L, N: lambda x: x[..., N.asarray(last)], [x])
        run_case(lambda L, N: lambda x: x[N.asarray(idx), 1:], [x])


@given(indexed(allow_oob=True), st.sampled_from(["fill", "clip", "drop"]))
@HYP
def test_gather_modes(case: tuple[tuple[int, ...], np.ndarray], mode: str) -> None:
    """Out-of-bounds windows: clipped (their cotangent goes to the clamped
    window) or filled (a constant: zero tangent)."""
    shape, idx = case
    x = _random(shape, np.float32, np.random.default_rng(2))
    get_mode = "fill" if mode == "drop" else mode
    run_case(lambda L, N: lambda x: x.at[N.asarray(idx)].get(mode=get_mode, fill_value=2.5),
             [x])


def test_gather_with_batching_dims() -> None:
    x = _random((3, 4, 2), np.float32, np.random.default_rng(3))
    idx = np.array([[[1], [3]], [[0], [0]], [[2], [1]]], np.int32)  # (3, 2, 1)
    dn: dict[str, Any] = {"offset_dims": (2,), "collapsed_slice_dims": (1,),
                          "start_index_map": (1,), "operand_batching_dims": (0,),
                          "start_indices_batching_dims": (0,)}

    def make(L: Any, N: Any) -> Callable[..., Any]:
        return lambda x: L.gather(x, N.asarray(idx), L.GatherDimensionNumbers(**dn), (1, 1, 2),
                                  mode="clip")
    run_case(make, [x])


@given(indexed(), DTYPES)
@HYP
def test_scatter_add_sub(case: tuple[tuple[int, ...], np.ndarray], dtype: Any) -> None:
    shape, idx = case
    rng = np.random.default_rng(4)
    x = _random(shape, dtype, rng)
    u = _random(idx.shape + shape[1:], dtype, rng)
    run_case(lambda L, N: lambda x, u: x.at[N.asarray(idx)].add(u), [x, u])
    run_case(lambda L, N: lambda x, u: x.at[N.asarray(idx)].subtract(u), [x, u])
    run_case(lambda L, N: lambda u: N.asarray(x).at[N.asarray(idx)].add(u * 2), [u])


@given(indexed(allow_oob=True), st.sampled_from(["drop", "clip"]))
@HYP
def test_scatter_add_modes(case: tuple[tuple[int, ...], np.ndarray], mode: str) -> None:
    shape, idx = case
    rng = np.random.default_rng(5)
    x, u = _random(shape, np.float32, rng), _random(idx.shape + shape[1:], np.float32, rng)
    run_case(lambda L, N: lambda x, u: x.at[N.asarray(idx)].add(u, mode=mode), [x, u])


def test_lax_scatter_sub() -> None:
    x = _random((4, 3), np.float32, np.random.default_rng(6))
    u = _random((2, 3), np.float32, np.random.default_rng(7))
    idx = np.array([[2], [2]], np.int32)

    def make(L: Any, N: Any) -> Callable[..., Any]:
        dn = L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
        return lambda x, u: L.scatter_sub(x, N.asarray(idx), u, dn)
    run_case(make, [x, u])


@given(indexed(), st.booleans())
@HYP
def test_scatter_mul(case: tuple[tuple[int, ...], np.ndarray], unique: bool) -> None:
    shape, idx = case
    rng = np.random.default_rng(8)
    x = _random(shape, np.float32, rng)
    u = _random(idx.shape + shape[1:], np.float32, rng)
    # Differentiable in the operand always, in the updates with unique indices.
    run_case(lambda L, N: lambda x: x.at[N.asarray(idx)].multiply(N.asarray(u)), [x])
    flat = np.unique(np.where(idx < 0, idx + shape[0], idx).ravel()).astype(np.int32)
    if unique and flat.size:
        v = _random(flat.shape + shape[1:], np.float32, rng)
        run_case(lambda L, N: lambda x, v: x.at[N.asarray(flat)].multiply(
            v, unique_indices=True), [x, v])


def test_scatter_mul_updates_need_unique_indices() -> None:
    x = np.ones((3,), np.float32)
    idx = np.array([0, 0], np.int32)
    for j, n in ((jax, jnp), (spec, snp)):
        def f(u: Any, n: Any = n) -> Any:
            return n.sum(n.asarray(x).at[n.asarray(idx)].multiply(u))
        with pytest.raises(NotImplementedError, match="unique_indices"):
            j.grad(f)(n.ones((2,), n.float32))


@given(indexed(), st.sampled_from(["min", "max"]), st.booleans())
@HYP
def test_scatter_min_max(case: tuple[tuple[int, ...], np.ndarray], op: str, ties: bool
                         ) -> None:
    """Without ties: finite differences hold. With ties (equal updates, or an
    update equal to the operand): the tangent is the average, as in JAX."""
    shape, idx = case
    rng = np.random.default_rng(9)
    x = _distinct(shape, rng)
    u = _distinct(idx.shape + shape[1:], rng, offset=0.1)
    if ties and u.size:
        u = np.round(u)  # many equal updates ...
        x = np.round(x)  # ... and updates equal to operand elements
    run_case(lambda L, N: lambda x, u: getattr(x.at[N.asarray(idx)], op)(u), [x, u],
             order=1, fd=not ties)


@given(indexed())
@HYP
def test_scatter_set_unique(case: tuple[tuple[int, ...], np.ndarray]) -> None:
    shape, idx = case
    flat = np.unique(np.where(idx < 0, idx + shape[0], idx).ravel()).astype(np.int32)
    rng = np.random.default_rng(10)
    x = _random(shape, np.float32, rng)
    v = _random(flat.shape + shape[1:], np.float32, rng)
    run_case(lambda L, N: lambda x, v: x.at[N.asarray(flat)].set(v, unique_indices=True),
             [x, v])


needs_select_n = pytest.mark.skipif(
    not (_has_rule("select_n", "jvp") and _has_rule("select_n", "transpose")
         and _has_rule("eq", "jvp")),
    reason="scatter's JVP with overlapping indices masks tangents with select_n")


@needs_select_n
@given(indexed())
@HYP
def test_scatter_set_overlapping(case: tuple[tuple[int, ...], np.ndarray]) -> None:
    """Duplicate indices: the last update wins, and only it gets a cotangent."""
    shape, idx = case
    rng = np.random.default_rng(11)
    x = _random(shape, np.float32, rng)
    u = _random(idx.shape + shape[1:], np.float32, rng)
    run_case(lambda L, N: lambda x, u: x.at[N.asarray(idx)].set(u), [x, u], order=1)


def test_scatter_transpose_needs_unique_indices() -> None:
    idx = np.array([[1]], np.int32)

    def f(L: Any, N: Any) -> Callable[..., Any]:
        dn = L.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
        return lambda x, u: L.scatter(x, N.asarray(idx), u, dn)
    x, u = np.ones(3, np.float32), np.ones(1, np.float32)
    for j, L, N in ((jax, jlax, jnp), (spec, slax, snp)):
        with pytest.raises(NotImplementedError, match="unique_indices=True"):
            j.linear_transpose(f(L, N), x, u)(x)


# ---------------------------------------------------- jaxprs equal JAX's


def _sum_sin(n: Any, y: Any) -> Any:
    return n.sum(n.sin(y))


X = np.arange(6.0, dtype=np.float32).reshape(2, 3) * 0.5 - 1
U = np.array([[5.0, -2.0, 3.0], [1.0, 0.5, -1.5]], np.float32)
I3 = np.array([1, 0, 1], np.int32)
I2 = np.array([1, 0], np.int32)

JAXPRS: list[tuple[Make, tuple[Any, ...], Any]] = [
    (lambda L, N: lambda x: _sum_sin(N, x[N.asarray(I3)]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x[:, N.asarray(I2)]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x.at[N.asarray(I3)].get(mode="fill", fill_value=0.5)),
     (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x[1]), (X,), 0),
    (lambda L, N: lambda x: _sum_sin(N, x.at[N.asarray(I3)].add(x[0])), (X,), 0),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].add(u, mode="drop")), (X, U),
     (0, 1)),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].subtract(u)), (X, U), (0, 1)),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].set(u, unique_indices=True)),
     (X, U), (0, 1)),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].multiply(
        u, unique_indices=True)), (X, U), (0, 1)),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].max(u)), (X, U), (0, 1)),
    (lambda L, N: lambda x, u: _sum_sin(N, x.at[N.asarray(I2)].min(u)), (X, U), (0, 1)),
]


def _jvp_of(j: Any, f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *a: j.jvp(f, a, a)


@pytest.mark.parametrize("make,args,argnums", JAXPRS)
def test_grad_and_jvp_jaxprs_match_jax(make: Make, args: tuple[Any, ...], argnums: Any
                                       ) -> None:
    f_s, f_j = make(slax, snp), make(jlax, jnp)
    want = str(jax.make_jaxpr(jax.grad(f_j, argnums=argnums))(*args))
    have = str(spec.make_jaxpr(spec.grad(f_s, argnums=argnums))(*args))
    assert have == want
    want = str(jax.make_jaxpr(_jvp_of(jax, f_j))(*args))
    have = str(spec.make_jaxpr(_jvp_of(spec, f_s))(*args))
    assert have == want
    direct = spec.grad(f_s, argnums=argnums)(*args)
    with config.use_direct_linearize(False):
        legacy = spec.grad(f_s, argnums=argnums)(*args)
    for a, b in zip(spec.tree_util.tree_leaves(direct), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert_same(direct, jax.grad(f_j, argnums=argnums)(*args), exact=False)


def test_scatter_overlapping_jvp_jaxpr() -> None:
    """The id-scatter scheme of scatter's JVP, staged exactly as JAX stages it."""
    f_s, f_j = (lambda x: snp.sin(x.at[snp.asarray(I3)].set(x[0] * 2)),
                lambda x: jnp.sin(x.at[jnp.asarray(I3)].set(x[0] * 2)))
    want = str(jax.make_jaxpr(_jvp_of(jax, f_j))(X))
    have = str(spec.make_jaxpr(_jvp_of(spec, f_s))(X))
    assert have == want
    assert_same(spec.jvp(f_s, (X,), (U,)), jax.jvp(f_j, (X,), (U,)), exact=False)


@needs_select_n
def test_scatter_overlapping_grad_jaxpr() -> None:
    f_s, f_j = (lambda x: _sum_sin(snp, x.at[snp.asarray(I2)].set(x[0] * 2)),
                lambda x: _sum_sin(jnp, x.at[jnp.asarray(I2)].set(x[0] * 2)))
    assert str(spec.make_jaxpr(spec.grad(f_s))(X)) == str(jax.make_jaxpr(jax.grad(f_j))(X))


def test_integer_scatter_and_gather_allow_int() -> None:
    """Integer operands have float0 (zero) cotangents."""
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)

    def f(N: Any) -> Callable[..., Any]:
        return lambda x, i, y: (N.sum(N.sin(y[i[0]]))
                                + N.sum(N.asarray(x).at[i].add(1)).astype(N.float32))
    ours = spec.grad(f(snp), argnums=(0, 1, 2), allow_int=True)(xi, I2, X)
    theirs = jax.grad(f(jnp), argnums=(0, 1, 2), allow_int=True)(xi, I2, X)
    assert_same(ours, theirs, exact=False)
