"""``spec.scipy.stats.chi2``: JAX's ``jax.scipy.stats.chi2``."""

from spec._src.scipy.stats.chi2 import *  # noqa: F403
