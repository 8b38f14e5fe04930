"""The capstone of "Autodiff and sharding": microbatch gradient accumulation
through a scan over layers. With the weights cast to reduced ({R:x}) the
gradients stay unreduced ({U:x}) through both loops and the step runs
exactly one all-reduce; with replicated weights every layer of every
microbatch all-reduces its gradient.

    python examples/capstone.py
    mpiexec -n 4 python examples/capstone.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _common import devices, say, where

import spec as jax
import spec.numpy as jnp

n = devices()
jax.set_mesh(jax.make_mesh((n,), ("x",)))
layers, microbatches = 3, 5


def predict(ws: Any, xs: Any) -> Any:
    final, _ = jax.lax.scan(lambda c, w: (jnp.tanh(c @ w), None), xs, ws)
    return final


def loss(ws: Any, batch: Any) -> Any:
    return jnp.sum(predict(ws, batch) ** 2)


def make_step(reduced: bool) -> Any:
    @jax.jit
    def step(ws: Any, xs: Any) -> Any:
        def micro(acc: Any, xs_mb: Any) -> tuple[Any, None]:
            return acc + jax.grad(loss)(ws, xs_mb), None
        acc = jnp.zeros_like(ws)
        if reduced:
            acc = jax.reshard(acc, jax.P(unreduced={"x"}))
        acc, _ = jax.lax.scan(micro, acc, xs)
        grads = jax.reshard(acc, jax.P()) if reduced else acc
        return jax.reshard(ws, jax.P()) - 0.01 * grads
    return step


weights = np.stack([np.eye(4, dtype=np.float32) / 2] * layers)
batches = np.random.default_rng(0).standard_normal((microbatches, 2 * n, 4)).astype(np.float32)
xs = jax.device_put(batches, jax.P(None, "x", None))
say(f"capstone on {where()}: {layers} layers, {microbatches} microbatches")
results = {}
for reduced in (True, False):
    ws = jax.device_put(weights, jax.P(reduced={"x"}) if reduced else jax.P())
    with jax.collectives_log() as log:
        new = make_step(reduced)(ws, xs)
    results[reduced] = np.asarray(new)
    say(f"  weights {str(jax.typeof(ws)):<22} -> {log.count('all_reduce'):2d} all-reduce(s) "
        f"per step, {log.nbytes} bytes per device")
    if reduced:
        assert log.count() == log.count("all_reduce") == 1
    else:
        assert log.count("all_reduce") == layers * microbatches
np.testing.assert_allclose(results[True], results[False], rtol=1e-5)
say("both steps give the same new weights; the reduced one all-reduces exactly once")
