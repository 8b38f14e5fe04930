"""``spec.scipy.stats.betabinom``: JAX's ``jax.scipy.stats.betabinom``."""

from spec._src.scipy.stats.betabinom import *  # noqa: F403
