"""vmap against a Python loop (the oracle, here in the test only) and against
real JAX's vmap, on drawn shapes, in_axes (None and negative included) and
out_axes: the call primitives (jit, remat2, custom_jvp_call, custom_vjp_call,
with their derivatives), checkpoint_name, stop_gradient, add_any, named
collectives and control flow, plus log2, one_minus_square, a dilated conv
and scatter-sub with batched operands or indices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import lax as slax
from jax import lax as jlax

SETTINGS = settings(max_examples=8, deadline=None)


def _take(x: np.ndarray, axis: int | None, i: int) -> np.ndarray:
    return x if axis is None else np.take(x, i, axis=axis)


def _loop(f: Callable[..., Any], args: Sequence[np.ndarray], in_axes: Sequence[int | None],
          out_axes: int, size: int) -> list[np.ndarray]:
    """``f`` applied to each example in turn, the results stacked at
    ``out_axes`` (per output leaf)."""
    per = [spec.tree_util.tree_leaves(f(*[_take(a, ax, i) for a, ax in zip(args, in_axes)]))
           for i in range(size)]
    return [np.stack([np.asarray(p[k]) for p in per], axis=out_axes)
            for k in range(len(per[0]))]


def _check(f_spec: Callable[..., Any], f_jax: Callable[..., Any] | None,
           args: Sequence[np.ndarray], in_axes: Sequence[int | None], out_axes: int,
           size: int, rtol: float = 2e-6, **vmap_kw: Any) -> None:
    """spec's vmap equals the loop, and real JAX's vmap when ``f_jax`` is given."""
    ours = spec.tree_util.tree_leaves(
        spec.vmap(f_spec, in_axes=tuple(in_axes), out_axes=out_axes, **vmap_kw)(*args))
    loop = _loop(f_spec, args, in_axes, out_axes, size)
    assert len(ours) == len(loop)
    for o, want in zip(ours, loop):
        o = np.asarray(o)
        assert o.shape == want.shape and o.dtype == want.dtype
        np.testing.assert_allclose(o, want, rtol=rtol, atol=1e-6)
    if f_jax is not None:
        theirs = jax.tree_util.tree_leaves(
            jax.vmap(f_jax, in_axes=tuple(in_axes), out_axes=out_axes, **vmap_kw)(*args))
        for o, t in zip(ours, theirs):
            t = np.asarray(t)
            assert np.asarray(o).shape == t.shape and np.asarray(o).dtype == t.dtype
            np.testing.assert_allclose(np.asarray(o), t, rtol=rtol, atol=1e-6)


@st.composite
def batched(draw: Any, n_args: int = 1, min_rank: int = 0, max_rank: int = 2,
            low: float = -2.0, high: float = 2.0) -> Any:
    """(size, per-example shape, args, in_axes, out_axes): each argument has
    the batch axis inserted at its in_axis (some may be None, not all)."""
    size = draw(st.integers(1, 4))
    rank = draw(st.integers(min_rank, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    in_axes: list[int | None] = []
    args = []
    for k in range(n_args):
        axis = draw(st.one_of(st.none(), st.integers(-(rank + 1), rank))) if k else \
            draw(st.integers(-(rank + 1), rank))
        x = draw(st.integers(0, 2 ** 31 - 1))
        rng = np.random.default_rng(x)
        if axis is None:
            a = rng.uniform(low, high, shape).astype(np.float32)
        else:
            a = np.moveaxis(rng.uniform(low, high, (size, *shape)).astype(np.float32), 0, axis)
        args.append(a)
        in_axes.append(axis)
    out_axis = draw(st.integers(-(rank + 1), rank))
    return size, shape, args, in_axes, out_axis


# ---------------------------------------------------------- elementwise etc.


@SETTINGS
@given(batched(low=0.1, high=3.0))
def test_log2(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(slax.log2, jlax.log2, args, in_axes, out_axis, size)


@SETTINGS
@given(batched())
def test_one_minus_square(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(slax.one_minus_square, jlax.one_minus_square, args, in_axes, out_axis, size)


@SETTINGS
@given(batched())
def test_checkpoint_name(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    from jax.ad_checkpoint import checkpoint_name as jname
    from spec.ad_checkpoint import checkpoint_name as sname
    _check(lambda x: sname(x * 2, "n"), lambda x: jname(x * 2, "n"), args, in_axes,
           out_axis, size)


@SETTINGS
@given(batched())
def test_stop_gradient(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(lambda x: slax.stop_gradient(snp.sin(x)), lambda x: jlax.stop_gradient(jnp.sin(x)),
           args, in_axes, out_axis, size)


@SETTINGS
@given(batched(n_args=2))
def test_add_any(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    from spec._src.lax.ad_prims import add_any_p
    # JAX does not export add_any: the loop and the sum are the oracles.
    _check(lambda a, b: add_any_p.bind(a, b), None, args, in_axes, out_axis, size)
    out = spec.vmap(lambda a, b: add_any_p.bind(a, b), in_axes=tuple(in_axes),
                    out_axes=out_axis)(*args)
    want = spec.vmap(lambda a, b: a + b, in_axes=tuple(in_axes), out_axes=out_axis)(*args)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))


@SETTINGS
@given(batched(n_args=2))
def test_jit(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(spec.jit(lambda a, b: snp.sin(a) * b), jax.jit(lambda a, b: jnp.sin(a) * b),
           args, in_axes, out_axis, size)


@SETTINGS
@given(batched(n_args=2))
def test_remat2(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(spec.checkpoint(lambda a, b: snp.sin(a) * b),
           jax.checkpoint(lambda a, b: jnp.sin(a) * b), args, in_axes, out_axis, size)


def _custom_jvp(lib: Any, np_: Any) -> Any:
    @lib.custom_jvp
    def g(a: Any, b: Any) -> Any:
        return np_.sin(a) * b

    def rule(p: Any, t: Any) -> Any:
        return g(*p), np_.cos(p[0]) * p[1] * t[0] + np_.sin(p[0]) * t[1]
    g.defjvp(rule)
    return g


def _custom_vjp(lib: Any, np_: Any) -> Any:
    @lib.custom_vjp
    def f(a: Any, b: Any) -> Any:
        return np_.sin(a) * b

    def fwd(a: Any, b: Any) -> Any:
        return f(a, b), (a, b)

    def bwd(r: Any, c: Any) -> Any:
        return c * np_.cos(r[0]) * r[1], c * np_.sin(r[0])
    f.defvjp(fwd, bwd)
    return f


@SETTINGS
@given(batched(n_args=2))
def test_custom_jvp_call(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(_custom_jvp(spec, snp), _custom_jvp(jax, jnp), args, in_axes, out_axis, size)
    # and its derivative, batched: grad per example against the loop
    gs = _custom_jvp(spec, snp)
    gj = _custom_jvp(jax, jnp)
    _check(spec.grad(lambda a, b: gs(a, b).sum()), jax.grad(lambda a, b: gj(a, b).sum()),
           args, in_axes, out_axis, size)


@SETTINGS
@given(batched(n_args=2))
def test_custom_vjp_call(case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(_custom_vjp(spec, snp), _custom_vjp(jax, jnp), args, in_axes, out_axis, size)
    fs = _custom_vjp(spec, snp)
    fj = _custom_vjp(jax, jnp)
    # grad w.r.t. the first argument only (a batched cotangent for an
    # unbatched second argument would be summed, unlike the loop).
    _check(spec.grad(lambda a, b: fs(a, b).sum()), jax.grad(lambda a, b: fj(a, b).sum()),
           args, in_axes, out_axis, size)


# ------------------------------------------------------------- conv, scatter


@SETTINGS
@given(st.integers(1, 3), st.sampled_from([(0, None), (None, 0), (0, 0), (2, 1), (-1, -4)]),
       st.integers(-4, 3), st.integers(0, 2 ** 31 - 1))
def test_conv_general_dilated(size: int, in_axes: tuple[int | None, int | None],
                              out_axis: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lhs_shape, rhs_shape = (2, 3, 5), (4, 3, 2)  # N C W, O I W

    def make(shape: tuple[int, ...], axis: int | None) -> np.ndarray:
        if axis is None:
            return rng.normal(size=shape).astype(np.float32)
        return np.moveaxis(rng.normal(size=(size, *shape)).astype(np.float32), 0, axis)

    args = [make(lhs_shape, in_axes[0]), make(rhs_shape, in_axes[1])]

    def conv(lib: Any) -> Callable[..., Any]:
        return lambda lhs, rhs: lib.lax.conv_general_dilated(lhs, rhs, (1,), "SAME",
                                                             rhs_dilation=(2,))
    _check(conv(spec), conv(jax), args, in_axes, out_axis, size, rtol=1e-5)


@SETTINGS
@given(batched(n_args=2, min_rank=1, max_rank=1), st.integers(0, 2))
def test_scatter_sub(case: Any, index: int) -> None:
    size, shape, args, in_axes, out_axis = case
    idx = min(index, shape[0] - 1)
    _check(lambda x, y: snp.asarray(x).at[idx].subtract(y[0]),
           lambda x, y: jnp.asarray(x).at[idx].subtract(y[0]), args, in_axes, out_axis, size)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 3), st.integers(-2, 1), st.integers(0, 2 ** 31 - 1))
def test_scatter_sub_batched_index(size: int, n: int, out_axis: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(size, n)).astype(np.float32)
    idx = rng.integers(0, n, size=(size,)).astype(np.int32)
    y = rng.normal(size=(size,)).astype(np.float32)
    _check(lambda a, i, b: snp.asarray(a).at[i].subtract(b),
           lambda a, i, b: jnp.asarray(a).at[i].subtract(b), [x, idx, y], [0, 0, 0], out_axis,
           size)


# -------------------------------------------------------- named collectives


def _by_hand(name: str, xs: np.ndarray, i: int) -> np.ndarray:
    """The collective's result for example ``i``, from all examples ``xs``
    (stacked at axis 0)."""
    if name == "psum":
        return xs.sum(0)
    if name == "pmax":
        return xs.max(0)
    if name == "pmin":
        return xs.min(0)
    if name == "all_gather":
        return xs
    if name == "axis_index":
        return np.int32(i)
    raise AssertionError(name)


@SETTINGS
@given(st.sampled_from(["psum", "pmax", "pmin", "all_gather", "axis_index"]), batched())
def test_named_collectives(name: str, case: Any) -> None:
    size, shape, args, in_axes, out_axis = case
    if name == "axis_index":  # a rank-0 result per example
        out_axis = 0 if out_axis >= 0 else -1

    def fn(lib: Any) -> Callable[..., Any]:
        if name == "axis_index":
            return lambda x: lib.lax.axis_index("i")
        if name == "all_gather":
            return lambda x: lib.lax.all_gather(x, "i")
        return lambda x: getattr(lib.lax, name)(x, "i")

    ours = np.asarray(spec.vmap(fn(spec), in_axes=tuple(in_axes), out_axes=out_axis,
                                axis_name="i")(*args))
    x = args[0]
    examples = np.stack([_take(x, in_axes[0], i) for i in range(size)])
    want = np.stack([np.asarray(_by_hand(name, examples, i)) for i in range(size)],
                    axis=out_axis)
    assert ours.shape == want.shape and ours.dtype == want.dtype
    np.testing.assert_allclose(ours, want, rtol=2e-6, atol=1e-6)
    theirs = np.asarray(jax.vmap(fn(jax), in_axes=tuple(in_axes), out_axes=out_axis,
                                 axis_name="i")(*args))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


# ----------------------------------------------- control flow, all the axes


def _cf(lib: Any, kind: str) -> Callable[..., Any]:
    np_, lax = lib.numpy, lib.lax
    if kind == "scan":
        return lambda x, y: lax.scan(lambda c, a: (c * 0.5 + a * y, c), np_.zeros_like(y),
                                     x)[1]
    if kind == "cond":
        return lambda x, y: lax.cond(x.sum() > 0, lambda a: a * y, lambda a: a - y, x)
    if kind == "switch":
        return lambda x, y: lax.switch(
            np_.clip(np_.floor(x.sum()).astype(np_.int32), 0, 2),
            [lambda a: a * y, lambda a: a - y, np_.sin], x)
    if kind == "while":
        return lambda x, y: lax.while_loop(lambda c: c[0].sum() < 4.0,
                                           lambda c: (c[0] + np_.abs(y) + 0.5, c[1] + 1),
                                           (x, 0))[0]
    if kind == "fori":
        return lambda x, y: lax.fori_loop(0, 3, lambda i, c: c * y + i, x)
    if kind == "map":
        return lambda x, y: lax.map(lambda a: a * y, x)
    if kind == "map_batched":
        return lambda x, y: lax.map(lambda a: np_.sin(a) + y, x, batch_size=2)
    if kind == "associative_scan":
        return lambda x, y: lax.associative_scan(lambda a, b: a * 0.5 + b, x + y)
    raise AssertionError(kind)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["scan", "cond", "switch", "while", "fori", "map", "map_batched",
                        "associative_scan"]),
       batched(n_args=2, min_rank=1, max_rank=2))
def test_control_flow_vmap_equals_loop(kind: str, case: Any) -> None:
    size, _, args, in_axes, out_axis = case
    _check(_cf(spec, kind), _cf(jax, kind), args, in_axes, out_axis, size, rtol=1e-5)
