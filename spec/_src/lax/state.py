"""Ref primitives: ``new_ref``, ``empty_ref``, ``get``, ``swap``, ``addupdate``, ``freeze``,
``free_ref``.

At run time a ref is a NumPy buffer that the impls read and write in place:
an eager ``Ref`` hands its own buffer to the impls, so a jit call that writes
a ref argument (or a ref it closes over, which jit passes as an argument)
updates the caller's ref. ``get`` copies out, ``swap`` returns the old
contents and stores the new, ``addupdate`` adds in place, ``freeze`` copies
the final contents out as an immutable array. ``empty_ref`` makes a ref of a
given type with no initial value (zeros when a compiled program runs it; eager
evaluation has no rule, as in JAX), ``free_ref`` ends a ref's life (nothing to
release here; dead-code elimination keeps it, as JAX's does).

Staged, ``swap`` and ``addupdate`` record a write effect on their ref
operand (a call records the writes of its body to its ref operands), so
dead-code elimination keeps them; ``get``, ``new_ref`` and ``freeze`` have
none and go when unused, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.denormals import flush, flush_all, flushing

from spec._src.core import pretty as pp
from spec._src.core import tree_util
from spec._src.core.state_types import (
    NDIndexer,
    RefEffect,
    RefType,
    Slice,
    numpy_index,
    ref_type_of,
    transforms_repr,
    unflatten_transforms,
)
from spec._src.interpreters.ad import RefAccum, instantiate_tangent, tangent_side
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, instantiate, linear_jvp
from spec._src.core.interpreter import (
    Eqn,
    Literal,
    PpContext,
    Var,
    canonical_aval_of,
    pp_eqn_default,
    pp_vars,
)
from spec._src.lax import state_batching as _sb
from spec._src.lax import sharding_kit as SK
from spec._src.lax.indexing import _with_axis_types
from spec._src.core.registry import declare, declaring, fail, require
from spec._src.lax.elementwise import add, clamp, lt, mul, select
from spec._src.lax.shaping import (
    bind_reduce_sum,
    broadcast_in_dim,
    convert_element_type,
    full,
    full_like,
    iota,
    reshape,
)
from spec._src.core.effects import in_compiled_program
from spec._src.core.errors import ShardingTypeError
from spec._src.core.sharding import AxisType, NamedSharding, P, entry_of
from spec._src.core.types import FLOAT0, ArrayType, is_int
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.core.state_types import indexer_tree
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.discharge import Discharged, discharge_state
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.interpreters.batching import moveaxis
from spec._src.lowering import effects as LE
from spec._src.lowering.emitter import LoweringContext

# ------------------------------------------------------------------ typing


def _check_ref(prim: str, ref: ArrayType) -> RefType:
    if type(ref) is not RefType:
        fail(prim, "C1", f"`{prim}` must be called on `Ref` types: {ref}", ValueError)
    assert isinstance(ref, RefType)
    return ref


def _transform_avals(prim: str, ref: RefType, idx: Sequence[ArrayType], tree: Any
                     ) -> tuple[tuple[NDIndexer, ...], tuple[int, ...]]:
    """The indexers with their operands' types, and the indexed shape."""
    try:
        transforms = unflatten_transforms(tree, idx)
    except (ValueError, TypeError) as err:
        fail(prim, "C2", f"the index operands {list(map(str, idx))} do not fit the index "
             f"structure {tree}: {err}")
    shape = ref.shape
    for t in transforms:
        require(isinstance(t, NDIndexer), prim, "C2", f"unknown ref transform {t!r}")
        require(t.shape == shape, prim, "C2",
                f"the indexer is for shape {t.shape}, the ref has shape {shape}")
        for entry, dim in zip(t.indices, t.shape):
            if isinstance(entry, Slice):
                _check_slice(prim, entry, dim)
                continue
            require(isinstance(entry, ArrayType) and is_int(entry.dtype)
                    and type(entry) is not RefType, prim, "C2",
                    f"ref indexers must be integers, got {entry}")
            require(entry.shape == t.int_indexer_shape or not entry.shape, prim, "C2",
                    f"integer indexer of shape {entry.shape}, expected "
                    f"{t.int_indexer_shape}")
        if shape == ref.shape:  # (JAX checks against the type being indexed: the ref's)
            _check_sharded_index(prim, _split_parts(ref), t)
        shape = t.result_shape()
    return transforms, shape


# ------------------------------------------------------- refs over a mesh
#
# (SPEC.md 17, "Refs over a mesh".) A ref's type carries the sharding of its
# contents. M2/M3 are checked with the indexer (before the shape checks of
# the written value, as JAX); the sharding sections give M1, M4, M5.


def _split_parts(aval: ArrayType) -> tuple[Any, ...]:
    """Per dimension, the partition entry of a type (None where unsplit)."""
    s = aval.sharding
    parts = () if s is None else tuple(s.spec.partitions)
    return parts + (None,) * (aval.ndim - len(parts))


def _check_sharded_index(prim: str, parts: tuple[Any, ...], t: NDIndexer) -> None:
    """M2: a ref split over mesh axes is indexed by slices only (a result of
    the ref's rank, so that it keeps the ref's partitions); M3: each split
    dimension is sliced whole."""
    if all(p is None for p in parts):
        return
    if t.int_indexer_shape or any(t.is_int):
        raise TypeError("sharded ref (array reference) can only be indexed by slices, not "
                        f"integers ({prim} M2)")
    for axis, (entry, dim, p) in enumerate(zip(t.indices, t.shape, parts)):
        if p is None or (not entry.is_dynamic_start and entry.start == 0 and entry.size == dim
                         and entry.stride == 1):
            continue
        raise ValueError(
            "sharded ref (array reference) can only be sliced along unsharded axes, but ref of "
            f"shape {t.shape} was sliced on axis {axis}, which is sharded like {p} ({prim} M3)")


