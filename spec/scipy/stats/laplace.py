"""``spec.scipy.stats.laplace``: JAX's ``jax.scipy.stats.laplace``."""

from spec._src.scipy.stats.laplace import *  # noqa: F403
