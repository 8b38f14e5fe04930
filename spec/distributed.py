"""``spec.distributed``: JAX's ``jax.distributed``."""

from spec._src.backends.distributed import initialize, is_initialized, shutdown

__all__ = ["initialize", "is_initialized", "shutdown"]
