"""The StableHLO text emitter: tensor types, SSA names, constants, and the
walk over a jaxpr that runs each equation's lowering rule."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core.interpreter import Eqn, Jaxpr, Literal, Var
from spec._src.core.prng import U32, is_key_dtype
from spec._src.core.source_info import traced_context
from spec._src.core.tokens import is_token_type
from spec._src.core.sharding import AbstractMesh, P, SingleDeviceSharding
from spec._src.core.types import ArrayType
from spec._src.lowering.effects import (
    TOKEN,
    check_lowerable,
    discharged,
    ordered_effects,
    ref_arguments,
)
from spec._src.lowering.donation import compiled_program, donation_plan
from spec._src.lowering.frontend_attributes import ambient, attach
from spec._src.lowering.module import ModuleState
from spec._src.lowering.sharding import (
    arg_attr,
    explicit_sharding,
    names_memory_kinds,
    placement_kind,
    tensor_sharding,
)

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
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2", "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e4m3b11fnuz": "f8E4M3B11FNUZ",
    "float8_e8m0fnu": "f8E8M0FNU", "float8_e3m4": "f8E3M4", "float8_e4m3": "f8E4M3",
    "float4_e2m1fn": "f4E2M1FN", "float6_e2m3fn": "f6E2M3FN", "float6_e3m2fn": "f6E3M2FN",
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
    ``ui32`` data; a token is ``!stablehlo.token``."""
    if is_token_type(aval):
        return "!stablehlo.token"
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


# Ops whose pretty form always spells the function type, even when the
# operand's type is the result's (a square transpose, a same-shape reshape, a
# dot_general of square matrices).
_FUNCTIONAL_TYPE_OPS = frozenset({"stablehlo.transpose", "stablehlo.reshape",
                                  "stablehlo.bitcast_convert", "stablehlo.dot_general"})


