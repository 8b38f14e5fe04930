"""``spec.scipy.stats.binom``: JAX's ``jax.scipy.stats.binom``."""

from spec._src.scipy.stats.binom import *  # noqa: F403
