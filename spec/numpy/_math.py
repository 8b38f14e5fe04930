"""Elementwise jnp functions: promotion, then the lax primitive."""

from __future__ import annotations

from typing import Any

from spec import lax
from spec.numpy._util import promote_args

__all__ = ["add", "multiply", "sin"]


def add(x: Any, y: Any, /) -> Any:
    a, b = promote_args("add", x, y)
    return lax.add(a, b)


def multiply(x: Any, y: Any, /) -> Any:
    a, b = promote_args("multiply", x, y)
    return lax.mul(a, b)


def sin(x: Any, /) -> Any:
    (a,) = promote_args("sin", x)
    return lax.sin(a)
