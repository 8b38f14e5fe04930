"""``jax.interpreters.batching``: batching rules of user primitives."""

from spec._src.api.extend import defvectorized, primitive_batchers

not_mapped = None

__all__ = ["defvectorized", "not_mapped", "primitive_batchers"]
