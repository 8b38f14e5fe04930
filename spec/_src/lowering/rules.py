"""Lowering rules shared by primitive families; each declaration passes one
of these as its ``lowering`` section."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import (
    explicit_constraint,
    LoweringContext,
    LoweringRule,
    ints,
    key_dims_appended,
    keys_as_data,
    physical_aval,
    tensor_type,
)


def _select_by_index(ctx: LoweringContext, which: str, which_aval: ArrayType,
                     cases: list[str], out: ArrayType, offset: int) -> str:
    """Case ``which - offset`` of ``cases``, as JAX lowers an integer
    predicate: halves chosen by ``which < offset + mid``, recursively."""
    if len(cases) == 1:
        return cases[0]
    mid = len(cases) // 2
    scalar = ArrayType((), which_aval.dtype)
    bound = ctx.broadcast(ctx.constant(np.asarray(offset + mid, which_aval.dtype), scalar),
                          scalar, which_aval, ())
    kind = "SIGNED" if np.dtype(which_aval.dtype).kind == "i" else "UNSIGNED"
    t = tensor_type(which_aval)
    mask = tensor_type(ArrayType(which_aval.shape, np.dtype(np.bool_)))
    pred = ctx.line(f"stablehlo.compare LT, {which}, {bound}, {kind} : ({t}, {t}) -> {mask}")
    low = _select_by_index(ctx, which, which_aval, cases[:mid], out, offset)
    high = _select_by_index(ctx, which, which_aval, cases[mid:], out, offset + mid)
    return ctx.line(f"stablehlo.select {pred}, {low}, {high} : {mask}, {tensor_type(out)}")


def _to_shape(ctx: LoweringContext, operand: str, aval: ArrayType,
              out_aval: ArrayType) -> tuple[str, ArrayType]:
    """A scalar operand (a literal in the jaxpr) broadcast to the result's
    shape, and an operand of the result's rank with unit axes where the
    result's are longer (lax's implicit size-1 broadcasting) broadcast
    along them, as JAX's lowering does."""
    if aval.shape == out_aval.shape:
        return operand, aval
    # (over an Explicit mesh the broadcast is pinned to the result's sharding,
    # as JAX pins every broadcast it inserts)
    full = ArrayType(out_aval.shape, aval.dtype, sharding=out_aval.sharding)
    return explicit_constraint(ctx, ctx.broadcast(operand, aval, full, range(aval.ndim)),
                               full), full


def _unsupported(opname: str, params: dict[str, Any]) -> None:
    """Params that change what the op computes have no lowering yet."""
    set_params = {k: v for k, v in params.items()
                  if v is not None and k not in ("out_sharding", "sharding")}
    if set_params:
        raise NotImplementedError(f"lowering {opname} with {set_params} is not specified")


def elementwise(opname: str) -> LoweringRule:
    """An elementwise primitive that is the single StableHLO op ``opname``."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        _unsupported(opname, params)
        shaped = [_to_shape(ctx, o, a, out_avals[0]) for o, a in zip(operands, in_avals)]
        return [ctx.op(opname, [s[0] for s in shaped], [s[1] for s in shaped], out_avals[0])]
    return rule


def _comparison_type(dtype: Any, total_order: bool = False) -> str:
    dt = np.dtype(dtype)
    if T.is_inexact(dt):
        return "TOTALORDER" if total_order else "FLOAT"
    return "SIGNED" if T.is_signed_int(dt) else "UNSIGNED"


def compare(direction: str, total_order: bool = False) -> LoweringRule:
    """``stablehlo.compare`` in ``direction`` (EQ, NE, LT, LE, GT, GE); floats
    compared as IEEE values, or in XLA's total order."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        shape = ArrayType(out_avals[0].shape, in_avals[0].dtype)
        shaped = [_to_shape(ctx, o, a, shape) for o, a in zip(operands, in_avals)]
        x, y = (s[0] for s in shaped)
        kind = _comparison_type(in_avals[0].dtype, total_order)
        in_type = tensor_type(shaped[0][1])
        return [ctx.line(f"stablehlo.compare {direction}, {x}, {y}, {kind} : "
                         f"({in_type}, {in_type}) -> {tensor_type(out_avals[0])}")]
    return rule


