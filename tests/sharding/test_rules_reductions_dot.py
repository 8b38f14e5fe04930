"""Sharding rules of the reductions, scans, sorts, top_k, reduce_precision
and dot_general (shardings in result types). One program runs on JAX in a
subprocess with 4 CPU devices and on spec in-process; the result types,
values, per-device blocks, error classes and messages, and jaxprs must be
equal."""

from __future__ import annotations

from typing import Any

from tests.support.twin import prefetch, run_jax, run_spec

PROGRAM = r'''
import json
import numpy as np
jax, jnp = IMPL
lax = jax.lax
mesh = jax.make_mesh((2, 2), ("X", "Y"))
NS = lambda *s, **k: jax.NamedSharding(mesh, jax.P(*s, **k))
out = {}
keep = []

def record(name, fn):
    try:
        r = fn()
        if isinstance(r, str):
            out[name] = r
        else:
            rs = r if isinstance(r, (list, tuple)) else [r]
            out[name] = [[str(jax.typeof(v)), np.round(np.asarray(v).astype(float), 4).tolist()]
                         for v in rs]
    except Exception as e:
        out[name] = "raises " + type(e).__name__ + ": " + str(e)

def put(a, *s):
    return jax.device_put(a, NS(*s))

x = np.arange(32.0, dtype=np.float32).reshape(8, 4) - 10.0
xi = (np.arange(32, dtype=np.int32).reshape(8, 4) * 7) % 5
xb8 = xi > 1
specs = [("X", None), ("X", "Y"), (None, "Y"), (("X", "Y"), None), (("Y", "X"),), (None, None),
         ("Y", "X")]
for s in specs:
    xs, xis, xbs = put(x, *s), put(xi, *s), put(xb8, *s)
    for axes in [(0,), (1,), (0, 1)]:
        for op in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]:
            record(f"{op} {s} {axes}", lambda: getattr(lax, op)(xs, axes))
        # XLA CPU cannot run these across devices: compared by type (jaxpr) only.
        for op in ["reduce_and", "reduce_or", "reduce_xor"]:
            # Kept alive: a traced function's id must not be reused by the next one.
            keep.append(lambda v, op=op, axes=axes: getattr(lax, op)(v, axes))
            record(f"{op} {s} {axes}", lambda: str(jax.make_jaxpr(keep[-1])(xbs)))
    for axis in [0, 1]:
        record(f"argmax {s} {axis}", lambda: lax.argmax(xs, axis, np.int32))
        record(f"argmin {s} {axis}", lambda: lax.argmin(xis, axis, np.int32))
        for op in ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]:
            record(f"{op} {s} {axis}", lambda: getattr(lax, op)(xs, axis=axis))
        record(f"sort {s} {axis}", lambda: lax.sort(xs, dimension=axis))
        record(f"sort2 {s} {axis}", lambda: lax.sort((xs, xis), dimension=axis, num_keys=1))
        record(f"sort mixed {s} {axis}", lambda: lax.sort((xs, xi), dimension=axis, num_keys=1))
        record(f"top_k {s} {axis}", lambda: lax.top_k(xs, 2, axis=axis))
    record(f"reduce_precision {s}", lambda: lax.reduce_precision(xs, 5, 2))
    record(f"jnp.sum {s}", lambda: jnp.sum(xs, axis=1))
    record(f"jnp.max {s}", lambda: jnp.max(xs, axis=0))
    record(f"jnp.argmax {s}", lambda: jnp.argmax(xs, axis=1))
    record(f"jnp.cumsum {s}", lambda: jnp.cumsum(xs, axis=1))
    record(f"sum os {s}", lambda: lax.reduce_sum(xs, (0,), out_sharding=NS("X")))
    record(f"max os {s}", lambda: lax.reduce_max(xs, (1,), out_sharding=NS(None)))
record("sort equal", lambda: lax.sort((put(x, "X", None), put(x, "X")), dimension=1, num_keys=1))
record("sort unequal", lambda: lax.sort((put(x, "X", None), put(x, None, None)), dimension=1,
                                         num_keys=1))
record("sum os reduced", lambda: lax.reduce_sum(put(x, "X"), (0,), out_sharding=NS(None,
                                                                                  reduced={"X"})))
record("sum os bad unreduced", lambda: lax.reduce_sum(put(x, "X", "Y"), (1,),
                                                      out_sharding=NS(None, unreduced={"X"})))
record("sum os rank", lambda: lax.reduce_sum(put(x, "X"), (1,), out_sharding=NS(None, None)))
record("sum os P no mesh", lambda: lax.reduce_sum(put(x, "X"), (1,), out_sharding=jax.P("X")))
record("sum os int", lambda: lax.reduce_sum(put(x, "X"), (1,), out_sharding=3))
record("sum shards", lambda: str([(str(sh.index), np.asarray(sh.data).tolist())
                                  for sh in lax.reduce_sum(put(x, "X", "Y"), (0,))
                                  .addressable_shards]))

w = np.arange(24.0, dtype=np.float32).reshape(4, 6) - 5.0
lhs_specs = [("X", None), ("X", "Y"), (None, "Y"), ("Y", None), (None, None), None]
rhs_specs = [(None, "Y"), ("Y", None), ("X", None), (None, "X"), (None, None), None]
DN = (((1,), (0,)), ((), ()))
for ls in lhs_specs:
    for rs in rhs_specs:
        a = x if ls is None else put(x, *ls)
        b = w if rs is None else put(w, *rs)
        if ls is None and rs is None:
            continue
        record(f"dot {ls} {rs}", lambda: lax.dot_general(a, b, DN))
        record(f"matmul {ls} {rs}", lambda: a @ b)
        record(f"dot os {ls} {rs}", lambda: lax.dot_general(a, b, DN, out_sharding=NS("X", None)))
        record(f"jnp.dot os {ls} {rs}", lambda: jnp.dot(a, b, out_sharding=NS(None, "Y")))
        record(f"einsum os {ls} {rs}", lambda: jnp.einsum("ij,jk->ki", a, b,
                                                           out_sharding=NS("Y", "X")))
        record(f"einsum {ls} {rs}", lambda: jnp.einsum("ij,jk->ik", a, b))
xb = np.arange(32.0, dtype=np.float32).reshape(4, 2, 4)
wb = np.arange(16.0, dtype=np.float32).reshape(4, 4, 1)
BDN = (((2,), (1,)), ((0,), (0,)))
for ls in [("X",), ("Y",), (None, "Y"), ("X", None, "Y"), (None, None, "X")]:
    for rs in [("X",), ("Y",), (None, "X"), (None, None, None)]:
        record(f"batch dot {ls} {rs}", lambda: lax.dot_general(put(xb, *ls), put(wb, *rs), BDN))
record("dot os unreduced bad", lambda: lax.dot_general(
    put(x, "X", "Y"), put(w, "Y", None), DN, out_sharding=NS(None, None, unreduced={"X"})))
record("dot os rank", lambda: lax.dot_general(put(x, "X", "Y"), put(w, "Y", None), DN,
                                              out_sharding=NS(None)))
record("dot os indivisible", lambda: lax.dot_general(
    put(x, "X", "Y"), put(w, "Y", None), DN, out_sharding=NS(None, ("X", "Y"))))
other = jax.make_mesh((4,), ("Z",))
record("dot two meshes", lambda: lax.dot_general(
    put(x, "X"), jax.device_put(w, jax.NamedSharding(other, jax.P("Z"))), DN))
with jax.set_mesh(mesh):
    record("set_mesh matmul P", lambda: jnp.matmul(put(x, "X", "Y"), put(w, "Y", None),
                                                   out_sharding=jax.P(None, "X")))
    record("set_mesh sum P", lambda: lax.reduce_sum(put(x, "X", "Y"), (0,),
                                                    out_sharding=jax.P("X")))
record("jaxpr sum", lambda: str(jax.make_jaxpr(lambda v: jnp.sum(v, axis=0))(put(x, "X", "Y"))))
record("jaxpr sum os", lambda: str(jax.make_jaxpr(
    lambda v: lax.reduce_sum(v, (0,), out_sharding=NS("X")))(put(x, "X", "Y"))))
record("jaxpr matmul", lambda: str(jax.make_jaxpr(lambda a, b: a @ b)(put(x, "X", None),
                                                                      put(w, None, "Y"))))
record("jaxpr dot os", lambda: str(jax.make_jaxpr(
    lambda a, b: lax.dot_general(a, b, DN, out_sharding=NS("X", None)))(put(x, "X", "Y"),
                                                                        put(w, "Y", None))))
record("jaxpr argmax cummax sort", lambda: str(jax.make_jaxpr(
    lambda v: (lax.argmax(v, 1, np.int32), lax.cummax(v, axis=1), lax.sort(v, dimension=1)))(
        put(x, "X", None))))
record("jit dot", lambda: jax.jit(lambda a, b: a @ b)(put(x, "X", None), put(w, None, "Y")))
print(json.dumps(out))
'''


def _jax_side() -> dict[str, Any]:
    return run_jax(PROGRAM)


def _spec_side() -> dict[str, Any]:
    return run_spec(PROGRAM)


def test_reduction_and_dot_sharding_rules_match_jax(four_devices: None) -> None:
    theirs = _jax_side()
    ours = _spec_side()
    assert sorted(ours) == sorted(theirs)
    # The program must exercise both outcomes, sharded results and errors.
    assert any("@" in str(v) for v in theirs.values())
    assert any(str(v).startswith("raises ShardingTypeError") for v in theirs.values())
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM)