def _indexed_sharding(r: RefType, ndim: int, others: Sequence[ArrayType]) -> NamedSharding:
    """M4: the sharding of an indexed part of ``r`` (a read, the old value of
    a write, what addupdate adds): the ref's, its partitions cut or padded to
    the part's rank (only an unsplit ref changes rank: M2). A ref without a
    sharding counts as replicated over the operands' mesh."""
    s = r.sharding
    if s is None:
        return NamedSharding(SK.mesh_of([r, *others]), P(*(None,) * ndim))
    parts = _split_parts(r)
    parts = parts[:ndim] + (None,) * (ndim - len(parts))
    spec = s.spec
    return NamedSharding(s.mesh, P(*parts, unreduced=spec.unreduced, reduced=spec.reduced,
                                   unreduced_kind=spec.unreduced_kind))


def _normalized(s: NamedSharding, ndim: int) -> NamedSharding:
    return NamedSharding(s.mesh, s.spec._normalized_spec_for_aval(ndim))


def _new_ref_sharding(x: ArrayType, **params: Any) -> list[NamedSharding | None]:
    """M1: the ref's contents keep the initial value's sharding."""
    return [x.sharding]


def _get_sharding(ref: ArrayType, *idx: ArrayType, tree: Any) -> list[NamedSharding | None]:
    r = _check_ref("get", ref)
    _, shape = _transform_avals("get", r, idx, tree)
    return [_indexed_sharding(r, len(shape), idx)]


def _swap_sharding(ref: ArrayType, val: ArrayType, *idx: ArrayType, tree: Any
                   ) -> list[NamedSharding | None]:
    """The old value has the ref's sharding (M4); the written value may have
    any: how it reaches the ref's layout is decided when the write runs
    (SPEC.md 17, "Refs over a mesh", run-time rules)."""
    r = _check_ref("swap", ref)
    _, shape = _transform_avals("swap", r, idx, tree)
    return [_indexed_sharding(r, len(shape), [val, *idx])]


def _addupdate_sharding(ref: ArrayType, val: ArrayType, *idx: ArrayType, tree: Any
                        ) -> list[NamedSharding | None]:
    """M5: the added value is sharded as the indexed part of the ref, when
    the ref's or the value's mesh has an explicit axis (ValueError, JAX's
    text). A value without a sharding counts as replicated."""
    r = _check_ref("addupdate", ref)
    _, shape = _transform_avals("addupdate", r, idx, tree)
    want = _normalized(_indexed_sharding(r, len(shape), [val, *idx]), val.ndim)
    have = val.sharding
    if have is None:
        have = NamedSharding(want.mesh, P(*(None,) * val.ndim))
    have = _normalized(have, val.ndim)
    explicit = AxisType.Explicit in tuple(want.mesh.axis_types) + tuple(have.mesh.axis_types)
    if explicit and (want.mesh != have.mesh or want.spec != have.spec):
        shown = r.sharding if r.sharding is not None else want
        raise ValueError(f"Invalid sharding for `addupdate`. Ref sharding: "
                         f"{_normalized(shown, r.ndim)!r}. Value sharding: {have!r}. "
                         "(addupdate M5)")
    return []


def _freeze_sharding(ref: ArrayType) -> list[NamedSharding | None]:
    return [_check_ref("freeze", ref).sharding]


def _check_slice(prim: str, s: Slice, dim: int) -> None:
    """A static slice lies in range; a dynamic one has an integer scalar
    start and fits (its start is clamped at run time)."""
    span = s.stride * (s.size - 1) + 1 if s.size else 0
    require(s.size >= 0 and s.stride >= 1 and span <= dim, prim, "C2",
            f"slice {s!r} out of range of {dim}")
    if s.is_dynamic_start:
        start = s.start
        require(isinstance(start, ArrayType) and is_int(start.dtype) and not start.shape
                and type(start) is not RefType, prim, "C2",
                f"a dynamic slice start must be an integer scalar, got {start}")
        return
    require(0 <= s.start and (s.size == 0 or s.start + span - 1 < dim), prim, "C2",
            f"slice {s!r} out of range of {dim}")


def _new_ref_type(x: ArrayType, *, kind: Any, memory_space: Any, pin: bool
                  ) -> list[ArrayType]:
    return [ref_type_of(x)]


def _get_type(ref: ArrayType, *idx: ArrayType, tree: Any) -> list[ArrayType]:
    r = _check_ref("get", ref)
    _, shape = _transform_avals("get", r, idx, tree)
    return [ArrayType(shape, r.dtype)]


def _check_value(prim: str, r: RefType, val: ArrayType, idx: Sequence[ArrayType], tree: Any
                 ) -> tuple[int, ...]:
    transforms, shape = _transform_avals(prim, r, idx, tree)
    require(type(val) is not RefType, prim, "C3", f"the value written is a Ref {val}",
            ValueError)
    # JAX's messages, the constraint cited after them.
    if val.shape != shape:
        raise ValueError(
            f"Invalid shape for `{prim}`. Ref shape: {r.shape}. Expected shape: {shape}. Value "
            f"shape: {val.shape}. Transforms: {transforms_repr(transforms)}. ({prim} C3)")
    if val.dtype != r.dtype:
        what = "dtype" if prim == "swap" else "shape"  # (JAX's addupdate wording)
        raise ValueError(f"Invalid dtype for `{prim}`. Ref dtype: {r.dtype}. Value {what}: "
                         f"{val.dtype}. ({prim} C4)")
    return shape


def _swap_type(ref: ArrayType, val: ArrayType, *idx: ArrayType, tree: Any) -> list[ArrayType]:
    r = _check_ref("swap", ref)
    return [ArrayType(_check_value("swap", r, val, idx, tree), r.dtype)]


