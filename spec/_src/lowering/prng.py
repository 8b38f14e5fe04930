"""Lowering rules for the PRNG primitives: the Threefry-2x32 hash as uint32
StableHLO arithmetic, and key arrays as their uint32 key data (JAX lowers a
key array of shape ``s`` to a ``tensor<s x 2 x ui32>``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core.interpreter import trace_to_jaxpr
from spec._src.core.prng import U32
from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import (
    LoweringContext,
    LoweringRule,
    lower_body,
    handles_keys,
    physical_aval,
    tensor_type,
)

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


class _Values:
    """uint32/int32 ops where an operand of lower rank is broadcast to the
    other's shape at its use (jnp's broadcasting, as JAX's lowering writes
    it): each value is an (SSA name, type) pair."""

    def __init__(self, ctx: LoweringContext) -> None:
        self.ctx = ctx

    def const(self, value: Any, dtype: Any = U32) -> tuple[str, ArrayType]:
        arr = np.asarray(value, dtype)
        aval = ArrayType(arr.shape, arr.dtype)
        return self.ctx.constant(arr, aval), aval

    def to_shape(self, v: tuple[str, ArrayType], shape: tuple[int, ...]
                 ) -> tuple[str, ArrayType]:
        name, aval = v
        if tuple(aval.shape) == shape:
            return v
        lead = len(shape) - aval.ndim
        out = ArrayType(shape, aval.dtype)
        return self.ctx.broadcast(name, aval, out, range(lead, len(shape))), out

    def op(self, opname: str, a: tuple[str, ArrayType], b: tuple[str, ArrayType]
           ) -> tuple[str, ArrayType]:
        shape = tuple(np.broadcast_shapes(tuple(a[1].shape), tuple(b[1].shape)))
        a, b = self.to_shape(a, shape), self.to_shape(b, shape)
        return self.ctx.op(f"stablehlo.{opname}", [a[0], b[0]], [a[1], b[1]], a[1]), a[1]

    def scalar_of(self, v: tuple[str, ArrayType], k: int) -> tuple[str, ArrayType]:
        """Element k of a rank-1 value, as a scalar (slice, reshape)."""
        one = ArrayType((1,), v[1].dtype)
        piece = self.ctx.line(f"stablehlo.slice {v[0]} [{k}:{k + 1}] : "
                              f"({tensor_type(v[1])}) -> {tensor_type(one)}")
        scalar = ArrayType((), v[1].dtype)
        return self.ctx.op("stablehlo.reshape", [piece], [one], scalar), scalar


def _rotate_left(f: _Values, x: tuple[str, ArrayType], r: tuple[str, ArrayType]
                 ) -> tuple[str, ArrayType]:
    return f.op("or", f.op("shift_left", x, r),
                f.op("shift_right_logical", x, f.op("subtract", f.const(32), r)))


def _types(values: Sequence[tuple[str, ArrayType]]) -> str:
    return ", ".join(tensor_type(a) for _, a in values)


def _body(f: _Values, i: tuple[str, ArrayType], j: tuple[str, ArrayType],
          x0: tuple[str, ArrayType], x1: tuple[str, ArrayType],
          ks: list[tuple[str, ArrayType]], rot: list[tuple[str, ArrayType]]
          ) -> list[tuple[str, ArrayType]]:
    """One group of four rounds and its key injection; the carried key
    schedule and rotation tables rotate for the next group."""
    one = np.int32(1)
    j_next = f.op("add", j, f.const(one, np.int32))
    rs = [f.scalar_of(rot[0], k) for k in range(4)]
    for r in rs:
        x0 = f.op("add", x0, x1)
        x1 = f.op("xor", x0, _rotate_left(f, x1, r))
    x0 = f.op("add", x0, ks[0])
    x1 = f.op("add", x1, ks[1])
    count = f.op("add", j, f.const(one, np.int32))
    as_u32 = ArrayType((), U32)
    count_u = f.ctx.op("stablehlo.convert", [count[0]], [count[1]], as_u32), as_u32
    x1 = f.op("add", x1, count_u)
    i_next = f.op("add", i, f.const(one, np.int32))
    return [i_next, j_next, x0, x1, ks[1], ks[2], ks[0], rot[1], rot[0]]


def _while(f: _Values, init: list[tuple[str, ArrayType]]) -> list[tuple[str, ArrayType]]:
    """``stablehlo.while`` over (i, j, x0, x1, ks0, ks1, ks2, rot0, rot1)
    for i < 5, as ``fori_loop(0, 5, ...)`` lowers."""
    ctx = f.ctx
    name = ctx.fresh()
    carried = [(ctx.fresh(), a) for _, a in init]
    bound = ", ".join(f"{c} = {v}" for (c, _), (v, _) in zip(carried, init))
    ctx.lines.append(f"    {name}:{len(init)} = stablehlo.while({bound}) : {_types(init)}")
    ctx.lines.append("    cond {")
    limit = f.const(np.int32(5), np.int32)
    i32 = tensor_type(ArrayType((), np.dtype(np.int32)))
    flag = ctx.line(f"stablehlo.compare LT, {carried[0][0]}, {limit[0]}, SIGNED : "
                    f"({i32}, {i32}) -> tensor<i1>")
    ctx.lines += [f"      stablehlo.return {flag} : tensor<i1>", "    } do {"]
    i, j, x0, x1, k0, k1, k2, r0, r1 = carried
    out = _body(f, i, j, x0, x1, [k0, k1, k2], [r0, r1])
    ctx.lines += [f"      stablehlo.return {', '.join(v for v, _ in out)} : {_types(out)}",
                  "    }"]
    return [(f"{name}#{k}", a) for k, (_, a) in enumerate(init)]


def _threefry_function(ctx: LoweringContext, in_avals: Sequence[ArrayType],
                       out_aval: ArrayType) -> str:
    """The private function @threefry2x32 for these operand types (one per
    signature, as JAX's cached lowering of the hash)."""
    key = ("threefry2x32", tuple((tuple(a.shape), str(a.dtype)) for a in in_avals))
    if key in ctx.module.symbols:
        return ctx.module.symbols[key]
    symbol = ctx.module.function_name("threefry2x32")
    ctx.module.symbols[key] = symbol
    args = [(ctx.fresh(), a) for a in in_avals]
    outer, ctx.lines = ctx.lines, []
    try:
        f = _Values(ctx)
        rot = [f.const(np.asarray(r, np.uint32)) for r in _ROTATIONS]
        k1, k2, x1, x2 = args
        ks = [k1, k2, f.op("xor", f.op("xor", k1, k2), f.const(np.uint32(_PARITY)))]
        a, b = f.op("add", x1, ks[0]), f.op("add", x2, ks[1])
        zero = np.int32(0)
        j0, i0 = f.const(zero, np.int32), f.const(zero, np.int32)
        outs = _while(f, [i0, j0, a, b, ks[1], ks[2], ks[0], rot[0], rot[1]])
        body = ctx.lines
    finally:
        ctx.lines = outer
    res_t = f"{tensor_type(out_aval)}, {tensor_type(out_aval)}"
    params = ", ".join(f"{n}: {tensor_type(t)}" for n, t in args)
    ctx.module.functions += [
        f"  func.func private @{symbol}({params}) -> ({res_t}) {{",
        *body, f"    return {outs[2][0]}, {outs[3][0]} : {res_t}", "  }"]
    return symbol


def _full_counters(ctx: LoweringContext, operands: Sequence[str],
                   in_avals: Sequence[ArrayType], out_aval: ArrayType
                   ) -> tuple[list[str], list[ArrayType]]:
    """Operands rank-0 or at the result's shape (others broadcast first,
    size-1 axes stretching); a rank-0 counter whose key is rank-0 too is
    broadcast, as the loop carries counter + key at the result's shape."""
    shape = tuple(out_aval.shape)
    names, avals = list(operands), list(in_avals)
    for k, (o, a) in enumerate(zip(operands, in_avals)):
        key_scalar = k >= 2 and not in_avals[k - 2].shape
        if tuple(a.shape) == shape or (not a.shape and not key_scalar):
            continue
        dims = range(len(shape) - a.ndim, len(shape))
        full = ArrayType(shape, a.dtype)
        names[k], avals[k] = ctx.broadcast(o, a, full, dims), full
    return names, avals


def threefry2x32(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                 out_avals: Sequence[ArrayType]) -> list[str]:
    """JAX's CPU lowering of Threefry-2x32: a call of a private function
    whose ``stablehlo.while`` runs five groups of four rounds (rotations
    13 15 26 6 / 17 29 16 24; a key injection after each group, the key
    schedule rotating), uint32 arithmetic wrapping; operands of lower rank
    are broadcast where they are used (so the results have the broadcast
    shape)."""
    operands, in_avals = _full_counters(ctx, operands, in_avals, out_avals[0])
    symbol = _threefry_function(ctx, in_avals, out_avals[0])
    name = ctx.fresh()
    out_t = tensor_type(out_avals[0])
    ins = ", ".join(tensor_type(a) for a in in_avals)
    ctx.lines.append(f"    {name}:2 = call @{symbol}({', '.join(operands)}) : ({ins}) -> "
                     f"({out_t}, {out_t})")
    return [f"{name}#0", f"{name}#1"]


def on_key_data(fn: Callable[..., Any], multiple_results: bool = False) -> LoweringRule:
    """A rule that lowers the equation as ``fn`` traced on the operands'
    StableHLO types (keys as their uint32 data) with the equation's params:
    ``fn`` computes the results' key data from the operands' (JAX lowers
    the key primitives through its PRNG implementation's functions on key
    data the same way)."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        def flat(*args: Any) -> Sequence[Any]:
            out = fn(*args, **params)
            return list(out) if multiple_results else [out]
        jaxpr, _ = trace_to_jaxpr(flat, [physical_aval(a) for a in in_avals])
        return lower_body(ctx, jaxpr, operands)
    return handles_keys(rule)


@handles_keys
def same_data(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    """``random_wrap``, ``random_unwrap``, ``random_clone``: the key data is
    the operand itself."""
    return [operands[0]]


def rng_bit_generator(ctx: LoweringContext, operands: Sequence[str],
                      in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                      shape: tuple[int, ...], dtype: Any, algorithm: Any,
                      out_sharding: Any) -> list[str]:
    """JAX's lowering: a uint32[4] key bitcast to the uint64[2] state XLA's
    ``rng_bit_generator`` takes, and the new state bitcast back."""
    key, key_aval = operands[0], in_avals[0]
    state_t = "tensor<2xui64>"
    if key_aval.dtype == np.uint32:
        pairs = ctx.line(f"stablehlo.reshape {key} : ({tensor_type(key_aval)}) -> "
                         "tensor<2x2xui32>")
        key = ctx.line(f"stablehlo.bitcast_convert {pairs} : (tensor<2x2xui32>) -> {state_t}")
    state, bits = ctx.results(
        f"stablehlo.rng_bit_generator {key}, algorithm = {str(algorithm)[4:]} : ({state_t}) "
        f"-> ({state_t}, {tensor_type(out_avals[1])})", 2)
    if key_aval.dtype == np.uint32:
        pairs = ctx.line(f"stablehlo.bitcast_convert {state} : ({state_t}) -> "
                         "tensor<2x2xui32>")
        state = ctx.line(f"stablehlo.reshape {pairs} : (tensor<2x2xui32>) -> "
                         f"{tensor_type(key_aval)}")
    return [state, bits]


def rng_uniform(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                out_avals: Sequence[ArrayType], *, shape: tuple[int, ...]) -> list[str]:
    """``stablehlo.rng`` with the UNIFORM distribution, the shape a constant."""
    shape_aval = ArrayType((len(shape),), np.dtype(np.int64))
    dims = ctx.constant(np.asarray(shape, np.int64), shape_aval)
    a, b = operands
    scalar = tensor_type(in_avals[0])
    return [ctx.line(f"stablehlo.rng {a}, {b}, {dims}, distribution = UNIFORM : ({scalar}, "
                     f"{scalar}, {tensor_type(shape_aval)}) -> {tensor_type(out_avals[0])}")]