@dataclass
class LoweringContext:
    """The function body being written: rules call ``op`` (or ``line``)
    and get fresh SSA names back."""

    lines: list[str] = field(default_factory=list)
    _count: int = 0
    # Meshes, private functions, tokens: the module outside @main's body.
    module: ModuleState = field(default_factory=ModuleState)
    # The indentation of the lines being written: deeper inside a region.
    indent: str = "    "
    # The private functions ``function`` emitted, by callee and types.
    _function_cache: dict[Any, str] = field(default_factory=dict)
    # Debug locations: with ``debug_info`` every op ends with ``location``,
    # ``loc("jit(f)/while/body/add"(...))`` for the equation lowered now.
    debug_info: bool = False
    # The scope the equations being lowered sit in (``jit(f)/while/body``).
    name_stack: str = ""
    location: str = ""
    # The running equation's name stack (its scope and its own name stack)
    # and source, which nested scopes and ``named`` extend.
    _eqn_stack: str = ""
    _source: Any = None
    # Inside a decomposition traced at lowering time (``lower_fun``) dead
    # equations are emitted in nested bodies too: JAX prunes none there.
    keep_dead: bool = False

    def fresh(self) -> str:
        name = f"%{self._count}"
        self._count += 1
        return name

    def line(self, text: str) -> str:
        """Emit ``%N = text``; returns ``%N``."""
        name = self.fresh()
        self.lines.append(f"{self.indent}{name} = {text}{self._loc()}")
        return name

    def op(self, opname: str, operands: Sequence[str], in_avals: Sequence[ArrayType],
           out_aval: ArrayType, attrs: str = "") -> str:
        """A one-result op in StableHLO's pretty form: ``: T`` when every
        operand has the result's type (and the op's syntax allows it), else
        ``: (T1, T2) -> T``."""
        ins = [tensor_type(a) for a in in_avals]
        out = tensor_type(out_aval)
        short = all(t == out for t in ins) and opname not in _FUNCTIONAL_TYPE_OPS
        sig = out if short else f"({', '.join(ins)}) -> {out}"
        args = ", ".join(operands)
        return self.line(f"{opname} {args}{attrs} : {sig}")

    def constant(self, value: np.ndarray, aval: ArrayType) -> str:
        """A constant holding ``value`` in ``aval``'s dtype (a closed-over
        NumPy array keeps its own dtype, which the type canonicalises)."""
        value = np.asarray(value)
        if not is_key_dtype(aval.dtype) and value.dtype != np.dtype(aval.dtype):
            value = value.astype(np.dtype(aval.dtype))
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
            self.lines.append(f"{self.indent}{text}{self._loc()}")
            return []
        name = self.fresh()
        arity = f":{count}" if count > 1 else ""
        self.lines.append(f"{self.indent}{name}{arity} = {text}{self._loc()}")
        return [name] if count == 1 else [f"{name}#{i}" for i in range(count)]

    def terminator(self, opname: str, operands: Sequence[str],
                   avals: Sequence[ArrayType]) -> None:
        """A block's last op (``stablehlo.return``, ``return``)."""
        if not operands:
            self.lines.append(f"{self.indent}{opname}{self._loc()}")
            return
        types = ", ".join(tensor_type(a) for a in avals)
        self.lines.append(f"{self.indent}{opname} {', '.join(operands)} : {types}{self._loc()}")

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
                 key: Any = None, plain_result: bool = False) -> str:
        """Emit ``func.func private @name`` (``body(ctx, args)`` writes its
        ops and returns its results) after the module's other functions;
        returns its symbol, ``name`` made unique in the module as MLIR's
        symbol table does (``name_0``, ``name_1``, ...). A function emitted
        before under the same hashable ``key`` is reused, as JAX reuses the
        lowering of one callee traced at the same types. ``plain_result``:
        one result is written without parentheses."""
        cache_key = (name, tuple(in_avals), key)
        if key is not None and cache_key in self._function_cache:
            return self._function_cache[cache_key]
        symbol = self.module.function_name(name)
        args = [f"%arg{i}" for i in range(len(in_avals))]
        # The function takes its place in the module before its body is
        # lowered (functions the body calls come after it, as in JAX's).
        slot = len(self.module.functions)
        self.module.functions.append("")
        saved_lines, saved_indent = self.lines, self.indent
        self.lines, self.indent = [], "    "
        try:
            self.terminator("return", body(self, args), out_avals)
            block = self.lines
        finally:
            self.lines, self.indent = saved_lines, saved_indent
        params = ", ".join(f"{a}: {tensor_type(t)}" for a, t in zip(args, in_avals))
        outs = ", ".join(tensor_type(a) for a in out_avals)
        # (JAX's lowered functions print their results in parentheses; a
        # reducer JAX builds for a custom call prints one result bare)
        outs = outs if plain_result and len(out_avals) == 1 else f"({outs})"
        self.module.functions[slot] = "\n".join(
            [f"  func.func private @{symbol_text(symbol)}({params}) -> {outs} {{", *block,
             "  }"])
        if key is not None:
            self._function_cache[cache_key] = symbol
        return symbol

    def call(self, symbol: str, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType]) -> list[str]:
        """``func.call @symbol(operands)``; returns its results' names."""
        ins = ", ".join(tensor_type(a) for a in in_avals)
        outs = ", ".join(tensor_type(a) for a in out_avals)
        return self.results(f"func.call @{symbol_text(symbol)}({', '.join(operands)}) : "
                            f"({ins}) -> ({outs})", len(out_avals))

    # ------------------------------------------------------ debug locations

    def _loc(self) -> str:
        return f" {self.location}" if self.debug_info and self.location else ""

    @contextlib.contextmanager
    def scope(self, path: str, wrapped: bool = False) -> Iterator[None]:
        """Lower a nested body in the block: its equations' op names extend
        the running equation's name stack with ``path`` (``while/body``,
        ``cond/branch_0_fun``), as JAX's name stack does. ``wrapped``: the
        transforms that end the stack wrap ``path`` (an inline jit's
        ``jit(name)``, which JAX pushes as a scope)."""
        saved = (self.name_stack, self.location, self._eqn_stack, self._source)
        self.name_stack = (extended if wrapped else join_names)(self._eqn_stack, path)
        try:
            yield
        finally:
            self.name_stack, self.location, self._eqn_stack, self._source = saved

    @contextlib.contextmanager
    def detached(self) -> Iterator[None]:
        """Lower a private function's body: its op names start afresh (JAX
        names them relative to the call)."""
        saved = (self.name_stack, self.location, self._eqn_stack, self._source)
        self.name_stack = self._eqn_stack = ""
        # (its constants and literals are unnamed, as JAX leaves them)
        self.location = "loc(unknown)"
        self._source = None
        try:
            yield
        finally:
            self.name_stack, self.location, self._eqn_stack, self._source = saved

    @contextlib.contextmanager
    def named(self, path: str) -> Iterator[None]:
        """Ops emitted in the block carry the op name ``path`` under the
        running equation's name stack (a rule that emits ops JAX names
        after the functions it lowers, as scan's ``while``)."""
        saved = self.location
        self.location = location(join_names(self._eqn_stack, path), self._source)
        try:
            yield
        finally:
            self.location = saved

    @contextlib.contextmanager
    def located(self, op_name: str | None) -> Iterator[None]:
        """Ops emitted in the block carry the op name ``op_name`` alone, at
        the running equation's source (a private function's ops, which JAX
        names relative to the function); None: ``loc(unknown)``."""
        saved = self.location
        self.location = "loc(unknown)" if op_name is None else location(op_name, self._source)
        try:
            yield
        finally:
            self.location = saved

    def enter(self, eqn_stack: str, primitive: str, source: Any) -> None:
        """Set the running equation: its ops are at ``eqn_stack/primitive``."""
        self._eqn_stack, self._source = eqn_stack, source
        self.location = location(join_names(eqn_stack, primitive), source)


