"""Per-device execution of sharded programs on the virtual backend (SPEC.md
section 14.3).

A value laid out over a mesh is a ``Dist``: its global type (whose sharding
says which mesh axes split each dimension, and which axes it is unreduced or
reduced over) and one NumPy buffer per device of the mesh, in mesh order.
Every primitive runs its *per-device program* (``prim.per_device``, a field
of its declaration, built from the kit in spec._src.interpreters.per_device):
NumPy work on each device's local buffers plus the collectives the types
require, which are computed across the buffers here and recorded in the
ledger (spec/_ledger.py). A primitive without a
program of its own runs the conservative one: gather every operand to a full
replica (recorded), compute, keep each device's block.

The buffers of replicated devices may be one shared object; buffers are never
mutated after they are made, except a ref's (SPEC.md 17, "Refs over a mesh"): a
ref's Dist holds views of one global buffer (each device's block; devices
holding the same block view the same memory), which the ref primitives'
programs write in place through one device per block (``writers``). A
process holds the buffers of its own devices only (``Geometry.local``):
under the MPI backend (spec._src.backends.mpi) each rank's Dists have ``None`` at
every other device's position.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core import ledger as _ledger
from spec._src.core.array import Array
from spec._src.core.effects import ordered_effects, ordered_io_effect
from spec._src.core.backend import Axes, Backend, Bufs, current_backend
from spec._src.core.denormals import quietly
from spec._src.core.interpreter import Literal, Var, canonical_value, hooks
from spec._src.core.sharding import (
    AxisType, Mesh, NamedSharding, P, axis_names_of, get_concrete_mesh)
from spec._src.core.state_types import RefType
from spec._src.core.types import ArrayType


_set_field = object.__setattr__


class Dist:
    """A value over a mesh: its global type and one buffer per device.
    Immutable; equal only to itself. (A plain class with slots rather than a
    frozen dataclass: generated loops make a few per iteration, at a third
    of the cost.)"""

    __slots__ = ("aval", "bufs")
    aval: ArrayType
    bufs: Bufs

    def __init__(self, aval: ArrayType, bufs: Bufs) -> None:
        _set_field(self, "aval", aval)
        _set_field(self, "bufs", bufs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field '{name}' of an immutable Dist")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field '{name}' of an immutable Dist")

    def __repr__(self) -> str:
        return f"Dist(aval={self.aval!r}, bufs={self.bufs!r})"

    @property
    def uniform(self) -> bool:
        """Every held buffer is one shared object."""
        one = first(self.bufs)
        return all(b is one or b is None for b in self.bufs)

    @property
    def any(self) -> np.ndarray:
        """A buffer this process holds (the one, for replicated values)."""
        return first(self.bufs)


def first(bufs: Bufs) -> np.ndarray:
    for b in bufs:
        if b is not None:
            return b
    raise AssertionError("a value with no buffer in this process")


def held(b: np.ndarray | None) -> np.ndarray:
    """A buffer of a device this process holds."""
    assert b is not None, "a buffer of a device another process holds"
    return b


def each(fn: Callable[[np.ndarray], np.ndarray], bufs: Bufs) -> Bufs:
    """``fn`` on every buffer this process holds."""
    return tuple(None if b is None else fn(b) for b in bufs)


Program = Callable[..., list[Dist]]


# ================================================================ layouts


names_of = axis_names_of


def parts_of(aval: ArrayType) -> tuple[Axes, ...]:
    """Per dimension, the mesh axes splitting it (major first)."""
    s = aval.sharding
    if s is None:
        return ((),) * aval.ndim
    return s.axes_per_dim(aval.ndim)  # type: ignore[no-any-return]


def unreduced_of(aval: ArrayType) -> frozenset[str]:
    s = aval.sharding
    return frozenset() if s is None else frozenset(s.spec.unreduced)


def unreduced_kind(aval: ArrayType) -> str:
    s = aval.sharding
    kind = None if s is None else s.spec.unreduced_kind
    return "sum" if kind is None else str(kind.name)


def is_plain(aval: ArrayType) -> bool:
    """Replicated on every device, no pending reduction."""
    return not any(parts_of(aval)) and not unreduced_of(aval)


# ================================================================= meshes


@dataclass(frozen=True, eq=False)  # made once per mesh (cached): identity is equality
class Geometry:
    """Where each device sits in a mesh: ``coords[axis][k]`` is device k's
    position along ``axis`` (k in mesh order)."""

    names: Axes
    sizes: tuple[int, ...]
    coords: dict[str, np.ndarray]
    procs: tuple[int, ...]  # the process holding each device (its MPI rank)
    local: tuple[int, ...]  # the devices this process holds
    all_local: bool
    _groups: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)
    _group_of: dict[tuple[Any, ...], tuple[np.ndarray, int]] = field(default_factory=dict)
    _rows: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.procs)

    def place(self, value: np.ndarray) -> Bufs:
        """``value`` as the buffer of every device this process holds."""
        if self.all_local:
            return (value,) * self.n
        mine = set(self.local)
        return tuple(value if k in mine else None for k in range(self.n))

    def size_of(self, axes: Sequence[str]) -> int:
        return int(np.prod([self.sizes[self.names.index(a)] for a in axes], dtype=np.int64))

    def position(self, axes: Sequence[str]) -> np.ndarray:
        """Each device's index along ``axes`` (mixed radix, first axis major)."""
        pos = np.zeros(self.n, dtype=np.int64)
        for a in axes:
            pos = pos * self.sizes[self.names.index(a)] + self.coords[a]
        return pos

    def groups(self, axes: Sequence[str]) -> np.ndarray:
        """Devices that differ only along ``axes``: one row per group, each
        ordered by position along ``axes`` (computed once per axes)."""
        key = tuple(axes)
        known = self._groups.get(key)
        if known is None:
            others = [a for a in self.names if a not in axes]
            order = np.lexsort((self.position(axes), self.position(others)))
            known = self._groups[key] = order.reshape(-1, self.size_of(axes))
            known.flags.writeable = False
        return known

    def group_rows(self, axes: Sequence[str]) -> tuple[tuple[int, ...], ...]:
        """``groups(axes)`` as tuples of Python ints (what a loop over the
        devices of each group indexes buffers with, per collective)."""
        key = tuple(axes)
        known = self._rows.get(key)
        if known is None:
            known = self._rows[key] = tuple(tuple(int(k) for k in row)
                                            for row in self.groups(key))
        return known

    def group_of(self, k: int, axes: Sequence[str]) -> tuple[np.ndarray, int]:
        """Device k's group along ``axes`` and its place in it."""
        key = (k, tuple(axes))
        known = self._group_of.get(key)
        if known is None:
            rows = self.groups(axes)
            row, place = (int(i[0]) for i in np.nonzero(rows == k))
            known = self._group_of[key] = (rows[row], place)
        return known


