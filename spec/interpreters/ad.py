"""``jax.interpreters.ad``: differentiation rules of user primitives."""

from spec._src.api.extend import (
    defjvp,
    deflinear,
    deflinear2,
    primitive_jvps,
    primitive_transposes,
)
from spec._src.interpreters.ad_util import Zero, instantiate as instantiate_zeros

__all__ = ["Zero", "defjvp", "deflinear", "deflinear2", "instantiate_zeros", "primitive_jvps",
           "primitive_transposes"]
