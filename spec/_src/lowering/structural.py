"""Lowering rules for structural primitives: dynamic slicing, splitting and
stacking, gather and scatter, sorting, windowed and variadic reductions.

Each rule has the signature of ``emitter.LoweringRule`` and emits the ops
``jax.jit(f).lower(...)`` emits for the same primitive on CPU; where JAX
builds the op through a private function (``call @argmax``), the rule does
the same, so the module text matches JAX's after renaming SSA values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.types import ArrayType
from spec._src.lowering.rules import highest, lowest
from spec._src.lowering.emitter import (
    LoweringContext,
    LoweringRule,
    handles_keys,
    ints,
    keys_as_data,
    lower_body,
    physical_aval,
    tensor_type,
)

Avals = Sequence[ArrayType]


def _scalar(aval: ArrayType) -> ArrayType:
    return ArrayType((), aval.dtype)


def _like(aval: ArrayType, shape: Sequence[int]) -> ArrayType:
    return ArrayType(tuple(shape), aval.dtype)


def _slice(ctx: LoweringContext, x: str, aval: ArrayType, out: ArrayType,
           starts: Sequence[int], limits: Sequence[int]) -> str:
    ranges = ", ".join(f"{int(s)}:{int(e)}" for s, e in zip(starts, limits))
    return ctx.line(f"stablehlo.slice {x} [{ranges}] : ({tensor_type(aval)}) -> "
                    f"{tensor_type(out)}")


def _reshape(ctx: LoweringContext, x: str, aval: ArrayType, out: ArrayType) -> str:
    return ctx.op("stablehlo.reshape", [x], [aval], out)


def _binary(ctx: LoweringContext, opname: str, a: str, b: str, aval: ArrayType) -> str:
    return ctx.op(opname, [a, b], [aval, aval], aval)


def _compare(ctx: LoweringContext, direction: str, a: str, b: str, aval: ArrayType,
             kind: str | None = None) -> str:
    kind = kind or comparison_type(aval.dtype)
    t = tensor_type(aval)
    return ctx.line(f"stablehlo.compare {direction}, {a}, {b}, {kind} : ({t}, {t}) -> "
                    f"{tensor_type(ArrayType(aval.shape, np.dtype(np.bool_)))}")


def _select(ctx: LoweringContext, pred: str, on_true: str, on_false: str,
            aval: ArrayType) -> str:
    pred_type = tensor_type(ArrayType(aval.shape, np.dtype(np.bool_)))
    return ctx.line(f"stablehlo.select {pred}, {on_true}, {on_false} : {pred_type}, "
                    f"{tensor_type(aval)}")


def comparison_type(dtype: Any) -> str:
    """The ``compare`` op's comparison type for a dtype."""
    dt = np.dtype(dtype)
    if T.is_inexact(dt):
        return "FLOAT"
    return "SIGNED" if dt.kind == "i" else "UNSIGNED"


def _full(ctx: LoweringContext, value: Any, aval: ArrayType) -> str:
    """A constant scalar broadcast to ``aval`` (a scalar stays a constant)."""
    scalar = _scalar(aval)
    c = ctx.constant(np.asarray(value, dtype=aval.dtype), scalar)
    return c if not aval.shape else ctx.broadcast(c, scalar, aval, ())


# ============================================================ slicing family

def _key_data_indices(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                      first_index: int) -> tuple[list[str], list[ArrayType], tuple[int, ...]]:
    """The operands and types of a dynamic slice or update of a key array
    as its data's: a zero start index for each dimension of the key data
    (whole keys are sliced), in the other indices' dtype; the data's
    dimensions (``()`` for no key array)."""
    data = tuple(physical_aval(in_avals[0]).shape[in_avals[0].ndim:])
    if not data:
        return list(operands), list(in_avals), data
    index = (_scalar(in_avals[first_index]) if len(in_avals) > first_index
             else ArrayType((), np.dtype(np.int32)))
    zeros = [ctx.constant(np.zeros((), index.dtype), index) for _ in data]
    avals = [physical_aval(a) for a in in_avals] + [index] * len(data)
    return [*operands, *zeros], avals, data


