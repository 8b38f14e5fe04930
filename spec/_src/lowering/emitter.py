"""The StableHLO text emitter: tensor types, SSA names, constants, and the
walk over a jaxpr that runs each equation's lowering rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core.interpreter import Jaxpr, Literal, Var
from spec._src.core.prng import U32, is_key_dtype
from spec._src.core.types import ArrayType
from spec._src.lowering.effects import (
    TOKEN,
    check_lowerable,
    discharged,
    ordered_effects,
    ref_arguments,
)
from spec._src.lowering.frontend_attributes import ambient, attach
from spec._src.lowering.module import ModuleState
from spec._src.lowering.sharding import arg_attr, explicit_sharding, tensor_sharding

# A rule gets the context, the operands' SSA names (in equation order), the
# operand and result types, and the equation's params; it returns the
# results' SSA names.
LoweringRule = Callable[..., list[str]]

_ELEMENT_TYPES: dict[str, str] = {
    "bool": "i1", "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
}


def element_type(dtype: Any) -> str:
    """The MLIR element type of a NumPy dtype (``int32`` -> ``i32``)."""
    name: str = np.dtype(dtype).name
    if name in _ELEMENT_TYPES:
        return _ELEMENT_TYPES[name]
    if name.startswith("uint"):
        return "ui" + name[4:]
    if name.startswith("int"):
        return "i" + name[3:]
    raise NotImplementedError(f"no StableHLO element type for dtype {name}")


def physical_aval(aval: ArrayType) -> ArrayType:
    """What a value of ``aval`` is in StableHLO: an array of PRNG keys is its
    uint32 key data (the key shape appended), as in JAX; others are as is."""
    if is_key_dtype(aval.dtype):
        key_shape: tuple[int, ...] = aval.dtype.impl.key_shape  # type: ignore[attr-defined]
        return ArrayType((*aval.shape, *key_shape), U32)
    return aval


def tensor_type(aval: ArrayType) -> str:
    """``tensor<2x3xf32>``; a scalar is ``tensor<f32>``; keys are their
    ``ui32`` data."""
    aval = physical_aval(aval)
    dims = "".join(f"{d}x" for d in aval.shape)
    return f"tensor<{dims}{element_type(aval.dtype)}>"


def dense_literal(value: np.ndarray) -> str:
    """The ``dense<...>`` attribute holding ``value`` bit for bit: a scalar
    float as its bit pattern in hex, an integer in decimal, an array as its
    raw little-endian bytes."""
    value = np.asarray(value)
    if value.ndim == 0:
        if value.dtype == np.bool_:
            return "dense<true>" if bool(value) else "dense<false>"
        if np.issubdtype(value.dtype, np.integer):
            return f"dense<{int(value)}>"
        if np.issubdtype(value.dtype, np.floating):
            bits = value.view(f"u{value.dtype.itemsize}")
            return f"dense<0x{int(bits):0{2 * value.dtype.itemsize}X}>"
    raw = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{raw.hex().upper()}">'


@dataclass
class LoweringContext:
    """The function body being written: rules call ``op`` (or ``line``)
    and get fresh SSA names back."""

    lines: list[str] = field(default_factory=list)
    _count: int = 0
    # Meshes, private functions, tokens: the module outside @main's body.
    module: ModuleState = field(default_factory=ModuleState)

    def fresh(self) -> str:
        name = f"%{self._count}"
        self._count += 1
        return name

    def line(self, text: str) -> str:
        """Emit ``%N = text``; returns ``%N``."""
        name = self.fresh()
        self.lines.append(f"    {name} = {text}")
        return name

    def op(self, opname: str, operands: Sequence[str], in_avals: Sequence[ArrayType],
           out_aval: ArrayType, attrs: str = "") -> str:
        """A one-result op in StableHLO's pretty form: ``: T`` when every
        operand has the result's type, else ``: (T1, T2) -> T``."""
        ins = [tensor_type(a) for a in in_avals]
        out = tensor_type(out_aval)
        sig = out if all(t == out for t in ins) else f"({', '.join(ins)}) -> {out}"
        args = ", ".join(operands)
        return self.line(f"{opname} {args}{attrs} : {sig}")

    def constant(self, value: np.ndarray, aval: ArrayType) -> str:
        return self.line(f"stablehlo.constant {dense_literal(value)} : {tensor_type(aval)}")

    def broadcast(self, operand: str, aval: ArrayType, out_aval: ArrayType,
                  dims: Sequence[int]) -> str:
        return self.line(f"stablehlo.broadcast_in_dim {operand}, dims = {_ints(dims)} : "
                         f"({tensor_type(aval)}) -> {tensor_type(out_aval)}")


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def ints(values: Sequence[int]) -> str:
    """``[1, 0]``, StableHLO's dense integer array syntax."""
    return _ints(values)


def _no_rule(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"MLIR translation rule for primitive '{name}' not found: spec declares no lowering "
        f"for it")


def handles_keys(rule: LoweringRule) -> LoweringRule:
    """Mark a rule that lowers key-typed operands and results as their key
    data (the key primitives' rules, calls emitted in place)."""
    rule.handles_keys = True  # type: ignore[attr-defined]
    return rule


