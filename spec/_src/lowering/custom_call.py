"""Lowering rules that emit ``stablehlo.custom_call``: FFI calls (the typed
FFI, API version 4, with the call's attributes as ``mhlo.backend_config``)
and host callbacks (``pure_callback``, ``io_callback``,
``jax.debug.callback``/``print``), which JAX 0.12 lowers on CPU to the
``xla_ffi_python_cpu_callback`` target, numbered by their order in the
module, and pinned to device 0 (``sdy.sharding_per_value`` over a maximal
mesh). A callback's Python function is registered with JAX's runtime when
JAX lowers it; spec's module names it by index only, so such a module is
text to compare, not to run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.effects import ordered_debug_effect, ordered_io_effect
from spec._src.core.types import ArrayType
from spec._src.lowering.effects import TOKEN
from spec._src.lowering.emitter import (
    LoweringContext,
    dense_literal,
    element_type,
    physical_aval,
    tensor_type,
)


_NO_LAYOUT = "dense<> : tensor<0xindex>"


def _layout(layout: Any, aval: ArrayType) -> str:
    """``dense<[1, 0]> : tensor<2xindex>``: minor-to-major dimension order
    (row major unless given)."""
    ndim = physical_aval(aval).ndim
    order = tuple(range(ndim - 1, -1, -1)) if layout is None else tuple(layout)
    if not order:
        return "dense<> : tensor<0xindex>"
    body = str(order[0]) if len(order) == 1 else "[" + ", ".join(map(str, order)) + "]"
    return f"dense<{body}> : tensor<{len(order)}xindex>"


def _attribute(value: Any) -> str:
    """An FFI attribute as MLIR prints it: ``true``, ``"abc"``, ``3 : i64``
    for a Python int, ``2.000000e+00 : f32`` for a float32, arrays as dense
    tensors."""
    value = getattr(value, "val", value)  # a hashable-array wrapper
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value:.6e} : f64"
    arr = np.asarray(value)
    if arr.ndim == 0:
        t = element_type(arr.dtype)
        if arr.dtype.kind in "iu":
            return f"{int(arr)} : {t}"
        return f"{float(arr):.6e} : {t}"
    shape = "x".join(map(str, arr.shape))
    if arr.dtype.kind in "iub":
        flat = arr.reshape(-1)
        items = (", ".join(str(int(v)) for v in flat) if arr.dtype.kind != "b"
                 else ", ".join("true" if v else "false" for v in flat))
        nested = f"[{items}]" if arr.ndim == 1 else dense_literal(arr)[6:-1]
        return f"dense<{nested}> : tensor<{shape}x{element_type(arr.dtype)}>"
    return f"{dense_literal(arr)} : tensor<{shape}x{element_type(arr.dtype)}>"


def _custom_call(ctx: LoweringContext, target: str, operands: Sequence[str],
                 in_types: Sequence[str], out_types: Sequence[str], attrs: list[str]
                 ) -> list[str]:
    """``%r = stablehlo.custom_call @target(%a, ...) {attrs} : (T...) -> R``;
    no result name when there are no results."""
    outs = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
    body = (f"stablehlo.custom_call @{target}({', '.join(operands)}) {{{', '.join(attrs)}}} : "
            f"({', '.join(in_types)}) -> {outs}")
    if not out_types:
        ctx.lines.append(f"    {body}")
        return []
    name = ctx.fresh()
    head = f"{name}:{len(out_types)}" if len(out_types) > 1 else name
    ctx.lines.append(f"    {head} = {body}")
    return [name] if len(out_types) == 1 else [f"{name}#{k}" for k in range(len(out_types))]


def ffi_call(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], *, target_name: str, has_side_effect: bool,
             input_layouts: Any, output_layouts: Any, input_output_aliases: Any,
             custom_call_api_version: int, legacy_backend_config: Any, attributes: Any,
             **params: Any) -> list[str]:
    if custom_call_api_version != 4:
        raise NotImplementedError(f"lowering ffi_call with custom_call_api_version="
                                  f"{custom_call_api_version} is not specified")
    config = ", ".join(f"{k} = {_attribute(v)}" for k, v in sorted(attributes))
    attrs = ['backend_config = ""']
    if has_side_effect:
        attrs.append("has_side_effect = true")
    attrs.append(f"mhlo.backend_config = {{{config}}}")
    attrs.append("operand_layouts = [" + ", ".join(
        _layout(lay, a) for lay, a in zip(input_layouts, in_avals)) + "]")
    if input_output_aliases:
        aliases = ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = "
            f"[{o}], operand_index = {i}, operand_tuple_indices = []>"
            if len(out_avals) > 1 else
            f"#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = {i}, "
            "operand_tuple_indices = []>"
            for i, o in input_output_aliases)
        attrs.append(f"output_operand_aliases = [{aliases}]")
    attrs.append("result_layouts = [" + ", ".join(
        _layout(lay, a) for lay, a in zip(output_layouts, out_avals)) + "]")
    return _custom_call(ctx, target_name, operands, [tensor_type(a) for a in in_avals],
                        [tensor_type(a) for a in out_avals], attrs)


def _ordered_effect(params: dict[str, Any]) -> Any:
    """The ordered effect a callback equation has, or None."""
    effect = params.get("effect")
    if getattr(effect, "ordered", False):
        return effect
    if params.get("ordered"):
        return ordered_io_effect if "result_avals" in params else ordered_debug_effect
    return None


def host_callback(side_effect: bool, with_results: bool = True) -> Any:
    """A callback's rule: the CPU callback custom call, numbered; an ordered
    one takes its effect's token first and gives the next one first (a
    debug callback's then carries no sharding, as in JAX)."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        effect = _ordered_effect(params)
        outs = list(out_avals) if with_results else []
        index = ctx.module.next_callback()
        mesh = ctx.module.maximal(0)
        ins_t = [tensor_type(a) for a in in_avals]
        outs_t = [tensor_type(a) for a in outs]
        in_layouts = [_layout(None, a) for a in in_avals]
        out_layouts = [_layout(None, a) for a in outs]
        ops = list(operands)
        if effect is not None:
            ops, ins_t, outs_t = [ctx.module.tokens[effect], *ops], [TOKEN, *ins_t], \
                [TOKEN, *outs_t]
            in_layouts, out_layouts = [_NO_LAYOUT, *in_layouts], [_NO_LAYOUT, *out_layouts]
        attrs = ['backend_config = ""']
        if side_effect:
            attrs.append("has_side_effect = true")
        attrs += [f"mhlo.backend_config = {{index = {index} : ui64}}",
                  f"operand_layouts = [{', '.join(in_layouts)}]",
                  f"result_layouts = [{', '.join(out_layouts)}]"]
        if effect is None or with_results:
            per_value = ", ".join([f"<{mesh}, []>"] * max(1, len(outs_t)))
            attrs.append(f"sdy.sharding = #sdy.sharding_per_value<[{per_value}]>")
        results = _custom_call(ctx, "xla_ffi_python_cpu_callback", ops, ins_t, outs_t, attrs)
        if effect is None:
            return results
        ctx.module.tokens[effect] = results[0]
        return results[1:]
    return rule
