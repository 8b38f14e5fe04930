"""HLO text of a lowered program (``Lowered.as_text("hlo")``).

JAX gets this text from XLA, which converts the StableHLO module to an HLO
module and prints it with XLA's short parsable options. spec renders it from
its own StableHLO module text (emitted with locations) in four steps, each
mirroring a part of that conversion:

1. parse the module spec emitted into functions, ops and regions;
2. canonicalise as XLA's import does: elementwise ops of constants (and
   broadcasts of scalar constants, splats) fold to constants, equal
   constants of one region are one, ``x + 0``/``x * 1`` are ``x``, identity
   conversions, reshapes and transposes vanish and chains of them compose,
   a commutative op takes its constant second, and ops whose results are
   unused are dropped (SPEC.md 4.1c lists the rules);
3. convert: each op is one HLO instruction named after the last component
   of its location's name (``jit(f)/while/body/mul`` names ``mul``), an op
   without one after its opcode; a splat is a scalar ``constant`` and a
   ``broadcast``; multi-result ops give a tuple and ``get-tuple-element``s;
   regions become computations (``region_K``), a while's carry one tuple
   parameter, a case branch's captured values its parameters, a function
   called its own computation;
4. print each computation's instructions in XLA's post order (a depth-first
   walk from every instruction without users, in creation order), the
   computations callees first, ``ENTRY main`` last.

Instruction numbers (``.N``) count per name in creation order; XLA numbers
them in its own order, so texts agree up to renumbering. Ops outside the
rendered set print their operands but not their attributes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core.array import SpecInternalError

# ------------------------------------------------------------------ parsing


@dataclass
class TensorType:
    shape: tuple[int, ...]
    dtype: str  # HLO's element type name: f32, s32, pred, c64, ...

    def text(self, layout: tuple[int, ...] | None = None) -> str:
        dims = ",".join(str(d) for d in self.shape)
        if self.dtype == "token":
            return "token[]"
        if not self.shape:
            return f"{self.dtype}[]"
        order = layout if layout is not None else tuple(range(len(self.shape)))[::-1]
        return f"{self.dtype}[{dims}]{{{','.join(str(d) for d in order)}}}"


@dataclass
class Op:
    results: list[str]
    name: str                      # MLIR op name without dialect: add, while, call
    operands: list[str]
    body: str                      # the text between operands and signature (attributes)
    out_types: list[TensorType]
    loc: str | None
    regions: list[Region] = field(default_factory=list)
    fused: str | None = None       # a second location's name fused into this op's


@dataclass
class Region:
    args: list[tuple[str, TensorType]]
    arg_names: list[str | None]
    ops: list[Op]
    returns: list[str]


@dataclass
class Function:
    name: str
    args: list[tuple[str, TensorType, str | None]]
    body: Region
    arg_shardings: list[str | None] = field(default_factory=list)     # ``<@mesh, [...]>``
    result_shardings: list[str | None] = field(default_factory=list)


_ELEMENT = {"i1": "pred", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
            "i8": "s8", "i16": "s16", "i32": "s32", "i64": "s64", "ui8": "u8", "ui16": "u16",
            "ui32": "u32", "ui64": "u64", "i4": "s4", "ui4": "u4", "complex<f32>": "c64",
            "complex<f64>": "c128", "f8E4M3FN": "f8e4m3fn", "f8E5M2": "f8e5m2"}


def tensor_type(text: str) -> TensorType:
    """``tensor<2x3xf32>`` (or ``!stablehlo.token``) as a shape and HLO's element type."""
    text = text.strip()
    if text.startswith("!stablehlo.token"):
        return TensorType((), "token")
    m = re.fullmatch(r"tensor<(.*)>", text)
    if m is None:
        raise NotImplementedError(f"HLO text of the type {text} is not specified")
    inner = re.sub(r",\s*#.*$", "", m.group(1))  # an encoding (sharding) attribute
    dims = re.match(r"((?:\d+x)*)(.*)$", inner)
    assert dims is not None
    shape = tuple(int(d) for d in dims.group(1).split("x") if d)
    element = dims.group(2)
    if element not in _ELEMENT:
        element = re.sub(r"^(u?)i(\d+)$", lambda m: ("u" if m.group(1) else "s") + m.group(2),
                         element).lower()
    return TensorType(shape, _ELEMENT.get(element, element))


def _is_arrow(text: str, i: int) -> bool:
    """Whether ``text[i]`` is the ``>`` of an arrow ``->`` (which closes no
    bracket)."""
    return text[i] == ">" and i > 0 and text[i - 1] == "-"


