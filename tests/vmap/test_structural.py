"""vmap of the structural primitives (spec/_src/lax/slicing.py): spec's vmap
against a Python loop over the batch (run with spec) and real JAX's vmap, for
hypothesis-drawn shapes, params, in_axes (None and negative included) and
out_axes; jaxprs of representative vmapped functions against JAX's; vmap with
grad and jit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax as jl

import spec
import spec.numpy as snp
from spec import lax as sl
from spec._src.core.registry import missing_sections
from spec._src.lax import shaping, slicing

_jax_lax_internal: Any = jax._src.lax.lax  # JAX's primitives, bound as spec binds its own

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _batched(rng: np.random.Generator, shape: Sequence[int], axis: int | None, size: int,
             dtype: Any = np.float32) -> np.ndarray:
    full = list(shape)
    if axis is not None:
        full.insert(axis % (len(shape) + 1), size)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 5, full).astype(dtype)
    return rng.uniform(-2, 2, full).astype(dtype)


def check_vmap(sf: Callable[..., Any], jf: Callable[..., Any], args: Sequence[Any],
               in_axes: Sequence[int | None], out_axes: int, *, jax_fails: bool = False) -> None:
    """spec's vmap == stacking spec's per-example results == JAX's vmap
    (exactly: these primitives move values). ``jax_fails``: a case JAX
    0.12's rule gets wrong (it raises)."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    got = _leaves(spec.vmap(sf, in_axes=tuple(in_axes), out_axes=out_axes)(*args))
    per = [_leaves(sf(*[a if ax is None else np.take(a, b, axis=ax)
                        for a, ax in zip(args, in_axes)])) for b in range(size)]
    loop = [np.stack([np.asarray(p[k]) for p in per], axis=out_axes) for k in range(len(got))]
    if jax_fails:
        with pytest.raises((TypeError, ValueError)):
            jax.vmap(jf, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
        want = loop
    else:
        # One JAX compilation for the batched program (eagerly, each batched
        # primitive and axis move compiles on its own).
        want = _leaves(jax.jit(jax.vmap(jf, in_axes=tuple(in_axes), out_axes=out_axes))(
            *args))
    assert len(got) == len(want) == len(loop)
    for g, w, lp in zip(got, want, loop):
        g_np = np.asarray(g)
        assert g_np.dtype == lp.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g_np, lp)
        np.testing.assert_array_equal(g_np, np.asarray(w))


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)
nonscalar = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


def _axis(draw: Callable[..., Any], rank: int, none: bool = True) -> int | None:
    strat = st.integers(-rank - 1, rank)
    axis: int | None = draw(st.none() | strat) if none else draw(strat)
    return axis


def _axes(draw: Callable[..., Any], ranks: Sequence[int]) -> list[int | None]:
    axes = [_axis(draw, r) for r in ranks]
    if all(a is None for a in axes):
        axes[0] = _axis(draw, ranks[0], none=False)
    return axes


def _out(draw: Callable[..., Any], rank: int) -> int:
    return int(draw(st.integers(-rank - 1, rank)))


def _rng(data: st.DataObject) -> np.random.Generator:
    return np.random.default_rng(data.draw(st.integers(0, 2**16)))


def _unary(data: st.DataObject, shape: tuple[int, ...], out_rank: int, sf: Any, jf: Any,
           dtype: Any = np.float32, jax_fails: Callable[[int], bool] | None = None) -> None:
    ax = _axis(data.draw, len(shape), none=False)
    size = data.draw(st.integers(1, 3))
    x = _batched(_rng(data), shape, ax, size, dtype)
    assert ax is not None
    fails = jax_fails(ax % (len(shape) + 1)) if jax_fails else False
    check_vmap(sf, jf, [x], [ax], _out(data.draw, out_rank), jax_fails=fails)


# ------------------------------------------------------------ unary ones