@handles_keys
def dynamic_slice(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                  out_avals: Avals, *, slice_sizes: Sequence[int]) -> list[str]:
    """XLA clamps the start indices so the window lies inside the operand,
    which is lax.dynamic_slice's meaning."""
    operands, in_avals, data = _key_data_indices(ctx, operands, in_avals, 1)
    ins = ", ".join(tensor_type(a) for a in in_avals)
    return [ctx.line(f"stablehlo.dynamic_slice {', '.join(operands)}, sizes = "
                     f"{ints([*slice_sizes, *data])} : ({ins}) -> "
                     f"{tensor_type(out_avals[0])}")]


@handles_keys
def dynamic_update_slice(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                         out_avals: Avals) -> list[str]:
    operands, in_avals, _ = _key_data_indices(ctx, operands, in_avals, 2)
    ins = ", ".join(tensor_type(a) for a in in_avals)
    return [ctx.line(f"stablehlo.dynamic_update_slice {', '.join(operands)} : ({ins}) -> "
                     f"{tensor_type(out_avals[0])}")]


def split(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
          *, sizes: Sequence[int], axis: int) -> list[str]:
    """One ``slice`` per piece, as JAX lowers it."""
    aval = in_avals[0]
    starts, limits = [0] * aval.ndim, list(aval.shape)
    outs = []
    for out in out_avals:
        limits[axis] = starts[axis] + out.shape[axis]
        outs.append(_slice(ctx, operands[0], aval, out, starts, limits))
        starts[axis] = limits[axis]
    return outs


@keys_as_data
def unstack(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
            *, axis: int) -> list[str]:
    """A unit ``slice`` along ``axis`` then a ``reshape`` per result."""
    aval = in_avals[0]
    piece = _like(aval, [1 if d == axis else n for d, n in enumerate(aval.shape)])
    starts, limits = [0] * aval.ndim, list(aval.shape)
    outs = []
    for k, out in enumerate(out_avals):
        starts[axis], limits[axis] = k, k + 1
        outs.append(_reshape(ctx, _slice(ctx, operands[0], aval, piece, starts, limits),
                             piece, out))
    return outs


@keys_as_data
def stack(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
          *, axis: int) -> list[str]:
    """Each operand broadcast to a unit axis at ``axis``, then one
    ``concatenate``."""
    aval = in_avals[0]
    shape = list(aval.shape)
    shape.insert(axis, 1)
    dims = [d for d in range(aval.ndim + 1) if d != axis]
    expanded = [ctx.broadcast(x, a, _like(a, shape), dims) for x, a in zip(operands, in_avals)]
    ins = ", ".join(tensor_type(_like(a, shape)) for a in in_avals)
    return [ctx.line(f"stablehlo.concatenate {', '.join(expanded)}, dim = {int(axis)} : "
                     f"({ins}) -> {tensor_type(out_avals[0])}")]


def tile(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
         *, reps: Sequence[int]) -> list[str]:
    """Reshape to interleaved unit axes, broadcast each to its repetition
    count, reshape to the result (JAX's three ops)."""
    aval = in_avals[0]
    expand = _like(aval, [k for n in aval.shape for k in (1, n)])
    wide = _like(aval, [k for r, n in zip(reps, aval.shape) for k in (r, n)])
    x = _reshape(ctx, operands[0], aval, expand)
    x = ctx.broadcast(x, expand, wide, range(2 * aval.ndim))
    return [_reshape(ctx, x, wide, out_avals[0])]


# ================================================== conversions, identities

def bitcast_convert_type(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                         out_avals: Avals, **params: Any) -> list[str]:
    return [ctx.op("stablehlo.bitcast_convert", operands, in_avals, out_avals[0])]


