"""``jax.stages``: staged computations."""

from spec._src.api.jit import Compiled, Lowered, Traced
from spec._src.api.stages import (
    ArgInfo,
    CompiledMemoryStats,
    ShapeDtypeStruct,
)

__all__ = [
    "ArgInfo",
    "Compiled",
    "CompiledMemoryStats",
    "Lowered",
    "ShapeDtypeStruct",
    "Traced",
]