@SETTINGS
@given(data=st.data(), shape=shapes, dt=st.sampled_from([np.int32, np.bool_, np.float16]))
def test_convert_element_type(data: st.DataObject, shape: tuple[int, ...], dt: Any) -> None:
    _unary(data, shape, len(shape), lambda x: sl.convert_element_type(x, dt),
           lambda x: jl.convert_element_type(x, dt))


@SETTINGS
@given(data=st.data(), shape=shapes, to=st.sampled_from([np.uint8, np.int32, np.uint16]))
def test_bitcast_narrow_or_same(data: st.DataObject, shape: tuple[int, ...], to: Any) -> None:
    out_rank = len(shape) + (0 if np.dtype(to).itemsize == 4 else 1)
    _unary(data, shape, out_rank, lambda x: sl.bitcast_convert_type(x, to),
           lambda x: jl.bitcast_convert_type(x, to))


@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 3), max_size=2).map(tuple))
def test_bitcast_widen(data: st.DataObject, shape: tuple[int, ...]) -> None:
    """uint8[..., 4] -> float32[...]: a batch axis placed last is moved
    first by spec (JAX 0.12's rule fails there)."""
    full = (*shape, 4)
    _unary(data, full, len(shape), lambda x: sl.bitcast_convert_type(x, np.float32),
           lambda x: jl.bitcast_convert_type(x, np.float32), dtype=np.uint8,
           jax_fails=lambda ax: ax == len(full))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_broadcast_in_dim(data: st.DataObject, shape: tuple[int, ...]) -> None:
    extra = data.draw(st.lists(st.integers(1, 3), max_size=2))
    out_rank = len(shape) + len(extra)
    dims = tuple(sorted(data.draw(st.permutations(range(out_rank)))[:len(shape)]))
    target = [0] * out_rank
    it = iter(extra)
    for i in range(out_rank):
        target[i] = shape[dims.index(i)] if i in dims else next(it)
    # size-1 operand axes may stretch
    target = [t if i not in dims or shape[dims.index(i)] != 1 else data.draw(
        st.integers(1, 3)) for i, t in enumerate(target)]
    _unary(data, shape, out_rank, lambda x: sl.broadcast_in_dim(x, tuple(target), dims),
           lambda x: jl.broadcast_in_dim(x, tuple(target), dims))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_reshape(data: st.DataObject, shape: tuple[int, ...]) -> None:
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    dims = data.draw(st.sampled_from([None, perm]))
    new = data.draw(st.sampled_from([(int(np.prod(shape)),), shape[::-1], (*shape, 1)]))
    _unary(data, shape, len(new), lambda x: sl.reshape(x, new, dims),
           lambda x: jl.reshape(x, new, dims))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_transpose_rev_tile_copy(data: st.DataObject, shape: tuple[int, ...]) -> None:
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    _unary(data, shape, len(shape), lambda x: sl.transpose(x, perm),
           lambda x: jl.transpose(x, perm))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)))))
                 ) if shape else ()
    _unary(data, shape, len(shape), lambda x: sl.rev(x, axes), lambda x: jl.rev(x, axes))
    reps = tuple(data.draw(st.integers(0, 2)) for _ in shape)
    _unary(data, shape, len(shape), lambda x: slicing.tile_p.bind(x, reps=reps),
           lambda x: _jax_lax_internal.tile_p.bind(x, reps=reps))
    _unary(data, shape, len(shape), lambda x: slicing.copy_p.bind(x),
           lambda x: _jax_lax_internal.copy_p.bind(x))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_squeeze(data: st.DataObject, shape: tuple[int, ...]) -> None:
    ones = data.draw(st.lists(st.booleans(), min_size=len(shape) + 1,
                              max_size=len(shape) + 1))
    full: list[int] = []
    sq: list[int] = []
    for i, d in enumerate(shape):
        if ones[i]:
            sq.append(len(full))
            full.append(1)
        full.append(d)
    _unary(data, tuple(full), len(shape), lambda x: sl.squeeze(x, sq),
           lambda x: jl.squeeze(x, sq))


