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

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.core.state_types import RefType, Slice, unflatten_transforms
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import GATHERED, Primitive
from spec._src.core.registry import REGISTRY
from spec._src.core.sharding import NamedSharding, P, entry_of
from spec._src.core.types import ArrayType

Program = Callable[..., list[Dist]]


def laid_out(aval: ArrayType, parts: Sequence[tuple[str, ...]], unreduced: frozenset[str],
              *like: ArrayType) -> ArrayType:
    """``aval`` with the given layout, on the abstract mesh of the first of
    ``like`` that has one (the context's otherwise)."""
    mesh = next((a.sharding.mesh for a in like if a.sharding is not None
                 and not a.sharding.mesh.empty), None)
    if mesh is None:
        from spec._src.core.sharding import get_abstract_mesh
        mesh = get_abstract_mesh()
    entries = [entry_of(p) for p in parts]
    reduced = frozenset() if aval.sharding is None else aval.sharding.spec.reduced
    return aval.update(sharding=NamedSharding(mesh, P(*entries, unreduced=unreduced,
                                                      reduced=reduced)))


def has_duplicates(parts: Sequence[tuple[str, ...]], extra: frozenset[str] = frozenset()
                    ) -> bool:
    names = [a for p in parts for a in p]
    return len(names) != len(set(names)) or bool(set(names) & extra)


# ================================================================ builders


