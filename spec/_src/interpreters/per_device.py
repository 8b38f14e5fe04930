"""The kit per-device programs are built from (the execution half of each
sharding section; SPEC.md section 14.3).

``prim.per_device(geo, args, out_avals, **params) -> [Dist]``, a field of
each primitive's declaration, runs the primitive on a mesh: ``args`` are
Dists (one buffer per device), the result Dists have the types the typing
and sharding sections gave. A family's declarations build their programs
from these blocks (``per_device=from_primitive(aligned)``), from cheapest to
most general:

- ``local``: the impl on each device's buffers as they are (the primitive
  acts along unsharded dimensions only, and its params name no sizes of
  sharded dimensions);
- ``aligned``: operands of the result's rank are first cut to the result's
  layout (an operand replicated where the result is split keeps its block:
  free), then ``local`` (elementwise families);
- ``localized``: ``local`` with the params' global sizes replaced by local
  ones (broadcast_in_dim, reshape, slice, dynamic_slice, ...);
- programs with collectives: reductions and dot_general compute locally a
  *natural* result, unreduced over the mesh axes that split the reduced or
  contracted dimensions, then ``reshard`` it to the result type (an
  all-reduce, a reduce-scatter, or nothing when the result stays unreduced);
- sub-jaxpr primitives evaluate their jaxprs per device.

A program whose precondition does not hold for a particular call falls back
to ``gathered`` (full replicas, recorded in the ledger): always correct,
never cheaper than what XLA would do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.core.interpreter import GATHERED, Primitive
from spec._src.core.registry import REGISTRY
from spec._src.core.sharding import NamedSharding, P, entry_of, get_abstract_mesh
from spec._src.core.types import ArrayType

Program = Callable[..., list[Dist]]


def laid_out(aval: ArrayType, parts: Sequence[tuple[str, ...]], unreduced: frozenset[str],
              *like: ArrayType) -> ArrayType:
    """``aval`` with the given layout, on the abstract mesh of the first of
    ``like`` that has one (the context's otherwise)."""
    mesh = next((a.sharding.mesh for a in like if a.sharding is not None
                 and not a.sharding.mesh.empty), None)
    if mesh is None:
        mesh = get_abstract_mesh()
    key = (aval, tuple(parts), unreduced, mesh)
    made = _LAID_OUT.get(key)
    if made is None:
        entries = [entry_of(p) for p in parts]
        reduced = frozenset() if aval.sharding is None else aval.sharding.spec.reduced
        made = aval.update(sharding=NamedSharding(mesh, P(*entries, unreduced=unreduced,
                                                          reduced=reduced)))
        if len(_LAID_OUT) >= _LAID_OUT_LIMIT:
            _LAID_OUT.clear()
        _LAID_OUT[key] = made
    return made


# The layouts made by ``laid_out``: a program run in a loop (a reduction in a
# scan body on a mesh) asks for the same few types at every step.
_LAID_OUT: dict[tuple[Any, ...], ArrayType] = {}
_LAID_OUT_LIMIT = 4096


def has_duplicates(parts: Sequence[tuple[str, ...]], extra: frozenset[str] = frozenset()
                    ) -> bool:
    names = [a for p in parts for a in p]
    return len(names) != len(set(names)) or bool(set(names) & extra)


# ================================================================ builders


# The attribute naming a program built by ``local`` or ``aligned`` (its
# value the builder's name): generated code runs such an equation's impl on
# each device's buffers itself where the operands need no cutting. A
# program marked "alias" gives its operand's buffers as they are (a free
# cast such as ``pvary``): generated code reuses them.
LAYOUT_ATTR = "spec_layout"


def local(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        return S.run_local(prim, geo, args, out_avals, params)
    setattr(program, LAYOUT_ATTR, "local")
    return program


def aligned_cuts(args: Sequence[ArrayType], out: ArrayType
                 ) -> list[tuple[tuple[str, ...], ...] | None]:
    """Per operand, the layout ``aligned`` cuts it to (None: it is used as
    it is)."""
    out_parts = S.parts_of(out)
    cuts: list[tuple[tuple[str, ...], ...] | None] = []
    for a in args:
        want = None
        if a.ndim == len(out_parts) and a.ndim:
            # Size-1 dims broadcast against the result's: they stay whole.
            want = tuple(p if n == m else () for p, n, m in zip(out_parts, a.shape, out.shape))
            if S.parts_of(a) == want:
                want = None
        cuts.append(want)
    return cuts


def aligned(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        out = out_avals[0]
        cut = []
        for a, want in zip(args, aligned_cuts([a.aval for a in args], out)):
            if want is not None:
                target = laid_out(a.aval, want, S.unreduced_of(a.aval), out)
                a = S.reshard(a, target, geo)
            cut.append(a)
        return S.run_local(prim, geo, cut, out_avals, params)
    setattr(program, LAYOUT_ATTR, "aligned")
    return program


def guarded(prim: Primitive, ok: Callable[..., bool], program: Program) -> Program:
    """``program`` where ``ok(args, out_avals, **params)`` holds, else gathered."""
    fallback = S.gathered(prim)

    def run(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
            **params: Any) -> list[Dist]:
        chosen = program if ok(args, out_avals, **params) else fallback
        return chosen(geo, args, out_avals, **params)
    return run


def localized(prim: Primitive, fix: Callable[..., dict[str, Any]]) -> Program:
    """The impl per device with ``fix(args, out_avals, local_out_shapes,
    **params)`` replacing the params."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        shapes = [S.local_shape(o, geo) for o in out_avals]
        return S.run_local(prim, geo, args, out_avals, fix(args, out_avals, shapes, **params))
    return program


class Reduction:
    """A reduction's program: the impl on each device's block to the
    *natural* result (the kept dimensions split as in the operand, unreduced
    over the mesh axes that split the reduced ones), then ``reshard`` to the
    result type with the reduction's monoid ``op`` (the all-reduce). ``op``
    "none" (argmax/argmin: no monoid to finish with) gathers where a reduced
    dimension is split. Generated per-device code reads ``natural`` and
    ``op`` to write the same steps inline."""

    def __init__(self, prim: Primitive, op: str) -> None:
        self.prim, self.op = prim, op
        self.fallback = S.gathered(prim)

    def natural(self, x: ArrayType, out: ArrayType, axes: Sequence[int]) -> ArrayType | None:
        """The local result's type (None: the gathered program runs)."""
        reduced = {int(a) for a in axes}
        xp = S.parts_of(x)
        split = frozenset(a for d in reduced for a in xp[d])
        if split and self.op == "none":
            return None
        kept = [p for d, p in enumerate(xp) if d not in reduced]
        return laid_out(out, kept, S.unreduced_of(x) | split, out, x)

    def __call__(self, geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                 **params: Any) -> list[Dist]:
        (x,), (out,) = args, out_avals
        nat = self.natural(x.aval, out, params["axes"])
        if nat is None:
            return self.fallback(geo, args, out_avals, **params)
        (partial,) = S.run_local(self.prim, geo, [x], [nat], params)
        return [S.reshard(partial, out, geo, self.op)]


def then_reshard(prim: Primitive, natural: Callable[..., list[ArrayType] | None],
                 inner: Callable[[Primitive], Program]) -> Program:
    """Run ``inner`` to the natural result types, then move to the result's."""
    fallback = S.gathered(prim)
    run_inner = inner(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        nat = natural(args, out_avals, **params)
        if nat is None:
            return fallback(geo, args, out_avals, **params)
        outs = run_inner(geo, args, nat, **params)
        return [S.reshard(o, a, geo) for o, a in zip(outs, out_avals)]
    return program


# ================================================================ helpers


def sharded_dims(aval: ArrayType) -> set[int]:
    return {i for i, p in enumerate(S.parts_of(aval)) if p}


def shape_fix(key: str) -> Callable[..., dict[str, Any]]:
    def fix(args: list[Dist], out_avals: list[ArrayType], shapes: list[Any], **params: Any
            ) -> dict[str, Any]:
        return {**params, key: tuple(shapes[0])}
    return fix


def cut(d: Dist, parts: list[tuple[str, ...]], geo: Geometry, *like: ArrayType) -> Dist:
    if list(S.parts_of(d.aval)) == parts:
        return d
    return S.reshard(d, laid_out(d.aval, parts, S.unreduced_of(d.aval), d.aval, *like), geo)


# ---------------------------------------------------- sub-jaxpr primitives


def call_program(key: str) -> Callable[[Primitive], Program]:
    """A call's program: its jaxpr (the param ``key``) evaluated per device,
    after its ref equations are checked as JAX's compiler checks them."""
    def make(prim: Primitive) -> Program:
        def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                    **params: Any) -> list[Dist]:
            jaxpr = params[key]
            check_ref_equations(jaxpr)
            outs = S.run_jaxpr(jaxpr, jaxpr.consts, args, geo)
            return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
        return program
    return make


# ------------------------------------------------------------------- refs
#
# The ref primitives' programs live with their declarations
# (spec._src.lax.state); calls check their bodies' ref equations first, as
# JAX's compiler refuses a program before it writes anything.

# How an equation of a ref primitive is checked before its program runs
# (``check(in_avals, params)`` raises what JAX's compiler raises for it), by
# primitive name. The module declaring the ref primitives
# (spec._src.lax.state) fills it when imported (importing spec does), so that
# this layer checks refs without importing lax.
RefEquationCheck = Callable[[Sequence[ArrayType], dict[str, Any]], None]
REF_EQUATION_CHECKS: dict[str, RefEquationCheck] = {}

_CHECKED: dict[int, Any] = {}


def check_ref_equations(jaxpr: Any) -> None:
    """``REF_EQUATION_CHECKS`` on every ref equation of a program (its
    sub-programs included) before any runs."""
    if _CHECKED.get(id(jaxpr)) is jaxpr:
        return
    for eqn in jaxpr.eqns:
        check = REF_EQUATION_CHECKS.get(eqn.primitive.name)
        if check is not None:
            check([a.aval for a in eqn.invars], eqn.params)
        for p in eqn.params.values():
            for sub in p if isinstance(p, (tuple, list)) else (p,):
                if hasattr(sub, "eqns") and hasattr(sub, "invars"):
                    check_ref_equations(sub)
    if len(_CHECKED) > 4096:
        _CHECKED.clear()
    _CHECKED[id(jaxpr)] = jaxpr


__all__ = ["LAYOUT_ATTR", "REF_EQUATION_CHECKS", "RefEquationCheck", "Reduction", "aligned",
           "aligned_cuts", "call_program",
           "check_ref_equations", "cut", "gathered_names", "guarded", "laid_out", "local",
           "localized", "shape_fix", "sharded_dims", "then_reshard"]


def gathered_names() -> list[str]:
    """Primitives that run the conservative gathered program (their
    declaration keeps the ``GATHERED`` default)."""
    return sorted(p.name for p in REGISTRY.values() if p.per_device is GATHERED)
