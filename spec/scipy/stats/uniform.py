"""``spec.scipy.stats.uniform``: JAX's ``jax.scipy.stats.uniform``."""

from spec._src.scipy.stats.uniform import *  # noqa: F403