def _addupdate_type(ref: ArrayType, val: ArrayType, *idx: ArrayType, tree: Any
                    ) -> list[ArrayType]:
    r = _check_ref("addupdate", ref)
    _check_value("addupdate", r, val, idx, tree)
    return []


def _freeze_type(ref: ArrayType) -> list[ArrayType]:
    r = _check_ref("freeze", ref)
    return [r.inner_aval]


# -------------------------------------------------------------------- impls


def _index(idx: Sequence[np.ndarray], tree: Any) -> Any:
    transforms = unflatten_transforms(tree, idx)
    return numpy_index(transforms[0]) if transforms else ...


def _has_int_arrays(idx: Sequence[np.ndarray]) -> bool:
    return any(np.ndim(i) for i in idx)


def _new_ref_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    return [np.array(x, copy=True)]


def _get_impl(buf: np.ndarray, *idx: np.ndarray, tree: Any) -> list[np.ndarray]:
    return [np.array(buf[_index(idx, tree)], copy=True)]


def _swap_impl(buf: np.ndarray, val: np.ndarray, *idx: np.ndarray, tree: Any
               ) -> list[np.ndarray]:
    where = _index(idx, tree)
    old = np.array(buf[where], copy=True)
    buf[where] = val
    return [old]


def _addupdate_impl(buf: np.ndarray, val: np.ndarray, *idx: np.ndarray, tree: Any
                    ) -> list[np.ndarray]:
    where = _index(idx, tree)
    val = flush(val) if flushing() else val  # an addition: XLA CPU flushes (SPEC 8)
    if _has_int_arrays(idx):
        np.add.at(buf, where, val)  # repeated indices accumulate
    else:
        buf[where] = np.asarray(flush_all([buf[where]])[0] + val, dtype=buf.dtype)
    if flushing():
        buf[where] = flush(np.asarray(buf[where]))
    return []


def _freeze_impl(buf: np.ndarray) -> list[np.ndarray]:
    return [np.array(buf, copy=True)]


# ------------------------------------------------------------------ effects


def _write_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset({RefEffect("write", atoms[0])})


def _accum_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset({RefEffect("accum", atoms[0])})


# --------------------------------------------------------------- printing


def _pp_slice(s: Slice, dim: int, ctx: PpContext) -> str:
    if s.is_dynamic_start:  # JAX's form: ``c:c+1``
        start_text = _pp_index_atom(s.start, ctx)
        return f"{start_text}:{start_text}+{s.size}"
    start = "" if s.start == 0 else str(s.start)
    end = s.start + s.size
    return f"{start}:{'' if end == dim else end}"


def _pp_index_atom(a: Any, ctx: PpContext) -> str:
    if isinstance(a, Literal):
        return str(np.asarray(a.val).item())  # literals print without their type here
    return ctx.atom_text(a)


def _pp_ref(ref: Any, idx: Sequence[Any], tree: Any, ctx: PpContext) -> pp.Doc:
    transforms = unflatten_transforms(tree, idx)
    parts = [ctx.atom_text(ref)]
    if not transforms:
        parts.append("[...]")
    for t in transforms:
        entries = [_pp_slice(e, d, ctx) if isinstance(e, Slice) else _pp_index_atom(e, ctx)
                   for e, d in zip(t.indices, t.shape)]
        parts.append("[" + ",".join(entries) + "]")
    return pp.text("".join(parts))


