"""``spec.scipy.stats.vonmises``: JAX's ``jax.scipy.stats.vonmises``."""

from spec._src.scipy.stats.vonmises import *  # noqa: F403
