"""``spec.scipy.stats.multivariate_normal``: JAX's ``jax.scipy.stats.multivariate_normal``."""

from spec._src.scipy.stats.multivariate_normal import *  # noqa: F403