def _pp_get(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    ref, *idx = eqn.invars
    lhs = pp_vars(eqn.outvars, ctx, print_shapes=True)
    return pp.concat([lhs, pp.text(" <- "), _pp_ref(ref, idx, eqn.params["tree"], ctx)])


def _pp_swap(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    ref, val, *idx = eqn.invars
    target = _pp_ref(ref, idx, eqn.params["tree"], ctx)
    out = eqn.outvars[0]
    if ctx.atom_text(out) == "_":  # a plain write: ``x[i] <- v``
        return pp.concat([target, pp.text(" <- "), pp.text(ctx.atom_text(val))])
    lhs = pp_vars([out], ctx, print_shapes=True)
    return pp.concat([lhs, pp.text(", "), target, pp.text(" <- "), target, pp.text(", "),
                      pp.text(ctx.atom_text(val))])


def _pp_addupdate(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    ref, val, *idx = eqn.invars
    return pp.concat([_pp_ref(ref, idx, eqn.params["tree"], ctx), pp.text(" += "),
                      pp.text(ctx.atom_text(val))])


def _pp_new_ref(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    return pp_eqn_default(eqn, ctx)


# ------------------------------------------------------------------- autodiff
#
# A ref's tangent is a ref of the tangent type, created with it: ``new_ref``
# makes a tangent ref even when its operand has no tangent (zeros), so that
# a differentiated value written later has somewhere to go. Reads read the
# tangent ref, writes write it. A ref without a tangent (one the
# differentiated function does not own: a plumbing argument) can be read but
# not written with a differentiated value (JAX's ``Exception``). Integer refs
# have no tangent refs (float0 carries nothing).
#
# Transposed, the cotangent of a ref is a ref too (``spec._src.interpreters.ad.RefAccum``):
# a read's cotangent is added into it, a write takes the written value's
# cotangent out of it (leaving the old value's cotangent in its place), an
# add-update reads the cotangent of its addend from it, ``new_ref`` is
# transposed into freezing it, ``freeze`` into adding into it.


def _nondiff_write(prim: str, ref: Any) -> Exception:
    op = "a set/swap" if prim == "swap" else "an addupdate"
    return Exception(
        f"performing {op} operation with a differentiated value on a non-differentiated "
        f"array reference of type {canonical_aval_of(ref)}. Move the array reference to be "
        "an argument of the differentiated function?")


def _new_ref_jvp(primals: list[Any], tangents: list[Any], **params: Any
                 ) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    ref = new_ref_p.bind(x, **params)
    t_aval = canonical_aval_of(ref).tangent_type()
    if t_aval.dtype == FLOAT0:
        return [ref], [Zero(t_aval)]
    with tangent_side():
        return [ref], [new_ref_p.bind(instantiate(t), **params)]


def _get_jvp(primals: list[Any], tangents: list[Any], *, tree: Any
             ) -> tuple[list[Any], list[Any]]:
    ref, *idx = primals
    out = get_p.bind(ref, *idx, tree=tree)
    if type(tangents[0]) is Zero:
        return [out], [Zero(canonical_aval_of(out).tangent_type())]
    return [out], [get_p.bind(tangents[0], *idx, tree=tree)]


def _swap_jvp(primals: list[Any], tangents: list[Any], *, tree: Any
              ) -> tuple[list[Any], list[Any]]:
    ref, x, *idx = primals
    ref_t, x_t = tangents[:2]
    old = swap_p.bind(ref, x, *idx, tree=tree)
    if type(ref_t) is Zero:
        if type(x_t) is not Zero:
            raise _nondiff_write("swap", ref)
        return [old], [Zero(canonical_aval_of(old).tangent_type())]
    return [old], [swap_p.bind(ref_t, instantiate_tangent(x_t), *idx, tree=tree)]


def _addupdate_jvp(primals: list[Any], tangents: list[Any], *, tree: Any
                   ) -> tuple[list[Any], list[Any]]:
    ref, x, *idx = primals
    ref_t, x_t = tangents[:2]
    addupdate_p.bind(ref, x, *idx, tree=tree)
    if type(ref_t) is Zero:
        if type(x_t) is not Zero:
            raise _nondiff_write("addupdate", ref)
        return [], []
    addupdate_p.bind(ref_t, instantiate_tangent(x_t), *idx, tree=tree)
    return [], []


def _freeze_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    (ref,), (ref_t,) = primals, tangents
    out = freeze_p.bind(ref)
    if type(ref_t) is Zero:
        return [out], [Zero(canonical_aval_of(out).tangent_type())]
    return [out], [freeze_p.bind(ref_t)]


def _no_cts(n: int) -> list[Any]:
    return [None] * n


def _new_ref_transpose(acc: RefAccum, x: Any, **params: Any) -> list[Any]:
    ct = acc.freeze()  # (also when the initial value is a constant, as JAX)
    return [ct if type(x) is UndefinedPrimal else None]


def _get_transpose(ct: Any, acc: RefAccum, *idx: Any, tree: Any) -> list[Any]:
    if type(ct) is not Zero:
        if unflatten_transforms(tree, idx):
            addupdate_p.bind(acc.inst(), ct, *idx, tree=tree)
        else:
            acc.accum(ct)
    return _no_cts(1 + len(idx))


def _swap_transpose(ct: Any, acc: RefAccum, x: Any, *idx: Any, tree: Any) -> list[Any]:
    if acc.ref is None and type(ct) is Zero:
        return _no_cts(2 + len(idx))  # nothing accumulated, nothing to take out
    if acc.ref is None:  # the written value's cotangent is zero
        swap_p.bind(acc.inst(), instantiate(ct), *idx, tree=tree)
        return _no_cts(2 + len(idx))
    x_ct = swap_p.bind(acc.ref, instantiate(ct), *idx, tree=tree)
    return [None, x_ct if type(x) is UndefinedPrimal else None, *_no_cts(len(idx))]


def _addupdate_transpose(cts: list[Any], acc: RefAccum, x: Any, *idx: Any, tree: Any
                         ) -> list[Any]:
    if acc.ref is None or type(x) is not UndefinedPrimal:
        return _no_cts(2 + len(idx))
    return [None, get_p.bind(acc.ref, *idx, tree=tree), *_no_cts(len(idx))]


def add_into_slices(acc: RefAccum, ct: Any, starts: Sequence[Any], sizes: Sequence[int],
                    strides: Sequence[int] | None = None) -> None:
    """``ref[starts:starts+sizes:strides] += ct`` into a cotangent ref: the
    transposes of slicing add only where they read (static starts are ints,
    dynamic ones scalar operands)."""
    ref = acc.inst()
    shape = canonical_aval_of(ref).shape
    steps = strides if strides is not None else (1,) * len(shape)
    slices = tuple(Slice(s if isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                         else s, int(n), int(k)) for s, n, k in zip(starts, sizes, steps))
    indexer = NDIndexer(slices, tuple(shape), ())
    leaves, tree = tree_util.tree_flatten((indexer,))
    addupdate_p.bind(ref, ct, *leaves, tree=tree)


def _freeze_transpose(ct: Any, acc: RefAccum) -> list[Any]:
    acc.accum(ct)
    return [None]


# -------------------------------------------------------------- broadcast_to
#
# JAX's state primitive that brings a ref's integer indexers to their common
# shape (NumPy's broadcasting: the operand's dimensions align with the
# trailing ones of ``shape``, each equal or 1).


def _broadcast_to_type(x: ArrayType, *, shape: tuple[int, ...]) -> list[ArrayType]:
    lead = len(shape) - x.ndim
    require(lead >= 0 and all(d in (1, n) for d, n in zip(x.shape, shape[lead:])),
            "broadcast_to", "C1", f"cannot broadcast an operand of shape {x.shape} to {shape}",
            ValueError)
    return [ArrayType(tuple(shape), x.dtype)]  # (not weak: JAX's abstract eval)


def _broadcast_to_impl(x: np.ndarray, *, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.array(np.broadcast_to(x, shape), copy=True)]


def _broadcast_to_transpose(ct: Any, x: UndefinedPrimal, *, shape: tuple[int, ...]
                            ) -> list[Any]:
    """Sum the cotangent over the leading dimensions added and the size-1
    dimensions stretched, back to the operand's shape."""
    if type(ct) is Zero:
        return [Zero(x.aval.ct_type())]
    lead = len(shape) - x.aval.ndim
    stretched = [lead + i for i, (d, n) in enumerate(zip(x.aval.shape, shape[lead:]))
                 if d == 1 and n != 1]
    summed = bind_reduce_sum(ct, (*range(lead), *stretched))
    return [reshape(summed, x.aval.shape)]


def _broadcast_to_batch(axis: Any, args: list[Any], dims: list[Any], *,
                        shape: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    """The batch dimension leads; the operand's own dimensions align with the
    trailing ones (a broadcast_in_dim, which stretches size-1 dimensions)."""
    (x,), (dim,) = args, dims
    x = moveaxis(x, dim, 0)
    ndim = canonical_aval_of(x).ndim - 1
    lead = len(shape) - ndim
    out_shape = (axis.size, *shape)
    return [broadcast_in_dim(x, out_shape, (0, *range(1 + lead, 1 + len(shape))))], [0]


def _broadcast_to_parts(mesh: Any, x: ArrayType, *, shape: tuple[int, ...]) -> list[Any]:
    """Dimensions taken from the operand unstretched keep its partitions; new
    and stretched ones are replicated."""
    lead = len(shape) - x.ndim
    own = [p if d == n else None for p, d, n in zip(SK.parts(x), x.shape, shape[lead:])]
    return [(*(None,) * lead, *own)]


def _broadcast_to_lowering(ctx: LoweringContext, operands: Sequence[str],
                           in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                           shape: tuple[int, ...]) -> list[str]:
    """NumPy's broadcast: the operand's dimensions are the trailing ones
    (size 1 stretches)."""
    lead = len(shape) - in_avals[0].ndim
    return [ctx.broadcast(operands[0], in_avals[0], out_avals[0],
                          range(lead, len(shape)))]


broadcast_to_p = declare(
    "broadcast_to", typing=_broadcast_to_type, impl=_broadcast_to_impl, jvp=linear_jvp(),
    lowering=_broadcast_to_lowering,
    transpose=_broadcast_to_transpose, batch=_broadcast_to_batch,
    sharding=SK.section("broadcast_to", _broadcast_to_parts, SK.linear_unary),
    doc="Broadcast to a shape, NumPy's way (a ref's integer indexers).",
    per_device=from_primitive(lambda p: PD.localized(p, PD.shape_fix("shape"))))


# ------------------------------------------------ checkpoint partial evaluation
#
# Under jax.checkpoint ref operations are never saved: on known operands they
# run on both sides (the staged side rematerialises them), on an unknown ref
# only on the staged side; a known ref written with unknown values is JAX's
# NotImplementedError (the ref would have to be both).

_REMAT_MUTATION = (
    "Mutating a reference with unknown/differentiated values is not supported.\n"
    "If this occurred under `jax.checkpoint` and `jax.config.jax_remat3 == False`, consider "
    "one of the following options:\n\n"
    "  * Enabling `jax_remat3` via `jax.config.update('jax_remat3', True)`.\n"
    "  * Creating the Ref outside the function being rematerialized and passing it as an "
    "input.\n"
    "  * Creating the Ref in a data-dependent way from a value being differentiated, "
    "e.g.:\n\n"
    "      ref = jax.new_ref(x * 0.0)  # instead of zeros_like(x)")


def _not_instantiated(atoms: Sequence[Any], inst: Sequence[bool]) -> list[Any]:
    return [a for a, i in zip(atoms, inst) if not i and isinstance(a, Var)]


def _new_ref_remat(policy: Any, unks: list[bool], inst: list[bool], eqn: Eqn) -> Any:
    res = _not_instantiated(eqn.invars, inst)
    if unks[0]:
        return None, eqn, [True], [True], res
    return eqn, eqn, [False], [True], res  # made on both sides


def _state_op_remat(policy: Any, unks: list[bool], inst: list[bool], eqn: Eqn) -> Any:
    ref_unknown, *values_unknown = unks
    res = _not_instantiated(eqn.invars[1:], inst[1:])
    n = len(eqn.outvars)
    if ref_unknown:
        return None, eqn, [True] * n, [True] * n, res
    if any(values_unknown):
        raise NotImplementedError(_REMAT_MUTATION)
    return eqn, eqn, [False] * n, [True] * n, res  # run on both sides


# ================================================================ discharge
#
# Discharging turns a program with refs into a pure one: each ref becomes the
# value it holds, threaded through the program. ``get`` reads the value,
# ``swap`` and ``addupdate`` compute the updated value (``.at[].set`` /
# ``.at[].add``), ``freeze`` and ``new_ref`` are the value itself. Integer
# indexers are first brought into range as the impls do (negative ones count
# from the end; the rest clamp), so that discharged and direct evaluation
# agree everywhere.


def _numpy_like_index(transforms: tuple[NDIndexer, ...]) -> Any:
    """The transforms (with operand values as leaves) as a jnp index, integer
    indexers brought into range."""
    if not transforms:
        return ...
    out: list[Any] = []
    indices = transforms[0].indices
    for entry, dim in zip(indices, transforms[0].shape):
        if isinstance(entry, Slice) and entry.is_dynamic_start:
            out.append(_dynamic_slice_positions(entry, dim, indices))
        elif isinstance(entry, Slice):
            stop = entry.start + entry.stride * (entry.size - 1) + 1 if entry.size else 0
            out.append(slice(entry.start, stop, entry.stride))
        else:
            zero = full_like(entry, 0)
            wrapped = select(lt(entry, zero), add(entry, full_like(entry, dim)),
                                 entry)
            out.append(clamp(zero, wrapped, full_like(entry, max(dim - 1, 0))))
    return tuple(out)


def _dynamic_slice_positions(s: Slice, dim: int, indices: Sequence[Any]) -> Any:
    """A dynamic slice as the integer array of the positions it covers (its
    start clamped as the impls do): the same elements, and, as the only
    array indexer, the same place in the result."""
    if sum(1 for e in indices if not isinstance(e, Slice) or e.is_dynamic_start) > 1:
        raise NotImplementedError("discharge_state: a dynamic ref slice together with other "
                                  "integer indexers is not supported")
    start = convert_element_type(s.start, np.dtype("int32"))
    span = s.stride * (s.size - 1) + 1 if s.size else 0
    first = clamp(full_like(start, 0), start, full_like(start, dim - span))
    steps = mul(iota(np.dtype("int32"), s.size),
                    full((s.size,), s.stride, np.dtype("int32")))
    return add(broadcast_in_dim(first, (s.size,), ()), steps)


def _as_value(v: Any, dtype: Any) -> Any:
    """A written value as the ref's (strong) dtype."""
    return convert_element_type(v, dtype) if canonical_aval_of(v).weak_type else v


def _discharge_new_ref(ins: list[Any], atoms: list[Any], params: dict[str, Any]
                       ) -> Discharged:
    return [_as_value(ins[0], canonical_aval_of(ins[0]).dtype)], []


def _discharge_get(ins: list[Any], atoms: list[Any], params: dict[str, Any]) -> Discharged:
    value, *idx = ins
    index = _numpy_like_index(unflatten_transforms(params["tree"], idx))
    return [value if index is ... else value[index]], []


def _discharge_swap(ins: list[Any], atoms: list[Any], params: dict[str, Any]) -> Discharged:
    value, new, *idx = ins
    new = _as_value(new, atoms[0].aval.dtype)
    index = _numpy_like_index(unflatten_transforms(params["tree"], idx))
    if index is ...:
        return [value], [(0, new)]
    return [value[index]], [(0, value.at[index].set(new))]


def _discharge_addupdate(ins: list[Any], atoms: list[Any], params: dict[str, Any]
                         ) -> Discharged:
    value, new, *idx = ins
    new = _as_value(new, atoms[0].aval.dtype)
    index = _numpy_like_index(unflatten_transforms(params["tree"], idx))
    if index is ...:
        return [], [(0, add(value, new))]
    return [], [(0, value.at[index].add(new))]


def _discharge_freeze(ins: list[Any], atoms: list[Any], params: dict[str, Any]) -> Discharged:
    return [ins[0]], []


# ---------------------------------------------------- per-device programs
#
# (SPEC.md 17, "Refs over a mesh".) A ref's Dist holds views of one buffer:
# each device's block of it, devices holding the same block viewing the same
# memory. Reads copy every device's block out; writes go through one device
# per block (``S.writers``), after every device has read what a swap
# returns. Indexers into a split ref are slices, whole on split dims (M2,
# M3): each device applies them to its block with the split dims' sizes made
# local. Before anything runs, the ref equations are checked as JAX checks
# them when it compiles them (``lowering_check``, below).


# JAX compiles a ref program by turning each ref operation into array
# operations on the ref's value ("discharging" it): a read through static
# slices becomes ``slice``, one through unstrided slices and integer scalars
# ``dynamic_slice``, a write ``dynamic_update_slice``, anything else (strided
# writes, integer arrays) ``gather``/``scatter`` through ``jnp`` indexing. The
# sharding rules of those operations then refuse some layouts that typing
# accepted; spec raises the same errors when the operation runs (R1-R3), and
# before a call's body runs (``PD.check_ref_equations``).


def lowering_check(prim: str, ref: ArrayType, val: ArrayType | None,
                   idx: Sequence[ArrayType], tree: Any) -> None:
    """Raise what JAX's compiler raises for the array operation the ref
    operation ``prim`` lowers to (R1-R3 above); nothing when it accepts it."""
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


def _split(a: ArrayType) -> bool:
    return any(S.parts_of(a))


def _sharding_of(like: ArrayType, parts: Sequence[tuple[str, ...]]) -> Any:
    return NamedSharding(SK.mesh_of([like]), P(*(entry_of(p) for p in parts)))


def _check_update(ref: ArrayType, val: ArrayType, t: Any) -> None:
    """R2: a write through ``dynamic_update_slice`` needs the value (with
    the integer-indexed dims put back as size 1) split as the ref."""
    assert isinstance(ref, RefType)
    vparts = iter(S.parts_of(val))
    parts = [next(vparts) if isinstance(e, Slice) else () for e in t.indices]
    shape = tuple(e.size if isinstance(e, Slice) else 1 for e in t.indices)
    mesh = SK.mesh_of([ref, val])
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


def _check_get_equation(in_avals: Sequence[ArrayType], params: dict[str, Any]) -> None:
    ref, *idx = in_avals
    lowering_check("get", ref, None, idx, params["tree"])


def _write_equation_check(prim: str) -> PD.RefEquationCheck:
    def check(in_avals: Sequence[ArrayType], params: dict[str, Any]) -> None:
        ref, val, *idx = in_avals
        lowering_check(prim, ref, val, idx, params["tree"])
    return check


PD.REF_EQUATION_CHECKS.update(get=_check_get_equation, swap=_write_equation_check("swap"),
                              addupdate=_write_equation_check("addupdate"))


def _local_tree(ref: ArrayType, tree: Any, leaves: Sequence[Any], geo: Geometry) -> Any:
    """The ``tree`` param for each device's block of ``ref``."""
    parts = S.parts_of(ref)
    if not any(parts):
        return tree
    transforms = unflatten_transforms(tree, leaves)
    if not transforms:
        return tree
    (t,) = transforms
    local = S.local_shape(ref, geo)
    indices = tuple(Slice(0, n, 1) if p else e for e, n, p in zip(t.indices, local, parts))
    return indexer_tree(NDIndexer(indices, local, t.int_indexer_shape))


def _replicated(d: Dist, geo: Geometry) -> Dist:
    return d if S.is_plain(d.aval) else S.reshard(d, d.aval.update(sharding=None), geo)


def _to_layout(d: Dist, sharding: Any, geo: Geometry) -> Dist:
    """A written value moved to the layout of the part of the ref it goes to."""
    target = d.aval.update(sharding=sharding)
    if S.parts_of(target) == S.parts_of(d.aval) and \
            S.unreduced_of(target) == S.unreduced_of(d.aval):
        return d
    return S.reshard(d, target, geo)


def _write(prim: Primitive, geo: Geometry, ref: Dist, val: Dist, idx: list[Dist],
           tree: Any) -> None:
    for k in S.writers(ref.aval, geo):
        prim.impl(S.held(ref.bufs[k]), S.held(val.bufs[k]), *[S.held(i.bufs[k]) for i in idx],
                  tree=tree)


def _new_ref_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                     **params: Any) -> list[Dist]:
    (x,), (out,) = args, out_avals
    S.check_ref_layout(out, geo)
    x = _to_layout(x, out.sharding, geo)
    if out.vma and not S.unreduced_of(out):
        # Inside shard_map the value differs per device: each device's ref starts
        # from its own block.
        return [Dist(out, S.own_blocks(x, out, geo))]
    whole = np.array(S.assemble(x, geo), copy=True)  # (the ref's own buffer)
    return [Dist(out, S.new_ref_blocks(whole, out, geo))]


def _get_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, tree: Any
                 ) -> list[Dist]:
    ref, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("get", ref.aval, None, [i.aval for i in idx], tree)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    return S.run_local(get_p, geo, [ref, *idx], out_avals, {"tree": local})


def _swap_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, tree: Any
                  ) -> list[Dist]:
    ref, val, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("swap", ref.aval, val.aval, [i.aval for i in idx], tree)
    val = _to_layout(val, out_avals[0].sharding, geo)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    old = S.run_local(get_p, geo, [ref, *idx], out_avals, {"tree": local})
    _write(swap_p, geo, ref, val, idx, local)
    return old


def _addupdate_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                       tree: Any) -> list[Dist]:
    ref, val, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("addupdate", ref.aval, val.aval, [i.aval for i in idx], tree)
    assert isinstance(ref.aval, RefType)
    val = _to_layout(val, _indexed_sharding(ref.aval, val.aval.ndim, []), geo)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    _write(addupdate_p, geo, ref, val, idx, local)
    return []


def _freeze_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType]
                    ) -> list[Dist]:
    S.check_ref_layout(args[0].aval, geo)
    return S.run_local(freeze_p, geo, args, out_avals, {})


