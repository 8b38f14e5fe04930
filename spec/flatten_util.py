"""``jax.flatten_util``: ravel a pytree into one vector."""

from spec._src.flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
