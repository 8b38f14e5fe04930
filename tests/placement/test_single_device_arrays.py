"""``jax.make_array_from_single_device_arrays`` and
``Sharding.addressable_devices_indices_map`` against JAX run live on four
CPU devices (tests/support/twin.py): values, types, shardings, shard
indices, and JAX's errors for wrong counts, repeated devices and non-arrays."""

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
        out[name] = fn()
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
jax.config.update('jax_num_cpu_devices', 4)
mesh = jax.make_mesh((2, 2), ('x', 'y'))
s = jax.NamedSharding(mesh, jax.P('x', None))
x = np.arange(16.).reshape(4, 4)
idx = s.addressable_devices_indices_map((4, 4))
record("indices", lambda: [[d.id, str(i)] for d, i in idx.items()])
arrs = [jax.device_put(x[i], d) for d, i in idx.items()]
def made(arrays, sharding=s, shape=(4, 4)):
    y = jax.make_array_from_single_device_arrays(shape, sharding, arrays)
    return [np.asarray(y).tolist(), str(jax.typeof(y)), str(y.sharding),
            [[sh.device.id, str(sh.index)] for sh in y.addressable_shards]]
record("made", lambda: made(arrs))
record("any order", lambda: made(list(reversed(arrs))))
record("too few", lambda: made(arrs[:2]))
record("same device", lambda: made([jax.device_put(np.ones((2, 4)), jax.devices()[0])] * 4))
record("numpy blocks", lambda: made([np.ones((2, 4))] * 4))
one = jax.sharding.SingleDeviceSharding(jax.devices()[1])
record("single device", lambda: made([jax.device_put(x, jax.devices()[1])], one))
'''


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=4)


@pytest.mark.parametrize("name", ["indices", "made", "any order", "too few", "same device",
                                  "numpy blocks", "single device"])
def test_as_jax(results: tuple[dict[str, Any], dict[str, Any]], name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]


prefetch(PROGRAM, devices=4)
