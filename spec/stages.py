"""``jax.stages``: staged computations."""

from spec._src.api.jit import Compiled, Lowered, Traced
from spec._src.api.stages import (
    ArgInfo,
    CompiledMemoryStats,
    CompilerOptions,
    ShapeDtypeStruct,
    Wrapped,
)

__all__ = [
    "ArgInfo",
    "Compiled",
    "CompiledMemoryStats",
    "CompilerOptions",
    "Lowered",
    "ShapeDtypeStruct",
    "Traced",
    "Wrapped",
]
