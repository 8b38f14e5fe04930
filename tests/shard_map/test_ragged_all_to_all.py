"""lax.ragged_all_to_all inside shard_map, against JAX on four CPU devices.

JAX 0.12's XLA:CPU cannot run the ``ragged-all-to-all`` op, so JAX's side of
each value is the operation as JAX documents it (the docstring's SEND /
RECEIVE pseudocode), written with collectives XLA:CPU runs (``all_gather``,
``axis_index``) and run live by JAX; types, jaxprs, errors and the lowered
custom call come from JAX's own ``ragged_all_to_all``. Spec-only checks
then: the transpose is the adjoint per device (<ct, L t> = <L^T ct, t> in
float64), JVP of the linear map is the map of the tangents, vmap over a
batch equals the loop, and the ledger records one all_to_all.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import spec
from tests.support.twin import BUILTIN_CLASS, cell_program, prefetch, run_both

BASE = cell_program(BUILTIN_CLASS, setup='ON_JAX = jax.__name__ == "jax"\n')

PROGRAM = BASE + r'''
mesh = jax.make_mesh((2, 2), ('x', 'y'))
jax.set_mesh(mesh)

def layout(n, per, rows, seed, order=None):
    """Consistent index arrays for n members with per slices to each:
    (input_offsets, send_sizes, output_offsets, recv_sizes) as (n, K),
    member-major, with gaps and empty slices."""
    rng = np.random.RandomState(seed)
    K = n * per
    sizes = rng.randint(0, 3, size=(n, K))
    io_, oo_, rs_ = (np.zeros((n, K), np.int64) for _ in range(3))
    for j in range(n):
        at = rng.randint(0, 2)
        for k in range(K):
            io_[j, k] = at; at += sizes[j, k] + rng.randint(0, 2)
    for r in range(n):
        at = rng.randint(0, 2)
        for j in range(n):
            for m in range(per):
                oo_[j, r * per + m] = at; rs_[r, j * per + m] = sizes[j, r * per + m]
                at += sizes[j, r * per + m] + rng.randint(0, 2)
    assert io_.max() + 3 <= rows and oo_.max() + 3 <= rows
    return io_, sizes, oo_, rs_

def emulated(axis, order, per):
    """JAX's documented semantics: member place p receives, from the member
    at place j, j's slices p*per .. p*per+per-1, written at j's offsets."""
    inverse = np.argsort(order)
    def body(op, out_, io_, ss_, oo_, rs_):
        ops, ios, sss, oos = (lax.all_gather(v, axis) for v in (op, io_, ss_, oo_))
        me = jnp.asarray(inverse)[lax.axis_index(axis)]
        rows = jnp.arange(out_.shape[0])
        res = out_
        for j in range(len(order)):
            src = ops[order[j]]
            for m in range(per):
                k = me * per + m
                start, size, at = ios[order[j]][k], sss[order[j]][k], oos[order[j]][k]
                take = jnp.clip(start + rows - at, 0, src.shape[0] - 1)
                hit = (rows >= at) & (rows < at + size)
                res = jnp.where(hit.reshape((-1,) + (1,) * (out_.ndim - 1)), src[take], res)
        return res
    return body

CASES = {
    # name: (axis, spec of the member dimension, members, slices per member, row shape,
    #        operand dtype, index dtypes, seed, axis_index_groups)
    "x": ('x', jax.P('x'), 2, 1, (), jnp.float32, (jnp.int32,) * 4, 0, None),
    "y rows": ('y', jax.P('y'), 2, 2, (3,), jnp.float32, (jnp.int32,) * 4, 1, None),
    "xy": (('x', 'y'), jax.P(('x', 'y')), 4, 2, (2,), jnp.float32, (jnp.int32,) * 4, 2, None),
    "yx int": (('y', 'x'), jax.P(('y', 'x')), 4, 1, (), jnp.int32,
               (jnp.uint8, jnp.int16, jnp.int8, jnp.uint32), 3, None),
    "x groups": ('x', jax.P('x'), 2, 2, (2,), jnp.float32, (jnp.int32,) * 4, 4, ((1, 0),)),
}
ROWS = 30

def arrays(name):
    axis, spec_, n, per, row, dtype, idx_dtypes, seed, groups = CASES[name]
    order = list(groups[0]) if groups else list(range(n))
    tables = layout(n, per, ROWS, seed)
    # Rows of the global arrays are ordered by position along the axis; the
    # member at position p is at place order.index(p) of its group.
    by_position = [order.index(p) for p in range(n)]
    op = (np.arange(n * ROWS * int(np.prod(row))) % 97 + 1).reshape((n * ROWS,) + row)
    op = jax.device_put(jnp.asarray(op, dtype), spec_)
    dest = jax.device_put(jnp.asarray(-np.ones((n * ROWS,) + row), dtype), spec_)
    idx = [jax.device_put(jnp.asarray(t[by_position].reshape(-1), d), spec_)
           for t, d in zip(tables, idx_dtypes)]
    return (op, dest, *idx), axis, spec_, per, order, groups

def mapped(name, emulate=False):
    args, axis, spec_, per, order, groups = arrays(name)
    body = (emulated(axis, order, per) if emulate else
            lambda *a: lax.ragged_all_to_all(*a, axis_name=axis, axis_index_groups=groups))
    f = jax.shard_map(body, in_specs=spec_, out_specs=spec_)
    return (jax.jit(f) if emulate else f), args  # (JAX runs an eager shard_map op by op)

def hlo_line(f, args):
    text = jax.jit(f).lower(*args).as_text()
    line = next(l for l in text.splitlines() if "ragged_all_to_all" in l)
    return re.sub(r"%[\w#]+", "%", line.strip())

for name in CASES:
    f, args = mapped(name)
    cell(name + " jaxpr", lambda: print(jax.make_jaxpr(f)(*args)))
    cell(name + " lowered", lambda: print(hlo_line(f, args)))
    g, _ = mapped(name, emulate=ON_JAX)
    cell(name + " value", lambda: g(*args))
    if not ON_JAX:  # spec's jit against its eager value (test_jit_runs_the_same_exchange)
        cell(name + " jit value", lambda: jax.jit(g)(*args))

f, args = mapped("y rows")
op, dest, *idx = args
sm = lambda body: jax.shard_map(body, in_specs=jax.P('y'), out_specs=jax.P('y'))
rat = lambda *a, **k: lax.ragged_all_to_all(*a, axis_name='y', **k)
def with_index(k, fn):
    def body(o, d, *ix):
        ix = list(ix); ix[k] = fn(ix[k]); return rat(o, d, *ix)
    return lambda: jax.make_jaxpr(sm(body))(*args)
for k, which in enumerate(["input_offsets", "send_sizes", "output_offsets", "recv_sizes"]):
    cell(which + " float", with_index(k, lambda v: v.astype(jnp.float32)))
    cell(which + " bool", with_index(k, lambda v: v > 0))
    cell(which + " rank 2", with_index(k, lambda v: v[None]))
    cell(which + " scalar", with_index(k, lambda v: v[0]))
    cell(which + " empty", with_index(k, lambda v: v[:0]))
cell("unbound axis", lambda: jax.make_jaxpr(sm(lambda *a: lax.ragged_all_to_all(
    *a, axis_name='z')))(*args))
cell("outside shard_map", lambda: jax.make_jaxpr(lambda *a: rat(*a))(*args))
cell("eager outside a map", lambda: rat(*args))
cell("vmap over its axis", lambda: jax.vmap(rat, axis_name='y')(
    op.reshape(2, -1, 3), dest.reshape(2, -1, 3), *(v.reshape(2, -1) for v in idx)))
cell("invariant output", lambda: print(jax.make_jaxpr(sm(
    lambda o, d, *ix: rat(o, jnp.zeros(d.shape), *ix)))(*args)))
cell("weak output", lambda: print(jax.make_jaxpr(sm(
    lambda o, d, *ix: rat(o, d * 0 + 1.0, *ix)))(*args)))
cell("output dtype differs", lambda: print(jax.make_jaxpr(sm(
    lambda o, d, *ix: rat(o, d.astype(jnp.int32), *ix)))(*args)))
cell("jvp jaxpr", lambda: print(jax.make_jaxpr(
    lambda o, d, t: jax.jvp(lambda o, d: f(o, d, *idx), (o, d), (t, d)))(op, dest, op)))
cell("jvp of operand only jaxpr", lambda: print(jax.make_jaxpr(
    lambda o, t: jax.jvp(lambda o: f(o, dest, *idx), (o,), (t,)))(op, op)))
'''

prefetch(PROGRAM)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM)


def _cells() -> list[str]:
    names = [f"{case} {kind}" for case in ("x", "y rows", "xy", "yx int", "x groups")
             for kind in ("jaxpr", "lowered", "value")]
    names += [f"{which} {bad}" for which in ("input_offsets", "send_sizes", "output_offsets",
                                             "recv_sizes")
              for bad in ("float", "bool", "rank 2", "scalar", "empty")]
    names += re.findall(r'^cell\("([^"]+)"', PROGRAM, re.MULTILINE)
    return names


@pytest.mark.parametrize("name", _cells())
def test_cell_prints_what_jax_prints(results: tuple[dict[str, Any], dict[str, Any]],
                                     name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]


@pytest.mark.parametrize("case", ["x", "y rows", "xy", "yx int", "x groups"])
def test_jit_runs_the_same_exchange(results: tuple[dict[str, Any], dict[str, Any]],
                                    case: str) -> None:
    ours, _ = results
    assert ours[f"{case} jit value"] == ours[f"{case} value"]


def test_values_are_not_trivial(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Every layout moves rows: its result is not the untouched output."""
    ours, _ = results
    for case in ("x", "y rows", "xy", "yx int", "x groups"):
        assert re.search(r"\b[1-9]", ours[f"{case} value"].split("\n", 1)[1]), case


