"""``spec.scipy.optimize``: JAX's ``jax.scipy.optimize`` (BFGS ``minimize``)."""

from spec._src.scipy.optimize import *  # noqa: F403
