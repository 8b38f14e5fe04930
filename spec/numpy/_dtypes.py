"""dtype objects and dtype functions of jnp."""

from __future__ import annotations

import numpy as np

from spec import types as T

__all__ = ["promote_types", "result_type", "dtype", "float32", "int32", "bool_", "float16",
           "bfloat16", "float64", "int8", "int16", "int64", "uint8", "uint16", "uint32",
           "uint64", "complex64", "complex128"]

promote_types = T.promote_types
result_type = T.result_type
dtype = np.dtype
bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
bfloat16 = T.bfloat16.type
