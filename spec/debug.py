"""``jax.debug``: looking at values and shardings while a program runs."""

from spec._src.api.debug_sharding import (
    inspect_array_sharding,
    visualize_array_sharding,
    visualize_sharding,
)

__all__ = ["inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]
