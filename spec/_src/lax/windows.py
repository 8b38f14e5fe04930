"""Windowed reductions: ``reduce_window_sum``, ``reduce_window_max`` and
``reduce_window_min``, the general ``reduce_window``, the pooling gradients
``select_and_gather_add`` and ``select_and_scatter_add``, XLA's
``select_and_scatter``, and the public ``lax.reduce_window``.

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
- C4-C8 reduce_window: at least one operand (ValueError); each init value of
  its operand's dtype; scalar init values; operands of one shape; the
  computation maps 2n scalars to n of the operands' dtypes (TypeError).
- C9 select_and_*: select_prim is ge or le (ValueError).
- C10 select_and_gather_add: tangents and operand of one shape (TypeError).
- C11 select_and_scatter_add: the source has the operand's window shape.
- C12 select_and_scatter: source of the window shape and the operand's
  dtype, a scalar init value of that dtype.

Autodiff: the sum is linear; its transpose pads the cotangent (interior
``stride - 1``, edges from the convolution VJP's padding) and sums windows
of it again, strided by the base dilation, as JAX's rule does. max/min's
JVP is ``select_and_gather_add`` (the tangent of the element the fold
``a if ge(a, b) else b`` keeps, ``le`` for min), whose transpose is
``select_and_scatter_add``: JAX's equations. The general reduce_window's
JVP is one reduce_window of operands and tangents with the computation's
JVP.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.interpreter import (
    Jaxpr,
    Tracer,
    canonical_aval_of,
    eval_jaxpr,
    from_primitive,
    not_applicable,
)
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import ad
from spec._src.interpreters.ad_util import Zero, defjvp, instantiate, linear_jvp, linear_transpose
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front
from spec._src.interpreters.spmd import Dist
from spec._src.lax import elementwise as E
from spec._src.lax import sharding_kit as SK
from spec._src.lax.conv import padtype_to_pads
from spec._src.lax.indexing import apply_in_order, on_all
from spec._src.lax.reductions import computation_jaxpr, require_scalar_computation
from spec._src.lax.shaping import _varying_out_shape, asarray, full
from spec._src.lax.slicing import pad, pad_p
from spec._src.lax.slicing import slice as slice_op
from spec._src.lowering import rules as LR
from spec._src.lowering.emitter import LoweringContext, lower_body
from spec._src.lowering.transcendental import lower_fun

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
    if T.is_complex(dt):
        return np.asarray(np.inf if big else -np.inf, dt)
    # Floats without infinities start from their largest finite magnitude.
    return LR.highest(dt) if big else LR.lowest(dt)


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
    # Strided views go through the array interface, whose type string some
    # ml_dtypes types (float8_e5m2: '<f1') do not survive: view raw bytes.
    raw = padded.view(np.dtype((np.void, padded.dtype.itemsize)))
    view = sliding_window_view(raw, spans).view(padded.dtype)
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


def _chooser_jvp(select_prim: Any) -> Callable[..., Any]:
    """JAX's rule: the tangent of the element ``select_prim`` (``ge`` for max,
    ``le`` for min) keeps in each window, by ``select_and_gather_add``."""
    def jvp(g: Any, operand: Any, **params: Any) -> Any:
        return select_and_gather_add_p.bind(g, operand, select_prim=select_prim, **params)
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
    """Every operand's sharded axes have trivial windows (the init values are
    scalars, with none)."""
    for a in args:
        full_params = _full_params(params, a.aval.ndim)
        for d in PD.sharded_dims(a.aval):
            if (full_params["window_dimensions"][d], full_params["window_strides"][d],
                    tuple(full_params["padding"][d]), full_params["base_dilation"][d],
                    full_params["window_dilation"][d]) != (1, 1, (0, 0), 1, 1):
                return False
    return True


# ---------------------------------------------------------------- lowering

_HLO_OPS = {"sum": "stablehlo.add", "max": "stablehlo.maximum", "min": "stablehlo.minimum"}


def _array_attr(values: Sequence[int]) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def _padding_attr(padding: Pads, ndim: int) -> str:
    pads = [[int(lo), int(hi)] for lo, hi in padding]
    text = "0" if not any(p for pair in pads for p in pair) else str(pads)
    return f"dense<{text}> : tensor<{ndim}x2xi64>"


def _window_properties(ndim: int, params: dict[str, Any]) -> str:
    return (f"base_dilations = {_array_attr(params['base_dilation'])}, padding = "
            f"{_padding_attr(params['padding'], ndim)}, window_dilations = "
            f"{_array_attr(params['window_dilation'])}, window_dimensions = "
            f"{_array_attr(params['window_dimensions'])}, window_strides = "
            f"{_array_attr(params['window_strides'])}")


def _window_lowering(kind: str) -> Callable[..., list[str]]:
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        aval = in_avals[0]
        s = ArrayType((), aval.dtype)
        start = ctx.broadcast(ctx.constant(_identity(kind, aval.dtype), s), s, s, ())
        props = _window_properties(aval.ndim, params)

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
reduce_window_max_p = _declare("max", E.xla_max, defjvp(_chooser_jvp(E.ge_p)),
                               not_applicable("reduce_window_max is not linear"))
reduce_window_min_p = _declare("min", E.xla_min, defjvp(_chooser_jvp(E.le_p)),
                               not_applicable("reduce_window_min is not linear"))


# ------------------------------------------------- a general computation

def _full_params(params: dict[str, Any], ndim: int) -> dict[str, Any]:
    """The five window fields, dilations of 1 where ``params`` has none."""
    ones = (1,) * ndim
    return {f: params.get(f, ones) for f in _FIELDS}


def _fold_windows(operands: Sequence[np.ndarray], inits: Sequence[np.ndarray],
                  combine: Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]],
                  params: dict[str, Any]) -> list[np.ndarray]:
    """Every window of the operands folded from the init values one window
    element at a time, in row-major window order as XLA's CPU backend folds:
    ``combine(accumulators, elements)`` works on all windows at once. Like
    XLA's CPU backend, the fold passes over padding and base-dilation holes
    (the init value is folded in once, not once per such position)."""
    shape = reduce_window_shape_tuple(operands[0].shape, *(params[f] for f in _FIELDS))
    accs = [np.full(shape, i, o.dtype) for o, i in zip(operands, inits)]
    if math.prod(shape) == 0:
        return accs
    patches = [_windows(o, np.asarray(i, o.dtype), params) for o, i in zip(operands, inits)]
    inside = _windows(np.ones(operands[0].shape, bool), np.asarray(False), params)
    for k in range(patches[0].shape[-1]):
        folded = combine(accs, [p[..., k] for p in patches])
        accs = [np.where(inside[..., k], f, a) for f, a in zip(folded, accs)]
    return accs


def _generic_type(*avals: ArrayType, jaxpr: Jaxpr, consts: tuple[Any, ...],
                  **params: Any) -> list[ArrayType]:
    n = len(avals) // 2
    ops, inits = list(avals[:n]), list(avals[n:])
    require(n > 0 and len(avals) == 2 * n, "reduce_window", "C4",
            "reduce_window must have at least one operand.", ValueError)
    require(all(o.dtype == i.dtype for o, i in zip(ops, inits)), "reduce_window", "C5",
            "reduce_window got inconsistent dtypes for operands and init_values: got operand "
            f"dtypes {[o.dtype for o in ops]} and init_value dtypes {[i.dtype for i in inits]}.")
    require(all(i.shape == () for i in inits), "reduce_window", "C6",
            "reduce_window expected init_values to be scalars but init_values have shapes "
            f"{[i.shape for i in inits]}.")
    require(all(o.shape == ops[0].shape for o in ops), "reduce_window", "C7",
            f"reduce_window operands must share one shape, got {[o.shape for o in ops]}.")
    require_scalar_computation("reduce_window", "C8", ops, jaxpr)
    (out,) = _window_type("reduce_window", False)(ops[0], **params)
    return [ArrayType(out.shape, o.dtype) for o in ops]


def _generic_impl(*values: np.ndarray, jaxpr: Jaxpr, consts: tuple[Any, ...],
                  **params: Any) -> list[np.ndarray]:
    n = len(values) // 2
    ops, inits = values[:n], values[n:]
    shape = reduce_window_shape_tuple(ops[0].shape, *(params[f] for f in _FIELDS))
    size = math.prod(shape)
    if size == 0:
        return [np.full(shape, i, o.dtype) for o, i in zip(ops, inits)]
    run = on_all(jaxpr, size)

    def combine(accs: list[np.ndarray], elems: list[np.ndarray]) -> list[np.ndarray]:
        return [o.reshape(shape).astype(a.dtype, copy=False)
                for o, a in zip(run(*accs, *elems), accs)]
    return _fold_windows(ops, inits, combine, params)


def _generic_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: Jaxpr,
                 consts: tuple[Any, ...], **params: Any) -> tuple[list[Any], list[Any]]:
    """JAX's rule: one reduce_window of the operands and their tangents, from
    the init values and zeros, whose computation is the JVP of the original."""
    n = len(primals) // 2
    if any(type(t) is not Zero for t in tangents[n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
    t_ops = [instantiate(t) for t in tangents[:n]]
    t_inits = [np.zeros((), canonical_aval_of(i).dtype) for i in primals[n:]]

    def jvp_computation(left: list[Any], right: list[Any]) -> list[Any]:
        outs, t_outs = ad.jvp_flat(lambda *a: eval_jaxpr(jaxpr, jaxpr.consts, *a),
                                   [*left[:n], *right[:n]], [*left[n:], *right[n:]],
                                   named=False)
        return [*outs, *(instantiate(t) for t in t_outs)]

    outs = reduce_window([*primals[:n], *t_ops], [*primals[n:], *t_inits], jvp_computation,
                         **params)
    return list(outs[:n]), list(outs[n:])


def _generic_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *, jaxpr: Jaxpr,
                   consts: tuple[Any, ...], **params: Any) -> tuple[list[Any], list[BatchDim]]:
    """The batch axis moved to the front of every operand, a trivial window
    dimension there; batched init values are refused, as by JAX."""
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for initial "
                                  "values")
    ops = [bdim_at_front(o, d, axis.size) for o, d in zip(args[:n], dims[:n])]
    outs = reduce_window_p.bind(*ops, *args[n:], jaxpr=jaxpr, consts=consts,
                                **_grown_at_front(params))
    return list(outs), [0] * n


def _grown_at_front(params: dict[str, Any]) -> dict[str, Any]:
    trivial: dict[str, Any] = {"window_dimensions": 1, "window_strides": 1,
                               "padding": (0, 0), "base_dilation": 1, "window_dilation": 1}
    return {f: (trivial[f],) + tuple(v) for f, v in params.items() if f in trivial}


def _generic_parts(mesh: Any, *avals: ArrayType, jaxpr: Jaxpr, consts: tuple[Any, ...],
                   **params: Any) -> list[Any]:
    """Every result partitioned as the first operand's windows allow (JAX's rule)."""
    x = avals[0]
    shape = reduce_window_shape_tuple(x.shape, *(params[f] for f in _FIELDS))
    return [_varying_out_shape("reduce_window", mesh, x, shape)] * (len(avals) // 2)


def _generic_lowering(ctx: LoweringContext, operands: Sequence[str],
                      in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                      jaxpr: Jaxpr, consts: tuple[Any, ...], **params: Any) -> list[str]:
    """``stablehlo.reduce_window`` of all operands from the init values, its
    region the computation's body."""
    n = len(operands) // 2
    scalars = [ArrayType((), a.dtype) for a in in_avals[n:]]

    def body(c: LoweringContext, args: list[str]) -> list[str]:
        return lower_body(c, jaxpr, args)
    region = ctx.region(scalars + scalars, scalars, body)
    return ctx.generic_op("stablehlo.reduce_window", operands, in_avals, out_avals,
                          properties=_window_properties(in_avals[0].ndim, params),
                          regions=[region])


