"""``spec.scipy.fft``: JAX's ``jax.scipy.fft`` (type-2 DCTs)."""

from spec._src.scipy.fft import *  # noqa: F403
