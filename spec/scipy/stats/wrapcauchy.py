"""``spec.scipy.stats.wrapcauchy``: JAX's ``jax.scipy.stats.wrapcauchy``."""

from spec._src.scipy.stats.wrapcauchy import *  # noqa: F403
