"""The StableHLO text emitter: tensor types, SSA names, constants, and the
walk over a jaxpr that runs each equation's lowering rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core.interpreter import Jaxpr, Literal, Var
from spec._src.core.types import ArrayType

# A rule gets the context, the operands' SSA names (in equation order), the
# operand and result types, and the equation's params; it returns the
# results' SSA names.
LoweringRule = Callable[..., list[str]]
# A region's or function's body: given the context and its block arguments'
# names, it emits its ops and returns the names it returns.
RegionBody = Callable[["LoweringContext", list[str]], list[str]]

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


def tensor_type(aval: ArrayType) -> str:
    """``tensor<2x3xf32>``; a scalar is ``tensor<f32>``."""
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
    # The indentation of the lines being written: deeper inside a region.
    indent: str = "    "
    # Private functions of the module (``func.func private``), in order.
    functions: list[str] = field(default_factory=list)
    _function_names: dict[str, int] = field(default_factory=dict)
    _function_cache: dict[Any, str] = field(default_factory=dict)

    def fresh(self) -> str:
        name = f"%{self._count}"
        self._count += 1
        return name

    def line(self, text: str) -> str:
        """Emit ``%N = text``; returns ``%N``."""
        name = self.fresh()
        self.lines.append(f"{self.indent}{name} = {text}")
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

    # ---------------------------------------------- regions and functions

    def results(self, text: str, count: int) -> list[str]:
        """Emit an op with ``count`` results: ``%N:2 = text``; returns the
        results' names (``%N#0``, ``%N#1``; one result is ``%N``)."""
        if count == 0:
            self.lines.append(f"{self.indent}{text}")
            return []
        name = self.fresh()
        arity = f":{count}" if count > 1 else ""
        self.lines.append(f"{self.indent}{name}{arity} = {text}")
        return [name] if count == 1 else [f"{name}#{i}" for i in range(count)]

    def terminator(self, opname: str, operands: Sequence[str],
                   avals: Sequence[ArrayType]) -> None:
        """A block's last op (``stablehlo.return``, ``return``)."""
        if not operands:
            self.lines.append(f"{self.indent}{opname}")
            return
        types = ", ".join(tensor_type(a) for a in avals)
        self.lines.append(f"{self.indent}{opname} {', '.join(operands)} : {types}")

    def region(self, arg_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
               body: RegionBody) -> str:
        """The text of a one-block region, ``{ ^bb0(%a: T, ...): ...
        stablehlo.return ... }``, to pass to ``generic_op``. ``body(ctx,
        args)`` emits the block's ops through this same context (so SSA
        names stay unique in the function, and the block may use values
        defined before the op, as while and case bodies do) and returns the
        names the block returns, of types ``out_avals``."""
        args = [self.fresh() for _ in arg_avals]
        saved_lines, saved_indent = self.lines, self.indent
        self.lines, self.indent = [], saved_indent + "  "
        try:
            self.terminator("stablehlo.return", body(self, args), out_avals)
            block = self.lines
        finally:
            self.lines, self.indent = saved_lines, saved_indent
        head = ""
        if args:
            typed = ", ".join(f"{a}: {tensor_type(t)}" for a, t in zip(args, arg_avals))
            head = f"{saved_indent}^bb0({typed}):\n"
        return "{\n" + head + "\n".join(block) + f"\n{saved_indent}}}"

    def generic_op(self, opname: str, operands: Sequence[str], in_avals: Sequence[ArrayType],
                   out_avals: Sequence[ArrayType], properties: str = "",
                   regions: Sequence[str] = ()) -> list[str]:
        """An op in MLIR's generic form, ``"opname"(operands) <{properties}>
        (regions) : (T...) -> (T...)``; returns its results' names."""
        props = f" <{{{properties}}}>" if properties else ""
        regs = f" ({', '.join(regions)})" if regions else ""
        ins = ", ".join(tensor_type(a) for a in in_avals)
        outs = ", ".join(tensor_type(a) for a in out_avals)
        text = f'"{opname}"({", ".join(operands)}){props}{regs} : ({ins}) -> ({outs})'
        return self.results(text, len(out_avals))

    def function(self, name: str, in_avals: Sequence[ArrayType],
                 out_avals: Sequence[ArrayType], body: RegionBody,
                 key: Any = None) -> str:
        """Emit ``func.func private @name`` (``body(ctx, args)`` writes its
        ops and returns its results) after the module's other functions;
        returns its symbol, ``name`` made unique in the module as MLIR's
        symbol table does (``name_0``, ``name_1``, ...). A function emitted
        before under the same hashable ``key`` is reused, as JAX reuses the
        lowering of one callee traced at the same types."""
        cache_key = (name, tuple(in_avals), key)
        if key is not None and cache_key in self._function_cache:
            return self._function_cache[cache_key]
        uses = self._function_names.get(name, 0)
        self._function_names[name] = uses + 1
        symbol = name if uses == 0 else f"{name}_{uses - 1}"
        args = [f"%arg{i}" for i in range(len(in_avals))]
        saved_lines, saved_indent = self.lines, self.indent
        self.lines, self.indent = [], "    "
        try:
            self.terminator("return", body(self, args), out_avals)
            block = self.lines
        finally:
            self.lines, self.indent = saved_lines, saved_indent
        params = ", ".join(f"{a}: {tensor_type(t)}" for a, t in zip(args, in_avals))
        outs = ", ".join(tensor_type(a) for a in out_avals)
        self.functions.append("\n".join(
            [f"  func.func private @{symbol}({params}) -> ({outs}) {{", *block, "  }"]))
        if key is not None:
            self._function_cache[cache_key] = symbol
        return symbol

    def call(self, symbol: str, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType]) -> list[str]:
        """``func.call @symbol(operands)``; returns its results' names."""
        ins = ", ".join(tensor_type(a) for a in in_avals)
        outs = ", ".join(tensor_type(a) for a in out_avals)
        return self.results(f"func.call @{symbol}({', '.join(operands)}) : ({ins}) -> ({outs})",
                            len(out_avals))


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def ints(values: Sequence[int]) -> str:
    """``[1, 0]``, StableHLO's dense integer array syntax."""
    return _ints(values)