# ============================================================ spec only


ROWS = 24


def _layout(n: int, per: int, seed: int) -> list[np.ndarray]:
    """Consistent (input_offsets, send_sizes, output_offsets, recv_sizes),
    each of shape (n, n * per): member j's slice k goes to member k // per;
    slices are packed with gaps on both sides, some empty."""
    rng = np.random.RandomState(seed)
    k_all = n * per
    sizes = rng.randint(0, 3, size=(n, k_all))
    io, oo, rs = (np.zeros((n, k_all), np.int32) for _ in range(3))
    for j in range(n):
        at = int(rng.randint(0, 2))
        for k in range(k_all):
            io[j, k] = at
            at += sizes[j, k] + rng.randint(0, 2)
    for r in range(n):
        at = int(rng.randint(0, 2))
        for j in range(n):
            for m in range(per):
                oo[j, r * per + m], rs[r, j * per + m] = at, sizes[j, r * per + m]
                at += sizes[j, r * per + m] + rng.randint(0, 2)
    assert max(io.max(), oo.max()) + 3 <= ROWS
    return [io, sizes.astype(np.int32), oo, rs]


def _index(seed: int) -> list[Any]:
    return [spec.device_put(t.reshape(-1), spec.P(("x", "y"))) for t in _layout(4, 2, seed)]


