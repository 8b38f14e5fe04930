"""``spec.scipy.interpolate``: JAX's ``jax.scipy.interpolate`` (``RegularGridInterpolator``)."""

from spec._src.scipy.interpolate import *  # noqa: F403