_BARE_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*")


def symbol_text(symbol: str) -> str:
    """A symbol as MLIR spells it after ``@``: bare when it is an
    identifier, else quoted (``@"<lambda>"``)."""
    return symbol if _BARE_SYMBOL.fullmatch(symbol) else _quoted(symbol)


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def ints(values: Sequence[int]) -> str:
    """``[1, 0]``, StableHLO's dense integer array syntax."""
    return _ints(values)


def join_names(*parts: str) -> str:
    """Name-stack parts joined with ``/``, empty ones left out."""
    return "/".join(p for p in parts if p)


def extended(stack: str, scope: str) -> str:
    """The name stack ``stack`` extended by the scope ``scope``: transforms
    that end the stack with nothing inside (``transpose(jvp())``) wrap it,
    as JAX's name stack wraps the scope after a transform."""
    opened = stack.rstrip(")")
    if opened == stack or not opened.endswith("("):
        return join_names(stack, scope)
    return f"{opened}{scope}{stack[len(opened):]}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _file_location(source: Any) -> str:
    """``"qualname"("file":line:col to :end)`` for an equation's user frame
    (0-based columns, as JAX prints them), or empty without one."""
    code = getattr(source, "code", None)
    if code is None:
        return ""
    positions = list(code.co_positions())
    index = source.lasti // 2
    line, end_line, col, end_col = (positions[index] if 0 <= index < len(positions)
                                    else (None, None, None, None))
    if line is None:
        return f"{_quoted(code.co_qualname)}({_quoted(code.co_filename)}:{code.co_firstlineno}:0)"
    where = f"{_quoted(code.co_filename)}:{line}:{col or 0}"
    if end_col is not None:
        where += f" to {'' if end_line == line else end_line}:{end_col}"
    return f"{_quoted(code.co_qualname)}({where})"


def location(op_name: str, source: Any = None) -> str:
    """``loc("op_name"(file location))``: MLIR's name location, whose name
    XLA keeps as the op's ``op_name`` metadata."""
    inner = _file_location(source)
    return f"loc({_quoted(op_name)}({inner}))" if inner else f"loc({_quoted(op_name)})"


def _no_rule(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"MLIR translation rule for primitive '{name}' not found: spec declares no lowering "
        f"for it")


def handles_keys(rule: LoweringRule) -> LoweringRule:
    """Mark a rule that lowers key-typed operands and results as their key
    data (the key primitives' rules, calls emitted in place)."""
    rule.handles_keys = True  # type: ignore[attr-defined]
    return rule


ParamsForData = Callable[[Sequence[ArrayType], Sequence[ArrayType], dict[str, Any]],
                         dict[str, Any]]


