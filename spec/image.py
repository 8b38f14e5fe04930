"""``spec.image``: JAX's ``jax.image``."""

from spec._src.numpy.image import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
