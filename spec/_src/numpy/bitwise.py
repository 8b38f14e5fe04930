"""jnp bit-wise operations (NumPy's "Bit-wise operations"): the array-API
names of the shifts and invert, ``bitwise_count``, ``packbits`` and ``unpackbits``."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.numpy import creation, padding, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import promote_args_numeric
from spec._src.numpy.util import _dtype, _ensure, _jit, _ndim, _shape, check_arraylike


def bitwise_invert(x: Any, /) -> Any:
    return jnp_math.invert(x)


def bitwise_left_shift(x1: Any, x2: Any, /) -> Any:
    return jnp_math.left_shift(x1, x2)


def bitwise_right_shift(x1: Any, x2: Any, /) -> Any:
    return jnp_math.right_shift(x1, x2)


def _bitwise_count_fn(x: Any) -> Any:
    (x,) = promote_args_numeric("bitwise_count", x)
    # The count is of |x| (NumPy's definition), always as uint8.
    return jnp_shape.astype(ew.population_count(jnp_math.abs(x)), T.uint8)


_bitwise_count = _jit("bitwise_count", _bitwise_count_fn)


def bitwise_count(x: Any, /) -> Any:
    check_arraylike("bitwise_count", x)
    if not (T.is_int(_dtype(x)) or _dtype(x) == T.bool_):
        raise TypeError(f"bitwise_count requires an integer or boolean operand, got "
                        f"{_dtype(x).name}")
    return _bitwise_count(x)


def _packbits_fn(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    bits01 = jnp_shape.astype(ew.ne(a, L.full((), 0, _dtype(a))), T.uint8)
    weights = creation.arange(8, dtype=T.uint8)
    if bitorder == "big":
        weights = weights[::-1]
    if axis is None:
        bits01 = jnp_shape.ravel(bits01)
        axis = 0
    bits01 = jnp_shape.swapaxes(bits01, axis, -1)
    rem = _shape(bits01)[-1] % 8
    if rem:
        bits01 = slicing.pad(bits01, np.uint8(0), [(0, 0, 0)] * (_ndim(bits01) - 1) +
                         [(0, 8 - rem, 0)])
    bits01 = jnp_shape.reshape(bits01, (*_shape(bits01)[:-1], _shape(bits01)[-1] // 8, 8))
    weights = L.expand_dims(weights, tuple(range(_ndim(bits01) - 1)))
    packed = jnp_shape.astype(reductions.sum(bits01 << weights, axis=-1), T.uint8)
    return jnp_shape.swapaxes(packed, axis, -1)


_packbits = _jit("packbits", _packbits_fn, ("axis", "bitorder"))


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    arr = _ensure("packbits", a)
    if not (T.is_int(_dtype(arr)) or _dtype(arr) == T.bool_):
        raise TypeError(f"Expected an input array of integer or boolean data type, got "
                        f"{_dtype(arr).name}")
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got {bitorder!r}")
    return _packbits(arr, axis=axis, bitorder=bitorder)


def _unpackbits_fn(a: Any, axis: int | None = None, count: int | None = None,
                   bitorder: str = "big") -> Any:
    weights = creation.asarray(1) << creation.arange(8, dtype=T.uint8)
    if bitorder == "big":
        weights = weights[::-1]
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    a = jnp_shape.swapaxes(a, axis, -1)
    w = L.expand_dims(weights, tuple(range(_ndim(a))))
    bits = jnp_shape.astype((a[..., None] & w) > 0, T.uint8)
    bits = jnp_shape.reshape(bits, (*_shape(bits)[:-2], -1))
    if count is not None:
        if count > _shape(bits)[-1]:
            bits = padding.pad(bits, [(0, 0)] * (_ndim(bits) - 1) + [(0, count - _shape(bits)[-1])])
        else:
            bits = bits[..., :count]
    return jnp_shape.swapaxes(bits, axis, -1)


_unpackbits = _jit("unpackbits", _unpackbits_fn, ("axis", "count", "bitorder"))


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    arr = _ensure("unpackbits", a)
    if _dtype(arr) != T.uint8:
        raise TypeError(f"Expected an input array of unsigned byte data type, got "
                        f"{_dtype(arr).name}")
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got {bitorder!r}")
    return _unpackbits(arr, axis=axis, count=count, bitorder=bitorder)


__all__ = [
    "packbits", "unpackbits", "bitwise_count", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift",
]
