"""Placement under ``jax.sharding.set_mesh`` against JAX run live on four
CPU devices (tests/support/twin.py), with Explicit and Auto axes: where the
results of jit calls, eager operations and creation functions lie
(``.sharding``: kind, spec, mesh, devices), whether they are committed, and
their types (``jax.typeof``, also of a jit's NumPy and Python arguments
while it traces), for NumPy, Python, uncommitted, committed and sharded
arguments mixed; ``device_put`` and ``jnp.asarray`` of arrays, which JAX
leaves where they are; an operand committed to one device meeting the
context mesh (ValueError). Placement happens at the top level only: jaxprs
traced under the mesh (constants, the samplers) are JAX's, and grad, vmap,
auto_axes and explicit_axes evaluated eagerly place as JAX. On a mesh of
Auto axes a result lies as JAX's compiler places it from its split
operands, eager or through a jit (nested jits, grad): elementwise results
(select, conversions, add_any, size-1 broadcasting), cumulative reductions,
rev, transpose, reductions (over an unsplit dimension; over a split one
replicated), broadcast_in_dim, squeeze, slice, concatenate, reshard (kept),
dot_general, reshape (merging and splitting dimensions, a split kept, cut
or lost), sort and argsort (1-D, along the split axis or not, two operands
split differently), top_k, sharding constraints and explicit_axes inside a
jit; on a mesh of two Auto axes, how the splits of two operands merge
(agreeing, refining, disagreeing, an axis two dimensions would take) and
how a reshape carries splits over two axes; results' specs as JAX names
them (trailing unsplit dimensions and size-1 axes dropped, the first
operand's own sharding where a result of its rank lies as it), reductions,
slices, pads and splits of arrays split over two axes, with and without a
context mesh (reshapes included); gathers (split operand or indices),
scatters, stacks, tiles, pads and splits over two axes.

Not covered (spec differs): on Auto axes, an axis JAX divides over two
dimensions inside a jit (a reshape) and joins again later, some merges of
three operands split over conflicting axes (a three-way sort), results split
from operands they do not read (a gradient independent of its point), a
split JAX carries through slices it then joins (jnp.roll), a scatter's
result split as its updates;
indexing an array split along an Explicit axis
with a scalar index (JAX asks for ``out_sharding``, ShardingTypeError), and
the name of the operand in the ValueError of an eager operation (JAX names
the jnp function's parameter, spec the primitive's operand)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import contextlib
import numpy as np
jax, jnp = IMPL
out = {}
jax.config.update('jax_num_cpu_devices', 4)
def describe(a):
    s = a.sharding
    if type(s).__name__ == "NamedSharding":
        where = ["named", str(s.spec), dict(s.mesh.shape), [d.id for d in s.mesh.devices.flat],
                 str(s.mesh.axis_types)]
    else:
        where = [type(s).__name__, sorted(d.id for d in s.device_set)]
    return [where, str(jax.typeof(a)), bool(a.committed)]
def record(name, fn):
    try:
        out[name] = [describe(l) for l in jax.tree_util.tree_leaves(fn())]
    except Exception as e:
        out[name] = [type(e).__name__, str(e).split(" with shape")[0]]
seen = []
def spy(a):
    seen.append(str(jax.typeof(a)))
    return a
def typed(name, f, *args):
    seen.clear()
    jax.jit(f)(*args)
    out[name] = list(seen)
def text(name, f, *args):
    try:
        out[name] = str(jax.make_jaxpr(f)(*args))
    except Exception as e:
        out[name] = [type(e).__name__, str(e).split(" This error occurs")[0]]
for size in (4, 2):
    for kind in ("Explicit", "Auto"):
        mesh = jax.make_mesh((size,), ('i',), axis_types=(getattr(jax.sharding.AxisType, kind),),
                             devices=jax.devices()[:size])
        n = 2 * size
        xs = jax.device_put(np.arange(n, dtype=np.float32), jax.NamedSharding(mesh, jax.P('i')))
        xr = jax.device_put(np.arange(n, dtype=np.float32), jax.NamedSharding(mesh, jax.P()))
        u = jnp.arange(n, dtype=jnp.float32)
        one = jax.device_put(np.arange(n, dtype=np.float32), jax.devices()[1])
        x2 = jax.device_put(np.arange(8 * n, dtype=np.float32).reshape(n, 8),
                            jax.NamedSharding(mesh, jax.P('i')))
        xc = jax.device_put(np.arange(8 * n, dtype=np.float32)[::-1].reshape(n, 8),
                            jax.NamedSharding(mesh, jax.P(None, 'i')))
        key = jax.random.key(1)
        explicit_axes, auto_axes = jax.sharding.explicit_axes, jax.sharding.auto_axes
        with jax.sharding.set_mesh(mesh):
            K = f"{size} {kind}: "
            cases = {
              "jit zeros": lambda: jax.jit(lambda: jnp.zeros(4))(),
              "jit numpy": lambda: jax.jit(lambda a: a * 2)(np.ones(n, np.float32)),
              "jit python": lambda: jax.jit(lambda a: a * 2)(1.0),
              "jit list": lambda: jax.jit(lambda a: a)([1.0, 2.0]),
              "jit uncommitted": lambda: jax.jit(lambda a: a * 2)(u),
              "jit sharded": lambda: jax.jit(lambda a: jnp.sin(a) * 2)(xs),
              "jit sharded+numpy": lambda: jax.jit(lambda a, b: a + b)(
                  xs, np.ones(n, np.float32)),
              "jit sharded+uncommitted": lambda: jax.jit(lambda a, b: a + b)(xs, u),
              "jit replicated+uncommitted": lambda: jax.jit(lambda a, b: a + b)(xr, u),
              "jit one device": lambda: jax.jit(lambda a: a * 2)(one),
              "jit sum": lambda: jax.jit(lambda a: a.sum())(xs),
              "jit passes and creates": lambda: jax.jit(lambda a: (a, jnp.ones(3)))(xs),
              "zeros": lambda: jnp.zeros(4),
              "ones": lambda: jnp.ones((n,)),
              "arange": lambda: jnp.arange(n),
              "full": lambda: jnp.full(4, 2.0),
              "eye": lambda: jnp.eye(2),
              "array list": lambda: jnp.array([1.0, 2.0]),
              "array scalar": lambda: jnp.array(3),
              "asarray numpy": lambda: jnp.asarray(np.ones(4)),
              "zeros_like numpy": lambda: jnp.zeros_like(np.ones(4)),
              "zeros_like sharded": lambda: jnp.zeros_like(xs),
              "uncommitted op": lambda: u * 2,
              "sin sharded": lambda: jnp.sin(xs),
              "sharded+python": lambda: xs + 1,
              "sharded+uncommitted": lambda: xs + u,
              "sharded sum": lambda: xs.sum(),
              "where sharded": lambda: jnp.where(xs > 2, xs, 0.0),
              "astype sharded": lambda: xs.astype(jnp.int32),
              "one device op": lambda: one * 2,
              "put numpy": lambda: jax.device_put(np.ones(n)),
              "put P": lambda: jax.device_put(np.ones(n), jax.P('i')),
              "put uncommitted": lambda: jax.device_put(u),
              "put uncommitted P": lambda: jax.device_put(u, jax.P('i')),
              "put scalar": lambda: jax.device_put(1.0),
              "asarray uncommitted": lambda: jnp.asarray(u),
              "normal": lambda: jax.random.normal(jax.random.key(0), (4,)),
              "uniform": lambda: jax.random.uniform(key, (n,)),
              "jit constant": lambda: jax.jit(lambda a: a + jnp.array([1.0] * n))(xs),
              "jit constant uncommitted": lambda: jax.jit(lambda a: a + jnp.array([1.0] * n))(u),
              "grad": lambda: jax.grad(lambda a: (a * a).sum())(u),
              "grad sharded": lambda: jax.grad(lambda a: (jnp.sin(a) * a).sum())(xs),
              "vmap": lambda: jax.vmap(lambda a: a * 2 + 1)(u),
              "auto_axes": lambda: auto_axes(lambda a: a * 2 + jnp.array(1.0),
                                             out_sharding=jax.P('i'))(xs),
              "explicit_axes": lambda: explicit_axes(lambda a: a * 2 + jnp.array(1.0),
                                                     in_sharding=jax.P('i'))(xs),
            }
            if kind == "Auto" and size == 4:  # (one mesh size: these cost compilations)
                cases.update({
                  "cumsum split axis": lambda: jnp.cumsum(x2, axis=0),
                  "cummax": lambda: jax.lax.cummax(x2, axis=1, reverse=True),
                  "sum unsplit axis": lambda: x2.sum(axis=1),
                  "max split axis": lambda: x2.max(axis=0),
                  "argmax unsplit axis": lambda: jnp.argmax(x2, axis=1),
                  "transpose": lambda: x2.T,
                  "rev": lambda: jnp.flip(x2, (0, 1)),
                  "expand_dims": lambda: x2[None],
                  "broadcast": lambda: jnp.broadcast_to(xs[:, None], (n, 3)),
                  "squeeze": lambda: jax.lax.squeeze(x2[:, :1], (1,)),
                  "slice unsplit axis": lambda: jax.lax.slice(x2, (0, 1), (n, 8), (1, 2)),
                  "slice split axis": lambda: x2[:size],
                  "concatenate": lambda: jnp.concatenate([x2, jnp.ones((n, 8))], 0),
                  "reshard P()": lambda: jax.sharding.reshard(xs, jax.P()),
                  "jit reshard P()": lambda: jax.jit(
                      lambda a: jax.sharding.reshard(a, jax.P()))(xs),
                  "jit constraint": lambda: jax.jit(lambda a: jax.lax.with_sharding_constraint(
                      a * 2, jax.P(None, 'i')) + 1)(np.ones((4, n), np.float32)),
                  "jit constraint P()": lambda: jax.jit(
                      lambda a: jax.lax.with_sharding_constraint(a, jax.P()) + 1)(xs),
                  "jit explicit_axes": lambda: jax.jit(explicit_axes(
                      lambda a: a * 2, in_sharding=jax.P('i')))(np.ones(n, np.float32)),
                  "explicit_axes replicated": lambda: explicit_axes(
                      lambda a: a * 2, in_sharding=jax.P())(xs),
                  "jit nested": lambda: jax.jit(lambda a: jax.jit(jnp.sin)(a) + 1)(x2),
                  "jit broadcast add": lambda: jax.jit(lambda a, b: a[:, None] + b)(
                      xs, np.ones((n, 3), np.float32)),
                  "jit transpose sum": lambda: jax.jit(lambda a: (a.T * 2).sum(0))(x2),
                  "jvp": lambda: jax.jvp(lambda a: jnp.sin(a) * a, (xs,), (xs,))[1],
                  "reshape merge": lambda: x2.reshape(8 * n),
                  "reshape split dim kept": lambda: x2.reshape(4, 2 * n),
                  "reshape split dim too small": lambda: x2.reshape(2, 4, 8),
                  "reshape 1-D too small": lambda: xs.reshape(2, 4),
                  "reshape minor split": lambda: xc.reshape(n, 4, 2),
                  "reshape minor split cut": lambda: xc.reshape(n, 2, 4),
                  "ravel minor split": lambda: jnp.ravel(xc),
                  "jit reshape": lambda: jax.jit(lambda a: a.reshape(4, 2 * n) * 2)(x2),
                  "sort 1-D": lambda: jnp.sort(xs),
                  "sort split axis": lambda: jnp.sort(x2, axis=0),
                  "sort unsplit axis": lambda: jnp.sort(x2, axis=1),
                  "argsort 1-D": lambda: jnp.argsort(xs),
                  "argsort split axis": lambda: jnp.argsort(x2, axis=0),
                  "jit sort": lambda: jax.jit(lambda a: jnp.sort(a, axis=0))(xc),
                  "sort_key_val two splits": lambda: jax.lax.sort_key_val(x2, xc, dimension=0),
                  "top_k": lambda: jax.lax.top_k(x2, 2),
                  "top_k cut split": lambda: jax.lax.top_k(xc, 2),
                })
            for name, fn in cases.items():
                record(K + name, fn)
            typed(K + "typeof numpy, python", lambda a, b: spy(a) + spy(b),
                  np.ones(n, np.float32), 1.0)
            typed(K + "typeof uncommitted, sharded", lambda a, b: spy(a) + spy(b), u, xs)
            text(K + "jaxpr constant", lambda a: a + jnp.array([1.0, 2.0] * size), xs)
            text(K + "jaxpr numpy", lambda a: a * 3 + jnp.asarray(np.ones(n, np.float32)), u)
            text(K + "jaxpr normal", lambda k: jax.random.normal(k, (n,)), key)
            text(K + "jaxpr normal P", lambda k: jax.random.normal(
                k, (n,), out_sharding=jax.P('i')), key)
# Two Auto axes: how splits of operands merge (elementwise, dot_general).
mesh = jax.make_mesh((2, 2), ('i', 'j'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
def put(shape, *spec):
    return jax.device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape),
                          jax.NamedSharding(mesh, jax.P(*spec)))
with jax.sharding.set_mesh(mesh):
    for name, fn in {
      "i + j": lambda: put((8,), 'i') + put((8,), 'j'),
      "i. + .j": lambda: put((8, 4), 'i') + put((8, 4), None, 'j'),
      "i. + .i": lambda: put((8, 4), 'i') + put((8, 4), None, 'i'),
      ".i + i.": lambda: put((8, 4), None, 'i') + put((8, 4), 'i'),
      "ij + i": lambda: put((8, 4), ('i', 'j')) + put((8, 4), 'i'),
      "outer": lambda: jnp.outer(put((8,), 'i'), put((8,), 'i')),
      "dot free": lambda: put((8, 4), 'i') @ put((4, 6)),
      "dot contracted": lambda: put((8, 4), None, 'i') @ put((4, 6), 'i'),
      "dot free i, free j": lambda: put((8, 4), 'i') @ put((4, 6), None, 'j'),
      "dot free i, free i": lambda: put((8, 4), 'i') @ put((4, 6), None, 'i'),
      "dot batch": lambda: jnp.matmul(put((2, 8, 4), 'i'), put((2, 4, 6))),
      "reshape i,j merged": lambda: put((2, 4), 'i', 'j').reshape(8),
      "reshape i,j minor lost": lambda: put((8, 4), 'i', 'j').reshape(32),
      "reshape ij split": lambda: put((8, 4), ('i', 'j')).reshape(2, 16),
      "reshape i,j regrouped": lambda: put((8, 4), 'i', 'j').reshape(2, 4, 4),
      "reshape ij half kept": lambda: put((24,), ('i', 'j')).reshape(2, 3, 4),
      "sort i., .j": lambda: jax.lax.sort((put((8, 4), 'i'), put((8, 4), None, 'j')),
                                          dimension=1, num_keys=1),
      "sort i,j along i": lambda: jnp.sort(put((8, 4), 'i', 'j'), axis=0),
      "sort i., ji along i": lambda: jax.lax.sort((put((8, 4), 'i'), put((8, 4), 'j', 'i')),
                                                  dimension=0, num_keys=1),
      "sort .(ij), i. along ij": lambda: jax.lax.sort(
          (put((8, 8), None, ('i', 'j')), put((8, 8), 'i')), dimension=1, num_keys=1),
      "ij + ji": lambda: put((4, 4), 'i', 'j') + put((4, 4), 'j', 'i'),
      "ij + j.": lambda: put((4, 4), 'i', 'j') + put((4, 4), 'j'),
      ".j + (ij).": lambda: put((4, 4), None, 'j') + put((4, 4), ('i', 'j')),
      "dot free j, free ij": lambda: put((8, 4), 'j') @ put((4, 8), None, ('i', 'j')),
      "where .j, j.": lambda: jnp.where(put((4, 4)) > 3, put((4, 4), None, 'j'), put((4, 4), 'j')),
    }.items():
        record("2x2 Auto: " + name, fn)
# An axis of size 1 splits nothing: a reshape's result does not name it.
mesh = jax.make_mesh((1, 4), ('a', 'i'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
with jax.sharding.set_mesh(mesh):
    record("1x4 Auto: reshape (i, a)", lambda: put((8, 4), ('i', 'a')).reshape(32))
    record("1x4 Auto: reshape a, i", lambda: put((8, 4), 'a', 'i').reshape(4, 8))
# Results' specs as JAX names them (the first operand's own sharding where the
# result lies as it), with and without a context mesh.
meshes = {"2x2": jax.make_mesh((2, 2), ('i', 'j'), axis_types=(jax.sharding.AxisType.Auto,) * 2),
          "1x4": mesh}
for spec in (('i', None), ('i', 'j'), ('i', 'a'), ('a', 'i')):
    mesh = meshes["1x4" if 'a' in spec else "2x2"]
    x = put((8, 8), *spec)
    xr = put((8, 8), None, None)
    for where in ("no mesh", "set_mesh"):
        with (jax.sharding.set_mesh(mesh) if where == "set_mesh" else contextlib.nullcontext()):
            for name, fn in {
              "sin": lambda: jnp.sin(x),
              "x + 1": lambda: x + 1,
              "xr + x": lambda: xr + x,
              "numpy + x": lambda: jax.jit(jnp.add)(np.ones((8, 8), np.float32), x),
              "sum 0": lambda: x.sum(0),
              "sum 1": lambda: x.sum(1),
              "transpose": lambda: x.T,
              "reshape 64": lambda: x.reshape(64),
              "reshape 4,16": lambda: x.reshape(4, 16),
              "jit reshape 4,16": lambda: jax.jit(lambda a: a.reshape(4, 16) * 2)(x),
              "slice rows": lambda: x[:4],
              "slice cols": lambda: x[:, :4],
              "expand_dims": lambda: x[None],
              "dynamic_slice": lambda: jax.lax.dynamic_slice(x, (2, 0), (4, 8)),
              "pad rows": lambda: jnp.pad(x, ((1, 1), (0, 0))),
              "split rows": lambda: jnp.split(x, 2, axis=0),
            }.items():
                record(f"{where} {spec}: {name}", fn)
# Gathers, scatters, stacks, tiles, pads and splits over two Auto axes.
mesh = meshes["2x2"]
x, xr = put((8, 8), 'i', 'j'), put((8, 8))
rows = jax.device_put(np.array([0, 2, 4, 6]), jax.NamedSharding(mesh, jax.P('i')))
for name, fn in {
  "take": lambda: x[jnp.array([0, 2])],
  "take columns": lambda: jnp.take(x, jnp.array([1, 3]), axis=1),
  "take split rows": lambda: x[rows],
  "take split rows, whole operand": lambda: xr[rows],
  "at set": lambda: x.at[0, 0].set(1.0),
  "at add rows": lambda: x.at[:4].add(1.0),
  "stack": lambda: jnp.stack([x, xr]),
  "stack mixed": lambda: jnp.stack([put((8, 8), 'i'), put((8, 8), None, 'j')], 2),
  "tile": lambda: jnp.tile(x, (1, 2)),
  "pad interior": lambda: jax.lax.pad(x, 0.0, ((0, 0, 1), (0, 0, 0))),
  "split four": lambda: jnp.split(put((8, 8), ('i', 'j')), 4, axis=0),
  "dynamic_update_slice": lambda: jax.lax.dynamic_update_slice(x, jnp.ones((8, 2)), (0, 1)),
}.items():
    record("2x2 Auto: " + name, fn)
'''

prefetch(PROGRAM)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM)


def test_placement_under_set_mesh(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, theirs = results
    assert set(ours) == set(theirs) and len(theirs) == 2 * 2 * 51 + 40 + 25 + 2 + 4 * 2 * 16 + 12
    differ = {k: (ours.get(k), v) for k, v in theirs.items()
              if ours.get(k) != v and not k.endswith("one device op")}
    assert not differ


def test_an_operand_on_one_device_meets_the_context_mesh(
        results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, theirs = results
    for k, v in theirs.items():
        if k.endswith("one device op"):
            assert v[0] == "ValueError" and ours[k][0] == "ValueError"
            prefix = "Received incompatible devices for jitted computation. Got argument "
            assert v[1].startswith(prefix) and ours[k][1].startswith(prefix)