reduce_window_p = declare(
    "reduce_window", typing=_generic_type, impl=_generic_impl, multiple_results=True,
    jvp=_generic_jvp,
    transpose=not_applicable("reduce_window with a general computation is not linear"),
    batch=_generic_batch, sharding=SK.section("reduce_window", _generic_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _trivial_on_sharded, PD.local(p))),
    lowering=_generic_lowering,
    doc="lax.reduce_window with a computation that is not a recognised monoid")


# ------------------------------------------- select_and_gather_add, _scatter_add

_CHOOSERS: dict[str, tuple[str, Callable[..., Any]]] = {
    "ge": ("max", np.greater_equal), "le": ("min", np.less_equal)}


def _chooser(select_prim: Any, who: str) -> tuple[str, Callable[..., Any]]:
    name = getattr(select_prim, "name", None)
    require(name in _CHOOSERS, who, "C9",
            f"{who} select_prim must be ge or le, got {select_prim}", ValueError)
    return _CHOOSERS[str(name)]


def _extreme(select_prim: Any, dtype: Any) -> np.ndarray:
    """-inf for ``ge``, +inf for ``le``, cast to ``dtype`` (JAX's init value)."""
    with np.errstate(all="ignore"):
        return np.asarray(-np.inf if select_prim.name == "ge" else np.inf).astype(dtype)


