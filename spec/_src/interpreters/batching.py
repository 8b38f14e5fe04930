"""Batching (vmap): the batch trace, what batching rules are written with,
and the batching of jaxprs.

A batching rule has the signature ``batch(axis, args, dims, **params) ->
(outs, out_dims)``: ``axis`` is the ``AxisData`` of the vmapped axis (its
size and name), ``args`` the operands with the batch axis inside them, and
``dims[i]`` the position of operand i's batch axis, or ``not_mapped`` (None)
for an operand without one. The rule binds primitives under the enclosing
trace and returns the outputs (a list) with their batch axes (``not_mapped``
for outputs that do not vary along the batch). The rule is only called when
at least one operand is mapped, unless it is a ``batch_unmapped`` rule (the
ref primitives); it may move batch axes but never loops over the batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core.interpreter import (
    Jaxpr,
    NotApplicable,
    Pending,
    Primitive,
    Trace,
    Tracer,
    canonical_aval_of,
    check_tracer_alive,
    current_trace,
    eval_jaxpr,
    set_current_trace,
    trace_to_jaxpr,
)
from spec._src.core import source_info as si
from spec._src.core.hitypes import MappingSpec, is_high
from spec._src.core.registry import primitive
from spec._src.core.sharding import NamedSharding, P, extend_axis_env, get_abstract_mesh
from spec._src.core.types import ArrayType

not_mapped = None
BatchDim = int | None


class _ZeroIfMapped:
    """An ``out_dims_wanted`` entry of ``batch_jaxpr``: the output's batch
    axis at 0 when it has one, left unmapped otherwise."""

    def __repr__(self) -> str:
        return "zero_if_mapped"


zero_if_mapped = _ZeroIfMapped()


@dataclass(frozen=True)
class AxisData:
    """The vmapped axis: its size, its name (for collectives), the mesh axes
    named by ``spmd_axis_name`` (a tuple, or None) and, in explicit sharding
    mode, ``explicit_mesh_axis``: the mesh axes (a tuple) that the mapped
    inputs' batch dimensions are sharded over, or None when they are not
    sharded. Every value that gains the batch dimension inside the vmap
    (a sharding param written for the unbatched shape, an unbatched value
    broadcast along the batch) gets those mesh axes on it."""

    size: int
    name: Any = None
    spmd_name: Any = None
    explicit_mesh_axis: tuple[Any, ...] | None = None


# ------------------------------------------------------------------ helpers
#
# Shardings under vmap. A batched value's type is its per-example type with
# the batch dimension added, and the same holds for its sharding: the spec
# entry of the batch dimension is removed inside the vmap (``unbatched_aval``,
# a BatchTracer's ``aval``) and put back outside it (``batched_aval``). The
# entry put back is the vmap's ``explicit_mesh_axis`` (the mapped inputs'
# common entry), so a sharded batch dimension stays sharded through every
# primitive whose sharding rule rebuilds the spec from a param.


def _padded(spec: Any, ndim: int) -> list[Any]:
    parts = list(spec.partitions)
    return parts + [None] * (ndim - len(parts))


def insert_spec_entry(sharding: Any, dim: int, entry: Any) -> Any:
    """``sharding`` (a NamedSharding for the unbatched shape) with ``entry``
    (mesh axes or None) as the spec entry of a new dimension ``dim``; its
    unreduced and reduced axes are kept."""
    spec = sharding.spec
    parts = _padded(spec, dim)
    parts.insert(dim, entry)
    return sharding.update(spec=P(*parts, unreduced=spec.unreduced, reduced=spec.reduced,
                                  unreduced_kind=spec.unreduced_kind))


def delete_spec_entry(sharding: Any, dim: int, ndim: int) -> Any:
    """``sharding`` (of a rank-``ndim`` value) without dimension ``dim``'s entry."""
    spec = sharding.spec
    parts = _padded(spec, ndim)
    del parts[dim]
    return sharding.update(spec=P(*parts, unreduced=spec.unreduced, reduced=spec.reduced,
                                  unreduced_kind=spec.unreduced_kind))


