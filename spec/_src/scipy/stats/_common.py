"""What the distributions share: JAX's promotion and typed constants."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp


def promote(name: str, *args: Any) -> list[Any]:
    """``promote_args_inexact`` under the distribution function's name."""
    return jnp.promote_args_inexact(name, *args)


def const(x: Any, value: float) -> Any:
    """``value`` as a constant of x's dtype."""
    return lax_e.const_like(x, value)
