"""``jax.experimental`` names spec provides."""

from spec._src.api.callbacks import io_callback
from spec.experimental import hijax, multihost_utils, random, shard_map, xla_metadata

__all__ = ["hijax", "io_callback", "multihost_utils", "random", "shard_map",
           "xla_metadata"]
