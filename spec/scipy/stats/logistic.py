"""``spec.scipy.stats.logistic``: JAX's ``jax.scipy.stats.logistic``."""

from spec._src.scipy.stats.logistic import *  # noqa: F403