@keys_as_data
def identity(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
             out_avals: Avals, **params: Any) -> list[str]:
    """A primitive that is its operand once compiled (stop_gradient, a name
    tag): no op."""
    return list(operands)


def add_any(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
            out_avals: Avals) -> list[str]:
    return [ctx.op("stablehlo.add", operands, in_avals, out_avals[0])]


def zeros(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
          out_avals: Avals, **params: Any) -> list[str]:
    """An uninitialised array: JAX lowers it to zeros (``broadcast_in_dim``
    of a zero constant)."""
    return [_full(ctx, 0, a) for a in out_avals]


def reduce_precision(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                     out_avals: Avals, *, exponent_bits: int,
                     mantissa_bits: int) -> list[str]:
    return [ctx.op("stablehlo.reduce_precision", operands, in_avals, out_avals[0],
                   attrs=f", format = e{int(exponent_bits)}m{int(mantissa_bits)}")]


def reduce_xor(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
               out_avals: Avals, *, axes: Sequence[int], **params: Any) -> list[str]:
    scalar = _scalar(in_avals[0])
    start = ctx.constant(np.zeros((), in_avals[0].dtype), scalar)
    return [ctx.line(
        f"stablehlo.reduce({operands[0]} init: {start}) applies stablehlo.xor across "
        f"dimensions = {ints(axes)} : ({tensor_type(in_avals[0])}, {tensor_type(scalar)})"
        f" -> {tensor_type(out_avals[0])}")]


# =========================================================== argmin/argmax



