"""Lowering rules for the transcendental and special-function primitives:
the ``chlo`` ops JAX emits for them, the short StableHLO sequences of exp2
and log2, and ``lower_fun``, which lowers a primitive through a
decomposition written with lax functions (JAX's ``mlir.lower_fun``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
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
    """exp(log(2) * x), log(2) rounded to x's dtype first."""
    _no_accuracy("exp2", accuracy)
    if np.dtype(in_avals[0].dtype).kind == "c":
        raise NotImplementedError("lowering exp2 of a complex operand is not specified")
    ln2 = _scalar_like(ctx, float(np.log(2)), in_avals[0])
    prod = ctx.op("stablehlo.multiply", [ln2, operands[0]], [in_avals[0]] * 2, out_avals[0])
    return [ctx.op("stablehlo.exponential", [prod], [out_avals[0]], out_avals[0])]


def log2(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
         out_avals: Sequence[ArrayType], *, accuracy: Any = None) -> list[str]:
    """log(x) * (1 / log(2)), the reciprocal rounded to x's dtype first."""
    _no_accuracy("log2", accuracy)
    if np.dtype(in_avals[0].dtype).kind == "c":
        raise NotImplementedError("lowering log2 of a complex operand is not specified")
    log_x = ctx.op("stablehlo.log", operands, in_avals, out_avals[0])
    inv_ln2 = _scalar_like(ctx, 1.4426950408889634, in_avals[0])
    return [ctx.op("stablehlo.multiply", [log_x, inv_ln2], [in_avals[0]] * 2, out_avals[0])]


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
        return lower_body(ctx, jaxpr, operands, live_only=False)
    return rule


# ------------------------------------------------------------- ldexp, frexp
# Both work on the IEEE fields of the float's bits, as JAX's lowering does:
# bitcast to the unsigned integer of the float's width, take the sign, the
# biased exponent and the mantissa apart, and rebuild; a zero exponent
# field (zero or a subnormal, which XLA flushes) gives the signed zero, an
# all-ones one (inf, nan) keeps the operand.

class _Bits:
    """Elementwise ops on one shape, for the bit-field rules below."""

    def __init__(self, ctx: LoweringContext, shape: Sequence[int]) -> None:
        self.ctx, self.shape = ctx, tuple(shape)

    def aval(self, dtype: Any) -> ArrayType:
        return ArrayType(self.shape, np.dtype(dtype))

    def const(self, value: int, dtype: Any) -> str:
        return _scalar_like(self.ctx, value, self.aval(dtype))

    def binary(self, opname: str, a: str, b: str, dtype: Any) -> str:
        t = self.aval(dtype)
        return self.ctx.op(f"stablehlo.{opname}", [a, b], [t, t], t)

    def compare(self, direction: str, a: str, b: str, dtype: Any) -> str:
        t = tensor_type(self.aval(dtype))
        kind = "SIGNED" if np.dtype(dtype).kind == "i" else "UNSIGNED"
        return self.ctx.line(f"stablehlo.compare {direction}, {a}, {b}, {kind} : ({t}, {t}) -> "
                             f"{tensor_type(self.aval(np.bool_))}")

    def select(self, pred: str, on_true: str, on_false: str, dtype: Any) -> str:
        return self.ctx.line(f"stablehlo.select {pred}, {on_true}, {on_false} : "
                             f"{tensor_type(self.aval(np.bool_))}, "
                             f"{tensor_type(self.aval(dtype))}")

    def convert(self, a: str, src: Any, dst: Any, op: str = "convert") -> str:
        return self.ctx.op(f"stablehlo.{op}", [a], [self.aval(src)], self.aval(dst))


def _fields(b: _Bits, x: str, dtype: Any) -> tuple[str, str, str, str, Any, Any]:
    """The bits ``u`` of ``x``, its sign, biased exponent and mantissa
    fields (unsigned integers of the float's width), and the finfo and
    unsigned dtype."""
    info = _finfo(dtype)
    ut = np.dtype(f"u{info.bits // 8}")
    u = b.convert(x, dtype, ut, "bitcast_convert")
    sign = b.binary("and", u, b.const(1 << (info.bits - 1), ut), ut)
    shifted = b.binary("shift_right_logical", u, b.const(info.nmant, ut), ut)
    exp = b.binary("and", shifted, b.const((1 << info.nexp) - 1, ut), ut)
    mant = b.binary("and", u, b.const((1 << info.nmant) - 1, ut), ut)
    return u, sign, exp, mant, info, ut


