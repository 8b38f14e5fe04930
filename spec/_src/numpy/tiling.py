"""``jnp.tile`` and ``jnp.repeat`` (NumPy's "Tiling arrays"); a traced ``repeats``
goes through the scatter/cumsum/take sequence JAX uses."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.core.array import Array
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, indexing, reductions
from spec._src.numpy.creation import _broadcast_to_unsharded
from spec._src.numpy.shape import _aval, _check_arraylike, _ensure, _jitted, _reshape_method, ravel


def tile(A: Any, reps: Any) -> Any:
    arr = _ensure("tile", A)
    try:
        reps_t = tuple(operator.index(r) for r in reps)
    except TypeError:
        reps_t = (operator.index(reps),)
    nd = _aval(arr).ndim
    reps_t = (1,) * (nd - len(reps_t)) + reps_t
    if len(reps_t) > nd:
        arr = L.expand_dims(arr, tuple(range(len(reps_t) - nd)))
    return slicing.tile(arr, reps_t)


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Any:
    """Repeat elements along ``axis``. A static scalar ``repeats`` broadcasts
    and reshapes; an array ``repeats`` (concrete, or traced together with a
    static ``total_repeat_length``) goes through JAX's scatter/cumsum/take
    sequence, which pads with the last element up to ``total_repeat_length``
    or truncates to it."""
    _check_arraylike("repeat", a, repeats)
    arr = L.asarray(a)
    if axis is None:
        arr = ravel(arr)
        axis = 0
    axis = operator.index(axis)
    if total_repeat_length is None:
        if isinstance(repeats, Tracer):
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: "
                f"{repeats.aval}\nWhen jit-compiling jnp.repeat, the total number of repeats "
                "must be static. To fix this, either specify a static value for `repeats`, "
                "or pass a static value to `total_repeat_length`.")
        if np.ndim(repeats) == 0 and _aval(arr).ndim != 0:
            return _repeat_scalar(arr, operator.index(np.asarray(repeats).item()), axis)
        reps: Any = np.ravel(np.asarray(repeats))
        if _aval(arr).ndim != 0:
            reps = _np_broadcast_repeats(reps, _aval(arr).shape[axis])
        total = int(np.sum(reps))
    else:
        total = operator.index(total_repeat_length)
        reps = ravel(L.asarray(repeats))
        if _aval(arr).ndim != 0:
            reps = _broadcast_to_unsharded(reps, (_aval(arr).shape[axis],))
    return _repeat_general(arr, reps, axis, total)


def _np_broadcast_repeats(reps: np.ndarray, n: int) -> np.ndarray:
    try:
        return np.broadcast_to(reps, (n,))
    except ValueError:
        raise ValueError(f"jnp.repeat: repeats of shape {reps.shape} cannot be broadcast to "
                         f"the repeated axis of size {n}") from None


def _repeat_scalar(arr: Any, n: int, axis: int) -> Any:
    shp = _aval(arr).shape
    ax = canonicalize_axis(axis, len(shp))
    aux = list(shp)
    aux.insert(ax + 1, n)
    out = L.broadcast_in_dim(arr, tuple(aux), [i for i in range(len(aux)) if i != ax + 1])
    result = list(shp)
    result[ax] *= n
    return _reshape_method(out, tuple(result))


def _repeat_general(arr: Any, reps: Any, axis: int, total: int) -> Any:
    shp = _aval(arr).shape
    if not shp:
        if np.shape(reps) == (1,):
            return creation.full([total], arr)
        raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                         "values of the parameter `repeats`.")
    ax = canonicalize_axis(axis, len(shp))
    if total == 0:
        result = list(shp)
        result[ax] = 0
        return _reshape_method(creation.array([], dtype=_aval(arr).dtype), tuple(result))
    if shp[ax] == 0:
        return arr
    # Each element's first output position is the exclusive cumsum of repeats;
    # marking those positions and cumsumming again gives, for every output
    # position, the index of the element it copies.
    exclusive = _jitted("_roll_static")(reps).at[0].set(0)
    starts = reductions.cumsum(exclusive)
    marks = creation.zeros([total], dtype="int32").at[starts].add(1)
    gather = reductions.cumsum(marks) - 1
    return indexing.take(arr, gather, axis=ax)


def _repeat_method(self: Any, repeats: Any, axis: int | None = None, *,
                   total_repeat_length: int | None = None) -> Any:
    return repeat(self, repeats, axis, total_repeat_length=total_repeat_length)



def _install_array_methods() -> None:
    """``repeat`` as a method on both Array and Tracer, as the other shape methods."""
    for cls in (Array, Tracer):
        setattr(cls, "repeat", _repeat_method)


_install_array_methods()

__all__ = [
    "repeat", "tile",
]
