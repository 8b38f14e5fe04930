"""Gather and scatter primitives (XLA/StableHLO semantics, JAX 0.12 params).

``gather`` reads one window of ``slice_sizes`` per index vector of
``indices`` (the index vector is always the LAST axis of ``indices``);
``scatter*`` writes/combines windows of ``updates`` into a copy of
``operand``. The numbered constraints cited by the errors are listed in
SPEC.md (section 9.3).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from spec._src.core import types as T
from spec._src.core.prng import is_key_dtype
from spec._src.lowering import structural as ST
from spec._src.interpreters.ad_util import (
    Zero,
    _PrimitiveRule,
    defjvp,
    instantiate,
    is_undefined_primal,
    zeros_like_aval,
)
from spec._src.interpreters.batching import _PrimitiveRule as _BatchRule
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of, not_applicable
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import flush, flushing
from spec._src.core.registry import declare, require
from spec._src.core.sharding import UnreducedKind
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
import operator
from spec._src.core.interpreter import Jaxpr, eval_jaxpr_values, trace_to_jaxpr
from spec._src.interpreters.batching import AxisData, batch_jaxpr, moveaxis
from spec._src.lax import elementwise as E
from spec._src.lax.gather_numbers import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers)
from spec._src.lax.shaping import broadcast_in_dim_p, full, full_like, iota, reshape


# ------------------------------------------------------------ shared checks


def _sorted(dims: Sequence[int], prim: str, c: str, name: str) -> None:
    require(all(a <= b for a, b in itertools.pairwise(dims)), prim, c,
            f"{name} must be sorted; got {tuple(dims)}")


def _unique(dims: Sequence[int], prim: str, c: str, name: str) -> None:
    require(len(set(dims)) == len(dims), prim, c, f"{name} must not repeat; got {tuple(dims)}")


def _in_range(dims: Sequence[int], rank: int, prim: str, c: str, name: str) -> None:
    bad = [d for d in dims if not 0 <= d < rank]
    require(not bad, prim, c, f"{name} {tuple(dims)} must lie in [0, {rank}); got {bad}")


def _disjoint(a: Sequence[int], b: Sequence[int], prim: str, c: str, names: str) -> None:
    require(not set(a) & set(b), prim, c, f"{names} must be disjoint; got {tuple(a)} and "
            f"{tuple(b)}")


def _check_batching_dims(p: str, operand: ArrayType, indices: ArrayType,
                         obatch: tuple[int, ...], ibatch: tuple[int, ...],
                         dropped: tuple[tuple[int, ...], str],
                         index_map: tuple[tuple[int, ...], str], ibatch_name: str) -> None:
    """C7-C10, shared by gather and scatter: the operand's batching axes are
    sorted, distinct operand axes, disjoint from the axes dropped from the
    window and from those the index vector addresses; the indices' batching
    axes are distinct batch axes, paired one to one with the operand's, with
    equal sizes."""
    _sorted(obatch, p, "C7", "operand_batching_dims")
    _unique(obatch, p, "C7", "operand_batching_dims")
    _in_range(obatch, operand.ndim, p, "C7", "operand_batching_dims")
    for dims, name in (dropped, index_map):
        _disjoint(dims, obatch, p, "C8", f"{name} and operand_batching_dims")
    _unique(ibatch, p, "C9", ibatch_name)
    _in_range(ibatch, indices.ndim - 1, p, "C9", f"{ibatch_name} (the index vector axis excluded)")
    require(len(obatch) == len(ibatch), p, "C10",
            f"operand_batching_dims {obatch} and {ibatch_name} {ibatch} must have equal lengths")
    ob_shape = tuple(operand.shape[d] for d in obatch)
    ib_shape = tuple(indices.shape[d] for d in ibatch)
    require(ob_shape == ib_shape, p, "C10",
            f"operand batching dims have shape {ob_shape} but indices batching dims have "
            f"shape {ib_shape}")


def _int_indices(indices: ArrayType, prim: str) -> None:
    require(T.is_int(indices.dtype), prim, "C1",
            f"indices must have an integer type, got {indices.dtype}", ValueError)
    require(indices.ndim >= 1, prim, "C2",
            f"indices must have rank >= 1 (the last axis is the index vector), got "
            f"{indices}")


# ================================================================== gather


def _gather_type(operand: ArrayType, indices: ArrayType, *,
                 dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int],
                 indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
                 fill_value: Any) -> list[ArrayType]:
    p = "gather"
    dn = dimension_numbers
    _int_indices(indices, p)
    offset, collapsed = tuple(dn.offset_dims), tuple(dn.collapsed_slice_dims)
    smap, obatch = tuple(dn.start_index_map), tuple(dn.operand_batching_dims)
    ibatch = tuple(dn.start_indices_batching_dims)
    out_rank = len(offset) + indices.ndim - 1
    _sorted(offset, p, "C3", "offset_dims")
    _unique(offset, p, "C3", "offset_dims")
    _in_range(offset, out_rank, p, "C3", "offset_dims")
    require(len(smap) == indices.shape[-1], p, "C4",
            f"start_index_map {smap} has {len(smap)} entries but the index vector axis of "
            f"indices {indices} has size {indices.shape[-1]}")
    _in_range(smap, operand.ndim, p, "C5", "start_index_map")
    _unique(smap, p, "C5", "start_index_map")
    _sorted(collapsed, p, "C6", "collapsed_slice_dims")
    _in_range(collapsed, operand.ndim, p, "C6", "collapsed_slice_dims")
    _unique(collapsed, p, "C6", "collapsed_slice_dims")
    _check_batching_dims(p, operand, indices, obatch, ibatch, (collapsed, "collapsed_slice_dims"),
                         (smap, "start_index_map"), "start_indices_batching_dims")
    sizes = tuple(slice_sizes)
    require(len(sizes) == operand.ndim, p, "C11",
            f"slice_sizes {sizes} must have one entry per operand axis (rank {operand.ndim})")
    require(len(sizes) == len(offset) + len(collapsed) + len(obatch), p, "C12",
            f"every operand axis must be an offset, collapsed or batching axis: "
            f"len(slice_sizes)={len(sizes)}, offset_dims={offset}, collapsed_slice_dims="
            f"{collapsed}, operand_batching_dims={obatch}")
    if 0 not in indices.shape:
        for i, (s, n) in enumerate(zip(sizes, operand.shape)):
            require(0 <= s <= n, p, "C13",
                    f"slice size {s} at index {i} must lie in [0, {n}] (operand {operand})")
    for d in collapsed + obatch:
        require(sizes[d] <= 1 and (d in obatch or sizes[d] == 1), p, "C14",
                f"collapsed/batching operand axis {d} must have slice size 1, got {sizes[d]}")
    require(mode in (GatherScatterMode.CLIP, GatherScatterMode.FILL_OR_DROP,
                     GatherScatterMode.PROMISE_IN_BOUNDS), p, "C15",
            f"mode must be CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS, got {mode}")
    window = iter(s for i, s in enumerate(sizes) if i not in collapsed and i not in obatch)
    batch = iter(indices.shape[:-1])
    shape = tuple(next(window) if i in offset else next(batch) for i in range(out_rank))
    return [ArrayType(shape, operand.dtype, operand.weak_type)]


def _start_vectors(operand_shape: T.Shape, idx: np.ndarray, smap: Sequence[int],
                   obatch: Sequence[int], ibatch: Sequence[int]) -> np.ndarray:
    """(N, operand rank) start vector of every index vector (batch axes flattened).

    Operand batching axes start at the index vector's own batch coordinate.
    """
    batch_shape = idx.shape[:-1]
    n = int(np.prod(batch_shape, dtype=np.int64))
    starts = np.zeros((n, len(operand_shape)), np.int64)
    starts[:, list(smap)] = idx.reshape(n, len(smap)).astype(np.int64)
    if obatch:
        coords = np.indices(batch_shape).reshape(len(batch_shape), n)
        starts[:, list(obatch)] = coords[list(ibatch)].T
    return starts


def _window_elements(starts: np.ndarray, window: T.Shape) -> tuple[np.ndarray, ...]:
    """Per operand axis, the (N, M) operand coordinates of every window element."""
    # (The element count is explicit: a rank-0 window has one element, which
    # reshape(0, -1) cannot infer.)
    offs = np.indices(window).reshape(len(window), int(np.prod(window, dtype=np.int64)))
    return tuple(starts[:, d, None] + offs[d][None, :] for d in range(len(window)))


def _gather_impl(operand: np.ndarray, indices: np.ndarray, *,
                 dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int],
                 indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
                 fill_value: Any) -> list[np.ndarray]:
    dn = dimension_numbers
    sizes = tuple(slice_sizes)
    batch_shape = indices.shape[:-1]
    starts = _start_vectors(operand.shape, indices, dn.start_index_map,
                            dn.operand_batching_dims, dn.start_indices_batching_dims)
    upper = np.asarray(operand.shape, np.int64) - np.asarray(sizes, np.int64)
    in_bounds = np.all((starts >= 0) & (starts <= upper), axis=1)
    # CLIP and PROMISE_IN_BOUNDS both clamp the window into the operand (XLA CPU).
    starts = np.clip(starts, 0, np.maximum(upper, 0))
    coords = _window_elements(starts, sizes)
    vals = operand[coords] if operand.size else np.zeros(coords[0].shape, operand.dtype)
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill = _default_fill_value(operand.dtype) if fill_value is None else fill_value
        with np.errstate(all="ignore"):
            vals = np.where(in_bounds[:, None], vals, np.asarray(fill).astype(operand.dtype))
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = tuple(s for i, s in enumerate(sizes) if i not in dropped)
    vals = vals.reshape(batch_shape + window)
    # Axes are now (batch..., window...); the result interleaves them.
    offset = tuple(dn.offset_dims)
    out_rank = len(batch_shape) + len(window)
    nb = len(batch_shape)
    perm, b, w = [], 0, 0
    for i in range(out_rank):
        if i in offset:
            perm.append(nb + w)
            w += 1
        else:
            perm.append(b)
            b += 1
    return [np.array(vals.transpose(perm), order="C", copy=None)]  # keeps rank 0


def _gather_jvp(g: Any, operand: Any, indices: Any, *, dimension_numbers: GatherDimensionNumbers,
                slice_sizes: Sequence[int], indices_are_sorted: bool, unique_indices: bool,
                mode: GatherScatterMode, fill_value: Any) -> Any:
    """Linear in the operand: gather the tangent; out-of-bounds windows of a
    FILL_OR_DROP gather are constant (the fill), so their tangent is 0."""
    return gather(g, indices, dimension_numbers, slice_sizes,
                         unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                         mode=mode, fill_value=0)


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes back where a gather with ``dn`` reads."""
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_transpose(ct: Any, operand: Any, indices: Any, *,
                      dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int],
                      indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
                      fill_value: Any) -> list[Any]:
    """Scatter-add the cotangent into zeros (of the cotangent's dtype): every
    operand element receives the sum of the cotangents of the places that
    read it; dropped (out-of-bounds) windows contribute nothing."""
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type()), None]
    # The zeros take the primal operand's sharding, so the cotangent does too.
    zeros = full(operand.aval.shape, 0, canonical_aval_of(ct).dtype,
                     sharding=operand.aval.sharding)
    return [scatter_add(zeros, indices, ct, _scatter_dnums_of(dimension_numbers),
                            unique_indices=unique_indices,
                            indices_are_sorted=indices_are_sorted, mode=mode), None]