def _gather_add_type(t: ArrayType, x: ArrayType, *, select_prim: Any,
                     **params: Any) -> list[ArrayType]:
    _chooser(select_prim, "select_and_gather_add")
    require(t.shape == x.shape, "select_and_gather_add", "C10",
            f"select_and_gather_add tangents and operand shapes must match, got {t.shape} "
            f"and {x.shape}.")
    (out,) = _window_type("select_and_gather_add", False)(x, **params)
    return [ArrayType(out.shape, t.dtype, t.weak_type and x.weak_type)]


def _gather_add_impl(t: np.ndarray, x: np.ndarray, *, select_prim: Any,
                     **params: Any) -> list[np.ndarray]:
    """Each window's tangent at the element the fold ``a if select(a, b) else
    b`` keeps, from (-inf or +inf, 0): JAX's lowering, a variadic reduce_window."""
    _, chooses = _chooser(select_prim, "select_and_gather_add")

    def combine(accs: list[np.ndarray], elems: list[np.ndarray]) -> list[np.ndarray]:
        keep = chooses(accs[0], elems[0])
        return [np.where(keep, a, e) for a, e in zip(accs, elems)]
    inits = [_extreme(select_prim, x.dtype), np.zeros((), x.dtype)]
    return [_fold_windows([x, t], inits, combine, params)[1].astype(t.dtype, copy=False)]