def _select_n(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], key_data: bool = False) -> list[str]:
    """Two cases under a boolean predicate: ``stablehlo.select`` takes the
    true case first, select_n the false case first; a rank-0 predicate
    selects whole arrays, another of lower rank is broadcast, and so is
    any predicate of key arrays (to their data's shape), as JAX lowers it."""
    if len(operands) == 2:
        return [operands[1]]
    pred, pred_aval, out = operands[0], in_avals[0], out_avals[0]
    if pred_aval.shape != out.shape and (key_data or pred_aval.ndim):
        pred, pred_aval = _to_shape(ctx, pred, pred_aval, out)
    if np.dtype(pred_aval.dtype) != np.bool_:
        return [_select_by_index(ctx, pred, pred_aval, list(operands[1:]), out, 0)]
    if len(operands) != 3:
        raise NotImplementedError("lowering select_n is specified for a boolean predicate "
                                  f"and two cases, not {len(operands) - 1} cases")
    _, false_case, true_case = operands
    return [ctx.line(f"stablehlo.select {pred}, {true_case}, {false_case} : "
                     f"{tensor_type(pred_aval)}, {tensor_type(out)}")]


select_n = keys_as_data(_select_n, lambda i, o, params: {**params, "key_data": True})


def convert_element_type(ctx: LoweringContext, operands: Sequence[str],
                         in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
                         **params: Any) -> list[str]:
    """``stablehlo.convert``, as JAX lowers it: a complex operand converted
    to a real dtype keeps its real part first, and a conversion to bool is
    ``x != 0`` (then the convert), not a truncation of the bits."""
    (x,), aval, out = operands, in_avals[0], out_avals[0]
    if T.is_complex(np.dtype(aval.dtype)) and not T.is_complex(np.dtype(out.dtype)):
        aval = ArrayType(aval.shape, np.finfo(np.dtype(aval.dtype)).dtype)
        x = ctx.op("stablehlo.real", [x], [in_avals[0]], aval)
    if np.dtype(out.dtype) == np.bool_:
        scalar = ArrayType((), aval.dtype)
        zero = ctx.broadcast(ctx.constant(np.zeros((), aval.dtype), scalar), scalar, aval, ())
        t = tensor_type(aval)
        x = ctx.line(f"stablehlo.compare NE, {x}, {zero}, {_comparison_type(aval.dtype)} : "
                     f"({t}, {t}) -> {tensor_type(ArrayType(aval.shape, np.dtype(np.bool_)))}")
        aval = ArrayType(aval.shape, np.dtype(np.bool_))
    return [ctx.op("stablehlo.convert", [x], [aval], out)]


def _broadcast_in_dim(ctx: LoweringContext, operands: Sequence[str],
                     in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                     broadcast_dimensions: Sequence[int], **params: Any) -> list[str]:
    if len(operands) != 1:
        raise NotImplementedError("lowering broadcast_in_dim with dynamic shapes is not "
                                  "specified")
    return [ctx.broadcast(operands[0], in_avals[0], out_avals[0], broadcast_dimensions)]


broadcast_in_dim = keys_as_data(_broadcast_in_dim, key_dims_appended("broadcast_dimensions"))


def _reshape(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
            out_avals: Sequence[ArrayType], *, dimensions: Sequence[int] | None,
            **params: Any) -> list[str]:
    """``stablehlo.reshape``; with ``dimensions`` the operand is transposed
    by them first, as JAX lowers it."""
    x, aval = operands[0], in_avals[0]
    if dimensions is not None:
        moved = ArrayType(tuple(aval.shape[d] for d in dimensions), aval.dtype)
        x = ctx.op("stablehlo.transpose", [x], [aval], moved,
                   attrs=f", dims = {ints(dimensions)}")
        aval = moved
    return [ctx.op("stablehlo.reshape", [x], [aval], out_avals[0])]


def _whole_keys_moved(in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
                      params: dict[str, Any]) -> dict[str, Any]:
    """A reshape's transposition of a key array keeps each key's data last."""
    dims = params.get("dimensions")
    if dims is None:
        return params
    rank = in_avals[0].ndim
    return {**params, "dimensions": (*dims, *range(rank, physical_aval(in_avals[0]).ndim))}


reshape = keys_as_data(_reshape, _whole_keys_moved)