# ------------------------------------------------------ empty_ref, free_ref
#
# ``empty_ref`` has no operand: its ``ty`` param is the contents' type (a weak
# type dropped in the ref's, as ``new_ref``). ``free_ref`` takes any operand
# (JAX types it without a check) and has no result.


def _empty_ref_type(*, ty: ArrayType, memory_space: Any, pin: bool) -> list[ArrayType]:
    return [ref_type_of(ty)]


def _empty_ref_impl(*, ty: ArrayType, memory_space: Any, pin: bool) -> list[np.ndarray]:
    # The contents are unspecified; XLA CPU gives zeros, and so does spec.
    return [np.zeros(ty.shape, ty.dtype)]


class _EmptyRefPrimitive(Primitive):
    """Eager evaluation has no rule in JAX (only a compiled program makes an
    empty ref): the same NotImplementedError outside a compiled run."""

    evaluates_eagerly = True

    def evaluate_eagerly(self, trace: Any, args: Sequence[Any], params: dict[str, Any]
                         ) -> list[Any] | None:
        if not in_compiled_program():
            raise NotImplementedError("Evaluation rule for 'empty_ref' not implemented")
        return None


def _empty_ref_jvp(primals: list[Any], tangents: list[Any], *, ty: ArrayType,
                   memory_space: Any, pin: bool) -> tuple[list[Any], list[Any]]:
    """The tangent of an empty ref is an empty ref of the tangent type."""
    ref = empty_ref_p.bind(ty=ty, memory_space=memory_space, pin=pin)
    t_aval = ty.tangent_type()
    if t_aval.dtype == FLOAT0:
        return [ref], [Zero(ref_type_of(t_aval))]
    with tangent_side():
        return [ref], [empty_ref_p.bind(ty=t_aval, memory_space=memory_space, pin=pin)]


