"""``spec.scipy.stats.bernoulli``: JAX's ``jax.scipy.stats.bernoulli``."""

from spec._src.scipy.stats.bernoulli import *  # noqa: F403
