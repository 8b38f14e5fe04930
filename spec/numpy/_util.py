"""Shared machinery of the jnp layer: dtype promotion of operands."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import types as T
from spec.array import Array
from spec.interpreter import Tracer, canonical_aval_of
from spec.lax._structural import _convert_element_type

__all__ = ["check_arraylike", "promote_args", "promote_dtypes", "to_weak_or_strong"]


def check_arraylike(fun_name: str, *args: Any) -> None:
    """jnp functions accept arrays and scalars, not lists/tuples (as JAX)."""
    for i, a in enumerate(args):
        if isinstance(a, (Array, Tracer, np.ndarray, np.generic)) or isinstance(
                a, T.PYTHON_SCALAR_TYPES) or hasattr(a, "__jax_array__"):
            continue
        raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {type(a)} at "
                        f"position {i}.")


def to_weak_or_strong(x: Any, dtype: T.DType, weak: bool) -> Any:
    """``x`` as an operand of exactly (dtype, weak). Python scalars become
    concrete values (inlined as literals when traced); the rest convert."""
    if isinstance(x, T.PYTHON_SCALAR_TYPES):
        value = np.asarray(x.real if isinstance(x, complex) and not T.is_complex(dtype) else x)
        with np.errstate(all="ignore"):
            arr = value.astype(dtype)
        return Array._from_checked(arr, T.ArrayType((), dtype, weak), "convert")
    return _convert_element_type(x, dtype, weak)


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert operands to their common (dtype, weak type), JAX's ``promote_dtypes``."""
    if len(args) < 2:
        return list(args)
    dtype, weak = T.result_type_and_weak(*args)
    return [to_weak_or_strong(a, dtype, weak) for a in args]


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    check_arraylike(fun_name, *args)
    return promote_dtypes(*args)


def aval_of(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)
