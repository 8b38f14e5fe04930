"""``spec.scipy.stats.truncnorm``: JAX's ``jax.scipy.stats.truncnorm``."""

from spec._src.scipy.stats.truncnorm import *  # noqa: F403