# ------------------------------------------------------------ batching
#
# A vmap axis of the operand or of the indices becomes part of the gather's
# own geometry (JAX's rule, mirrored so the jaxprs print alike, NumPy int64
# axis numbers included):
# - operand only: the vmap axis goes first and is one more window axis
#   (a full-size slice), so it is offset axis 0 of the result;
# - indices only: the vmap axis goes first and is one more batch axis of the
#   indices, hence result axis 0;
# - both: both go first and pair up as operand/indices batching axes, so the
#   k-th example's indices read from the k-th operand.


def _plus1(dims: Sequence[int]) -> tuple[int, ...]:
    """Axis numbers shifted past a new leading axis, as NumPy int64s."""
    return tuple(np.int64(d) + 1 for d in dims)  # type: ignore[misc]


def _front(x: Any, dim: int | None, size: int) -> Any:
    """``x`` with its vmap axis first: moved there, or broadcast in (with
    int64 broadcast dimensions, as JAX's batching helper writes them)."""
    if dim is not None:
        return moveaxis(x, dim, 0)
    aval = canonical_aval_of(x)
    kept = tuple(np.int64(i) for i in range(1, aval.ndim + 1))
    return broadcast_in_dim_p.bind(x, shape=(size, *aval.shape), broadcast_dimensions=kept,
                                   sharding=None)


