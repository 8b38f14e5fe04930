"""The per-device program a compiled computation runs, as HLO-like text
(``Compiled.as_text()``, SPEC.md 4.1).

The text is found by running the program's per-device programs (SPEC.md
14.3) once, on zero-filled buffers laid out by the types, while a backend
that forwards every collective to the chosen one notes it: each collective
a device performs is a line (``all-reduce``, ``all-gather``,
``reduce-scatter``, ``all-to-all``, ``collective-permute``) with its
replica groups and the ``op_name`` of the equation that performs it
(``jit(step)/while/body/eval_jaxpr/dot_general``, named as the lowering
names its ops). Loops and conditionals are not run: their bodies are
computations of their own (``while``, ``conditional``), each walked once,
so a collective in a loop body is a line of that body. Calls are inlined
under their scope; a ``shard_map``'s body runs on its blocks. Other
equations are one line each, ``%name.N = f32[2,4] primitive(operands)``,
typed by the per-device (local) shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core import backend as _backend
from spec._src.core import ledger as _ledger
from spec._src.core.interpreter import GATHERED, Jaxpr, Literal
from spec._src.core.sharding import AbstractMesh, get_abstract_mesh
from spec._src.core.types import ArrayType
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.lax import shard_map as _shard_map
from spec._src.lax.scan import counts

# A value of the program: its SSA name and its per-device buffers.
Value = tuple[str, Dist]

_HLO_ELEMENT = {"bool": "pred", "float16": "f16", "bfloat16": "bf16", "float32": "f32",
                "float64": "f64", "complex64": "c64", "complex128": "c128"}
_OPCODES = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter",
            "all_gather": "all-gather", "all_to_all": "all-to-all",
            "ppermute": "collective-permute"}
# The scope a call's body is named under (as the lowering names it), and
# the param holding the body.
_CALLS: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "jit": (lambda p: f"jit({p['name']})", "jaxpr"),
    "closed_call": (lambda p: "", "call_jaxpr"),
    "custom_jvp_call": (lambda p: "", "call_jaxpr"),
    "composite": (lambda p: "", "call_jaxpr"),
    "custom_vjp_call": (lambda p: "", "call_jaxpr"),
    "eval_jaxpr": (lambda p: "eval_jaxpr", "call_jaxpr"),
    "remat2": (lambda p: "checkpoint", "jaxpr"),
    "xla_metadata_call": (lambda p: "", "jaxpr"),
}


def element_name(dtype: Any) -> str:
    """HLO's element type name (``f32``, ``s32``, ``u8``, ``pred``); a key's
    data is ``u32``."""
    name = str(getattr(dtype, "name", ""))
    if name.startswith("key<"):
        return "u32"
    name = str(np.dtype(dtype).name)
    if name in _HLO_ELEMENT:
        return _HLO_ELEMENT[name]
    if name.startswith("uint"):
        return "u" + name[4:]
    if name.startswith("int"):
        return "s" + name[3:]
    return name


def shape_text(dtype: Any, shape: Sequence[int]) -> str:
    return f"{element_name(dtype)}[{','.join(str(int(d)) for d in shape)}]"


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _root(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (a view's base, repeatedly)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


# ============================================================ watching


@dataclass
class _Collective:
    """One collective the devices performed: its kind, mesh axes, what it
    combines or moves (op, dimension or permutation) and one device's input
    and output buffers."""

    kind: str
    axes: tuple[Any, ...]
    detail: Any
    inp: np.ndarray
    out: np.ndarray


class _Watcher:
    """A backend forwarding to ``inner`` that notes each collective, with
    the kind the ledger recorded for it just before."""

    def __init__(self, inner: Any, log: _ledger.CollectivesLog) -> None:
        self.inner = inner
        self.name = inner.name
        self.log = log
        self.seen: list[_Collective] = []

    def _note(self, axes: Any, detail: Any, bufs: Any, out: Any, default: str) -> None:
        kind = self.log.entries[-1].kind if self.log.entries else default
        self.seen.append(_Collective(kind, tuple(axes), detail, S.first(bufs), S.first(out)))

    def devices(self) -> list[Any]:
        return list(self.inner.devices())

    def local_devices(self, process_index: int | None) -> list[Any]:
        return list(self.inner.local_devices(process_index))

    def process_index(self) -> int:
        return int(self.inner.process_index())

    def process_count(self) -> int:
        return int(self.inner.process_count())

    def check_mesh_devices(self, sizes: tuple[int, ...], count: int,
                           devices: Sequence[Any]) -> None:
        self.inner.check_mesh_devices(sizes, count, devices)

    def agree(self, what: str, value: Any, procs: Sequence[int]) -> None:
        self.inner.agree(what, value, procs)

    def all_reduce(self, bufs: Any, axes: Any, op: str, geo: Any) -> Any:
        out = self.inner.all_reduce(bufs, axes, op, geo)
        self._note(axes, op, bufs, out, "all_reduce")
        return out

    def all_gather(self, bufs: Any, axes: Any, dim: int, geo: Any) -> Any:
        out = self.inner.all_gather(bufs, axes, dim, geo)
        self._note(axes, dim, bufs, out, "all_gather")
        return out

    def ppermute(self, bufs: Any, axes: Any, perm: Sequence[tuple[int, int]], geo: Any) -> Any:
        out = self.inner.ppermute(bufs, axes, perm, geo)
        self._note(axes, tuple(perm), bufs, out, "ppermute")
        return out


def _watched(run: Callable[[], list[Dist]]) -> tuple[list[_Collective], list[Dist]]:
    """``run()``'s results and the collectives it performed (recorded in no
    log the caller has open)."""
    with _ledger.separate_log() as log, np.errstate(all="ignore"):
        watcher = _Watcher(_backend.current_backend(), log)
        with _backend.substituted(watcher):
            outs = run()
    return watcher.seen, outs


def _zeros(aval: ArrayType, geo: Geometry) -> Dist:
    """A value of type ``aval``: zeros, laid out by its sharding."""
    dtype = getattr(aval.dtype, "physical", None) or np.dtype(aval.dtype)
    value = np.zeros(aval.shape, dtype)
    if S.is_plain(aval):
        return S.uniform(value, aval, geo)
    return Dist(aval, S.split_value(value, aval, geo))


def _gathered(args: Sequence[Dist], out_avals: Sequence[ArrayType], geo: Geometry
              ) -> list[Dist]:
    """What the conservative program moves (every operand made a full
    replica), without running the primitive (a callback's, whose function
    must not run here)."""
    for a in args:
        if not S.is_plain(a.aval):
            S.reshard(a, a.aval.update(sharding=None), geo)
    return [_zeros(o, geo) for o in out_avals]


# ============================================================= writing


@dataclass
class _Writer:
    """The module being written: finished computations, the one being
    written, and counters for names and channels."""

    geo: Geometry
    computations: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    reducers: dict[tuple[str, str], str] = field(default_factory=dict)
    count: int = 0
    channels: int = 0
    # Buffers named so far, kept alive so that their ids stay theirs.
    _keep: list[Any] = field(default_factory=list)

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"%{re.sub(r'[^A-Za-z0-9_.-]', '_', base)}.{self.count}"

    def emit(self, base: str, type_text: str, body: str, op_name: str = "") -> str:
        name = self.fresh(base)
        meta = f', metadata={{op_name="{op_name}"}}' if op_name else ""
        self.lines.append(f"  {name} = {type_text} {body}{meta}")
        return name

    def local_type(self, d: Dist) -> str:
        return shape_text(d.aval.dtype, S.first(d.bufs).shape)

    # ---------------------------------------------------- computations

    def computation(self, base: str, params: Sequence[Dist],
                    body: Callable[[list[Value]], list[Value]]) -> str:
        """A computation of its own (a loop's body or condition, a branch):
        ``body`` writes its lines given its parameters; returns its name."""
        saved = self.lines
        self.lines = []
        try:
            args = [(self.emit("param", self.local_type(d), f"parameter({i})"), d)
                    for i, d in enumerate(params)]
            results = body(args)
            lines = self.lines
        finally:
            self.lines = saved
        name = self.fresh(base)
        self._root(lines, results)
        head = ", ".join(f"{n[1:]}: {self.local_type(d)}" for n, d in args)
        self.computations.append("\n".join(
            [f"{name} ({head}) -> {self._types(results)} {{", *lines, "}"]))
        return name

    def _types(self, values: Sequence[Value]) -> str:
        types = [self.local_type(d) for _, d in values]
        return types[0] if len(types) == 1 else f"({', '.join(types)})"

    def _root(self, lines: list[str], results: Sequence[Value]) -> None:
        """Mark the computation's result: its one value, or a tuple."""
        if len(results) != 1:
            name = self.fresh("tuple")
            args = ", ".join(n for n, _ in results)
            lines.append(f"  ROOT {name} = {self._types(results)} tuple({args})")
            return
        target = results[0][0]
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith(f"  {target} = "):
                lines[i] = "  ROOT " + lines[i][2:]
                return
        lines.append(f"  ROOT {self.fresh('copy')} = {self._types(results)} copy({target})")

    def tupled(self, base: str, values: Sequence[Value], body: str, op_name: str,
               avals: Sequence[Dist]) -> list[Value]:
        """An op of several results (``while``, ``conditional``): one tuple
        line, then a ``get-tuple-element`` per result."""
        types = [self.local_type(d) for d in avals]
        whole = self.emit(base, f"({', '.join(types)})", body, op_name)
        return [(self.emit("get-tuple-element", t, f"get-tuple-element({whole}), index={i}",
                           op_name), d) for i, (t, d) in enumerate(zip(types, avals))]

    # ----------------------------------------------------- collectives

    def groups(self, axes: Sequence[Any], geo: Geometry) -> str:
        rows = geo.groups(tuple(axes))
        return "{" + ",".join("{" + ",".join(str(int(k)) for k in row) + "}"
                              for row in rows) + "}"

    def reducer(self, op: str, dtype: Any) -> str:
        key = (op, element_name(dtype))
        if key not in self.reducers:
            t = f"{key[1]}[]"
            name = f"%{op}.{key[1]}"
            opcode = {"sum": "add", "prod": "multiply", "max": "maximum",
                      "min": "minimum"}.get(op, op)
            self.reducers[key] = name
            self.computations.insert(0, "\n".join([
                f"{name} (lhs: {t}, rhs: {t}) -> {t} {{",
                f"  %lhs = {t} parameter(0)", f"  %rhs = {t} parameter(1)",
                f"  ROOT %{opcode} = {t} {opcode}(%lhs, %rhs)", "}"]))
        return self.reducers[key]

    def collective(self, c: _Collective, operand: str, out_shape: Sequence[int],
                   geo: Geometry, op_name: str) -> str:
        self.channels += 1
        attrs = f"channel_id={self.channels}"
        if c.kind == "ppermute":
            pairs = [(int(row[s]), int(row[d])) for row in geo.groups(c.axes)
                     for s, d in c.detail]
            attrs += ", source_target_pairs={" + ",".join(f"{{{s},{d}}}" for s, d in pairs) + "}"
        else:
            attrs += f", replica_groups={self.groups(c.axes, geo)}"
        if c.kind in ("all_gather", "all_to_all"):
            attrs += f", dimensions={{{c.detail}}}"
        if c.kind != "ppermute":
            attrs += ", use_global_device_ids=true"
        if c.kind in ("all_reduce", "reduce_scatter"):
            attrs += f", to_apply={self.reducer(c.detail, c.inp.dtype)}"
        opcode = _OPCODES[c.kind]
        return self.emit(opcode, shape_text(c.inp.dtype, out_shape),
                         f"{opcode}({operand}), {attrs}", op_name)

    def collectives(self, seen: Sequence[_Collective], operands: list[Value],
                    outs: Sequence[Dist], op_name: str, geo: Geometry,
                    local_op: Callable[[list[str], list[Dist] | None], list[str]] | None
                    ) -> list[Value]:
        """Lines for an equation that performed the collectives ``seen`` and
        produced ``outs``: each collective takes the operand (or the output
        of the collective, or the local op) whose buffer it was given;
        ``local_op(operand_names, natural)`` writes the equation's own line
        where a collective's input or a result comes from it. Without
        ``local_op`` (pure data movement) a result is an operand's value
        where no collective made it."""
        by_root: dict[int, str] = {}
        for name, d in operands:
            by_root.setdefault(id(_root(S.first(d.bufs))), name)
            self._keep.append(d)
        made: dict[int, str] = {}
        # The block each buffer is used as next (a collective that scatters
        # hands on a slice of what the backend returned).
        used_as = {id(_root(c.inp)): c.inp.shape for c in seen}
        used_as.update({id(_root(S.first(d.bufs))): S.first(d.bufs).shape for d in outs})
        names = [n for n, _ in operands]
        local: list[str] | None = None
        for c in seen:
            key = id(_root(c.inp))
            src = made.get(key) or by_root.get(key)
            if src is None:
                if local is None and local_op is not None:
                    local = local_op(names, [Dist(outs[0].aval, (c.inp,))] if len(outs) == 1
                                     else None)
                src = local[0] if local else names[0]
            out_key = id(_root(c.out))
            shape = c.out.shape if c.kind not in ("reduce_scatter", "all_to_all") \
                else used_as.get(out_key, c.out.shape)
            made[out_key] = self.collective(c, src, shape, geo, op_name)
            self._keep.append(c)
            names = [made[out_key] if n == src else n for n in names]
        results = []
        for i, d in enumerate(outs):
            key = id(_root(S.first(d.bufs)))
            if key in made:
                results.append((made[key], d))
                continue
            if local_op is None:
                results.append((by_root.get(key, names[min(i, len(names) - 1)]), d))
                continue
            if local is None:
                local = local_op(names, None)
            results.append((local[i], d))
        return results


@dataclass
class _Walker:
    """Writes a jaxpr's per-device program, equation by equation."""

    w: _Writer

    def walk(self, jaxpr: Jaxpr, args: Sequence[Value], geo: Geometry, scope: str
             ) -> list[Value]:
        env: dict[Any, Value] = {}
        for v, c in zip(jaxpr.constvars, jaxpr.consts):
            d = c if isinstance(c, Dist) else S.from_value(c, geo)
            env[v] = (self.w.emit("constant", self.w.local_type(d), "constant({...})"), d)
        env.update(zip(jaxpr.invars, args))

        def read(atom: Any) -> Value:
            if isinstance(atom, Literal):
                value = np.asarray(atom.val, dtype=atom.aval.dtype)
                d = S.uniform(value, atom.aval, geo)
                text = f"constant({value.item()!r})" if value.ndim == 0 else "constant({...})"
                return self.w.emit("constant", self.w.local_type(d), text), d
            return env[atom]

        for eqn, live in zip(jaxpr.eqns, S.live_equations(jaxpr)):
            if not live:
                continue
            stack = _join(scope, str(getattr(eqn.source_info, "name_stack", "")))
            ins = [read(a) for a in eqn.invars]
            outs = self.equation(eqn, ins, geo, stack)
            env.update(zip(eqn.outvars, outs))
        return [read(v) for v in jaxpr.outvars]

    def equation(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str) -> list[Value]:
        name = eqn.primitive.name
        out_avals = [v.aval for v in eqn.outvars]
        if name in _CALLS:
            scope_of, key = _CALLS[name]
            body = eqn.params[key]
            outs = self.walk(body, ins, geo, _join(stack, scope_of(eqn.params)))
            return [(n, Dist(a, d.bufs)) for (n, d), a in zip(outs, out_avals)]
        if name == "while" and not eqn.params["cond_jaxpr"].out_avals[0].ndim:
            return self.while_loop(eqn, ins, geo, stack)
        if name == "scan":
            nc, nk, _, _ = counts(eqn.params["ft_in"], eqn.params["ft_out"])
            if not any(S.parts_of(d.aval)[0] for _, d in ins[nc + nk:]):
                return self.scan(eqn, ins, geo, stack, nc, nk)
        if name == "cond":
            return self.cond(eqn, ins, geo, stack)
        if name == "shard_map":
            return self.shard_map(eqn, ins, geo, stack)
        return self.opaque(eqn, ins, geo, stack)

    # ------------------------------------------------------------ plain

    def opaque(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str) -> list[Value]:
        prim = eqn.primitive
        op_name = _join(stack, prim.name)
        args = [d for _, d in ins]
        out_avals = [v.aval for v in eqn.outvars]
        if eqn.effects or prim.per_device is GATHERED:
            seen, outs = _watched(lambda: _gathered(args, out_avals, geo))
        else:
            try:
                seen, outs = _watched(lambda: S.apply(prim, args, eqn.params, out_avals, geo))
            except Exception:  # a program that refuses zeros moves what the gathered one does
                seen, outs = _watched(lambda: _gathered(args, out_avals, geo))

        def local_op(names: list[str], natural: list[Dist] | None) -> list[str]:
            shown = natural if natural is not None else outs
            body = f"{prim.name}({', '.join(names)})"
            if len(shown) == 1:
                return [self.w.emit(prim.name, self.w.local_type(shown[0]), body, op_name)]
            return [n for n, _ in self.w.tupled(prim.name, [], body, op_name, shown)]
        moves = not seen or prim.name not in ("reshard", "sharding_constraint")
        return self.w.collectives(seen, ins, outs, op_name, geo, local_op if moves else None)

    def moved(self, value: Value, run: Callable[[], Dist], geo: Geometry, op_name: str
              ) -> Value:
        """A value moved to another layout (at a shard_map's boundary)."""
        seen, outs = _watched(lambda: [run()])
        return self.w.collectives(seen, [value], outs, op_name, geo, None)[0]

    # ----------------------------------------------------- control flow

    def while_loop(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str
                   ) -> list[Value]:
        p = eqn.params
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
        state = [d for _, d in ins]

        def cond(args: list[Value]) -> list[Value]:
            return self.walk(cond_jaxpr, [*args[:nc], *args[nc + nb:]], geo,
                             _join(stack, "while/cond"))

        def body(args: list[Value]) -> list[Value]:
            outs = self.walk(body_jaxpr, args[nc:], geo, _join(stack, "while/body"))
            return [*args[:nc + nb], *outs]
        c = self.w.computation("while_cond", state, cond)
        b = self.w.computation("while_body", state, body)
        loop = self.loop(ins, c, b, _join(stack, "while"))
        out_avals = [v.aval for v in eqn.outvars]
        return [(n, Dist(a, d.bufs)) for (n, d), a in zip(loop[nc + nb:], out_avals)]

    def loop(self, state: Sequence[Value], cond: str, body: str, op_name: str
             ) -> list[Value]:
        dists = [d for _, d in state]
        types = ", ".join(self.w.local_type(d) for d in dists)
        init = self.w.emit("tuple", f"({types})", f"tuple({', '.join(n for n, _ in state)})",
                           op_name)
        return self.w.tupled("while", state, f"while({init}), condition={cond}, body={body}",
                             op_name, dists)

    def scan(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str, nc: int, nk: int
             ) -> list[Value]:
        """The ``while`` loop of scan's implementation: a counter, the
        constants, the carry, the scanned operands and the stacked results;
        the body reads row i of each operand and writes row i of each
        result."""
        p = eqn.params
        jaxpr, length = p["jaxpr"], p["length"]
        out_avals = [v.aval for v in eqn.outvars]
        i32 = ArrayType((), np.dtype(np.int32))
        counter = (self.w.emit("constant", "s32[]", "constant(0)", _join(stack, "scan")),
                   S.uniform(np.zeros((), np.int32), i32, geo))
        ys = [self.stacked(a, geo, stack) for a in out_avals[nk:]]
        state = [counter, *ins, *ys]
        n_x = len(ins) - nc - nk
        x_avals = jaxpr.in_avals[nc + nk:]
        read_row = _join(stack, "while/body/jit(dynamic_index_in_dim)/dynamic_slice")
        write_row = _join(stack, "while/body/jit(dynamic_update_index_in_dim)/"
                                 "dynamic_update_slice")

        def cond(args: list[Value]) -> list[Value]:
            bound = self.w.emit("constant", "s32[]", f"constant({length})")
            pred = S.uniform(np.asarray(True), ArrayType((), np.dtype(np.bool_)), geo)
            return [(self.w.emit("compare", "pred[]",
                                 f"compare({args[0][0]}, {bound}), direction=LT",
                                 _join(stack, "while/cond/lt")), pred)]

        def body(args: list[Value]) -> list[Value]:
            i, consts, carry = args[0], args[1:1 + nc], args[1 + nc:1 + nc + nk]
            xs, ys_in = args[1 + nc + nk:1 + nc + nk + n_x], args[1 + nc + nk + n_x:]
            rows = []
            for (x, _), a in zip(xs, x_avals):
                d = _zeros(a, geo)
                rows.append((self.w.emit("dynamic-slice", self.w.local_type(d),
                                         f"dynamic-slice({x}, {i[0]})", read_row), d))
            outs = self.walk(jaxpr, [*consts, *carry, *rows], geo,
                             _join(stack, "while/body/eval_jaxpr"))
            new_ys = [(self.w.emit("dynamic-update-slice", self.w.local_type(d),
                                   f"dynamic-update-slice({y}, {row}, {i[0]})", write_row), d)
                      for (y, d), (row, _) in zip(ys_in, outs[nk:])]
            one = self.w.emit("constant", "s32[]", "constant(1)")
            step = self.w.emit("add", "s32[]", f"add({i[0]}, {one})",
                               _join(stack, "while/body/add"))
            return [(step, i[1]), *consts, *outs[:nk], *xs, *new_ys]
        dists = [d for _, d in state]
        c = self.w.computation("scan_cond", dists, cond)
        b = self.w.computation("scan_body", dists, body)
        loop = self.loop(state, c, b, _join(stack, "while"))
        results = [*loop[1 + nc:1 + nc + nk], *loop[1 + nc + nk + n_x:]]
        return [(n, Dist(a, d.bufs)) for (n, d), a in zip(results, out_avals)]

    def stacked(self, aval: ArrayType, geo: Geometry, stack: str) -> Value:
        """A scan's zero-filled stacked result, before the loop writes it."""
        d = _zeros(aval, geo)
        zero = self.w.emit("constant", shape_text(aval.dtype, ()), "constant(0)",
                           _join(stack, "empty2"))
        return self.w.emit("broadcast", self.w.local_type(d), f"broadcast({zero})",
                           _join(stack, "broadcast_in_dim")), d

    def cond(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str) -> list[Value]:
        branches = eqn.params["branches"]
        ops = [d for _, d in ins[1:]]
        names = []
        for k, branch in enumerate(branches):
            def body(args: list[Value], k: int = k, branch: Any = branch) -> list[Value]:
                return self.walk(branch, args, geo, _join(stack, f"cond/branch_{k}_fun"))
            names.append(self.w.computation(f"branch_{k}", ops, body))
        outs = [_zeros(v.aval, geo) for v in eqn.outvars]
        operands = ", ".join(n for n, _ in ins)
        text = f"conditional({operands}), branch_computations={{{', '.join(names)}}}"
        return self.w.tupled("conditional", ins, text, _join(stack, "cond"), outs)

    def shard_map(self, eqn: Any, ins: list[Value], geo: Geometry, stack: str
                  ) -> list[Value]:
        """Each operand laid out by its in_spec, the body on the blocks, each
        result put together by its out_spec (the collectives at the
        boundaries are the map's, those in the body its equations')."""
        p = eqn.params
        mesh = p["mesh"] if isinstance(p["mesh"], AbstractMesh) else p["mesh"].abstract_mesh
        g = S.geometry(mesh, geo.procs)
        jaxpr = p["jaxpr"]
        here = _join(stack, "shard_map")
        def enter(v: Value, spec: Any, inner: ArrayType) -> Value:
            return self.moved(v, lambda: _shard_map.enter_block(v[1], spec, inner, mesh, g),
                              g, here)

        def leave(o: Value, aval: ArrayType, spec: Any) -> Value:
            return self.moved(o, lambda: _shard_map.leave_block(o[1], aval, spec, mesh, g),
                              g, here)
        blocks = [enter(v, spec, inner)
                  for v, spec, inner in zip(ins, p["in_specs"], jaxpr.in_avals)]
        outs = self.walk(jaxpr, blocks, g, here)
        return [leave(o, v.aval, spec) for o, v, spec in zip(outs, eqn.outvars, p["out_specs"])]


# =============================================================== module


def program_mesh(jaxpr: Jaxpr) -> Any:
    """The mesh the program's values are laid out on (the context's when no
    type names one)."""
    for a in [*jaxpr.in_avals, *jaxpr.out_avals]:
        s = getattr(a, "sharding", None)
        if s is not None and not s.mesh.empty:
            return s.mesh
    return get_abstract_mesh()


def compiled_text(jaxpr: Jaxpr, name: str, arg_names: Sequence[str]) -> str:
    """The HLO-like text of the per-device program of a closed jaxpr staged
    as ``jit(name)``: an ``HloModule`` whose ENTRY takes each argument's
    per-device block (named by ``arg_names``)."""
    mesh = program_mesh(jaxpr)
    geo = S.geometry(mesh)
    writer = _Writer(geo)
    walker = _Walker(writer)
    params = [_zeros(a, geo) for a in jaxpr.in_avals]

    def entry(args: list[Value]) -> list[Value]:
        return walker.walk(jaxpr, args, geo, f"jit({name})")
    writer.computation("main", params, entry)
    body = writer.computations.pop()
    for k, arg in enumerate(arg_names):
        body = body.replace(f"parameter({k})", f'parameter({k}), metadata={{op_name="{arg}"}}',
                            1)
    ins = ", ".join(writer.local_type(d) for d in params)
    outs = [shape_text(a.dtype, S.local_shape(a, geo)) for a in jaxpr.out_avals]
    out_text = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
    symbol = re.sub(r"[^\w.-]", "_", name.replace("<", "_").replace(">", ""))
    header = (f"HloModule jit_{symbol}, entry_computation_layout={{({ins})->{out_text}}}, "
              f"num_partitions={geo.n}")
    return "\n\n".join([header, *writer.computations, "ENTRY " + body]) + "\n"


__all__ = ["compiled_text", "element_name", "program_mesh", "shape_text"]