def _at_top(text: str) -> Iterator[tuple[int, str, bool]]:
    """Each character of ``text`` with its index and whether it stands outside every
    bracket and quoted string (an arrow's ``>`` closes no bracket)."""
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{<":
            depth += 1
        elif not quoted and ch in ")]}>" and not _is_arrow(text, i):
            depth -= 1
        yield i, ch, depth == 0 and not quoted


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes."""
    out: list[str] = []
    cur: list[str] = []
    for _, ch, top in _at_top(text):
        if ch == sep and top:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur or out:
        out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def _strip_loc(line: str) -> tuple[str, str | None]:
    """The line without its trailing ``loc(...)`` and the location's name."""
    k = line.rfind(" loc(")
    if k < 0 or not line.endswith(")"):
        return line, None
    loc = line[k + 5:]
    m = re.match(r'"((?:[^"\\]|\\.)*)"', loc)
    return line[:k], (m.group(1) if m else None)


def _signature_types(sig: str) -> list[TensorType]:
    """The result types of a signature ``(A, B) -> (C, D)``, ``A -> C`` or ``T``."""
    arrow = -1
    for i, ch, top in _at_top(sig):
        if top and ch == "-" and sig.startswith("->", i):
            arrow = i
    if arrow < 0:
        # ``T`` (every type the same) or ``P, T`` (select: the result last).
        return [tensor_type(_split_top(sig)[-1])]
    out = sig[arrow + 2:].strip()
    if out.startswith("(") and out.endswith(")"):
        out = out[1:-1]
    return [tensor_type(t) for t in _split_top(out)]


def _last_colon(text: str) -> int:
    """The index of the signature's `` : `` (outside brackets and quotes)."""
    found = -1
    for i, ch, top in _at_top(text):
        if top and ch == " " and text.startswith(" : ", i):
            found = i
    return found


_RESULT = re.compile(r"^(%[\w.]+)(?::(\d+))? = (.*)$")


def _results(name: str | None, count: str | None) -> list[str]:
    if name is None:
        return []
    n = int(count) if count else 1
    return [name] if n == 1 else [f"{name}#{k}" for k in range(n)]


def _parse_op(head: str, loc: str | None, sig: str) -> Op:
    m = _RESULT.match(head)
    results = _results(m.group(1), m.group(2)) if m else []
    rest = m.group(3) if m else head
    generic = re.match(r'"([\w.]+)"\((.*?)\)(.*)$', rest)
    if generic:
        opname, operand_text, body = generic.groups()
        operands = _split_top(operand_text)
    else:
        head_match = re.match(r"[\w.]+", rest)
        opname = head_match.group(0) if head_match else rest
        body = rest[len(opname):].strip()
        if opname in ("call", "func.call"):
            callee = re.match(r"(@[\w.]+)\((.*?)\)(.*)$", body)
            assert callee is not None
            operands = _split_top(callee.group(2))
            body = callee.group(1) + callee.group(3)
        else:
            operands = re.findall(r"%[\w.#]+", body.split(" : ")[0].split("applies")[0])
    short = "call" if opname in ("call", "func.call") else opname.split(".", 1)[-1]
    return Op(results, short, operands, body, _signature_types(sig) if sig else [], loc)


class _Lines:
    def __init__(self, text: str) -> None:
        self.lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        self.k = 0

    def peek(self) -> str:
        return self.lines[self.k]

    def next(self) -> str:
        self.k += 1
        return self.lines[self.k - 1]


def _parse_block(lines: _Lines, args: list[tuple[str, TensorType]]) -> Region:
    """Ops up to the block's return (``return``, ``stablehlo.return``)."""
    ops: list[Op] = []
    names: list[str | None] = [None] * len(args)
    if lines.peek().startswith("^bb"):
        header = lines.next()
        arg_text = header[header.index("(") + 1:header.rindex(")")]
        args, names = [], []
        for a in _split_top(arg_text):
            ssa, _, rest = a.partition(":")
            rest, loc = _strip_loc(rest)
            args.append((ssa.strip(), tensor_type(rest)))
            names.append(loc)
    while True:
        line = lines.next()
        body, loc = _strip_loc(line)
        if re.match(r'^("?stablehlo\.return"?|return|"func\.return"|sdy\.return)\b', body):
            values = re.findall(r"%[\w.#]+", body.split(" : ")[0])
            return Region(args, names, ops, values)
        if body.endswith("({"):
            ops.append(_parse_region_op(lines, body[:-2].rstrip()))
            continue
        if re.match(r"^%[\w.]+(?::\d+)? = stablehlo\.while\(", body):
            ops.append(_parse_pretty_while(lines, body, loc))
            continue
        if re.match(r"^%[\w.]+(?::\d+)? = sdy\.manual_computation\(", body):
            ops.append(_parse_manual_computation(lines, body, loc))
            continue
        colon = _last_colon(body)
        head, sig = (body[:colon], body[colon + 3:]) if colon >= 0 else (body, "")
        ops.append(_parse_op(head, loc, sig))


def _parse_pretty_while(lines: _Lines, head: str, loc: str | None) -> Op:
    """``%r:n = stablehlo.while(%a = %x, ...) : T, ... cond { ... } do { ... }``."""
    m = re.match(r"^(%[\w.]+)(?::(\d+))? = stablehlo\.while\((.*)\) : (.*)$", head)
    assert m is not None, head
    pairs = [p.split("=") for p in _split_top(m.group(3))]
    types = [tensor_type(t) for t in _split_top(m.group(4))]
    args = [(a.strip(), t) for (a, _), t in zip(pairs, types)]
    regions = []
    for opener in ("cond {", "} do {"):
        assert lines.next().startswith(opener)
        regions.append(_parse_block(lines, args))
    lines.next()  # the closing brace
    return Op(_results(m.group(1), m.group(2)), "while", [x.strip() for _, x in pairs], "",
              types, loc, regions)


_MANUAL = re.compile(r"^(%[\w.]+)(?::(\d+))? = sdy\.manual_computation\((.*?)\) "
                     r"in_shardings=\[(.*)\] out_shardings=\[(.*)\] manual_axes=\{(.*)\} "
                     r"\((.*)\) \{$")


def _parse_manual_computation(lines: _Lines, head: str, loc: str | None) -> Op:
    """``%r = sdy.manual_computation(%x) in_shardings=[...] out_shardings=[...]
    manual_axes={...} (%a: T) { ... sdy.return ... } : (T) -> (T)``; the body
    keeps the shardings and axes (``in=``, ``out=``, ``axes=`` lines)."""
    m = _MANUAL.match(head)
    assert m is not None, head
    args = []
    for a in _split_top(m.group(7)):
        ssa, _, rest = a.partition(":")
        args.append((ssa.strip(), tensor_type(_strip_loc(rest)[0])))
    region = _parse_block(lines, args)
    closing, end_loc = _strip_loc(lines.next())
    colon = _last_colon(closing)
    body = f"in=[{m.group(4)}]\nout=[{m.group(5)}]\naxes={{{m.group(6)}}}"
    return Op(_results(m.group(1), m.group(2)), "manual_computation",
              [x.strip() for x in _split_top(m.group(3))], body,
              _signature_types(closing[colon + 3:]), loc or end_loc, [region])


def _parse_region_op(lines: _Lines, head: str) -> Op:
    """A generic-form op with regions: ``"op"(...) <{attrs}> ({ ... }, { ... }) : sig``."""
    regions = []
    while True:
        regions.append(_parse_block(lines, []))
        closing = lines.next()
        if closing.startswith("}, {"):
            continue
        body, loc = _strip_loc(closing)
        body = body[2:]  # the regions' closing "})"
        colon = _last_colon(body)
        op = _parse_op(head, loc, body[colon + 3:] if colon >= 0 else "")
        op.regions = regions
        op.body = op.body + " " + body[:colon] if colon >= 0 else op.body
        return op


# ``<@mesh, [{"x"}, {}]>``, ``<@mesh, [{}, {}], unreduced={"y"}>``
_TENSOR_SHARDING = r'<@[\w.$-]+, \[[^\]]*\](?:, unreduced=\{[^}]*\})?>'


def _sdy_sharding(attrs: str) -> str | None:
    """The ``<@mesh, [...]>`` of an ``sdy.sharding = #sdy.sharding<...>``
    attribute (None without one)."""
    m = re.search(r"sdy\.sharding = #sdy\.sharding(" + _TENSOR_SHARDING + ")", attrs)
    return m.group(1) if m else None


def parse_meshes(text: str) -> dict[str, str]:
    """The module's ``sdy.mesh`` symbols: name -> axes (``["x"=2, "y"=4]``)."""
    return dict(re.findall(r"^\s*sdy\.mesh @([\w.$-]+) = <(\[[^\]]*\])", text, re.M))


def parse_module(text: str) -> tuple[str, list[Function]]:
    lines = _Lines(text)
    header = lines.next()
    m = re.match(r"module @([\w.$-]+)", header)
    name = m.group(1) if m else "module"
    functions = []
    while lines.k < len(lines.lines):
        line = lines.next()
        if not line.startswith("func.func"):
            continue
        fm = re.match(r"func\.func (?:public |private )?@([\w.$-]+)\((.*?)\) ->", line)
        assert fm is not None, line
        args, arg_shardings = [], []
        for a in _split_top(fm.group(2)):
            ssa, _, rest = a.partition(":")
            rest, loc = _strip_loc(rest)
            args.append((ssa.strip(), tensor_type(re.sub(r"\s*\{.*\}$", "", rest.strip())), loc))
            arg_shardings.append(_sdy_sharding(rest))
        results = line[fm.end():].strip().removesuffix("{").strip()
        results = results[1:-1] if results.startswith("(") else results
        body = _parse_block(lines, [(a, t) for a, t, _ in args])
        lines.next()  # the function's closing brace
        functions.append(Function(fm.group(1), args, body, arg_shardings,
                                  [_sdy_sharding(r) for r in _split_top(results)]))
    return name, functions


# ----------------------------------------------------------- canonicalising

# Ops XLA's import keeps whether or not their results are used.
_KEPT = {"custom_call", "call", "while", "case", "all_reduce", "all_gather", "all_to_all",
         "collective_permute", "reduce_scatter", "send", "recv", "infeed", "outfeed",
         "rng_bit_generator", "optimization_barrier", "after_all", "partition_id",
         "replica_id", "manual_computation"}

_NUMPY: dict[str, Any] = {
    "pred": np.bool_, "bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32,
    "f64": np.float64, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def _dense(body: str, t: TensorType) -> np.ndarray | None:
    """The value of ``dense<...>`` of type ``t`` (None for a dtype or form
    the canonicalisation leaves alone)."""
    m = re.match(r"dense<(.*)>$", body.strip())
    np_dtype = _NUMPY.get(t.dtype)
    if m is None or np_dtype is None:
        return None
    raw = m.group(1).strip()
    if raw.startswith('"0x'):
        return np.frombuffer(bytes.fromhex(raw[3:-1]), np_dtype).reshape(t.shape).copy()
    if raw.startswith("0x"):
        width = np.dtype(np_dtype).itemsize
        scalar = np.frombuffer(int(raw, 16).to_bytes(width, "little"), np_dtype)[0]
        return np.full(t.shape, scalar, np_dtype)
    words = raw.replace("[", " ").replace("]", " ").replace(",", " ").split()
    if np_dtype is np.bool_:
        flat = np.array([w == "true" for w in words])
    elif np.dtype(np_dtype).kind in "fV":
        flat = np.array([float(w) for w in words]).astype(np_dtype)
    else:
        flat = np.array([int(w) for w in words]).astype(np_dtype)
    return np.full(t.shape, flat[0], np_dtype) if flat.size == 1 else flat.reshape(t.shape)


def _float_text(v: float, dtype: str) -> str:
    """XLA's round-trip form: ``%g`` with the dtype's guaranteed digits (6 for
    float32, 15 for float64) if they read back as the value, else with the
    digits that always do (9, 17)."""
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    kind = _NUMPY.get(dtype, np.float32)
    few, enough = {"f64": (15, 17), "f16": (3, 5), "bf16": (2, 4)}.get(dtype, (6, 9))
    text = "%.*g" % (few, v)
    with np.errstate(over="ignore"):
        return text if kind(float(text)) == kind(v) else "%.*g" % (enough, v)


def _element_text(v: object, dtype: str, in_array: bool = False) -> str:
    if dtype == "pred":
        return str(int(bool(v))) if in_array else ("true" if bool(v) else "false")
    if dtype.startswith(("f", "bf")):
        return _float_text(float(v), dtype)  # type: ignore[arg-type]
    return str(int(v))  # type: ignore[call-overload]


def _literal(value: np.ndarray, dtype: str) -> str:
    """A constant's value as HLO prints it: ``2``, ``{1, 2}``, ``{ {1, 2}, {3, 4} }``."""
    if value.ndim == 0:
        return _element_text(value[()], dtype)
    if value.ndim == 1:
        return "{" + ", ".join(_element_text(v, dtype, True) for v in value) + "}"
    return "{ " + ", ".join(_literal(v, dtype) for v in value) + " }"


class _Canonical:
    """XLA's import canonicalisation, region by region (in place)."""

    def __init__(self) -> None:
        self.types: dict[str, TensorType] = {}
        self.values: dict[str, np.ndarray] = {}
        self.alias: dict[str, str] = {}
        self.transposes: dict[str, tuple[str, list[int]]] = {}
        self.reshapes: dict[str, str] = {}
        self.locs: dict[str, str | None] = {}

    def resolve(self, v: str) -> str:
        while v in self.alias:
            v = self.alias[v]
        return v

    def region(self, region: Region) -> None:
        for a, t in region.args:
            self.types[a] = t
        seen: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        kept: list[Op] = []
        for op in region.ops:
            op.operands = [self.resolve(o) for o in op.operands]
            for r, t in zip(op.results, op.out_types):
                self.types[r] = t
            for inner in op.regions:
                self.region(inner)
            value = self._folded(op)
            if value is not None:
                key = (op.out_types[0].dtype, value.shape, value.tobytes())
                if key in seen:
                    self.alias[op.results[0]] = seen[key]
                    continue
                seen[key] = op.results[0]
                self.values[op.results[0]] = value
                self.locs[op.results[0]] = op.loc
                op.name, op.operands, op.regions = "constant", [], []
            elif op.name in ("reshape", "broadcast_in_dim") and self._reshaped(op):
                self.alias[op.results[0]] = op.operands[0]
                continue
            elif op.name == "transpose" and not self._composed(op):
                self.alias[op.results[0]] = op.operands[0]
                continue
            elif op.name == "transpose" and self._moves_unit_dims(op) and self._reshaped(op):
                self.alias[op.results[0]] = op.operands[0]
                continue
            elif self._identity(op):
                self.alias[op.results[0]] = op.operands[0]
                continue
            elif (kept_operand := self._neutral(op)) is not None:
                self.alias[op.results[0]] = kept_operand
                continue
            self._constant_last(op)
            kept.append(op)
        region.returns = [self.resolve(v) for v in region.returns]
        region.ops = _live(kept, region.returns)

    def _folded(self, op: Op) -> np.ndarray | None:
        if not op.out_types or len(op.results) != 1:
            return None
        t = op.out_types[0]
        if op.name == "constant":
            return _dense(op.body, t)
        src = self.values.get(op.operands[0]) if op.operands else None
        if src is None or _NUMPY.get(t.dtype) is None:
            return None
        if op.name == "convert":
            with np.errstate(all="ignore"):
                return src.astype(_NUMPY[t.dtype])
        if op.name == "broadcast_in_dim":
            if int(np.prod(t.shape)) >= _BROADCAST_FOLD_LIMIT:
                return None
            expanded = [1] * len(t.shape)
            for i, d in enumerate(_permutation(op.body)):
                expanded[d] = src.shape[i]
            return np.broadcast_to(src.reshape(expanded), t.shape).copy()
        if op.name == "reshape":
            return src.reshape(t.shape)
        if op.name == "transpose":
            return np.transpose(src, _permutation(op.body)).copy()
        args = [self.values.get(o) for o in op.operands]
        if op.name not in _FOLDS or any(a is None for a in args):
            return None
        fold = _FOLDS[op.name]
        if op.name == "divide" and src.dtype.kind != "f":
            return None  # integer division's corner cases are XLA's to fold
        if op.name == "compare":
            fold = _COMPARISONS[op.body.split(",")[0].split()[0]]
        with np.errstate(all="ignore"):
            out = np.asarray(fold(*args))
        return out.astype(_NUMPY[t.dtype]).reshape(t.shape)

    def _reshaped(self, op: Op) -> bool:
        """A broadcast that only inserts unit dimensions (in order) is a
        reshape; a reshape of a reshape reshapes the inner operand. True if
        the result is the (inner) operand itself."""
        src = self.types.get(op.operands[0]) if op.operands else None
        t = op.out_types[0] if op.out_types else None
        if src is None or t is None or int(np.prod(src.shape)) != int(np.prod(t.shape)):
            return False
        if op.name == "broadcast_in_dim":
            dims = _permutation(op.body)
            if dims != sorted(dims):
                return False
            op.name, op.body = "reshape", ""
        inner = self.reshapes.get(op.operands[0])
        if inner is not None:
            op.operands = [inner]
        if self.types.get(op.operands[0]) == t:
            return True
        self.reshapes[op.results[0]] = op.operands[0]
        return False

    def _composed(self, op: Op) -> bool:
        """A transpose of a transpose is one transpose of the inner operand
        (False: the two cancel)."""
        perm = _permutation(op.body)
        inner = self.transposes.get(op.operands[0])
        if inner is not None:
            source, inner_perm = inner
            perm = [inner_perm[p] for p in perm]
            op.operands = [source]
            op.body = re.sub(r"dims = \[[^\]]*\]", f"dims = {perm}", op.body)
        if perm == list(range(len(perm))) and self.types.get(op.operands[0]) == op.out_types[0]:
            return False
        self.transposes[op.results[0]] = (op.operands[0], perm)
        return True

    def _moves_unit_dims(self, op: Op) -> bool:
        """A transpose that keeps its other dimensions in order and moves
        only unit ones is a reshape (the op is made one)."""
        src = self.types.get(op.operands[0])
        perm = _permutation(op.body)
        moved = [d for d in perm if src is not None and src.shape[d] != 1]
        if src is None or moved != sorted(moved):
            return False
        self.transposes.pop(op.results[0], None)
        op.name, op.body = "reshape", ""
        return True

    def _constant_last(self, op: Op) -> None:
        """A commutative op takes a constant as its second operand; the op
        moved is located at both its and the constant's locations."""
        if op.name not in _COMMUTATIVE or len(op.operands) != 2:
            return
        first, second = op.operands
        if first in self.values and second not in self.values:
            op.operands = [second, first]
            theirs = self.locs.get(first)
            if theirs is not None and _leaf(theirs) != _leaf(op.loc):
                op.fused = _leaf(theirs)

    def _neutral(self, op: Op) -> str | None:
        """The operand ``op`` returns unchanged: x + 0, 0 + x, x - 0, x * 1
        and 1 * x, with 0 and 1 constants (XLA's import folds them, for
        floats too)."""
        unit = {"add": 0, "subtract": 0, "multiply": 1}.get(op.name)
        if unit is None or len(op.operands) != 2:
            return None
        for k, other in ((1, 0), (0, 1)):
            if k == 0 and op.name == "subtract":
                continue
            value = self.values.get(op.operands[k])
            if value is not None and value.size and bool(np.all(value == unit)) and \
                    self.types.get(op.operands[other]) == op.out_types[0]:
                return op.operands[other]
        return None

    def _identity(self, op: Op) -> bool:
        if op.name not in ("convert", "reshape", "transpose") or len(op.operands) != 1:
            return False
        if self.types.get(op.operands[0]) != op.out_types[0]:
            return False
        return op.name != "transpose" or _permutation(op.body) == list(
            range(len(op.out_types[0].shape)))


# The elementwise ops XLA's import folds when every operand is a constant.
_FOLDS: dict[str, Any] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "negate": np.negative, "abs": np.abs,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "not": np.invert, "compare": None, "select": np.where}
_COMPARISONS: dict[str, Any] = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less,
                                "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal}

# XLA's import folds a broadcast of a constant into a constant only below
# this many elements (measured: 31 fold, 32 do not).
_BROADCAST_FOLD_LIMIT = 32

_COLLECTIVES = {"all_gather", "all_to_all", "collective_permute"}
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}


