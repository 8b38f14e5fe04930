"""``spec.scipy.stats.expon``: JAX's ``jax.scipy.stats.expon``."""

from spec._src.scipy.stats.expon import *  # noqa: F403
