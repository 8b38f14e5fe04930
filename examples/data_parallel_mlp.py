"""Data-parallel training of a small MLP: the batch is split over the
devices, the weights are replicated, and each step's gradient is one
all-reduce per weight (the ledger shows them).

    python examples/data_parallel_mlp.py
    mpiexec -n 4 python examples/data_parallel_mlp.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _common import devices, say, where

import spec as jax
import spec.numpy as jnp

n = devices()
jax.set_mesh(jax.make_mesh((n,), ("batch",)))

rng = np.random.default_rng(0)
inputs = rng.standard_normal((16 * n, 8)).astype(np.float32)
targets = np.tanh(inputs @ rng.standard_normal((8, 1)).astype(np.float32))
x = jax.device_put(inputs, jax.P("batch", None))
y = jax.device_put(targets, jax.P("batch", None))
params = [jax.device_put(rng.standard_normal(s).astype(np.float32) * 0.3, jax.P())
          for s in [(8, 16), (16,), (16, 1), (1,)]]


def loss_fn(params: list[Any], x: Any, y: Any) -> Any:
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((h @ w2 + b2 - y) ** 2)


@jax.jit
def step(params: list[Any], x: Any, y: Any) -> tuple[Any, list[Any]]:
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return loss, [p - 0.2 * g for p, g in zip(params, grads)]


say(f"data-parallel MLP on {where()}; x: {jax.typeof(x)}, w1: {jax.typeof(params[0])}")
losses = []
for i in range(30):
    with jax.collectives_log() as log:
        loss, params = step(params, x, y)
    losses.append(float(loss))
    if i % 5 == 0 or i == 29:
        say(f"step {i:2d}  loss {losses[-1]:.5f}  collectives: "
            f"{log.count('all_reduce')} all_reduce, {log.nbytes} bytes per device")
assert losses[-1] < 0.5 * losses[0], losses
say(f"loss decreased from {losses[0]:.5f} to {losses[-1]:.5f}")