def local(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        return S.run_local(prim, geo, args, out_avals, params)
    return program


def aligned(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        out = out_avals[0]
        out_parts = S.parts_of(out)
        cut = []
        for a in args:
            if a.aval.ndim == len(out_parts) and a.aval.ndim:
                # Size-1 dims broadcast against the result's: they stay whole.
                want = tuple(p if n == m else () for p, n, m in
                             zip(out_parts, a.aval.shape, out.shape))
                if S.parts_of(a.aval) != want:
                    target = laid_out(a.aval, want, S.unreduced_of(a.aval), out)
                    a = S.reshard(a, target, geo)
            cut.append(a)
        return S.run_local(prim, geo, cut, out_avals, params)
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
            outs = S.eval_jaxpr(jaxpr, jaxpr.consts, args, geo)
            return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
        return program
    return make


# ------------------------------------------------------------------- refs
#
# The ref primitives' programs live with their declarations
# (spec._src.lax.state); calls check their bodies' ref equations first.
#
# JAX compiles a ref program by turning each ref operation into array
# operations on the ref's value ("discharging" it): a read through static
# slices becomes ``slice``, one through unstrided slices and integer scalars
# ``dynamic_slice``, a write ``dynamic_update_slice``, anything else (strided
# writes, integer arrays) ``gather``/``scatter`` through ``jnp`` indexing. The
# sharding rules of those operations then refuse some layouts that typing
# accepted; spec raises the same errors when the operation runs (R1-R3).


def lowering_check(prim: str, ref: ArrayType, val: ArrayType | None,
                   idx: Sequence[ArrayType], tree: Any) -> None:
    transforms = unflatten_transforms(tree, idx)
    if not transforms:
        return  # R1: a whole write moves any value to the ref's layout
    (t,) = transforms
    ints = [e for e in t.indices if not isinstance(e, Slice)]
    strided = any(isinstance(e, Slice) and e.stride > 1 for e in t.indices)
    if prim == "get":
        if not ints and not any(e.is_dynamic_start for e in t.indices):
            return  # slice
        if not strided and not any(e.shape for e in ints):
            return  # dynamic_slice
        if any(_split(e) for e in ints):
            raise _gather_error(prim, ref, t, ints)
        return
    assert val is not None
    if not strided and not any(e.shape for e in ints):
        if prim == "swap":
            _check_update(ref, val, t)  # R2
        return
    # R3: gather (swap's read of the old value) and scatter.
    if prim == "swap" and (_split(ref) or any(_split(e) for e in ints)):
        raise _gather_error(prim, ref, t, ints)
    if _split(val):
        val = val.strip_weak_type()  # (JAX's message shows the value as the ref's dtype)
        plain = val.update(sharding=None)
        raise ValueError(f"Incompatible types for broadcasting: input type={val} and requested "
                         f"type={plain} ({prim} R3)")
    if _split(ref) or any(_split(e) for e in ints):
        operand, indices = _gather_types(ref, t, ints)
        updates = val.update(sharding=_sharding_of(indices, S.parts_of(indices)[:-1]))
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
            "the scatter update as out sharding could not be resolved unambiguously (or would "
            f"require collectives on inputs). Got operand={operand!r}, indices={indices!r}, "
            f"updates={updates!r} ({prim} R3)")


_CHECKED: dict[int, Any] = {}


def check_ref_equations(jaxpr: Any) -> None:
    """``lowering_check`` on every ref equation of a program (its sub-programs
    included) before any runs: as in JAX, whose compiler refuses the
    program before it writes anything."""
    if _CHECKED.get(id(jaxpr)) is jaxpr:
        return
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "get":
            ref, *idx = eqn.invars
            lowering_check(name, ref.aval, None, [a.aval for a in idx], eqn.params["tree"])
        elif name in ("swap", "addupdate"):
            ref, val, *idx = eqn.invars
            lowering_check(name, ref.aval, val.aval, [a.aval for a in idx],
                           eqn.params["tree"])
        for p in eqn.params.values():
            for sub in p if isinstance(p, (tuple, list)) else (p,):
                if hasattr(sub, "eqns") and hasattr(sub, "invars"):
                    check_ref_equations(sub)
    if len(_CHECKED) > 4096:
        _CHECKED.clear()
    _CHECKED[id(jaxpr)] = jaxpr


def _split(a: ArrayType) -> bool:
    return any(S.parts_of(a))


def _sharding_of(like: ArrayType, parts: Sequence[tuple[str, ...]]) -> Any:
    from spec._src.lax.sharding_kit import mesh_of
    return NamedSharding(mesh_of([like]), P(*(entry_of(p) for p in parts)))


def _check_update(ref: ArrayType, val: ArrayType, t: Any) -> None:
    """R2: a write through ``dynamic_update_slice`` needs the value (with
    the integer-indexed dims put back as size 1) split as the ref."""
    from spec._src.lax.sharding_kit import mesh_of
    from spec._src.lax.indexing import _with_axis_types
    from spec._src.lax.state import _normalized
    assert isinstance(ref, RefType)
    vparts = iter(S.parts_of(val))
    parts = [next(vparts) if isinstance(e, Slice) else () for e in t.indices]
    shape = tuple(e.size if isinstance(e, Slice) else 1 for e in t.indices)
    mesh = mesh_of([ref, val])
    have = NamedSharding(mesh, P(*(entry_of(p) for p in parts), unreduced=S.unreduced_of(val)))
    operand = ref.inner_aval
    want = operand.sharding or NamedSharding(mesh, P())
    if _normalized(want, ref.ndim) == _normalized(have, ref.ndim):
        return
    update = ArrayType(shape, val.dtype, sharding=have)
    if operand.sharding is None:
        operand = operand.update(sharding=NamedSharding(mesh, P(*(None,) * ref.ndim)))
    raise ShardingTypeError(
        "dynamic_update_slice operand sharding must be equal to update sharding, got operand "
        f"sharding {_with_axis_types(operand)} and update sharding {_with_axis_types(update)}. "
        "(swap R2)")


def _gather_types(ref: ArrayType, t: Any, ints: list[ArrayType]
                  ) -> tuple[ArrayType, ArrayType]:
    """The operand and indices of the gather JAX reads ``ref[t]`` with: the
    ref's value (integer-indexed dims first when they are not adjacent) and
    the stacked index arrays, split where the integer indexers are."""

    assert isinstance(ref, RefType)
    is_int = [not isinstance(e, Slice) for e in t.indices]
    at = [k for k, b in enumerate(is_int) if b]
    contiguous = at == list(range(at[0], at[0] + len(at))) if at else True
    operand = ref.inner_aval
    if not contiguous:
        order = at + [k for k, b in enumerate(is_int) if not b]
        ops = S.parts_of(operand)
        operand = operand.update(shape=tuple(operand.shape[k] for k in order),
                                 sharding=_sharding_of(operand, [ops[k] for k in order]))
    total = t.result_shape()
    start = sum(1 for k in range(at[0]) if not is_int[k]) if at and contiguous else 0
    parts: list[tuple[str, ...]] = [()] * (len(total) + 1)
    for e in ints:
        for d, p in enumerate(S.parts_of(e)):
            parts[start + d] = parts[start + d] or p
    dtype = functools.reduce(np.promote_types, [e.dtype for e in ints], np.dtype(np.int32))
    like = next((e for e in ints if e.sharding is not None), ref)
    indices = ArrayType((*total, ref.ndim), dtype, sharding=_sharding_of(like, parts))
    return operand, indices


def _gather_error(prim: str, ref: ArrayType, t: Any, ints: list[ArrayType]
                  ) -> ShardingTypeError:
    operand, indices = _gather_types(ref, t, ints)
    return ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={operand!r}, indices={indices!r} ({prim} R3)")


__all__ = ["aligned", "call_program", "cut", "gathered_names", "guarded", "laid_out", "local",
           "localized", "shape_fix", "sharded_dims", "then_reshard"]


def gathered_names() -> list[str]:
    """Primitives that run the conservative gathered program (their
    declaration keeps the ``GATHERED`` default)."""
    return sorted(p.name for p in REGISTRY.values() if p.per_device is GATHERED)
