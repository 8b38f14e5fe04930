"""A blocked matmul under shard_map: each device multiplies its column block
of A by its row block of B, and the partial products are summed with psum
(an all-reduce, result replicated) or psum_scatter (a reduce-scatter, result
split by rows: each device receives only its block of the sum).

    python examples/shard_map_matmul.py
    mpiexec -n 4 python examples/shard_map_matmul.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _common import devices, global_value, say, where

import spec as jax

n = devices()
mesh = jax.make_mesh((n,), ("x",))
rng = np.random.default_rng(0)
a_host = rng.standard_normal((4 * n, 8 * n)).astype(np.float32)
b_host = rng.standard_normal((8 * n, 4 * n)).astype(np.float32)
a = jax.device_put(a_host, jax.NamedSharding(mesh, jax.P(None, "x")))
b = jax.device_put(b_host, jax.NamedSharding(mesh, jax.P("x", None)))
specs = (jax.P(None, "x"), jax.P("x", None))


@jax.jit
def allreduce_matmul(a: Any, b: Any) -> Any:
    return jax.shard_map(lambda p, q: jax.lax.psum(p @ q, "x"), mesh=mesh, in_specs=specs,
                         out_specs=jax.P())(a, b)


@jax.jit
def reduce_scatter_matmul(a: Any, b: Any) -> Any:
    return jax.shard_map(lambda p, q: jax.lax.psum_scatter(p @ q, "x", tiled=True), mesh=mesh,
                         in_specs=specs, out_specs=jax.P("x", None))(a, b)


say(f"blocked matmul on {where()}: A {jax.typeof(a)} @ B {jax.typeof(b)}")
want = a_host.astype(np.float64) @ b_host.astype(np.float64)
for name, f in [("psum", allreduce_matmul), ("psum_scatter", reduce_scatter_matmul)]:
    with jax.collectives_log() as log:
        c = f(a, b)
    kinds = ", ".join(f"{e.kind} over {e.axes} ({e.nbytes} B)" for e in log)
    block = c.addressable_shards[0].data.shape
    whole = global_value(c)
    np.testing.assert_allclose(whole, want, rtol=1e-4, atol=1e-4)
    say(f"  {name:<12} result {str(jax.typeof(c)):<16} local block {block}: {kinds}")
say("both equal A @ B")