def _key_data_dims(avals: Sequence[ArrayType]) -> tuple[int, ...]:
    """The trailing dimensions a key array's data adds (a Threefry key's
    ``(2,)``); ``()`` when no value is key-typed."""
    for aval in avals:
        if is_key_dtype(aval.dtype):
            return tuple(aval.dtype.impl.key_shape)  # type: ignore[attr-defined]
    return ()


def keys_as_data(rule: LoweringRule, params_for_data: ParamsForData | None = None
                 ) -> LoweringRule:
    """``rule`` for key-typed values too: it is given their key data's types
    (the key data's dimensions after the logical ones, as JAX's physical
    lowering of a key array), and ``params_for_data(in_avals, out_avals,
    params)`` the params extended to those dimensions (a permutation or
    slice that names every dimension); rules whose params name only leading
    dimensions need none."""
    def data_rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                  out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        if _key_data_dims([*in_avals, *out_avals]):
            if params_for_data is not None:
                params = params_for_data(in_avals, out_avals, params)
            in_avals = [physical_aval(a) for a in in_avals]
            out_avals = [physical_aval(a) for a in out_avals]
        return rule(ctx, operands, in_avals, out_avals, **params)
    data_rule.__doc__ = rule.__doc__
    return handles_keys(data_rule)


def key_dims_appended(*names: str) -> ParamsForData:
    """Params that number dimensions up to the result's rank (a
    permutation, broadcast dimensions), extended by the key data's."""
    def extend(in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType],
               params: dict[str, Any]) -> dict[str, Any]:
        rank, extra = out_avals[0].ndim, len(_key_data_dims([*in_avals, *out_avals]))
        return {**params, **{n: (*params[n], *range(rank, rank + extra)) for n in names}}
    return extend


def _check_keys(eqn: Any, rule: Any) -> None:
    """Other rules see a key array's logical shape, not its data's: a key
    operand or result there has no lowering."""
    avals = [a.aval for a in eqn.invars] + [v.aval for v in eqn.outvars]
    if not getattr(rule, "handles_keys", False) and any(is_key_dtype(a.dtype) for a in avals):
        raise NotImplementedError(f"lowering {eqn.primitive.name} on PRNG key arrays is not "
                                  "specified")


def _live(jaxpr: Jaxpr) -> list[Eqn]:
    """The equations whose results are used (or that have effects): JAX
    drops the rest before lowering (a gradient's unused primal value)."""
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    live: list[Eqn] = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.effects or any(v in used for v in eqn.outvars):
            live.append(eqn)
            used.update(a for a in eqn.invars if isinstance(a, Var))
    return live[::-1]


def lower_body(ctx: LoweringContext, jaxpr: Jaxpr, operands: Sequence[str],
               live_only: bool = True, literals_at_scope: bool = False) -> list[str]:
    """Emit ``jaxpr``'s equations into ``ctx`` with its inputs bound to
    ``operands``; returns the SSA names of its outputs. A body that makes
    refs is discharged first. With ``live_only`` False every equation is
    emitted, dead ones included (a decomposition traced at lowering time,
    which JAX does not prune; so are the bodies nested in it, while
    ``ctx.keep_dead``). Literals are located at the enclosing
    equation, or with ``literals_at_scope`` at the body's own name stack (a
    scan body's, ``while/body/eval_jaxpr``, as JAX locates them)."""
    jaxpr = discharged(jaxpr)
    env: dict[Var, str] = dict(zip(jaxpr.invars, operands))
    for v, c in zip(jaxpr.constvars, jaxpr.consts):
        env[v] = ctx.constant(np.asarray(c), v.aval)

    def read(atom: Any) -> str:
        if not isinstance(atom, Literal):
            return env[atom]
        saved = ctx.location
        if literals_at_scope:
            ctx.location = location(ctx.name_stack, ctx._source)
        try:
            return ctx.constant(np.asarray(atom.val, dtype=atom.aval.dtype), atom.aval)
        finally:
            ctx.location = saved

    # Literals and results are located where the enclosing equation is.
    outer = (ctx.location, ctx._eqn_stack, ctx._source)
    for eqn in _live(jaxpr) if live_only and not ctx.keep_dead else jaxpr.eqns:
        rule = eqn.primitive.lowering
        if not callable(rule):
            raise _no_rule(eqn.primitive.name)
        _check_keys(eqn, rule)
        ins = [read(a) for a in eqn.invars]
        info = eqn.source_info
        ctx.enter(join_names(ctx.name_stack, str(getattr(info, "name_stack", ""))),
                  eqn.primitive.name, info)
        with traced_context(info):
            outs = rule(ctx, ins, [a.aval for a in eqn.invars], [v.aval for v in eqn.outvars],
                        **eqn.params)
        attach(ctx, outs, ambient(eqn))
        if eqn.primitive.name != "device_put":  # (which lowers to nothing on CPU)
            outs = [explicit_constraint(ctx, o, v.aval) for o, v in zip(outs, eqn.outvars)]
        ctx.location, ctx._eqn_stack, ctx._source = outer
        env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