def sharding_for_vmap(axis: AxisData, sharding: Any, dim: int) -> Any:
    """A sharding param written for the per-example result, for the batched
    result whose batch dimension is ``dim``: that dimension sharded over the
    vmap's explicit mesh axes (unsharded when there are none). None stays
    None (the primitive's rule then infers the sharding from its operands)."""
    if sharding is None:
        return None
    return insert_spec_entry(sharding, dim, axis.explicit_mesh_axis)


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """Move axis ``src`` of ``x`` to position ``dst`` (a transpose; none when
    they agree)."""
    ndim = canonical_aval_of(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return primitive("transpose").bind(x, permutation=tuple(perm))


def broadcast(x: Any, size: int, axis: int, mesh_axis: Any = None) -> Any:
    """``x`` with a new axis of ``size`` at ``axis`` (the same value along it).
    The kept axes are NumPy integers, as JAX computes (and prints) them. A
    sharded ``x`` gets its result sharding as a param: its own spec with
    ``mesh_axis`` (None: unsharded) for the new axis; a value without a mesh
    (a NumPy constant) stays without one, whatever ``mesh_axis`` says."""
    aval = canonical_aval_of(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(np.delete(np.arange(len(shape)), axis))
    sharding = None
    mesh = None if aval.sharding is None else aval.sharding.mesh
    if mesh is None and mesh_axis is not None:
        # A value made under ``set_mesh`` (jnp.ones inside the vmapped
        # function) has the context mesh in JAX's types, unlike in spec's:
        # it still broadcasts to the sharded batch dimension, as in JAX.
        mesh = get_abstract_mesh()
    if mesh is not None and not mesh.empty:
        parts = [None] * aval.ndim if aval.sharding is None else _padded(aval.sharding.spec,
                                                                          aval.ndim)
        parts.insert(axis, mesh_axis)
        # As JAX, only the partitions carry over to the param.
        sharding = NamedSharding(mesh, P(*parts))
    return primitive("broadcast_in_dim").bind(x, shape=tuple(shape), broadcast_dimensions=dims,
                                   sharding=sharding)


def bdim_at_front(x: Any, dim: BatchDim, size: int, mesh_axis: Any = None) -> Any:
    """The batch axis first: moved there, or created by broadcasting (sharded
    over ``mesh_axis``: pass the vmap's ``explicit_mesh_axis`` where the
    broadcast value must match batched operands' sharding)."""
    if dim is None:
        return broadcast(x, size, 0, mesh_axis)
    return moveaxis(x, dim, 0)


def move_to(x: Any, src: BatchDim, dst: BatchDim, size: int, mesh_axis: Any = None) -> Any:
    """``x``'s batch axis from ``src`` to ``dst`` (broadcasting an unmapped
    value when ``dst`` is an axis, its new axis sharded over ``mesh_axis``:
    JAX's ``matchaxis`` passes the vmap's ``explicit_mesh_axis``)."""
    if src == dst:
        return x
    if isinstance(src, MappingSpec) or isinstance(dst, MappingSpec):
        raise ValueError(f"cannot move a value batched with the mapping spec {src!r} to "
                         f"{dst!r}: a hi type is mapped only as its mapping spec says")
    if dst is None:
        raise ValueError("cannot unmap a batched value")
    if src is None:
        return broadcast(x, size, dst % (canonical_aval_of(x).ndim + 1), mesh_axis)
    return moveaxis(x, src, dst)


def match_axis(axis: AxisData, x: Any, src: BatchDim, dst: BatchDim) -> Any:
    """``move_to`` for the vmap ``axis``: its size and explicit mesh axes."""
    return move_to(x, src, dst, axis.size, axis.explicit_mesh_axis)


def batched_aval(aval: ArrayType, dim: BatchDim, size: int,
                 mesh_axis: Any = None) -> ArrayType:
    """The type of a value of type ``aval`` batched at ``dim`` (the batch
    dimension sharded over ``mesh_axis`` when ``aval`` has a sharding)."""
    if dim is None:
        return aval
    if isinstance(dim, MappingSpec) or is_high(aval):
        return aval.inc_rank(size, dim)
    shape = list(aval.shape)
    shape.insert(dim, size)
    sharding = aval.sharding
    if sharding is not None:
        sharding = insert_spec_entry(sharding, dim, mesh_axis)
    return aval.update(shape=tuple(shape), sharding=sharding)


def unbatched_aval(aval: ArrayType, dim: BatchDim, size: int | None = None) -> ArrayType:
    """The per-example type of a value of type ``aval`` batched at ``dim``:
    the batch dimension and its spec entry removed (a hi type, or a hi
    type's mapping spec: the type's ``dec_rank``)."""
    if dim is None:
        return aval
    if isinstance(dim, MappingSpec) or is_high(aval):
        return aval.dec_rank(size, dim)
    shape = list(aval.shape)
    del shape[dim]
    sharding = aval.sharding
    if sharding is not None:
        sharding = delete_spec_entry(sharding, dim, aval.ndim)
    return aval.update(shape=tuple(shape), sharding=sharding)


# ---------------------------------------------------------- rule builders


class _PrimitiveRule:
    """A rule that needs its primitive; attached at declaration."""

    prim: Primitive
    runs_unmapped = False  # (see ``batch_unmapped``)

    def for_primitive(self, prim: Primitive) -> _PrimitiveRule:
        self.prim = prim
        return self


class batch_unmapped(_PrimitiveRule):
    """A rule that ``BatchTrace`` runs even when no operand is batched (the
    ref primitives: a ref made under vmap is batched whatever its initial
    value, and a write into an unbatched ref is refused, batched value or
    not)."""

    runs_unmapped = True


class vectorized(_PrimitiveRule):
    """Elementwise unary primitives (and any primitive acting on each element
    independently): the output is batched where the operand is."""

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> tuple[list[Any], list[BatchDim]]:
        (x,), (d,) = args, dims
        out = self.prim.bind(x, **params)
        outs = list(out) if self.prim.multiple_results else [out]
        return outs, [d] * len(outs)


class broadcasting(_PrimitiveRule):
    """Elementwise n-ary primitives with lax's implicit broadcasting (rank-0
    operands stretch; size-1 axes stretch): operands whose batch axes agree
    bind as they are; otherwise every batch axis goes to the front, and
    unmapped operands get a size-1 axis there."""

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> tuple[list[Any], list[BatchDim]]:
        avals = [canonical_aval_of(x) for x in args]
        shape, dim = next((a.shape, d) for a, d in zip(avals, dims) if d is not None)
        if all(a.shape == shape and d == dim for a, d in zip(avals, dims) if a.ndim):
            out = self.prim.bind(*args, **params)
            outs = list(out) if self.prim.multiple_results else [out]
            return outs, [dim] * len(outs)
        moved = [bdim_at_front(x, d, 1) if a.ndim else x
                 for x, a, d in zip(args, avals, dims)]
        ndim = max(canonical_aval_of(x).ndim for x in moved)
        moved = [x if d is None or canonical_aval_of(x).ndim == ndim else
                 _trailing_ones(x, ndim) for x, d in zip(moved, dims)]
        out = self.prim.bind(*moved, **params)
        outs = list(out) if self.prim.multiple_results else [out]
        return outs, [0] * len(outs)


def _trailing_ones(x: Any, ndim: int) -> Any:
    """``x`` with size-1 axes appended up to rank ``ndim``: the equation
    ``lax.expand_dims`` records for them (a ``broadcast_in_dim``)."""
    shape = canonical_aval_of(x).shape
    return primitive("broadcast_in_dim").bind(
        x, shape=(*shape, *(1,) * (ndim - len(shape))),
        broadcast_dimensions=tuple(range(len(shape))), sharding=None)


# -------------------------------------------------------------- the trace


def batch_rule(prim: Primitive) -> Callable[..., tuple[list[Any], list[BatchDim]]]:
    rule = prim.batch
    if isinstance(rule, (Pending, NotApplicable)):
        raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
    return rule


class BatchTracer(Tracer):
    __slots__ = ("_trace", "batch_dim", "source_info", "val")

    _trace: BatchTrace

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: Any) -> None:
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim
        # Where the value was made, for the messages of a failed concretization.
        self.source_info = si.current()

    def _tracing_sentence(self) -> str:
        where = si.summarize(self.source_info)
        if not where:
            return ""
        return f"This VmapTracer with object id {id(self)} was created on line:\n  {where}"

    @property
    def aval(self) -> ArrayType:
        return unbatched_aval(canonical_aval_of(self.val), self.batch_dim,
                              self._trace.axis.size)

    def __repr__(self) -> str:
        # JAX's wording: the per-example type and the type of the batched value.
        return f"VmapTracer(aval={self.aval}, batched={canonical_aval_of(self.val)})"


class BatchTrace(Trace):
    """vmap: tracers carry a value with one extra (batch) axis and its position."""

    name = "BatchTrace"

    def __init__(self, parent: Trace, axis: AxisData) -> None:
        super().__init__()
        self.parent = parent
        self.axis = axis

    def unpack(self, x: Any) -> tuple[Any, BatchDim]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            check_tracer_alive(x)
        return x, not_mapped

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        pairs = [self.unpack(a) for a in args]
        vals = [v for v, _ in pairs]
        dims = [d for _, d in pairs]
        collective = prim.axis_collective
        if callable(collective) and self.axis.name is not None \
                and self.axis.name in collective(params):
            rule = batch_rule(prim)
        elif all(d is None for d in dims) and not getattr(prim.batch, "runs_unmapped", False):
            with set_current_trace(self.parent):
                outs = prim.bind(*vals, **params)
            return list(outs) if prim.multiple_results else [outs]
        else:
            rule = batch_rule(prim)
        with set_current_trace(self.parent):
            outs, out_dims = rule(self.axis, vals, dims, **params)
        return [self.wrap(o, d) for o, d in zip(outs, out_dims)]

    def wrap(self, val: Any, dim: BatchDim) -> Any:
        if dim is None:
            return val
        if isinstance(dim, MappingSpec):
            return BatchTracer(self, val, dim)
        ndim = canonical_aval_of(val).ndim
        return BatchTracer(self, val, dim % ndim if ndim else dim)


def batch_flat(fun: Callable[..., Sequence[Any]], axis: AxisData, args: Sequence[Any],
               dims: Sequence[BatchDim], named: bool = True
               ) -> tuple[list[Any], list[BatchDim]]:
    """Run ``fun`` on per-example views of ``args`` (batched at ``dims``);
    returns the outputs with their batch axes (``not_mapped`` where an
    output does not depend on the batch). ``named``: equations staged
    inside carry ``vmap`` on their name stacks (a user's transformation; a
    rule batching a body does not add it)."""
    trace = BatchTrace(current_trace(), axis)
    tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, dims)]
    env = extend_axis_env(axis.name, axis.size) if axis.name is not None \
        else contextlib.nullcontext()
    try:
        with set_current_trace(trace), env, si.transform("vmap", named):
            outs = fun(*tracers)
        unpacked = [trace.unpack(o) for o in outs]
    finally:
        trace.invalidate()
    return [v for v, _ in unpacked], [d for _, d in unpacked]