def _mapped(index: list[Any]) -> Any:
    """The exchange over ("x", "y") as a linear map of (operand, output)."""
    f = spec.shard_map(_exchange, in_specs=spec.P(("x", "y")), out_specs=spec.P(("x", "y")))
    return lambda o, d: f(o, d, *index)


def _exchange(operand: Any, output: Any, *index: Any) -> Any:
    return spec.lax.ragged_all_to_all(operand, output, *index, axis_name=("x", "y"))


def _random(rng: np.random.Generator, *shape: int) -> Any:
    return spec.device_put(rng.standard_normal(shape), spec.P(("x", "y")))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transpose_is_the_adjoint(mesh: Any, seed: int) -> None:
    """<ct, L(t, u)> = <L^T ct, (t, u)> in float64, for the whole operands
    (every device's block varies)."""
    rng = np.random.default_rng(seed)
    g = _mapped(_index(seed))
    t, u, ct = (_random(rng, 4 * ROWS, 2) for _ in range(3))
    ct_t, ct_u = spec.linear_transpose(g, t, u)(ct)
    left = float(np.sum(np.asarray(ct) * np.asarray(g(t, u))))
    right = float(np.sum(np.asarray(ct_t) * np.asarray(t)) + np.sum(np.asarray(ct_u) *
                                                                      np.asarray(u)))
    assert abs(left - right) <= 1e-12 * max(1.0, abs(left))
    assert np.any(np.asarray(ct_t) != 0) and np.any(np.asarray(ct_u) != 0)


