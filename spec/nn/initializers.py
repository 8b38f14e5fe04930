"""``spec.nn.initializers``: JAX's ``jax.nn.initializers``."""

from spec._src.nn.initializers import *  # noqa: F403
