"""Windowed reductions: ``reduce_window_sum``, ``reduce_window_max`` and
``reduce_window_min``, and the public ``lax.reduce_window``.

Each reduces every window of the operand after base dilation (``b - 1``
copies of the init value between neighbours) and edge padding (negative
pads crop): window ``o`` along a dimension covers the positions
``o * stride + k * window_dilation`` for ``k < window``. The output size is
``max(0, (padded - dilated_window) // stride + 1)``.

Constraint numbering (cited in errors, SPEC.md):

- C1 window_dimensions and window_strides are sequences of positive ints,
  base_dilation and window_dilation of non-negative ints (TypeError).
- C2 one window dimension per operand axis; the other three sequences as
  long as window_dimensions (TypeError).
- C3 reduce_window_sum: the operand has a number dtype (TypeError).

Autodiff: the sum is linear; its transpose pads the cotangent (interior
``stride - 1``, edges from the convolution VJP's padding) and sums windows
of it again, strided by the base dilation, as JAX's rule does. max/min
carry the tangent of the element JAX's gradient picks in each window: the
first extremum in row-major window order, NaNs as XLA's select-and-scatter
with ``ge``/``le`` treats them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from spec._src.core import types as T
from spec._src.core.interpreter import Tracer, canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import defjvp, linear_jvp, linear_transpose
from spec._src.interpreters.batching import AxisData, BatchDim
from spec._src.interpreters.spmd import Dist
from spec._src.lax import elementwise as E
from spec._src.lax import sharding_kit as SK
from spec._src.lax.conv import padtype_to_pads
from spec._src.lax.indexing import GatherDimensionNumbers, gather
from spec._src.lax.reductions import argmax, argmin, reduce_max, reduce_sum
from spec._src.lax.shaping import (
    _varying_out_shape,
    asarray,
    broadcasted_iota,
    expand_dims,
    full,
    full_like,
    reshape,
)
from spec._src.lax.slicing import pad, pad_p
from spec._src.lowering.emitter import LoweringContext

Pads = tuple[tuple[int, int], ...]
_FIELDS = ("window_dimensions", "window_strides", "padding", "base_dilation",
           "window_dilation")


# ------------------------------------------------------------------ shapes

def _dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[Sequence[int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None
                              ) -> tuple[int, ...]:
    """The output shape of a windowed reduction (JAX's helper of this name)."""
    shape = [int(d) for d in operand_shape]
    window = [int(w) for w in window_dimensions]
    if base_dilation is not None:
        shape = [_dilate(d, int(b)) for d, b in zip(shape, base_dilation)]
    if window_dilation is not None:
        window = [_dilate(w, int(r)) for w, r in zip(window, window_dilation)]
    padded = [d + int(lo) + int(hi) for d, (lo, hi) in zip(shape, padding)]
    return tuple(max((p - w) // int(s) + 1, 0)
                 for p, w, s in zip(padded, window, window_strides))


# ------------------------------------------------------------------ typing

def _check_seq(name: str, arg: str, obj: Any, positive: bool) -> None:
    require(isinstance(obj, (tuple, list, np.ndarray)), name, "C1",
            f"reduce_window {arg} must be of type tuple/list/ndarray, got {type(obj)}.")
    require(all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in obj),
            name, "C1", f"reduce_window {arg} must have every element be an integer type, "
            f"got {tuple(map(type, obj))}.")
    low, what = (1, "strictly positive") if positive else (0, "nonnegative")
    require(all(d >= low for d in obj), name, "C1",
            f"reduce_window {arg} must have every element be {what}, got {obj}.")


def _check_lengths(name: str, x: ArrayType, params: dict[str, Any]) -> None:
    window = params["window_dimensions"]
    require(x.ndim == len(window), name, "C2",
            f"reduce_window got the wrong number of window_dimensions for operand: got "
            f"operand shape {x.shape} with window_dimensions {window}.")
    for field, words in (("window_strides", "window_strides"),
                         ("base_dilation", "base_dilation"),
                         ("window_dilation", "window_dilation")):
        require(len(params[field]) == len(window), name, "C2",
                f"reduce_window got inconsistent {words} and window_dimensions: got "
                f"{words} {params[field]} and window_dimensions {window}.")


def _window_type(name: str, numbers_only: bool) -> Callable[..., list[ArrayType]]:
    def typing(x: ArrayType, **params: Any) -> list[ArrayType]:
        if numbers_only:
            require(x.dtype != T.bool_, name, "C3",
                    f"operand to {name} must have a number dtype, got {x.dtype.name}")
        _check_seq(name, "window_dimensions", params["window_dimensions"], True)
        _check_seq(name, "window_strides", params["window_strides"], True)
        _check_seq(name, "base_dilation", params["base_dilation"], False)
        _check_seq(name, "window_dilation", params["window_dilation"], False)
        _check_lengths(name, x, params)
        shape = reduce_window_shape_tuple(x.shape, *(params[f] for f in _FIELDS))
        return [ArrayType(shape, x.dtype, x.weak_type)]
    return typing


# -------------------------------------------------------------------- impl

def _identity(kind: str, dtype: np.dtype[Any]) -> np.ndarray:
    """The init value each reduction starts from and pads with."""
    dt = np.dtype(dtype)
    if kind == "sum":
        return np.zeros((), dt)
    big = kind == "min"
    if dt == np.bool_:
        return np.asarray(big)
    if dt.kind in "fc" or T.is_inexact(dt):
        return np.asarray(np.inf if big else -np.inf, dt)
    info = np.iinfo(dt)
    return np.asarray(info.max if big else info.min, dt)


def _dilated_and_padded(x: np.ndarray, fill: np.ndarray, padding: Pads,
                        base_dilation: Sequence[int]) -> np.ndarray:
    """x with ``b - 1`` fills between neighbours and padded (or cropped) edges."""
    dil = [_dilate(d, b) for d, b in zip(x.shape, base_dilation)]
    out_shape = [max(lo + d + hi, 0) for d, (lo, hi) in zip(dil, padding)]
    out = np.full(out_shape, fill, x.dtype)
    dilated = np.full(dil, fill, x.dtype)
    dilated[tuple(slice(None, None, b) for b in base_dilation)] = x
    dst, src = [], []
    for d, (lo, _), n in zip(dil, padding, out_shape):
        start, stop = max(lo, 0), min(lo + d, n)
        dst.append(slice(start, max(stop, start)))
        src.append(slice(start - lo, max(stop, start) - lo))
    out[tuple(dst)] = dilated[tuple(src)]
    return out


def _windows(x: np.ndarray, fill: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """Every window as the trailing axis: shape ``out_shape + (window size,)``,
    the window's elements in row-major order."""
    window, strides = params["window_dimensions"], params["window_strides"]
    wdil = params["window_dilation"]
    padded = _dilated_and_padded(x, fill, params["padding"], params["base_dilation"])
    spans = tuple(_dilate(w, r) for w, r in zip(window, wdil))
    view = sliding_window_view(padded, spans)
    picked = view[tuple(slice(None, None, s) for s in strides)
                  + tuple(slice(None, None, r) for r in wdil)]
    return picked.reshape(picked.shape[:x.ndim] + (math.prod(window),))


def _window_impl(kind: str, op: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    def impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
        (out,) = _TYPES[kind](ArrayType(x.shape, x.dtype), **params)
        init = _identity(kind, x.dtype)
        if math.prod(out.shape) == 0:
            return [np.full(out.shape, init, x.dtype)]
        patches = _windows(x, init, params)
        acc = np.full(out.shape, init, x.dtype)
        # Folded from the init value one window element at a time, as XLA's
        # reduce_window applies its computation: float sums round as XLA's do.
        with np.errstate(all="ignore"):
            for k in range(patches.shape[-1]):
                acc = op(acc, patches[..., k]).astype(x.dtype)
        return [acc]
    return impl


# --------------------------------------------------------------- autodiff

def _vjp_lhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                     out_shape: Sequence[int], padding: Pads, base_dilation: Sequence[int],
                     window_dilation: Sequence[int]) -> list[tuple[Any, Any]]:
    """The edge padding of the strided cotangent whose windows sum back to
    the operand's positions (the convolution input-gradient's padding).
    JAX computes it with NumPy, so its entries are np.int64, as the jaxpr
    of a gradient prints them."""
    def dilated(sizes: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
        return np.array([_dilate(int(d), int(r)) for d, r in zip(sizes, dilation)], np.int64)
    spans = dilated(window, window_dilation)
    before = spans - np.array([lo for lo, _ in padding], np.int64) - 1
    after = dilated(in_shape, base_dilation) + spans - 1 - dilated(out_shape, strides) - before
    return list(zip(before, after))


def _sum_transpose(ct: Any, operand: Any, *, window_dimensions: tuple[int, ...],
                   window_strides: tuple[int, ...], padding: Pads,
                   base_dilation: tuple[int, ...], window_dilation: tuple[int, ...]) -> Any:
    in_shape = operand.aval.shape
    ct_aval = canonical_aval_of(ct)
    pads = _vjp_lhs_padding(in_shape, window_dimensions, window_strides, ct_aval.shape,
                            padding, base_dilation, window_dilation)
    # Bound directly: lax.pad would turn the np.int64 pads into ints.
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
    spread = pad_p.bind(ct, E.const_like(ct, 0), padding_config=config)
    return reduce_window_sum_p.bind(
        spread, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * len(in_shape), base_dilation=(1,) * len(in_shape),
        window_dilation=window_dilation)


def _flat_window_indices(padded_shape: Sequence[int], out_shape: Sequence[int],
                         params: dict[str, Any]) -> np.ndarray:
    """Row-major positions in the padded operand of every window's
    elements: shape ``out_shape + (window size,)``."""
    n = len(out_shape)
    window = params["window_dimensions"]
    flat_strides = np.cumprod((1,) + tuple(padded_shape[:0:-1]))[::-1]
    total = np.zeros(tuple(out_shape) + tuple(window), np.int64)
    for i in range(n):  # one term per axis, each over all windows at once
        pos = (np.arange(out_shape[i])[:, None] * params["window_strides"][i]
               + np.arange(window[i])[None, :] * params["window_dilation"][i])
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = out_shape[i], window[i]
        total = total + pos.reshape(shape) * int(flat_strides[i])
    return total.reshape(tuple(out_shape) + (-1,))


def _patches(v: Any, fill: Any, idx: np.ndarray, params: dict[str, Any]) -> Any:
    """``v`` dilated and padded with ``fill``, gathered at ``idx``."""
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(params["padding"],
                                                     params["base_dilation"])]
    padded = pad(v, fill, config)
    flat = reshape(padded, (math.prod(canonical_aval_of(padded).shape),))
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                   start_index_map=(0,))
    return gather(flat, asarray(idx.astype(np.int32)[..., None]), dnums, (1,))


def _selected(xs: Any, init: Any, pick: Callable[..., Any], axis: int) -> Any:
    """Per window, the element JAX's gradient picks: XLA's select-and-scatter
    folds ``a if ge(a, b) else b`` (``le`` for min) along the window, so the
    first extremum wins, a NaN is taken when reached and given up for the
    next element: the first extremum after the window's last NaN, or that
    NaN when it ends the window."""
    shape = canonical_aval_of(xs).shape
    k = broadcasted_iota(np.int32, shape, axis)
    last_nan = reduce_max(E.select(E.ne(xs, xs), k, full_like(k, -1)), (axis,))
    after = E.gt(k, expand_dims(last_nan, (axis,)))
    best = pick(E.select(after, xs, full_like(xs, init)), axis, np.int32)
    following = E.min(E.add(last_nan, E.const_like(last_nan, 1)),
                      E.const_like(last_nan, shape[axis] - 1))
    return E.select(E.gt(best, last_nan), best, following)


def _chooser_jvp(kind: str) -> Callable[..., Any]:
    pick = argmax if kind == "max" else argmin

    def jvp(g: Any, operand: Any, **params: Any) -> Any:
        x = canonical_aval_of(operand)
        (out,) = _TYPES[kind](x, **params)
        g_dtype = canonical_aval_of(g).dtype
        if math.prod(out.shape) == 0:
            return full(out.shape, 0, g_dtype)
        padded_shape = [max(lo + _dilate(d, b) + hi, 0) for d, (lo, hi), b
                        in zip(x.shape, params["padding"], params["base_dilation"])]
        idx = _flat_window_indices(padded_shape, out.shape, params)
        init = asarray(_identity(kind, x.dtype))
        xs = _patches(operand, init, idx, params)
        gs = _patches(g, E.const_like(g, 0), idx, params)
        where = E.eq(broadcasted_iota(np.int32, idx.shape, out.ndim),
                     expand_dims(_selected(xs, init, pick, out.ndim), (out.ndim,)))
        return reduce_sum(E.select(where, gs, full_like(gs, 0)), (out.ndim,))
    return jvp


# --------------------------------------------------------------- batching

def _window_batch(kind: str) -> Callable[..., tuple[list[Any], list[BatchDim]]]:
    def batch(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
              ) -> tuple[list[Any], list[BatchDim]]:
        bdim = dims[0]
        assert bdim is not None
        trivial: dict[str, Any] = {"window_dimensions": 1, "window_strides": 1,
                                   "padding": (0, 0), "base_dilation": 1, "window_dilation": 1}
        grown = {f: tuple(params[f][:bdim]) + (trivial[f],) + tuple(params[f][bdim:])
                 for f in _FIELDS}
        return [_PRIMS[kind].bind(args[0], **grown)], [bdim]
    return batch


# ------------------------------------------------------ sharding, per device
# JAX's rule: the operand's partitions, as long as every resized sharded
# dimension still splits evenly. Per device, a sharded dimension whose
# windows are trivial (size, stride and dilations 1, no padding) reduces
# locally; otherwise the operand is gathered first.

def _window_parts(name: str) -> Callable[..., list[Any]]:
    def parts(mesh: Any, x: ArrayType, **params: Any) -> list[Any]:
        shape = reduce_window_shape_tuple(x.shape, *(params[f] for f in _FIELDS))
        return [_varying_out_shape(name, mesh, x, shape)]
    return parts


def _trivial_on_sharded(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    for d in PD.sharded_dims(args[0].aval):
        if (params["window_dimensions"][d], params["window_strides"][d],
                tuple(params["padding"][d]), params["base_dilation"][d],
                params["window_dilation"][d]) != (1, 1, (0, 0), 1, 1):
            return False
    return True


# ---------------------------------------------------------------- lowering

_HLO_OPS = {"sum": "stablehlo.add", "max": "stablehlo.maximum", "min": "stablehlo.minimum"}


def _array_attr(values: Sequence[int]) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def _window_lowering(kind: str) -> Callable[..., list[str]]:
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        aval = in_avals[0]
        s = ArrayType((), aval.dtype)
        start = ctx.broadcast(ctx.constant(_identity(kind, aval.dtype), s), s, s, ())
        pads = [[int(lo), int(hi)] for lo, hi in params["padding"]]
        padding = "0" if not any(p for pair in pads for p in pair) else str(pads)
        props = (f"base_dilations = {_array_attr(params['base_dilation'])}, padding = "
                 f"dense<{padding}> : tensor<{aval.ndim}x2xi64>, window_dilations = "
                 f"{_array_attr(params['window_dilation'])}, window_dimensions = "
                 f"{_array_attr(params['window_dimensions'])}, window_strides = "
                 f"{_array_attr(params['window_strides'])}")

        def combine(c: LoweringContext, args: list[str]) -> list[str]:
            return [c.op(_HLO_OPS[kind], args, [s, s], s)]
        region = ctx.region([s, s], [s], combine)
        return ctx.generic_op("stablehlo.reduce_window", [operands[0], start], [aval, s],
                              out_avals, properties=props, regions=[region])
    return rule


# ------------------------------------------------------------ declarations

_TYPES = {"sum": _window_type("reduce_window_sum", True),
          "max": _window_type("reduce_window_max", False),
          "min": _window_type("reduce_window_min", False)}
_PRIMS: dict[str, Any] = {}


def _declare(kind: str, op: Callable[..., Any], jvp: Any, transpose: Any) -> Any:
    name = f"reduce_window_{kind}"
    prim = declare(
        name, typing=_TYPES[kind], impl=_window_impl(kind, op), jvp=jvp,
        transpose=transpose, batch=_window_batch(kind),
        sharding=SK.section(name, _window_parts(name)),
        per_device=from_primitive(lambda p: PD.guarded(p, _trivial_on_sharded, PD.local(p))),
        lowering=_window_lowering(kind))
    _PRIMS[kind] = prim
    return prim


reduce_window_sum_p = _declare("sum", np.add, linear_jvp(), linear_transpose(_sum_transpose))
reduce_window_max_p = _declare("max", np.maximum, defjvp(_chooser_jvp("max")),
                               not_applicable("reduce_window_max is not linear"))
reduce_window_min_p = _declare("min", np.minimum, defjvp(_chooser_jvp("min")),
                               not_applicable("reduce_window_min is not linear"))


# ------------------------------------------------------------- public API

def _monoid_kind(computation: Any, init_value: Any, dtype: Any) -> str | None:
    """The primitive for a monoid computation started from its identity
    (a concrete scalar init): JAX's choice of reduce_window_{sum,max,min}."""
    kinds = {id(E.add): "sum", id(E.max): "max", id(E.min): "min"}
    kind = kinds.get(id(computation))
    if kind is None or isinstance(init_value, Tracer):
        return None
    value = np.asarray(init_value)
    if value.shape != ():
        return None
    return kind if bool(value == _identity(kind, np.dtype(dtype))) else None


def reduce_window(operand: Any, init_value: Any, computation: Callable[..., Any],
                  window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce every (padded, dilated) window of ``operand`` with ``computation``.

    ``lax.add``, ``lax.max`` and ``lax.min`` started from their identity bind
    reduce_window_sum/max/min; other computations are not specified."""
    aval = canonical_aval_of(operand)
    window = tuple(window_dimensions)
    if isinstance(padding, str):
        spans = window if window_dilation is None else tuple(
            _dilate(int(w), int(r)) for w, r in zip(window, window_dilation))
        pads = tuple(padtype_to_pads(aval.shape, spans, window_strides or [], padding))
    else:
        pads = tuple((lo, hi) for lo, hi in padding)
    ones = (1,) * len(window)
    params = dict(window_dimensions=window,
                  window_strides=ones if window_strides is None else tuple(window_strides),
                  padding=pads,
                  base_dilation=ones if base_dilation is None else tuple(base_dilation),
                  window_dilation=ones if window_dilation is None else tuple(window_dilation))
    kind = _monoid_kind(computation, init_value, aval.dtype)
    if kind is None:
        raise NotImplementedError(
            f"reduce_window with computation {computation!r} and init_value {init_value!r} "
            "is not specified: only lax.add, lax.max and lax.min from their identity are")
    return _PRIMS[kind].bind(operand, **params)


__all__ = ["reduce_window", "reduce_window_max_p", "reduce_window_min_p",
           "reduce_window_shape_tuple", "reduce_window_sum_p"]
