"""``spec.scipy.stats.beta``: JAX's ``jax.scipy.stats.beta``."""

from spec._src.scipy.stats.beta import *  # noqa: F403