def _check_keys(eqn: Any, rule: Any) -> None:
    """Other rules see a key array's logical shape, not its data's: a key
    operand or result there has no lowering."""
    avals = [a.aval for a in eqn.invars] + [v.aval for v in eqn.outvars]
    if not getattr(rule, "handles_keys", False) and any(is_key_dtype(a.dtype) for a in avals):
        raise NotImplementedError(f"lowering {eqn.primitive.name} on PRNG key arrays is not "
                                  "specified")


def lower_body(ctx: LoweringContext, jaxpr: Jaxpr, operands: Sequence[str]) -> list[str]:
    """Emit ``jaxpr``'s equations into ``ctx`` with its inputs bound to
    ``operands``; returns the SSA names of its outputs. A body that makes
    refs is discharged first."""
    jaxpr = discharged(jaxpr)
    env: dict[Var, str] = dict(zip(jaxpr.invars, operands))
    for v, c in zip(jaxpr.constvars, jaxpr.consts):
        env[v] = ctx.constant(np.asarray(c), v.aval)

    def read(atom: Any) -> str:
        if isinstance(atom, Literal):
            return ctx.constant(np.asarray(atom.val, dtype=atom.aval.dtype), atom.aval)
        return env[atom]

    for eqn in jaxpr.eqns:
        rule = eqn.primitive.lowering
        if not callable(rule):
            raise _no_rule(eqn.primitive.name)
        _check_keys(eqn, rule)
        ins = [read(a) for a in eqn.invars]
        outs = rule(ctx, ins, [a.aval for a in eqn.invars], [v.aval for v in eqn.outvars],
                    **eqn.params)
        attach(ctx, outs, ambient(eqn))
        outs = [explicit_constraint(ctx, o, v.aval) for o, v in zip(outs, eqn.outvars)]
        env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


@handles_keys
def inline_call(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                out_avals: Sequence[ArrayType], *, jaxpr: Jaxpr, **params: Any) -> list[str]:
    """A call primitive's body emitted in place (JAX emits a private
    function and a ``func.call``; the computation is the same)."""
    return lower_body(ctx, jaxpr, operands)


def lower_jaxpr(closed_jaxpr: Jaxpr, name: str = "f") -> str:
    """The StableHLO module text of a closed jaxpr, as ``jax.jit(f).lower``
    prints it: one public ``@main`` taking the jaxpr's inputs; its consts
    become constants. Raises NotImplementedError naming the first primitive
    without a lowering rule, ValueError for an effect none lowers. A
    program with refs is lowered discharged: a ref argument is its value,
    and its final contents are results after the program's own. Each
    ordered effect threads a ``!stablehlo.token`` from a first argument to
    a first result."""
    check_lowerable(closed_jaxpr)
    ordered = ordered_effects(closed_jaxpr)
    # A ref argument's buffer is donated to the result holding its final
    # contents (JAX's ``tf.aliasing_output``).
    n_results = len(ordered) + len(closed_jaxpr.outvars)
    aliases = {i: n_results + k for k, i in enumerate(ref_arguments(closed_jaxpr))}
    closed_jaxpr = discharged(closed_jaxpr)
    ctx = LoweringContext()
    # One token per ordered effect comes in first and goes out first.
    tokens = [f"%arg{i}" for i in range(len(ordered))]
    ctx.module.tokens = dict(zip(ordered, tokens))
    args = [f"%arg{i + len(ordered)}" for i in range(len(closed_jaxpr.invars))]
    params_text = [f"{t}: {TOKEN} {{jax.token = true}}" for t in tokens]
    params_text += [f"{a}: {tensor_type(v.aval)}{arg_attr(ctx.module, v.aval, aliases.get(i))}"
                    for i, (a, v) in enumerate(zip(args, closed_jaxpr.invars))]
    results = lower_body(ctx, closed_jaxpr, args)
    results = [ctx.module.tokens[e] for e in ordered] + results
    out_types = [TOKEN] * len(ordered) + [tensor_type(a.aval) for a in closed_jaxpr.outvars]
    out_text = [f"{TOKEN} {{jax.token = true}}"] * len(ordered) + [
        tensor_type(a.aval) + arg_attr(ctx.module, a.aval) for a in closed_jaxpr.outvars]
    header = (f"  func.func public @main({', '.join(params_text)}) -> "
              f"({', '.join(out_text)}) {{")
    ret = f"    return {', '.join(results)} : {', '.join(out_types)}" if results else "    return"
    return "\n".join([f"module @jit_{name} {{", *ctx.module.lines, header, *ctx.lines, ret,
                      "  }", *ctx.module.functions, "}", ""])


def explicit_constraint(ctx: LoweringContext, value: str, aval: ArrayType) -> str:
    """An explicitly sharded result pinned to its sharding with
    ``sdy.sharding_constraint``, as JAX does after each op of a program
    over an Explicit mesh; any other value as is."""
    s = explicit_sharding(aval)
    if s is None:
        return value
    sharding = tensor_sharding(ctx.module, s.mesh, s.spec, aval.ndim)
    return ctx.line(f"sdy.sharding_constraint {value} {sharding} : {tensor_type(aval)}")
