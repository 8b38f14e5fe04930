"""Placement and commitment against JAX run live on four CPU devices
(tests/support/twin.py): which device a result lives on and whether it is
committed, ``jax.default_device`` and the ``jax_default_device`` flag,
``device_put`` of pytrees with prefix placements, eager ``device_put`` under
jvp, vmap, grad and vjp, and the ValueError (its
whole message) when committed arrays on different devices (or meshes of one
shape over different devices) meet, eager and under jit; arrays' sizes on
their devices."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        r = fn()
        out[name] = [str(l.device) + (" committed" if l.committed else "")
                     for l in jax.tree_util.tree_leaves(r)]
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
jax.config.update('jax_num_cpu_devices', 4)
d = jax.devices()
x = jnp.ones(3)
y = jax.device_put(jnp.ones(3), d[1])
w = jax.device_put(jnp.ones(3), d[2])
mesh = jax.make_mesh((3,), ('i',), devices=d[:3])
s = jax.device_put(jnp.ones(3), jax.NamedSharding(mesh, jax.P('i')))
def g(a, b):
    return a * b
CASES = {
  "default": lambda: x,
  "put device": lambda: y,
  "put none": lambda: jax.device_put(jnp.ones(3)),
  "put none keeps": lambda: jax.device_put(y),
  "put numpy": lambda: jax.device_put(np.ones(2), d[3]),
  "put scalar": lambda: jax.device_put(1.0, d[2]),
  "put back": lambda: jax.device_put(y, d[0]),
  "put single sharding": lambda: jax.device_put(x, jax.sharding.SingleDeviceSharding(d[3])),
  "put gathers": lambda: jax.device_put(s, d[3]),
  "put tree": lambda: jax.device_put((x, {'a': x, 'b': x}), (d[1], {'a': d[2], 'b': None})),
  "put prefix": lambda: jax.device_put((x, {'a': x, 'b': x}), (d[1], d[2])),
  "put list": lambda: jax.device_put([x, x], [d[1], d[3]]),
  "put bad prefix": lambda: jax.device_put((x, x), (d[1], d[2], d[3])),
  "put bad value": lambda: jax.device_put(1, 'foo'),
  "mixed": lambda: x + y,
  "unary": lambda: jnp.sin(y),
  "index": lambda: y[0],
  "grad": lambda: jax.grad(lambda a: (a * a).sum())(y),
  "vmap": lambda: jax.vmap(lambda a: a * 2)(y),
  "jit mixed": lambda: jax.jit(lambda a, b: a + b)(y, x),
  "jit static": lambda: jax.jit(lambda a, b: a + b, static_argnums=0)(1, y),
  "jit unused": lambda: jax.jit(lambda a, b, c: a + b)(x, y, w),
  "jvp put": lambda: jax.jvp(lambda a: jax.device_put(a, d[1]) * 2, (x,), (x,)),
  "jvp put committed": lambda: jax.jvp(lambda a: jax.device_put(a, d[3]), (y,), (y,)),
  "jvp put none": lambda: jax.jvp(lambda a: jax.device_put(a), (x,), (x,)),
  "vmap put": lambda: jax.vmap(lambda a: jax.device_put(a, d[1]))(x),
  "vmap put sharding": lambda: jax.vmap(lambda a: jax.device_put(
      a, jax.sharding.SingleDeviceSharding(d[3])))(x),
  "vmap put none": lambda: jax.vmap(lambda a: jax.device_put(a))(y),
  "vmap put closed": lambda: jax.vmap(lambda a: jax.device_put(x, d[1]) + a)(x),
  "grad put": lambda: jax.grad(lambda a: jax.device_put(a, d[1]).sum())(x),
  "vjp put": lambda: jax.vjp(lambda a: jax.device_put(a, d[1]), x)[1](x),
  "linearize put": lambda: jax.linearize(lambda a: jax.device_put(a, d[2]), x)[0],
  "conflict vmap put": lambda: jax.vmap(lambda a: jax.device_put(a, d[1]))(x) + w,
  "zeros device": lambda: jnp.zeros(2, device=d[1]),
  "asarray keeps": lambda: jnp.asarray(y),
  "conflict op": lambda: y + w,
  "conflict multiply": lambda: jnp.multiply(y, w),
  "conflict lax": lambda: jax.lax.add(y, w),
  "conflict where": lambda: jnp.where(x > 0, y, w),
  "conflict stack": lambda: jnp.stack([y, w]),
  "conflict jit": lambda: jax.jit(g)(y, w),
  "conflict jit kwarg": lambda: jax.jit(g)(y, b=w),
  "conflict jit tree": lambda: jax.jit(lambda p: p['a'] + p['b'])({'a': y, 'b': w}),
  "conflict jit varargs": lambda: jax.jit(lambda *a: a[0] + a[1])(y, w),
  "conflict sharded": lambda: s + y,
  "conflict meshes": lambda: s + jax.device_put(jnp.ones(3), jax.NamedSharding(
      jax.make_mesh((3,), ('i',), devices=d[1:]), jax.P('i'))),
}
for name, fn in CASES.items():
    record(name, fn)
with jax.default_device(d[3]):
    q = jnp.ones(2)
    record("ctx made", lambda: q)
    record("ctx op", lambda: x + 1)
    record("ctx jit", lambda: jax.jit(lambda: jnp.ones(2))())
    record("ctx jit arg", lambda: jax.jit(lambda a: a + 1)(x))
    record("ctx asarray", lambda: jnp.asarray(x))
    record("ctx put none", lambda: jax.device_put(1.0))
    record("ctx committed", lambda: jnp.sin(y))
record("ctx made after", lambda: q)
record("ctx op after", lambda: q + 1)
jax.config.update('jax_default_device', d[2])
record("flag", lambda: jnp.zeros(1))
jax.config.update('jax_default_device', None)
record("flag reset", lambda: jnp.zeros(1))
try:
    jax.config.update('jax_default_device', 3)
except ValueError as e:
    out["flag bad"] = str(e)
out["pointer"] = isinstance(y.unsafe_buffer_pointer(), int)
try:
    s.unsafe_buffer_pointer()
except Exception as e:
    out["pointer sharded"] = [type(e).__name__, str(e)]
out["sizes on devices"] = [y.on_device_size_in_bytes(), s.on_device_size_in_bytes(),
                           y.copy_to_host_async()]
out["sharded device"] = str(s.device)
out["sharded committed"] = s.committed
def after_delete(a):
    """What each use of a deleted array gives: its result's type, or the error."""
    seen = [a.is_deleted()]
    a.delete()
    a.delete()  # a second delete does nothing
    seen.append(a.is_deleted())
    uses = [lambda: a + 1, lambda: repr(a), lambda: str(a), lambda: np.asarray(a),
            lambda: jax.jit(lambda v: v * 2)(a), lambda: a[0], lambda: a.tolist(),
            lambda: float(a[0]), lambda: list(a), lambda: jnp.sin(a), lambda: a.at[0].set(1.0),
            lambda: jax.grad(lambda v: v.sum())(a), lambda: jax.vmap(lambda v: v + 1)(a),
            lambda: a.addressable_shards, lambda: a.devices(), lambda: a.block_until_ready(),
            lambda: a.unsafe_buffer_pointer(), lambda: jax.device_put(a, d[3]),
            lambda: (a.shape, a.dtype.name, str(a.sharding), len(a), a.size, a.committed),
            lambda: str(jax.make_jaxpr(lambda v: v + 1)(a)), lambda: jax.device_put(a) is a]
    for use in uses:
        try:
            r = use()
            seen.append(r if isinstance(r, (tuple, str, bool)) else type(r).__name__)
        except Exception as e:
            seen.append([type(e).__name__, str(e)])
    return seen
