"""Sharding in types: device_put to a NamedSharding or a
PartitionSpec, the sharded type's printing, x.sharding, addressable shards
(virtual devices), and the pending sharding rules. JAX is run in a
subprocess with 4 CPU devices (its device count is fixed at first use)."""

from __future__ import annotations

from typing import Any

import numpy as np

import spec
from tests.support.twin import prefetch, run_jax, run_spec

PROGRAM = r'''
import json, sys
import numpy as np
jax, jnp = IMPL
mesh = jax.make_mesh((2, 2), ("X", "Y"))
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:  # the builtin class JAX raises; spec may raise a subclass
        kind = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        out[name] = "raises " + kind.__name__
x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
specs = [("X", None), ("X", "Y"), (None, "Y"), (("X", "Y"),), (("Y", "X"), None), (None, None),
         ("Y",)]
for s in specs:
    def put(s=s):
        return jax.device_put(x, jax.NamedSharding(mesh, jax.P(*s)))
    record(f"typeof {s}", lambda: str(jax.typeof(put())))
    record(f"repr typeof {s}", lambda: repr(jax.typeof(put())))
    record(f"sharding {s}", lambda: repr(put().sharding))
    record(f"type sharding {s}", lambda: repr(jax.typeof(put()).sharding))
    record(f"shards {s}", lambda: [(sh.device.id, str(sh.index), sh.replica_id,
                                    np.asarray(sh.data).tolist())
                                   for sh in put().addressable_shards])
    record(f"value {s}", lambda: np.asarray(put()).tolist())
record("no mesh P", lambda: str(jax.typeof(jax.device_put(x, jax.P("X")))))
with jax.set_mesh(mesh):
    record("set_mesh P", lambda: str(jax.typeof(jax.device_put(x, jax.P(None, "X")))))
    record("set_mesh sharding", lambda: repr(jax.device_put(x, jax.P(None, "X")).sharding))
    record("indivisible", lambda: str(jax.typeof(jax.device_put(np.ones((3, 4)), jax.P("X")))))
    record("unknown axis", lambda: str(jax.typeof(jax.device_put(x, jax.P("Z")))))
    record("duplicate axis", lambda: str(jax.typeof(jax.device_put(x, jax.P("X", "X")))))
record("unsharded", lambda: repr(jnp.ones(3).sharding))
record("unsharded shards", lambda: [(sh.device.id, str(sh.index), sh.replica_id)
                                    for sh in jnp.ones((2, 3)).addressable_shards])
record("pytree", lambda: [str(jax.typeof(v)) for v in jax.device_put(
    (x, x[:4]), jax.NamedSharding(mesh, jax.P("X")))])
print(json.dumps(out))
'''


def _jax_side() -> dict[str, Any]:
    return run_jax(PROGRAM)


def _spec_side() -> dict[str, Any]:
    return run_spec(PROGRAM)


def test_device_put_types_shardings_and_shards_match_jax(four_devices: None) -> None:
    theirs = _jax_side()
    ours = _spec_side()
    assert sorted(ours) == sorted(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ


def test_shards_are_views_of_the_global_value(four_devices: None) -> None:
    mesh = spec.make_mesh((2, 2), ("X", "Y"))
    x = spec.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4),
                        spec.NamedSharding(mesh, spec.P("X", "Y")))
    blocks = [np.asarray(s.data) for s in x.addressable_shards]
    assert all(b.shape == (2, 2) for b in blocks)
    assert np.array_equal(np.block([[blocks[0], blocks[1]], [blocks[2], blocks[3]]]),
                          np.asarray(x))


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM)
