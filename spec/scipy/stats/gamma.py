"""``spec.scipy.stats.gamma``: JAX's ``jax.scipy.stats.gamma``."""

from spec._src.scipy.stats.gamma import *  # noqa: F403
