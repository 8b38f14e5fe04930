"""``spec.scipy.stats.pareto``: JAX's ``jax.scipy.stats.pareto``."""

from spec._src.scipy.stats.pareto import *  # noqa: F403
