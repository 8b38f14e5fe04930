"""``spec.scipy.special``: JAX's ``jax.scipy.special``."""

from spec._src.scipy.special import *  # noqa: F403
