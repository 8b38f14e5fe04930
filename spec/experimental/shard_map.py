"""``jax.experimental.shard_map``: ``shard_map`` under its older module path."""

from spec._src.api.shard_map import shard_map

__all__ = ["shard_map"]
