"""lax wrappers for elementwise primitives."""

from __future__ import annotations

from typing import Any

from spec.rules.elementwise import add_p, mul_p, sin_p

__all__ = ["add", "mul", "sin"]


def add(x: Any, y: Any) -> Any:
    """Elementwise ``x + y`` (operands of one dtype; see jnp.add to promote)."""
    return add_p.bind(x, y)


def mul(x: Any, y: Any) -> Any:
    return mul_p.bind(x, y, out_dtype=None)


def sin(x: Any, accuracy: Any = None) -> Any:
    return sin_p.bind(x, accuracy=accuracy)
