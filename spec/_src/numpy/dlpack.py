"""``jax.dlpack``: ``from_dlpack`` and the dtypes DLPack exchanges.

``from_dlpack(external_array, device, copy)`` is ``jnp.from_dlpack`` (spec's arrays own their
data: the buffer is copied); ``is_supported_dtype(dtype)`` says whether a dtype is one of the
fifteen JAX exchanges: bool, the signed and unsigned integers of 8 to 64 bits, float16,
bfloat16, float32, float64, complex64 and complex128 (TypeError for None, which NumPy would
read as float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.numpy.io import from_dlpack as _jnp_from_dlpack

SUPPORTED_DTYPES = frozenset(np.dtype(d) for d in (
    T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64, T.float16,
    T.bfloat16, T.float32, T.float64, T.complex64, T.complex128, T.bool_))


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An Array holding the buffer ``external_array`` exports through DLPack."""
    return _jnp_from_dlpack(external_array, device=device, copy=copy)


def is_supported_dtype(dtype: Any) -> bool:
    """Whether DLPack exchanges arrays of ``dtype``."""
    if dtype is None:
        raise TypeError(f"Expected a string or dtype-like object; got dtype={dtype}")
    return np.dtype(dtype) in SUPPORTED_DTYPES


__all__ = ["from_dlpack", "is_supported_dtype"]
