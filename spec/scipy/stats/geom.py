"""``spec.scipy.stats.geom``: JAX's ``jax.scipy.stats.geom``."""

from spec._src.scipy.stats.geom import *  # noqa: F403
