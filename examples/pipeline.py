"""A pipeline schedule built from ``jax.fwd_and_bwd``: stage s's layer lives
on device s, a microbatch moves one stage per tick (ppermute), and the
forward and backward passes are separate compiled functions that we call
on a schedule of our own. Two waves of microbatches: wave B's forward
ticks are interleaved with wave A's backward ticks, the VJP objects
(pytrees of sharded residuals) carried between the calls. The gradients
equal those of jax.grad through the whole network.

    python examples/pipeline.py
    mpiexec -n 4 python examples/pipeline.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _common import devices, global_value, say, where

import spec as jax
import spec.numpy as jnp

n = stages = devices()
mesh = jax.make_mesh((stages,), ("stage",))
jax.set_mesh(mesh)
width, rows, per_wave = 8, 4, 4
rng = np.random.default_rng(0)
weights_host = (rng.standard_normal((stages, width, width)) / np.sqrt(width)).astype(np.float32)
waves_host = rng.standard_normal((2, per_wave, rows, width)).astype(np.float32)
weights = jax.device_put(weights_host, jax.P("stage"))  # f32[S@stage, d, d]: one layer each


def layer(w: Any, x: Any) -> Any:
    return jnp.tanh(x @ w)


# One tick: every stage applies its layer to the activation it holds.
fwd, bwd = jax.fwd_and_bwd(jax.vmap(layer), argnums=(0, 1))
is_last = jax.device_put(np.arange(stages) == stages - 1, jax.P("stage"))[:, None, None]


def _shift(pairs: list[tuple[int, int]]) -> Any:
    return jax.jit(jax.shard_map(lambda a: jax.lax.ppermute(a, "stage", pairs), mesh=mesh,
                                 in_specs=jax.P("stage"), out_specs=jax.P("stage")))


to_next = _shift([(s, s + 1) for s in range(stages - 1)])      # activations flow down
to_previous = _shift([(s + 1, s) for s in range(stages - 1)])  # cotangents flow up
ticks = per_wave + stages - 1


def entering(wave: np.ndarray, t: int) -> Any:
    """Stage 0's new microbatch at tick t (zeros elsewhere, and after the
    wave has entered)."""
    slot = np.zeros((stages, rows, width), np.float32)
    if t < per_wave:
        slot[0] = wave[t]
    return jax.device_put(slot, jax.P("stage"))


class Wave:
    """One wave's forward state: the activations in flight and each tick's
    VJP object; its backward state: the cotangents in flight."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.acts, self.cts = data, None, None
        self.outputs: list[Any] = []
        self.vjps: list[Any] = []
        self.loss = jnp.float32(0)

    def forward_tick(self, t: int) -> None:
        held = entering(self.data, t) if self.acts is None else \
            to_next(self.acts) + entering(self.data, t)
        self.acts, vjp = fwd(weights, held)
        self.outputs.append(self.acts)
        self.vjps.append(vjp)
        # The last stage's output leaves the pipeline; loss = sum(out^2) / 2.
        if t >= stages - 1:
            self.loss = self.loss + jnp.sum(jnp.where(is_last, self.acts, 0.0) ** 2) / 2

    def backward_tick(self, t: int, grads: Any) -> Any:
        out = self.outputs[t]
        ct = jnp.where(is_last, out, 0.0) if t >= stages - 1 else jnp.zeros_like(out)
        if self.cts is not None:
            ct = ct + to_previous(self.cts)
        dw, self.cts = bwd(self.vjps[t], ct)
        return dw if grads is None else grads + dw


say(f"pipeline on {where()}: {stages} stages, 2 waves of {per_wave} microbatches, "
    f"{ticks} ticks per wave")
a, b = Wave(waves_host[0]), Wave(waves_host[1])
schedule = []
with jax.collectives_log() as log:
    for t in range(ticks):
        a.forward_tick(t)
        schedule.append(f"F{t}a")
    grads = None
    for k in range(ticks):  # wave B forward, interleaved with wave A backward
        b.forward_tick(k)
        grads = a.backward_tick(ticks - 1 - k, grads)
        schedule.append(f"F{k}b B{ticks - 1 - k}a")
    for t in reversed(range(ticks)):
        grads = b.backward_tick(t, grads)
        schedule.append(f"B{t}b")
say("schedule:", " | ".join(schedule))
say(f"collectives: {log.count('ppermute')} ppermute, {log.count('all_reduce')} all_reduce")


def reference_loss(ws: Any) -> Any:
    total = jnp.float32(0)
    for wave in waves_host:
        for x in wave:
            for s in range(stages):
                x = layer(ws[s], x)
            total = total + jnp.sum(x ** 2) / 2
    return total


want_loss, want_grads = jax.value_and_grad(reference_loss)(jnp.asarray(weights_host))
got_loss = float(a.loss + b.loss)
got_grads = global_value(grads)
np.testing.assert_allclose(got_loss, float(want_loss), rtol=1e-5)
np.testing.assert_allclose(got_grads, np.asarray(want_grads), rtol=1e-4, atol=1e-5)
say(f"loss {got_loss:.5f}; gradients of all {stages} stages equal jax.grad's "
    f"(max |difference| {np.max(np.abs(got_grads - np.asarray(want_grads))):.2e})")