def _gather_add_by_reduce_window(t: Any, x: Any, *, select_prim: Any, **params: Any) -> Any:
    def reducer(left: Any, right: Any) -> Any:
        which = select_prim.bind(left[0], right[0])
        return E.select(which, left[0], right[0]), E.select(which, left[1], right[1])
    dtype = canonical_aval_of(x).dtype
    inits = (_extreme(select_prim, dtype), np.zeros((), dtype))
    return reduce_window((x, t), inits, reducer, **params)[1]


def _gather_add_transpose(ct: Any, t: Any, x: Any, *, select_prim: Any,
                          window_dimensions: tuple[int, ...], window_strides: tuple[int, ...],
                          padding: Pads, base_dilation: tuple[int, ...],
                          window_dilation: tuple[int, ...]) -> list[Any]:
    """select_and_scatter_add of the cotangent on the operand (base-dilated
    with the chooser's identity, the result subsampled back), JAX's rule."""
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError("VJP not implemented for select_and_gather (MaxPool) with "
                                  f"window dilation, got window_dilation={window_dilation}.")
    if type(ct) is Zero:
        return [Zero(t.aval.ct_type()), None]
    dilated = any(d != 1 for d in base_dilation)
    if dilated:
        kind = _chooser(select_prim, "select_and_gather_add")[0]
        x = pad(x, asarray(_identity(kind, canonical_aval_of(x).dtype)),
                tuple((0, 0, d - 1) for d in base_dilation))
    out = select_and_scatter_add_p.bind(ct, x, select_prim=select_prim,
                                        window_dimensions=window_dimensions,
                                        window_strides=window_strides, padding=padding)
    if dilated:
        shape = canonical_aval_of(out).shape
        out = slice_op(out, (0,) * len(shape), shape, base_dilation)
    return [out, None]