def test_grad_matches_the_transposed_exchange(mesh: Any) -> None:
    """grad of <w, L(t, u)> is L^T w, for both arguments."""
    rng = np.random.default_rng(3)
    g = _mapped(_index(3))
    t, u, w = (_random(rng, 4 * ROWS, 2) for _ in range(3))
    dt, du = spec.grad(lambda a, b: spec.numpy.sum(w * g(a, b)), argnums=(0, 1))(t, u)
    lt, lu = spec.linear_transpose(g, t, u)(w)
    np.testing.assert_array_equal(np.asarray(dt), np.asarray(lt))
    np.testing.assert_array_equal(np.asarray(du), np.asarray(lu))


def test_jvp_is_the_exchange_of_the_tangents(mesh: Any) -> None:
    rng = np.random.default_rng(4)
    g = _mapped(_index(4))
    t, u, dt, du = (_random(rng, 4 * ROWS, 2) for _ in range(4))
    y, dy = spec.jvp(g, (t, u), (dt, du))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(g(t, u)))
    np.testing.assert_array_equal(np.asarray(dy), np.asarray(g(dt, du)))


@pytest.mark.parametrize("batched_index", [True, False])
def test_vmap_equals_the_loop(mesh: Any, batched_index: bool) -> None:
    """vmap of the shard_map over a batch of operands, outputs and (or not)
    layouts equals the loop over the batch."""
    rng = np.random.default_rng(5)
    seeds = [5, 6, 7] if batched_index else [5, 5, 5]
    indexes = [_index(s) for s in seeds]
    ops = [_random(rng, 4 * ROWS, 2) for _ in seeds]
    outs = [_random(rng, 4 * ROWS, 2) for _ in seeds]
    f = spec.shard_map(_exchange, in_specs=spec.P(("x", "y")), out_specs=spec.P(("x", "y")))
    stack = spec.numpy.stack
    index = [stack([ix[k] for ix in indexes]) for k in range(4)]
    in_axes = (0, 0, 0, 0, 0, 0) if batched_index else (0, 0, None, 0, None, None)
    if not batched_index:
        index = [ix[0] if a is None else ix for ix, a in zip(index, in_axes[2:])]
    got = spec.vmap(f, in_axes=in_axes)(stack(ops), stack(outs), *index)
    want = [f(o, d, *ix) for o, d, ix in zip(ops, outs, indexes)]
    np.testing.assert_array_equal(np.asarray(got), np.stack([np.asarray(w) for w in want]))


def test_ledger_records_one_all_to_all(mesh: Any) -> None:
    from spec._src.core import ledger
    rng = np.random.default_rng(8)
    g = _mapped(_index(8))
    t, u = (_random(rng, 4 * ROWS, 2) for _ in range(2))
    with ledger.collectives_log() as log:
        g(t, u)
    assert [(e.kind, e.axes) for e in log] == [("all_to_all", ("x", "y"))]


@pytest.mark.parametrize("broken,message", [
    (lambda ix: [ix[0], ix[1] + 1, ix[2], ix[3]], "recv_sizes says"),
    (lambda ix: [ix[0] + ROWS, ix[1], ix[2], ix[3]], "reads rows"),
    (lambda ix: [ix[0], ix[1], ix[2] + ROWS, ix[3]], "writes rows"),
])
def test_inconsistent_layouts_are_refused(mesh: Any, broken: Any, message: str) -> None:
    """Where XLA's result is undefined (sizes that disagree, slices out of
    bounds), spec raises a ValueError naming the slice."""
    rng = np.random.default_rng(9)
    index = _index(9)
    index[1] = spec.numpy.maximum(index[1], 1)  # every slice non-empty
    index[3] = spec.device_put(_recv_of(np.asarray(index[1])), spec.P(("x", "y")))
    g = _mapped(broken(index))
    t, u = (_random(rng, 4 * ROWS, 2) for _ in range(2))
    with pytest.raises(ValueError, match=message):
        g(t, u)


def _recv_of(send: np.ndarray) -> np.ndarray:
    """recv_sizes consistent with send_sizes (4 members, 2 slices each)."""
    s = send.reshape(4, 4, 2)  # (sender, receiver, slice)
    return np.transpose(s, (1, 0, 2)).reshape(-1).astype(np.int32)