def _leaf(loc: str | None) -> str | None:
    """A location name's last component (``jit(f)/while/body/mul``: ``mul``)."""
    return None if loc is None else loc.rsplit("/", 1)[-1]


def _permutation(body: str) -> list[int]:
    m = re.search(r"dims = \[([^\]]*)\]", body)
    return [int(d) for d in re.findall(r"\d+", m.group(1))] if m else []


def _uses(op: Op) -> Iterator[str]:
    yield from op.operands
    for r in op.regions:
        for inner in r.ops:
            yield from _uses(inner)
        yield from r.returns


def _base(v: str) -> str:
    return v.split("#")[0]


def _live(ops: list[Op], returns: Sequence[str]) -> list[Op]:
    """The ops whose results are used (or that XLA keeps regardless)."""
    used = {_base(v) for v in returns}
    out: list[Op] = []
    for op in reversed(ops):
        if op.name in _KEPT or any(_base(r) in used for r in op.results):
            out.append(op)
            used.update(_base(u) for u in _uses(op))
    return out[::-1]


# ------------------------------------------------------------- converting

@dataclass(eq=False)
class Instr:
    """One HLO instruction: its name, its shape's text, ``opcode(operands)``
    (``operation``), the instructions it reads and its attribute text."""

    name: str
    shape: str
    operation: str
    operands: list[Instr]
    attrs: str = ""
    layout_of: tuple[int, ...] | None = None


_OPCODES = {"exponential_minus_one": "exponential-minus-one", "log_plus_one": "log-plus-one",
            "round_nearest_afz": "round-nearest-afz", "round_nearest_even": "round-nearest-even",
            "is_finite": "is-finite", "count_leading_zeros": "count-leading-zeros",
            "shift_left": "shift-left", "shift_right_logical": "shift-right-logical",
            "shift_right_arithmetic": "shift-right-arithmetic",
            "bitcast_convert": "bitcast-convert", "reduce_precision": "reduce-precision",
            "dynamic_slice": "dynamic-slice", "dynamic_update_slice": "dynamic-update-slice",
            "optimization_barrier": "opt-barrier", "partition_id": "partition-id",
            "replica_id": "replica-id", "custom_call": "custom-call", "dot_general": "dot",
            "broadcast_in_dim": "broadcast", "case": "conditional", "reduce_window":
            "reduce-window", "select_and_scatter": "select-and-scatter",
            "all_reduce": "all-reduce", "all_gather": "all-gather", "all_to_all": "all-to-all",
            "collective_permute": "collective-permute", "reduce_scatter": "reduce-scatter",
            "rng_bit_generator": "rng-bit-generator", "triangular_solve": "triangular-solve"}


