"""``spec.dlpack``: JAX's ``jax.dlpack``."""

from spec._src.numpy.dlpack import from_dlpack, is_supported_dtype

__all__ = ["from_dlpack", "is_supported_dtype"]