def _argminmax(name: str, direction: str, init: Any) -> LoweringRule:
    """A two-operand ``reduce`` of (value, iota index) pairs inside a private
    function named after the primitive: the pair with the winning value
    (NaN wins, as NumPy's argmax) and on ties the lower index."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
             *, axes: Sequence[int], index_dtype: Any) -> list[str]:
        aval, out = in_avals[0], out_avals[0]
        axis = int(axes[0])

        def body(ctx: LoweringContext, args: list[str]) -> list[str]:
            iota_aval = ArrayType(aval.shape, out.dtype)
            idx = ctx.line(f"stablehlo.iota dim = {axis} : {tensor_type(iota_aval)}")
            v0 = ctx.constant(init(aval.dtype), _scalar(aval))
            i0 = ctx.constant(np.zeros((), out.dtype), _scalar(out))
            reducer = ctx.region(
                [_scalar(aval), _scalar(out), _scalar(aval), _scalar(out)],
                [_scalar(aval), _scalar(out)], _pick(direction, aval, out))
            value_out = ArrayType(out.shape, aval.dtype)
            results = ctx.generic_op(
                "stablehlo.reduce", [args[0], idx, v0, i0],
                [aval, iota_aval, _scalar(aval), _scalar(out)], [value_out, out],
                properties=f"dimensions = array<i64: {axis}>", regions=[reducer])
            return [results[1]]
        symbol = ctx.function(name, [aval], [out], body, key=(axis, out.dtype))
        return ctx.call(symbol, operands, in_avals, out_avals)
    return rule


def _pick(direction: str, aval: ArrayType, out: ArrayType) -> Any:
    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        # Block arguments: (value a, index a, value b, index b).
        va, ia, vb, ib = args
        s, si = _scalar(aval), _scalar(out)
        wins = _compare(ctx, direction, va, vb, s)
        if T.is_inexact(np.dtype(aval.dtype)):
            wins = _binary(ctx, "stablehlo.or", wins, _compare(ctx, "NE", va, va, s),
                           _scalar(ArrayType((), np.dtype(np.bool_))))
        b = ArrayType((), np.dtype(np.bool_))
        tie = _binary(ctx, "stablehlo.and", _compare(ctx, "EQ", va, vb, s),
                      _compare(ctx, "LT", ia, ib, si), b)
        takes = _binary(ctx, "stablehlo.or", wins, tie, b)
        return [_select(ctx, wins, va, vb, s), _select(ctx, takes, ia, ib, si)]
    return body


argmax = _argminmax("argmax", "GT", lowest)
argmin = _argminmax("argmin", "LT", highest)


# ===================================================== cumulative reductions

def _window_body(opname: str) -> Any:
    def body(ctx: LoweringContext, args: list[str], aval: ArrayType) -> list[str]:
        return [_binary(ctx, opname, args[0], args[1], aval)]
    return body


def _logaddexp_body(ctx: LoweringContext, args: list[str], aval: ArrayType) -> list[str]:
    """log(exp(a) + exp(b)) as JAX's logaddexp: max + log1p(exp(-|a - b|)),
    and a + b where a - b is NaN (both infinite of one sign, or a NaN)."""
    a, b = args
    big = _binary(ctx, "stablehlo.maximum", a, b, aval)
    delta = _binary(ctx, "stablehlo.subtract", a, b, aval)
    nan = _compare(ctx, "NE", delta, delta, aval)
    total = _binary(ctx, "stablehlo.add", a, b, aval)
    mag = ctx.op("stablehlo.abs", [delta], [aval], aval)
    neg = ctx.op("stablehlo.negate", [mag], [aval], aval)
    e = ctx.op("stablehlo.exponential", [neg], [aval], aval)
    lp = ctx.op("stablehlo.log_plus_one", [e], [aval], aval)
    return [_select(ctx, nan, total, _binary(ctx, "stablehlo.add", big, lp, aval), aval)]


def _cumulative(name: str, body: Any, init: Any, broadcast_init: bool) -> LoweringRule:
    """A ``reduce_window`` whose window spans the whole axis, padded before
    it (after it when reversed), inside a private function: JAX's lowering
    on CPU."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
             *, axis: int, reverse: bool) -> list[str]:
        aval = in_avals[0]
        n = aval.shape[axis]
        if n == 0:
            return [operands[0]]

        def fn(ctx: LoweringContext, args: list[str]) -> list[str]:
            s = _scalar(aval)
            start = ctx.constant(init(aval.dtype), s)
            if broadcast_init:
                start = ctx.broadcast(start, s, s, ())
            pads = [[0, 0] for _ in aval.shape]
            pads[axis] = [0, n - 1] if reverse else [n - 1, 0]
            window = [n if d == axis else 1 for d in range(aval.ndim)]
            ones = ", ".join("1" for _ in aval.shape)
            props = (f"base_dilations = array<i64: {ones}>, padding = dense<{pads}> : "
                     f"tensor<{aval.ndim}x2xi64>, window_dilations = array<i64: {ones}>, "
                     f"window_dimensions = array<i64: {', '.join(map(str, window))}>, "
                     f"window_strides = array<i64: {ones}>")
            region = ctx.region([s, s], [s], lambda c, a: body(c, a, s))
            return ctx.generic_op("stablehlo.reduce_window", [args[0], start], [aval, s],
                                  [aval], properties=props, regions=[region])
        symbol = ctx.function(name, [aval], [aval], fn, key=(axis, reverse))
        return ctx.call(symbol, operands, in_avals, out_avals)
    return rule


cumsum = _cumulative("cumsum", _window_body("stablehlo.add"), lambda dt: np.zeros((), dt), True)
cumprod = _cumulative("cumprod", _window_body("stablehlo.multiply"),
                      lambda dt: np.ones((), dt), True)
cummax = _cumulative("cummax", _window_body("stablehlo.maximum"), lowest, True)
cummin = _cumulative("cummin", _window_body("stablehlo.minimum"), highest, True)
cumlogsumexp = _cumulative("cumlogsumexp", _logaddexp_body, lowest, False)


# ==================================================================== sort

