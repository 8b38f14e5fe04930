"""Objects describing staged computations: ``ShapeDtypeStruct``."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.types import ArrayType, to_dtype


class ShapeDtypeStruct:
    """A shape and dtype (and weak type) standing in for an array."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape: Any, dtype: Any, *, weak_type: bool = False,
                 sharding: Any = None) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The shape, dtype, weak type and sharding of ``x`` (an array, a
        tracer or a type)."""
        aval = x if isinstance(x, ArrayType) else canonical_aval_of(x)
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type, sharding=aval.sharding)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def aval(self) -> ArrayType:
        return ArrayType(self.shape, to_dtype(self.dtype), self.weak_type)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))
