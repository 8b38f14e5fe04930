"""``spec.scipy.integrate``: JAX's ``jax.scipy.integrate``."""

from spec._src.scipy.integrate import *  # noqa: F403
