"""``spec.scipy.stats.norm``: JAX's ``jax.scipy.stats.norm``."""

from spec._src.scipy.stats.norm import *  # noqa: F403
