"""``spec.scipy.stats.gumbel_r``: JAX's ``jax.scipy.stats.gumbel_r``."""

from spec._src.scipy.stats.gumbel_r import *  # noqa: F403
