"""``spec.scipy.stats.nbinom``: JAX's ``jax.scipy.stats.nbinom``."""

from spec._src.scipy.stats.nbinom import *  # noqa: F403