@handles_keys
def jit_call(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], *, jaxpr: Jaxpr, **params: Any) -> list[str]:
    """A nested ``jit``: ``func.call`` of a private function named after the
    jitted function (``@inner``, then ``@inner_0``, ... for other bodies),
    emitted once per body and types, as JAX 0.12 lowers it; the call is
    located at ``jit(name)`` and the function's ops are named relative to
    it. A jit with ``inline=True``, and one whose body has ordered effects
    (whose tokens would have to thread through the function), is emitted in
    place, its ops named under ``jit(name)``."""
    name = params.get("name")
    if not name or params.get("inline") or ordered_effects(jaxpr):
        with ctx.scope(f"jit({name})" if name else "", wrapped=True):
            return lower_body(ctx, jaxpr, operands)

    ins, outs = params.get("in_shardings"), params.get("out_shardings")

    def placed_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        if ins is None or outs is None:
            return lower_body(ctx, jaxpr, args)
        # The operands and results jit places are pinned where it places them.
        args = [_placed(ctx, a, v.aval, s) for a, v, s in zip(args, jaxpr.invars, ins)]
        return [_placed(ctx, r, v.aval, s)
                for r, v, s in zip(lower_body(ctx, jaxpr, args), jaxpr.outvars, outs)]

    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        with ctx.detached():
            results = placed_body(ctx, args)
        ctx.location = "loc(unknown)"  # (the function's return)
        return results
    saved = ctx.location
    symbol = ctx.function(str(name), in_avals, out_avals, body, key=("jit", id(jaxpr)))
    ctx.location = saved
    with ctx.located(extended(ctx._eqn_stack, f"jit({name})")):
        return ctx.call(symbol, operands, in_avals, out_avals)


def _placed(ctx: LoweringContext, value: str, aval: ArrayType, sharding: Any) -> str:
    """``value`` pinned to a Sharding with ``sdy.sharding_constraint`` (a
    single device's: replicated over the empty mesh); an unspecified entry
    leaves it as is."""
    if isinstance(sharding, SingleDeviceSharding):
        text = tensor_sharding(ctx.module, AbstractMesh((), ()), P(), aval.ndim)
        return ctx.line(f"sdy.sharding_constraint {value} {text} : {tensor_type(aval)}")
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or mesh.empty:
        return value
    mesh = getattr(mesh, "abstract_mesh", mesh)
    text = tensor_sharding(ctx.module, mesh, sharding.spec, aval.ndim)
    return ctx.line(f"sdy.sharding_constraint {value} {text} : {tensor_type(aval)}")


def _keys_left_open(ctx: LoweringContext, value: str, aval: ArrayType) -> str:
    """A key array argument or result of @main that nothing places: its
    logical dimensions left to the partitioner (``{?}``), its key data's
    replicated (``{}``), over the empty mesh, as JAX pins it (a key's words
    are never split across devices); any other value as is."""
    if not is_key_dtype(aval.dtype) or explicit_sharding(aval) is not None:
        return value
    phys = physical_aval(aval)
    text = tensor_sharding(ctx.module, AbstractMesh((), ()), P(), phys.ndim,
                           open_dims=range(aval.ndim))
    return ctx.line(f"sdy.sharding_constraint {value} {text} : {tensor_type(phys)}")