@SETTINGS
@given(data=st.data(), shape=nonscalar)
def test_slice(data: st.DataObject, shape: tuple[int, ...]) -> None:
    starts = [data.draw(st.integers(0, d)) for d in shape]
    limits = [data.draw(st.integers(s, d)) for s, d in zip(starts, shape)]
    strides = data.draw(st.none() | st.lists(st.integers(1, 3), min_size=len(shape),
                                             max_size=len(shape)))
    _unary(data, shape, len(shape), lambda x: sl.slice(x, starts, limits, strides),
           lambda x: jl.slice(x, starts, limits, strides))


@SETTINGS
@given(data=st.data(), shape=nonscalar)
def test_split_unstack(data: st.DataObject, shape: tuple[int, ...]) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    cut = data.draw(st.integers(0, shape[axis]))
    sizes = (cut, shape[axis] - cut)
    _unary(data, shape, len(shape), lambda x: sl.split(x, sizes, axis),
           lambda x: jl.split(x, sizes, axis))
    _unary(data, shape, len(shape) - 1, lambda x: sl.unstack(x, axis),
           lambda x: _jax_lax_internal.unstack_p.bind(x, axis=axis))


# ------------------------------------------------------ several operands

@SETTINGS
@given(data=st.data(), shape=nonscalar, n=st.integers(1, 3))
def test_concatenate(data: st.DataObject, shape: tuple[int, ...], n: int) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    shapes_ = [tuple(data.draw(st.integers(0, 3)) if i == dim else d
                     for i, d in enumerate(shape)) for _ in range(n)]
    axes = _axes(data.draw, [len(shape)] * n)
    rng, size = _rng(data), data.draw(st.integers(1, 3))
    args = [_batched(rng, s, a, size) for s, a in zip(shapes_, axes)]
    check_vmap(lambda *xs: sl.concatenate(xs, dim), lambda *xs: jl.concatenate(xs, dim),
               args, axes, _out(data.draw, len(shape)))


@SETTINGS
@given(data=st.data(), shape=shapes, n=st.integers(1, 3))
def test_stack(data: st.DataObject, shape: tuple[int, ...], n: int) -> None:
    axis = data.draw(st.integers(0, len(shape)))
    axes = _axes(data.draw, [len(shape)] * n)
    rng, size = _rng(data), data.draw(st.integers(1, 3))
    args = [_batched(rng, shape, a, size) for a in axes]
    check_vmap(lambda *xs: slicing.stack_p.bind(*xs, axis=axis),
               lambda *xs: _jax_lax_internal.stack_p.bind(*xs, axis=axis),
               args, axes, _out(data.draw, len(shape) + 1))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_pad(data: st.DataObject, shape: tuple[int, ...]) -> None:
    config = tuple((data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)),
                    data.draw(st.integers(0, 2))) for _ in shape)
    out_shape = [lo + hi + (d + (d - 1) * i) for (lo, hi, i), d in zip(config, shape)]
    if any(d < 0 for d in out_shape):
        config = tuple((0, 0, i) for _, _, i in config)
    axes = _axes(data.draw, [len(shape), 0])
    rng, size = _rng(data), data.draw(st.integers(1, 3))
    args = [_batched(rng, shape, axes[0], size), _batched(rng, (), axes[1], size)]
    check_vmap(lambda x, p: sl.pad(x, p, config), lambda x, p: jl.pad(x, p, config),
               args, axes, _out(data.draw, len(shape)))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_dynamic_slice(data: st.DataObject, shape: tuple[int, ...]) -> None:
    sizes = tuple(data.draw(st.integers(0, d)) for d in shape)
    axes = _axes(data.draw, [len(shape)] + [0] * len(shape))
    rng, size = _rng(data), data.draw(st.integers(1, 3))
    args = [_batched(rng, shape, axes[0], size)]
    args += [_batched(rng, (), a, size, np.int32) - 1 for a in axes[1:]]
    check_vmap(lambda x, *i: sl.dynamic_slice(x, i, sizes),
               lambda x, *i: jl.dynamic_slice(x, i, sizes), args, axes,
               _out(data.draw, len(shape)))


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_dynamic_update_slice(data: st.DataObject, shape: tuple[int, ...]) -> None:
    ushape = tuple(data.draw(st.integers(0, d)) for d in shape)
    axes = _axes(data.draw, [len(shape), len(shape)] + [0] * len(shape))
    rng, size = _rng(data), data.draw(st.integers(1, 3))
    args = [_batched(rng, shape, axes[0], size), _batched(rng, ushape, axes[1], size)]
    args += [_batched(rng, (), a, size, np.int32) - 1 for a in axes[2:]]
    check_vmap(lambda x, u, *i: sl.dynamic_update_slice(x, u, i),
               lambda x, u, *i: jl.dynamic_update_slice(x, u, i), args, axes,
               _out(data.draw, len(shape)))


