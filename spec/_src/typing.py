"""The annotation aliases JAX programs import from ``jax.typing``."""

from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from spec._src.core.basearray import Array


class SupportsDType(Protocol):
    """Anything with a ``dtype`` attribute naming a NumPy dtype."""

    @property
    def dtype(self) -> np.dtype[Any]: ...


# Values an API accepts where it asks for an array: spec arrays, NumPy arrays and scalars.
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]

# Values an API accepts where it asks for a dtype.
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]
