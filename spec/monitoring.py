"""``spec.monitoring``: JAX's ``jax.monitoring``."""

from spec._src.core.monitoring import *  # noqa: F403
from spec._src.core.monitoring import __all__ as __all__
