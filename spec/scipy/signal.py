"""``spec.scipy.signal``: JAX's ``jax.scipy.signal`` convolutions."""

from spec._src.scipy.signal import *  # noqa: F403
