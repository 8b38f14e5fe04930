"""vmap over sharded values (explicit sharding mode): the same programs run on
JAX (a subprocess with 4 CPU devices) and on spec; per-example types seen
inside the vmapped function, result types, values, jaxpr texts and error
classes agree. Covers the BatchTracer's per-example type (the batch
dimension's spec entry removed), the vmap's explicit mesh axes (the mapped
inputs' common entry, put back on every sharding param written for the
per-example shape and on unbatched values broadcast along the batch), the
vmap API's checks, and spmd_axis_name."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from spec._src.interpreters.batching import (
    AxisData,
    batched_aval,
    delete_spec_entry,
    insert_spec_entry,
    sharding_for_vmap,
    unbatched_aval,
)
from spec.sharding import AbstractMesh, NamedSharding, P, set_mesh
from spec._src.core.types import ArrayType
from tests.support.twin import jax_group, merged, prefetch, run_spec

HEADER = r'''
import numpy as np
jax, jnp = IMPL
lax = jax.lax
mesh = jax.make_mesh((2, 2), ("X", "Y"))
jax.set_mesh(mesh)
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:  # the builtin class JAX raises; spec may raise a subclass
        kind = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        out[name] = "raises " + kind.__name__ + ("/sharding" if "Sharding" in type(e).__name__
                                                 else "")
def put(v, *s):
    return jax.device_put(v, jax.NamedSharding(mesh, jax.P(*s)))
def NS(*s):  # a sharding param over the abstract mesh (what lax records)
    return jax.NamedSharding(mesh.abstract_mesh, jax.P(*s))
def show(v):
    return [[str(jax.typeof(a)), np.asarray(a).tolist()] for a in jax.tree_util.tree_leaves(v)]
def types(v):
    return [str(jax.typeof(a)) for a in jax.tree_util.tree_leaves(v)]
def J(f, *a):
    return str(jax.make_jaxpr(f)(*a))
seen = []
def tap(a):
    seen.append(str(jax.typeof(a)))
    return a
def inner(f, *a, **kw):
    seen.clear()
    r = jax.vmap(f, **kw)(*a)
    return [types(r), list(seen)]
x = put(np.arange(32.0, dtype=np.float32).reshape(8, 4), "X", "Y")
y = put(np.arange(32.0, dtype=np.float32).reshape(8, 4), "X", None)
z = put(np.arange(32.0, dtype=np.float32).reshape(8, 4), None, "Y")
w = put(np.arange(64.0, dtype=np.float32).reshape(4, 4, 4), "X", None, "Y")
xy = put(np.arange(32.0, dtype=np.float32).reshape(8, 4), ("X", "Y"), None)
v = put(np.arange(8.0, dtype=np.float32), "Y")
B = put(np.arange(64.0, dtype=np.float32).reshape(2, 4, 8), "X", None, "Y")
B1 = put(np.arange(64.0, dtype=np.float32).reshape(4, 2, 8), None, "X", "Y")
r4y = put(np.ones(4, np.float32), "Y")
'''

PROGRAM = HEADER + r'''
# The per-example type inside the vmap, and the result type outside it.
record("inner x0", lambda: inner(lambda a: tap(a) * 2, x))
record("inner x1", lambda: inner(lambda a: tap(a) * 2, x, in_axes=1))
record("inner x1 out1", lambda: inner(lambda a: tap(a) * 2, x, in_axes=1, out_axes=1))
record("inner z0 out1", lambda: inner(lambda a: tap(a) + 1, z, out_axes=1))
record("inner neg", lambda: inner(lambda a: tap(a) * 2, y, in_axes=-2))
record("inner nested", lambda: inner(jax.vmap(lambda a: tap(a) * 2), w, in_axes=2))
record("inner under jit", lambda: [types(jax.jit(jax.vmap(lambda a: tap(a) + 1, in_axes=1))(w)),
                                   list(seen)])
record("inner xy", lambda: inner(lambda a: tap(a) * 2, xy))
record("values x1", lambda: show(jax.vmap(lambda a: a * 2, in_axes=1)(x)))
# Unmapped inputs and outputs.
# (Traced only: spec's eager per-device add of f32[8@X,4] and f32[1,4@Y] is pending.)
record("jaxpr unmapped Y", lambda: J(jax.vmap(lambda a, b: a + b, in_axes=(0, None)), y, r4y))
record("unmapped out", lambda: show(jax.vmap(lambda a, b: b, in_axes=(0, None))(y, r4y)))
record("jaxpr unmapped out1", lambda: J(jax.vmap(lambda a, b: b, in_axes=(0, None), out_axes=1),
                                        y, r4y))
record("jaxpr ones", lambda: J(jax.vmap(lambda a: jnp.ones(4)), y))
record("jaxpr ones out1", lambda: J(jax.vmap(lambda a: (jnp.ones(4), a), out_axes=1), y))
record("jaxpr arange", lambda: J(jax.vmap(lambda a: a + jnp.arange(4.0)), y))
record("axis_size only", lambda: types(jax.vmap(lambda b: b * 2, in_axes=None, axis_size=3)(v)))
# The vmap API's checks.
record("mixed specs", lambda: types(jax.vmap(lambda a, b: a + b)(x, z)))
record("numpy mapped", lambda: types(jax.vmap(lambda a, b: a + b)(y, np.ones((8, 4),
                                                                             np.float32))))
record("unmapped on vmapped axis", lambda: types(jax.vmap(lambda a, b: a + b, in_axes=(0, None))(
    y, put(np.ones(4, np.float32), "X"))))
record("unmapped on part of it", lambda: types(jax.vmap(lambda a, b: a, in_axes=(0, None))(
    xy, r4y)))
record("spmd other axis", lambda: types(jax.vmap(lambda a: a * 2, spmd_axis_name="Y")(y)))
record("spmd same axis", lambda: types(jax.vmap(lambda a: a * 2, spmd_axis_name="X")(y)))
record("spmd tuple", lambda: types(jax.vmap(lambda a: a, spmd_axis_name=("X", "Y"))(xy)))
record("spmd part", lambda: types(jax.vmap(lambda a: a, spmd_axis_name="X")(xy)))
record("spmd unsharded", lambda: show(jax.vmap(lambda a: jnp.sum(a), spmd_axis_name="X")(z)))
record("jaxpr spmd unsharded", lambda: J(jax.vmap(
    lambda a: jnp.dot(a, a, out_sharding=jax.P()), spmd_axis_name="X"), z))
# Reductions with out_sharding.
record("reduce_sum out", lambda: show(jax.vmap(
    lambda a: lax.reduce_sum(a, (0,), out_sharding=NS("Y")))(w)))
record("jaxpr reduce_sum out", lambda: J(jax.vmap(
    lambda a: lax.reduce_sum(a, (0,), out_sharding=NS("Y"))), w))
record("reduce_max out in2", lambda: show(jax.vmap(
    lambda a: lax.reduce_max(a, (1,), out_sharding=NS(None)), in_axes=2)(w)))
record("jaxpr reduce_max out in2", lambda: J(jax.vmap(
    lambda a: lax.reduce_max(a, (1,), out_sharding=NS(None)), in_axes=2), w))
record("reduce_min out in1", lambda: show(jax.vmap(
    lambda a: lax.reduce_min(a, (0,), out_sharding=NS(None)), in_axes=1)(w)))
record("reduce_sum xy", lambda: show(jax.vmap(
    lambda a: lax.reduce_sum(a, (0,), out_sharding=NS()))(xy)))
record("sum", lambda: show(jax.vmap(lambda a: jnp.sum(a), in_axes=1)(x)))
# The transpose of reduce_sum (a broadcast_in_dim with a sharding) under vmap.
g = lambda a: lax.reduce_sum(lax.reduce_sum(a, (0,), out_sharding=NS("Y")), (0,))
record("vmap grad reduce_sum", lambda: show(jax.vmap(jax.grad(g))(w)))
record("jaxpr vmap grad reduce_sum", lambda: J(jax.vmap(jax.grad(g)), w))
record("grad vmap reduce_sum", lambda: show(jax.grad(lambda b: jnp.sum(jax.vmap(
    lambda a: lax.reduce_sum(a, (0,), out_sharding=NS("Y")))(b)))(w)))
record("jaxpr grad vmap reduce_sum", lambda: J(jax.grad(lambda b: jnp.sum(jax.vmap(
    lambda a: lax.reduce_sum(a, (0,), out_sharding=NS("Y")))(b))), w))
record("jaxpr vmap grad sum", lambda: J(jax.vmap(jax.grad(lambda a: jnp.sum(a))), x))
record("vmap grad sum", lambda: show(jax.vmap(jax.grad(lambda a: jnp.sum(a)))(x)))
# dot_general / einsum with out_sharding.
dv = lambda a: jnp.dot(a, v, out_sharding=jax.P(None))
record("dot", lambda: show(jax.vmap(dv)(B)))
record("dot in1", lambda: show(jax.vmap(dv, in_axes=1)(B1)))
record("jaxpr dot in1", lambda: J(jax.vmap(dv, in_axes=1), B1))
record("dot rhs", lambda: show(jax.vmap(lambda b: jnp.dot(
    put(np.ones((4, 8), np.float32), None, "Y"), b, out_sharding=jax.P(None)))(
    put(np.ones((2, 8), np.float32), "X", "Y"))))
record("jaxpr dot both", lambda: J(jax.vmap(lambda a, b: jnp.dot(a, b, out_sharding=jax.P(None))),
                                   B, put(np.ones((2, 8), np.float32), "X", "Y")))
record("einsum", lambda: show(jax.vmap(lambda a, b: jnp.einsum(
    "ij,j->i", a, b, out_sharding=jax.P(None)), in_axes=(0, None))(B, v)))
record("jaxpr einsum", lambda: J(jax.vmap(lambda a, b: jnp.einsum(
    "ij,j->i", a, b, out_sharding=jax.P(None)), in_axes=(0, None)), B, v))
record("vmap grad dot", lambda: show(jax.vmap(jax.grad(lambda a: jnp.sum(dv(a))))(B)))
record("jaxpr vmap grad dot", lambda: J(jax.vmap(jax.grad(lambda a: jnp.sum(dv(a)))), B))
record("grad vmap dot", lambda: show(jax.grad(lambda b: jnp.sum(jax.vmap(dv)(b)))(B)))
record("jaxpr grad vmap dot", lambda: J(jax.grad(lambda b: jnp.sum(jax.vmap(dv)(b))), B))
record("vmap jit dot", lambda: show(jax.vmap(jax.jit(dv))(B)))
record("nested dot", lambda: show(jax.vmap(jax.vmap(
    lambda a: jnp.dot(a, v, out_sharding=jax.P())))(B)))
record("jaxpr nested dot", lambda: J(jax.vmap(jax.vmap(
    lambda a: jnp.dot(a, v, out_sharding=jax.P()))), B))
# broadcast_in_dim / reshape / convert_element_type with a sharding param.
record("broadcast", lambda: show(jax.vmap(
    lambda a: lax.broadcast_in_dim(a, (3, 4), (1,), out_sharding=NS(None, "Y")))(y)))
record("jaxpr broadcast", lambda: J(jax.vmap(
    lambda a: lax.broadcast_in_dim(a, (3, 4), (1,), out_sharding=NS(None, "Y"))), y))
record("jaxpr broadcast in1", lambda: J(jax.vmap(
    lambda a: lax.broadcast_in_dim(a, (3, 8), (1,), out_sharding=NS(None, "X")), in_axes=1), x))
record("jaxpr broadcast same", lambda: J(jax.vmap(
    lambda a: lax.broadcast_in_dim(a, (4,), (0,), out_sharding=NS("Y"))), x))
record("jaxpr broadcast reshards", lambda: J(jax.vmap(
    lambda a: lax.broadcast_in_dim(a, (4,), (0,), out_sharding=NS(None))), x))
record("reshape", lambda: show(jax.vmap(
    lambda a: lax.reshape(a, (2, 2), out_sharding=NS("Y", None)))(x)))
record("jaxpr reshape", lambda: J(jax.vmap(
    lambda a: lax.reshape(a, (2, 2), out_sharding=NS("Y", None))), x))
record("reshape in1", lambda: show(jax.vmap(
    lambda a: lax.reshape(a, (2, 4), out_sharding=NS(None, "X")), in_axes=1)(x)))
record("jaxpr reshape in1", lambda: J(jax.vmap(
    lambda a: lax.reshape(a, (2, 4), out_sharding=NS(None, "X")), in_axes=1), x))
record("convert", lambda: show(jax.vmap(lambda a: lax.convert_element_type(a, jnp.int32))(x)))
record("jaxpr convert", lambda: J(jax.vmap(lambda a: lax.convert_element_type(a, jnp.int32),
                                           in_axes=1), x))
# Rules that broadcast unbatched operands along a sharded batch dimension.
record("concatenate", lambda: show(jax.vmap(lambda a, b: jnp.concatenate([a, b]),
                                            in_axes=(0, None))(y, r4y)))
record("jaxpr concatenate", lambda: J(jax.vmap(lambda a, b: jnp.concatenate([a, b]),
                                               in_axes=(0, None)), y, r4y))
record("sort", lambda: show(jax.vmap(lambda a, b: lax.sort((a, b), num_keys=1),
                                     in_axes=(0, None))(z, r4y)))
record("jaxpr sort", lambda: J(jax.vmap(lambda a, b: lax.sort((a, b), num_keys=1),
                                        in_axes=(0, None)), y, jnp.ones(4, np.float32)))
i8 = put(np.arange(8, dtype=np.int32), "X")
record("dynamic_update_slice", lambda: show(jax.vmap(
    lambda a, u: lax.dynamic_update_slice(a, u, (1,)), in_axes=(0, None))(
    y, jnp.ones(2, np.float32))))
record("jaxpr dynamic_update_slice", lambda: J(jax.vmap(
    lambda a, i: lax.dynamic_update_slice(a, jnp.ones(2, np.float32), (i,))), y, i8))
record("dynamic_slice", lambda: show(jax.vmap(lambda a, i: lax.dynamic_slice(a, (i,), (2,)))(
    y, i8)))
record("jaxpr dynamic_slice", lambda: J(jax.vmap(
    lambda a, i: lax.dynamic_slice(a, (i,), (2,))), y, i8))
'''

# Reductions and dots over every batch position and out_axes: a grid of cases
# (shapes fixed so that every sharded dimension divides its mesh axes).
GRID = HEADER + r'''
q = put(np.arange(128.0, dtype=np.float32).reshape(4, 4, 8), "X", None, "Y")
for src, axes, dst in CASES:
    f = lambda a, axes=axes: lax.reduce_sum(a, axes, out_sharding=NS())
    if len(axes) == 1:
        f = lambda a, axes=axes: lax.reduce_max(a, axes, out_sharding=NS(None))
    record(f"reduce {src} {axes} {dst}", lambda: show(jax.vmap(f, in_axes=src, out_axes=dst)(q)))
    g = lambda a: jnp.einsum("ij,kj->ik", a, a, out_sharding=jax.P(None, None))
    record(f"einsum {src} {dst}", lambda: J(jax.vmap(g, in_axes=src, out_axes=dst), q))
'''


def _grid_cases() -> list[tuple[int, tuple[int, ...], int]]:
    """Every batch position (one negative) with every reduction, the out_axes
    cycling through the first, last and a negative position of the result."""
    cases = []
    for k, (src, axes) in enumerate(itertools.product((0, 1, 2, -1), ((0,), (1,), (0, 1)))):
        rank = 3 - len(axes)
        cases.append((src, axes, (0, rank - 1, -1)[k % 3]))
    return cases


@pytest.fixture
def mesh_reset() -> Iterator[None]:
    """The program sets the mesh for good (``jax.set_mesh(mesh)``): unset it after."""
    try:
        yield
    finally:
        set_mesh(None)


def _jax(program: str) -> dict[str, Any]:
    """JAX's side of one of the module's programs (all run in one process)."""
    return jax_group(JAX_PROGRAMS, next(k for k, v in JAX_PROGRAMS.items() if v == program))


def _compare(program: str) -> tuple[dict[str, Any], dict[str, Any]]:
    theirs = _jax(program)
    ours = run_spec(program)
    assert sorted(ours) == sorted(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ
    return ours, theirs


def test_vmap_of_sharded_values_matches_jax(four_devices: None, mesh_reset: None) -> None:
    _, theirs = _compare(PROGRAM)
    # The comparison cannot pass vacuously: both outcomes occur, and the
    # batch dimension's sharding is visible in JAX's answers.
    assert theirs["inner x1"] == [["float32[4@Y,8@X]"], ["float32[8@X]"]]
    assert theirs["inner x0"][1] == ["float32[4@Y]"]
    assert theirs["dot"][0][0] == "float32[2@X,4]"
    assert theirs["mixed specs"] == "raises ValueError"
    assert theirs["spmd other axis"] == "raises ValueError"
    assert theirs["jaxpr broadcast reshards"].count("reshard") == 1


def test_reductions_and_dots_over_batch_positions_match_jax(four_devices: None,
                                                           mesh_reset: None) -> None:
    cases = _grid_cases()
    _, theirs = _compare(GRID.replace("CASES", repr(cases)))
    reduced = [theirs[f"reduce {src} {axes} {dst}"] for src, axes, dst in cases]
    # Each batch position's mesh axes reach the result (X at 0, Y at 2).
    assert all(isinstance(r, list) for r in reduced)
    assert any("@X" in r[0][0] for r in reduced) and any("@Y" in r[0][0] for r in reduced)


RESHARD = HEADER + r'''
record("reshard", lambda: J(jax.vmap(lambda a: jax.reshard(a, jax.P("Y"))), y))
record("reshard in1", lambda: types(jax.vmap(lambda a: jax.reshard(a, jax.P("X")), in_axes=1)(y)))
'''


def test_reshard_under_vmap_matches_jax(four_devices: None, mesh_reset: None) -> None:
    _, theirs = _compare(RESHARD)
    # The destination is written per example; the batch dimension keeps X.
    assert "b:f32[8@X,4@Y] = reshard" in theirs["reshard"]


# Batching rules that create or broadcast a batch dimension: an unbatched
# operand broadcast to a batched one's (add_any, scan and while carries,
# cond operands under a batched index, select_n cases and `which`, custom
# rules' outputs) gets the vmap's explicit mesh axes on its new dimension.
BROADCASTS = HEADER + r'''
p8 = put(np.arange(8) % 2 == 0, "X")
r4 = put(np.arange(4.0, dtype=np.float32), None)
aT = put(np.arange(32.0, dtype=np.float32).reshape(4, 8) / 7, "Y", "X")
# add_any: an unbatched cotangent meets a batched one; then two batched at
# different axes (x's moves to y's).
gb = lambda a: jax.grad(lambda b: jnp.sum(b * a) + jnp.sum(b * 3.0))(r4y)
record("add_any", lambda: show(jax.vmap(gb)(x)))
record("jaxpr add_any", lambda: J(jax.vmap(gb), x))
vj = lambda b, g, a: jax.vjp(lambda c: c * 2.0 + c * a, b)[1](g)
record("add_any dims", lambda: show(jax.vmap(vj, in_axes=(1, 1, 0))(x, x, aT)))
record("jaxpr add_any dims", lambda: J(jax.vmap(vj, in_axes=(1, 1, 0)), x, x, aT))
# scan / while carries that become batched.
sc = lambda a: lax.scan(lambda c, _: (c + a, None), r4y, None, length=3)[0]
record("scan", lambda: show(jax.vmap(sc)(x)))
record("jaxpr scan", lambda: J(jax.vmap(sc), x))
wl = lambda a: lax.while_loop(lambda cv: cv[0] < 3, lambda cv: (cv[0] + 1, cv[1] + a), (0, r4y))
record("while", lambda: show(jax.vmap(wl)(x)))
record("jaxpr while", lambda: J(jax.vmap(wl), x))
wp = lambda a: lax.while_loop(lambda c: jnp.sum(c) < 100, lambda c: c + a + 1, r4y)
record("while batched pred", lambda: show(jax.vmap(wp)(x)))
record("jaxpr while batched pred", lambda: J(jax.vmap(wp), x))
# cond with a batched index: operands go to the front of the batch.
cd = lambda a, p: lax.cond(p, lambda b, c: b + c, lambda b, c: b - c, a, r4)
record("cond", lambda: show(jax.vmap(cd)(y, p8)))
record("jaxpr cond", lambda: J(jax.vmap(cd), y, p8))
# (JAX's own rule broadcasts the per-branch predicate without a sharding:
# with a batch dimension and a sharded one, both raise.)
record("cond both sharded", lambda: types(jax.vmap(lambda a: lax.cond(
    jnp.sum(a) > 40, lambda b, c: b + c, lambda b, c: b - c, a, r4y))(x)))
# select_n: unbatched cases, a rank-0 `which` per example, rank-0 cases.
record("select", lambda: show(jax.vmap(lambda a: lax.select(a > 5, a, r4y))(x)))
record("jaxpr select", lambda: J(jax.vmap(lambda a: lax.select(a > 5, a, r4y)), x))
sw = lambda a, p: lax.select_n(p, a, r4y)
record("select scalar which", lambda: show(jax.vmap(sw)(x, p8)))
record("jaxpr select scalar which", lambda: J(jax.vmap(sw), x, p8))
ss = lambda a, p: lax.select_n(p, a, a * 2)
record("select scalar which same", lambda: show(jax.vmap(ss)(x, p8)))
record("jaxpr select scalar which same", lambda: J(jax.vmap(ss), x, p8))
record("select scalar cases", lambda: show(jax.vmap(lambda p: lax.select(p, 1.0, 2.0))(p8)))
record("jaxpr select scalar cases", lambda: J(jax.vmap(lambda p: lax.select(p, 1.0, 2.0)), p8))
# custom_jvp / custom_vjp functions with an unbatched output.
@jax.custom_jvp
def cj(a, b):
    return a * b, b * 2
@cj.defjvp
def cj_jvp(p, t):
    (a, b), (ta, tb) = p, t
    return cj(a, b), (ta * b + a * tb, tb * 2)
@jax.custom_vjp
def cv(a, b):
    return a * b, b * 2
cv.defvjp(lambda a, b: ((a * b, b * 2), (a, b)), lambda r, g: (g[0] * r[1], g[0] * r[0]))
vcj = jax.vmap(cj, in_axes=(0, None))
record("custom_jvp", lambda: show(vcj(x, r4y)))
record("custom_vjp", lambda: show(jax.vmap(cv, in_axes=(0, None))(x, r4y)))
record("jvp of vmap custom_jvp", lambda: show(jax.jvp(lambda b: vcj(x, b), (r4y,), (r4y,))))
record("vmap grad custom_jvp", lambda: show(jax.vmap(jax.grad(
    lambda a, b: jnp.sum(cj(a, b)[1]) + jnp.sum(a), argnums=1), in_axes=(0, None))(x, r4y)))
'''


def test_rules_that_broadcast_along_the_batch_match_jax(four_devices: None,
                                                        mesh_reset: None) -> None:
    _, theirs = _compare(BROADCASTS)
    # Not vacuous: in JAX the broadcast values carry the batch's mesh axis.
    assert "c:f32[8@X,4@Y] = broadcast_in_dim" in theirs["jaxpr scan"]
    assert "c:f32[8@X,4@Y] = broadcast_in_dim" in theirs["jaxpr while"]
    assert "d:f32[8@X,4@Y] = broadcast_in_dim" in theirs["jaxpr select"]
    assert "e:f32[8@X,4] = broadcast_in_dim" in theirs["jaxpr cond"]
    assert "n:f32[8@X,4@Y] = broadcast_in_dim" in theirs["jaxpr add_any"]
    assert theirs["jvp of vmap custom_jvp"][1][0] == "float32[8@X,4@Y]"
    assert theirs["cond both sharded"] == "raises Exception/sharding"


# ------------------------------------------------------------ the helpers
# Checked against what the sharding of a batched value means: the batched
# spec is the per-example spec with the batch dimension's entry inserted.

MESH = AbstractMesh((2, 2), ("X", "Y"))


def _aval(shape: tuple[int, ...], *spec: Any, **kw: Any) -> ArrayType:
    return ArrayType(shape, np.dtype(np.float32), sharding=NamedSharding(MESH, P(*spec, **kw)))


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("entry,other", [(None, "Y"), ("X", "Y"), (("X", "Y"), None)])
def test_batched_and_unbatched_types_invert(dim: int, entry: Any, other: Any) -> None:
    per_example = _aval((4, 8), None, other, unreduced={"X"} if entry is None else set())
    batched = batched_aval(per_example, dim, 6, entry)
    parts = [None, other]
    parts.insert(dim, entry)
    assert batched.shape[dim] == 6 and batched.sharding.spec.partitions == tuple(parts)
    assert batched.sharding.spec.unreduced == per_example.sharding.spec.unreduced
    assert unbatched_aval(batched, dim) == per_example
    assert batched_aval(per_example, None, 6) is per_example


def test_spec_entries_pad_short_specs() -> None:
    s = NamedSharding(MESH, P("X"))
    assert insert_spec_entry(s, 3, "Y").spec == P("X", None, None, "Y")
    assert delete_spec_entry(s, 2, 3).spec == P("X", None)
    assert delete_spec_entry(s, 0, 3).spec == P(None, None)


def test_sharding_for_vmap_uses_the_explicit_mesh_axes() -> None:
    s = NamedSharding(MESH, P(None, "Y"))
    assert sharding_for_vmap(AxisData(3, None, None, ("X",)), s, 1).spec == P(None, "X", "Y")
    assert sharding_for_vmap(AxisData(3), s, 0).spec == P(None, None, "Y")
    assert sharding_for_vmap(AxisData(3, None, None, ("X",)), None, 0) is None


# JAX's sides run as one process, ahead while earlier tests run (tests/support/twin.py);
# each program sets the mesh it uses.
JAX_PROGRAMS = {"vmap": PROGRAM, "grid": GRID.replace("CASES", repr(_grid_cases())),
                "reshard": RESHARD, "broadcasts": BROADCASTS}
prefetch(merged("", JAX_PROGRAMS))