def _gather_batch(axis: Any, args: list[Any], dims: list[Any], *,
                  dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int],
                  indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
                  fill_value: Any) -> tuple[list[Any], list[Any]]:
    operand, indices = args
    op_dim, idx_dim = dims
    dn = dimension_numbers
    if idx_dim is None:
        operand = _front(operand, op_dim, axis.size)
        new = GatherDimensionNumbers(
            offset_dims=(0, *_plus1(dn.offset_dims)),
            collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
            start_index_map=_plus1(dn.start_index_map),
            operand_batching_dims=_plus1(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        sizes = (canonical_aval_of(operand).shape[0], *slice_sizes)
        out = gather(operand, indices, new, sizes, unique_indices=unique_indices,
                         indices_are_sorted=indices_are_sorted, mode=mode,
                         fill_value=fill_value)
        return [out], [0]
    if op_dim is None:
        indices = _front(indices, idx_dim, axis.size)
        # Different examples may now index the same places: neither sortedness
        # nor uniqueness survives.
        new = GatherDimensionNumbers(
            offset_dims=tuple(1 + d for d in dn.offset_dims),
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=_plus1(dn.start_indices_batching_dims))
        out = gather(operand, indices, new, slice_sizes, unique_indices=False,
                         indices_are_sorted=False, mode=mode, fill_value=fill_value)
        return [out], [0]
    operand = _front(operand, op_dim, axis.size)
    indices = _front(indices, idx_dim, axis.size)
    new = GatherDimensionNumbers(
        offset_dims=_plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=(0, *_plus1(dn.operand_batching_dims)),
        start_indices_batching_dims=(0, *_plus1(dn.start_indices_batching_dims)))
    sizes = (0 if canonical_aval_of(operand).shape[0] == 0 else 1, *slice_sizes)
    out = gather(operand, indices, new, sizes, unique_indices=unique_indices,
                     indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill_value)
    return [out], [0]


# ================================================================ sharding
#
# Explicit-sharding types (SPEC.md section 14.1), following JAX 0.12. Both
# rules propagate a mesh axis only where every device already holds the data
# its share of the result needs; any layout that would need communication is
# refused with a ShardingTypeError that asks for an explicit output sharding.


def _shaped(a: ArrayType) -> str:
    return repr(a)


def _with_axis_types(a: ArrayType) -> str:
    """JAX's ``str_short(mesh_axis_types=True)``: the type and the mesh's axis
    types, as ``int32[4,1]{R:X}({Explicit: ('X', 'Y')})``."""
    s = a.sharding
    text = a.str_short(short_dtypes=False)
    if s is None:
        return text + "({})"
    groups: dict[Any, tuple[Any, ...]] = {}
    for name, kind in zip(s.mesh.axis_names, s.mesh.axis_types):
        groups[kind] = (*groups.get(kind, ()), name)
    return f"{text}({groups})"


def _gather_out_parts(operand: ArrayType, indices: ArrayType, dn: GatherDimensionNumbers,
                      slice_sizes: Sequence[int]) -> SK.Parts | None:
    """The result's partitions, or None where they are ambiguous or would
    need communication (SPEC.md S1-S3 of gather)."""
    ops, ids = SK.parts(operand), list(SK.parts(indices))
    out_rank = len(dn.offset_dims) + indices.ndim - 1
    if all(e is None for e in ops) and all(e is None for e in ids):
        return (None,) * out_rank
    pairs = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    # S1: an indexed operand axis is read whole or is not split.
    indexed_ok = all(slice_sizes[d] == operand.shape[d] or ops[d] is None
                     for d in dn.start_index_map)
    # S2: paired batching axes are split alike (or one of them not at all).
    batch_ok = all(ops[o] is None or ids[i] is None or ops[o] == ids[i] for o, i in pairs)
    # S3: the other indices axes (the index vector axis among them) are not split.
    rest_ok = all(e is None for i, e in enumerate(ids)
                  if i not in dn.start_indices_batching_dims)
    if not (indexed_ok and batch_ok and rest_ok):
        return None
    for o, i in pairs:
        ids[i] = ids[i] if ids[i] is not None else ops[o]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = iter(ops[d] for d in range(operand.ndim) if d not in dropped)
    batch = iter(ids)
    return tuple(next(window) if k in dn.offset_dims else next(batch) for k in range(out_rank))


def _gather_parts(mesh: Any, operand: ArrayType, indices: ArrayType, *,
                  dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int],
                  **params: Any) -> list[SK.Parts]:
    out = _gather_out_parts(operand, indices, dimension_numbers, slice_sizes)
    if out is None:
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather"
            " indexing as out sharding could not be resolved unambiguously (or would require"
            f" collectives on inputs). Got operand={_shaped(operand)},"
            f" indices={_shaped(indices)}")
    return [out]


def _gather_ur(operand: ArrayType, indices: ArrayType, **params: Any) -> SK.UR:
    """S4: no unreduced operand; reduced operand axes carry over (with
    unsplit indices); the indices cannot be reduced."""
    if SK.getu(operand) or SK.getu(indices):
        raise NotImplementedError("unreduced rule for gather is not implemented. Please file"
                                  " an issue at https://github.com/jax-ml/jax/issues")
    if SK.getr(indices):
        raise ShardingTypeError("gather indices cannot be reduced. Got indices sharding"
                                f" {_with_axis_types(indices)}.")
    reduced = SK.getr(operand)
    if reduced and any(e is not None for e in SK.parts(indices)):
        raise NotImplementedError(
            "gather of a reduced operand with split indices is not implemented (as in JAX)")
    return frozenset(), reduced, None


def _updates_batching_dims(dn: ScatterDimensionNumbers, indices: ArrayType,
                           updates: ArrayType) -> list[int]:
    """The updates axis paired with each indices batching axis: the updates'
    scatter (non-window) axes follow the indices' batch axes in order."""
    scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    return [scatter_axes[i] for i in dn.scatter_indices_batching_dims]


def _scatter_out_parts(operand: ArrayType, indices: ArrayType, updates: ArrayType,
                       dn: ScatterDimensionNumbers) -> SK.Parts | None:
    """The result's partitions, or None (SPEC.md S1-S5 of scatter)."""
    ops, ids, ups = SK.parts(operand), SK.parts(indices), SK.parts(updates)
    if all(e is None for e in (*ops, *ids, *ups)):
        return (None,) * operand.ndim
    ubatch = _updates_batching_dims(dn, indices, updates)
    triples = list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, ubatch))
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    windows = list(zip(dn.update_window_dims,
                       [d for d in range(operand.ndim) if d not in dropped]))
    vec = indices.ndim - 1
    ok = (
        # S1: batching axes of operand, indices and updates split by at most one entry.
        all(len({e for e in (ops[o], ids[i], ups[u]) if e is not None}) <= 1
            for o, i, u in triples)
        # S2: a window axis is split alike in operand and updates and written
        # whole, or split in neither.
        and all((updates.shape[u] == operand.shape[o] and ups[u] == ops[o])
                or (ups[u] is None and ops[o] is None) for u, o in windows)
        # S3: the inserted (size-1 window) operand axes are not split.
        and all(ops[d] is None for d in dn.inserted_window_dims)
        # S4: unbatched scatter axes of updates and indices, and the index
        # vector axis, are not split.
        and all(ups[d] is None for d in range(updates.ndim)
                if d not in ubatch and d not in dn.update_window_dims)
        and all(ids[d] is None for d in range(vec) if d not in dn.scatter_indices_batching_dims)
        and ids[vec] is None)
    if not ok:
        return None
    out = list(ops)
    for o, i, u in triples:
        if out[o] is None:
            out[o] = ids[i] if ids[i] is not None else ups[u]
    return tuple(out)


