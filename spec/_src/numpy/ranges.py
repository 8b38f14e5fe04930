"""Numerical ranges (NumPy's "Array creation > Numerical ranges") built on the
elementwise and manipulation modules: ``logspace``, ``geomspace``, ``meshgrid``,
``mgrid`` and ``ogrid``."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer
from spec._src.lax import shaping as L
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.util import (
    _ensure,
    _index,
    _jit,
    _ndim,
    _promote,
    _shape,
    _to_inexact,
    check_arraylike,
)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Any, ...]:
    check_arraylike("meshgrid", *xi)
    args = [L.asarray(x) for x in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(_ndim(a) != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[_shape(a) for a in args]}")
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [_shape(a)[0] for a in args]
    out = []
    for i, a in enumerate(args):
        shape = [1] * len(args) if sparse else list(sizes)
        shape[i] = sizes[i]
        out.append(L.broadcast_in_dim(a, tuple(shape), (i,)))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def _space_dtype(name: str, start: Any, stop: Any, dtype: Any) -> T.DType:
    if dtype is None:
        return _to_inexact(T.result_type_and_weak(start, stop)[0])
    return T.to_dtype(dtype, name)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop)``, staged as JAX stages it: a ``jit``
    named ``_logspace`` with ``base`` traced."""
    num = _index(num, "'num' argument of jnp.logspace")
    axis = _index(axis, "'axis' argument of jnp.logspace")
    return _logspace(start, stop, num=num, endpoint=endpoint, base=base, dtype=dtype,
                     axis=axis)


def _logspace_fn(start: Any, stop: Any, num: int, endpoint: bool, base: Any, dtype: Any,
                 axis: int) -> Any:
    dt = _space_dtype("logspace", start, stop, dtype)
    comp = _to_inexact(dt)
    a, b = _ensure("logspace", start, stop)
    lin = creation.linspace(jnp_shape.astype(a, comp), jnp_shape.astype(b, comp), num,
                            endpoint=endpoint, axis=axis)
    return L.convert_element_type(jnp_math.power(base, lin), dt)


_logspace = _jit("_logspace", _logspace_fn, ("num", "endpoint", "dtype", "axis"))


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """Geometrically spaced values, a ``jit`` named ``_geomspace`` (holding
    ``_logspace``'s), as JAX."""
    num = _index(num, "'num' argument of jnp.geomspace")
    axis = _index(axis, "'axis' argument of jnp.geomspace")
    return _geomspace(start, stop, num=num, endpoint=endpoint, dtype=dtype, axis=axis)


def _geomspace_fn(start: Any, stop: Any, num: int, endpoint: bool, dtype: Any,
                  axis: int) -> Any:
    dt = _space_dtype("geomspace", start, stop, dtype)
    comp = _to_inexact(dt)
    a, b = _ensure("geomspace", start, stop)
    a, b = jnp_shape.astype(a, comp), jnp_shape.astype(b, comp)
    sign = jnp_math.sign(a)
    res = sign * _logspace(jnp_math.log10(a / sign), jnp_math.log10(b / sign), num=num,
                           endpoint=endpoint, base=10.0, dtype=comp, axis=0)
    nd = _ndim(res)
    ax = canonicalize_axis(axis, nd)
    if ax != 0:
        res = L.transpose(res, (*range(1, ax + 1), 0, *range(ax + 1, nd)))
    return L.convert_element_type(res, dt)


_geomspace = _jit("_geomspace", _geomspace_fn, ("num", "endpoint", "dtype", "axis"))


def _concrete_scalar(v: Any, what: str) -> Any:
    if isinstance(v, Tracer):
        raise ConcretizationTypeError(f"{what} must be concrete, got a traced value {v}")
    return v if v is None or isinstance(v, (int, float, complex)) else np.asarray(v).item()


def _grid_1d(s: slice, op: str) -> Any:
    """One slice of an index trick: arange, or linspace when the step is imaginary."""
    start = _concrete_scalar(s.start, f"slice start of jnp.{op}") or 0
    stop = _concrete_scalar(s.stop, f"slice stop of jnp.{op}")
    step = _concrete_scalar(s.step, f"slice step of jnp.{op}") or 1
    if np.iscomplex(step):  # 5j means "5 points, stop included"
        return creation.linspace(start, stop, int(abs(step)))
    return creation.arange(start, stop, step)


def _grid_parts(key: Any, op: str) -> list[Any]:
    parts = [_grid_1d(k, op) for k in key]
    return _promote(*parts) if len(parts) >= 2 else parts


class _MGrid:
    """jnp.mgrid: dense grids from slices, stacked on a new leading axis."""

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        parts = _grid_parts(key, "mgrid")
        if not parts:
            return creation.arange(0)
        return jnp_shape.stack(meshgrid(*parts, indexing="ij", sparse=False), 0)


class _OGrid:
    """jnp.ogrid: open (sparse) grids from slices, as a list."""

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        return list(meshgrid(*_grid_parts(key, "ogrid"), indexing="ij", sparse=True))


mgrid = _MGrid()


ogrid = _OGrid()


__all__ = [
    "mgrid", "ogrid", "geomspace", "logspace", "meshgrid",
]
