"""``spec.numpy.fft``: JAX's ``jax.numpy.fft``."""

from spec._src.numpy.fft import *  # noqa: F403