def _finfo(dtype: Any) -> Any:
    return ml_dtypes.finfo(np.dtype(dtype))  # type: ignore[no-untyped-call]


def _special_cases(b: _Bits, u: str, sign: str, exp: str, value: str, info: Any,
                   ut: Any) -> str:
    """``value`` where the exponent field is ordinary; the signed zero where
    it is 0; the operand's bits where it is all ones."""
    is_zero = b.compare("EQ", exp, b.const(0, ut), ut)
    is_special = b.compare("EQ", exp, b.const((1 << info.nexp) - 1, ut), ut)
    return b.select(is_special, u, b.select(is_zero, sign, value, ut), ut)


def ldexp(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
          out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    """x1 2^x2 by adding the (clamped) exponent to the exponent field:
    overflow gives the signed infinity, underflow the signed zero."""
    x1, x2 = operands
    dt, nt = np.dtype(in_avals[0].dtype), np.dtype(in_avals[1].dtype)
    b = _Bits(ctx, in_avals[0].shape)
    u, sign, exp, mant, info, ut = _fields(b, x1, dt)
    max_shift = 1 << (info.nexp + 1)
    if nt.itemsize < 4:  # widen so that max_shift fits
        wide = np.dtype(np.int32 if nt.kind == "i" else np.uint32)
        x2, nt = b.convert(x2, nt, wide), wide
    low = b.const(-max_shift if nt.kind == "i" else 0, nt)
    clamped = ctx.op("stablehlo.clamp", [low, x2, b.const(max_shift, nt)], [b.aval(nt)] * 3,
                     b.aval(nt))
    i32 = np.dtype(np.int32)
    shift = b.convert(clamped, nt, i32) if nt != i32 else clamped
    new_exp = b.binary("add", b.convert(exp, ut, i32), shift, i32)
    exp_mask = (1 << info.nexp) - 1
    inf_bits = b.binary("or", sign, b.const(exp_mask << info.nmant, ut), ut)
    exp_bits = b.binary("shift_left", b.convert(new_exp, i32, ut), b.const(info.nmant, ut), ut)
    normal = b.binary("or", b.binary("or", sign, exp_bits, ut), mant, ut)
    overflow = b.compare("GE", new_exp, b.const(exp_mask, i32), i32)
    underflow = b.compare("LE", new_exp, b.const(0, i32), i32)
    scaled = b.select(underflow, sign, b.select(overflow, inf_bits, normal, ut), ut)
    out = _special_cases(b, u, sign, exp, scaled, info, ut)
    return [b.convert(out, ut, dt, "bitcast_convert")]


def frexp(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
          out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    """The mantissa with the exponent field set to bias - 1 (so |m| is in
    [1/2, 1)) and the exponent field minus (bias - 1); 0 for zeros,
    infinities and nans, which keep their bits as the mantissa."""
    dt = np.dtype(in_avals[0].dtype)
    b = _Bits(ctx, in_avals[0].shape)
    u, sign, exp, mant, info, ut = _fields(b, operands[0], dt)
    bias = int(info.maxexp) - 1
    halved = b.binary("or", b.binary("or", sign, b.const((bias - 1) << info.nmant, ut), ut),
                      mant, ut)
    m = _special_cases(b, u, sign, exp, halved, info, ut)
    i32 = np.dtype(np.int32)
    is_zero = b.compare("EQ", exp, b.const(0, ut), ut)
    is_special = b.compare("EQ", exp, b.const((1 << info.nexp) - 1, ut), ut)
    either = ctx.op("stablehlo.or", [is_special, is_zero], [b.aval(np.bool_)] * 2,
                    b.aval(np.bool_))
    e = b.binary("subtract", b.convert(exp, ut, i32), b.const(bias - 1, i32), i32)
    return [b.convert(m, ut, dt, "bitcast_convert"), b.select(either, b.const(0, i32), e, i32)]
