"""``jnp.pad`` (NumPy's "Padding arrays"): every mode as a jitted ``_pad`` whose
constant mode is one ``lax.pad``; the statistic modes reduce the edges."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core import tree_util as tu
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.slicing import pad_p
from spec._src.numpy import creation, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy.creation import _broadcast_to_unsharded, asarray
from spec._src.numpy.shape import _aval, _ensure, flip, squeeze
from spec._src.numpy.tiling import repeat

_PAD_KWARGS: dict[str, tuple[str, ...]] = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


PadPairs = tuple[tuple[Any, Any], ...]


def _pad_pairs(nvals: Any, nd: int, name: str) -> PadPairs:
    """``pad_width``-style input as one (before, after) pair per axis."""
    if any(isinstance(v, Tracer) for v in tu.tree_leaves(nvals)):
        raise ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: the "
            f"{name} argument of jnp.pad must be concrete")
    try:
        arr = np.asarray(nvals)
    except ValueError:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}") from None
    if arr.dtype == object:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}")
    if arr.shape == (nd, 2):
        return tuple((row[0], row[1]) for row in arr)
    if arr.shape == (1, 2):
        return tuple((arr[0, 0], arr[0, 1]) for _ in range(nd))
    if arr.shape == (2,):
        return tuple((arr[0], arr[1]) for _ in range(nd))
    if arr.shape in ((1,), ()):
        v = arr.reshape(-1)[0]
        return tuple((v, v) for _ in range(nd))
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. "
                     f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _is_dim(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_no_padding(pair: tuple[Any, Any], mode: str) -> None:
    if pair[0] > 0 or pair[1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _lax_pad(x: Any, value: Any, widths: Sequence[tuple[Any, Any, int]]) -> Any:
    """``lax.pad`` keeping the width entries as given: JAX passes NumPy
    int64 widths through, and they are part of the printed params."""
    return pad_p.bind(x, value, padding_config=tuple(tuple(w) for w in widths))


def _pad_constant(x: Any, pw: PadPairs, constant_values: Any) -> Any:
    aval = _aval(x)
    nd = aval.ndim
    cv = L._convert_element_type(constant_values, aval.dtype, aval.weak_type)
    cv_nd = _aval(cv).ndim
    if cv_nd == 0:
        return _lax_pad(x, cv, [(lo, hi, 0) for lo, hi in pw])
    if cv_nd == 1:
        if _aval(cv).shape[-1] == 1:
            return _lax_pad(x, squeeze(cv), [(lo, hi, 0) for lo, hi in pw])
        if _aval(cv).shape[-1] != 2:
            raise ValueError("jnp.pad: constant_values has unsupported shape "
                             f"{_aval(cv).shape}. If the shape is 1D or 2D, the last dimension "
                             "must be of size 1 or 2.")
    cv = _broadcast_to_unsharded(cv, (nd, 2))
    for i in range(nd):
        widths: list[tuple[Any, Any, int]] = [(0, 0, 0)] * nd
        if pw[i][0] != 0:
            widths[i] = (pw[i][0], 0, 0)
            x = _lax_pad(x, cv[i, 0], widths)
        if pw[i][1] != 0:
            widths[i] = (0, pw[i][1], 0)
            x = _lax_pad(x, cv[i, 1], widths)
    return x


def _pad_wrap(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        size = _aval(x).shape[i]
        if size == 0:
            _check_no_padding(pw[i], "wrap")
            continue
        left_reps, left_rem = divmod(int(pw[i][0]), size)
        right_reps, right_rem = divmod(int(pw[i][1]), size)
        parts = []
        if left_rem > 0:
            parts.append(slicing.slice_in_dim(x, size - left_rem, size, axis=i))
        parts += (left_reps + right_reps + 1) * [x]
        if right_rem > 0:
            parts.append(slicing.slice_in_dim(x, 0, right_rem, axis=i))
        x = slicing.concatenate(parts, i)
    return x


def _reflect_side(x: Any, i: int, padding: int, before: bool, mode: str, odd: bool,
                  size: int) -> Any:
    edge = (slicing.slice_in_dim(x, 0, 1, axis=i) if before
            else slicing.slice_in_dim(x, -1, None, axis=i))
    offset = 1 if (mode == "reflect" and size > 1) else 0
    while padding > 0:
        cur = min(padding, size - offset)
        padding -= cur
        if before:
            part = slicing.slice_in_dim(x, offset, offset + cur, axis=i)
        else:
            stop = None if (mode == "symmetric" or size == 1) else -1
            part = slicing.slice_in_dim(x, -(cur + offset), stop, axis=i)
        part = flip(part, axis=i)
        if odd:
            part = 2 * edge - part
            if size > 1:
                edge = (slicing.slice_in_dim(part, 0, 1, axis=i) if before
                        else slicing.slice_in_dim(part, -1, None, axis=i))
        x = slicing.concatenate([part, x] if before else [x, part], i)
    return x


def _pad_reflect(x: Any, pw: PadPairs, mode: str, reflect_type: str) -> Any:
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for i in range(_aval(x).ndim):
        size = _aval(x).shape[i]
        if size == 0:
            _check_no_padding(pw[i], mode)
            continue
        if pw[i][0] == 0 and pw[i][1] == 0:
            continue
        x = _reflect_side(x, i, int(pw[i][0]), True, mode, reflect_type == "odd", size)
        x = _reflect_side(x, i, int(pw[i][1]), False, mode, reflect_type == "odd", size)
    return x


def _pad_edge(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        n = _aval(x).shape[i]
        if n == 0:
            _check_no_padding(pw[i], "edge")
            continue
        before = repeat(slicing.slice_in_dim(x, 0, 1, axis=i), pw[i][0], axis=i)
        after = repeat(slicing.slice_in_dim(x, n - 1, n, axis=i), pw[i][1], axis=i)
        x = slicing.concatenate([before, x, after], i)
    return x


def _pad_stats(x: Any, pw: PadPairs, stat_length: PadPairs | None, mode: str) -> Any:
    stats: dict[str, Callable[..., Any]] = {"maximum": reductions.amax, "minimum": reductions.amin,
                                            "mean": reductions.mean}
    stat = stats[mode]
    for i in range(_aval(x).ndim):
        if stat_length is None:
            s_before = s_after = stat(x, axis=i, keepdims=True)
        else:
            n = _aval(x).shape[i]
            lb, la = (int(v) for v in stat_length[i])
            if lb == 0 or la == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            lb, la = min(lb, n), min(la, n)
            sl_before = slicing.slice_in_dim(x, 0, lb, axis=i)
            sl_after = slicing.slice_in_dim(x, -la, None, axis=i)
            s_before = stat(sl_before, axis=i, keepdims=True)
            s_after = stat(sl_after, axis=i, keepdims=True)
        aval = _aval(x)
        if T.is_int(aval.dtype):
            s_before, s_after = jnp_math.round(s_before), jnp_math.round(s_after)
        s_before = L._convert_element_type(s_before, aval.dtype, aval.weak_type)
        s_after = L._convert_element_type(s_after, aval.dtype, aval.weak_type)
        x = slicing.concatenate([repeat(s_before, pw[i][0], axis=i), x,
                           repeat(s_after, pw[i][1], axis=i)], i)
    return x


def _pad_empty(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        shp = _aval(x).shape
        before = creation.empty_like(x, shape=shp[:i] + (int(pw[i][0]),) + shp[i + 1:])
        after = creation.empty_like(x, shape=shp[:i] + (int(pw[i][1]),) + shp[i + 1:])
        x = slicing.concatenate([before, x, after], i)
    return x


def _pad_fn(array: Any, pad_width: PadPairs, mode: str, constant_values: Any,
            stat_length: Any, end_values: Any, reflect_type: str) -> Any:
    x = L.asarray(array)
    nd = _aval(x).ndim
    if nd == 0:
        return x
    pw = _pad_pairs(pad_width, nd, "pad_width")
    if any(v < 0 for pair in pw for v in pair):
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        return _pad_constant(x, pw, asarray(constant_values))
    if mode == "wrap":
        return _pad_wrap(x, pw)
    if mode in ("symmetric", "reflect"):
        return _pad_reflect(x, pw, mode, reflect_type)
    if mode == "edge":
        return _pad_edge(x, pw)
    if mode in ("maximum", "minimum", "mean"):
        sl = None if stat_length is None else _pad_pairs(stat_length, nd, "stat_length")
        return _pad_stats(x, pw, sl, mode)
    if mode == "empty":
        return _pad_empty(x, pw)
    raise NotImplementedError(f"jnp.pad mode {mode!r} is not specified yet")


@functools.cache
def _pad_jit() -> Callable[..., Any]:
    _pad_fn.__name__ = _pad_fn.__qualname__ = "_pad"
    jitted: Callable[..., Any] = jit(_pad_fn, static_argnums=(1, 2, 4, 5, 6))
    return jitted


def pad(array: Any, pad_width: Any, mode: str | Callable[..., Any] = "constant",
        **kwargs: Any) -> Any:
    """``numpy.pad`` for the modes constant, edge, wrap, reflect, symmetric
    (even/odd), empty, maximum, minimum and mean; a visible ``_pad`` jit as in
    JAX, whose constant mode is one ``lax.pad``."""
    arr = _ensure("pad", array)
    pw = _pad_pairs(pad_width, _aval(arr).ndim, "pad_width")
    if pw and not all(_is_dim(lo) and _is_dim(hi) for lo, hi in pw):
        raise TypeError("`pad_width` must be of integral type.")
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not specified yet")
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode in ("linear_ramp", "median"):
        raise NotImplementedError(f"jnp.pad mode {mode!r} is not specified yet")
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
        stat_length = _hashable(stat_length)
    return _pad_jit()(arr, pw, mode, kwargs.get("constant_values", 0), stat_length,
                      _hashable(kwargs.get("end_values", 0)), kwargs.get("reflect_type", "even"))


def _hashable(v: Any) -> Any:
    """Static jit arguments must hash: nested sequences become tuples."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(_hashable(e) for e in v)
    return v


__all__ = [
    "pad",
]
