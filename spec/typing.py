"""``jax.typing``: the annotation aliases ArrayLike and DTypeLike."""

from spec._src.typing import ArrayLike, DTypeLike

__all__ = ["ArrayLike", "DTypeLike"]
