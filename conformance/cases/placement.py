"""Placement and commitment on one device: which arrays are committed,
what ``device_put`` of pytrees and devices gives, ``default_device``, and
objects that convert themselves through ``__jax_array__``."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.registry import capture, case


@case(tags=("placement",))
def committed_flags(jax: Any, jnp: Any, lax: Any) -> Any:
    dev = jax.devices()[0]
    x = jnp.ones(3)
    return [x.committed, jax.device_put(x).committed, jax.device_put(x, dev).committed,
            jax.jit(lambda a: a + 1)(jax.device_put(x, dev)).committed,
            jax.jit(lambda a: a + 1)(x).committed, (x + jax.device_put(x, dev)).committed]


@case(tags=("placement",))
def device_put_of_pytrees(jax: Any, jnp: Any, lax: Any) -> Any:
    dev = jax.devices()[0]
    tree = {"a": np.ones(2, np.float32), "b": [np.arange(3), 2.0]}
    placed = jax.device_put(tree, {"a": dev, "b": None})
    flat = jax.tree.leaves(placed)
    return [placed, [a.committed for a in flat], [str(a.dtype) for a in flat],
            [str(jax.typeof(a)) for a in flat]]


@case(tags=("placement",))
def default_device_context(jax: Any, jnp: Any, lax: Any) -> Any:
    dev = jax.devices()[0]
    with jax.default_device(dev):
        x = jnp.arange(3.0)
    return [x.committed, str(x.device) == str(dev), x.device == dev]


class _Wrapped:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __jax_array__(self) -> Any:
        return self.value


@case(tags=("placement", "errors"))
def jax_array_protocol_entry_points(jax: Any, jnp: Any, lax: Any) -> Any:
    w = _Wrapped(np.arange(3.0, dtype=np.float32))
    return [capture(jnp.asarray, w), capture(jnp.array, w),
            capture(jnp.stack, [w, w]), capture(jnp.concatenate, [w, w]),
            capture(lambda: jnp.zeros(3).at[0].set(w[0] if False else 1.0) + jnp.asarray(w)),
            capture(lambda: jnp.sin(w)), capture(lambda: jax.jit(lambda a: a * 2)(w)),
            capture(lambda: lax.add(w, w))]
