"""Batching rules of the reductions family (reduce_*, argmax/argmin, the
cumulative reductions, sort, top_k, reduce_precision), dot_general and
conv_general_dilated.

Each rule is checked three ways: ``spec.vmap`` equals a Python loop over the
batch run with spec (the loop is the oracle), equals real JAX's ``vmap`` run
live, and ``make_jaxpr(vmap(f))`` prints as JAX's does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.core.registry import missing_sections

MINE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
        "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
        "cumlogsumexp", "sort", "top_k", "reduce_precision", "dot_general",
        "conv_general_dilated"]

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

Side = tuple[Any, Any, Any]  # (api module, numpy module, lax module)
SPEC: Side = (spec, snp, slax)
JAX: Side = (jax, jnp, jax.lax)


def needs(*prims: str) -> None:
    """Skip when a batching rule of another family that the check goes
    through has not landed yet."""
    pending = {n for n, s, _ in missing_sections() if s == "batch"}
    missing = sorted(set(prims) & pending)
    if missing:
        pytest.skip(f"needs the batching rules of {missing} (another family)")


def take(x: np.ndarray, axis: int | None, i: int) -> np.ndarray:
    return x if axis is None else np.take(x, i, axis=axis)


def loop_oracle(f: Callable[..., Any], args: Sequence[np.ndarray],
                in_axes: Sequence[int | None], out_axes: int) -> list[np.ndarray]:
    """``f`` run example by example with spec, results stacked at out_axes."""
    size = next(a.shape[d] for a, d in zip(args, in_axes) if d is not None)
    per = [f(*[take(a, d, i) for a, d in zip(args, in_axes)]) for i in range(size)]
    leaves = [spec.tree_util.tree_leaves(p) for p in per]
    return [np.stack([np.asarray(lv[k]) for lv in leaves], axis=out_axes)
            for k in range(len(leaves[0]))] if size else []


def assert_close(ours: Any, theirs: Any, exact: bool = True) -> None:
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        oa, ta = np.asarray(o), np.asarray(t)
        assert oa.dtype == ta.dtype and oa.shape == ta.shape, (oa.dtype, ta.dtype, oa.shape,
                                                                 ta.shape)
        if exact:
            np.testing.assert_array_equal(oa, ta)
        else:
            np.testing.assert_allclose(oa, ta, rtol=2e-5, atol=1e-5)


def check_vmap(make: Callable[[Side], Callable[..., Any]], args: Sequence[np.ndarray],
               in_axes: Sequence[int | None], out_axes: int = 0, exact: bool = True,
               jaxpr: bool = True) -> None:
    """spec's vmap == the spec loop == JAX's vmap (values, dtypes, shapes);
    the jaxprs print alike."""
    fs, fj = make(SPEC), make(JAX)
    ours = spec.vmap(fs, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
    theirs = jax.vmap(fj, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
    assert_close(ours, theirs, exact)
    ndims = [a.ndim for a in args]
    pos_axes = [None if d is None else d % n for d, n in zip(in_axes, ndims)]
    looped = loop_oracle(fs, args, pos_axes, out_axes)
    if looped:
        for o, lp in zip(spec.tree_util.tree_leaves(ours), looped):
            if exact:
                np.testing.assert_array_equal(np.asarray(o), lp)
            else:
                np.testing.assert_allclose(np.asarray(o), lp, rtol=2e-5, atol=1e-5)
    if jaxpr:
        ts = str(spec.make_jaxpr(spec.vmap(fs, in_axes=tuple(in_axes), out_axes=out_axes))(
            *args))
        tj = str(jax.make_jaxpr(jax.vmap(fj, in_axes=tuple(in_axes), out_axes=out_axes))(
            *args))
        assert ts == tj, f"spec:\n{ts}\njax:\n{tj}"


@st.composite
def batched_array(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 3,
                  dtype: Any = np.float32) -> tuple[np.ndarray, int, int]:
    """An array with a batch axis somewhere (given as a negative or a
    non-negative in_axis), and an out_axes for the result."""
    rank = draw(st.integers(min_rank, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank + 1, max_size=rank + 1)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.RandomState(seed)
    if np.dtype(dtype) == np.bool_:
        x = rng.rand(*shape) > 0.5
    elif np.issubdtype(dtype, np.integer):
        x = rng.randint(-5, 6, size=shape).astype(dtype)
    else:
        x = rng.randn(*shape).astype(dtype)
    d = draw(st.integers(0, rank))
    if draw(st.booleans()):
        d -= rank + 1
    return x, d, draw(st.integers(0, 1))


# ---------------------------------------------------------------- reductions

REDUCERS = [("reduce_sum", np.float32), ("reduce_max", np.float32), ("reduce_min", np.int32),
            ("reduce_prod", np.float32), ("reduce_and", np.bool_), ("reduce_or", np.int32),
            ("reduce_xor", np.bool_)]


@pytest.mark.parametrize("name,dtype", REDUCERS)
@SETTINGS
@given(data=st.data())
def test_reducers_vmap(name: str, dtype: Any, data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array(dtype=dtype))
    rank = x.ndim - 1
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, rank - 1)))))
    out = min(out, rank - len(axes))
    check_vmap(lambda s: lambda v: getattr(s[2], name)(v, axes), [x], [d], out,
               exact=name != "reduce_sum" and name != "reduce_prod")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@SETTINGS
@given(data=st.data())
def test_argminmax_vmap(name: str, data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array())
    rank = x.ndim - 1
    ax = data.draw(st.integers(0, rank - 1))
    out = min(out, rank - 1)
    check_vmap(lambda s: lambda v: getattr(s[2], name)(v, ax, np.int32), [x], [d], out)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@SETTINGS
@given(data=st.data())
def test_cumulative_vmap(name: str, data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array())
    ax = data.draw(st.integers(0, x.ndim - 2))
    rev = data.draw(st.booleans())
    check_vmap(lambda s: lambda v: getattr(s[2], name)(v, ax, rev), [x], [d], out,
               exact=name in ("cummax", "cummin"))


@SETTINGS
@given(data=st.data())
def test_sort_vmap(data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array())
    rank = x.ndim - 1
    dim = data.draw(st.integers(-rank, rank - 1))
    # A second operand, batched elsewhere or not at all (then it is broadcast).
    y = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    yd = data.draw(st.sampled_from([None, d]))
    yarg = y if yd is not None else np.take(y, 0, axis=d)
    num_keys = data.draw(st.integers(1, 2))
    check_vmap(lambda s: lambda a, b: s[2].sort((a, b), dimension=dim, num_keys=num_keys),
               [x, yarg], [d, yd], out)
    check_vmap(lambda s: lambda a: s[2].sort(a, dimension=dim), [x], [d], out)


@SETTINGS
@given(data=st.data())
def test_top_k_vmap(data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array())
    rank = x.ndim - 1
    ax = data.draw(st.integers(0, rank - 1))
    k = data.draw(st.integers(0, np.moveaxis(x, d, 0).shape[1 + ax]))
    check_vmap(lambda s: lambda v: s[2].top_k(v, k, axis=ax), [x], [d], out)


@SETTINGS
@given(data=st.data())
def test_reduce_precision_vmap(data: st.DataObject) -> None:
    x, d, out = data.draw(batched_array())
    check_vmap(lambda s: lambda v: s[2].reduce_precision(v, 5, 7), [x], [d], out)


# ------------------------------------------------------------------------ dot

DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4, 2), (5, 4), (((1,), (1,)), ((), ()))),
    ((4,), (4,), (((0,), (0,)), ((), ()))),
    ((2, 3), (3, 2), (((0, 1), (1, 0)), ((), ()))),
    ((3, 2, 4), (4, 2, 6), (((2,), (0,)), ((1,), (1,)))),
]


@pytest.mark.parametrize("case", range(len(DOT_CASES)))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_dot_general_vmap(case: int, data: st.DataObject) -> None:
    ls, rs, dn = DOT_CASES[case]
    size = data.draw(st.integers(1, 3))
    ld = data.draw(st.sampled_from([None, *range(-len(ls) - 1, len(ls) + 1)]))
    rd = data.draw(st.sampled_from([0, len(rs), -1] if ld is None else
                                   [None, *range(len(rs) + 1)]))
    rng = np.random.RandomState(data.draw(st.integers(0, 2**31 - 1)))

    def make(shape: tuple[int, ...], d: int | None) -> np.ndarray:
        x = rng.randn(size, *shape).astype(np.float32)
        return x[0] if d is None else np.moveaxis(x, 0, d)

    lhs, rhs = make(ls, ld), make(rs, rd)
    out_rank = len(ls) + len(rs) - 2 * len(dn[0][0]) - len(dn[1][0])
    out = data.draw(st.integers(0, out_rank))
    check_vmap(lambda s: lambda a, b: s[2].dot_general(a, b, dn), [lhs, rhs], [ld, rd], out,
               exact=False)


def test_dot_general_int_and_preferred() -> None:
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    w = np.arange(20, dtype=np.int8).reshape(4, 5)
    check_vmap(lambda s: lambda a, b: s[2].dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.int32), [x, w], [0, None])


# ----------------------------------------------------------------------- conv

CONV_CASES: list[tuple[dict[str, Any], tuple[int, ...], tuple[int, ...], Any]] = [
    ({}, (2, 4, 6, 5), (6, 4, 2, 2), None),
    ({"feature_group_count": 2}, (2, 4, 6, 5), (6, 2, 2, 2), None),
    ({"batch_group_count": 2}, (2, 4, 6, 5), (6, 4, 2, 2), None),
    ({"window_strides": (2, 1), "padding": "SAME", "rhs_dilation": (1, 2)},
     (2, 5, 5, 3), (2, 2, 3, 4), ("NHWC", "HWIO", "NHWC")),
    ({"lhs_dilation": (2, 1), "padding": ((1, 0), (0, 1))}, (1, 3, 4, 4), (2, 3, 3, 1),
     None),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("ld,rd", [(0, 0), (0, None), (None, 0), (2, -1), (-1, 1), (None, 3)])
def test_conv_vmap(case: int, ld: int | None, rd: int | None) -> None:
    kw, ls, rs, dn = CONV_CASES[case]
    rng = np.random.RandomState(case)
    size = 3

    def make(shape: tuple[int, ...], d: int | None) -> np.ndarray:
        x = rng.randn(size, *shape).astype(np.float32)
        return x[0] if d is None else np.moveaxis(x, 0, d)

    lhs, rhs = make(ls, ld), make(rs, rd)
    params = {"window_strides": (1, 1), "padding": "VALID", **kw}

    def make_f(s: Side) -> Callable[..., Any]:
        return lambda a, b: s[2].conv_general_dilated(a, b, dimension_numbers=dn, **params)

    check_vmap(make_f, [lhs, rhs], [ld, rd], out_axes=1, exact=False)


def test_conv_vmap_empty_batch() -> None:
    lhs = np.zeros((0, 2, 4, 6, 5), np.float32)
    rhs = np.zeros((0, 6, 4, 2, 2), np.float32)
    check_vmap(lambda s: lambda a, b: s[2].conv_general_dilated(a, b, (1, 1), "VALID"),
               [lhs, rhs], [0, 0])


# ------------------------------------------------------- jnp-level and jaxprs

def test_jnp_sum_axis_jaxpr() -> None:
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    check_vmap(lambda s: lambda v: s[1].sum(v, axis=1), [x], [1])
    check_vmap(lambda s: lambda v: s[1].sum(v), [x], [2])
    check_vmap(lambda s: lambda v: s[1].max(v, axis=0), [x], [-1])
    check_vmap(lambda s: lambda v: s[1].argmax(v, axis=1), [x], [0])


def test_jnp_cumsum_sort_jaxpr() -> None:
    needs("jit")
    x = np.random.RandomState(1).randn(3, 4, 5).astype(np.float32)
    check_vmap(lambda s: lambda v: s[1].cumsum(v, axis=1), [x], [1], exact=False)
    check_vmap(lambda s: lambda v: s[1].sort(v, axis=0), [x], [2])


def test_matmul_jaxpr() -> None:
    rng = np.random.RandomState(2)
    x = rng.randn(3, 4, 5).astype(np.float32)
    w = rng.randn(5, 6).astype(np.float32)
    ws = rng.randn(4, 5, 6).astype(np.float32)
    check_vmap(lambda s: lambda a: a @ w, [x], [1], exact=False)
    check_vmap(lambda s: lambda b: x[0] @ b, [ws], [0], exact=False)
    check_vmap(lambda s: lambda a, b: a @ b, [x, ws], [1, 0], exact=False)
    check_vmap(lambda s: lambda a, b: s[1].dot(a, b), [x, ws], [1, 0], exact=False)


def test_conv_jnp_jaxpr() -> None:
    rng = np.random.RandomState(3)
    x = rng.randn(3, 1, 2, 8).astype(np.float32)
    w = rng.randn(4, 2, 3).astype(np.float32)
    check_vmap(lambda s: lambda a: s[2].conv(a, w, (1,), "SAME"), [x], [0], exact=False)


# ------------------------------------------------- composition with autodiff

def test_vmap_of_grad_and_grad_of_vmap() -> None:
    needs("broadcast_in_dim", "mul", "transpose")
    rng = np.random.RandomState(4)
    x = rng.randn(3, 4, 5).astype(np.float32)
    w = rng.randn(5, 6).astype(np.float32)

    def make_vg(s: Side) -> Callable[..., Any]:
        f: Callable[..., Any] = s[0].grad(lambda a: s[1].sum(s[1].sin(a @ w)))
        return f

    check_vmap(make_vg, [x], [0], exact=False, jaxpr=False)

    def gv(s: Side) -> Any:
        def loss(b: Any) -> Any:
            return s[1].sum(s[0].vmap(lambda a: s[1].cumsum(a @ b, axis=0))(x))
        return s[0].grad(loss)(w)

    assert_close(gv(SPEC), gv(JAX), exact=False)
    s_txt = str(spec.make_jaxpr(spec.grad(lambda b: snp.sum(spec.vmap(
        lambda a: a @ b, in_axes=1)(x))))(w))
    j_txt = str(jax.make_jaxpr(jax.grad(lambda b: jnp.sum(jax.vmap(
        lambda a: a @ b, in_axes=1)(x))))(w))
    assert s_txt == j_txt


def test_nested_vmap_and_jit() -> None:
    needs("jit")
    rng = np.random.RandomState(5)
    x = rng.randn(2, 3, 4, 5).astype(np.float32)

    def make(s: Side) -> Callable[..., Any]:
        inner: Callable[..., Any] = s[0].vmap(
            s[0].jit(lambda v: s[2].top_k(v, 2)[0] + s[1].sum(v)), in_axes=1)
        return inner

    check_vmap(make, [x], [3], exact=False)


def test_no_pending_batch_sections() -> None:
    pending = [(n, s) for n, s, _ in missing_sections() if n in MINE and s == "batch"]
    assert pending == []