def test_no_operand_primitives_are_not_batched() -> None:
    """iota and empty have no operands; vmap of a function making one leaves
    it unbatched (broadcast only when the output must be batched)."""
    x = np.arange(3, dtype=np.float32)
    got = spec.vmap(lambda a: a + sl.iota(np.float32, 3))(np.stack([x, x]))
    want = jax.vmap(lambda a: a + jl.iota(np.float32, 3))(np.stack([x, x]))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert spec.vmap(lambda a: sl.empty((2,), np.float32), out_axes=None)(x).shape == (2,)


# ------------------------------------------------------------- jaxpr texts

def _x() -> np.ndarray:
    return np.arange(16, dtype=np.float32).reshape(4, 4)


def _i() -> np.ndarray:
    return np.array([0, 3, -1, 2], np.int32)


JAXPR_CASES: list[tuple[str, Callable[[Any, Any], Callable[..., Any]], tuple[Any, ...], Any]] = [
    ("reshape", lambda L, N: lambda a: a.reshape(2, 2), (_x(),), 1),
    ("reshape_dims", lambda L, N: lambda a: L.reshape(a, (4, 1), (0,)), (_x(),), 1),
    ("transpose", lambda L, N: lambda a: a.T, (_x().reshape(4, 2, 2),), 1),
    ("concatenate", lambda L, N: lambda a, b: N.concatenate([a, b]),
     (_x(), np.arange(4, dtype=np.float32)), (1, None)),
    ("jnp_pad", lambda L, N: lambda a: N.pad(a, (1, 2)), (_x(),), 1),
    ("pad_batched_value", lambda L, N: lambda a, p: L.pad(a, p, ((1, 2, 1),)),
     (_x(), np.arange(4, dtype=np.float32)), (1, 0)),
    ("dynamic_slice_batched_index", lambda L, N: lambda a, i: L.dynamic_slice(a, (i,), (2,)),
     (_x(), _i()), (1, 0)),
    ("dynamic_slice_operand", lambda L, N: lambda a: L.dynamic_slice(a, (1,), (2,)),
     (_x(),), 1),
    ("dynamic_slice_index_only", lambda L, N: lambda a, i: L.dynamic_slice(a, (i,), (2,)),
     (_x()[0], _i()), (None, 0)),
    ("x[i]", lambda L, N: lambda a, i: a[i], (_x(), _i()), (1, 0)),
    ("dynamic_update_slice", lambda L, N: lambda a, u, i: L.dynamic_update_slice(a, u, (i,)),
     (_x(), _x()[:2], _i()), (1, 1, 0)),
    ("dynamic_update_slice_unbatched_update", lambda L, N: lambda a, u, i:
     L.dynamic_update_slice(a, u, (i,)), (_x(), _x()[:2, 0], _i()), (1, None, 0)),
    ("dynamic_update_slice_static", lambda L, N: lambda a, u: L.dynamic_update_slice(
        a, u, (1,)), (_x(), _x()[:2]), (1, 1)),
    ("squeeze", lambda L, N: lambda a: L.squeeze(a[None], (0,)), (_x(),), 1),
    ("broadcast_in_dim", lambda L, N: lambda a: L.broadcast_in_dim(a, (2, 4), (1,)),
     (_x(),), 1),
    ("rev_slice", lambda L, N: lambda a: L.slice(L.rev(a, (0,)), (1,), (4,), (2,)), (_x(),), 1),
    ("stack", lambda L, N: lambda a, b: N.stack([a, b], 1), (_x(), _x()), (1, 0)),
    ("split", lambda L, N: lambda a: N.split(a, [1], 0), (_x(),), 1),
    ("unstack", lambda L, N: lambda a: L.unstack(a.reshape(2, 2), 1), (_x(),), 1),
    ("tile", lambda L, N: lambda a: N.tile(a, 2), (_x(),), 1),
    ("convert", lambda L, N: lambda a: a.astype(np.int32), (_x(),), 1),
    ("bitcast", lambda L, N: lambda a: L.bitcast_convert_type(a, np.uint8), (_x(),), 1),
    ("copy", lambda L, N: lambda a: N.array(a, copy=True), (_x(),), 1),
]


