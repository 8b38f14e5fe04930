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


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes."""
    out: list[str] = []
    cur: list[str] = []
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{<":
            depth += 1
        elif not quoted and ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
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
    depth, arrow = 0, -1
    for i, ch in enumerate(sig):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif depth == 0 and sig.startswith("->", i):
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
    depth, quoted, found = 0, False, -1
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{<":
            depth += 1
        elif not quoted and ch in ")]}>":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith(" : ", i):
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
        args = []
        for a in _split_top(fm.group(2)):
            ssa, _, rest = a.partition(":")
            rest, loc = _strip_loc(rest)
            args.append((ssa.strip(), tensor_type(re.sub(r"\s*\{.*\}$", "", rest.strip())), loc))
        body = _parse_block(lines, [(a, t) for a, t, _ in args])
        lines.next()  # the function's closing brace
        functions.append(Function(fm.group(1), args, body))
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
                    region: Region, env: dict[str, Instr], entry: bool = False) -> str:
        """Convert ``region`` into a computation whose parameters bind
        ``params`` (SSA name, instruction base name, type); returns its name."""
        instrs: list[Instr] = []
        env = dict(env)
        for k, (ssa, name, t) in enumerate(params):
            env[ssa] = self.emit(instrs, name, t, "parameter", [], "", param=k)
        self.ops(instrs, region.ops, env)
        outs = [env[v] for v in region.returns]
        if len(outs) == 1:
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
        if op.name == "custom_call":
            m = re.search(r"@([\w.$-]+)|call_target_name = \"([^\"]+)\"", b)
            target = (m.group(1) or m.group(2)) if m else ""
            return f', custom_call_target="{target}"'
        return ""

    # ops with regions or several results
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
    if "sdy." in module_text or "mhlo.sharding" in module_text:
        # XLA exports shardings as instruction attributes and custom calls
        # that the rules here do not write.
        raise NotImplementedError("Lowered.as_text('hlo') of a program with sharding "
                                  "annotations is not specified; as_text() gives its "
                                  "StableHLO")
    name, functions = parse_module(module_text)
    canon = _Canonical()
    for f in functions:
        canon.region(f.body)
    conv = _Converter(functions)
    conv.types, conv.values = canon.types, canon.values
    main = next(f for f in functions if f.name == "main")
    conv.env = {}
    params = [(a, _sanitize(loc) if loc else f"Arg_{k}", t)
              for k, (a, t, loc) in enumerate(main.args)]
    conv.computation("main", params, main.body, {}, entry=True)
    ins = ", ".join(t.text() for _, t, _ in main.args)
    root = conv.entry_root
    layout = f"{{({ins})->{root.shape}}}"
    header = f"HloModule {_sanitize(name)}, entry_computation_layout={layout}"
    return "\n\n".join([header, *conv.computations]) + "\n\n"