def _two_at_front(prim_name: str) -> Callable[..., tuple[list[Any], list[BatchDim]]]:
    def batch(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
              ) -> tuple[list[Any], list[BatchDim]]:
        a, b = (bdim_at_front(v, d, axis.size) for v, d in zip(args, dims))
        grown = {**params, **_grown_at_front(params)}
        return [_SELECT_PRIMS[prim_name].bind(a, b, **grown)], [0]
    return batch


def _on_tangents(prim_name: str) -> Callable[..., Any]:
    """The JVP of a primitive linear in its first operand: itself on the tangent."""
    def tangent(g: Any, linear: Any, x: Any, **params: Any) -> Any:
        return _SELECT_PRIMS[prim_name].bind(g, x, **params)
    return tangent


def _gather_add_parts(mesh: Any, t: ArrayType, x: ArrayType, **params: Any) -> list[Any]:
    shape = reduce_window_shape_tuple(x.shape, *(params[f] for f in _FIELDS))
    return [_varying_out_shape("select_and_gather_add", mesh, x, shape)]


select_and_gather_add_p = declare(
    "select_and_gather_add", typing=_gather_add_type, impl=_gather_add_impl,
    jvp=defjvp(_on_tangents("select_and_gather_add"), None),
    transpose=_gather_add_transpose, batch=_two_at_front("select_and_gather_add"),
    sharding=SK.section("select_and_gather_add", _gather_add_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _trivial_on_sharded, PD.local(p))),
    lowering=lower_fun(_gather_add_by_reduce_window),
    doc="the tangent of each window's max (ge) or min (le): reduce_window_max/min's JVP")


def _scatter_add_type(source: ArrayType, x: ArrayType, *, select_prim: Any,
                      **params: Any) -> list[ArrayType]:
    _chooser(select_prim, "select_and_scatter_add")
    full_params = _full_params(params, x.ndim)
    (windows,) = _window_type("select_and_scatter_add", False)(x, **full_params)
    require(source.shape == windows.shape, "select_and_scatter_add", "C11",
            f"select_and_scatter_add source shape {source.shape} must be the operand's "
            f"window shape {windows.shape}.")
    return [ArrayType(x.shape, source.dtype, source.weak_type and x.weak_type)]


def _selected_positions(x: np.ndarray, chooses: Callable[..., Any], fill: np.ndarray,
                        params: dict[str, Any]) -> np.ndarray:
    """Per window, the operand's flat index of the element XLA's
    select-and-scatter keeps (-1 where that is padding): the window's first
    element, replaced by each next one where ``chooses(kept, next)`` fails."""
    patches = _windows(x, fill, params)
    where = _windows(np.arange(x.size).reshape(x.shape), np.asarray(-1), params)
    kept, index = patches[..., 0], np.zeros(patches.shape[:-1], np.intp)
    for k in range(1, patches.shape[-1]):
        replace = ~np.asarray(chooses(kept, patches[..., k]), bool)
        kept = np.where(replace, patches[..., k], kept)
        index = np.where(replace, k, index)
    return np.take_along_axis(where, index[..., None], -1)[..., 0]


