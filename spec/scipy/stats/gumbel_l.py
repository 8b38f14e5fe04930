"""``spec.scipy.stats.gumbel_l``: JAX's ``jax.scipy.stats.gumbel_l``."""

from spec._src.scipy.stats.gumbel_l import *  # noqa: F403