def _sort_key(ctx: LoweringContext, x: str, aval: ArrayType) -> str:
    """A float key with -0 made +0 and every NaN the one quiet NaN, so the
    total order compare ties them (JAX's comparator)."""
    is_zero = _compare(ctx, "EQ", x, ctx.constant(np.zeros((), aval.dtype), aval), aval)
    key = _select(ctx, is_zero, ctx.constant(np.zeros((), aval.dtype), aval), x, aval)
    is_nan = _compare(ctx, "NE", x, x, aval)
    return _select(ctx, is_nan, ctx.constant(np.asarray(np.nan, aval.dtype), aval), key, aval)


def _keys(ctx: LoweringContext, x: str, aval: ArrayType) -> list[tuple[str, ArrayType]]:
    kind = np.dtype(aval.dtype).kind
    if kind == "c":
        part = ArrayType((), np.dtype(np.float32 if aval.dtype == np.complex64 else np.float64))
        return [(_sort_key(ctx, ctx.op(op, [x], [aval], part), part), part)
                for op in ("stablehlo.real", "stablehlo.imag")]
    if T.is_float(np.dtype(aval.dtype)):
        return [(_sort_key(ctx, x, aval), aval)]
    return [(x, aval)]


def _less(ctx: LoweringContext, direction: str, a: str, b: str, aval: ArrayType) -> str:
    kind = "TOTALORDER" if T.is_float(np.dtype(aval.dtype)) else None
    return _compare(ctx, direction, a, b, aval, kind)


def _comparator(num_keys: int, avals: Avals) -> Any:
    """Lexicographic less-than on the first ``num_keys`` operands, over
    JAX's total order (-inf < ... < -0 = 0 < ... < inf < NaN)."""
    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        xs, ys = [], []
        for k in range(num_keys):
            xs += _keys(ctx, args[2 * k], _scalar(avals[k]))
            ys += _keys(ctx, args[2 * k + 1], _scalar(avals[k]))
        b = ArrayType((), np.dtype(np.bool_))
        p: str | None = None
        for (xk, t), (yk, _) in zip(xs[::-1], ys[::-1]):
            lt = _less(ctx, "LT", xk, yk, t)
            if p is None:
                p = lt
            else:
                p = _binary(ctx, "stablehlo.or", lt, _binary(
                    ctx, "stablehlo.and", _less(ctx, "EQ", xk, yk, t), p, b), b)
        assert p is not None
        return [p]
    return body


def sort(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
         dimension: int, is_stable: bool, num_keys: int) -> list[str]:
    args = [t for a in in_avals for t in (_scalar(a), _scalar(a))]
    region = ctx.region(args, [ArrayType((), np.dtype(np.bool_))],
                        _comparator(num_keys, in_avals))
    props = f"dimension = {int(dimension)} : i64, is_stable = {str(bool(is_stable)).lower()}"
    return ctx.generic_op("stablehlo.sort", operands, in_avals, out_avals, properties=props,
                          regions=[region])


def top_k(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
          k: int, axis: int, is_stable: bool = True) -> list[str]:
    """``chlo.top_k`` along the last axis; another axis is first swapped
    to the end and the results swapped back (JAX's lowering)."""
    aval = in_avals[0]
    x, outs = operands[0], list(out_avals)
    perm = list(range(aval.ndim))
    if axis != aval.ndim - 1:
        perm[axis], perm[-1] = perm[-1], perm[axis]
        aval = _like(aval, [aval.shape[p] for p in perm])
        x = ctx.op("stablehlo.transpose", [x], [in_avals[0]], aval, attrs=f", dims = {ints(perm)}")
        outs = [ArrayType(tuple(o.shape[p] for p in perm), o.dtype) for o in out_avals]
    stable = "" if is_stable else ", is_stable = false"
    results = ctx.generic_op("chlo.top_k", [x], [aval], outs,
                             properties=f"k = {int(k)} : i64{stable}")
    if perm == list(range(aval.ndim)):
        return results
    return [ctx.op("stablehlo.transpose", [r], [o], final, attrs=f", dims = {ints(perm)}")
            for r, o, final in zip(results, outs, out_avals)]


# ========================================================= gather, scatter