def _scatter_add_impl(source: np.ndarray, x: np.ndarray, *, select_prim: Any,
                      **params: Any) -> list[np.ndarray]:
    """JAX's CPU lowering: the operand padded with the chooser's identity, each
    window's source value added (or-ed for bool) at its selected element, in
    row-major window order; selections in the padding are dropped."""
    kind, chooses = _chooser(select_prim, "select_and_scatter_add")
    out = np.zeros(x.size, source.dtype)
    if source.size:
        with np.errstate(invalid="ignore"):
            target = _selected_positions(x, chooses, _identity(kind, x.dtype),
                                         _full_params(params, x.ndim)).reshape(-1)
        keep = target >= 0
        add = np.logical_or if source.dtype == np.bool_ else np.add
        add.at(out, target[keep], source.reshape(-1)[keep])
    return [out.reshape(x.shape)]


def _scatter_add_transpose(ct: Any, source: Any, x: Any, *, select_prim: Any,
                           window_dimensions: tuple[int, ...], window_strides: tuple[int, ...],
                           padding: Pads) -> list[Any]:
    if type(ct) is Zero:
        return [Zero(source.aval.ct_type()), None]
    ones = (1,) * len(window_dimensions)
    return [select_and_gather_add_p.bind(
        ct, x, select_prim=select_prim, window_dimensions=window_dimensions,
        window_strides=window_strides, padding=padding, base_dilation=ones,
        window_dilation=ones), None]


def _scatter_add_by_select_and_scatter(source: Any, x: Any, *, select_prim: Any,
                                       window_dimensions: tuple[int, ...],
                                       window_strides: tuple[int, ...],
                                       padding: Pads) -> Any:
    """JAX's CPU lowering: the padding made explicit with the chooser's identity,
    select_and_scatter with ``select_prim`` and add (or), the padding sliced off."""
    aval = canonical_aval_of(x)
    kind = _chooser(select_prim, "select_and_scatter_add")[0]
    padded = pad(x, asarray(_identity(kind, aval.dtype)), [(lo, hi, 0) for lo, hi in padding])
    scatter = E.bitwise_or if aval.dtype == T.bool_ else E.add
    out = select_and_scatter(padded, lambda a, b: select_prim.bind(a, b), window_dimensions,
                             window_strides, ((0, 0),) * aval.ndim, source,
                             full((), 0, aval.dtype), scatter)
    return slice_op(out, [lo for lo, _ in padding],
                    [lo + d for (lo, _), d in zip(padding, aval.shape)])


def _scatter_add_parts(mesh: Any, source: ArrayType, x: ArrayType, **params: Any
                       ) -> list[Any]:
    return [SK.parts(x)]


select_and_scatter_add_p = declare(
    "select_and_scatter_add", typing=_scatter_add_type, impl=_scatter_add_impl,
    jvp=defjvp(_on_tangents("select_and_scatter_add"), None),
    transpose=_scatter_add_transpose, batch=_two_at_front("select_and_scatter_add"),
    sharding=SK.section("select_and_scatter_add", _scatter_add_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _trivial_on_sharded, PD.local(p))),
    lowering=lower_fun(_scatter_add_by_select_and_scatter),
    doc="each window's source value added at its max (ge) or min (le): the VJP of "
        "reduce_window_max/min")
_SELECT_PRIMS = {"select_and_gather_add": select_and_gather_add_p,
                 "select_and_scatter_add": select_and_scatter_add_p}


# ------------------------------------------------------------ select_and_scatter

