"""``jax.experimental`` names spec provides."""

from spec.experimental import multihost_utils

__all__ = ["multihost_utils"]