def _dims(label: str, dims: Sequence[int]) -> list[str]:
    return [f"{label} = {ints(dims)}"] if len(dims) else []


def _default_fill(dtype: Any) -> Any:
    dt = np.dtype(dtype)
    if T.is_inexact(dt):
        return np.nan
    if dt.kind == "i":
        return np.iinfo(dt).min
    if dt.kind == "u":
        return np.iinfo(dt).max
    return True


def _along_last(ctx: LoweringContext, vec: str, vec_aval: ArrayType,
                aval: ArrayType) -> str:
    """A vector along the last axis of ``aval``: first to unit leading axes,
    then across them (JAX's rank promotion, then lax's size-1 broadcast)."""
    unit = ArrayType((*(1 for _ in aval.shape[:-1]), vec_aval.shape[0]), aval.dtype)
    x = vec if unit.shape == vec_aval.shape else ctx.broadcast(vec, vec_aval, unit,
                                                               [aval.ndim - 1])
    return x if unit.shape == aval.shape else ctx.broadcast(x, unit, aval, range(aval.ndim))


def _in_bounds(ctx: LoweringContext, indices: str, iaval: ArrayType,
               upper: Sequence[int]) -> tuple[str, ArrayType]:
    """Per index vector: every start component in ``[0, upper]`` (JAX's ops
    in JAX's order)."""
    b = ArrayType(iaval.shape, np.dtype(np.bool_))
    vec = ArrayType((len(upper),), iaval.dtype)
    bound = ctx.constant(np.asarray(upper, iaval.dtype), vec)
    ge = _compare(ctx, "GE", indices, _full(ctx, 0, iaval), iaval)
    bound = _along_last(ctx, bound, vec, iaval)
    ok = _binary(ctx, "stablehlo.and", ge, _compare(ctx, "LE", indices, bound, iaval), b)
    t = ctx.constant(np.asarray(True), ArrayType((), np.dtype(np.bool_)))
    out = ArrayType(iaval.shape[:-1], np.dtype(np.bool_))
    return ctx.line(
        f"stablehlo.reduce({ok} init: {t}) applies stablehlo.and across dimensions = "
        f"[{iaval.ndim - 1}] : ({tensor_type(b)}, tensor<i1>) -> {tensor_type(out)}"), out


def _gather(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
            dimension_numbers: Any, slice_sizes: Sequence[int], indices_are_sorted: bool,
           unique_indices: bool, mode: Any, fill_value: Any) -> list[str]:
    """``stablehlo.gather`` (which clamps windows into the operand: CLIP and
    PROMISE_IN_BOUNDS); FILL_OR_DROP masks the windows that start out of
    bounds with the fill value."""
    dn = dimension_numbers
    aval, iaval, out = in_avals[0], in_avals[1], out_avals[0]
    fields = [*_dims("offset_dims", dn.offset_dims),
              *_dims("collapsed_slice_dims", dn.collapsed_slice_dims),
              *_dims("operand_batching_dims", dn.operand_batching_dims),
              *_dims("start_indices_batching_dims", dn.start_indices_batching_dims),
              *_dims("start_index_map", dn.start_index_map),
              f"index_vector_dim = {iaval.ndim - 1}"]
    props = (f"dimension_numbers = #stablehlo.gather<{', '.join(fields)}>, "
             f"indices_are_sorted = {str(bool(indices_are_sorted)).lower()}, "
             f"slice_sizes = array<i64: {', '.join(str(int(s)) for s in slice_sizes)}>")
    fill = "FILL_OR_DROP" in str(mode)
    mask = None
    if fill:
        upper = [aval.shape[d] - int(slice_sizes[d]) for d in dn.start_index_map]
        mask = _in_bounds(ctx, operands[1], iaval, upper)
    (result,) = ctx.generic_op("stablehlo.gather", operands[:2], in_avals[:2], [out],
                               properties=props)
    if mask is None:
        return [result]
    batch = [d for d in range(out.ndim) if d not in tuple(dn.offset_dims)]
    wide = ArrayType(out.shape, np.dtype(np.bool_))
    keep = mask[0] if mask[1].shape == wide.shape else ctx.broadcast(mask[0], mask[1], wide,
                                                                      batch)
    value = _default_fill(out.dtype) if fill_value is None else fill_value
    with np.errstate(all="ignore"):
        filler = _full(ctx, np.asarray(value).astype(out.dtype), out)
    return [_select(ctx, keep, result, filler, out)]