def _select_and_scatter_type(x: ArrayType, source: ArrayType, init: ArrayType, *,
                             select_jaxpr: Jaxpr, select_consts: tuple[Any, ...],
                             scatter_jaxpr: Jaxpr, scatter_consts: tuple[Any, ...],
                             window_dimensions: tuple[int, ...],
                             window_strides: tuple[int, ...], padding: Pads
                             ) -> list[ArrayType]:
    _check_seq("select_and_scatter", "window_dimensions", window_dimensions, True)
    _check_seq("select_and_scatter", "window_strides", window_strides, True)
    require(len(window_dimensions) == len(window_strides), "select_and_scatter", "C2",
            "select_and_scatter got inconsistent window_strides and window_dimensions: got "
            f"window_strides {window_strides} and window_dimensions {window_dimensions}.")
    params = _full_params(dict(window_dimensions=window_dimensions,
                               window_strides=window_strides, padding=padding), x.ndim)
    (windows,) = _window_type("select_and_scatter", False)(x, **params)
    require(source.shape == windows.shape and init.shape == () and
            source.dtype == x.dtype == init.dtype, "select_and_scatter", "C12",
            f"select_and_scatter needs a source of the operand's window shape "
            f"{windows.shape} and a scalar init value, both of the operand's dtype; got "
            f"operand {x}, source {source}, init value {init}")
    return [ArrayType(x.shape, x.dtype, x.weak_type)]


def _select_and_scatter_impl(x: np.ndarray, source: np.ndarray, init: np.ndarray, *,
                             select_jaxpr: Jaxpr, select_consts: tuple[Any, ...],
                             scatter_jaxpr: Jaxpr, scatter_consts: tuple[Any, ...],
                             **params: Any) -> list[np.ndarray]:
    """XLA's select-and-scatter: per window the element kept by ``select``
    (padding never selected), then, window by window in row-major order, the
    output there (from the init value) combined with the source by ``scatter``."""
    out = np.full(x.size, init, x.dtype)
    size = source.size
    if size == 0:
        return [out.reshape(x.shape)]
    full_params = _full_params(params, x.ndim)
    patches = _windows(x, np.zeros((), x.dtype), full_params).reshape(size, -1)
    where = _windows(np.arange(x.size).reshape(x.shape), np.asarray(-1),
                     full_params).reshape(size, -1)
    select = on_all(select_jaxpr, size)
    kept, index, have = patches[:, 0], np.zeros(size, np.intp), where[:, 0] >= 0
    for k in range(1, patches.shape[1]):
        valid = where[:, k] >= 0
        better = ~np.asarray(select(kept, patches[:, k])[0], bool)
        take = valid & (~have | better)
        kept, index = np.where(take, patches[:, k], kept), np.where(take, k, index)
        have |= valid
    target = np.where(have, where[np.arange(size), index], -1)
    chosen = np.flatnonzero(target >= 0)
    apply_in_order(out, target[chosen], source.reshape(-1)[chosen], scatter_jaxpr)
    return [out.reshape(x.shape)]


def _select_and_scatter_lowering(ctx: LoweringContext, operands: Sequence[str],
                                 in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
                                 *, select_jaxpr: Jaxpr, select_consts: tuple[Any, ...],
                                 scatter_jaxpr: Jaxpr, scatter_consts: tuple[Any, ...],
                                 window_dimensions: tuple[int, ...],
                                 window_strides: tuple[int, ...], padding: Pads) -> list[str]:
    s = ArrayType((), in_avals[0].dtype)

    def select_body(c: LoweringContext, args: list[str]) -> list[str]:
        return lower_body(c, select_jaxpr, args)

    def scatter_body(c: LoweringContext, args: list[str]) -> list[str]:
        return lower_body(c, scatter_jaxpr, args)
    props = (f"padding = {_padding_attr(padding, in_avals[0].ndim)}, window_dimensions = "
             f"{_array_attr(window_dimensions)}, window_strides = "
             f"{_array_attr(window_strides)}")
    return ctx.generic_op("stablehlo.select_and_scatter", operands, in_avals, out_avals,
                          properties=props,
                          regions=[ctx.region([s, s], [ArrayType((), T.bool_)], select_body),
                                   ctx.region([s, s], [s], scatter_body)])


