"""``jax.extend``: what libraries use to define their own primitives."""

from spec.extend import core

__all__ = ["core"]
