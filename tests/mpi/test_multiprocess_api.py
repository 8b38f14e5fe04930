"""JAX's multi-process API on the single-process virtual backend:
make_array_from_callback, make_array_from_process_local_data,
multihost_utils.process_allgather, process_index/process_count. One program
runs on JAX (a subprocess with 4 CPU devices) and on spec; shards, types,
shardings, values and error classes must agree."""

from __future__ import annotations

import spec
from tests.support.twin import prefetch, run_jax, run_spec

PROGRAM = r'''
import numpy as np
jax, jnp = IMPL
import importlib
mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        out[name] = "raises " + next(c for c in type(e).__mro__
                                     if c.__module__ == "builtins").__name__
def shards(a):
    return [str(jax.typeof(a)), repr(a.sharding), np.asarray(a).tolist(),
            [[s.device.id, str(s.index), np.asarray(s.data).tolist()]
             for s in a.addressable_shards]]
mesh = jax.make_mesh((2, 2), ("x", "y"))
glob = np.arange(32, dtype=np.float32).reshape(8, 4)
calls = []
def cb(index):
    calls.append(str(index))
    return glob[index]
for spec_ in [jax.P("x", "y"), jax.P("x"), jax.P(), jax.P(None, ("x", "y"))]:
    s = jax.NamedSharding(mesh, spec_)
    record(f"callback {spec_}", lambda: shards(jax.make_array_from_callback((8, 4), s, cb)))
    record(f"local data {spec_}",
           lambda: shards(jax.make_array_from_process_local_data(s, glob)))
record("callback calls", lambda: sorted(calls))
record("bad block", lambda: jax.make_array_from_callback(
    (8, 4), jax.NamedSharding(mesh, jax.P("x")), lambda i: np.ones((3, 4))))
record("local data wrong global", lambda: jax.make_array_from_process_local_data(
    jax.NamedSharding(mesh, jax.P("x")), glob, (16, 4)))
record("single device", lambda: np.asarray(jax.make_array_from_callback(
    (2, 3), jax.sharding.SingleDeviceSharding(jax.devices()[0]),
    lambda i: np.arange(6.).reshape(2, 3)[i])).tolist())
record("allgather", lambda: [a.tolist() for a in mhu.process_allgather(
    [np.arange(3.), 5.0, jnp.ones((2, 2))])])
record("allgather tiled", lambda: [a.tolist() for a in mhu.process_allgather(
    [np.arange(3.), 5.0], tiled=True)])
record("allgather shapes", lambda: [list(a.shape) for a in mhu.process_allgather(
    [np.arange(3.), 5.0])])
record("process", lambda: [jax.process_index(), jax.process_count(),
                           len(jax.local_devices())])
'''


def test_multiprocess_api_matches_jax(four_devices: None) -> None:
    ours = run_spec(PROGRAM)
    theirs = run_jax(PROGRAM)
    assert sorted(ours) == sorted(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ
    assert spec.process_count() == 1


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM)