@functools.cache
def _geometry(names: Axes, sizes: tuple[int, ...], procs: tuple[int, ...] | None,
              me: int) -> Geometry:
    grid = np.indices(sizes).reshape(len(sizes), -1) if sizes else np.zeros((0, 1), np.int64)
    n = int(np.prod(sizes, dtype=np.int64))
    held = tuple(range(n)) if procs is None else tuple(k for k in range(n) if procs[k] == me)
    return Geometry(names, sizes, {a: grid[i] for i, a in enumerate(names)},
                    procs or (0,) * n, held, len(held) == n)


def geometry(mesh: Any, procs: tuple[int, ...] | None = None) -> Geometry:
    """A mesh's geometry. Where its devices live comes from the mesh's
    devices, or ``procs`` for an abstract mesh (a program moving to another
    mesh shape over the same devices keeps their flat order)."""
    if procs is None and isinstance(mesh, Mesh):
        procs = procs_of(mesh)
    if procs is not None and not any(procs):
        procs = None  # one process holds every device
    return _geometry(tuple(mesh.axis_names), tuple(mesh.axis_sizes), procs,
                     current_backend().process_index())


@functools.lru_cache(maxsize=64)
def procs_of(mesh: Any) -> tuple[int, ...] | None:
    """The process holding each device of a concrete mesh (flat order)."""
    if not mesh.size:
        return None
    return tuple(int(d.process_index) for d in mesh.devices.flat)