def _scatter_parts_for(name: str) -> SK.PartsRule:
    def rule(mesh: Any, operand: ArrayType, indices: ArrayType, updates: ArrayType, *,
             dimension_numbers: ScatterDimensionNumbers, **params: Any) -> list[SK.Parts]:
        out = _scatter_out_parts(operand, indices, updates, dimension_numbers)
        if out is None:
            raise ShardingTypeError(
                "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec"
                " for the scatter update as out sharding could not be resolved unambiguously"
                f" (or would require collectives on inputs). Got operand={_shaped(operand)},"
                f" indices={_shaped(indices)}, updates={_shaped(updates)}")
        return [out]
    return rule


def _scatter_add_ur(operand: ArrayType, indices: ArrayType, updates: ArrayType, **params: Any
                    ) -> SK.UR:
    """S5 of scatter-add: linear in (operand, updates) jointly, so both may be
    unreduced over the same axes (a sum); nothing may be reduced."""
    if SK.getr(operand) or SK.getr(indices) or SK.getr(updates):
        raise NotImplementedError("reduced rule for scatter is not implemented. Please file an"
                                  " issue at https://github.com/jax-ml/jax/issues")
    if SK.getu(indices):
        raise ShardingTypeError("scatter indices cannot be unreduced. Got indices sharding"
                                f" {_with_axis_types(indices)}.")
    unreduced = SK.getu(operand)
    if unreduced != SK.getu(updates):
        raise ShardingTypeError(
            "scatter operand and updates must be unreduced along the same axes. Got operand"
            f" sharding {_with_axis_types(operand)} and updates sharding"
            f" {_with_axis_types(updates)}.")
    if unreduced and any(e is not None for e in SK.parts(indices)):
        raise NotImplementedError(
            "scatter-add of unreduced values with split indices is not implemented (as in JAX)")
    return unreduced, frozenset(), UnreducedKind.sum if unreduced else None


# ------------------------------------------------------- per-device programs


def _gather_ok(args: list[Dist], out_avals: list[ArrayType], *, dimension_numbers: Any,
               slice_sizes: Any, **params: Any) -> bool:
    """Each device can gather from its own operand block with its own
    indices when: split operand dims are windows read whole (the result's
    offset dim split alike) or batching dims matched by the indices; split
    indices dims are batch dims of the result, split alike; the
    index-vector dim is whole."""
    dn = dimension_numbers
    op, ix, out = (S.parts_of(a) for a in (args[0].aval, args[1].aval, out_avals[0]))
    shape = args[0].aval.shape
    windows = [d for d in range(len(op)) if d not in dn.collapsed_slice_dims
               and d not in dn.operand_batching_dims]
    batch_out = [d for d in range(len(out)) if d not in dn.offset_dims]
    if ix and ix[-1]:
        return False
    for od, outd in zip(windows, dn.offset_dims):
        if out[outd] != op[od] or (op[od] and slice_sizes[od] != shape[od]):
            return False
    for ixd, outd in zip(range(len(ix) - 1), batch_out):
        if out[outd] != ix[ixd]:
            return False
    pairs = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    for d, p in enumerate(op):
        if p and d not in windows and (d not in pairs or ix[pairs[d]] != p):
            return False
    return True


def _gather_fix(args: list[Dist], out_avals: list[ArrayType], shapes: list[Any], **params: Any
                ) -> dict[str, Any]:
    """Windows read whole over a split dim read the whole local block."""
    op, local, shape = S.parts_of(args[0].aval), args[0].any.shape, args[0].aval.shape
    sizes = tuple(int(local[d]) if op[d] and s == shape[d] else int(s)
                  for d, s in enumerate(params["slice_sizes"]))
    return {**params, "slice_sizes": sizes}


def _gather(prim: Primitive) -> PD.Program:
    """A whole operand batching dim is cut to its indices' split (free: batch
    elements pair positionally), then each device gathers locally."""
    run = PD.localized(prim, _gather_fix)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        dn = params["dimension_numbers"]
        operand, indices = args
        parts = list(S.parts_of(operand.aval))
        ix = S.parts_of(indices.aval)
        for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            parts[od] = parts[od] or ix[idd]
        operand = PD.cut(operand, parts, geo, indices.aval)
        return run(geo, [operand, indices], out_avals, **params)
    return program


def _scatter_ok(args: list[Dist], out_avals: list[ArrayType], *, dimension_numbers: Any,
                **params: Any) -> bool:
    """Each device can scatter its updates block into its operand block when
    the result is split like the operand, update windows are split like
    their operand dims (and cover them whole), batching dims agree, and every
    other indices/updates dim is whole."""
    dn = dimension_numbers
    operand, indices, updates = (a.aval for a in args)
    op, ix, up = (S.parts_of(a) for a in (operand, indices, updates))
    if S.parts_of(out_avals[0]) != op or (ix and ix[-1]):
        return False
    windows = [d for d in range(len(op)) if d not in dn.inserted_window_dims
               and d not in dn.operand_batching_dims]
    for od, ud in zip(windows, dn.update_window_dims):
        if up[ud] != op[od] or (op[od] and updates.shape[ud] != operand.shape[od]):
            return False
    scatter_dims = [d for d in range(len(up)) if d not in dn.update_window_dims]
    batching = dict(zip(dn.scatter_indices_batching_dims, dn.operand_batching_dims))
    for ixd, ud in zip(range(len(ix) - 1), scatter_dims):
        want = op[batching[ixd]] if ixd in batching else ()
        if ix[ixd] != want or up[ud] != want:
            return False
    return all(not p or d in windows or d in dn.operand_batching_dims
               for d, p in enumerate(op))


gather_p = declare("gather", lowering=ST.gather, typing=_gather_type, impl=_gather_impl,
                   jvp=defjvp(_gather_jvp, None), transpose=_gather_transpose,
                   batch=_gather_batch,
                   sharding=SK.auto_placed(SK.section("gather", _gather_parts, _gather_ur),
                                           SK.gathered_placement),
                   per_device=from_primitive(lambda p: PD.guarded(p, _gather_ok, _gather(p))))


# ================================================================= scatter


def _scatter_type_for(name: str) -> Callable[..., list[ArrayType]]:
    def typing(operand: ArrayType, indices: ArrayType, updates: ArrayType, *,
               dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
               unique_indices: bool, mode: GatherScatterMode, update_jaxpr: Any,
               update_consts: Any) -> list[ArrayType]:
        return _scatter_type(name, operand, indices, updates, dimension_numbers, mode)
    return typing


