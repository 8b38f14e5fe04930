"""Buffer donation against JAX run live on CPU devices
(tests/support/twin.py): which donated arrays a jit call deletes (results of
the same type, of as many elements and bytes, pruned and unread arguments,
keyword arguments, pytrees, under vmap and grad, through an AOT-compiled
call, committed to another device, laid out over an Explicit mesh), JAX's
UserWarning for donated buffers no result can use (and that it is given once
per compiled program), JAX's errors for a deleted array read later, for one
buffer passed twice to a call that takes it, and for donate_argnums /
donate_argnames that do not fit the signature; the staged jit equation's
``donated_invars`` through vmap, jvp and grad."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import warnings
import numpy as np
jax, jnp = IMPL
out = {}
f32, i32, i8 = jnp.float32, jnp.int32, jnp.int8
def record(name, make, *arrays):
    """The call's result (or error), its warnings and which arrays it deleted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = make()
            got = [np.asarray(l).tolist() for l in jax.tree_util.tree_leaves(r)]
        except Exception as e:
            got = [type(e).__name__, str(e)]
    out[name] = [got, [[w.category.__name__, str(w.message)] for w in caught],
                 [a.is_deleted() for a in arrays if hasattr(a, "is_deleted")]]
def fresh(n=4, dtype=f32):
    return jnp.arange(n, dtype=dtype)
def case(name, fun, args, **kw):
    record(name, lambda: jax.jit(fun, **kw)(*args), *args)
case("same type", lambda a: a + 1, [fresh()], donate_argnums=0)
case("same bytes", lambda a: a.astype(i32), [fresh()], donate_argnums=0)
case("same size fewer bytes", lambda a: a.astype(i8), [fresh()], donate_argnums=0)
case("reshaped", lambda a: a.reshape(2, 2), [fresh()], donate_argnums=0)
case("no result fits", lambda a: a[:2], [fresh()], donate_argnums=0)
case("scalar result", lambda a: a.sum(), [fresh()], donate_argnums=0)
case("identity", lambda a: a, [fresh()], donate_argnums=0)
case("two to one", lambda a, b: a + b, [fresh(), fresh()], donate_argnums=(0, 1))
case("two to two", lambda a, b: (a + b, a * b), [fresh(), fresh()], donate_argnums=(0, 1))
case("exact before size", lambda a, b: (b.astype(i32), a + 1.), [fresh(), fresh()],
     donate_argnums=(0, 1))
case("bytes reuse", lambda a: (a.astype(i8), jnp.zeros(16, i8) + a.sum().astype(i8)),
     [fresh()], donate_argnums=0)
case("unread pruned", lambda a, b: b * 2, [fresh(), fresh(3)], donate_argnums=0)
case("unread kept", lambda a, b: b * 2, [fresh(), fresh(3)], donate_argnums=0, keep_unused=True)
case("static before", lambda n, a: a + n, [2, fresh()], static_argnums=0, donate_argnums=1)
case("negative", lambda a, b: a + b, [fresh(), fresh()], donate_argnums=-1)
case("argnames by position", lambda a, b: a * 2 + b, [fresh(), fresh()], donate_argnames="b")
record("argnames by keyword", lambda: jax.jit(lambda a, b: a * 2 + b, donate_argnames="b")(
    x1, b=x2), x1 := fresh(), x2 := fresh())
record("argnums by keyword", lambda: jax.jit(lambda a, b: a * 2 + b, donate_argnums=1)(
    x3, b=x4), x3 := fresh(), x4 := fresh())
record("pytree", lambda: jax.jit(lambda d: d["p"] + d["q"], donate_argnums=0)(
    {"p": x5, "q": x6}), x5 := fresh(), x6 := fresh())
record("numpy and scalar", lambda: jax.jit(lambda a, b: a + b, donate_argnums=(0, 1))(
    np.arange(4.0), 1.0))
case("passed twice", lambda a, b: a + b, [x7 := fresh(), x7], donate_argnums=(0, 1))
case("donated after use", lambda a, b: a + b, [x8 := fresh(), x8], donate_argnums=1)
case("twice after pruned", lambda u, a, b: a + b, [fresh(2), x9 := fresh(), x9],
     donate_argnums=(1, 2))
record("vmap", lambda: jax.vmap(jax.jit(lambda a: a + 1, donate_argnums=0))(x10), x10 := fresh())
record("grad", lambda: jax.grad(jax.jit(lambda a: (a * a).sum(), donate_argnums=0))(x11),
       x11 := fresh())
record("inner jit", lambda: jax.jit(lambda b: jax.jit(lambda a: a + 1, donate_argnums=0)(b))(
    x12), x12 := fresh())
x13 = fresh()
compiled = jax.jit(lambda a: a + 1, donate_argnums=0).lower(x13).compile()
record("compiled", lambda: compiled(x13), x13)
# A donated array, once taken, is deleted: any later read is JAX's RuntimeError.
record("read after", lambda: x13 * 2)
record("call after", lambda: compiled(x13))
record("pruned deleted", lambda: jax.jit(lambda a, b: b * 2)(x13, jnp.ones(2)))
record("kept deleted", lambda: jax.jit(lambda a, b: b * 2, keep_unused=True)(x13, jnp.ones(2)))
# The warning is given when a program is compiled: once.
def summed(a):
    return a.sum()
