"""jnp logic functions over whole arrays (NumPy's "Logic functions": allclose,
array_equal, array_equiv), built on the elementwise comparisons and reductions."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer
from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.numpy import creation, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy.creation import array, asarray
from spec._src.numpy.math import (
    _UNSET,
    _aval,
    _isclose,
    _named_jit,
    equal,
    isnan,
    logical_and,
    logical_or,
)
from spec._src.numpy.reductions import all as all_
from spec._src.numpy.util import _dtype, _inline_jit, _jit, _ndim, check_arraylike


def _allclose_impl(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
                   equal_nan: bool = False) -> Any:
    return all_(_isclose(a, b, rtol, atol, equal_nan=equal_nan))


_allclose = _named_jit("allclose", _allclose_impl, static_argnames=("equal_nan",))


def allclose(a: Any, b: Any, rtol: Any = _UNSET, atol: Any = _UNSET,
             equal_nan: bool = False) -> Any:
    """isclose(...).all()."""
    check_arraylike("allclose", a, b)
    kwargs = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not _UNSET}
    return _allclose(a, b, **kwargs, equal_nan=equal_nan)


@_inline_jit
def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True iff the shapes agree and every element is equal."""
    a1, a2 = asarray(a1), asarray(a2)
    if _aval(a1).shape != _aval(a2).shape:
        return array(False, dtype=T.bool_)
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all_(eq)


@_inline_jit
def array_equiv(a1: Any, a2: Any) -> Any:
    x, y = creation.asarray(a1), creation.asarray(a2)
    try:
        eq = jnp_math.equal(x, y)
    except ValueError:
        # As JAX: a ValueError means "not equivalent" (a TypeError propagates).
        return creation.array(False)
    return reductions.all(eq)


def isscalar(element: Any) -> bool:
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return bool(np.ndim(element) == 0) if isinstance(element, np.ndarray) else \
            _ndim(element) == 0
    if getattr(element, "__jax_array__", None) is not None:
        return _ndim(creation.asarray(element)) == 0
    return False


def iterable(y: Any) -> bool:
    return bool(np.iterable(y))


def _isreal_fn(x: Any) -> Any:
    i = jnp_math.imag(x)
    return ew.eq(i, L.full((), 0, _dtype(i)))


def _iscomplex_fn(x: Any) -> Any:
    i = jnp_math.imag(x)
    return ew.ne(i, L.full((), 0, _dtype(i)))


_isreal = _jit("isreal", _isreal_fn)


_iscomplex = _jit("iscomplex", _iscomplex_fn)


def isreal(x: Any) -> Any:
    return _isreal(x)


def iscomplex(x: Any) -> Any:
    return _iscomplex(x)


__all__ = [
    "allclose", "array_equal", "array_equiv", "iscomplex", "isreal", "isscalar", "iterable",
]