def local_shape(aval: ArrayType, geo: Geometry) -> tuple[int, ...]:
    return tuple(d // geo.size_of(p) for d, p in zip(aval.shape, parts_of(aval)))


def _take(buf: np.ndarray, dim: int, ways: int, index: int) -> np.ndarray:
    step = buf.shape[dim] // ways
    sl = [slice(None)] * buf.ndim
    sl[dim] = slice(index * step, (index + 1) * step)
    return buf[tuple(sl)]


def _slice_blocks(bufs: Bufs, dim: int, axes: Axes, geo: Geometry) -> Bufs:
    """Each device keeps its block of ``dim`` split over ``axes`` (free)."""
    if not axes:
        return bufs
    ways, pos = geo.size_of(axes), geo.position(axes)
    return tuple(None if b is None else _take(b, dim, ways, int(p)) for b, p in zip(bufs, pos))


def split_value(value: np.ndarray, aval: ArrayType, geo: Geometry) -> Bufs:
    """A global value laid out by ``aval``'s sharding: each device's block;
    over unreduced axes, the value sits at position 0 and zeros elsewhere."""
    bufs = geo.place(value)
    for dim, axes in enumerate(parts_of(aval)):
        bufs = _slice_blocks(bufs, dim, axes, geo)
    return _zero_off_origin(bufs, unreduced_of(aval), geo)


def _zero_off_origin(bufs: Bufs, axes: frozenset[str], geo: Geometry) -> Bufs:
    if not axes:
        return bufs
    off = geo.position(sorted(axes, key=geo.names.index)) != 0
    return tuple(np.zeros_like(b) if o and b is not None else b for b, o in zip(bufs, off))


def assemble(d: Dist, geo: Geometry) -> np.ndarray:
    """The global value: blocks put back in place, unreduced partials summed
    (in the order an all-reduce uses). Needs every block in this process
    (see ``whole_value`` otherwise)."""
    assert geo.all_local, "assemble needs every device's block"
    bufs = d.bufs
    u = unreduced_of(d.aval)
    if u:
        bufs = reduce_in_groups(bufs, _mesh_order(u, geo), unreduced_kind(d.aval), geo)
    if not any(parts_of(d.aval)):
        return first(bufs)
    out = np.empty(d.aval.shape, dtype=first(bufs).dtype)
    for b, sl in zip(bufs, _block_places(parts_of(d.aval), d.aval.shape, geo)):
        assert b is not None
        out[sl] = b
    return out


_PLACES: dict[tuple[Any, ...], list[tuple[slice, ...]]] = {}


def _block_places(parts: tuple[Axes, ...], shape: tuple[int, ...], geo: Geometry
                  ) -> list[tuple[slice, ...]]:
    """Where each device's block sits in the global value (computed once per
    layout, shape and mesh)."""
    key = (parts, shape, geo)
    known = _PLACES.get(key)
    if known is None:
        index = [geo.position(p) for p in parts]
        blocks = [d // geo.size_of(p) for d, p in zip(shape, parts)]
        known = [tuple(slice(int(i[k]) * n, (int(i[k]) + 1) * n) for i, n in zip(index, blocks))
                 for k in range(geo.n)]
        if len(_PLACES) > 1024:
            _PLACES.clear()
        _PLACES[key] = known
    return known


def _mesh_order(axes: Any, geo: Geometry) -> Axes:
    return tuple(a for a in geo.names if a in axes)


# ============================================================ collectives

_OPS: dict[str, Callable[..., np.ndarray]] = {
    "sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def combine(op: str, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None
            ) -> np.ndarray:
    """``a op b`` in a's type (into ``out``, a buffer of that type and shape,
    when given; it may be ``a`` or ``b`` itself)."""
    dt = a.dtype
    if dt.kind == "b" and op in ("sum", "max", "or"):
        return np.asarray(np.logical_or(a, b, out=out))
    if dt.kind == "b" and op in ("min", "prod", "and"):
        return np.asarray(np.logical_and(a, b, out=out))
    if out is None:
        return np.asarray(quietly(_OPS[op], a, b)).astype(dt, copy=False)
    return np.asarray(quietly(_combined, _OPS[op], a, b, out)).astype(dt, copy=False)


def _combined(ufunc: Callable[..., np.ndarray], a: np.ndarray, b: np.ndarray,
              out: np.ndarray) -> np.ndarray:
    return ufunc(a, b, out=out)  # (``out`` by keyword: NumPy deprecates it by position)


def reduce_in_groups(bufs: Bufs, axes: Axes, op: str, geo: Geometry) -> Bufs:
    """Each group's buffers combined in group order (every buffer held here)."""
    out = list(bufs)
    every: Sequence[Any] = bufs
    for group in geo.group_rows(axes):
        acc = every[group[0]]
        for k in group[1:]:
            acc = combine(op, acc, every[k])
        for k in group:
            out[k] = acc
    return tuple(out)


def backend() -> Backend:
    """The backend the collectives run on (spec._src.core.backend)."""
    return current_backend()


def all_reduce(bufs: Bufs, axes: Axes, op: str, geo: Geometry, kind: str = "all_reduce"
               ) -> Bufs:
    _ledger.record(kind, axes, first(bufs).nbytes)
    return current_backend().all_reduce(bufs, axes, op, geo)


def all_gather(bufs: Bufs, axes: Axes, dim: int, geo: Geometry, kind: str = "all_gather"
               ) -> Bufs:
    """Each device gets the concatenation (along ``dim``, in ``axes`` order)
    of its group's blocks."""
    _ledger.record(kind, axes, first(bufs).nbytes)
    return current_backend().all_gather(bufs, axes, dim, geo)


def ppermute(bufs: Bufs, axes: Axes, perm: Sequence[tuple[int, int]], geo: Geometry) -> Bufs:
    _ledger.record("ppermute", axes, first(bufs).nbytes)
    return current_backend().ppermute(bufs, axes, perm, geo)


# ================================================================ reshard


def reshard(d: Dist, dst: ArrayType, geo: Geometry, op: str | None = None) -> Dist:
    """Move ``d`` to ``dst``'s layout (same shape and dtype): pending
    reductions over axes ``dst`` is not unreduced over run (all-reduce, or
    reduce-scatter when ``dst`` splits a dimension over them); new unreduced
    axes keep the value at position 0; dimensions whose splitting changes are
    gathered (all-gather, or all-to-all when the axes move to another
    dimension) and then sliced (free)."""
    src_u, dst_u = unreduced_of(d.aval), unreduced_of(dst)
    src_parts, dst_parts = parts_of(d.aval), parts_of(dst)
    dst_axes = {a for p in dst_parts for a in p}
    bufs = d.bufs
    pending = _mesh_order(src_u - dst_u, geo)
    if pending:
        kind = "reduce_scatter" if dst_axes & set(pending) else "all_reduce"
        bufs = all_reduce(bufs, pending, op or unreduced_kind(d.aval), geo, kind)
    new_u = dst_u - src_u
    # An axis leaving a dim's split to become unreduced needs no message:
    # each device's block, zero-padded to the whole dim, is a partial sum.
    tails = [s[_common_prefix(s, t):] for s, t in zip(src_parts, dst_parts)]
    embedded = {a for tail in tails if tail and set(tail) <= new_u for a in tail}
    bufs = _zero_off_origin(bufs, frozenset(new_u - embedded), geo)
    cuts = []
    for dim, (s, t) in enumerate(zip(src_parts, dst_parts)):
        k = _common_prefix(s, t)
        if s[k:] and set(s[k:]) <= embedded:
            bufs = _embed(bufs, dim, s[k:], geo)
        elif s[k:]:
            kind = "all_to_all" if set(s[k:]) <= dst_axes else "all_gather"
            bufs = all_gather(bufs, s[k:], dim, geo, kind)
        cuts.append((dim, t[k:]))
    for dim, axes in cuts:
        bufs = _slice_blocks(bufs, dim, axes, geo)
    return Dist(dst, bufs)


def reshard_plan(src: ArrayType, dst: ArrayType, geo: Geometry, op: str | None = None
                 ) -> Callable[[Bufs], Bufs] | None:
    """``reshard`` from ``src``'s layout to ``dst``'s as a function of the
    buffers, decided once for generated code: None where the buffers stay as
    they are; only the all-reduce where the dimensions keep their splitting
    and only pending reductions run (what a reduction over a split dimension
    ends in); ``reshard`` itself otherwise."""
    src_u, dst_u = unreduced_of(src), unreduced_of(dst)
    if parts_of(src) != parts_of(dst) or not dst_u <= src_u:
        return lambda bufs: reshard(Dist(src, bufs), dst, geo, op).bufs
    pending = _mesh_order(src_u - dst_u, geo)
    if not pending:
        return None
    dst_axes = {a for p in parts_of(dst) for a in p}
    kind = "reduce_scatter" if dst_axes & set(pending) else "all_reduce"
    how = op or unreduced_kind(src)
    return lambda bufs: all_reduce(bufs, pending, how, geo, kind)


def _embed(bufs: Bufs, dim: int, axes: Axes, geo: Geometry) -> Bufs:
    ways, pos = geo.size_of(axes), geo.position(axes)
    out: list[np.ndarray | None] = []
    for b, p in zip(bufs, pos):
        if b is None:
            out.append(None)
            continue
        shape = list(b.shape)
        step = shape[dim]
        shape[dim] *= ways
        whole = np.zeros(shape, b.dtype)
        sl = [slice(None)] * b.ndim
        sl[dim] = slice(int(p) * step, (int(p) + 1) * step)
        whole[tuple(sl)] = b
        out.append(whole)
    return tuple(out)


def _common_prefix(a: Axes, b: Axes) -> int:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


# ============================================================== execution


def uniform(value: np.ndarray, aval: ArrayType, geo: Geometry) -> Dist:
    return Dist(aval, geo.place(value))


def apply(prim: Any, args: list[Dist], params: dict[str, Any], out_avals: Sequence[ArrayType],
          geo: Geometry) -> list[Dist]:
    rule = prim.per_device
    program: Program = rule if callable(rule) else gathered(prim)
    return program(geometry_of(out_avals, geo), args, list(out_avals), **params)


def geometry_of(avals: Sequence[ArrayType], geo: Geometry) -> Geometry:
    """The geometry of the mesh the results live on (a program may move to
    another mesh over the same devices, as under ``use_abstract_mesh``)."""
    for a in avals:
        s = a.sharding
        if s is not None and not s.mesh.empty and (
                tuple(s.mesh.axis_names) != geo.names or tuple(s.mesh.axis_sizes) != geo.sizes):
            return geometry(s.mesh, geo.procs)
    return geo


def moved_mesh(d: Dist, dst: ArrayType, src_geo: Geometry, dst_geo: Geometry) -> Dist:
    """A value moved to a layout over another mesh of the same devices (flat
    device order kept): gathered whole, then split by the new layout."""
    axes = tuple(a for p in parts_of(d.aval) for a in p)
    if axes:
        _ledger.record("all_gather", axes, d.any.nbytes)
    whole = whole_value(d, src_geo)
    return Dist(dst, split_value(whole, dst, dst_geo))


def whole_value(d: Dist, geo: Geometry) -> np.ndarray:
    """The global value, in this process: assembled from the blocks it holds,
    or fetched from the other processes by the backend (transfers the ledger
    does not record: callers record what they stand for)."""
    if geo.all_local:
        return assemble(d, geo)
    b, bufs = current_backend(), d.bufs
    u = unreduced_of(d.aval)
    if u:
        bufs = b.all_reduce(bufs, _mesh_order(u, geo), unreduced_kind(d.aval), geo)
    for dim, axes in enumerate(parts_of(d.aval)):
        if axes:
            bufs = b.all_gather(bufs, axes, dim, geo)
    return first(bufs)


def run_local(prim: Any, geo: Geometry, args: Sequence[Dist], out_avals: Sequence[ArrayType],
              params: dict[str, Any], per_device: Callable[[int], dict[str, Any]] | None = None
              ) -> list[Dist]:
    """The impl on each device's buffers (once, shared, when every operand is
    one shared buffer and the results are plain replicated values)."""
    if per_device is None and all(a.uniform for a in args) and all(
            is_plain(o) for o in out_avals):
        outs = prim.impl(*[a.any for a in args], **params)
        return [uniform(np.asarray(o), a, geo) for o, a in zip(outs, out_avals)]
    columns: list[Any] = [None] * geo.n
    for k in geo.local:
        ps = params if per_device is None else per_device(k)
        columns[k] = prim.impl(*[a.bufs[k] for a in args], **ps)
    outs = [Dist(a, tuple(None if col is None else np.asarray(col[i]) for col in columns))
            for i, a in enumerate(out_avals)]
    for d in outs:  # a program that mis-slices shows up here, not in the values
        want = local_shape(d.aval, geo)
        shapes = {b.shape for b in d.bufs if b is not None}
        if shapes != {want}:
            raise AssertionError(f"per-device program of {prim.name}: local results of shapes "
                                 f"{sorted(shapes)}, expected {want} for {d.aval}")
    return outs


def gathered(prim: Any) -> Program:
    """The conservative program: every operand gathered (and reduced) to a
    full replica, the impl run on it, each result laid out by its type."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        full = [a if is_plain(a.aval) else reshard(a, a.aval.update(sharding=None), geo)
                for a in args]
        outs = run_local(prim, geo, [uniform(a.any, a.aval, geo) for a in full],
                         [o.update(sharding=None) for o in out_avals], params)
        return [Dist(o, split_value(r.any, o, geo)) for r, o in zip(outs, out_avals)]
    return program


# ----------------------------------------------------- jaxprs, per device


def eval_jaxpr(jaxpr: Any, consts: Sequence[Any], args: Sequence[Dist], geo: Geometry
               ) -> list[Dist]:
    """Every equation's per-device program, in order (types come from the
    jaxpr: nothing is re-typed)."""
    env: dict[Any, Dist] = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c if isinstance(c, Dist) else from_value(c, geo)
    env.update(zip(jaxpr.invars, args))

    def read(atom: Any) -> Dist:
        if isinstance(atom, Literal):
            return uniform(np.asarray(atom.val, dtype=atom.aval.dtype), atom.aval, geo)
        return env[atom]

    for eqn, live in zip(jaxpr.eqns, live_equations(jaxpr)):
        if not live:
            continue
        outs = apply(eqn.primitive, [read(a) for a in eqn.invars], eqn.params,
                     [v.aval for v in eqn.outvars], geo)
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


# A jaxpr's per-device evaluation as generated code, which
# spec._src.api.codegen fills in: ``program(jaxpr, consts, args, geo)`` gives
# exactly ``eval_jaxpr``'s result Dists, or None where the jaxpr is
# interpreted.
GeneratedHook = Callable[[Any, Sequence[Any], Sequence[Dist], Geometry], "list[Dist] | None"]
generated_program: list[GeneratedHook | None] = [None]


# The function of a jaxpr's generated per-device program for these argument
# types (None: interpreted, or not written yet), which codegen fills in.
FunctionHook = Callable[[Any, Sequence[Dist], Geometry], "Callable[..., list[Dist]] | None"]
generated_function: list[FunctionHook | None] = [None]


def loop_runner(jaxpr: Any, geo: Geometry) -> Callable[[Sequence[Dist]], list[Dist]]:
    """``run_jaxpr(jaxpr, jaxpr.consts, args, geo)`` for the iterations of a
    loop: once the jaxpr has a generated program for the arguments' types,
    later iterations at the same types call it without looking it up."""
    found: list[Any] = [None, ()]  # the program's function and its argument types

    def run(args: Sequence[Dist]) -> list[Dist]:
        fn, avals = found
        if fn is not None and len(avals) == len(args):
            for a, d in zip(avals, args):
                if a is not d.aval:
                    break
            else:
                return fn(*args)  # type: ignore[no-any-return]
            if all(a == d.aval for a, d in zip(avals, args)):
                # Equal types as other objects (the body's result types,
                # carried): remembered, so later iterations compare identities.
                found[1] = tuple(d.aval for d in args)
                return fn(*args)  # type: ignore[no-any-return]
        lookup = generated_function[0]
        fn = None if lookup is None else lookup(jaxpr, args, geo)
        if fn is None:
            return run_jaxpr(jaxpr, jaxpr.consts, args, geo)
        found[:] = [fn, tuple(d.aval for d in args)]
        return fn(*args)
    return run


def run_jaxpr(jaxpr: Any, consts: Sequence[Any], args: Sequence[Dist], geo: Geometry
              ) -> list[Dist]:
    """``eval_jaxpr``, run by the jaxpr's generated per-device program where
    there is one (the same values: SPEC.md 4.1b)."""
    program = generated_program[0]
    if program is not None:
        outs = program(jaxpr, consts, args, geo)
        if outs is not None:
            return outs
    return eval_jaxpr(jaxpr, consts, args, geo)


_LIVENESS: dict[int, tuple[Any, list[bool]]] = {}


def live_equations(jaxpr: Any) -> list[bool]:
    """Equations whose results reach an output (or that have effects). As a
    compiler would, the devices skip the others: a dead reduction is not an
    all-reduce that runs."""
    cached = _LIVENESS.get(id(jaxpr))
    if cached is not None and cached[0] is jaxpr:
        return cached[1]
    needed = {v for v in jaxpr.outvars if isinstance(v, Var)}
    live = [False] * len(jaxpr.eqns)
    for i in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[i]
        if eqn.effects or any(v in needed for v in eqn.outvars):
            live[i] = True
            needed.update(a for a in eqn.invars if isinstance(a, Var))
    _LIVENESS[id(jaxpr)] = (jaxpr, live)
    return live


def from_value(x: Any, geo: Geometry) -> Dist:
    """An operand as a Dist: a sharded Array's own buffers; a ref's blocks as
    views of its buffer (written in place); anything else (unsharded Arrays,
    NumPy values, Python scalars) laid out by its type."""
    if type(getattr(x, "aval", None)) is RefType:
        check_ref_layout(x.aval, geo)
        return Dist(x.aval, split_value(x._value, x.aval, geo))
    if isinstance(x, Array):
        if x._shards is not None and shards_follow_type(x):
            if len(x._shards) != geo.n:
                raise ValueError(f"an array laid out over {len(x._shards)} devices was used "
                                 f"with a mesh of {geo.n} devices")
            return Dist(x.aval, tuple(x._shards))
        value, aval = x._value, x.aval
    else:
        value, aval = canonical_value(x)
    if is_plain(aval):
        return uniform(value, aval, geo)
    return Dist(aval, split_value(value, aval, geo))


def shards_follow_type(x: Any) -> bool:
    """Whether an array's buffers are laid out as its type says (they are
    not when its placement splits over Auto axes, which types omit)."""
    placed = x._sharding
    typed = x.aval.sharding
    if placed is None or typed is None:
        return placed is None and typed is None
    want = typed.spec._normalized_spec_for_aval(x.ndim)
    have = placed.spec._normalized_spec_for_aval(x.ndim)
    return bool(want.partitions == have.partitions and want.unreduced == have.unreduced)


# ==================================================================== refs


def check_ref_layout(aval: ArrayType, geo: Geometry) -> None:
    """A ref's blocks are views of one buffer in this process: refs over the
    devices of several processes, and refs of unreduced values (whose
    devices hold different partial sums), are not supported."""
    if not geo.all_local:
        raise NotImplementedError(
            f"refs of arrays laid out over a mesh ({aval}) are not supported by spec when the "
            "mesh spans several processes (MPI) yet")
    if unreduced_of(aval):
        raise NotImplementedError(
            f"refs of unreduced arrays ({aval}) cannot be used on devices by spec yet")


def writers(aval: ArrayType, geo: Geometry) -> tuple[int, ...]:
    """The devices through which a ref's blocks are written: one per block,
    at position 0 along the mesh axes that neither split the ref nor make it
    vary (the other devices' blocks are views of the same memory)."""
    # Inside shard_map a block varying over manual axes is its device's own.
    used = {a for p in parts_of(aval) for a in p} | set(aval.vma)
    free = [a for a in geo.names if a not in used]
    if not free:
        return tuple(range(geo.n))
    return tuple(int(k) for k in np.flatnonzero(geo.position(free) == 0))


def new_ref_blocks(value: np.ndarray, aval: ArrayType, geo: Geometry) -> Bufs:
    """A new ref's blocks: views of ``value`` (a fresh buffer) laid out by
    ``aval``."""
    check_ref_layout(aval, geo)
    return split_value(value, aval, geo)


def own_blocks(d: Dist, aval: ArrayType, geo: Geometry) -> Bufs:
    """A new ref's blocks copied from ``d``'s, laid out as ``aval`` (which varies over
    manual axes): each device's block is its own where the value varies or is split
    (inside ``shard_map`` every device writes its own), one buffer shared by the
    devices that differ only along the other axes (``writers`` writes it once)."""
    check_ref_layout(aval, geo)
    used = {a for p in parts_of(aval) for a in p} | set(aval.vma)
    pos = geo.position([a for a in geo.names if a in used])
    copies: dict[int, np.ndarray] = {}
    return tuple(None if b is None else copies.setdefault(int(pos[k]), np.array(b, copy=True))
                 for k, b in enumerate(d.bufs))


def to_ref(d: Dist, mesh: Any, geo: Geometry) -> Any:
    """A ref result (``new_ref``) as an eager Ref: its blocks assembled into
    one buffer, placed on the mesh by its type."""
    check_ref_layout(d.aval, geo)
    whole = assemble(d, geo)
    if not any(parts_of(d.aval)):
        whole = np.array(whole, copy=True)  # (a plain ref's block may be shared)
    placed = None
    if d.aval.sharding is not None and not mesh.empty:
        placed = NamedSharding(mesh, d.aval.sharding.spec)
    assert isinstance(d.aval, RefType)
    return hooks.eager_ref(whole, d.aval, placed)


def to_array(d: Dist, mesh: Any, geo: Geometry, placed: Any = None) -> Any:
    """An eager Array of ``d``'s value on ``mesh``, placed by its type
    (``placed``: that placement, made before)."""
    if not geo.all_local and not mesh.empty:
        if is_plain(d.aval):  # every process holds the whole value
            out = Array._from_checked(d.any, d.aval, "per-device program")
        else:
            out = Array._spanning(d.aval, d.bufs, None)
    else:
        out = Array._from_checked(assemble(d, geo), d.aval, "per-device program")
    if mesh.empty:
        return out
    if d.aval.sharding is None:
        if type(out) is not Array or not d.uniform:
            return out
        # A result typed off the mesh (made from no operand) is computed
        # on every device of the program's mesh, replicated, as JAX's is.
        out.aval = d.aval.update(sharding=NamedSharding(
            mesh.abstract_mesh, P(*(None,) * len(d.aval.shape))))
    out._shards = d.bufs
    out._sharding = _placement(out.aval.sharding.spec, mesh) if placed is None else placed
    return out


def _placement(spec: P, mesh: Any) -> NamedSharding:
    """Where a result of type spec ``spec`` lies: as its type says on a
    mesh with Explicit axes; on a mesh of Auto axes alone the compiler
    chose it, and a replicated result's placement names no dimension."""
    if AxisType.Explicit not in mesh.axis_types and not spec.unreduced \
            and not spec.reduced and all(p is None for p in spec.partitions):
        return NamedSharding(mesh, P())
    return NamedSharding(mesh, spec)


def eager(prim: Any, args: Sequence[Any], params: dict[str, Any],
          out_avals: Sequence[ArrayType]) -> list[Any]:
    """EvalTrace's path for sharded operands or results."""
    mesh = concrete_mesh(args, params)
    _check_device_assignment(mesh, out_avals)
    if prim.name == "jit":
        _check_ordered_effects(mesh, params["jaxpr"].effects)
    geo = geometry(mesh)
    dists = [from_value(a, geo) for a in args]
    outs = apply(prim, dists, params, out_avals, geo)
    results = results_of(outs, mesh, geo)
    keep_auto_placement(prim, params, args, results)
    return results


def keep_auto_placement(prim: Any, params: dict[str, Any], args: Sequence[Any],
                        results: list[Any]) -> None:
    """On a mesh of Auto axes alone, an eager primitive's results placed
    where JAX's compiler places them from its operands' placements."""
    mesh = next((r._sharding.mesh for r in results
                 if type(r) is Array and r._sharding is not None), None)
    if mesh is None or AxisType.Explicit in mesh.axis_types:
        return
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    parts = _auto_parts(prim, params, [_placed(a) for a in args],
                        [tuple(getattr(r, "shape", ())) for r in results], sizes)
    _place_as(results, parts, _first_named(args))


# On a mesh of Auto axes alone the compiler places results (the types name
# no axis): a primitive's sharding section may say where they lie
# (``auto_placement``, spec._src.lax.sharding_kit); a call's results lie as
# its program's equations place them, a sharding constraint's as it asks.

_Placed = tuple[tuple[int, ...], tuple[Any, ...] | None]


def _placed(x: Any) -> _Placed:
    """An operand's shape and, where it is split over a mesh, the mesh axes
    of each dimension."""
    shape = tuple(getattr(x, "shape", ()))
    s = x._sharding if isinstance(x, Array) else None
    if s is None or not any(p is not None for p in s.spec.partitions):
        return shape, None
    return shape, s.spec.partitions + (None,) * (len(shape) - len(s.spec.partitions))


def _auto_parts(prim: Any, params: dict[str, Any], placed: Sequence[_Placed],
                out_shapes: Sequence[tuple[int, ...]], sizes: dict[Any, int]
                ) -> list[tuple[Any, ...] | None]:
    if prim.name == "jit":
        return _program_parts(params["jaxpr"], placed, sizes)
    if prim.name == "sharding_constraint":
        spec = params["sharding"].spec
        return [spec.partitions + (None,) * (len(out_shapes[0]) - len(spec.partitions))]
    rule = getattr(prim.sharding, "auto_placement", None)
    if rule is None or all(p[1] is None for p in placed):
        return [None] * len(out_shapes)
    found: list[tuple[Any, ...] | None] = rule(placed, out_shapes, params, sizes)
    return found


def _program_parts(jaxpr: Any, placed: Sequence[_Placed], sizes: dict[Any, int]
                   ) -> list[tuple[Any, ...] | None]:
    """Where a call's results lie: each equation places its results from
    its operands' placements (an operand passed through lies as it is)."""
    env: dict[Any, _Placed] = dict(zip(jaxpr.invars, placed))

    def read(x: Any) -> _Placed:
        shape = tuple(x.aval.shape)
        return env.get(x, (shape, None)) if _is_var(x) else (shape, None)

    for eqn in jaxpr.eqns:
        out_shapes = [tuple(o.aval.shape) for o in eqn.outvars]
        parts = _auto_parts(eqn.primitive, eqn.params, [read(x) for x in eqn.invars],
                            out_shapes, sizes)
        for o, shape, ps in zip(eqn.outvars, out_shapes, parts):
            env[o] = (shape, _typed_parts(o.aval) or ps)
    return [read(v)[1] for v in jaxpr.outvars]


def _typed_parts(aval: Any) -> tuple[Any, ...] | None:
    """The mesh axes a type names for its dimensions (inside explicit_axes
    the type is the placement), or None when it names none."""
    s = getattr(aval, "sharding", None)
    if s is None or not any(p is not None for p in s.spec.partitions):
        return None
    ps: tuple[Any, ...] = s.spec.partitions
    return ps + (None,) * (len(aval.shape) - len(ps))


def _first_named(args: Sequence[Any]) -> Any:
    """The first operand when a NamedSharding places it (None otherwise: a
    NumPy or uncommitted first operand leaves every result named as
    compiled)."""
    first = args[0] if args else None
    return first if isinstance(first, Array) and isinstance(first._sharding, NamedSharding) \
        else None


def _place_as(results: list[Any], parts: Sequence[tuple[Any, ...] | None], first: Any
              ) -> None:
    """Each result placed as the compiler places it: its dimensions split
    as ``parts`` says, named as JAX reads the compiled placement back (no
    trailing unsplit dimension, no axis of size 1); a result of the first
    placed operand's rank that lies as that operand gets its sharding as
    written (JAX hands back the operand's own)."""
    for r, ps in zip(results, parts):
        if type(r) is not Array or r._sharding is None:
            continue
        mesh = r._sharding.mesh
        ps = (None,) * r.ndim if ps is None else ps
        if not _divides(mesh, ps, r.shape):
            continue
        compiled = _compiled_spec(ps, mesh)
        if first is not None and first.ndim == r.ndim and first._sharding.mesh == mesh \
                and _compiled_spec(_placed_parts(first), mesh) == compiled:
            r._sharding = first._sharding
        elif any(p is not None for p in ps):
            r._sharding = NamedSharding(mesh, P(*compiled))


def _placed_parts(x: Array) -> tuple[Any, ...]:
    ps: tuple[Any, ...] = x._sharding.spec.partitions
    return ps + (None,) * (x.ndim - len(ps))


def _compiled_spec(parts: tuple[Any, ...], mesh: Any) -> tuple[Any, ...]:
    """``parts`` as JAX names a compiled placement: without axes of size 1
    and trailing unsplit dimensions."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    out: list[Any] = []
    for p in parts:
        axes = tuple(a for a in (() if p is None else p if isinstance(p, tuple) else (p,))
                     if sizes[a] != 1)
        out.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _divides(mesh: Any, parts: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """Whether each dimension splits evenly over its mesh axes."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for p, n in zip(parts, shape):
        axes = () if p is None else p if isinstance(p, tuple) else (p,)
        if n % int(np.prod([sizes[a] for a in axes], dtype=np.int64)):
            return False
    return True


def _is_var(x: Any) -> bool:
    return type(x) is not Literal


def results_of(outs: Sequence[Dist], mesh: Any, geo: Geometry) -> list[Any]:
    """Eager results (Arrays, Refs) from per-device result Dists."""
    return [(to_ref if type(d.aval) is RefType else to_array)(
        d, _concrete_for(d.aval, mesh), geometry_of([d.aval], geo)) for d in outs]


def arrays_of(outs: Sequence[Dist], mesh: Any, geo: Geometry, placements: Sequence[Any]
              ) -> list[Any]:
    """``results_of`` for array results, each placed by the given placement
    (equal to the one its type gives: one made before, shared)."""
    return [to_array(d, _concrete_for(d.aval, mesh), geometry_of([d.aval], geo), p)
            for d, p in zip(outs, placements)]


hooks.eager_on_mesh = eager  # EvalTrace's path for operands or results over a mesh


def _check_device_assignment(mesh: Any, out_avals: Sequence[ArrayType]) -> None:
    """Results typed on a mesh need that many devices to run on: the
    operands' mesh, else the one in context (as JAX: a sharded result
    computed from unplaced operands outside ``set_mesh`` has one device)."""
    n = 1 if mesh.empty else mesh.size
    for a in out_avals:
        s = a.sharding
        if s is not None and not s.mesh.empty and s.mesh.size != n:
            kinds: dict[str, list[str]] = {}
            for name, kind in zip(s.mesh.axis_names, s.mesh.axis_types):
                kinds.setdefault(kind.name, []).append(repr(name))
            shown = ", ".join(f"{k}: ({', '.join(v)}{',' if len(v) == 1 else ''})"
                              for k, v in kinds.items())
            raise ValueError(f"Length of device assignment {n} is not equal to the size of the"
                             f" mesh {s.mesh.size} of aval {a.str_short(True)}({{{shown}}}). Please"
                             " enter your `jit` into a mesh context via `jax.set_mesh`.")


def _check_ordered_effects(mesh: Any, effects: Any) -> None:
    """A jitted program over more than one device cannot order its effects
    across devices, except ordered io_callbacks (which JAX orders per
    device): an ordered ``debug.print`` there is JAX's ValueError."""
    if mesh.empty or mesh.size <= 1:
        return
    unsupported = [e for e in ordered_effects(effects) if e is not ordered_io_effect]
    if unsupported:
        raise ValueError("The following ordered effects are not supported for more than 1 "
                         f"device: {unsupported}")


def _concrete_for(aval: ArrayType, mesh: Any) -> Any:
    """The concrete mesh of a result: the operands' one, or, for a result on
    another abstract mesh of the same size, those devices in that shape."""
    s = aval.sharding
    if s is None or s.mesh.empty or mesh.empty or (
            tuple(s.mesh.axis_names) == tuple(mesh.axis_names)
            and tuple(s.mesh.axis_sizes) == tuple(mesh.axis_sizes)):
        return mesh
    devices = np.asarray(list(mesh.devices.flat), dtype=object).reshape(s.mesh.axis_sizes)
    return Mesh(devices, s.mesh.axis_names, s.mesh.axis_types)


def concrete_mesh(args: Sequence[Any], params: dict[str, Any] | None = None) -> Any:
    """The operands' device mesh; when no operand has one, the mesh the
    equation names (a reshard to a NamedSharding runs on that sharding's
    devices, with or without a mesh in context), else the context's."""
    for a in args:
        s = getattr(a, "_sharding", None)
        if s is not None:
            return s.mesh
    named = None if params is None else params.get("concrete_mesh")
    return named if isinstance(named, Mesh) else get_concrete_mesh()


__all__ = ["Axes", "Bufs", "Dist", "Geometry", "all_gather", "all_reduce", "live_equations",
           "apply", "arrays_of", "assemble", "backend", "eager", "eval_jaxpr", "from_value",
           "gathered",
           "geometry", "geometry_of", "local_shape", "new_ref_blocks", "own_blocks",
           "parts_of", "reshard", "results_of", "run_jaxpr", "run_local",
           "shards_follow_type", "split_value", "to_ref", "uniform", "writers"]