@pytest.mark.parametrize("name,mk,args,in_axes", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_jaxpr_text(name: str, mk: Any, args: tuple[Any, ...], in_axes: Any) -> None:
    want = str(jax.make_jaxpr(jax.vmap(mk(jl, jnp), in_axes=in_axes))(*args))
    got = str(spec.make_jaxpr(spec.vmap(mk(sl, snp), in_axes=in_axes))(*args))
    assert got == want


# ------------------------------------------------- with other transformations

def _g(x: Any, i: Any, lax: Any, np_: Any) -> Any:
    y = lax.dynamic_slice(lax.pad(x, np.float32(1), ((1, 1, 0),)), (i,), (3,))
    return np_.sum(lax.concatenate([y, lax.rev(y, (0,))], 0) ** 2)


def test_vmap_of_grad_and_grad_of_vmap() -> None:
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    i = np.array([0, 2, 1], np.int32)
    got = spec.vmap(spec.grad(lambda a, j: _g(a, j, sl, snp)))(x, i)
    want = jax.vmap(jax.grad(lambda a, j: _g(a, j, jl, jnp)))(x, i)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    got2 = spec.grad(lambda a: snp.sum(spec.vmap(lambda r, j: _g(r, j, sl, snp))(a, i)))(x)
    want2 = jax.grad(lambda a: jnp.sum(jax.vmap(lambda r, j: _g(r, j, jl, jnp))(a, i)))(x)
    np.testing.assert_allclose(np.asarray(got2), np.asarray(want2), rtol=1e-6)
    t_got = str(spec.make_jaxpr(spec.vmap(spec.grad(lambda a, j: _g(a, j, sl, snp))))(x, i))
    t_want = str(jax.make_jaxpr(jax.vmap(jax.grad(lambda a, j: _g(a, j, jl, jnp))))(x, i))
    assert t_got == t_want


def test_nested_vmap_of_jit() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)

    def h(a: Any, lax: Any, api: Any) -> Any:
        return api.jit(lambda u: lax.transpose(lax.reshape(u, (2, 2)), (1, 0)))(a)

    got = spec.vmap(spec.vmap(lambda a: h(a, sl, spec), in_axes=0), in_axes=2)(x)
    want = jax.vmap(jax.vmap(lambda a: h(a, jl, jax), in_axes=0), in_axes=2)(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    t_got = str(spec.make_jaxpr(spec.vmap(spec.vmap(lambda a: h(a, sl, spec), in_axes=0),
                                          in_axes=2))(x))
    t_want = str(jax.make_jaxpr(jax.vmap(jax.vmap(lambda a: h(a, jl, jax), in_axes=0),
                                         in_axes=2))(x))
    assert t_got == t_want


def test_no_batch_rule_missing() -> None:
    mine = {getattr(module, n).name for module in (shaping, slicing)
            for n in module.__all__ if n.endswith("_p")}
    missing = {m[0] for m in missing_sections() if m[1] == "batch"}
    assert not (mine & missing), mine & missing
