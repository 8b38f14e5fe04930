"""XLA metadata in the lowering: ``mhlo.frontend_attributes`` on the
operation that produces an equation's results, as JAX attaches them. The
ambient metadata an equation was bound under (``set_xla_metadata``) tags
the op producing its results; ``xla_metadata_value`` lowers to no op and
tags its operand's producer (keys already there win); ``xla_metadata_call``
is a private function whose ``call`` carries the call's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import LoweringContext, lower_body, tensor_type
from spec._src.lowering.frontend_attributes import KEY, attach, quoted


def value_rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
               out_avals: Sequence[ArrayType], *, xla_metadata_kvs: Any) -> list[str]:
    attach(ctx, operands, list(xla_metadata_kvs))
    return [operands[0]]


def call_rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], *, jaxpr: Any, xla_metadata: Any,
              ad_metadata: Any) -> list[str]:
    """``func.call @xla_metadata_call`` (``_0``, ``_1``, ... for later ones)
    of a private function holding the body, the call tagged."""
    symbol = ctx.module.function_name("xla_metadata_call")
    args = [ctx.fresh() for _ in jaxpr.invars]
    outer, ctx.lines = ctx.lines, []
    try:
        results = lower_body(ctx, jaxpr, args)
        body = ctx.lines
    finally:
        ctx.lines = outer
    in_types = [tensor_type(v.aval) for v in jaxpr.invars]
    out_types = [tensor_type(a) for a in out_avals]
    params = ", ".join(f"{a}: {t}" for a, t in zip(args, in_types))
    ret = (f"    return {', '.join(results)} : {', '.join(out_types)}" if results
           else "    return")
    ctx.module.functions += [
        f"  func.func private @{symbol}({params}) -> ({', '.join(out_types)}) {{",
        *body, ret, "  }"]
    tags = ""
    if xla_metadata:
        entries = ", ".join(f"{k} = {quoted(v)}" for k, v in sorted(xla_metadata))
        tags = f" {KEY}{entries}}}}}"
    sig = f"({', '.join(in_types)}) -> ({', '.join(out_types)})"
    # Located at the equation (``jit(f)/transpose(jvp())/xla_metadata_call``), as JAX's call.
    return ctx.results(f"call @{symbol}({', '.join(operands)}){tags} : {sig}", len(out_avals))
