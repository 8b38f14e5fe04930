"""``spec.scipy.signal``: JAX's ``jax.scipy.signal``: convolutions and spectral analysis."""

from spec._src.scipy.signal import *  # noqa: F403
from spec._src.scipy.spectral import *  # noqa: F403
