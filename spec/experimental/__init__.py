"""``jax.experimental`` names spec provides."""

from spec.experimental import hijax, multihost_utils, random, shard_map

__all__ = ["hijax", "multihost_utils", "random", "shard_map"]