def _empty_ref_transpose(acc: RefAccum, **params: Any) -> list[Any]:
    return []  # no operand: what was accumulated into the ref flows nowhere


def _empty_ref_remat(policy: Any, unks: list[bool], inst: list[bool], eqn: Eqn) -> Any:
    return eqn, eqn, [False], [True], []  # made on both sides, as new_ref of a known value


def _discharge_empty_ref(ins: list[Any], atoms: list[Any], params: dict[str, Any]
                         ) -> Discharged:
    ty: ArrayType = params["ty"]
    return [full(ty.shape, 0, ty.dtype)], []


def _empty_ref_sharding(*, ty: ArrayType, memory_space: Any, pin: bool
                        ) -> list[NamedSharding | None]:
    return [ty.sharding]


def _empty_ref_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                       **params: Any) -> list[Dist]:
    (out,) = out_avals
    S.check_ref_layout(out, geo)
    return [Dist(out, S.new_ref_blocks(np.zeros(out.shape, out.dtype), out, geo))]


def _empty_ref_batch(axis: Any, args: list[Any], dims: list[Any], **params: Any
                     ) -> tuple[list[Any], list[Any]]:
    # vmap binds an equation without batched operands unbatched; with no
    # operands this rule is never asked.
    return [empty_ref_p.bind(**params)], [None]


