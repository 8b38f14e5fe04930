"""``jax.experimental.multihost_utils``."""

from spec._src.backends.multihost_utils import (
    ProcessFailureError,
    live_devices,
    process_allgather,
    sync_global_devices,
)

__all__ = [
    "ProcessFailureError",
    "live_devices",
    "process_allgather",
    "sync_global_devices",
]
