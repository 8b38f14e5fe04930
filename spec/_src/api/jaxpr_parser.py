"""Reading jaxpr text (JAX's printed format, which spec prints too) into spec's IR.

The text is a complete description of a program except for what the printer
leaves out: weak types (never printed), params a primitive's printer hides
(``broadcast_in_dim``'s ``shape``, ``jit``'s ``inline``, ...), the values of
constants, and the Python callables behind custom rules and callbacks. The
parser restores the first from the typing rules (an equation's results get
the weak types its rule gives; literals of a default dtype are weak, as
Python scalars are), the second from the equation's types and the params'
defaults, takes the third as an argument, and stands in for the fourth with
``Opaque`` values that print as the text did and refuse to be called.

Layers: the parser is above ``spec._src.lax`` because the params it reads are
lax's classes (dimension numbers, enums, flat trees); it finds primitives by
their printed name in the registry.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import (
    Atom,
    Default,
    DropVar,
    Eqn,
    Jaxpr,
    Literal,
    Primitive,
    Var,
    apply_typing,
    inherited_effects,
    jaxpr_effects,
)
from spec._src.core.backend import current_backend
from spec._src.core.prng import PRNGS, key_type
from spec._src.core.registry import REGISTRY
from spec._src.core.sharding import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    Mesh,
    NamedSharding,
    P,
    SingleDeviceSharding,
    get_abstract_mesh,
    get_concrete_mesh,
)
from spec._src.core.state_types import NDIndexer, RefType, Slice
from spec._src.core.tree_util import PyTreeDef, tree_flatten, tree_structure
from spec._src.core.types import MemorySpace
from spec._src.api.hijax import PRINTED_FORMS, hijax_p
from spec._src.lax.call_shardings import IN as IN_SHARDINGS, OUT as OUT_SHARDINGS, UNSPECIFIED
from spec._src.lax.reshard import ArrayCopySemantics
from spec._src.lax.conv import ConvDimensionNumbers
from spec._src.lax.dot import Precision
from spec._src.lax.dot_algorithms import DotAlgorithmPreset
from spec._src.lax.elementwise import AccuracyMode, RoundingMethod
from spec._src.lax.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)
from spec._src.lax.linalg import EighImplementation, SvdAlgorithm
from spec._src.lax.scan import Either, FlatTree, FTFiltered, FTPyTree, FTSingleton, FTTuple

__all__ = ["JaxprSyntaxError", "Opaque", "parse_jaxpr"]


class JaxprSyntaxError(ValueError):
    """Jaxpr text that does not parse; ``line`` and ``column`` count from 1."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        source = text[start:end if end >= 0 else len(text)]
        column = pos - start + 1
        super().__init__(f"line {line}, column {column}: {message}\n  {source}\n  "
                         f"{' ' * (column - 1)}^")
        self.line = line
        self.column = column


class JaxprConstsError(ValueError):
    """A nested jaxpr in the text closes over constants (JAX prints them as
    constvars of the inner jaxpr, without values): only the outermost
    jaxpr's constants can be given, so the program cannot be rebuilt."""

    def __init__(self, constvars: str, text: str, pos: int) -> None:
        line = text.count("\n", 0, pos) + 1
        super().__init__(
            f"line {line}: the nested jaxpr has constvars {constvars} whose values the text "
            "does not show; parse_jaxpr takes values only for the outermost jaxpr's constvars "
            "(trace the program with the constants as arguments, or let the outer jaxpr "
            "close over them)")
        self.line = line


class Opaque:
    """A param the text shows but cannot rebuild (a Python callable): prints as
    it was printed; calling it raises."""

    def __init__(self, text: str, **attrs: Any) -> None:
        self.text = text
        self.__name__ = text
        for k, v in attrs.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return self.text

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{self.text} was read from jaxpr text: the function it names is not in the text")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


# =================================================================== lexing

