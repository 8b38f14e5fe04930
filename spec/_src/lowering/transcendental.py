"""Lowering rules for the transcendental and special-function primitives:
the ``chlo`` ops JAX emits for them, the short StableHLO sequences of exp2
and log2, and ``lower_fun``, which lowers a primitive through a
decomposition written with lax functions (JAX's ``mlir.lower_fun``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core.interpreter import trace_to_jaxpr
from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import LoweringContext, LoweringRule, lower_body, tensor_type


def _shaped(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
            shape: tuple[int, ...]) -> list[tuple[str, ArrayType]]:
    """Each operand broadcast to ``shape`` (a scalar literal operand is the
    only one whose shape differs)."""
    out: list[tuple[str, ArrayType]] = []
    for o, a in zip(operands, in_avals):
        if tuple(a.shape) != tuple(shape):
            full = ArrayType(shape, a.dtype)
            o, a = ctx.broadcast(o, a, full, ()), full
        out.append((o, a))
    return out


def chlo(opname: str) -> LoweringRule:
    """An elementwise primitive that is the one ``chlo`` op ``opname``,
    printed in CHLO's form ``chlo.op %a, %b : T, T -> R``. An ``accuracy``
    param, if any, must be None (JAX's chlo ops take none)."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        if params.get("accuracy") is not None:
            raise NotImplementedError(f"lowering {opname} with accuracy="
                                      f"{params['accuracy']} is not specified")
        shaped = _shaped(ctx, operands, in_avals, tuple(out_avals[0].shape))
        ins = ", ".join(tensor_type(a) for _, a in shaped)
        return [ctx.line(f"chlo.{opname} {', '.join(o for o, _ in shaped)} : {ins} -> "
                         f"{tensor_type(out_avals[0])}")]
    return rule


def _no_accuracy(name: str, accuracy: Any) -> None:
    if accuracy is not None:
        raise NotImplementedError(f"lowering {name} with accuracy={accuracy} is not specified")


def _scalar_like(ctx: LoweringContext, value: float | int, aval: ArrayType) -> str:
    """``value`` in ``aval``'s dtype, broadcast to its shape (JAX's order:
    the constant, then ``broadcast_in_dim``)."""
    scalar = ArrayType((), aval.dtype)
    c = ctx.constant(np.asarray(value, aval.dtype), scalar)
    return ctx.broadcast(c, scalar, ArrayType(aval.shape, aval.dtype), ())


def exp2(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
         out_avals: Sequence[ArrayType], *, accuracy: Any = None) -> list[str]:
    """exp(log(2) * x), log(2) rounded to x's dtype first (a complex one
    with a zero imaginary part)."""
    _no_accuracy("exp2", accuracy)
    ln2 = _scalar_like(ctx, float(np.log(2)), in_avals[0])
    prod = ctx.op("stablehlo.multiply", [ln2, operands[0]], [in_avals[0]] * 2, out_avals[0])
    return [ctx.op("stablehlo.exponential", [prod], [out_avals[0]], out_avals[0])]


def log2(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
         out_avals: Sequence[ArrayType], *, accuracy: Any = None) -> list[str]:
    """log(x) * (1 / log(2)), the reciprocal rounded to x's dtype first; for
    a complex x each part of log(x) scaled by the real reciprocal."""
    _no_accuracy("log2", accuracy)
    aval = in_avals[0]
    log_x = ctx.op("stablehlo.log", operands, in_avals, out_avals[0])
    if np.dtype(aval.dtype).kind != "c":
        inv_ln2 = _scalar_like(ctx, 1.4426950408889634, aval)
        return [ctx.op("stablehlo.multiply", [log_x, inv_ln2], [aval] * 2, out_avals[0])]
    part = ArrayType(aval.shape, np.dtype(np.float32 if aval.dtype == np.complex64
                                          else np.float64))
    re = ctx.op("stablehlo.real", [log_x], [aval], part)
    im = ctx.op("stablehlo.imag", [log_x], [aval], part)
    inv_ln2 = _scalar_like(ctx, 1.4426950408889634, part)
    scaled = [ctx.op("stablehlo.multiply", [p, inv_ln2], [part] * 2, part) for p in (re, im)]
    return [ctx.op("stablehlo.complex", scaled, [part] * 2, out_avals[0])]


def lower_fun(fn: Callable[..., Any], multiple_results: bool = False) -> LoweringRule:
    """A rule that lowers the equation as the jaxpr of ``fn`` (called with
    tracers of the operands' types and the equation's params) emitted in
    place, dead equations included: JAX's ``mlir.lower_fun``, which lowers
    the traced jaxpr without pruning it."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        def flat(*args: Any) -> Sequence[Any]:
            out = fn(*args, **params)
            return list(out) if multiple_results else [out]
        jaxpr, _ = trace_to_jaxpr(flat, list(in_avals))
        # The decomposition's ops are named under the equation's name stack
        # (``jit(f)/jvp()/add`` for a differentiated one), as JAX names them.
        with ctx.scope(""):
            return lower_body(ctx, jaxpr, operands, live_only=False)
    return rule