out["deleted"] = after_delete(jnp.arange(3.0))
out["deleted committed"] = after_delete(jax.device_put(jnp.arange(3.0), d[1]))
auto = jax.make_mesh((3,), ('i',), devices=d[:3], axis_types=(jax.sharding.AxisType.Auto,))
out["deleted sharded"] = after_delete(jax.device_put(jnp.arange(3.0),
                                                     jax.NamedSharding(auto, jax.P('i'))))
'''


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=4)


def _keys() -> list[str]:
    names = [line.split('"')[1] for line in PROGRAM.splitlines()
             if line.startswith('  "') and '": lambda' in line]
    names += [line.split('"')[1] for line in PROGRAM.splitlines()
              if line.lstrip().startswith('record("')]
    return names + ["flag bad", "pointer", "pointer sharded", "sizes on devices",
                    "sharded device", "sharded committed", "deleted",
                    "deleted committed", "deleted sharded"]


@pytest.mark.parametrize("key", _keys())
def test_placement_as_jax(results: tuple[dict[str, Any], dict[str, Any]], key: str) -> None:
    ours, theirs = results
    assert key in theirs
    assert ours.get(key) == theirs[key]


def test_conflicts_are_errors(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The cases named "conflict" are refused (not vacuously equal)."""
    ours, _ = results
    conflicts = [k for k in ours if k.startswith("conflict")]
    assert conflicts and all(ours[k][0] == "ValueError" for k in conflicts)


prefetch(PROGRAM, devices=4)