_TOKENS = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<num>\d+\.\d*(?:[eE][+-]?\d+)?j?|\d+(?:[eE][+-]?\d+)?j?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><-|\+=|[{}()\[\],;:=.*@<>~+\-|/&%!?^$#])
""", re.VERBOSE)


@dataclasses.dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "str" | "num" | "name" | "op" | "eof"
    text: str
    pos: int
    spaced: bool  # preceded by whitespace


def _lex(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    end, spaced = 0, True
    for m in _TOKENS.finditer(text):
        if m.start() != end:  # finditer skipped what no token matches
            raise JaxprSyntaxError(f"unexpected character {text[end]!r}", text, end)
        end = m.end()
        kind = m.lastgroup or "op"
        if kind == "ws":
            spaced = True
            continue
        toks.append(_Tok(kind, m.group(), m.start(), spaced))
        spaced = False
    if end != len(text):
        raise JaxprSyntaxError(f"unexpected character {text[end]!r}", text, end)
    toks.append(_Tok("eof", "", len(text), True))
    return toks


# ============================================================ param values

@dataclasses.dataclass(frozen=True)
class _Name:
    """A bare (dotted) identifier in a param value."""
    text: str


@dataclasses.dataclass(frozen=True)
class _Call:
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    pairs: tuple[tuple[Any, Any], ...] = ()  # ``'X': 2`` arguments (meshes)


class _Star:
    """A leaf (``*``) in a printed tree structure."""


_STAR = _Star()
_RAW_TEXT_KEYS = frozenset({"fmt"})


_SIGNED_WORDS = {"inf": float("inf"), "nan": float("nan")}


@dataclasses.dataclass(frozen=True)
class _Source:
    """A parsed param value and the text it was read from."""
    node: Any
    text: str


# ================================================================== parsing

_DTYPES: dict[str, T.DType] = {}
for _dt in (T.bool_, T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64,
            T.float16, T.bfloat16, T.float32, T.float64, T.complex64, T.complex128,
            *T.SMALL_FLOAT_TYPES, *T.NARROW_INT_TYPES, *T.NARROW_UINT_TYPES):
    _DTYPES[T.dtype_name(_dt)] = _dt
    _DTYPES[T.short_dtype_name(_dt)] = _dt
_DTYPES["float0"] = T.FLOAT0

_ENUMS: dict[str, type[enum.Enum]] = {
    cls.__name__: cls for cls in (GatherScatterMode, Precision, DotAlgorithmPreset,
                                  RoundingMethod, AccuracyMode, MemorySpace, AxisType,
                                  EighImplementation, SvdAlgorithm, ArrayCopySemantics)}


@dataclasses.dataclass
class _Scope:
    """Where a type is read: outside shard_map its dims may be sharded over
    the mesh (``8@X``); inside, its suffix names manual axes."""
    mesh: AbstractMesh | None
    manual: bool = False


class _Parser:
    def __init__(self, text: str, mesh: AbstractMesh | None) -> None:
        self.text = text
        self.toks = _lex(text)
        self.i = 0
        self.hoisted: dict[str, Jaxpr] = {}
        self.underscored: set[int] = set()
        self.scopes = [_Scope(mesh)]
        self.by_name = {p.name: p for p in REGISTRY.values()}

    # ----------------------------------------------------------- tokens
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.text == text and tok.kind in ("op", "name")

    def fail(self, message: str, tok: _Tok | None = None) -> JaxprSyntaxError:
        tok = self.peek() if tok is None else tok
        found = "the end of the text" if tok.kind == "eof" else repr(tok.text)
        return JaxprSyntaxError(f"{message}, found {found}", self.text, tok.pos)

    def expect(self, text: str, what: str = "") -> _Tok:
        if not self.at(text):
            raise self.fail(f"expected {text!r}{' ' + what if what else ''}")
        return self.next()

    def at_in(self) -> bool:
        """The keyword ``in`` (before the outputs), not a variable named so."""
        return self.at("in") and self.at("(", 1)

    def name(self, what: str) -> str:
        tok = self.peek()
        if tok.kind != "name":
            raise self.fail(f"expected {what}")
        return self.next().text

    def integer(self, what: str) -> int:
        tok = self.peek()
        if tok.kind != "num" or not tok.text.isdigit():
            raise self.fail(f"expected {what}")
        return int(self.next().text)

    # --------------------------------------------------------- toplevel
    def toplevel(self) -> Jaxpr:
        # Hoisted jaxprs (``let name = { ... } in``) are printed callers
        # first, so they are read last to first: each is known when used.
        starts: list[tuple[str, int]] = []
        while self.at("let") and self.peek(1).kind == "name" and self.at("=", 2):
            starts.append((self.peek(1).text, self.i + 3))
            self.i += 3
            self.skip_braces()
            self.expect("in", "after a hoisted jaxpr")
        top_start = self.i
        for name, start in reversed(starts):
            self.i = start
            self.hoisted[name] = self.nested_jaxpr()
        self.i = top_start
        top = self.jaxpr()
        if self.peek().kind != "eof":
            raise self.fail("expected the end of the text")
        return top

    def skip_braces(self) -> None:
        self.expect("{", "to open a jaxpr")
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == "eof":
                raise self.fail("expected '}' to close the jaxpr")
            if tok.kind == "op":
                depth += {"{": 1, "}": -1}.get(tok.text, 0)

    def jaxpr(self) -> Jaxpr:
        self.expect("{", "to open a jaxpr")
        self.expect("lambda")
        env: dict[str, Atom] = {}
        constvars = self.binders(env, until=";")
        self.expect(";", "between the constants and the inputs")
        invars = self.binders(env, until=".")
        self.expect(".")
        self.expect("let")
        eqns: list[Eqn] = []
        while not self.at_in():
            if self.at(";"):
                self.next()
                continue
            eqns.append(self.eqn(env))
        self.next()
        outvars = self.outvars(env)
        self.align_unnamed_outputs(outvars, eqns)
        self.expect("}", "to close the jaxpr")
        self.drop_unread(eqns, outvars)
        return Jaxpr(constvars, invars, outvars, eqns,
                     jaxpr_effects(constvars, invars, eqns))

    def align_unnamed_outputs(self, outvars: list[Atom], eqns: list[Eqn]) -> None:
        """Outputs printed ``_`` (JAX names only the variables its caller reads)
        are the results printed ``_``, matched from the last one back: the
        last unnamed output is the last unnamed result, the one before it the
        result before that."""
        unnamed_results = [v for e in eqns for v in e.outvars if id(v) in self.underscored]
        unnamed_outputs = [i for i, a in enumerate(outvars) if id(a) in self.underscored]
        if len(unnamed_outputs) < 2 or len(unnamed_results) < len(unnamed_outputs):
            return
        for i, var in zip(unnamed_outputs, unnamed_results[-len(unnamed_outputs):]):
            outvars[i] = var

    def drop_unread(self, eqns: list[Eqn], outvars: list[Atom]) -> None:
        """Results printed ``_`` that nothing reads are DropVars."""
        read = {id(a) for a in outvars} | {id(a) for e in eqns for a in e.invars}
        for e in eqns:
            e.outvars = [DropVar(v.aval) if id(v) in self.underscored and id(v) not in read
                         else v for v in e.outvars]

    def binders(self, env: dict[str, Atom], until: str) -> list[Any]:
        out = []
        while not self.at(until):
            out.append(self.binder(env))
        return out

    def binder(self, env: dict[str, Atom]) -> Any:
        tok = self.peek()
        name = self.name("a variable name")
        self.expect(":", f"and a type after variable {name!r}")
        aval = self.type()
        if name == "_":
            return DropVar(aval)
        if name in env:
            raise JaxprSyntaxError(f"variable {name!r} is bound twice", self.text, tok.pos)
        var = Var(aval)
        env[name] = var
        return var

    def outvars(self, env: dict[str, Atom]) -> list[Atom]:
        self.expect("(", "to open the outputs")
        outs: list[Atom] = []
        while not self.at(")"):
            outs.append(self.atom(env))
            if self.at(","):
                self.next()
        self.next()
        return outs

    # ------------------------------------------------------------ types
    def type(self) -> Any:
        tok = self.peek()
        head = self.name("a type")
        if head == "Ref" and self.at("{"):
            self.next()
            inner = self.type()
            self.expect("}", "to close the Ref type")
            return RefType(inner.shape, inner.dtype, inner.weak_type, inner.sharding,
                           inner.vma, inner.munreduced, inner.mreduced)
        if head == "key" and self.at("<"):
            self.next()
            tag = self.name("a PRNG implementation")
            self.expect(">")
            shape, parts = self.dims()
            impls = [i for i in PRNGS.values() if i.tag == tag]
            if not impls:
                raise JaxprSyntaxError(f"unknown PRNG implementation {tag!r}", self.text, tok.pos)
            return self.finish_type(key_type(shape, impls[0]), parts)
        dtype = _DTYPES.get(head)
        if dtype is None:
            raise JaxprSyntaxError(f"unknown dtype {head!r}", self.text, tok.pos)
        space = self.memory_space()
        shape, parts = self.dims()
        return self.finish_type(T.ArrayType(shape, dtype, memory_space=space), parts)

    def memory_space(self) -> MemorySpace:
        """``<host>`` (``<any>``) after a dtype; device memory without one."""
        if not self.at("<"):
            return MemorySpace.Device
        self.next()
        tok = self.peek()
        name = self.name("a memory space")
        self.expect(">", "to close the memory space")
        spaces = {m.name.lower(): m for m in MemorySpace}
        if name not in spaces:
            raise JaxprSyntaxError(f"unknown memory space {name!r}", self.text, tok.pos)
        return spaces[name]

    def dims(self) -> tuple[tuple[int, ...], list[Any]]:
        self.expect("[", "to open the shape")
        shape: list[int] = []
        parts: list[Any] = []
        while not self.at("]"):
            shape.append(self.integer("a dimension"))
            parts.append(None)
            if self.at("@"):
                self.next()
                parts[-1] = self.axes()
            if self.at(","):
                self.next()
        self.next()
        return tuple(shape), parts

    def axes(self) -> Any:
        """``X`` or ``(X,Y)``: one mesh axis, or several (a tuple)."""
        if not self.at("("):
            return self.name("a mesh axis")
        self.next()
        names: list[str] = []
        while not self.at(")"):
            names.append(self.name("a mesh axis"))
            if self.at(","):
                self.next()
        self.next()
        return tuple(names)

    def finish_type(self, aval: T.ArrayType, parts: list[Any]) -> T.ArrayType:
        tags: dict[str, frozenset[Any]] = {}
        if self.at("{") and not self.peek().spaced:
            self.next()
            while not self.at("}"):
                tag = self.name("V, U or R")
                self.expect(":")
                axes = self.axes()
                tags[tag] = frozenset(axes if isinstance(axes, tuple) else (axes,))
                if self.at(","):
                    self.next()
            self.next()
        scope = self.scopes[-1]
        vma = tags.pop("V", frozenset())
        reduced = tags.pop("R", frozenset())
        u_tag, unreduced = next(iter(tags.items()), ("U", frozenset()))
        if scope.manual or scope.mesh is None:
            if any(p is not None for p in parts):
                raise self.fail("a sharded dimension needs a mesh: pass mesh= or parse "
                                "inside set_mesh")
            return aval.update(vma=vma, munreduced=unreduced, mreduced=reduced)
        kind = {"U": None, "U_max": "max", "U_min": "min"}.get(u_tag)
        extra: dict[str, Any] = {}
        if unreduced:
            extra["unreduced"] = set(unreduced)
            if kind is not None:
                extra["unreduced_kind"] = kind
        if reduced:
            extra["reduced"] = set(reduced)
        spec = P(*parts, **extra)
        return aval.update(sharding=NamedSharding(scope.mesh, spec), vma=vma)

    # -------------------------------------------------------- equations
    def atom(self, env: dict[str, Atom]) -> Atom:
        tok = self.peek()
        if self.is_literal_start():
            return self.literal()
        name = self.name("a variable or a literal")
        if name not in env:
            raise JaxprSyntaxError(f"variable {name!r} is not bound", self.text, tok.pos)
        return env[name]

    def is_literal_start(self) -> bool:
        tok = self.peek()
        if tok.kind == "num" or (tok.text == "-" and self.peek(1).kind in ("num", "name")):
            return True
        if tok.text == "(" and self.peek(1).kind == "num":  # a complex literal
            return True
        if tok.text == "(" and self.peek(1).text == "b" and self.peek(2).kind == "str":
            return True  # a float0 zero: ``(b'',):float0[]``
        return tok.kind == "name" and tok.text in ("True", "False", "inf", "nan") and \
            self.at(":", 1)

    def literal(self) -> Literal:
        start = self.peek().pos
        while not self.at(":"):
            if self.peek().kind == "eof":
                raise self.fail("expected ':' and a literal's type")
            self.next()
        source = self.text[start:self.peek().pos].replace(" ", "")
        self.next()
        aval = self.type()
        value = _literal_value(source, aval.dtype)
        if value is None:
            raise JaxprSyntaxError(f"cannot read literal {source!r}", self.text, start)
        return Literal(value, aval.update(weak_type=_is_default_dtype(aval.dtype)))

    def ends_atoms(self, eqn_column: int | None) -> bool:
        """Does the next token end an equation's operand list? (the next
        equation's binders ``x:f32[] =``, ``in``, a separator, a state form)"""
        tok = self.peek()
        if tok.kind == "eof" or self.at_in() or self.at(";") or self.at("}") or self.at(")"):
            return True
        if tok.kind == "name" and self.at(":", 1) and (
                not self.is_literal_start()
                or (eqn_column is not None and self.line_column(tok) == eqn_column)):
            return True  # (variables are named ``inf`` and ``nan`` too, binders by layout)
        if tok.kind == "name" and (self.at("[", 1) or self.at("<-", 1) or self.at("+=", 1)):
            return True  # a primitive with params, or a ref form
        if tok.kind == "name" and tok.text in self.by_name and not re.fullmatch("[a-z]+",
                                                                             tok.text):
            return True  # a result-less equation (var names are letters only)
        return False

    def line_column(self, tok: _Tok) -> int | None:
        """The column of a token that begins its line, else None. The equations
        of a jaxpr printed over several lines begin at one column; an operand
        list that wraps continues deeper."""
        line_start = self.text.rfind("\n", 0, tok.pos) + 1
        indent = self.text[line_start:tok.pos]
        return len(indent) if not indent.strip() else None

    def eqn(self, env: dict[str, Atom]) -> Eqn:
        start = self.peek()
        column = self.line_column(start)
        if self.is_ref_target(env):
            return self.ref_write(env, start)
        outs: list[Any] = []
        pending_names: list[tuple[str, _Tok]] = []
        while self.peek().kind == "name" and self.at(":", 1):
            tok = self.peek()
            name = self.next().text
            self.next()
            aval = self.type()
            var = Var(aval)
            if name == "_":
                self.underscored.add(id(var))
            outs.append(var)
            pending_names.append((name, tok))
        if outs and (self.at("<-") or self.at(",")):
            eqn = self.ref_read(env, outs, start)
            self.bind_outs(env, pending_names, eqn)
            return eqn
        if outs:
            self.expect("=", "after an equation's results")
        prim_tok = self.peek()
        prim_name = self.name("a primitive name")
        prim = self.by_name.get(prim_name)
        hi_class = PRINTED_FORMS.get(prim_name) if prim is None else None
        if prim is None and hi_class is None:
            raise JaxprSyntaxError(f"unknown primitive {prim_name!r}", self.text, prim_tok.pos)
        if hi_class is not None:
            prim = hijax_p
        assert prim is not None
        raw: dict[str, Any] = {}
        if self.at("[") and not self.peek().spaced:
            raw = self.params(prim)
        invars: list[Atom] = []
        while not self.ends_atoms(column):
            invars.append(self.atom(env))
        try:
            if hi_class is not None:
                # A hijax primitive's equation: the instance, its one param.
                raw = {"prim": hi_class.from_printed(_generic(raw), [a.aval for a in invars],
                                                     [v.aval for v in outs])}
            eqn = _build_eqn(prim, invars, outs, raw)
        except (TypeError, ValueError, KeyError) as err:
            raise JaxprSyntaxError(f"cannot read equation {prim_name}: {err}", self.text,
                                   start.pos) from err
        self.bind_outs(env, pending_names, eqn)
        return eqn

    def bind_outs(self, env: dict[str, Atom], names: list[tuple[str, _Tok]], eqn: Eqn) -> None:
        for (name, tok), var in zip(names, eqn.outvars):
            if name == "_":  # (a nested jaxpr may read its caller's unread ``_``)
                env[name] = var
            else:
                if name in env:
                    raise JaxprSyntaxError(f"variable {name!r} is bound twice", self.text,
                                           tok.pos)
                env[name] = var

    # ------------------------------------------------------- ref forms
    def is_ref_target(self, env: dict[str, Atom]) -> bool:
        tok = self.peek()
        return tok.kind == "name" and self.at("[", 1) and \
            isinstance(getattr(env.get(tok.text), "aval", None), RefType)

    def ref_target(self, env: dict[str, Atom]) -> tuple[Atom, list[Atom], PyTreeDef]:
        """``r[...]``, ``r[1:3,c]``, ``r[c:c+2]``: the ref, the indexer's
        operands and the ``tree`` param."""
        ref = self.atom(env)
        shape = ref.aval.shape
        indexers: list[NDIndexer] = []
        while self.at("[") and not self.peek().spaced:
            self.next()
            if self.at("...") or (self.at(".") and self.at(".", 1)):
                while self.at("."):
                    self.next()
                self.expect("]")
                continue
            entries: list[Any] = []
            while not self.at("]"):
                entries.append(self.ref_entry(env, shape[len(entries)]))
                if self.at(","):
                    self.next()
            self.next()
            int_shapes = [getattr(e, "aval").shape for e in entries if not isinstance(e, Slice)]
            indexers.append(NDIndexer(tuple(entries), tuple(shape),
                                      tuple(np.broadcast_shapes(*int_shapes))))
        leaves, tree = tree_flatten(tuple(indexers))
        return ref, list(leaves), tree

    def ref_entry(self, env: dict[str, Atom], dim: int) -> Any:
        """A slice ``a:b`` / ``c:c+n`` or an integer index (a variable, or a
        literal printed without its type)."""
        start: Any = 0
        if not self.at(":"):
            start = self.index_atom(env)
            if not self.at(":"):
                return start
        self.next()
        if self.at(",") or self.at("]"):
            end: Any = _index_literal(dim)
        else:
            end = self.index_atom(env)
        if isinstance(start, Var):
            if not self.at("+"):
                raise self.fail("expected '+' and the size of a dynamic slice")
            self.next()
            return Slice(start, self.integer("a slice size"))
        if self.at("+"):
            raise self.fail("expected a static slice end")
        return Slice(_static(start), _static(end) - _static(start))

    def index_atom(self, env: dict[str, Atom]) -> Any:
        tok = self.peek()
        if tok.kind == "num":
            self.next()
            return _index_literal(int(tok.text))
        if tok.text == "-" and self.peek(1).kind == "num":
            self.next()
            return _index_literal(-int(self.next().text))
        return self.atom(env)

    def ref_read(self, env: dict[str, Atom], outs: list[Any], start: _Tok) -> Eqn:
        """``x:T <- r[...]`` (get) or ``x:T, r[...] <- r[...], v`` (swap)."""
        if self.at("<-"):
            self.next()
            ref, leaves, tree = self.ref_target(env)
            return self.state_eqn("get", [ref, *leaves], outs, tree, start)
        self.expect(",")
        ref, leaves, tree = self.ref_target(env)
        self.expect("<-")
        self.ref_target(env)
        self.expect(",")
        val = self.atom(env)
        return self.state_eqn("swap", [ref, val, *leaves], outs, tree, start)

    def ref_write(self, env: dict[str, Atom], start: _Tok) -> Eqn:
        """``r[...] <- v`` (a swap whose old value nothing reads) or ``r[...] += v``."""
        ref, leaves, tree = self.ref_target(env)
        if self.at("+="):
            self.next()
            val = self.atom(env)
            return self.state_eqn("addupdate", [ref, val, *leaves], [], tree, start)
        self.expect("<-", "or '+=' after a ref")
        val = self.atom(env)
        prim = self.by_name["swap"]
        try:
            out_aval = apply_typing(prim, [ref.aval, val.aval, *(a.aval for a in leaves)],
                                    {"tree": tree})[0]
        except (TypeError, ValueError) as err:
            raise JaxprSyntaxError(f"cannot type the write: {err}", self.text, start.pos) \
                from err
        return self.state_eqn("swap", [ref, val, *leaves], [DropVar(out_aval)], tree, start)

    def state_eqn(self, name: str, invars: list[Atom], outs: list[Any], tree: PyTreeDef,
                  start: _Tok) -> Eqn:
        try:
            return _build_eqn(self.by_name[name], invars, outs, {"tree": tree})
        except (TypeError, ValueError, KeyError) as err:
            raise JaxprSyntaxError(f"cannot read equation {name}: {err}", self.text,
                                   start.pos) from err

    # ----------------------------------------------------------- params
    def params(self, prim: Primitive) -> dict[str, Any]:
        self.next()
        raw: dict[str, Any] = {}
        while not self.at("]"):
            key = self.name("a param name")
            self.expect("=", f"after param {key!r}")
            raw[key] = self.param_value(prim, key)
        self.next()
        return raw

    def param_value(self, prim: Primitive, key: str) -> Any:
        if self.at("{") and self.at("lambda", 1):
            return self.sub_jaxpr(prim)
        if self.at("(") and (self.at("{", 1) and self.at("lambda", 2) or self.hoisted_at(1)):
            # A tuple of jaxprs (cond's branches): written out or hoisted.
            self.next()
            subs = []
            while not self.at(")"):
                if self.hoisted_at(0):
                    subs.append(self.hoisted[self.next().text])
                else:
                    subs.append(self.sub_jaxpr(prim))
            self.next()
            return tuple(subs)
        if self.at("<"):
            return Opaque(self.raw_angle())
        if key in _RAW_TEXT_KEYS:
            return self.raw_text()
        if self.peek().text in _DTYPES and self.at("[", 1) and not self.peek(1).spaced:
            return self.type()  # a type (a hijax primitive's param)
        tok = self.peek()
        if tok.kind == "name" and tok.text in self.hoisted and key != "name" and (
                self.at("]", 1) or self.at("=", 2)):
            self.next()
            return self.hoisted[tok.text]
        start = self.peek().pos
        node = self.value()
        return _Source(node, self.text[start:self.toks[self.i - 1].pos
                                       + len(self.toks[self.i - 1].text)])

    def hoisted_at(self, k: int) -> bool:
        """The token ``k`` ahead names a hoisted jaxpr, followed by another
        jaxpr of the tuple or its end."""
        tok = self.peek(k)
        return (tok.kind == "name" and tok.text in self.hoisted
                and (self.at(")", k + 1) or self.at("{", k + 1) or self.peek(k + 1).kind == "name"))

    def raw_text(self) -> str:
        """A string param printed without quotes (``fmt=x={x}``): up to the
        next ``name=`` after whitespace, or the params' closing bracket."""
        start = self.peek().pos
        m = re.compile(r"\s+[A-Za-z_]\w*=|\s*\]").search(self.text, start)
        end = len(self.text) if m is None else m.start()
        while self.peek().pos < end and self.peek().kind != "eof":
            self.next()
        return self.text[start:end]

    def sub_jaxpr(self, prim: Primitive) -> Jaxpr:
        # A shard_map body's types are per-device blocks: no mesh sharding,
        # their suffix names manual axes.
        manual = prim.name == "shard_map"
        self.scopes.append(_Scope(None, manual=True) if manual else self.scopes[-1])
        try:
            return self.nested_jaxpr()
        finally:
            self.scopes.pop()

    def nested_jaxpr(self) -> Jaxpr:
        start = self.peek().pos
        out = self.jaxpr()
        if out.constvars:
            # (the binders as printed: between ``lambda`` and the first ``;``)
            binders = self.text[self.text.index("lambda", start) + 6:].split(";", 1)[0]
            raise JaxprConstsError(binders.strip(), self.text, start)
        return out

    def raw_angle(self) -> str:
        start = self.peek().pos
        depth = 0
        while True:
            tok = self.next()
            if tok.kind == "eof":
                raise self.fail("expected '>'")
            depth += {"<": 1, ">": -1}.get(tok.text, 0) if tok.kind == "op" else 0
            if depth == 0:
                return self.text[start:tok.pos + 1]

    def value(self) -> Any:
        tok = self.peek()
        if tok.kind == "num":
            self.next()
            return _number(tok.text)
        if tok.text == "-" and self.peek(1).kind in ("num", "name"):
            self.next()
            inner = self.next()
            return -_number(inner.text) if inner.kind == "num" else -_SIGNED_WORDS[inner.text]
        if tok.kind == "str":
            self.next()
            return _unquote(tok.text)
        if self.at("*"):
            self.next()
            return _STAR
        if self.at("("):
            items, trailing = self.sequence(")")
            return tuple(items) if trailing or len(items) != 1 else items[0]
        if self.at("["):
            return list(self.sequence("]")[0])
        if self.at("{"):
            return self.braces()
        if tok.kind == "name":
            return self.named()
        if self.at("<"):
            return Opaque(self.raw_angle())
        raise self.fail("expected a param value")

    def sequence(self, close: str) -> tuple[list[Any], bool]:
        self.next()
        items: list[Any] = []
        trailing = False
        while not self.at(close):
            items.append(self.value())
            trailing = False
            if self.at(","):
                self.next()
                trailing = True
        self.next()
        return items, trailing

    def braces(self) -> Any:
        self.next()
        entries: list[Any] = []
        is_dict = False
        while not self.at("}"):
            k = self.value()
            if self.at(":"):
                self.next()
                entries.append((k, self.value()))
                is_dict = True
            else:
                entries.append(k)
            if self.at(","):
                self.next()
        self.next()
        return dict(entries) if is_dict or not entries else set(entries)

    def named(self) -> Any:
        parts = [self.next().text]
        while self.at(".") and self.peek(1).kind == "name" and not self.peek().spaced:
            self.next()
            parts.append(self.next().text)
        dotted = ".".join(parts)
        if dotted in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[dotted]
        if dotted in _SIGNED_WORDS:
            return _SIGNED_WORDS[dotted]
        if not (self.at("(") and not self.peek().spaced):
            return _Name(dotted)
        self.next()
        args: list[Any] = []
        kwargs: list[tuple[str, Any]] = []
        pairs: list[tuple[Any, Any]] = []
        while not self.at(")"):
            if self.peek().kind == "name" and self.at("=", 1):
                k = self.next().text
                self.next()
                kwargs.append((k, self.value()))
            else:
                v = self.value()
                if self.at(":"):
                    self.next()
                    pairs.append((v, self.value()))
                else:
                    args.append(v)
            if self.at(","):
                self.next()
        self.next()
        return _Call(dotted, tuple(args), tuple(kwargs), tuple(pairs))


def _index_literal(i: int) -> Literal:
    """An integer in a ref index (printed without its type): a weak int32."""
    return Literal(i, T.ArrayType((), T.int32, True))


def _static(a: Any) -> int:
    if not isinstance(a, Literal):
        raise ValueError("a static slice bound must be an integer")
    return int(a.val)


def _number(text: str) -> Any:
    if text.endswith("j"):
        return complex(text)
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return body.encode("utf-8").decode("unicode_escape") if "\\" in body else body


def _is_default_dtype(dt: T.DType) -> bool:
    """Literals of the dtypes Python scalars take are weak (JAX stages Python
    scalars as literals; a typed scalar of one of these dtypes prints alike)."""
    return dt in (T.int32, T.float32, T.complex64, T.int64, T.float64, T.complex128)


def _literal_value(source: str, dtype: T.DType) -> Any:
    if dtype == T.FLOAT0:
        return np.zeros((), dtype=T.FLOAT0)
    try:
        if source in ("True", "False"):
            return source == "True"
        if T.is_complex(dtype) or source.endswith("j") or source.endswith("j)"):
            return complex(source.strip("()"))
        if T.is_int(dtype) or dtype == T.bool_:
            return int(source)
        return float(source)
    except ValueError:
        return None


# ========================================================= param readers

class _Unreadable(Exception):
    """A param value of a class the parser does not rebuild."""


def _convert(node: Any, key: str) -> Any:
    """A generic param value read back into the object it was printed from."""
    if isinstance(node, tuple):
        return tuple(_convert(n, key) for n in node)
    if isinstance(node, list):
        return [_convert(n, key) for n in node]
    if isinstance(node, set):
        return {_convert(n, key) for n in node}
    if isinstance(node, dict):
        return {_convert(k, key): _convert(v, key) for k, v in node.items()}
    if isinstance(node, _Name):
        return _named_value(node.text, key)
    if isinstance(node, _Call):
        return _call_value(node, key)
    return node


def _named_value(text: str, key: str) -> Any:
    if "." in text:
        cls_name, _, member = text.rpartition(".")
        cls = _ENUMS.get(cls_name)
        if cls is not None and member in cls.__members__:
            return cls[member]
    if key in ("precision",) and text in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[text]
    if key in ("precision",) and text in Precision.__members__:
        return Precision[text]
    if key == "impl":
        impls = [i for i in PRNGS.values() if i.tag == text]
        if impls:
            return impls[0]
    if text in _DTYPES and key not in ("name",):
        return _DTYPES[text]
    if text in AxisType.__members__ and key == "axis_types":
        return AxisType[text]
    return text


def _mesh(node: _Call) -> AbstractMesh:
    names = tuple(_convert(k, "") for k, _ in node.pairs)
    sizes = tuple(int(v) for _, v in node.pairs)
    kwargs = dict(node.kwargs)
    types_node = kwargs.get("axis_types", ())
    types = tuple(AxisType[t.text] if isinstance(t, _Name) else t for t in
                  (types_node if isinstance(types_node, tuple) else (types_node,)))
    device = None
    if "device_kind" in kwargs:
        def text(k: str) -> Any:
            v = kwargs[k]
            return v.text if isinstance(v, _Name) else v
        device = AbstractDevice(text("device_kind"), text("num_cores"), text("platform"))
    return AbstractMesh(sizes, names, axis_types=types, abstract_device=device)


def _concrete_mesh(abstract: AbstractMesh) -> Mesh:
    """A printed ``Mesh(...)``: the mesh in context if it is that mesh,
    else one over the first devices in order (the text names no devices)."""
    context = get_concrete_mesh()
    if context.abstract_mesh == abstract:  # (``Mesh()``: the empty mesh)
        return context
    if abstract.empty:
        return Mesh(np.empty((), dtype=object), ())
    devices = current_backend().devices()
    if len(devices) < abstract.size:
        raise ValueError(f"the jaxpr's mesh {abstract} needs {abstract.size} devices; there are "
                         f"{len(devices)}")
    grid = np.array(devices[:abstract.size], dtype=object).reshape(abstract.axis_sizes)
    return Mesh(grid, abstract.axis_names, axis_types=abstract.axis_types)


def _memory_kind(value: Any) -> str | None:
    """A printed memory kind (``pinned_host``, read as a name) as its string."""
    return None if value is None else str(value)


def _device(device_id: int) -> Any:
    for d in current_backend().devices():
        if d.id == device_id:
            return d
    raise ValueError(f"the jaxpr names device {device_id}; there is no such device")


def _call_value(node: _Call, key: str) -> Any:
    args = [_convert(a, key) for a in node.args]
    kwargs = {k: _convert(v, k) for k, v in node.kwargs}
    name = node.name
    if name in ("np.int64", "np.int32", "np.float32", "np.float64", "np.bool_", "np.uint32"):
        return getattr(np, name[3:])(*args)
    if name == "GatherDimensionNumbers":
        return GatherDimensionNumbers(**kwargs)
    if name == "ScatterDimensionNumbers":
        return ScatterDimensionNumbers(**kwargs)
    if name == "ConvDimensionNumbers":
        return ConvDimensionNumbers(**kwargs)
    if name in ("P", "PartitionSpec"):
        # (a bare UNCONSTRAINED is the marker; a quoted one would be an axis name)
        return P(*(P.UNCONSTRAINED if isinstance(a, _Name) and a.text == "UNCONSTRAINED"
                   else v for a, v in zip(node.args, args)), **kwargs)
    if name == "AbstractMesh":
        return _mesh(node)
    if name == "Mesh":
        return _concrete_mesh(_mesh(node))
    if name == "NamedSharding":
        return NamedSharding(kwargs["mesh"], kwargs["spec"],
                             memory_kind=_memory_kind(kwargs.get("memory_kind")))
    if name == "SingleDeviceSharding":
        return SingleDeviceSharding(kwargs["device"],
                                    memory_kind=_memory_kind(kwargs.get("memory_kind")))
    if name == "CpuDevice":
        return _device(int(kwargs["id"]))
    if name == "ShapedArray" and len(args) == 2:  # ``ShapedArray(float32[3])``
        weak = bool(kwargs.get("weak_type", False))
        return T.ArrayType(tuple(args[1]), args[0], weak)
    if name == "frozenset":
        return frozenset(*args)
    if name == "PyTreeDef":
        return _treedef(node.args[0])
    raise _Unreadable(name)


def _skeleton(node: Any) -> Any:
    """A tree of the printed structure with 0 for each ``*`` leaf."""
    if node is _STAR:
        return 0
    if isinstance(node, tuple):
        return tuple(_skeleton(n) for n in node)
    if isinstance(node, list):
        return [_skeleton(n) for n in node]
    if isinstance(node, dict):
        return {k: _skeleton(v) for k, v in node.items()}
    if node is None:
        return None
    raise _Unreadable(f"a tree structure holding {node!r}")


def _treedef(node: Any) -> PyTreeDef:
    return tree_structure(_skeleton(node))


def _flat_tree(node: Any) -> FlatTree:
    """scan's ``ft_in``/``ft_out``: tuples, leaves, ``RightsOnly`` and ``Pytree``."""
    if isinstance(node, tuple):
        return FTTuple(*(_flat_tree(n) for n in node))
    if isinstance(node, _Call) and node.name == "RightsOnly":
        return FTFiltered(_flat_tree(node.args[0]))
    if isinstance(node, _Call) and node.name == "Pytree":
        kw = dict(node.kwargs)
        return FTPyTree(_pytree_spec(kw["tree"].args[0]), _convert(kw["vals"], "vals"))
    return FTSingleton(_either(node))


def _either(node: Any) -> Any:
    if isinstance(node, _Call) and node.name in ("Right", "Left"):
        return Either(node.name == "Right", _either(node.args[0]))
    return _convert(node, "")


def _pytree_spec(node: Any) -> Any:
    if isinstance(node, tuple):
        return tuple(_pytree_spec(n) for n in node)
    if isinstance(node, list):
        return len(node)
    raise ValueError(f"cannot read a scan tree spec from {node!r}")


# Per-primitive readers: the raw params (as parsed) and the equation's
# types to the params the primitive takes. Every primitive goes through
# ``_generic`` first.
Reader = Callable[[dict[str, Any], list[Any], list[Any]], dict[str, Any]]


def _generic(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in raw.items():
        text = v.text if isinstance(v, _Source) else None
        v = v.node if isinstance(v, _Source) else v
        if k in ("ft_in", "ft_out"):
            out[k] = _flat_tree(v)
        elif isinstance(v, (Jaxpr, Opaque)) or (
                isinstance(v, tuple) and v and all(isinstance(j, Jaxpr) for j in v)):
            out[k] = v
        else:
            try:
                out[k] = _convert(v, k)
            except _Unreadable:
                # A value the text shows but cannot rebuild: it prints as it did.
                out[k] = Opaque(text if text is not None else repr(v))
    return out


def _out_sharding(outs: list[Any]) -> Any:
    s = getattr(outs[0].aval if outs else None, "sharding", None)
    return s


def _read_broadcast_in_dim(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    p.setdefault("broadcast_dimensions", ())
    p["shape"] = outs[0].aval.shape
    p.setdefault("sharding", None)
    return p


def _read_dot_general(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    p["dimension_numbers"] = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    p.setdefault("precision", None)
    p.setdefault("preferred_element_type", None)
    p.setdefault("out_sharding", None)
    return p


def _read_jit(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    p.setdefault("donated_invars", (False,) * len(ins))
    p.setdefault("inline", False)
    p.setdefault("keep_unused", False)
    p.setdefault("ctx_mesh", AbstractMesh((), ()))
    for key in (IN_SHARDINGS, OUT_SHARDINGS):
        if key in p:  # (``UnspecifiedValue`` reads as its name)
            p[key] = tuple(UNSPECIFIED if e == "UnspecifiedValue" else e for e in p[key])
    return _named_first(p)


def _named_first(p: dict[str, Any]) -> dict[str, Any]:
    if "name" in p:
        p["name"] = str(p["name"]) if not isinstance(p["name"], Opaque) else p["name"].text
    return p


def _read_reshard(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    p["dst_sharding"] = _out_sharding(outs)
    p.setdefault("concrete_mesh", None)
    return p


def _rule(text: Any, fun_name: str) -> Opaque:
    shown = text.text if isinstance(text, Opaque) else str(text)
    return Opaque(shown, fun_name=fun_name)


def _read_custom_jvp(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    name = _named_first(p).pop("name", "<unknown>")
    p["jvp_jaxpr_fun"] = _rule(p.pop("jvp", "<unknown>"), name)
    p.setdefault("num_consts", 0)
    return p


def _read_custom_vjp(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    name = _named_first(p).pop("name", "<unknown>")
    p["fwd_jaxpr_thunk"] = _rule(p.pop("fwd", "<unknown>"), name)
    p["bwd"] = _rule(p.pop("bwd", "<unknown>"), name)
    p.setdefault("num_consts", 0)
    p.setdefault("out_trees", Opaque("<out_trees>"))
    return p


def _read_shard_map(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    p["newly_manual_axes"] = frozenset(p.get("newly_manual_axes", frozenset()))
    return p


def _read_convert(p: dict[str, Any], ins: list[Any], outs: list[Any]) -> dict[str, Any]:
    p.setdefault("sharding", None)
    return p


_READERS: dict[str, Reader] = {
    "broadcast_in_dim": _read_broadcast_in_dim,
    "dot_general": _read_dot_general,
    "jit": _read_jit,
    "reshard": _read_reshard,
    "custom_jvp_call": _read_custom_jvp,
    "custom_vjp_call": _read_custom_vjp,
    "shard_map": _read_shard_map,
    "convert_element_type": _read_convert,
}


@functools.cache
def _keyword_params(prim: Primitive) -> tuple[tuple[str, Any], ...]:
    """The typing rule's keyword-only params and their defaults (None where required)."""
    try:
        sig = inspect.signature(prim.typing)
    except (TypeError, ValueError):
        return ()
    return tuple((name, None if p.default is inspect.Parameter.empty else p.default)
                 for name, p in sig.parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _hidden_defaults(prim: Primitive, params: dict[str, Any]) -> dict[str, Any]:
    """Keyword params of the typing rule that the text left out (the printer
    hides them when None or at their default) take that value."""
    for name, default in _keyword_params(prim):
        params.setdefault(name, default)
    return params


def _build_eqn(prim: Primitive, invars: list[Atom], outs: list[Any], raw: dict[str, Any]
               ) -> Eqn:
    params = _generic(raw)
    reader = _READERS.get(prim.name)
    if reader is not None:
        params = reader(params, invars, outs)
    params = _hidden_defaults(prim, params)
    _infer_hidden_sharding(prim, invars, outs, params, raw)
    outs = _typed_outvars(prim, invars, outs, params)
    eqn = Eqn(list(invars), outs, prim, params)
    rule = prim.effects_rule
    if not isinstance(rule, Default):
        eqn.effects = rule(list(invars), params)
    inner = inherited_effects(params)
    if inner:
        eqn.effects = eqn.effects | inner
    return eqn


def _infer_hidden_sharding(prim: Primitive, invars: list[Atom], outs: list[Any],
                           params: dict[str, Any], raw: dict[str, Any]) -> None:
    """A hidden ``sharding``/``out_sharding`` param (``broadcast_in_dim``,
    ``dot_general``, ...) is None unless the result type needs it: then it
    is the result's sharding."""
    hidden = [k for k in ("sharding", "out_sharding") if k in params and k not in raw
              and params[k] is None]
    if not hidden or len(outs) != 1 or getattr(outs[0].aval, "sharding", None) is None:
        return
    for candidate in (None, outs[0].aval.sharding):
        params[hidden[0]] = candidate
        try:
            typed = apply_typing(prim, [a.aval for a in invars], params)[0]
        except Exception:  # noqa: BLE001 - try the next; the type checker reports the last
            continue
        if getattr(typed, "sharding", None) == outs[0].aval.sharding:
            return
    params[hidden[0]] = None


def _typed_outvars(prim: Primitive, invars: list[Atom], outs: list[Any],
                   params: dict[str, Any]) -> list[Any]:
    """Results carry the weak types (never printed) the typing rule gives
    them; where the rule rejects the operands the printed types stand (the
    type checker then reports the equation)."""
    try:
        typed = list(apply_typing(prim, [a.aval for a in invars], params))
    except Exception:  # noqa: BLE001 - any rejection is check_jaxpr's to report
        return outs
    if len(typed) != len(outs):
        return outs
    fixed = []
    for var, ty in zip(outs, typed):
        if isinstance(ty, T.ArrayType) and isinstance(var.aval, T.ArrayType) and \
                ty.weak_type and ty.update(weak_type=False) == var.aval:
            var.aval = ty
        fixed.append(var)
    return fixed


def parse_jaxpr(text: str, *, consts: Sequence[Any] = (), mesh: Any = None) -> Jaxpr:
    """Read jaxpr text (as ``str(jax.make_jaxpr(f)(x))`` prints it, JAX's or
    spec's) into a ``ClosedJaxpr``.

    ``consts`` are the values of the constvars (the text does not show them);
    ``mesh`` is the mesh sharded types (``f32[8@X]``) are over, by default the
    one ``set_mesh`` put in context. Raises ``JaxprSyntaxError`` (a
    ValueError) naming the line and column of the first thing it cannot read.
    """
    abstract = getattr(mesh, "abstract_mesh", mesh)
    if abstract is None:
        ambient = get_abstract_mesh()
        abstract = None if ambient.empty else ambient
    jaxpr = _Parser(text, abstract).toplevel()
    if consts and len(consts) != len(jaxpr.constvars):
        raise ValueError(f"parse_jaxpr: {len(consts)} consts given for "
                         f"{len(jaxpr.constvars)} constvars")
    jaxpr.consts = list(consts)
    return jaxpr