once = jax.jit(summed, donate_argnums=0)
record("warns first", lambda: once(jnp.ones(3)))
record("not again", lambda: once(jnp.ones(3)))
record("new types", lambda: once(jnp.ones(5)))
lowered_first = jax.jit(lambda a: a.sum(), donate_argnums=0)
record("lower warns", lambda: lowered_first.lower(jnp.ones(3)) and 0)
record("call after lower", lambda: lowered_first(jnp.ones(3)))
with jax.debug_nans(True):
    case("debug nans", lambda a: a + 1, [fresh()], donate_argnums=0)
def bad(**kw):
    try:
        jax.jit(lambda a, b: a + b, **kw)
        return "made"
    except Exception as e:
        return [type(e).__name__, str(e)]
def pos_only(a, /, b):
    return a + b
out["errors"] = [bad(donate_argnums=3), bad(donate_argnums=-3), bad(donate_argnames="zz"),
                 bad(static_argnums=0, donate_argnums=0),
                 bad(static_argnames="a", donate_argnames="a")]
try:
    jax.jit(pos_only, donate_argnames="a")
except ValueError as e:
    out["errors"].append(str(e))
# On several devices each buffer is one device's shard; with Explicit axes
# the results' types give their layouts, and JAX pairs the shards itself.
jax.config.update("jax_num_cpu_devices", 4)
mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Explicit,))
split = jax.NamedSharding(mesh, jax.P("i"))
def on_mesh(spec=jax.P("i")):
    return jax.device_put(jnp.arange(8.0), jax.NamedSharding(mesh, spec))
case("committed", lambda a: a + 1, [jax.device_put(fresh(), jax.devices()[1])],
     donate_argnums=0)
case("sharded", lambda a: a + 1, [on_mesh()], donate_argnums=0)
case("replicated", lambda a: a * 2, [on_mesh(jax.P())], donate_argnums=0)
case("sharded same bytes", lambda a: a.astype(i32), [on_mesh()], donate_argnums=0)
case("sharded no result fits", lambda a: a.sum(), [on_mesh()], donate_argnums=0)
case("sharded to replicated", lambda a: jax.reshard(a, jax.NamedSharding(mesh, jax.P())),
     [on_mesh()], donate_argnums=0)
here = jax.sharding.SingleDeviceSharding(jax.devices()[0])
there = jax.sharding.SingleDeviceSharding(jax.devices()[1])
case("in_shardings in place", lambda a: a + 1, [fresh()], donate_argnums=0, in_shardings=here)
case("in_shardings moved", lambda a: a + 1, [fresh()], donate_argnums=0, in_shardings=there)
case("out_shardings", lambda a: a + 1, [fresh()], donate_argnums=0, out_shardings=here)
record("sharded lower warns", lambda: jax.jit(lambda a: a.sum(), donate_argnums=0).lower(
    on_mesh()) and 0)
def jaxpr(f, *a, **k):
    return str(jax.make_jaxpr(f)(*a, **k))
g = jax.jit(lambda a, b: a * b, donate_argnums=0)
out["jaxpr"] = jaxpr(g, 1., 2.)
out["jaxpr argnames"] = jaxpr(jax.jit(lambda a, b: a + b, donate_argnames="b"), 1., b=2.)
out["jaxpr vmap"] = jaxpr(jax.vmap(g), jnp.ones(2), jnp.ones(2))
out["jaxpr jvp"] = jaxpr(lambda a, b: jax.jvp(g, (a, b), (a, b)), 1., 2.)
out["jaxpr grad"] = jaxpr(jax.grad(g), 1., 2.)
'''

_KEYS = [line.split('"')[1] for line in PROGRAM.splitlines()
         if line.lstrip().startswith(('case("', 'record("'))]
_KEYS += ["errors", "jaxpr", "jaxpr argnames", "jaxpr vmap", "jaxpr jvp", "jaxpr grad"]


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=4)


@pytest.mark.parametrize("key", _KEYS)
def test_donation_as_jax(results: tuple[dict[str, Any], dict[str, Any]], key: str) -> None:
    ours, theirs = results
    assert key in theirs
    assert ours.get(key) == theirs[key]


def test_cases_delete_and_warn(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The cases are not vacuously equal: some arrays are deleted, some kept,
    some calls warn and some raise."""
    ours, _ = results
    calls = [ours[k] for k in _KEYS if isinstance(ours[k], list) and len(ours[k]) == 3]
    flags = [d for _, _, deleted in calls for d in deleted]
    assert True in flags and False in flags
    assert any(warned for _, warned, _ in calls)
    assert any(got and got[0] == "JaxRuntimeError" for got, _, _ in calls)
    assert any(got and got[0] == "RuntimeError" for got, _, _ in calls)


prefetch(PROGRAM, devices=4)
