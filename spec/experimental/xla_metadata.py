"""``jax.experimental.xla_metadata``: XLA metadata on operations."""

from spec._src.api.xla_metadata import (
    fuse_limit,
    must_fuse_call,
    set_xla_metadata,
    xla_metadata_call,
    xla_metadata_call2,
)

__all__ = ["fuse_limit", "must_fuse_call", "set_xla_metadata", "xla_metadata_call",
           "xla_metadata_call2"]