def _free_ref_type(ref: ArrayType) -> list[ArrayType]:
    return []


def _free_ref_sharding(ref: ArrayType) -> list[NamedSharding | None]:
    return []


def _free_ref_impl(buf: np.ndarray) -> list[np.ndarray]:
    return []


def _free_ref_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """Free the ref and its tangent ref."""
    (ref,), (ref_t,) = primals, tangents
    free_ref_p.bind(ref)
    if type(ref_t) is not Zero:
        free_ref_p.bind(ref_t)
    return [], []


def _free_ref_transpose(cts: list[Any], acc: Any) -> list[Any]:
    return [None]


def _free_ref_batch(axis: Any, args: list[Any], dims: list[Any]
                    ) -> tuple[list[Any], list[Any]]:
    free_ref_p.bind(args[0])
    return [], []


def _free_ref_dce(eqn: Eqn, used: list[bool]) -> tuple[list[bool], Eqn | None]:
    return [True], eqn  # no result, but the ref's end is kept, as in JAX


def _discharge_free_ref(ins: list[Any], atoms: list[Any], params: dict[str, Any]
                        ) -> Discharged:
    return [], []


def _free_ref_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType]
                      ) -> list[Dist]:
    return []


# ------------------------------------------------------------ declarations
#
# Last in the module, after every rule they name; a ref operand is taken only
# by get/swap/addupdate/freeze (``accepts_refs``).

