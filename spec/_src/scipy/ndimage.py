"""``jax.scipy.ndimage.map_coordinates``: an array sampled at fractional coordinates by
nearest (order 0) or multilinear (order 1) interpolation, out-of-range indices folded back
by the boundary mode, as JAX computes it (one gather per corner of the interpolation cell,
weighted and summed)."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.lax import elementwise as lax_e
from spec._src.numpy import creation
from spec._src.numpy.math import abs as jnp_abs
from spec._src.numpy.math import clip, floor, floor_divide
from spec._src.scipy import numpy_names as jnp


def _mirror(index: Any, size: int) -> Any:
    s = size - 1
    return jnp_abs((index + s) % (2 * s) - s)


def _reflect(index: Any, size: int) -> Any:
    return floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away_from_zero(a: Any) -> Any:
    return a if T.is_int(a.dtype) else lax_e.round(a)


def _nearest(coordinate: Any) -> list[tuple[Any, Any]]:
    index = _round_half_away_from_zero(coordinate).astype(np.int32)
    return [(index, coordinate.dtype.type(1))]


def _linear(coordinate: Any) -> list[tuple[Any, Any]]:
    lower = floor(coordinate)
    upper_weight = coordinate - lower
    lower_weight = 1 - upper_weight
    index = lower.astype(np.int32)
    return [(index, lower_weight), (index + 1, upper_weight)]


def _map_coordinates_fn(input: Any, coordinates: Sequence[Any], order: int, mode: str,
                        cval: Any) -> Any:
    array = creation.asarray(input)
    coords = [creation.asarray(c) for c in coordinates]
    cval = creation.asarray(cval, array.dtype)
    if len(coordinates) != array.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {array.ndim}")
    fix_index = _INDEX_FIXERS.get(mode)
    if fix_index is None:
        raise NotImplementedError(
            f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
            f"supported modes are {set(_INDEX_FIXERS)}.")
    if order == 0:
        nodes_of: Callable[[Any], list[tuple[Any, Any]]] = _nearest
    elif order == 1:
        nodes_of = _linear
    else:
        raise NotImplementedError(
            "jax.scipy.ndimage.map_coordinates currently requires order<=1")
    per_axis = []
    for coordinate, size in zip(coords, array.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            # Only 'constant' looks past the edge (to cval); other modes fold the index in.
            valid: Any = ((0 <= index) & (index < size)) if mode == "constant" else True
            nodes.append((fix_index(index, size), valid, weight))
        per_axis.append(nodes)
    contributions = []
    for corner in itertools.product(*per_axis):
        indices, validities, weights = zip(*corner)
        if all(v is True for v in validities):
            value = array[indices]
        else:
            value = jnp.where(functools.reduce(operator.and_, validities), array[indices], cval)
        contributions.append(functools.reduce(operator.mul, weights) * value)
    result = sum(contributions[1:], contributions[0])
    if T.is_int(array.dtype):
        result = _round_half_away_from_zero(result)
    return result.astype(array.dtype)


_map_coordinates_fn.__name__ = _map_coordinates_fn.__qualname__ = "_map_coordinates"
_map_coordinates: Any = jit(_map_coordinates_fn, static_argnums=(2, 3, 4))


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant",
                    cval: Any = 0.0) -> Any:
    return _map_coordinates(input, coordinates, order, mode, cval)


__all__ = ["map_coordinates"]