def _key_data(in_avals: Avals) -> tuple[int, ...]:
    return tuple(physical_aval(in_avals[0]).shape[in_avals[0].ndim:])


def _gather_whole_keys(in_avals: Avals, out_avals: Avals, params: dict[str, Any]
                       ) -> dict[str, Any]:
    """A gather from a key array takes each key's whole data: its
    dimensions are extra window dimensions after the result's."""
    data, rank = _key_data(in_avals), out_avals[0].ndim
    dn = params["dimension_numbers"]
    return {**params, "slice_sizes": (*params["slice_sizes"], *data),
            "dimension_numbers": dn._replace(
                offset_dims=(*dn.offset_dims, *range(rank, rank + len(data))))}


def _scatter_whole_keys(in_avals: Avals, out_avals: Avals, params: dict[str, Any]
                        ) -> dict[str, Any]:
    """A scatter into a key array writes each key's whole data: its
    dimensions are extra window dimensions after the updates'."""
    data, rank = _key_data(in_avals), in_avals[2].ndim
    dn = params["dimension_numbers"]
    return {**params, "dimension_numbers": dn._replace(update_window_dims=(
        *dn.update_window_dims, *range(rank, rank + len(data))))}


gather = keys_as_data(_gather, _gather_whole_keys)


_SCATTER_OPS = {"scatter-add": "stablehlo.add", "scatter-sub": "stablehlo.subtract",
                "scatter-mul": "stablehlo.multiply", "scatter-min": "stablehlo.minimum",
                "scatter-max": "stablehlo.maximum"}


def _window_shape(aval: ArrayType, uaval: ArrayType, dn: Any) -> list[int]:
    """The update window in operand coordinates (1 on inserted and batching
    axes)."""
    sizes = iter(uaval.shape[d] for d in dn.update_window_dims)
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    return [1 if d in dropped else next(sizes) for d in range(aval.ndim)]


def _clamp_starts(ctx: LoweringContext, idx: str, iaval: ArrayType, aval: ArrayType,
                  uaval: ArrayType, dn: Any) -> str:
    """CLIP's start indices: clamped to ``[0, dim - window]`` per index
    component, the bound capped at the index dtype's maximum (JAX's ops)."""
    window = _window_shape(aval, uaval, dn)
    upper = [max(aval.shape[d] - window[d], 0) for d in dn.scatter_dims_to_operand_dims]
    vec = ArrayType((len(upper),), iaval.dtype)
    hi = ctx.constant(np.asarray(upper, iaval.dtype), vec)
    cap = _full(ctx, np.iinfo(iaval.dtype).max, vec)
    hi = ctx.op("stablehlo.minimum", [hi, cap], [vec, vec], vec)
    if iaval.shape != vec.shape:
        hi = ctx.broadcast(hi, vec, iaval, [iaval.ndim - 1])
    return ctx.op("stablehlo.clamp", [_full(ctx, 0, iaval), idx, hi], [iaval] * 3, iaval)