def _transpose(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], *, permutation: Sequence[int]) -> list[str]:
    return [ctx.op("stablehlo.transpose", operands, in_avals, out_avals[0],
                   attrs=f", dims = {ints(permutation)}")]


transpose = keys_as_data(_transpose, key_dims_appended("permutation"))


# The float8 types JAX treats as having no infinity: max and min start from
# their largest finite magnitude. Every other float casts +-inf (float4 and
# float6 saturate to their largest magnitude; float8_e8m0fnu has only NaN
# for it, so its max and min reductions are NaN, as JAX's are).
_NO_INFINITY = frozenset(np.dtype(t) for t in (
    ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz))


def _extreme_float(dt: np.dtype[Any], sign: int) -> np.ndarray:
    """``sign`` times infinity cast to ``dt``, or its largest finite magnitude
    for the types without infinity above."""
    if dt in _NO_INFINITY:
        return np.asarray(sign * ml_dtypes.finfo(dt).max, dt)  # type: ignore[no-untyped-call]
    return np.asarray(sign * np.inf).astype(dt)


def lowest(dtype: Any) -> np.ndarray:
    """The dtype's lowest value (-inf for floats, False for bool): a max's identity."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(False)
    if T.is_float(dt):
        return _extreme_float(dt, -1)
    return np.asarray(np.iinfo(dt).min, dt)


def _reducer(opname: str, init: Any) -> LoweringRule:
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], *, axes: Sequence[int],
             **params: Any) -> list[str]:
        scalar = ArrayType((), in_avals[0].dtype)
        start = ctx.constant(init(in_avals[0].dtype), scalar)
        return [ctx.line(
            f"stablehlo.reduce({operands[0]} init: {start}) applies {opname} across "
            f"dimensions = {ints(axes)} : ({tensor_type(in_avals[0])}, {tensor_type(scalar)})"
            f" -> {tensor_type(out_avals[0])}")]
    return rule


reduce_sum = _reducer("stablehlo.add", lambda dt: np.zeros((), dt))
reduce_max = _reducer("stablehlo.maximum", lowest)


def dot_general(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                out_avals: Sequence[ArrayType], *, dimension_numbers: Any,
                precision: Any = None, preferred_element_type: Any = None,
                algorithm: str | None = None, **params: Any) -> list[str]:
    """``stablehlo.dot_general`` with the operands' precisions
    (``precision = [HIGH, HIGHEST]``; none is DEFAULT twice); the result's
    dtype is the equation's. ``algorithm`` is the text of a dot algorithm's
    attribute (``<lhs_precision_type = bf16, ...>``), the precisions then
    DEFAULT (the dot primitive's rule gives it)."""
    (lc, rc), (lb, rb) = dimension_numbers
    batch = f", batching_dims = {ints(lb)} x {ints(rb)}" if len(lb) else ""
    names = ["DEFAULT", "DEFAULT"] if algorithm is not None else _precision_names(precision)
    attrs = (f"{batch}, contracting_dims = {ints(lc)} x {ints(rc)}, "
             f"precision = [{', '.join(names)}]")
    if algorithm is not None:
        attrs += f", algorithm = {algorithm}"
    return [ctx.op("stablehlo.dot_general", operands, in_avals, out_avals[0], attrs=attrs)]


def _precision_names(precision: Any) -> list[str]:
    """The two operands' precision names (DEFAULT, HIGH, HIGHEST)."""
    pair = (None, None) if precision is None else (
        tuple(precision) if isinstance(precision, (tuple, list)) else (precision, precision))
    names = ["DEFAULT" if p is None else getattr(p, "name", str(p)) for p in pair]
    if len(names) != 2 or any(n not in ("DEFAULT", "HIGH", "HIGHEST") for n in names):
        raise NotImplementedError(f"lowering dot_general with precision={precision} is not "
                                  "specified")
    return names


def highest(dtype: Any) -> np.ndarray:
    """The dtype's highest value (inf for floats, True for bool): a min's identity."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(True)
    if T.is_float(dt):
        return _extreme_float(dt, 1)
    return np.asarray(np.iinfo(dt).max, dt)


reduce_prod = _reducer("stablehlo.multiply", lambda dt: np.ones((), dt))
reduce_min = _reducer("stablehlo.minimum", highest)
reduce_and = _reducer("stablehlo.and", lambda dt: np.asarray(-1).astype(dt)
                     if np.dtype(dt).kind in "iu" else np.asarray(True))  # every bit set
reduce_or = _reducer("stablehlo.or", lambda dt: np.asarray(False))


def square(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
           out_avals: Sequence[ArrayType]) -> list[str]:
    """x * x for integers, ``chlo.square`` otherwise (as JAX lowers it)."""
    if T.is_int(np.dtype(in_avals[0].dtype)):
        return [ctx.op("stablehlo.multiply", [operands[0], operands[0]],
                       [in_avals[0], in_avals[0]], out_avals[0])]
    return [ctx.line(f"chlo.square {operands[0]} : {tensor_type(in_avals[0])} -> "
                     f"{tensor_type(out_avals[0])}")]


def clamp(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
          out_avals: Sequence[ArrayType]) -> list[str]:
    """``stablehlo.clamp`` takes lax's operand order (min, x, max); scalar
    bounds of a larger operand are broadcast to its shape first, as JAX
    lowers them."""
    out = out_avals[0]
    shaped = [_to_shape(ctx, o, a, out) if k != 1 else (o, a)
              for k, (o, a) in enumerate(zip(operands, in_avals))]
    return [ctx.op("stablehlo.clamp", [o for o, _ in shaped], [a for _, a in shaped], out)]


def iota(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
         out_avals: Sequence[ArrayType], *, dimension: int, **params: Any) -> list[str]:
    return [ctx.line(f"stablehlo.iota dim = {int(dimension)} : "
                     f"{tensor_type(out_avals[0])}")]


@keys_as_data
def squeeze(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
            out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    return [ctx.op("stablehlo.reshape", operands, in_avals, out_avals[0])]


@keys_as_data
def rev(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
        out_avals: Sequence[ArrayType], *, dimensions: Sequence[int]) -> list[str]:
    return [ctx.op("stablehlo.reverse", operands, in_avals, out_avals[0],
                   attrs=f", dims = {ints(dimensions)}")]


@keys_as_data
def concatenate(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                out_avals: Sequence[ArrayType], *, dimension: int) -> list[str]:
    ins = ", ".join(tensor_type(a) for a in in_avals)
    return [ctx.line(f"stablehlo.concatenate {', '.join(operands)}, dim = {int(dimension)} : "
                     f"({ins}) -> {tensor_type(out_avals[0])}")]


def _slice(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
           out_avals: Sequence[ArrayType], *, start_indices: Sequence[int],
           limit_indices: Sequence[int], strides: Sequence[int] | None) -> list[str]:
    """``[start:limit:stride, ...]``, the stride left out where it is 1."""
    steps = strides if strides is not None else [1] * len(start_indices)
    ranges = ", ".join(f"{int(s)}:{int(lim)}" + (f":{int(st)}" if int(st) != 1 else "")
                       for s, lim, st in zip(start_indices, limit_indices, steps))
    return [ctx.line(f"stablehlo.slice {operands[0]} [{ranges}] : "
                     f"({tensor_type(in_avals[0])}) -> {tensor_type(out_avals[0])}")]


def _whole_key_data(in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
                    params: dict[str, Any]) -> dict[str, Any]:
    """A slice of a key array takes the whole of each key's data."""
    data = physical_aval(in_avals[0]).shape[in_avals[0].ndim:]
    strides = params["strides"]
    return {"start_indices": (*params["start_indices"], *(0 for _ in data)),
            "limit_indices": (*params["limit_indices"], *data),
            "strides": None if strides is None else (*strides, *(1 for _ in data))}


slice_ = keys_as_data(_slice, _whole_key_data)


def pad(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
        out_avals: Sequence[ArrayType], *,
        padding_config: Sequence[tuple[int, int, int]]) -> list[str]:
    low, high, interior = ([int(c[k]) for c in padding_config] for k in range(3))
    return [ctx.line(
        f"stablehlo.pad {operands[0]}, {operands[1]}, low = {ints(low)}, high = {ints(high)}, "
        f"interior = {ints(interior)} : ({tensor_type(in_avals[0])}, "
        f"{tensor_type(in_avals[1])}) -> {tensor_type(out_avals[0])}")]


@keys_as_data
def copy(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
         out_avals: Sequence[ArrayType]) -> list[str]:
    """A value is never aliased in StableHLO: the copy is the operand."""
    return [operands[0]]