def _scatter_type(p: str, operand: ArrayType, indices: ArrayType, updates: ArrayType,
                  dn: ScatterDimensionNumbers, mode: GatherScatterMode) -> list[ArrayType]:
    _int_indices(indices, p)
    require(operand.dtype == updates.dtype, p, "C3",
            f"operand and updates must have the same dtype, got {operand.dtype} and "
            f"{updates.dtype}")
    uwin, inserted = tuple(dn.update_window_dims), tuple(dn.inserted_window_dims)
    s2o, obatch = tuple(dn.scatter_dims_to_operand_dims), tuple(dn.operand_batching_dims)
    ibatch = tuple(dn.scatter_indices_batching_dims)
    expected_rank = indices.ndim - 1 + len(uwin)
    require(updates.ndim == expected_rank, p, "C4",
            f"updates {updates} must have rank {expected_rank} (indices batch rank "
            f"{indices.ndim - 1} + {len(uwin)} update_window_dims)")
    _sorted(uwin, p, "C5", "update_window_dims")
    _unique(uwin, p, "C5", "update_window_dims")
    _in_range(uwin, updates.ndim, p, "C5", "update_window_dims")
    _sorted(inserted, p, "C6", "inserted_window_dims")
    _unique(inserted, p, "C6", "inserted_window_dims")
    _in_range(inserted, operand.ndim, p, "C6", "inserted_window_dims")
    _check_batching_dims(p, operand, indices, obatch, ibatch, (inserted, "inserted_window_dims"),
                         (s2o, "scatter_dims_to_operand_dims"), "scatter_indices_batching_dims")
    ob_shape = tuple(operand.shape[d] for d in obatch)
    update_scatter = [d for d in range(updates.ndim) if d not in uwin]
    ub_shape = tuple(updates.shape[update_scatter[d]] for d in ibatch)
    require(ob_shape == ub_shape, p, "C10",
            f"operand batching dims have shape {ob_shape} but updates batching dims have "
            f"shape {ub_shape}")
    window_size = len(uwin) + len(inserted) + len(obatch)
    require(operand.ndim == window_size, p, "C11",
            f"update_window_dims {uwin}, inserted_window_dims {inserted} and "
            f"operand_batching_dims {obatch} must together cover the operand's "
            f"{operand.ndim} axes")
    require(len(s2o) == indices.shape[-1], p, "C12",
            f"scatter_dims_to_operand_dims {s2o} has {len(s2o)} entries but the index vector "
            f"axis of indices {indices} has size {indices.shape[-1]}")
    _in_range(s2o, operand.ndim, p, "C13", "scatter_dims_to_operand_dims")
    _unique(s2o, p, "C13", "scatter_dims_to_operand_dims")
    window_axes = [i for i in range(operand.ndim) if i not in inserted and i not in obatch]
    for d, axis in zip(uwin, window_axes):
        require(updates.shape[d] <= operand.shape[axis], p, "C14",
                f"updates window axis {d} has size {updates.shape[d]}, larger than operand "
                f"axis {axis} of size {operand.shape[axis]}")
    for k, d in enumerate(update_scatter):
        require(updates.shape[d] == indices.shape[k], p, "C15",
                f"updates scatter axis {d} has size {updates.shape[d]} but indices axis {k} "
                f"has size {indices.shape[k]}")
    require(mode in (GatherScatterMode.CLIP, GatherScatterMode.FILL_OR_DROP,
                     GatherScatterMode.PROMISE_IN_BOUNDS), p, "C16",
            f"mode must be CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS, got {mode}")
    return [ArrayType(operand.shape, operand.dtype, operand.weak_type)]


Combine = Callable[[np.ndarray, tuple[np.ndarray, ...], np.ndarray], None]


def _set_at(out: np.ndarray, where: tuple[np.ndarray, ...], vals: np.ndarray) -> None:
    # NumPy assigns duplicates in order, so the last update wins, as on XLA CPU.
    out[where] = vals


def _ufunc_at(ufunc: np.ufunc) -> Combine:
    def combine(out: np.ndarray, where: tuple[np.ndarray, ...], vals: np.ndarray) -> None:
        if T.is_bool(out.dtype) and ufunc is np.add:
            np.logical_or.at(out, where, vals)  # XLA's add on bool is "or"
        elif T.is_bool(out.dtype) and ufunc is np.multiply:
            np.logical_and.at(out, where, vals)
        elif ufunc in _ARITHMETIC and T.is_inexact(out.dtype) and flushing():
            # Arithmetic: XLA CPU's denormals-are-zero and flush-to-zero (SPEC 8).
            out[...] = flush(out)
            ufunc.at(out, where, flush(vals))
            out[...] = flush(out)
        else:
            ufunc.at(out, where, vals)
    return combine


_ARITHMETIC = (np.add, np.subtract, np.multiply)


def on_all(jaxpr: Jaxpr, size: int) -> Callable[..., list[np.ndarray]]:
    """``jaxpr`` (a computation on scalars) run on ``size`` flat arguments at once."""
    n_out = len(jaxpr.out_avals)
    batched, _ = batch_jaxpr(jaxpr, AxisData(size), [0] * len(jaxpr.in_avals), [0] * n_out)

    def run(*args: np.ndarray) -> list[np.ndarray]:
        outs = eval_jaxpr_values(batched, batched.consts, [a.reshape(size) for a in args])
        return [np.asarray(o) for o in outs]
    return run


def apply_in_order(out: np.ndarray, positions: np.ndarray, values: np.ndarray,
                   jaxpr: Jaxpr) -> None:
    """``out.flat[p_k] = jaxpr(out.flat[p_k], v_k)`` for k in order, by rounds
    (each round takes every position's next update, so a round's positions
    are distinct and it runs as one batched evaluation)."""
    order = np.argsort(positions, kind="stable")
    sorted_positions = positions[order]
    rank = np.empty(len(positions), np.intp)
    rank[order] = np.arange(len(positions)) - np.searchsorted(sorted_positions,
                                                              sorted_positions)
    flat = out.reshape(-1)
    for r in range(int(rank.max(initial=-1)) + 1):
        chosen = rank == r
        where = positions[chosen]
        (flat[where],) = on_all(jaxpr, len(where))(flat[where], values[chosen])


def _jaxpr_at(jaxpr: Jaxpr) -> Combine:
    """The scatter combiner of a general update computation: applied once per
    update, duplicates in update order (XLA's)."""
    def combine(out: np.ndarray, where: tuple[np.ndarray, ...], vals: np.ndarray) -> None:
        apply_in_order(out, np.ravel_multi_index(where, out.shape), vals, jaxpr)
    return combine


def _scatter_impl_for(combine: Combine, general: bool) -> Callable[..., list[np.ndarray]]:
    """``general``: an update computation given as ``update_jaxpr`` replaces
    ``combine`` (scatter_apply's; the other scatters' jaxprs are their combiner)."""
    def impl(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray, *,
             dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
             unique_indices: bool, mode: GatherScatterMode, update_jaxpr: Any,
             update_consts: Any) -> list[np.ndarray]:
        chosen = _jaxpr_at(update_jaxpr) if general and update_jaxpr is not None else combine
        return [_scatter_compute(operand, indices, updates, dimension_numbers, mode, chosen)]
    return impl