def lower_jaxpr(closed_jaxpr: Jaxpr, name: str = "f", debug_info: bool = False,
                arg_names: Sequence[str] | None = None,
                result_names: Sequence[str] | None = None, num_partitions: int = 1,
                arg_placements: Sequence[Any] | None = None,
                result_placements: Sequence[Any] | None = None,
                donated: Sequence[bool] | None = None, keep_unused: bool = True) -> str:
    """The StableHLO module text of a closed jaxpr, as ``jax.jit(f).lower``
    prints it: one public ``@main`` taking the jaxpr's inputs; its consts
    become constants. With ``debug_info`` each op carries its location,
    named by the name stack (``jit(f)/while/body/add``), and each argument
    its name from ``arg_names`` (``x``, ``y[0]``), as
    ``as_text(debug_info=True)`` prints. The module's attributes say the
    program runs on ``num_partitions`` devices (and one replica); each
    result carries its ``jax.result_info`` name from ``result_names``
    (``result``, ``result[0]``, ``result['a']``); an argument placed on a
    mesh (``arg_placements``: a NamedSharding, or None) whose type names no
    explicit sharding is annotated with its placement, as JAX annotates an
    Auto-mode argument (a result in ``result_placements`` likewise: jit's
    out_shardings). Raises NotImplementedError naming
    the first primitive without a lowering rule, ValueError for an effect
    none lowers. A program with refs is lowered discharged: a ref argument
    is its value, and its final contents are results after the program's
    own. Each ordered effect threads a ``!stablehlo.token`` from a first
    argument to a first result. ``donated`` arguments alias results or are
    buffer donors (``donation_plan``). Without ``keep_unused`` the arguments
    nothing reads are left out (jit's default, as JAX lowers it)."""
    check_lowerable(closed_jaxpr)
    ordered = ordered_effects(closed_jaxpr)
    # A ref argument's buffer is donated to the result holding its final
    # contents (JAX's ``tf.aliasing_output``).
    n_results = len(ordered) + len(closed_jaxpr.outvars)
    aliases = {i: n_results + k for k, i in enumerate(ref_arguments(closed_jaxpr))}
    # JAX's dead-code elimination before lowering, calls' unused results too.
    original = closed_jaxpr
    closed_jaxpr, kept = compiled_program(closed_jaxpr, keep_unused)
    if not keep_unused:
        aliases = {kept.index(i): k for i, k in aliases.items() if i in kept}
        arg_names = None if arg_names is None else [arg_names[i] for i in kept]
        arg_placements = None if arg_placements is None else [
            arg_placements[i] for i in kept if i < len(arg_placements)]
    top = f"jit({name})"
    ctx = LoweringContext(debug_info=debug_info, name_stack=top, location=location(top),
                          _eqn_stack=top)
    # One token per ordered effect comes in first and goes out first.
    tokens = [f"%arg{i}" for i in range(len(ordered))]
    ctx.module.tokens = dict(zip(ordered, tokens))
    args = [f"%arg{i + len(ordered)}" for i in range(len(closed_jaxpr.invars))]
    placements = list(arg_placements or [])
    placements += [None] * (len(closed_jaxpr.invars) - len(placements))
    placed = list(result_placements or [])
    placed += [None] * (len(closed_jaxpr.outvars) - len(placed))
    kinds = names_memory_kinds(closed_jaxpr, [*placements, *placed])
    donors: frozenset[int] = frozenset()
    if donated is not None and num_partitions == 1:
        plan = donation_plan(original, donated, keep_unused, stacklevel=3)
        aliases, donors = plan.aliases, plan.donors
    arg_text = [f"{a}: {tensor_type(v.aval)}"
                f"{arg_attr(ctx.module, v.aval, aliases.get(i), placed=placements[i],
                            kind=_arg_kind(kinds, placements[i]))}"
                for i, (a, v) in enumerate(zip(args, closed_jaxpr.invars))]
    arg_text = [t[:-1] + ", jax.buffer_donor = true}" if i in donors and t.endswith("}")
                else t + " {jax.buffer_donor = true}" if i in donors else t
                for i, t in enumerate(arg_text)]
    if debug_info and arg_names is not None:
        arg_text = [f"{p} loc({_quoted(n)})" for p, n in zip(arg_text, arg_names)]
    params_text = [f"{t}: {TOKEN} {{jax.token = true}}" for t in tokens] + arg_text
    args = [_keys_left_open(ctx, a, v.aval) if p is None else a
            for a, v, p in zip(args, closed_jaxpr.invars, placements)]
    results = lower_body(ctx, closed_jaxpr, args)
    results = [_keys_left_open(ctx, r, v.aval) if p is None else r
               for r, v, p in zip(results, closed_jaxpr.outvars, placed)]
    result_kinds = [_result_kind(kinds, p, v.aval) for p, v in zip(placed, closed_jaxpr.outvars)]
    if kinds:
        results = [_annotated(ctx, r, v.aval, k) if p is not None or explicit_sharding(v.aval)
                   else r for r, v, p, k in zip(results, closed_jaxpr.outvars, placed,
                                                result_kinds)]
    results = [ctx.module.tokens[e] for e in ordered] + results
    out_types = [TOKEN] * len(ordered) + [tensor_type(a.aval) for a in closed_jaxpr.outvars]
    infos: list[str | None] = list(result_names) if result_names is not None else []
    infos += [None] * (len(closed_jaxpr.outvars) - len(infos))
    out_text = [f"{TOKEN} {{jax.token = true}}"] * len(ordered) + [
        tensor_type(a.aval) + arg_attr(ctx.module, a.aval, info=info, placed=p, kind=k)
        for a, info, p, k in zip(closed_jaxpr.outvars, infos, placed, result_kinds)]
    header = (f"  func.func public @main({', '.join(params_text)}) -> "
              f"({', '.join(out_text)}) {{")
    ret = f"    return {', '.join(results)} : {', '.join(out_types)}" if results else "    return"
    ret += ctx._loc()
    # JAX's module symbol: the function name with ``<>`` dropped and other
    # characters outside [\w.-] made ``_`` (``<lambda>`` gives ``jit__lambda``).
    symbol = re.sub(r"[^\w.-]", "_", name.replace("<", "_").replace(">", ""))
    attributes = (f"attributes {{mhlo.num_partitions = {num_partitions} : i32, "
                  "mhlo.num_replicas = 1 : i32}")
    return "\n".join([f"module @jit_{symbol} {attributes} {{", *ctx.module.lines, header,
                      *ctx.lines, ret,
                      "  }", *ctx.module.functions, "}", ""])


