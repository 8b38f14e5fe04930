"""``jax.scipy.interpolate.RegularGridInterpolator``: values on a rectilinear grid sampled at
arbitrary points, by multilinear or nearest-neighbour interpolation, as JAX computes it.

Each query coordinate is placed in a grid cell by ``searchsorted`` (the cell index clamped to
the first and last cells, so points outside the grid extrapolate from the edge cell), and its
position inside the cell is the fraction ``t`` of the way from the cell's lower node to its
upper one. Linear interpolation sums the ``2**ndim`` corner values weighted by products of
``1 - t`` and ``t``; nearest picks the lower node when ``t <= 0.5``. Points outside the grid
along any axis get ``fill_value`` (unless it is None). Grids are assumed strictly increasing
(nothing checks it, as in JAX: checking would need concrete values under ``jit``)."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.tree_util import register_pytree_node
from spec._src.numpy import creation
from spec._src.numpy.dtypes import can_cast
from spec._src.numpy.indexing import where
from spec._src.numpy.math import _promote_dtypes_inexact, clip
from spec._src.numpy.shape import broadcast_arrays, stack
from spec._src.numpy.sorting import searchsorted
from spec._src.numpy.util import check_arraylike

_METHODS = ("linear", "nearest")


def _check_method(method: Any) -> None:
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined")


def _points_array(xi: Any, ndim: int) -> Any:
    """The query points as one array whose last axis holds the coordinates: a tuple of
    coordinate arrays is broadcast and stacked (as the default float type); a flat array is
    read as consecutive ``ndim``-tuples."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        coordinates = broadcast_arrays(*xi)
        return stack(coordinates, axis=-1).astype(T.default_float())
    check_arraylike("RegularGridInterpolator", xi)
    xi = creation.asarray(xi)
    return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
    """Interpolation on a regular (rectilinear) grid, as ``scipy.interpolate``'s class of
    that name, with ``method`` ``'linear'`` or ``'nearest'`` and no ``bounds_error``."""

    grid: tuple[Any, ...]
    values: Any
    method: str
    bounds_error: bool
    fill_value: Any

    def __init__(self, points: Sequence[Any], values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        _check_method(method)
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError(
                f"RegularGridInterpolator: bounds_error={bounds_error!r} is not supported: an "
                "out-of-bounds check cannot raise under jit (`bounds_error` takes no effect "
                "under JIT); use the default bounds_error=False")
        check_arraylike("RegularGridInterpolator", values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        (values,) = _promote_dtypes_inexact(creation.asarray(values))
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = creation.asarray(fill_value)
            if not can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 f"with values (fill_value dtype {fill_value.dtype}, values "
                                 f"dtype {values.dtype})")
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(creation.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        points = _points_array(xi, ndim)
        if points.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension "
                             f"{points.shape[-1]}, but this RegularGridInterpolator has "
                             f"dimension {ndim}")
        batch_shape = points.shape[:-1]
        coordinates = points.reshape(-1, ndim).T
        cells, fractions = self._cells_and_fractions(coordinates)
        if method == "linear":
            result = self._linear(cells, fractions)
        else:
            result = self._nearest(cells, fractions)
        if self.fill_value is not None:
            outside = self._outside(coordinates)
            outside = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = where(outside, self.fill_value, result)
        return result.reshape(batch_shape + self.values.shape[ndim:])

    def _cells_and_fractions(self, coordinates: Any) -> tuple[list[Any], list[Any]]:
        """Per axis: each point's cell (its lower node's index) and the fraction of the way
        from that node to the next."""
        cells, fractions = [], []
        for x, nodes in zip(coordinates, self.grid):
            cell = clip(searchsorted(nodes, x) - 1, 0, nodes.size - 2)
            lower, upper = nodes[cell], nodes[cell + 1]
            cells.append(cell)
            fractions.append((x - lower) / (upper - lower))
        return cells, fractions

    def _outside(self, coordinates: Any) -> Any:
        per_axis = [(x < nodes[0]) | (x > nodes[-1]) for x, nodes in zip(coordinates, self.grid)]
        return functools.reduce(operator.or_, per_axis,
                                creation.zeros(coordinates.shape[1:], dtype=bool))

    def _linear(self, cells: list[Any], fractions: list[Any]) -> Any:
        # A point's weight for a corner is the product over axes of (1 - t) at the lower node
        # and t at the upper one; the values' trailing (non-grid) axes broadcast along.
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(cells))
        per_axis = [((cell, 1 - t), (cell + 1, t)) for cell, t in zip(cells, fractions)]
        total: Any = creation.asarray(0.0)
        for corner in itertools.product(*per_axis):
            indices = tuple(index for index, _ in corner)
            weight = functools.reduce(operator.mul, (w for _, w in corner),
                                      creation.asarray(1.0))
            total = total + self.values[indices] * weight[trailing]
        return total

    def _nearest(self, cells: list[Any], fractions: list[Any]) -> Any:
        indices = tuple(where(t <= 0.5, cell, cell + 1) for cell, t in zip(cells, fractions))
        return self.values[indices]


def _flatten(interpolator: RegularGridInterpolator) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    children = (interpolator.grid, interpolator.values, interpolator.fill_value)
    return children, (interpolator.method, interpolator.bounds_error)


def _unflatten(static: tuple[Any, ...], children: Sequence[Any]) -> RegularGridInterpolator:
    grid, values, fill_value = children
    method, bounds_error = static
    return RegularGridInterpolator(grid, values, method, bounds_error, fill_value)


register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)

__all__ = ["RegularGridInterpolator"]