def _scatter_compute(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray,
                     dn: ScatterDimensionNumbers, mode: GatherScatterMode,
                     combine: Combine) -> np.ndarray:
    uwin = tuple(dn.update_window_dims)
    inserted, obatch = set(dn.inserted_window_dims), set(dn.operand_batching_dims)
    scatter_axes = [d for d in range(updates.ndim) if d not in uwin]
    n = int(np.prod(indices.shape[:-1], dtype=np.int64))
    # The window in operand coordinates: size 1 on inserted/batching axes.
    win_sizes = iter(updates.shape[d] for d in uwin)
    window = tuple(1 if i in inserted or i in obatch else next(win_sizes)
                   for i in range(operand.ndim))
    if n == 0 or updates.size == 0:
        return operand.copy()  # nothing to scatter (reshape(0, -1) is ambiguous)
    vals = updates.transpose(scatter_axes + list(uwin)).reshape(n, -1)
    starts = _start_vectors(operand.shape, indices, dn.scatter_dims_to_operand_dims,
                            dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    upper = np.asarray(operand.shape, np.int64) - np.asarray(window, np.int64)
    if mode == GatherScatterMode.CLIP:
        starts = np.clip(starts, 0, np.maximum(upper, 0))
    # Otherwise a window not wholly inside the operand is dropped, as XLA does.
    keep = np.all((starts >= 0) & (starts <= upper), axis=1)
    coords = _window_elements(starts[keep], window)
    out = operand.copy()
    flat_vals = vals[keep].reshape(-1)
    if operand.ndim == 0:
        # A rank-0 operand is addressed as its one-element vector (NumPy
        # index arrays need at least one axis).
        combine(out.reshape(1), (np.zeros(flat_vals.shape, np.int64),), flat_vals)
        return out
    combine(out, tuple(c.reshape(-1) for c in coords), flat_vals)
    return out


class _ScatterBatch(_BatchRule):
    """The operand and updates get their vmap axes first (broadcast in when
    unbatched: every example writes into its own copy). Unbatched indices
    address the same places in every example, so the vmap axis is one more
    update window axis spanning the whole operand axis; batched indices pair
    their vmap axis with the operand's as scatter batching axes."""

    def __call__(self, axis: Any, args: list[Any], dims: list[Any], *,
                 dimension_numbers: ScatterDimensionNumbers, **params: Any
                 ) -> tuple[list[Any], list[Any]]:
        operand, indices, updates = args
        op_dim, idx_dim, up_dim = dims
        dn = dimension_numbers
        operand = _front(operand, op_dim, axis.size)
        updates = _front(updates, up_dim, axis.size)
        if idx_dim is None:
            new = ScatterDimensionNumbers(
                update_window_dims=(0, *_plus1(dn.update_window_dims)),
                inserted_window_dims=_plus1(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_plus1(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        else:
            indices = _front(indices, idx_dim, axis.size)
            new = ScatterDimensionNumbers(
                update_window_dims=_plus1(dn.update_window_dims),
                inserted_window_dims=_plus1(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0, *_plus1(dn.operand_batching_dims)),
                scatter_indices_batching_dims=(0, *_plus1(dn.scatter_indices_batching_dims)))
        return [self.prim.bind(operand, indices, updates, dimension_numbers=new, **params)], [0]


def _declare_scatter(name: str, combine: Combine, jvp: Any, transpose: Any) -> Any:
    return declare(name, lowering=ST.scatter(name),
                   typing=_scatter_type_for(name),
                   impl=_scatter_impl_for(combine, general=name == "scatter"),
                   jvp=jvp, transpose=transpose, batch=_ScatterBatch(),
                   # Only scatter-add has an unreduced rule in JAX; the others
                   # refuse unreduced/reduced operands as not implemented.
                   sharding=SK.auto_placed(
                       SK.section(name, _scatter_parts_for(name),
                                  _scatter_add_ur if name == "scatter-add" else None),
                       SK.kept_placement),
                   per_device=from_primitive(
                       lambda p: PD.guarded(p, _scatter_ok, PD.local(p))))


# ------------------------------------------------------------ scatter autodiff
#
# The rules follow JAX's: scatter-add/sub are linear in (operand, updates)
# jointly; scatter-mul is linear in each separately; scatter (replace) is
# linear jointly, but with overlapping indices it is unspecified which update
# wins, so its JVP first finds the winners (scattering update ids) and then
# scatter-adds masked values; scatter-min/max route the tangent of each
# output element to the values that attain the extremum, averaging ties.


class _ScatterParams(NamedTuple):
    update_jaxpr: Any
    update_consts: Any
    dimension_numbers: ScatterDimensionNumbers
    indices_are_sorted: bool
    unique_indices: bool
    mode: GatherScatterMode


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather that reads back where a scatter with ``dn`` writes."""
    return GatherDimensionNumbers(
        offset_dims=tuple(dn.update_window_dims),
        collapsed_slice_dims=tuple(dn.inserted_window_dims),
        start_index_map=tuple(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        start_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))


def _window_sizes(operand_rank: int, updates_shape: T.Shape, dn: ScatterDimensionNumbers
                  ) -> list[int]:
    """The gather slice sizes of one scatter window: 1 on the inserted and
    batching axes, the update window's size on the others."""
    sizes, window = [], iter(dn.update_window_dims)
    for i in range(operand_rank):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[next(window)])
    return sizes


def _shape_of(x: Any) -> T.Shape:
    return x.aval.shape if is_undefined_primal(x) else canonical_aval_of(x).shape


def _gather_windows(x: Any, indices: Any, updates_shape: T.Shape,
                    dn: ScatterDimensionNumbers, mode: GatherScatterMode) -> Any:
    """The windows of ``x`` a scatter with ``dn`` writes, shaped like its
    updates (out-of-bounds windows read as 0)."""
    sizes = _window_sizes(len(_shape_of(x)), updates_shape, dn)
    return gather(x, indices, dimension_numbers=_gather_dnums_of(dn),
                         slice_sizes=sizes, mode=mode, fill_value=0)


class _ScatterAddSubJvp(_PrimitiveRule):
    """Linear in (operand, updates) jointly: the same scatter of the tangents."""

    def __call__(self, primals: list[Any], tangents: list[Any], **params: Any
                 ) -> tuple[list[Any], list[Any]]:
        operand, indices, updates = primals
        t_op, _, t_up = tangents
        out = self.prim.bind(operand, indices, updates, **params)
        if type(t_op) is Zero and type(t_up) is Zero:
            return [out], [Zero.from_primal_value(out)]
        return [out], [self.prim.bind(instantiate(t_op), indices, instantiate(t_up), **params)]


def _scatter_addsub_transpose(negate: bool) -> Callable[..., list[Any]]:
    def transpose(ct: Any, operand: Any, indices: Any, updates: Any, **params: Any
                  ) -> list[Any]:
        p = _ScatterParams(**params)
        if type(ct) is Zero:
            return [Zero(operand.aval.ct_type()) if is_undefined_primal(operand) else None,
                    None,
                    Zero(updates.aval.ct_type()) if is_undefined_primal(updates) else None]
        op_ct = ct if is_undefined_primal(operand) else None
        up_ct = None
        if is_undefined_primal(updates):
            up_ct = _gather_windows(ct, indices, updates.aval.shape, p.dimension_numbers,
                                    p.mode)
            if negate:
                up_ct = E.neg(up_ct)
        return [op_ct, None, up_ct]
    return transpose


def _scatter_mul_jvp_updates(g: Any, x: Any, i: Any, y: Any, **params: Any) -> Any:
    """d/dy of x * y at unique indices: x times the scattered tangent."""
    p = _ScatterParams(**params)
    if not p.unique_indices:
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True`")
    zeros = zeros_like_aval(canonical_aval_of(x))
    return E.mul(x, scatter_add(zeros, i, g, dimension_numbers=p.dimension_numbers,
                                      indices_are_sorted=p.indices_are_sorted,
                                      unique_indices=p.unique_indices, mode=p.mode))


def _scatter_mul_transpose(ct: Any, operand: Any, indices: Any, updates: Any, **params: Any
                           ) -> list[Any]:
    """Linear in the operand (with updates known) or in the updates (with the
    operand known, unique indices only)."""
    p = _ScatterParams(**params)
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type()) if is_undefined_primal(operand) else None, None,
                Zero(updates.aval.ct_type()) if is_undefined_primal(updates) else None]
    op_ct = up_ct = None
    if is_undefined_primal(operand):
        op_ct = scatter_mul(ct, indices, updates, dimension_numbers=p.dimension_numbers,
                                indices_are_sorted=p.indices_are_sorted,
                                unique_indices=p.unique_indices, mode=p.mode)
    if is_undefined_primal(updates):
        if not p.unique_indices:
            raise NotImplementedError(
                "scatter_mul gradients are only implemented if `unique_indices=True`")
        up_ct = _gather_windows(E.mul(ct, operand), indices, updates.aval.shape,
                                p.dimension_numbers, p.mode)
    return [op_ct, None, up_ct]


class _ScatterExtremalJvp(_PrimitiveRule):
    def __call__(self, primals: list[Any], tangents: list[Any], **params: Any
                 ) -> tuple[list[Any], list[Any]]:
        return _extremal_jvp(self.prim, primals, tangents, _ScatterParams(**params))


def _extremal_jvp(prim: Any, primals: list[Any], tangents: list[Any], p: _ScatterParams
                  ) -> tuple[list[Any], list[Any]]:
    """Each output element's tangent is the average of the tangents of the
    values (updates, and the operand element if it survives) equal to it."""
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    dn = p.dimension_numbers
    out = prim.bind(operand, indices, updates, **p._asdict())
    if type(t_op) is Zero and type(t_up) is Zero:
        return [out], [Zero.from_primal_value(out)]
    t_op, t_up = instantiate(t_op), instantiate(t_up)
    gdn = _gather_dnums_of(dn)
    sizes = _window_sizes(len(_shape_of(operand)), _shape_of(updates), dn)
    common: dict[str, Any] = {"indices_are_sorted": p.indices_are_sorted,
                              "unique_indices": p.unique_indices, "mode": p.mode}

    def gather_at(x: Any) -> Any:
        return gather(x, indices, gdn, sizes, **common)

    def scatter_add_at(x: Any, u: Any) -> Any:
        return scatter_add(x, indices, u, dn, **common)

    initial_vals = gather_at(operand)
    target_vals = gather_at(out)
    successful_updates = updates == target_vals
    retained_values = initial_vals == target_vals
    num_updates = gather_at(scatter_add_at(
        full_like(operand, 0),
        E.select(successful_updates, full_like(updates, 1), full_like(updates, 0))))
    num_refs = gather_at(scatter_add_at(full_like(operand, 0), full_like(updates, 1)))
    updates_normalizer = E.select(retained_values, 1.0 / (num_updates + 1),
                                    1.0 / num_updates)
    updates_coef = E.select(successful_updates, updates_normalizer,
                              full_like(updates, 0))
    operand_normalizer = E.select(retained_values, 1.0 / (num_updates + 1),
                                    full_like(num_updates, 0))
    operand_coef = (-1.0 + operand_normalizer) / num_refs
    target_tangents = gather_at(t_op)
    tangent_updates = target_tangents * operand_coef + t_up * updates_coef
    return [out], [scatter_add_at(t_op, tangent_updates)]


def _uint_dtype_for(n: int) -> T.DType:
    """The unsigned integer type JAX numbers ``n`` things with."""
    return np.dtype(np.uint64) if n > np.iinfo(np.uint32).max else np.dtype(np.uint32)


def _scatter_jvp(primals: list[Any], tangents: list[Any], **params: Any
                 ) -> tuple[list[Any], list[Any]]:
    p = _ScatterParams(**params)
    if p.update_jaxpr is not None:
        raise NotImplementedError("scatter_apply JVP not implemented")
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    if type(t_op) is Zero and type(t_up) is Zero:
        out = scatter_p.bind(operand, indices, updates, **params)
        return [out], [Zero.from_primal_value(out)]
    t_op, t_up = instantiate(t_op), instantiate(t_up)
    if p.unique_indices:
        unique = p._replace(unique_indices=True)._asdict()
        out = scatter_p.bind(operand, indices, updates, **unique)
        return [out], [scatter_p.bind(t_op, indices, t_up, **unique)]
    return _scatter_jvp_overlapping(primals, t_op, t_up, p)


def _scatter_jvp_overlapping(primals: list[Any], t_op: Any, t_up: Any, p: _ScatterParams
                             ) -> tuple[list[Any], list[Any]]:
    """Scatter distinct positive ids to find the winning update of every
    written element, then scatter-add values masked to the winners into an
    operand masked to the unwritten elements (primal and tangent alike)."""
    operand, indices, updates = primals
    dn = p.dimension_numbers
    up_shape = _shape_of(updates)
    ids_shape = [1 if d in dn.update_window_dims else s for d, s in enumerate(up_shape)]
    num_ids = int(np.prod(ids_shape, dtype=np.int64))
    id_dtype = _uint_dtype_for(num_ids)
    update_ids = E.add(reshape(iota(id_dtype, num_ids), ids_shape),
                         full_like(updates, 1, dtype=id_dtype))
    scattered_ids = scatter(full(_shape_of(operand), 0, id_dtype), indices,
                                update_ids, dn, indices_are_sorted=p.indices_are_sorted,
                                unique_indices=p.unique_indices, mode=p.mode)
    sizes = _window_sizes(len(_shape_of(operand)), up_shape, dn)
    gathered_ids = gather(scattered_ids, indices, dimension_numbers=_gather_dnums_of(dn),
                              slice_sizes=sizes)

    def unwritten(x: Any) -> Any:
        return E.select(E.eq(scattered_ids, full_like(scattered_ids, 0)), x,
                          full_like(x, 0))

    def winners(x: Any) -> Any:
        return E.select(E.eq(update_ids, gathered_ids), x, full_like(x, 0))

    masked_operand, masked_updates = unwritten(operand), winners(updates)
    masked_t_op, masked_t_up = unwritten(t_op), winners(t_up)
    common: dict[str, Any] = {"indices_are_sorted": p.indices_are_sorted,
                              "unique_indices": p.unique_indices, "mode": p.mode}
    out = scatter_add(masked_operand, indices, masked_updates, dimension_numbers=dn,
                          **common)
    t_out = scatter_add(masked_t_op, indices, masked_t_up, dimension_numbers=dn, **common)
    return [out], [t_out]


def _scatter_transpose(ct: Any, operand: Any, indices: Any, updates: Any, **params: Any
                       ) -> list[Any]:
    """With unique indices: the operand's cotangent is ct with the written
    windows zeroed, the updates' the written windows of ct."""
    p = _ScatterParams(**params)
    if not p.unique_indices:
        raise NotImplementedError(
            "scatter transpose is only implemented where unique_indices=True")
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type()) if is_undefined_primal(operand) else None, None,
                Zero(updates.aval.ct_type()) if is_undefined_primal(updates) else None]
    up_shape = _shape_of(updates)
    up_sharding = (updates.aval if is_undefined_primal(updates)
                   else canonical_aval_of(updates)).sharding
    op_ct = up_ct = None
    if is_undefined_primal(operand):
        zeros = full(up_shape, 0, dtype=canonical_aval_of(ct).dtype, sharding=up_sharding)
        op_ct = scatter(ct, indices, zeros, dimension_numbers=p.dimension_numbers,
                            indices_are_sorted=p.indices_are_sorted, unique_indices=True,
                            mode=p.mode)
    if is_undefined_primal(updates):
        up_ct = _gather_windows(ct, indices, up_shape, p.dimension_numbers, p.mode)
    return [op_ct, None, up_ct]


def _scatter_mul_jvp_operand(g: Any, x: Any, i: Any, y: Any, **params: Any) -> Any:
    return scatter_mul_p.bind(g, i, y, **params)


_NO_TRANSPOSE = ("its JVP is written with scatter-add and gather, so it never appears "
                 "in a linear program")

scatter_p = _declare_scatter("scatter", _set_at, _scatter_jvp, _scatter_transpose)
scatter_add_p = _declare_scatter("scatter-add", _ufunc_at(np.add), _ScatterAddSubJvp(),
                                 _scatter_addsub_transpose(negate=False))
scatter_sub_p = _declare_scatter("scatter-sub", _ufunc_at(np.subtract), _ScatterAddSubJvp(),
                                 _scatter_addsub_transpose(negate=True))
scatter_mul_p = _declare_scatter(
    "scatter-mul", _ufunc_at(np.multiply),
    defjvp(_scatter_mul_jvp_operand, None, _scatter_mul_jvp_updates), _scatter_mul_transpose)
scatter_min_p = _declare_scatter("scatter-min", _ufunc_at(np.minimum), _ScatterExtremalJvp(),
                                 not_applicable("scatter-min is not linear; " + _NO_TRANSPOSE))
scatter_max_p = _declare_scatter("scatter-max", _ufunc_at(np.maximum), _ScatterExtremalJvp(),
                                 not_applicable("scatter-max is not linear; " + _NO_TRANSPOSE))


__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "gather", "gather_p",
    "scatter", "scatter_add", "scatter_add_p", "scatter_max", "scatter_max_p", "scatter_min",
    "scatter_apply", "scatter_min_p", "scatter_mul", "scatter_mul_p", "scatter_p", "scatter_sub",
    "scatter_sub_p",
]


# ------------------------------------------------------------ lax wrappers

def _default_fill_value(dtype: T.DType) -> Any:
    """The fill of an out-of-bounds FILL_OR_DROP gather, as a Python scalar
    (for key arrays, the value of every word of a missing key's data)."""
    if is_key_dtype(dtype):
        return int(np.iinfo(np.uint32).max)
    if T.is_inexact(dtype):
        return np.nan
    if T.is_signed_int(dtype):
        return int(np.iinfo(dtype).min)
    if T.is_unsigned_int(dtype):
        return int(np.iinfo(dtype).max)
    return True


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """Gather windows of ``slice_sizes`` from ``operand`` at ``start_indices``.

    ``mode`` None means PROMISE_IN_BOUNDS; ``fill_value`` only matters for
    FILL_OR_DROP and defaults to NaN / the int minimum / uint maximum / True.
    """
    parsed = GatherScatterMode.from_any(
        GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill_value(canonical_aval_of(operand).dtype)
    else:
        fill_value = None
    sizes = tuple(operator.index(s) for s in slice_sizes)
    return gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
                         slice_sizes=sizes, unique_indices=bool(unique_indices),
                         indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                         fill_value=fill_value)


_UPDATE_JAXPRS: dict[tuple[str, T.DType], Jaxpr] = {}


_COMBINERS: dict[str, Callable[[Any, Any], Any]] = {
    "add": E.add, "sub": E.sub, "mul": E.mul, "min": E.min, "max": E.max}


def _update_jaxpr(op_name: str, dtype: T.DType) -> Jaxpr:
    """The scalar combiner ``op(a, b)`` on ``dtype`` as a jaxpr (cached, as JAX
    caches it, so two scatters of one kind share one jaxpr object)."""
    known = _UPDATE_JAXPRS.get((op_name, dtype))
    if known is not None:
        return known
    fn = _COMBINERS[op_name]
    scalar = T.ArrayType((), dtype, False)
    jaxpr, _ = trace_to_jaxpr(lambda a, b: [fn(a, b)], [scalar, scalar])
    _UPDATE_JAXPRS[(op_name, dtype)] = jaxpr
    return jaxpr


def _scatter(prim: Any, op_name: str | None, operand: Any, scatter_indices: Any,
             updates: Any, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool,
             mode: str | GatherScatterMode | None) -> Any:
    jaxpr = None
    if op_name is not None:
        jaxpr = _update_jaxpr(op_name, canonical_aval_of(operand).dtype)
    return prim.bind(operand, scatter_indices, updates, update_jaxpr=jaxpr, update_consts=(),
                     dimension_numbers=dimension_numbers,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                     mode=GatherScatterMode.from_any(mode))


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Replace windows of ``operand`` by ``updates`` (last duplicate wins)."""
    return _scatter(scatter_p, None, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_add_p, "add", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_sub_p, "sub", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_mul_p, "mul", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_min_p, "min", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter(scatter_max_p, "max", operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                  ) -> Any:
    """``func`` applied to ``operand`` at the scattered indices, once per index
    (duplicates apply it again): scatter with ``func`` as its update computation
    and zeros of ``update_shape`` as (unused) updates."""
    aval = canonical_aval_of(operand)
    unused = full(tuple(update_shape), 0, aval.dtype)
    scalar = ArrayType((), aval.dtype, aval.weak_type)
    jaxpr, _ = trace_to_jaxpr(lambda x, _: [func(x)], [scalar, scalar])
    return scatter_p.bind(operand, scatter_indices, unused, update_jaxpr=jaxpr,
                          update_consts=tuple(jaxpr.consts),
                          dimension_numbers=dimension_numbers,
                          indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                          mode=GatherScatterMode.from_any(mode))
