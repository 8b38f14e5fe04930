"""``spec.scipy.stats.multinomial``: JAX's ``jax.scipy.stats.multinomial``."""

from spec._src.scipy.stats.multinomial import *  # noqa: F403
