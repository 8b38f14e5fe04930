"""``jax.experimental`` names spec provides."""

from spec.experimental import multihost_utils, random, shard_map

__all__ = ["multihost_utils", "random", "shard_map"]
