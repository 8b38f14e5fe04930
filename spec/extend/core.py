"""``jax.extend.core``: user primitives and the jaxpr types."""

from spec._src.api.extend import Primitive

__all__ = ["Primitive"]