def scatter(name: str) -> LoweringRule:
    """``stablehlo.scatter`` with the primitive's combiner as its update
    region (the replacing scatter returns the update). XLA drops windows
    that are not wholly in bounds (FILL_OR_DROP, PROMISE_IN_BOUNDS); CLIP
    first clamps the indices into range."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
             out_avals: Avals, *, dimension_numbers: Any, indices_are_sorted: bool,
             unique_indices: bool, mode: Any, **params: Any) -> list[str]:
        dn = dimension_numbers
        aval, iaval, uaval = in_avals
        x, idx, upd = operands
        if "CLIP" in str(mode):
            idx = _clamp_starts(ctx, idx, iaval, aval, uaval, dn)
        fields = [*_dims("update_window_dims", dn.update_window_dims),
                  *_dims("inserted_window_dims", dn.inserted_window_dims),
                  *_dims("input_batching_dims", dn.operand_batching_dims),
                  *_dims("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
                  *_dims("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
                  f"index_vector_dim = {iaval.ndim - 1}"]
        props = (f"indices_are_sorted = {str(bool(indices_are_sorted)).lower()}, "
                 f"scatter_dimension_numbers = #stablehlo.scatter<{', '.join(fields)}>, "
                 f"unique_indices = {str(bool(unique_indices)).lower()}")
        s = _scalar(aval)

        update_jaxpr = params.get("update_jaxpr")

        def combine(ctx: LoweringContext, args: list[str]) -> list[str]:
            if name == "scatter" and update_jaxpr is not None:
                return lower_body(ctx, update_jaxpr, args)  # scatter_apply's computation
            if name == "scatter":
                return [args[1]]
            return [_binary(ctx, _SCATTER_OPS[name], args[0], args[1], s)]
        region = ctx.region([s, s], [s], combine)
        return ctx.generic_op("stablehlo.scatter", [x, idx, upd], in_avals, out_avals,
                              properties=props, regions=[region])
    return keys_as_data(rule, _scatter_whole_keys)



# ============================================================ convolution

def precision_config(precision: Any) -> str:
    """``precision_config = [#stablehlo<precision DEFAULT>, ...]`` for lax's
    ``precision`` (None, one Precision for both operands, or a pair)."""
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    names = [("DEFAULT" if p is None else str(getattr(p, "name", p)).upper()) for p in pair]
    return "precision_config = [" + ", ".join(
        f"#stablehlo<precision {n}>" for n in names) + "]"


def _conv_layout(spec_dims: Sequence[int], first: str, second: str) -> str:
    """The dimension labels of one operand: ``spec_dims`` gives the position
    of (first, second, spatial 0, spatial 1, ...)."""
    labels = [""] * len(spec_dims)
    for k, pos in enumerate(spec_dims):
        labels[pos] = first if k == 0 else second if k == 1 else str(k - 2)
    return "[" + ", ".join(labels) + "]"


def conv_general_dilated(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                         out_avals: Avals, *, window_strides: Sequence[int],
                         padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int],
                         rhs_dilation: Sequence[int], dimension_numbers: Any,
                         feature_group_count: int, batch_group_count: int, precision: Any,
                         preferred_element_type: Any, **params: Any) -> list[str]:
    """``stablehlo.convolution`` with lax's dimension numbers, window and
    group counts, the result in the result's dtype."""
    dn = dimension_numbers
    dims = (f"{_conv_layout(dn.lhs_spec, 'b', 'f')}x{_conv_layout(dn.rhs_spec, 'o', 'i')}->"
            f"{_conv_layout(dn.out_spec, 'b', 'f')}")
    pads = ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding)
    reverse = ", ".join("false" for _ in window_strides)
    window = (f"stride = {ints(window_strides)}, pad = [{pads}], lhs_dilate = "
              f"{ints(lhs_dilation)}, rhs_dilate = {ints(rhs_dilation)}, reverse = [{reverse}]")
    attrs = (f"batch_group_count = {int(batch_group_count)} : i64, feature_group_count = "
             f"{int(feature_group_count)} : i64, {precision_config(precision)}")
    ins = ", ".join(tensor_type(a) for a in in_avals)
    return [ctx.line(f"stablehlo.convolution({operands[0]}, {operands[1]}) dim_numbers = "
                     f"{dims}, window = {{{window}}} {{{attrs}}} : ({ins}) -> "
                     f"{tensor_type(out_avals[0])}")]
