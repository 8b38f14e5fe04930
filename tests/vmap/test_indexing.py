"""Batching rules of gather and the scatters (scatter, scatter-add/-sub/-mul/
-min/-max).

Checked three ways: ``spec.vmap`` equals a Python loop over the batch run
with spec (the loop is the oracle), equals real JAX's ``vmap`` run live, and
``make_jaxpr(vmap(f))`` prints as JAX's does. Covers jnp-level indexing
(``x[idx]``, ``x.at[idx].op(u)``) with the operand, the indices and the
updates batched in every combination, and direct ``lax.gather``/
``lax.scatter*`` calls whose dimension numbers already have batching dims.
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

MINE = ["gather", "scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min",
        "scatter-max"]

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

Side = tuple[Any, Any, Any]  # (api module, numpy module, lax module)
SPEC: Side = (spec, snp, slax)
JAX: Side = (jax, jnp, jax.lax)


def take(x: np.ndarray, axis: int | None, i: int) -> np.ndarray:
    return x if axis is None else np.take(x, i, axis=axis)


def loop_oracle(f: Callable[..., Any], args: Sequence[np.ndarray],
                in_axes: Sequence[int | None], out_axes: int) -> list[np.ndarray]:
    size = next(a.shape[d] for a, d in zip(args, in_axes) if d is not None)
    per = [f(*[take(a, d, i) for a, d in zip(args, in_axes)]) for i in range(size)]
    leaves = [spec.tree_util.tree_leaves(p) for p in per]
    return [np.stack([np.asarray(lv[k]) for lv in leaves], axis=out_axes)
            for k in range(len(leaves[0]))] if size else []


def assert_close(ours: Any, theirs: Any, exact: bool) -> None:
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
    fs, fj = make(SPEC), make(JAX)
    pos = [None if d is None else d % a.ndim for d, a in zip(in_axes, args)]
    # out_axes may not exceed the rank of a per-example result.
    if all(a.shape[d] for a, d in zip(args, pos) if d is not None):
        first = spec.tree_util.tree_leaves(fs(*[take(a, d, 0) for a, d in zip(args, pos)]))
        out_axes = min(out_axes, min(np.ndim(o) for o in first))
    ours = spec.vmap(fs, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
    theirs = jax.vmap(fj, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
    assert_close(ours, theirs, exact)
    for o, lp in zip(spec.tree_util.tree_leaves(ours), loop_oracle(fs, args, pos, out_axes)):
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


def batch(x: np.ndarray, d: int | None, size: int) -> np.ndarray:
    """``size`` distinct copies of x stacked at ``d`` (or x itself for None)."""
    if d is None:
        return x
    stacked = np.stack([np.roll(x, i) if x.ndim else x for i in range(size)])
    if np.issubdtype(x.dtype, np.floating):
        stacked = stacked + np.arange(size, dtype=x.dtype).reshape((size,) + (1,) * x.ndim)
    return np.moveaxis(stacked, 0, d)


@st.composite
def case(draw: st.DrawFn, need_indices_batch: bool = False
         ) -> tuple[int, np.ndarray, np.ndarray, int | None, int | None, int]:
    """(batch size, operand, indices, operand in_axis, indices in_axis,
    out_axes) for an operand of rank 1-3 and integer indices of rank 0-2 into
    its first axis (some out of range: jnp wraps negatives and clamps)."""
    size = draw(st.integers(1, 3))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.RandomState(seed)
    x = rng.randn(*shape).astype(np.float32)
    irank = draw(st.integers(0, 2))
    ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=irank, max_size=irank)))
    idx = rng.randint(-shape[0], shape[0], size=ishape).astype(np.int32)
    xd = draw(st.sampled_from([None, *range(-rank - 1, rank + 1)]))
    id_choices = [*range(-irank - 1, irank + 1)]
    idd = draw(st.sampled_from(id_choices if xd is None or need_indices_batch
                               else [None, *id_choices]))
    out = draw(st.integers(0, 1))
    return size, batch(x, xd, size), batch(idx, idd, size), xd, idd, out


# ---------------------------------------------------------------- jnp gather

@SETTINGS
@given(c=case())
def test_getitem_vmap(c: Any) -> None:
    _, x, idx, xd, idd, out = c
    check_vmap(lambda s: lambda a, i: s[1].asarray(a)[i], [x, idx], [xd, idd], out)


@SETTINGS
@given(c=case())
def test_getitem_second_axis_and_modes(c: Any) -> None:
    _, x, idx, xd, idd, out = c
    if x.ndim - (xd is not None) >= 2:
        check_vmap(lambda s: lambda a, i: s[1].asarray(a)[:, i], [x, idx], [xd, idd], out)
    check_vmap(lambda s: lambda a, i: s[1].asarray(a).at[i].get(mode="fill", fill_value=-1.0),
               [x, idx + 1], [xd, idd], out)
    # spec's jnp.take does not wrap itself in a jit as JAX's does (jnp layer):
    # values only.
    check_vmap(lambda s: lambda a, i: s[1].take(a, i, axis=-1, mode="clip"),
               [x, idx * 2], [xd, idd], out, jaxpr=False)


# --------------------------------------------------------------- jnp scatter

@pytest.mark.parametrize("op", ["add", "mul", "min", "max", "set"])
@SETTINGS
@given(c=case(), ud=st.sampled_from([None, 0, -1]), scalar=st.booleans())
def test_at_update_vmap(op: str, c: Any, ud: int | None, scalar: bool) -> None:
    size, x, idx, xd, idd, out = c
    if op == "set":
        # Duplicate indices leave unspecified which update wins: keep them unique.
        n = (np.moveaxis(x, xd, 0) if xd is not None else x[None]).shape[1]
        base = np.arange(n, dtype=np.int32)[::-1]
        idx = base if idd is None else batch(base, 0, size)
        idd = None if idd is None else 0
    idx_shape = np.shape(idx) if idd is None else np.delete(np.shape(idx), idd % idx.ndim)
    xs = x.shape if xd is None else np.delete(x.shape, xd % x.ndim)
    ushape = () if scalar else (*idx_shape, *xs[1:])
    u = np.linspace(-2.0, 2.0, int(np.prod(ushape, dtype=int))).astype(np.float32)
    u = batch(u.reshape(ushape), ud, size)
    if xd is None and idd is None and ud is None:
        ud = 0
        u = batch(u, 0, size)
    check_vmap(lambda s: lambda a, i, v: getattr(s[1].asarray(a).at[i], op)(v),
               [x, idx, u], [xd, idd, ud], out, exact=op != "add")


# ---------------------------------------------- lax with batching dims already

GDN: dict[str, Any] = {
    "offset_dims": (2,), "collapsed_slice_dims": (1,), "start_index_map": (1,),
    "operand_batching_dims": (0,), "start_indices_batching_dims": (0,)}
SDN: dict[str, Any] = {
    "update_window_dims": (2,), "inserted_window_dims": (1,),
    "scatter_dims_to_operand_dims": (1,), "operand_batching_dims": (0,),
    "scatter_indices_batching_dims": (0,)}


@pytest.mark.parametrize("xd,idd", [(0, None), (None, 0), (1, 2), (-1, 0), (3, -1)])
@pytest.mark.parametrize("mode", ["clip", "fill", None])
def test_lax_gather_with_batching_dims(xd: int | None, idd: int | None, mode: Any) -> None:
    rng = np.random.RandomState(0)
    size = 2
    x = batch(rng.randn(3, 4, 5).astype(np.float32), xd, size)
    idx = batch(rng.randint(-1, 5, size=(3, 2, 1)).astype(np.int32), idd, size)

    def make(s: Side) -> Callable[..., Any]:
        dn = s[2].GatherDimensionNumbers(**GDN)
        return lambda a, i: s[2].gather(a, i, dn, (1, 1, 5), mode=mode)

    check_vmap(make, [x, idx], [xd, idd], out_axes=1)


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_sub", "scatter_mul",
                                  "scatter_min", "scatter_max"])
@pytest.mark.parametrize("dims", [(0, None, None), (None, 0, None), (None, None, 1),
                                  (1, 2, None), (-1, 0, -1), (None, 1, 0)])
def test_lax_scatter_with_batching_dims(name: str, dims: tuple[Any, Any, Any]) -> None:
    rng = np.random.RandomState(1)
    size = 3
    xd, idd, ud = dims
    x = batch(rng.randn(3, 4, 5).astype(np.float32), xd, size)
    base = np.stack([rng.permutation(4)[:2] for _ in range(3)])[..., None].astype(np.int32)
    idx = batch(base, idd, size)
    u = batch(rng.randn(3, 2, 5).astype(np.float32), ud, size)

    def make(s: Side) -> Callable[..., Any]:
        dn = s[2].ScatterDimensionNumbers(**SDN)
        return lambda a, i, v: getattr(s[2], name)(a, i, v, dn, mode="clip")

    check_vmap(make, [x, idx, u], [xd, idd, ud], out_axes=0,
               exact=name not in ("scatter_add", "scatter_sub"))


def test_empty_batch_gather() -> None:
    x = np.zeros((0, 4, 5), np.float32)
    idx = np.zeros((0, 2, 1), np.int32)

    def make(s: Side) -> Callable[..., Any]:
        dn = s[2].GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
        return lambda a, i: s[2].gather(a, i, dn, (1, 5))

    check_vmap(make, [x, idx], [0, 0])


# ------------------------------------------------- composition with autodiff

def test_vmap_of_grad_of_indexing() -> None:
    rng = np.random.RandomState(2)
    x = rng.randn(3, 5).astype(np.float32)
    idx = np.array([[0, 2, 2], [4, 1, 0], [3, 3, 3]], np.int32)

    def make(s: Side) -> Callable[..., Any]:
        f: Callable[..., Any] = s[0].grad(
            lambda a, i: s[1].sum(s[1].sin(a[i]) * a.at[i].add(1.0)[0]))
        return f

    check_vmap(make, [x, idx], [0, 0], exact=False)
    check_vmap(make, [x, idx], [None, 0], exact=False)


def test_grad_of_vmap_of_indexing() -> None:
    rng = np.random.RandomState(3)
    x = rng.randn(5, 4).astype(np.float32)
    idx = np.array([[0, 2], [4, 1], [3, 3]], np.int32)

    def run(s: Side) -> Any:
        def loss(a: Any) -> Any:
            g = s[0].vmap(lambda i: a[i] * 2.0)(idx)
            return s[1].sum(s[0].vmap(lambda r: r.at[0].max(1.0), in_axes=1)(g))
        return s[0].grad(loss)(x), s[0].make_jaxpr(s[0].grad(loss))(x)

    (gs, js), (gj, jj) = run(SPEC), run(JAX)
    assert_close(gs, gj, exact=False)
    assert str(js) == str(jj)


def test_nested_vmap_gather() -> None:
    rng = np.random.RandomState(4)
    x = rng.randn(2, 3, 6).astype(np.float32)
    idx = np.array([[1, 5], [0, 0], [2, 4]], np.int32)

    def make(s: Side) -> Callable[..., Any]:
        f: Callable[..., Any] = s[0].vmap(lambda a, i: a[i], in_axes=(0, 0))
        return f

    check_vmap(make, [x, idx], [0, None])
    check_vmap(make, [x, np.stack([idx, idx[::-1]])], [0, 0], out_axes=1)


def test_no_pending_batch_sections() -> None:
    pending = [(n, s) for n, s, _ in missing_sections() if n in MINE and s == "batch"]
    assert pending == []
