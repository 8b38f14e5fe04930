"""``jax.scipy.integrate.trapezoid``: ``jnp.trapezoid`` staged as one ``jit`` equation with
``axis`` static, as JAX stages it."""

from __future__ import annotations

from typing import Any

from spec._src.api.jit import jit
from spec._src.numpy.reductions import trapezoid as _jnp_trapezoid


def _trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    return _jnp_trapezoid(y, x, dx, axis)


_trapezoid.__name__ = _trapezoid.__qualname__ = "trapezoid"
trapezoid: Any = jit(_trapezoid, static_argnames=("axis",))

__all__ = ["trapezoid"]