def _no_rule(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"MLIR translation rule for primitive '{name}' not found: spec declares no lowering "
        f"for it")


def lower_body(ctx: LoweringContext, jaxpr: Jaxpr, operands: Sequence[str]) -> list[str]:
    """Emit ``jaxpr``'s equations into ``ctx`` with its inputs bound to
    ``operands``; returns the SSA names of its outputs."""
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
        ins = [read(a) for a in eqn.invars]
        outs = rule(ctx, ins, [a.aval for a in eqn.invars], [v.aval for v in eqn.outvars],
                    **eqn.params)
        env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


def inline_call(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                out_avals: Sequence[ArrayType], *, jaxpr: Jaxpr, **params: Any) -> list[str]:
    """A call primitive's body emitted in place (JAX emits a private
    function and a ``func.call``; the computation is the same)."""
    return lower_body(ctx, jaxpr, operands)


def lower_jaxpr(closed_jaxpr: Jaxpr, name: str = "f") -> str:
    """The StableHLO module text of a closed jaxpr, as ``jax.jit(f).lower``
    prints it: one public ``@main`` taking the jaxpr's inputs; its consts
    become constants. Raises NotImplementedError naming the first primitive
    without a lowering rule."""
    ctx = LoweringContext()
    args = [f"%arg{i}" for i in range(len(closed_jaxpr.invars))]
    params_text = [f"{a}: {tensor_type(v.aval)}" for a, v in zip(args, closed_jaxpr.invars)]
    results = lower_body(ctx, closed_jaxpr, args)
    out_types = [tensor_type(a.aval) for a in closed_jaxpr.outvars]
    header = (f"  func.func public @main({', '.join(params_text)}) -> "
              f"({', '.join(out_types)}) {{")
    ret = f"    return {', '.join(results)} : {', '.join(out_types)}" if results else "    return"
    return "\n".join([f"module @jit_{name} {{", header, *ctx.lines, ret, "  }",
                      *ctx.functions, "}", ""])
