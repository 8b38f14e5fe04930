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
)

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


class _U32:
    """uint32 ops on one shape."""

    def __init__(self, ctx: LoweringContext, shape: Sequence[int]) -> None:
        self.ctx, self.aval = ctx, ArrayType(tuple(shape), U32)

    def op(self, name: str, a: str, b: str) -> str:
        return self.ctx.op(f"stablehlo.{name}", [a, b], [self.aval, self.aval], self.aval)

    def const(self, value: int) -> str:
        scalar = ArrayType((), U32)
        c = self.ctx.constant(np.asarray(value, U32), scalar)
        return self.ctx.broadcast(c, scalar, self.aval, ()) if self.aval.shape else c

    def rotate_left(self, x: str, r: int) -> str:
        return self.op("or", self.op("shift_left", x, self.const(r)),
                       self.op("shift_right_logical", x, self.const(32 - r)))


def _to_shape(ctx: LoweringContext, x: str, aval: ArrayType, shape: tuple[int, ...]) -> str:
    """``x`` broadcast to ``shape``: rank-0 operands stretch, the others
    share the rank and stretch their size-1 axes."""
    if tuple(aval.shape) == shape:
        return x
    dims = range(len(shape)) if aval.shape else ()
    return ctx.broadcast(x, aval, ArrayType(shape, U32), dims)


def threefry2x32(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                 out_avals: Sequence[ArrayType]) -> list[str]:
    """The 20 rounds of Threefry-2x32 (rotations 13 15 26 6 / 17 29 16 24,
    a key injection after every four) in uint32 arithmetic, which wraps.
    JAX's CPU lowering rolls the five groups of four rounds into a
    ``stablehlo.while``; spec writes them out: the same ops on the same
    values, so the same bits."""
    shape = tuple(out_avals[0].shape)
    k1, k2, x1, x2 = (_to_shape(ctx, o, a, shape) for o, a in zip(operands, in_avals))
    u = _U32(ctx, shape)
    ks = (k1, k2, u.op("xor", u.op("xor", k1, k2), u.const(_PARITY)))
    a, b = u.op("add", x1, ks[0]), u.op("add", x2, ks[1])
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            a = u.op("add", a, b)
            b = u.op("xor", u.rotate_left(b, r), a)
        a = u.op("add", a, ks[(group + 1) % 3])
        b = u.op("add", u.op("add", b, ks[(group + 2) % 3]), u.const(group + 1))
    return [a, b]


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