# Memory kinds. Where a program names a memory other than device memory
# (``names_memory_kinds``), JAX writes the memory kind of every argument
# with a placement (jit's in_shardings, or a committed argument's sharding)
# and of every result: its out_shardings entry's, else its type's. A result
# whose placement is given (an out_shardings entry, or an explicit sharding
# in its type) is moved there by ``annotate_device_placement``.


def _arg_kind(kinds: bool, placement: Any) -> str | None:
    return placement_kind(placement) if kinds and placement is not None else None


def _result_kind(kinds: bool, placement: Any, aval: ArrayType) -> str | None:
    if not kinds:
        return None
    if placement is not None:
        return placement_kind(placement)
    return placement_kind(aval.memory_space)


def _annotated(ctx: LoweringContext, value: str, aval: ArrayType, kind: str | None) -> str:
    t = tensor_type(aval)
    return ctx.line(f'stablehlo.custom_call @annotate_device_placement({value}) '
                    f'{{backend_config = "", has_side_effect = true, mhlo.frontend_attributes = '
                    f'{{_xla_buffer_placement = "{kind}"}}}} : ({t}) -> {t}')


def explicit_constraint(ctx: LoweringContext, value: str, aval: ArrayType) -> str:
    """An explicitly sharded result pinned to its sharding with
    ``sdy.sharding_constraint``, as JAX does after each op of a program
    over an Explicit mesh; any other value as is."""
    s = explicit_sharding(aval)
    if s is None:
        return value
    sharding = tensor_sharding(ctx.module, s.mesh, s.spec, aval.ndim)
    return ctx.line(f"sdy.sharding_constraint {value} {sharding} : {tensor_type(aval)}")
