"""``spec.scipy.linalg``: JAX's ``jax.scipy.linalg``."""

from spec._src.scipy.linalg import *  # noqa: F403