def batch_jaxpr(jaxpr: Jaxpr, axis: AxisData, dims: Sequence[BatchDim],
                out_dims_wanted: Sequence[BatchDim | _ZeroIfMapped] | None = None
                ) -> tuple[Jaxpr, list[BatchDim]]:
    """``jaxpr`` batched: inputs batched at ``dims``; outputs at the returned
    dims (or moved to ``out_dims_wanted`` where given: an int broadcasts an
    unmapped output there; ``zero_if_mapped`` moves a mapped output to 0)."""
    out_dims: list[BatchDim] = []

    def batched(*args: Any) -> list[Any]:
        outs, ds = batch_flat(lambda *xs: eval_jaxpr(jaxpr, jaxpr.consts, *xs), axis, args,
                              dims, named=False)
        if out_dims_wanted is not None:
            wanted = [(None if d is None else 0) if isinstance(w, _ZeroIfMapped) else w
                      for d, w in zip(ds, out_dims_wanted)]
            outs = [o if w is None and d is None else match_axis(axis, o, d, w)
                    for o, d, w in zip(outs, ds, wanted)]
            ds = wanted
        out_dims.extend(ds)
        return outs

    avals = [batched_aval(v.aval, d, axis.size, axis.explicit_mesh_axis)
             for v, d in zip(jaxpr.invars, dims)]
    new, _ = trace_to_jaxpr(batched, avals)
    return new, out_dims


__all__ = [
    "AxisData", "BatchTrace", "BatchTracer", "batch_flat", "batch_jaxpr", "batch_rule",
    "batch_unmapped", "batched_aval", "bdim_at_front", "broadcast", "broadcasting",
    "delete_spec_entry", "insert_spec_entry", "match_axis", "move_to", "moveaxis", "not_mapped",
    "sharding_for_vmap",
    "unbatched_aval", "vectorized", "zero_if_mapped",
]
