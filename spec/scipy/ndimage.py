"""``spec.scipy.ndimage``: JAX's ``jax.scipy.ndimage``."""

from spec._src.scipy.ndimage import *  # noqa: F403
