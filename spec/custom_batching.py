"""``spec.custom_batching``: JAX's ``jax.custom_batching``."""

from spec._src.api.custom_batching import custom_vmap, sequential_vmap

__all__ = ["custom_vmap", "sequential_vmap"]