_ELEMENTWISE = {
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert",
    "cosine", "count_leading_zeros", "divide", "exponential", "exponential_minus_one", "floor",
    "imag", "is_finite", "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply",
    "negate", "not", "or", "popcnt", "power", "real", "remainder", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "select", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor",
    "bitcast_convert", "reduce_precision"}


def _ints(text: str) -> list[int]:
    return [int(d) for d in re.findall(r"-?\d+", text)]


def _braced(values: Sequence[int]) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


def _sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return re.sub(r"\.\d+$", "", name) or "op"


def _tuple_text(parts: Sequence[str]) -> str:
    shown = [(f"/*index={k}*/" if k and k % 5 == 0 else "") + p for k, p in enumerate(parts)]
    return "(" + ", ".join(shown) + ")"


class _Converter:
    """Converts the canonicalised functions into HLO computations (text)."""

    def __init__(self, functions: Sequence[Function]) -> None:
        self.functions = {f.name: f for f in functions}
        self.counts: dict[str, int] = {}
        self.computation_count = 0
        self.region_count = 0
        self.computations: list[str] = []
        self.converted: dict[str, str] = {}
        self.types: dict[str, TensorType] = {}
        self.values: dict[str, np.ndarray] = {}
        self.env: dict[str, Instr] = {}
        self.root_layouts: dict[str, tuple[int, ...] | None] = {}
        self.meshes: dict[str, str] = {}

    # names
    def fresh(self, base: str) -> str:
        self.counts[base] = self.counts.get(base, 0) + 1
        return f"{base}.{self.counts[base]}"

    def computation_name(self, base: str) -> str:
        self.computation_count += 1
        return f"{base}.{self.computation_count}"

    @staticmethod
    def op_base(op: Op) -> str:
        """The name of an op's instructions: its location's last component;
        "" for an op without a location, whose instructions are named after
        their opcodes (``tuple``, ``while``, ``get-tuple-element``)."""
        if op.loc:
            own = op.loc.rsplit("/", 1)[-1]
            return _sanitize(own if op.fused is None else f"{own}_{op.fused}")
        return ""

    # computations
    def computation(self, base: str, params: Sequence[tuple[str, str, TensorType]],
                    region: Region, env: dict[str, Instr], entry: bool = False,
                    arg_shardings: Sequence[str | None] = (),
                    result_shardings: Sequence[str | None] = ()) -> str:
        """Convert ``region`` into a computation whose parameters bind
        ``params`` (SSA name, instruction base name, type); returns its name.
        The entry's sharded parameters and results carry their shardings."""
        instrs: list[Instr] = []
        env = dict(env)
        for k, (ssa, name, t) in enumerate(params):
            sharding = arg_shardings[k] if k < len(arg_shardings) else None
            attrs = "" if sharding is None else (
                f", sharding={hlo_sharding(sharding, self.meshes)}, frontend_attributes="
                f"{{xla.sdy.sharding={_quoted_attr('#sdy.sharding' + sharding)}}}")
            env[ssa] = self.emit(instrs, name, t, "parameter", [], attrs, param=k)
        self.ops(instrs, region.ops, env)
        outs = [env[v] for v in region.returns]
        if any(r is not None for r in result_shardings):
            root = self.sharded_results(instrs, outs, result_shardings)
        elif len(outs) == 1:
            root = outs[0]
        else:
            root = self.emit(instrs, "tuple", None, "tuple", outs)
        text = self.render(instrs, root)
        name = "main" if entry else base
        title = self.computation_name(name)
        header = f"ENTRY {title} {{" if entry else f"{title} {{"
        self.computations.append(header + "\n" + text + "\n}")
        self.entry_root = root
        self.root_layouts[title] = root.layout_of
        return title

    def sharded_results(self, instrs: list[Instr], outs: Sequence[Instr],
                        shardings: Sequence[str | None]) -> Instr:
        """The entry's results with shardings, as XLA exports them: each
        through an ``xla.sdy.FuncResultSharding`` custom call, then a tuple;
        one result is the tuple's element carrying the sharding, several
        the tuple carrying them all (each also copied by a ``reshape`` that
        carries its own, which nothing uses)."""
        if any(r is None for r in shardings):
            raise NotImplementedError("HLO text of results only some of which are sharded "
                                      "is not specified")
        marked = [self.emit(instrs, self.outer_base(o), None, "custom-call", [o],
                            ', custom_call_target="xla.sdy.FuncResultSharding", '
                            'custom_call_has_side_effect=true, frontend_attributes='
                            f'{{xla.sdy.sharding={_per_value([str(r)])}}}')
                  for o, r in zip(outs, shardings)]
        for m, o in zip(marked, outs):
            m.shape, m.layout_of = o.shape, o.layout_of
        hlo = [hlo_sharding(str(r), self.meshes) for r in shardings]
        if len(marked) == 1:
            whole = self.emit(instrs, "tuple", None, "tuple", marked)
            element = self.emit(instrs, "get-tuple-element", None, "get-tuple-element", [whole],
                                f", index=0, sharding={hlo[0]}")
            element.shape = marked[0].shape
            return element
        for m, h in zip(marked, hlo):
            copy = self.emit(instrs, "reshape", None, "reshape", [m], f", sharding={h}")
            copy.shape = m.shape
        return self.emit(instrs, "tuple", None, "tuple", marked,
                         f", sharding={{{', '.join(hlo)}}}")

    def emit(self, instrs: list[Instr], base: str, t: TensorType | None, opcode: str,
             operands: Sequence[Instr], attrs: str = "", param: int | None = None,
             layout: tuple[int, ...] | None = None) -> Instr:
        shape = t.text(layout) if t is not None else _tuple_text([o.shape for o in operands])
        args = str(param) if param is not None else ", ".join(o.name for o in operands)
        instr = Instr(self.fresh(base or opcode), shape, f"{opcode}({args})", list(operands),
                      attrs)
        if param is not None:
            instr.operands = []
        instrs.append(instr)
        return instr

    def ops(self, instrs: list[Instr], ops: Sequence[Op], env: dict[str, Instr]) -> None:
        for op in ops:
            self.env = env
            outs = self.op(instrs, op, env)
            if len(op.results) == 1:
                env[op.results[0]] = outs[0]
            else:
                env.update(zip(op.results, outs))

    def tuple_parts(self, instrs: list[Instr], base: str, value: Instr,
                    types: Sequence[TensorType]) -> list[Instr]:
        return [self.emit(instrs, base, t, "get-tuple-element", [value], f", index={k}")
                for k, t in enumerate(types)]

    def op(self, instrs: list[Instr], op: Op, env: dict[str, Instr]) -> list[Instr]:
        base = self.op_base(op)
        ins = [env[o] for o in op.operands]
        t = op.out_types[0] if op.out_types else None
        fa = _frontend_attributes(op.body)
        if op.name == "constant":
            return [self.constant(instrs, op, t)]
        rule = getattr(self, "op_" + op.name, None)
        if rule is not None:
            return list(rule(instrs, op, base, ins, fa))
        opcode = _OPCODES.get(op.name, op.name.replace("_", "-"))
        base = base or _sanitize(op.name)  # a one-instruction op keeps its MLIR name
        if len(op.out_types) == 1:
            layout = self.elementwise_layout(op, ins)
            out = self.emit(instrs, base, t, opcode, ins, self.attrs(op) + fa, layout=layout)
            out.layout_of = layout
            return [out]
        whole = self.emit(instrs, base, None, opcode, ins, self.attrs(op) + fa)
        whole.shape = _tuple_text([x.text() for x in op.out_types])
        return self.tuple_parts(instrs, base, whole, op.out_types)

    @staticmethod
    def elementwise_layout(op: Op, ins: Sequence[Instr]) -> tuple[int, ...] | None:
        """An elementwise op's result keeps its first array operand's layout
        (a select's first case), as XLA's shape inference gives it."""
        if op.name not in _ELEMENTWISE or not ins:
            return None
        source = ins[1] if op.name == "select" and len(ins) > 1 else ins[0]
        return source.layout_of

    def constant(self, instrs: list[Instr], op: Op, t: TensorType | None) -> Instr:
        """A constant; a splat (one value over a non-scalar shape) is a
        scalar constant and its broadcast, as XLA exports it."""
        assert t is not None
        value = self.values.get(op.results[0])
        if value is None:  # a dtype or form left unfolded: MLIR's literal
            c = self.emit(instrs, "constant", t, "constant", [])
            m = re.match(r"dense<(.*)>", op.body.strip())
            c.operation = f"constant({m.group(1) if m else op.body.strip()})"
            return c
        flat = value.reshape(-1)
        splat = flat.size > 1 and bool(
            np.all((flat == flat[0]) | (np.isnan(flat) & np.isnan(flat[0]))
                   if value.dtype.kind == "f" else flat == flat[0]))
        shown = flat[:1].reshape(()) if splat else value
        c = self.emit(instrs, "constant", TensorType(() if splat else t.shape, t.dtype),
                      "constant", [])
        c.operation = f"constant({_literal(shown, t.dtype)})"
        if not splat:
            return c
        return self.emit(instrs, "broadcast", t, "broadcast", [c], ", dimensions={}")

    def attrs(self, op: Op) -> str:
        b = op.body
        if op.name == "compare":
            order = ", order=TOTAL" if "TOTALORDER" in b else ""
            return f", direction={b.split(',')[0].split()[0]}{order}" if b else ""
        if op.name == "pad":
            lo, hi, inner = (_ints(_field(b, k)) for k in ("low", "high", "interior"))
            return ", padding=" + "x".join(
                f"{a}_{z}" + (f"_{i}" if any(inner) else "") for a, z, i in zip(lo, hi, inner))
        if op.name == "dynamic_slice":
            return f", dynamic_slice_sizes={_braced(_ints(_field(b, 'sizes')))}"
        if op.name == "gather":
            return _gather_attrs(b)
        if op.name in ("broadcast_in_dim", "transpose", "reverse"):
            m = re.search(r"dims = \[([^\]]*)\]", b)
            return f", dimensions={_braced(_ints(m.group(1)) if m else [])}"
        if op.name == "concatenate":
            m = re.search(r"dim = (\d+)", b)
            return f", dimensions={{{m.group(1) if m else 0}}}"
        if op.name == "iota":
            m = re.search(r"dim = (\d+)", b)
            return f", iota_dimension={m.group(1) if m else 0}"
        if op.name == "slice":
            return _slice_attrs(b)
        if op.name == "dot_general":
            return _dot_attrs(b)
        if op.name in _COLLECTIVES:
            return self.collective_attrs(op)
        if op.name == "convolution":
            return _conv_attrs(b, [self.types[o] for o in op.operands])
        if op.name == "custom_call":
            m = re.search(r"@([\w.$-]+)|call_target_name = \"([^\"]+)\"", b)
            target = (m.group(1) or m.group(2)) if m else ""
            return f', custom_call_target="{target}"'
        return ""

    def collective_attrs(self, op: Op) -> str:
        """A collective's channel, its replica groups as mesh axes
        (``mesh['x'=2,'y'=4] {'y'}``) and dimensions, as XLA prints them."""
        b = op.body
        out = []
        channel = re.search(r"channel_handle<handle = (\d+)", b)
        if channel:
            out.append(f"channel_id={channel.group(1)}")
        groups = re.search(r"replica_group_mesh_axes<mesh = @([\w.$-]+), axes = \[(.*?)\]>", b)
        if groups:
            mesh = ",".join(f"'{n}'={v}" for n, v in _mesh_axes(self.meshes[groups.group(1)]))
            axes = ",".join(f"'{a}'" for a in re.findall(r'name = "([^"]+)"', groups.group(2)))
            out.append(f"replica_groups=mesh[{mesh}] {{{axes}}}")
        elif "replica_groups" in b:
            raise NotImplementedError(f"HLO text of {op.name} with explicit replica groups is "
                                      "not specified")
        if op.name == "collective_permute":
            pairs = re.search(r"source_target_pairs = dense<(.*?)> :", b)
            flat = _ints((pairs.group(1) if pairs else "").replace("[", "").replace("]", ""))
            out.append("source_target_pairs={" + ",".join(
                f"{{{flat[k]},{flat[k + 1]}}}" for k in range(0, len(flat), 2)) + "}")
        dim = re.search(r"(?:all_gather_dim|scatter_dimension|split_dimension) = (\d+)", b)
        if op.name == "all_to_all" and dim:
            out.append(f"dimensions={{{dim.group(1)}}}")
        elif op.name == "all_gather" and dim:
            out.append(f"dimensions={{{dim.group(1)}}}")
        if "use_global_device_ids" in b:
            out.append("use_global_device_ids=true")
        if op.name == "reduce_scatter" and dim:
            out.append(f"dimensions={{{dim.group(1)}}}")
        return ", " + ", ".join(out) if out else ""

    def op_all_reduce(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                      fa: str) -> list[Instr]:
        reducer = self.block_computation(op.regions[0])
        attrs = self.collective_attrs(op) + f", to_apply={reducer}" + fa
        return self.results_of(instrs, op, base, "all-reduce", ins, attrs)

    def op_all_to_all(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                      fa: str) -> list[Instr]:
        """An all-to-all whose split and concat dimensions differ is, as XLA
        converts it, an all-to-all along the split dimension (the operand's
        shape), a constant of the split count that nothing uses, a reshape
        cutting the split dimension into (count, rest), a transpose moving
        the count before the concat dimension (laid out so that it moves no
        data) and a reshape to the result."""
        split, concat, count = (_int_attr(op.body, k) for k in (
            "split_dimension", "concat_dimension", "split_count"))
        attrs = self.collective_attrs(op) + fa
        if split == concat:
            return [self.emit(instrs, base, op.out_types[0], "all-to-all", ins, attrs)]
        t = self.types[op.operands[0]]
        moved = self.emit(instrs, base, t, "all-to-all", ins, attrs)
        counted = self.emit(instrs, base, TensorType((1,), "s32"), "constant", [])
        counted.operation = f"constant({{{count}}})"
        cut = (*t.shape[:split], count, t.shape[split] // count, *t.shape[split + 1:])
        pieces = self.emit(instrs, base, TensorType(cut, t.dtype), "reshape", [moved])
        others = [d for d in range(len(cut)) if d != split]
        at = others.index(concat if concat < split else concat + 1)
        perm = [*others[:at], split, *others[at:]]
        layout = tuple(perm.index(d) for d in reversed(range(len(cut))))
        swapped = self.emit(instrs, base, TensorType(tuple(cut[d] for d in perm), t.dtype),
                            "transpose", [pieces], f", dimensions={_braced(perm)}",
                            layout=layout)
        swapped.layout_of = layout
        return [self.emit(instrs, base, op.out_types[0], "reshape", [swapped])]

    def op_reduce_scatter(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                          fa: str) -> list[Instr]:
        reducer = self.block_computation(op.regions[0])
        attrs = self.collective_attrs(op) + f", to_apply={reducer}" + fa
        return self.results_of(instrs, op, base, "reduce-scatter", ins, attrs)

    # ops with regions or several results
    def op_square(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                  fa: str) -> list[Instr]:
        """``chlo.square``: x * x; for a complex x, XLA's expansion
        (re - im)(re + im) + 2 re im i, with a zero real part where |re| and
        |im| are equal and finite (no cancellation error there)."""
        (x,), t = ins, op.out_types[0]
        base = base or "square"
        if not t.dtype.startswith("c"):
            return [self.emit(instrs, base, t, "multiply", [x, x], fa)]
        part = TensorType(t.shape, "f32" if t.dtype == "c64" else "f64")
        mask = TensorType(t.shape, "pred")

        def emit(opcode: str, operands: list[Instr], shape: TensorType = part,
                 attrs: str = "") -> Instr:
            return self.emit(instrs, base, shape, opcode, operands, attrs)
        re_ = emit("real", [x])
        finite, abs_re = emit("is-finite", [re_], mask), emit("abs", [re_])
        im = emit("imag", [x])
        equal = emit("compare", [abs_re, emit("abs", [im])], mask, ", direction=EQ")
        tie = emit("and", [finite, equal], mask)
        zero = self.splat(instrs, part, 0)
        product = emit("multiply", [emit("subtract", [re_, im]), emit("add", [re_, im])])
        real_part = emit("select", [tie, zero, product])
        cross = emit("multiply", [re_, im])
        imag_part = emit("multiply", [cross, self.splat(instrs, part, 2)])
        return [self.emit(instrs, base, t, "complex", [real_part, imag_part], fa)]

    def splat(self, instrs: list[Instr], t: TensorType, value: float) -> Instr:
        """A scalar constant broadcast to ``t``."""
        c = self.emit(instrs, "constant", TensorType((), t.dtype), "constant", [])
        c.operation = f"constant({_literal(np.asarray(value), t.dtype)})"
        return self.emit(instrs, "broadcast", t, "broadcast", [c], ", dimensions={}")

    def op_iota(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                fa: str) -> list[Instr]:
        """An iota of rank > 1 is a vector iota broadcast along its dimension."""
        t = op.out_types[0]
        m = re.search(r"dim = (\d+)", op.body)
        dim = int(m.group(1)) if m else 0
        if len(t.shape) <= 1:
            return [self.emit(instrs, base, t, "iota", [], self.attrs(op) + fa)]
        line = self.emit(instrs, base, TensorType((t.shape[dim],), t.dtype), "iota", [],
                         ", iota_dimension=0")
        return [self.emit(instrs, base, t, "broadcast", [line], f", dimensions={{{dim}}}" + fa)]

    def op_broadcast_in_dim(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                            fa: str) -> list[Instr]:
        """A broadcast that stretches unit dimensions is, as XLA builds it, a
        broadcast keeping them, a reshape dropping them and a broadcast of
        the rest."""
        t, src = op.out_types[0], self.types.get(op.operands[0])
        dims = _permutation(op.body)
        stretched = [i for i, d in enumerate(dims)
                     if src is not None and src.shape[i] == 1 and t.shape[d] != 1]
        if not stretched:
            return [self.emit(instrs, base, t, "broadcast", ins, self.attrs(op) + fa)]
        kept = [i for i in range(len(dims)) if i not in stretched]
        unit = list(t.shape)
        for i in stretched:
            unit[dims[i]] = 1
        first = self.emit(instrs, base, TensorType(tuple(unit), t.dtype), "broadcast", ins,
                          f", dimensions={_braced(dims)}")
        squeezed = self.emit(instrs, base, TensorType(tuple(unit[dims[i]] for i in kept),
                                                      t.dtype), "reshape", [first])
        return [self.emit(instrs, base, t, "broadcast", [squeezed],
                          f", dimensions={_braced([dims[i] for i in kept])}" + fa)]

    def op_transpose(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                     fa: str) -> list[Instr]:
        m = re.search(r"dims = \[([^\]]*)\]", op.body)
        perm = _ints(m.group(1)) if m else []
        inverse = [perm.index(d) for d in range(len(perm))]
        src = ins[0].layout_of or tuple(range(len(perm)))[::-1]
        layout = tuple(inverse[d] for d in src)
        out = self.emit(instrs, base, op.out_types[0], "transpose", ins,
                        self.attrs(op) + fa, layout=layout)
        out.layout_of = layout
        return [out]

    def op_reduce(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                  fa: str) -> list[Instr]:
        pairs = re.findall(r"\((%[\w.#]+) init: (%[\w.#]+)\)", op.body)
        if pairs and not op.regions:
            # ``(%x init: %i), (%y init: %j)``: operands alternate input, init.
            env_ins, inits = ins[0::2], ins[1::2]
            m = re.search(r"applies ([\w.]+) across dimensions = \[([^\]]*)\]", op.body)
            assert m is not None
            reducer = m.group(1).split(".", 1)[-1]
            dims = _ints(m.group(2))
            scalars = [TensorType((), t.dtype) for t in op.out_types]
            region = self.reducer_region(base, reducer, scalars)
            operands = env_ins + inits
        else:
            m = re.search(r"dimensions = array<i64(?:: ([^>]*))?>", op.body)
            dims = _ints(m.group(1) or "") if m else []
            operands = ins
            region0 = op.regions[0]
            params = [(a, _sanitize(loc) if loc else f"Arg_{k}", t)
                      for k, ((a, t), loc) in enumerate(zip(region0.args, region0.arg_names))]
            region = self.computation(self.region_base(), params, op.regions[0], {})
        attrs = f", dimensions={_braced(dims)}, to_apply={region}" + fa
        if len(op.out_types) == 1:
            return [self.emit(instrs, base, op.out_types[0], "reduce", operands, attrs)]
        whole = self.emit(instrs, base, None, "reduce", operands, attrs)
        whole.shape = _tuple_text([x.text() for x in op.out_types])
        return self.tuple_parts(instrs, base, whole, op.out_types)

    def region_base(self) -> str:
        self.region_count += 1
        return f"region_{self.region_count - 1}"

    def reducer_region(self, base: str, reducer: str, scalars: Sequence[TensorType]) -> str:
        instrs: list[Instr] = []
        t = scalars[0]
        a = self.emit(instrs, base, t, "parameter", [], param=0)
        b = self.emit(instrs, base, t, "parameter", [], param=1)
        root = self.emit(instrs, base, t, _OPCODES.get(reducer, reducer), [a, b])
        title = self.computation_name(self.region_base())
        self.computations.append(f"{title} {{\n{self.render(instrs, root)}\n}}")
        return title

    def op_sort(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                fa: str) -> list[Instr]:
        dim = re.search(r"dimension = (\d+)", op.body)
        stable = ", is_stable=true" if "is_stable = true" in op.body else ""
        comparator = self.block_computation(op.regions[0])
        attrs = (f", dimensions={{{dim.group(1) if dim else 0}}}{stable}, "
                 f"to_apply={comparator}" + fa)
        return self.results_of(instrs, op, base, "sort", ins, attrs)

    def op_reduce_window(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                         fa: str) -> list[Instr]:
        sizes = _ints(_array(op.body, "window_dimensions"))
        rank = len(sizes)
        strides = _ints(_array(op.body, "window_strides")) or [1] * rank
        padding = re.search(r"padding = dense<([^>]*)>", op.body)
        pads = _ints(padding.group(1)) if padding else [0] * (2 * rank)
        if len(pads) == 1:
            pads = pads * (2 * rank)
        lhs = _ints(_array(op.body, "base_dilations")) or [1] * rank
        rhs = _ints(_array(op.body, "window_dilations")) or [1] * rank
        parts = [f"size={'x'.join(map(str, sizes))}"]
        for key, values in (("stride", strides),):
            if any(v != 1 for v in values):
                parts.append(f"{key}={'x'.join(map(str, values))}")
        if any(pads):
            parts.append("pad=" + "x".join(f"{pads[2 * k]}_{pads[2 * k + 1]}"
                                           for k in range(rank)))
        for key, values in (("lhs_dilate", lhs), ("rhs_dilate", rhs)):
            if any(v != 1 for v in values):
                parts.append(f"{key}={'x'.join(map(str, values))}")
        body = self.block_computation(op.regions[0])
        attrs = f", window={{{' '.join(parts)}}}, to_apply={body}" + fa
        return self.results_of(instrs, op, base, "reduce-window", ins, attrs)

    def op_sharding_constraint(self, instrs: list[Instr], op: Op, base: str,
                               ins: list[Instr], fa: str) -> list[Instr]:
        """A ``Sharding`` custom call carrying the sharding."""
        m = re.search(_TENSOR_SHARDING, op.body)
        assert m is not None, op.body
        sharding = m.group(0)
        # (XLA keeps a constraint to unreduced axes: it has a side effect)
        effect = ", custom_call_has_side_effect=true" if "unreduced=" in sharding else ""
        attrs = (f', custom_call_target="Sharding"{effect}, '
                 f"sharding={hlo_sharding(sharding, self.meshes)}"
                 f", frontend_attributes={{xla.sdy.sharding={_per_value([sharding])}}}")
        out = self.emit(instrs, base, op.out_types[0], "custom-call", ins, attrs)
        return [out]

    def op_manual_computation(self, instrs: list[Instr], op: Op, base: str,
                              ins: list[Instr], fa: str) -> list[Instr]:
        """XLA's export of a manual computation: a ``GlobalToLocalShape``
        custom call to the per-device blocks, a ``call`` of the body (its
        computation ``xla.sdy.manual_computation_body``), and a
        ``LocalToGlobalShape`` custom call back."""
        fields = dict(line.split("=", 1) for line in op.body.split("\n"))
        axes = f'manual_axes={_quoted_attr("#sdy<manual_axes" + fields["axes"] + ">")}'
        ins_attr = f'in_shardings={_per_value(_split_top(fields["in"][1:-1]))}'
        outs_attr = f'out_shardings={_per_value(_split_top(fields["out"][1:-1]))}'
        region = op.regions[0]
        side = ', custom_call_has_side_effect=true, frontend_attributes={'
        local = self.results_of(instrs, Op([], "", [], "", [t for _, t in region.args], None),
                                base, "custom-call", ins,
                                ', custom_call_target="xla.sdy.GlobalToLocalShape"' + side
                                + f"xla.sdy.{ins_attr},xla.sdy.{axes}}}")
        params = [(a, f"Arg_{k}", t) for k, (a, t) in enumerate(region.args)]
        body = self.computation("xla.sdy.manual_computation_body", params, region, {})
        late = ', frontend_attributes={inlineable="xla_late"}'
        inner = [t for t in self.region_types(region)]
        called = self.results_of(instrs, Op([], "", [], "", inner, None), base, "call", local,
                                 f", to_apply={body}" + late)
        if len(called) > 1:
            for c in called:
                c.attrs += late
        return self.results_of(instrs, op, base, "custom-call", called,
                               ', custom_call_target="xla.sdy.LocalToGlobalShape"' + side
                               + f"xla.sdy.{axes},xla.sdy.{outs_attr}}}")

    def region_types(self, region: Region) -> list[TensorType]:
        return [self.types[v] for v in region.returns]

    def op_scatter(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                   fa: str) -> list[Instr]:
        """A scatter: its dimension numbers, the flags set, and its update
        region as the computation it applies."""
        update = self.block_computation(op.regions[0])
        attrs = _scatter_attrs(op.body) + f", to_apply={update}" + fa
        return self.results_of(instrs, op, base, "scatter", ins, attrs)

    def block_computation(self, region: Region) -> str:
        """A region whose block arguments are its parameters (``Arg_k``, or
        their location names)."""
        params = [(a, _sanitize(loc) if loc else f"Arg_{k}", t)
                  for k, ((a, t), loc) in enumerate(zip(region.args, region.arg_names))]
        return self.computation(self.region_base(), params, region, {})

    def results_of(self, instrs: list[Instr], op: Op, base: str, opcode: str,
                   ins: list[Instr], attrs: str) -> list[Instr]:
        """One instruction for one result, else a tuple and its elements."""
        if len(op.out_types) == 1:
            return [self.emit(instrs, base, op.out_types[0], opcode, ins, attrs)]
        whole = self.emit(instrs, base, None, opcode, ins, attrs)
        whole.shape = _tuple_text([x.text() for x in op.out_types])
        return self.tuple_parts(instrs, base, whole, op.out_types)

    def op_while(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                 fa: str) -> list[Instr]:
        carry = self.emit(instrs, base, None, "tuple", ins)
        # XLA converts the body first.
        body = self.loop_region(op.regions[1], carry.shape, False)
        cond = self.loop_region(op.regions[0], carry.shape, True)
        loop = self.emit(instrs, base, None, "while", [carry],
                         f", condition={cond}, body={body}" + fa)
        loop.shape = carry.shape
        return self.tuple_parts(instrs, base, loop, op.out_types)

    def loop_region(self, region: Region, shape: str, is_cond: bool) -> str:
        instrs: list[Instr] = []
        whole = self.emit(instrs, "arg_tuple", None, "parameter", [], param=0)
        whole.shape = shape
        env = {}
        for k, (a, t) in enumerate(region.args):
            env[a] = self.emit(instrs, "get-tuple-element", t, "get-tuple-element", [whole],
                               f", index={k}")
        self.ops(instrs, region.ops, env)
        outs = [env[v] for v in region.returns]
        root = outs[0] if is_cond else self.emit(instrs, "tuple", None, "tuple", outs)
        title = self.computation_name(self.region_base())
        self.computations.append(f"{title} {{\n{self.render(instrs, root)}\n}}")
        return title

    def op_case(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                fa: str) -> list[Instr]:
        names, operands = [], []
        outer_env = self.env
        for region in op.regions:
            captured = _captured(region)
            sub: list[Instr] = []
            env: dict[str, Instr] = {}
            outer = [outer_env[c] for c in captured]
            if len(captured) == 1:
                env[captured[0]] = self.emit(sub, self.outer_base(outer[0]),
                                             self.types[captured[0]], "parameter", [], param=0)
                operands.append(outer[0])
            else:
                packed = self.emit(instrs, base, None, "tuple", outer)
                whole = self.emit(sub, "arg_tuple", None, "parameter", [], param=0)
                whole.shape = packed.shape
                for k, c in enumerate(captured):
                    env[c] = self.emit(sub, "get-tuple-element", self.types[c],
                                       "get-tuple-element", [whole], f", index={k}")
                operands.append(packed)
            self.ops(sub, region.ops, env)
            outs = [env[v] for v in region.returns]
            root = outs[0] if len(outs) == 1 else self.emit(sub, "tuple", None, "tuple", outs)
            title = self.computation_name(self.region_base())
            self.computations.append(f"{title} {{\n{self.render(sub, root)}\n}}")
            names.append(title)
        attrs = f", branch_computations={{{', '.join(names)}}}" + fa
        if len(op.out_types) == 1:
            return [self.emit(instrs, base, op.out_types[0], "conditional", [ins[0], *operands],
                              attrs)]
        whole = self.emit(instrs, base, None, "conditional", [ins[0], *operands], attrs)
        whole.shape = _tuple_text([x.text() for x in op.out_types])
        return self.tuple_parts(instrs, base, whole, op.out_types)

    @staticmethod
    def outer_base(instr: Instr) -> str:
        return instr.name.rsplit(".", 1)[0]

    def op_call(self, instrs: list[Instr], op: Op, base: str, ins: list[Instr],
                fa: str) -> list[Instr]:
        m = re.match(r"@([\w.$-]+)", op.body)
        assert m is not None
        callee = m.group(1)
        if callee not in self.converted:
            f = self.functions[callee]
            params = [(a, _sanitize(loc) if loc else f"Arg_{k}", t)
                      for k, (a, t, loc) in enumerate(f.args)]
            self.converted[callee] = self.computation(_sanitize(callee), params, f.body, {})
        attrs = f", to_apply={self.converted[callee]}" + fa
        if len(op.out_types) == 1:
            # The call's result has the layout of the callee's root.
            layout = self.root_layouts.get(self.converted[callee])
            out = self.emit(instrs, base, op.out_types[0], "call", ins, attrs, layout=layout)
            out.layout_of = layout
            return [out]
        whole = self.emit(instrs, base, None, "call", ins, attrs)
        whole.shape = _tuple_text([x.text() for x in op.out_types])
        return self.tuple_parts(instrs, base, whole, op.out_types)

    # printing
    @staticmethod
    def render(instrs: list[Instr], root: Instr) -> str:
        users: set[int] = set()
        for i in instrs:
            users.update(id(o) for o in i.operands)
        order: list[Instr] = []
        done: set[int] = set()

        def visit(i: Instr) -> None:
            if id(i) in done:
                return
            done.add(id(i))
            for o in i.operands:
                visit(o)
            order.append(i)
        for i in instrs:
            if id(i) not in users:
                visit(i)
        lines = []
        for i in order:
            prefix = "ROOT " if i is root else ""
            lines.append(f"  {prefix}{i.name} = {i.shape} {i.operation}{i.attrs}")
        return "\n".join(lines)


def _frontend_attributes(body: str) -> str:
    m = re.search(r"mhlo\.frontend_attributes = \{([^}]*)\}", body)
    if m is None:
        return ""
    pairs = sorted((k.strip(), v.strip()) for k, v in
                   (p.split("=", 1) for p in _split_top(m.group(1))))
    return ", frontend_attributes={" + ",".join(f"{k}={v}" for k, v in pairs) + "}"


def _int_attr(body: str, key: str) -> int:
    """The integer after ``key = `` (``split_count = 2 : i64``)."""
    m = re.search(rf"\b{key} = (-?\d+)", body)
    if m is None:
        raise SpecInternalError(f"no {key} in {body}")
    return int(m.group(1))


def _field(body: str, key: str) -> str:
    """The bracketed list after ``key = `` (``low = [1, 0]``)."""
    m = re.search(rf"\b{key} = \[([^\]]*)\]", body)
    return m.group(1) if m else ""


def _array(body: str, key: str) -> str:
    """The values of ``key = array<i64: 1, 2>``."""
    m = re.search(rf"\b{key} = array<i64(?:: ([^>]*))?>", body)
    return (m.group(1) or "") if m else ""


def _gather_attrs(body: str) -> str:
    def dims(key: str) -> list[int]:
        m = re.search(rf"\b{key} = \[([^\]]*)\]", body)
        return _ints(m.group(1)) if m else []
    vector = re.search(r"index_vector_dim = (\d+)", body)
    out = [f"offset_dims={_braced(dims('offset_dims'))}",
           f"collapsed_slice_dims={_braced(dims('collapsed_slice_dims'))}",
           f"start_index_map={_braced(dims('start_index_map'))}"]
    if dims("operand_batching_dims"):
        out.append(f"operand_batching_dims={_braced(dims('operand_batching_dims'))}")
        out.append(f"start_indices_batching_dims={_braced(dims('start_indices_batching_dims'))}")
    out.append(f"index_vector_dim={vector.group(1) if vector else 0}")
    out.append(f"slice_sizes={_braced(_ints(_array(body, 'slice_sizes')))}")
    if "indices_are_sorted = true" in body:
        out.append("indices_are_sorted=true")
    return ", " + ", ".join(out)


def _slice_attrs(body: str) -> str:
    m = re.search(r"\[([^\]]*)\]", body)
    parts = [p.strip() for p in (m.group(1).split(",") if m else [])]
    triples = []
    for p in parts:
        nums = [int(x) for x in p.split(":")]
        triples.append((nums[0], nums[1], nums[2] if len(nums) > 2 else 1))
    strided = any(s != 1 for _, _, s in triples)
    shown = [f"[{a}:{b}:{s}]" if strided else f"[{a}:{b}]" for a, b, s in triples]
    return ", slice={" + ", ".join(shown) + "}"


def _dot_attrs(body: str) -> str:
    out = []
    batch = re.search(r"batching_dims = \[([^\]]*)\] x \[([^\]]*)\]", body)
    contract = re.search(r"contracting_dims = \[([^\]]*)\] x \[([^\]]*)\]", body)
    if batch:
        out.append(f"lhs_batch_dims={_braced(_ints(batch.group(1)))}")
    out.append(f"lhs_contracting_dims={_braced(_ints(contract.group(1)) if contract else [])}")
    if batch:
        out.append(f"rhs_batch_dims={_braced(_ints(batch.group(2)))}")
    out.append(f"rhs_contracting_dims={_braced(_ints(contract.group(2)) if contract else [])}")
    precision = re.search(r"precision = \[(\w+), (\w+)\]", body)
    if precision and precision.groups() != ("DEFAULT", "DEFAULT"):
        out.append(f"operand_precision={{{precision.group(1).lower()},"
                   f"{precision.group(2).lower()}}}")
    return ", " + ", ".join(out)


def _scatter_attrs(body: str) -> str:
    """A scatter's dimension numbers and flags, in XLA's order."""
    def dims(key: str) -> list[int]:
        m = re.search(rf"\b{key} = \[([^\]]*)\]", body)
        return _ints(m.group(1)) if m else []
    out = [f"update_window_dims={_braced(dims('update_window_dims'))}",
           f"inserted_window_dims={_braced(dims('inserted_window_dims'))}",
           f"scatter_dims_to_operand_dims={_braced(dims('scatter_dims_to_operand_dims'))}"]
    if dims("input_batching_dims"):
        out.append(f"input_batching_dims={_braced(dims('input_batching_dims'))}")
        out.append("scatter_indices_batching_dims="
                   f"{_braced(dims('scatter_indices_batching_dims'))}")
    vector = re.search(r"index_vector_dim = (\d+)", body)
    out.append(f"index_vector_dim={vector.group(1) if vector else 0}")
    for flag in ("indices_are_sorted", "unique_indices"):
        if f"{flag} = true" in body:
            out.append(f"{flag}=true")
    return ", " + ", ".join(out)


def _window_part(key: str, values: Sequence[int], trivial: int) -> list[str]:
    return [f"{key}={'x'.join(map(str, values))}"] if any(v != trivial for v in values) else []


def _conv_attrs(body: str, operand_types: Sequence[TensorType]) -> str:
    """A convolution's window (``size=2x2 stride=1x2 pad=1_0x0_1 ...``, the
    parts that are not all 1 or 0 left out), its ``dim_labels`` and group
    counts and operand precisions where they are not the defaults."""
    m = re.search(r"dim_numbers = \[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", body)
    assert m is not None, body
    lhs, rhs, out = ([p.strip() for p in g.split(",")] for g in m.groups())
    spatial = [rhs.index(str(k)) for k in range(len(rhs) - 2)]
    sizes = [operand_types[1].shape[d] for d in spatial] if len(operand_types) > 1 else []
    rank = len(spatial)
    strides = _ints(_field(body, "stride")) or [1] * rank
    pad = re.search(r"pad = \[((?:\[[^\]]*\],?\s*)*)\]", body)
    pads = _ints(pad.group(1).replace("[", "").replace("]", "")) if pad else [0] * (2 * rank)
    parts = [f"size={'x'.join(map(str, sizes))}", *_window_part("stride", strides, 1)]
    if any(pads):
        parts.append("pad=" + "x".join(f"{pads[2 * k]}_{pads[2 * k + 1]}" for k in range(rank)))
    parts += _window_part("lhs_dilate", _ints(_field(body, "lhs_dilate")) or [1] * rank, 1)
    parts += _window_part("rhs_dilate", _ints(_field(body, "rhs_dilate")) or [1] * rank, 1)
    reverse = re.search(r"reverse = \[([^\]]*)\]", body)
    flips = [int(v.strip() in ("true", "1")) for v in reverse.group(1).split(",")] \
        if reverse and reverse.group(1).strip() else []
    parts += _window_part("rhs_reversal", flips, 0)
    text = (f", window={{{' '.join(parts)}}}, dim_labels={''.join(lhs)}_{''.join(rhs)}->"
            f"{''.join(out)}")
    for key in ("feature_group_count", "batch_group_count"):
        count = re.search(rf"{key} = (\d+)", body)
        if count and count.group(1) != "1":
            text += f", {key}={count.group(1)}"
    precisions = re.findall(r"#stablehlo<precision (\w+)>", body)
    if precisions and any(p != "DEFAULT" for p in precisions):
        text += f", operand_precision={{{','.join(p.lower() for p in precisions)}}}"
    return text


# ---------------------------------------------------------------- shardings

def _mesh_axes(axes: str) -> list[tuple[str, int]]:
    return [(n, int(v)) for n, v in re.findall(r'"([^"]+)"=(\d+)', axes)]


def _iota_text(sizes: Sequence[int], perm: Sequence[int]) -> str:
    """XLA's iota tile assignment ``<=[dims]T(perm)``: the mesh's device ids
    reshaped to ``sizes`` and transposed by ``perm``, in canonical form
    (unit dimensions dropped, dimensions that stay adjacent merged)."""
    nonunit = [d for d, n in enumerate(sizes) if n != 1]
    groups: list[list[int]] = []
    for d in (nonunit.index(d) for d in perm if sizes[d] != 1):
        if groups and groups[-1][-1] + 1 == d:  # runs of consecutive dimensions merge
            groups[-1].append(d)
        else:
            groups.append([d])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged = [int(np.prod([sizes[nonunit[d]] for d in groups[g]])) for g in order]
    transpose = [order.index(g) for g in range(len(groups))]
    if transpose == sorted(transpose):
        return f"<=[{int(np.prod(sizes))}]"
    return f"<=[{','.join(map(str, merged))}]T({','.join(map(str, transpose))})"


def hlo_sharding(sdy: str, meshes: dict[str, str]) -> str:
    """The HLO sharding of an ``<@mesh, [{"x"}, {}]>`` tensor sharding:
    ``{replicated}``, or ``{devices=[tiles]<=[...] [last_tile_dim_replicate]}``
    (the mesh axes a dimension is split over tile it, the others replicate).
    A dimension left open (``{?}``, ``{"x", ?}``) tiles by the axes it
    names: openness is the partitioner's freedom, not part of the tiling."""
    m = re.fullmatch(r'<@([\w.$-]+), \[(.*)\](?:, unreduced=\{([^}]*)\})?>', sdy.strip())
    if m is None or m.group(1) not in meshes or ":" in m.group(2):
        raise NotImplementedError(f"the HLO sharding of {sdy} is not specified")
    axes = _mesh_axes(meshes[m.group(1)])
    names = [n for n, _ in axes]
    spec = [re.findall(r'"([^"]+)"', d) for d in re.findall(r"\{([^}]*)\}", m.group(2))]
    used = [names.index(a) for d in spec for a in d]
    pending = [names.index(a) for a in re.findall(r'"([^"]+)"', m.group(3) or "")]
    unused = [k for k in range(len(axes)) if k not in used and k not in pending]
    tiles = [int(np.prod([axes[names.index(a)][1] for a in d])) for d in spec]
    unreduced = int(np.prod([axes[k][1] for k in pending]))
    replicated = int(np.prod([axes[k][1] for k in unused]))
    if all(t == 1 for t in tiles) and unreduced == 1:
        return "{replicated}"
    if all(t == 1 for t in tiles) and replicated == 1:
        return "{unreduced}"
    # The trailing tile dimensions: unreduced axes', then replicated axes'.
    last = [(kind, n) for kind, n in (("unreduced", unreduced), ("replicated", replicated))
            if n > 1]
    if not last:
        suffix = ""
    elif [kind for kind, _ in last] == ["replicated"]:
        suffix = " last_tile_dim_replicate"
    else:
        suffix = f" last_tile_dims={{{', '.join(kind for kind, _ in last)}}}"
    shape = tiles + [n for _, n in last]
    iota = _iota_text([n for _, n in axes], used + pending + unused)
    return f"{{devices=[{','.join(map(str, shape))}]{iota}{suffix}}}"


def _quoted_attr(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def _per_value(shardings: Sequence[str]) -> str:
    return _quoted_attr(f"#sdy.sharding_per_value<[{', '.join(shardings)}]>")


def _captured(region: Region) -> list[str]:
    """The values a region uses that it does not define, in order of use."""
    defined = {a for a, _ in region.args}
    out: list[str] = []

    def walk(r: Region) -> None:
        for op in r.ops:
            for o in op.operands:
                if _base(o) not in defined and o not in out:
                    out.append(o)
            for inner in op.regions:
                defined.update(a for a, _ in inner.args)
                walk(inner)
            defined.update(_base(x) for x in op.results)
        for v in r.returns:
            if _base(v) not in defined and v not in out:
                out.append(v)
    walk(region)
    return out


def hlo_text(module_text: str) -> str:
    """The HLO text XLA's conversion of ``module_text`` (StableHLO emitted
    by spec, with locations) prints with its short parsable options."""
    if "mhlo.sharding" in module_text:
        raise NotImplementedError("Lowered.as_text('hlo') of a program with GSPMD sharding "
                                  "annotations is not specified; as_text() gives its "
                                  "StableHLO")
    name, functions = parse_module(module_text)
    meshes = parse_meshes(module_text)
    canon = _Canonical()
    for f in functions:
        canon.region(f.body)
    conv = _Converter(functions)
    conv.types, conv.values = canon.types, canon.values
    main = next(f for f in functions if f.name == "main")
    conv.env = {}
    params = [(a, _sanitize(loc) if loc else f"Arg_{k}", t)
              for k, (a, t, loc) in enumerate(main.args)]
    conv.meshes = meshes
    conv.computation("main", params, main.body, {}, entry=True,
                     arg_shardings=main.arg_shardings, result_shardings=main.result_shardings)
    ins = ", ".join(t.text() for _, t, _ in main.args)
    root = conv.entry_root
    layout = f"{{({ins})->{root.shape}}}"
    header = f"HloModule {_sanitize(name)}, entry_computation_layout={layout}"
    used = [m for m in meshes if f"<@{m}," in module_text]
    if used:
        listed = ", ".join(f"{m} = #sdy.mesh<{meshes[m]}>" for m in used)
        header += f", frontend_attributes={{xla.sdy.meshes={{{listed}}}}}"
    return "\n\n".join([header, *conv.computations]) + "\n\n"
