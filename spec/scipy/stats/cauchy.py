"""``spec.scipy.stats.cauchy``: JAX's ``jax.scipy.stats.cauchy``."""

from spec._src.scipy.stats.cauchy import *  # noqa: F403
