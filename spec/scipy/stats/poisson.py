"""``spec.scipy.stats.poisson``: JAX's ``jax.scipy.stats.poisson``."""

from spec._src.scipy.stats.poisson import *  # noqa: F403
