"""``spec.scipy.stats.t``: JAX's ``jax.scipy.stats.t``."""

from spec._src.scipy.stats.t import *  # noqa: F403
