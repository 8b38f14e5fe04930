"""``jax.stages``: staged computations."""

from spec._src.api.stages import (
    ShapeDtypeStruct,
)

__all__ = [
    "ShapeDtypeStruct",
]