new_ref_p = declare(
    "new_ref", lowering=LE.after_discharge("new_ref"),
    typing=_new_ref_type, impl=_new_ref_impl, pp_rule=_pp_new_ref,
    jvp=_new_ref_jvp, transpose=_new_ref_transpose, batch=_sb.new_ref_batch,
    sharding=_new_ref_sharding, doc="A new ref holding a copy of the operand.",
    jvp_on_zero_tangents=True,  # every ref gets a tangent ref
    remat_rule=_new_ref_remat, discharge=_discharge_new_ref, per_device=_new_ref_program)
get_p = declare(
    "get", lowering=LE.after_discharge("get"),
    typing=_get_type, impl=_get_impl, pp_rule=_pp_get,
    jvp=_get_jvp, transpose=_get_transpose, batch=_sb.get_batch,
    sharding=_get_sharding, doc="Read (a part of) a ref.",
    accepts_refs=True, remat_rule=_state_op_remat, discharge=_discharge_get,
    per_device=_get_program)
swap_p = declare(
    "swap", lowering=LE.after_discharge("swap"),
    typing=_swap_type, impl=_swap_impl, pp_rule=_pp_swap,
    jvp=_swap_jvp, transpose=_swap_transpose, batch=_sb.swap_batch,
    sharding=_swap_sharding, doc="Write (a part of) a ref, returning the old contents.",
    accepts_refs=True, effects_rule=_write_effects, remat_rule=_state_op_remat,
    discharge=_discharge_swap, per_device=_swap_program)
addupdate_p = declare(
    "addupdate", lowering=LE.after_discharge("addupdate"),
    typing=_addupdate_type, impl=_addupdate_impl, pp_rule=_pp_addupdate,
    multiple_results=True, jvp=_addupdate_jvp, transpose=_addupdate_transpose,
    batch=_sb.addupdate_batch, sharding=_addupdate_sharding, doc="Add into (a part of) a ref.",
    accepts_refs=True, effects_rule=_accum_effects, remat_rule=_state_op_remat,
    discharge=_discharge_addupdate, per_device=_addupdate_program)
freeze_p = declare(
    "freeze", lowering=LE.after_discharge("freeze"),
    typing=_freeze_type, impl=_freeze_impl,
    jvp=_freeze_jvp, transpose=_freeze_transpose, batch=_sb.freeze_batch,
    sharding=_freeze_sharding, doc="The final contents of a ref, as an array.",
    accepts_refs=True, discharge=_discharge_freeze, per_device=_freeze_program)
empty_ref_p = declaring(_EmptyRefPrimitive)(
    "empty_ref", lowering=LE.after_discharge("empty_ref"),
    typing=_empty_ref_type, impl=_empty_ref_impl,
    jvp=_empty_ref_jvp, transpose=_empty_ref_transpose, batch=_empty_ref_batch,
    sharding=_empty_ref_sharding, doc="A new ref of a given type, its contents unset.",
    jvp_on_zero_tangents=True,  # every ref gets a tangent ref
    remat_rule=_empty_ref_remat, discharge=_discharge_empty_ref,
    per_device=_empty_ref_program)
free_ref_p = declare(
    "free_ref", lowering=LE.after_discharge("free_ref"),
    typing=_free_ref_type, impl=_free_ref_impl, multiple_results=True,
    jvp=_free_ref_jvp, transpose=_free_ref_transpose, batch=_free_ref_batch,
    sharding=_free_ref_sharding, doc="The end of a ref's life.",
    accepts_refs=True, dce=_free_ref_dce, remat_rule=_state_op_remat,
    discharge=_discharge_free_ref, per_device=_free_ref_program)


__all__ = ["addupdate_p", "broadcast_to_p", "discharge_state", "empty_ref_p", "free_ref_p",
           "freeze_p", "get_p", "new_ref_p", "swap_p"]