select_and_scatter_p = declare(
    "select_and_scatter", typing=_select_and_scatter_type, impl=_select_and_scatter_impl,
    jvp=not_applicable("JAX defines no derivative of select_and_scatter "
                       "(select_and_scatter_add is the differentiable form)"),
    transpose=not_applicable("select_and_scatter with a general scatter is not linear"),
    batch=not_applicable("JAX defines no batching rule for select_and_scatter"),
    sharding=SK.section("select_and_scatter", lambda mesh, x, *rest, **p: [SK.parts(x)]),
    per_device=from_primitive(lambda p: PD.guarded(p, _trivial_on_sharded, PD.local(p))),
    lowering=_select_and_scatter_lowering,
    doc="XLA's SelectAndScatter with select and scatter computations")


def select_and_scatter(operand: Any, select: Callable[..., Any],
                       window_dimensions: Sequence[int], window_strides: Sequence[int],
                       padding: Sequence[tuple[int, int]], source: Any, init_value: Any,
                       scatter: Callable[..., Any]) -> Any:
    """Bind select_and_scatter with ``select`` and ``scatter`` traced on two
    scalars of the init value's type (JAX's private ``_select_and_scatter``)."""
    init_aval = canonical_aval_of(init_value)
    select_jaxpr, _ = computation_jaxpr(select, [init_aval], tree_util.tree_structure(0))
    scatter_jaxpr, _ = computation_jaxpr(scatter, [init_aval], tree_util.tree_structure(0))
    return select_and_scatter_p.bind(
        operand, source, init_value, select_jaxpr=select_jaxpr,
        select_consts=tuple(select_jaxpr.consts), scatter_jaxpr=scatter_jaxpr,
        scatter_consts=tuple(scatter_jaxpr.consts),
        window_dimensions=tuple(window_dimensions), window_strides=tuple(window_strides),
        padding=tuple(tuple(p) for p in padding))


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
    """Reduce every (padded, dilated) window of ``operand`` (a pytree of arrays)
    with ``computation`` from ``init_value`` (a pytree of scalars alike).

    ``lax.add``, ``lax.max`` and ``lax.min`` started from their identity bind
    reduce_window_sum/max/min; any other computation binds reduce_window."""
    flat_operands, operand_tree = tree_util.tree_flatten(operand)
    flat_inits, init_tree = tree_util.tree_flatten(init_value)
    if operand_tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{operand_tree} vs. {init_tree}")
    if len(flat_operands) != len(flat_inits):
        raise ValueError("Must have same total number of operands as init_values: "
                         f" {len(flat_operands)} vs. {len(flat_inits)}")
    if not flat_operands:
        raise ValueError("reduce_window must have at least one operand.")
    aval = canonical_aval_of(flat_operands[0])
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
    kind = (_monoid_kind(computation, flat_inits[0], aval.dtype)
            if len(flat_inits) == 1 else None)
    if kind is not None:
        return tree_util.tree_unflatten(operand_tree, [_PRIMS[kind].bind(flat_operands[0],
                                                                         **params)])
    init_avals = [canonical_aval_of(x) for x in flat_inits]
    jaxpr, out_tree = computation_jaxpr(computation, init_avals, init_tree)
    if out_tree != operand_tree:
        raise ValueError("reduce_window output must have the same tree structure as the "
                         f"operands {operand_tree} vs. {out_tree}")
    outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr,
                                consts=tuple(jaxpr.consts), **params)
    return tree_util.tree_unflatten(out_tree, list(outs))


__all__ = ["reduce_window", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
           "reduce_window_shape_tuple", "reduce_window_sum_p", "select_and_gather_add_p",
           "select_and_scatter_add_p", "select_and_scatter_p"]
