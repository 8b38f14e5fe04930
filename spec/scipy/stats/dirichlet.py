"""``spec.scipy.stats.dirichlet``: JAX's ``jax.scipy.stats.dirichlet``."""

from spec._src.scipy.stats.dirichlet import *  # noqa: F403
