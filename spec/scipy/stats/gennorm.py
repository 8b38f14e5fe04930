"""``spec.scipy.stats.gennorm``: JAX's ``jax.scipy.stats.gennorm``."""

from spec._src.scipy.stats.gennorm import *  # noqa: F403
