"""Array creation functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import types as T
from spec.array import Array
from spec.interpreter import Tracer
from spec.lax._structural import _convert_element_type

__all__ = ["array", "asarray"]


def array(object: Any, dtype: Any = None, copy: bool = True, order: Any = None,
          ndmin: int = 0) -> Any:
    if isinstance(object, (Array, Tracer)):
        out = object if dtype is None else _convert_element_type(
            object, T.to_dtype(dtype, "array"), False)
    else:
        out = _from_python(object, dtype)
    return out


def asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None) -> Any:
    return array(a, dtype=dtype, copy=bool(copy))


def _from_python(obj: Any, dtype: Any) -> Array:
    weak = isinstance(obj, T.PYTHON_SCALAR_TYPES) and not isinstance(obj, bool) and dtype is None
    if dtype is not None:
        dt = T.to_dtype(dtype, "array")
    elif isinstance(obj, T.PYTHON_SCALAR_TYPES):
        dt = T.python_scalar_dtype(type(obj))
    else:
        dt = T.dtype_of_value(np.asarray(obj))
    with np.errstate(all="ignore"):
        arr = np.array(obj, dtype=dt)
    return Array._from_checked(arr, T.ArrayType(arr.shape, dt, weak), "array")
