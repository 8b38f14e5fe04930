"""Slicing primitives: slicing, padding, concatenating, splitting, reversing, tiling.

They select, move or copy elements. Each typing rule's constraints are
numbered C1, C2, ... in the order they are checked; the numbers are cited in
error messages and in SPEC.md (section 9.2).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.lowering import rules as LR
from spec._src.lowering import structural as ST
from spec._src.interpreters.ad_util import (
    UndefinedPrimal,
    Zero,
    instantiate,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
)
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    insert_spec_entry,
    moveaxis,
    vectorized,
)
from spec._src.core.array import host_value
from spec._src.core.interpreter import (
    canonical_aval_of,
    hooks,
    Primitive,
    from_primitive,
)
from spec._src.core.errors import ShardingTypeError
from spec._src.lax import sharding_kit as SK
from spec._src.core.sharding import NamedSharding, P
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.interpreters.ad import RefAccum

from spec._src.lax.elementwise import select, select_n_p, sub
from spec._src.lax.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather_p,
    scatter_p,
)
from spec._src.lax.state import add_into_slices
from spec._src.lax.shaping import (
    _convert_element_type,
    _is_array,
    _ndim,
    _shape,
    asarray,
    bind_reduce_sum,
    broadcast,
    broadcast_in_dim,
    canonicalize_axis,
    full,
    full_like,
    reshape,
    squeeze,
    Batched,
    _NO_AXES,
    _Parts,
    _all_weak,
    _bd,
    _check_shapelike,
    _cts_or_none,
    _shape_of,
    _varying_out_shape,
    _zero_cts,
    Shape,
)

_builtin_slice = slice


def _concatenate_parts(mesh: Any, *xs: ArrayType, dimension: int) -> list[_Parts]:
    sharded = [x for x in xs if x.sharding is not None]
    if any(x.sharding != sharded[0].sharding for x in sharded[1:]):
        shown = ", ".join(str(x.sharding) for x in xs)
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings"
                                f" {shown}")
    return [SK.parts(sharded[0])]


def _concatenate_ur(*xs: ArrayType, dimension: int) -> SK.UR:
    reds = {r for x in xs if (r := SK.getr(x))}
    if len(reds) > 1:
        raise ShardingTypeError("All operands should be reduced along the same mesh axes. Got"
                                f" reduced specs: {reds}")
    urs = {(u, SK.getu_kind(x)) for x in xs if (u := SK.getu(x))}
    if len(urs) > 1:
        raise ShardingTypeError("All operands should be unreduced along the same mesh axes and"
                                " have the same unreduced_kind. Got unreduced specs:"
                                f" {urs}")
    (u, kind), = urs if urs else {(_NO_AXES, None)}
    (r,) = reds if reds else {_NO_AXES}
    return u, r, kind


def _slice_parts(mesh: Any, x: ArrayType, **params: Any) -> list[_Parts]:
    (out,) = _slice_type(x, **params)
    return [_varying_out_shape("slicing", mesh, x, out.shape)]


def _pad_parts(mesh: Any, x: ArrayType, value: ArrayType, **params: Any) -> list[_Parts]:
    (out,) = _pad_type(x, value, **params)
    return [_varying_out_shape("padding", mesh, x, out.shape)]


def _dynamic_slice_parts(mesh: Any, x: ArrayType, *idx: ArrayType, **params: Any
                         ) -> list[_Parts]:
    (out,) = _dynamic_slice_type(x, *idx, **params)
    return [_varying_out_shape("dynamic_slice", mesh, x, out.shape)]


def _dynamic_slice_ur(x: ArrayType, *idx: ArrayType, **params: Any) -> SK.UR:
    if SK.getu(x):
        raise NotImplementedError("unreduced rule for dynamic_slice is not implemented. Please"
                                  " file an issue at https://github.com/jax-ml/jax/issues")
    return _NO_AXES, SK.getr(x), None


def _dus_parts(mesh: Any, x: ArrayType, update: ArrayType, *idx: ArrayType
               ) -> list[_Parts]:
    if x.sharding != update.sharding:
        raise ShardingTypeError(
            "dynamic_update_slice operand sharding must be equal to update sharding, got"
            f" operand sharding {x.str_short(True)} and update sharding {update.str_short(True)}.")
    return [SK.parts(x)]


def _dus_ur(x: ArrayType, update: ArrayType, *idx: ArrayType) -> SK.UR:
    if any(SK.getu(i) or SK.getr(i) for i in idx):
        raise ShardingTypeError("dynamic_update_slice start_indices cannot have unreduced or"
                                f" reduced axes. Got start_indices={idx}")
    # Operand and update have equal shardings (checked by the partition rule).
    return SK.keeps(x)


# ------------------------------------- stack, split, unstack, tile, bitcast


def _stack_parts(mesh: Any, *xs: ArrayType, axis: int) -> list[_Parts]:
    # Operands with shardings must agree; the new axis is replicated.
    ps = list(_concatenate_parts(mesh, *xs, dimension=axis)[0])
    ps.insert(axis, None)
    return [tuple(ps)]


def _stack_ur(*xs: ArrayType, axis: int) -> SK.UR:
    return _concatenate_ur(*xs, dimension=axis)


def _split_parts(mesh: Any, x: ArrayType, *, sizes: Shape, axis: int) -> list[_Parts]:
    outs = _split_type(x, sizes=sizes, axis=axis)
    return [_varying_out_shape("split", mesh, x, o.shape) for o in outs]


def _unstack_parts(mesh: Any, x: ArrayType, *, axis: int) -> list[_Parts]:
    ps = list(SK.parts(x))
    if ps[axis] is not None:
        raise ShardingTypeError(f"unstack operand cannot be sharded on the unstacking axis"
                                f" {axis}. Got operand type={x.str_short(True)}")
    del ps[axis]
    return [tuple(ps)] * x.shape[axis]


def _tile_parts(mesh: Any, x: ArrayType, *, reps: Shape) -> list[_Parts]:
    ps = SK.parts(x)
    for i, (r, entry) in enumerate(zip(reps, ps)):
        if r != 1 and entry is not None:
            raise ShardingTypeError(f"Operand cannot be sharded on dimension {i} when the"
                                    f" tiling is non-trivial. Got input type: {x} with reps:"
                                    f" {tuple(reps)}")
    return [ps]


# ------------------------------------------------------- per-device programs


def _axes_untouched(param: str) -> Callable[..., bool]:
    """The primitive's ``param`` dimensions are all unsharded."""
    def ok(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
        dims = params[param]
        dims = (dims,) if isinstance(dims, int) else dims
        return not (PD.sharded_dims(args[0].aval) & {int(d) for d in dims})
    return ok


def _full_on_sharded(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Sharded dimensions keep their size (the op is the identity there)."""
    x, out = args[0].aval, out_avals[0]
    return all(x.shape[d] == out.shape[d] for d in PD.sharded_dims(x))


def _slice_ok(args: list[Dist], out_avals: list[ArrayType], *, start_indices: Any,
              limit_indices: Any, strides: Any) -> bool:
    x = args[0].aval
    steps = strides or (1,) * x.ndim
    return all(start_indices[d] == 0 and limit_indices[d] == x.shape[d] and steps[d] == 1
               for d in PD.sharded_dims(x))


def _slice_fix(args: list[Dist], out_avals: list[ArrayType], shapes: list[Any], *,
               start_indices: Any, limit_indices: Any, strides: Any) -> dict[str, Any]:
    limits = tuple(int(s) if d in PD.sharded_dims(args[0].aval) else int(limit_indices[d])
                   for d, s in enumerate(shapes[0]))
    return {"start_indices": start_indices, "limit_indices": limits, "strides": strides}


def _pad_ok(args: list[Dist], out_avals: list[ArrayType], *, padding_config: Any) -> bool:
    return all(tuple(padding_config[d]) == (0, 0, 0) for d in PD.sharded_dims(args[0].aval))


def _dus_ok(args: list[Dist], out_avals: list[ArrayType]) -> bool:
    x, update = args[0].aval, args[1].aval
    return all(x.shape[d] == update.shape[d] for d in PD.sharded_dims(x)) and \
        S.parts_of(x) == S.parts_of(update)


def _concat_ok(args: list[Dist], out_avals: list[ArrayType], *, dimension: int) -> bool:
    return not S.parts_of(out_avals[0])[dimension]


def aligned_stack(prim: Primitive) -> PD.Program:
    """stack: operands take the result's layout without the new axis."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, axis: int
                ) -> list[Dist]:
        parts = list(S.parts_of(out_avals[0]))
        del parts[axis]
        cut = [a if not a.aval.ndim else PD.cut(a, parts, geo, out_avals[0]) for a in args]
        return S.run_local(prim, geo, cut, out_avals, {"axis": axis})
    return program


# ====================================================================== rev

def _rev_type(x: ArrayType, *, dimensions: Shape) -> list[ArrayType]:
    _check_shapelike("rev", "C1", "dimensions", dimensions)
    require(len(set(dimensions)) == len(dimensions), "rev", "C2",
            f"dimensions must be unique, got {tuple(dimensions)}")
    require(all(d < x.ndim for d in dimensions), "rev", "C3",
            f"dimensions must all be less than operand ndim, got dimensions "
            f"{tuple(dimensions)} for operand ndim {x.ndim}")
    return [x]


def _rev_impl(x: np.ndarray, *, dimensions: Shape) -> list[np.ndarray]:
    return [np.flip(x, axis=tuple(dimensions)) if dimensions else x]


def _rev_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
               dimensions: Shape) -> Batched:
    """The reversed axes renumbered around the batch axis, which stays put."""
    dim = _bd(dims[0])
    new = tuple(i + 1 if i >= dim else i for i in dimensions)
    return [rev(args[0], new)], [dim]


rev_p = declare("rev", typing=_rev_type, impl=_rev_impl, jvp=linear_jvp(), lowering=LR.rev,
                transpose=linear_transpose(
                    lambda ct, x, *, dimensions: rev(ct, dimensions)),
                batch=_rev_batch,
                sharding=SK.auto_placed(SK.section("rev", SK.same_as(0)), SK.as_split_operands),
                per_device=from_primitive(
                    lambda p: PD.guarded(p, _axes_untouched("dimensions"), PD.local(p))))


# ==================================================================== slice

def _slice_type(x: ArrayType, *, start_indices: Shape, limit_indices: Shape,
                strides: Shape | None) -> list[ArrayType]:
    name = "slice"
    _check_shapelike(name, "C1", "start_indices", start_indices)
    _check_shapelike(name, "C1", "limit_indices", limit_indices)
    require(len(start_indices) == x.ndim, name, "C2",
            f"start_indices {tuple(start_indices)} must have one entry per axis of operand "
            f"shape {x.shape}")
    require(len(limit_indices) == len(start_indices), name, "C3",
            f"limit_indices {tuple(limit_indices)} must have the length of start_indices "
            f"{tuple(start_indices)}")
    require(all(lim <= d for lim, d in zip(limit_indices, x.shape)), name, "C4",
            f"limit_indices {tuple(limit_indices)} must be <= operand shape {x.shape}")
    require(all(lim >= s for s, lim in zip(start_indices, limit_indices)), name, "C5",
            f"limit_indices {tuple(limit_indices)} must be >= start_indices "
            f"{tuple(start_indices)}")
    diff = [int(lim) - int(s) for s, lim in zip(start_indices, limit_indices)]
    if strides is None or tuple(strides) == (1,) * x.ndim:
        return [ArrayType(tuple(diff), x.dtype, x.weak_type)]
    _check_shapelike(name, "C6", "strides", strides)
    require(len(strides) == x.ndim, name, "C6",
            f"strides {tuple(strides)} must have one entry per axis of operand shape {x.shape}")
    if any(s == 0 for s in strides):
        # JAX divides by the stride and so raises ZeroDivisionError; keep its class.
        raise ZeroDivisionError(f"slice C6: strides must be positive, got {tuple(strides)}")
    shape = tuple(0 if d == 0 else (d - 1) // int(s) + 1 for d, s in zip(diff, strides))
    return [ArrayType(shape, x.dtype, x.weak_type)]


def _slice_impl(x: np.ndarray, *, start_indices: Shape, limit_indices: Shape,
                strides: Shape | None) -> list[np.ndarray]:
    steps = strides if strides is not None else (1,) * x.ndim
    idx = tuple(_builtin_slice(s, lim, st)
                for s, lim, st in zip(start_indices, limit_indices, steps))
    return [x[idx]]


def _slice_transpose(ct: Any, operand: UndefinedPrimal, *, start_indices: Shape,
                     limit_indices: Shape, strides: Shape | None) -> Any:
    """Pad the cotangent with zeros back to the operand shape: low padding is
    the start, high padding what lies past the last element read, interior
    padding stride - 1. (The NumPy arithmetic mirrors JAX's, so the param
    values print as JAX's do, np.int64 included.)"""
    shape = operand.aval.shape
    if strides is None or np.all(np.equal(strides, 1)):
        pads = zip(start_indices, np.subtract(shape, limit_indices), (0,) * len(start_indices))
    else:
        ct_shape = canonical_aval_of(ct).shape
        spans = np.where(np.array(ct_shape) == 0, 0,
                         np.add(1, np.multiply(np.subtract(ct_shape, 1), strides)))
        real_limits = np.add(start_indices, spans)
        pads = zip(start_indices, np.subtract(shape, real_limits), np.subtract(strides, 1))
    zero = np.array(0, canonical_aval_of(ct).dtype)
    return pad_p.bind(ct, zero, padding_config=tuple(pads))


def _slice_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                 start_indices: Shape, limit_indices: Shape, strides: Shape | None
                 ) -> Batched:
    """The whole batch axis is kept (start 0, its size, stride 1)."""
    (x,), dim = args, _bd(dims[0])
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(dim, 0)
    limits.insert(dim, canonical_aval_of(x).shape[dim])
    steps = None
    if strides is not None:
        steps = list(strides)
        steps.insert(dim, 1)
    return [slice(x, starts, limits, steps)], [dim]


def _slice_transpose_into(ct: Any, operand: Any, *, start_indices: Shape,
                          limit_indices: Shape, strides: Shape | None) -> list[Any]:
    """Into a gradient ref: add the cotangent where the slice read."""
    if not isinstance(operand, RefAccum):
        return _slice_transpose_dense(ct, operand, start_indices=start_indices,
                                      limit_indices=limit_indices, strides=strides)
    if type(ct) is not Zero:
        add_into_slices(operand, ct, [int(s) for s in start_indices],
                        canonical_aval_of(ct).shape, strides)
    return [None]


_slice_transpose_dense = linear_transpose(_slice_transpose)
slice_p = declare("slice", typing=_slice_type, impl=_slice_impl, jvp=linear_jvp(),
                  lowering=LR.slice_,
                  transpose=_slice_transpose_into, batch=_slice_batch,
                  sharding=SK.auto_placed(SK.section("slice", _slice_parts, SK.keeps),
                                          SK.as_split_operands),
                  transpose_accumulates=True,
                  per_device=from_primitive(
                      lambda p: PD.guarded(p, _slice_ok, PD.localized(p, _slice_fix))))


# ============================================================ dynamic_slice

def _check_indices(name: str, x: ArrayType, idx: Sequence[ArrayType], c_rank: str,
                   c_dtype: str) -> None:
    require(len(idx) == x.ndim, name, c_rank,
            f"got {len(idx)} start indices for operand of rank {x.ndim}")
    require(all(i.ndim == 0 for i in idx), name, c_rank,
            f"start indices must be scalars, got shapes {[i.shape for i in idx]}")
    require(all(T.is_int(i.dtype) and i.dtype == idx[0].dtype for i in idx), name, c_dtype,
            "start indices must be integers of one dtype, got "
            f"{', '.join(i.dtype.name for i in idx)}")


def _dynamic_slice_type(x: ArrayType, *idx: ArrayType, slice_sizes: Shape
                        ) -> list[ArrayType]:
    name = "dynamic_slice"
    require(len(slice_sizes) == x.ndim, name, "C1",
            f"slice_sizes {tuple(slice_sizes)} must have one entry per axis of operand "
            f"shape {x.shape}")
    require(all(s <= d for s, d in zip(slice_sizes, x.shape)), name, "C2",
            f"slice_sizes {tuple(slice_sizes)} must be <= operand shape {x.shape}")
    require(all(s >= 0 for s in slice_sizes), name, "C3",
            f"slice_sizes {tuple(slice_sizes)} must be >= 0")
    _check_indices(name, x, idx, "C4", "C5")
    return [ArrayType(tuple(slice_sizes), x.dtype, x.weak_type)]


def _clamped_starts(shape: Shape, sizes: Shape, idx: Sequence[np.ndarray]) -> list[int]:
    """Start indices clamped so that the window fits, as XLA does."""
    return [int(np.clip(np.asarray(i).astype(np.int64), 0, d - s))
            for i, d, s in zip(idx, shape, sizes)]


def _dynamic_slice_impl(x: np.ndarray, *idx: np.ndarray, slice_sizes: Shape
                        ) -> list[np.ndarray]:
    starts = _clamped_starts(x.shape, slice_sizes, idx)
    return [x[tuple(_builtin_slice(s, s + n) for s, n in zip(starts, slice_sizes))]]


def _dynamic_slice_jvp(primals: list[Any], tangents: list[Any], *, slice_sizes: Shape
                       ) -> tuple[list[Any], list[Any]]:
    """Linear in the operand; the start indices are integers (no tangent).
    The tangent is sliced before the primal, in JAX's order."""
    x, *idx = primals
    t = tangents[0]
    if type(t) is not Zero:
        t = dynamic_slice_p.bind(t, *idx, slice_sizes=slice_sizes)
    out = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
    return [out], [Zero.from_primal_value(out) if type(t) is Zero else t]


def _dynamic_slice_transpose(ct: Any, operand: Any, *idx: Any, slice_sizes: Shape
                             ) -> list[Any]:
    """Write the cotangent into zeros (of the cotangent's dtype) at the same,
    identically clamped, start indices."""
    if isinstance(operand, RefAccum):  # into a gradient ref: only the slice read
        if type(ct) is not Zero:
            add_into_slices(operand, ct, idx, slice_sizes)
        return [None] * (1 + len(idx))
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type())] + [None] * len(idx)
    # The zeros take the primal operand's sharding, as the cotangent does.
    zeros = full(operand.aval.shape, 0, canonical_aval_of(ct).dtype,
                 sharding=operand.aval.sharding)
    return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


def _index_vector(axis: AxisData, idx: Sequence[Any], dims: Sequence[BatchDim]
                  ) -> tuple[Any, BatchDim]:
    """The scalar start indices as one index vector (for gather/scatter):
    shape (n,) when none is batched, else (batch, n) batched at 0 with the
    unbatched ones broadcast along the batch."""
    if not idx:
        return np.array([], np.int32), None
    if all(d is None for d in dims):
        return concatenate([broadcast(i, (1,)) for i in idx], 0), None
    # The index vector's batch axis is sharded as the first batched index's.
    first = next(i for i, d in zip(idx, dims) if d is not None)
    s = canonical_aval_of(first).sharding
    out_s = None if s is None else NamedSharding(s.mesh, P(_spec_entry(first, 0), None))
    cols = [broadcast_in_dim(i, (axis.size, 1), (0,) if d is not None else (),
                                 out_sharding=out_s)
            for i, d in zip(idx, dims)]
    return concatenate(cols, 1), 0


def _dynamic_slice_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                         slice_sizes: Shape) -> Batched:
    """A gather, as JAX batches it: the start indices become one index
    vector (batched when any is); a batched operand gains a batch axis in
    front, which is a window axis of full size when the indices are
    unbatched and a batching axis shared with the indices otherwise."""
    x, *idx = args
    x_dim, *idx_dims = dims
    ndim = len(idx)
    axes = tuple(range(ndim))
    index, index_dim = _index_vector(axis, idx, idx_dims)
    common: dict[str, Any] = {"mode": GatherScatterMode.CLIP, "fill_value": None}
    if index_dim is None:  # the operand is batched
        x = moveaxis(x, _bd(x_dim), 0)
        dnums = GatherDimensionNumbers(
            offset_dims=(0, *np.add(1, axes)), collapsed_slice_dims=(),
            start_index_map=tuple(np.add(1, axes)))
        sizes = (canonical_aval_of(x).shape[0], *slice_sizes)
        out = gather_p.bind(x, index, dimension_numbers=dnums, slice_sizes=sizes,
                            unique_indices=True, indices_are_sorted=True, **common)
    elif x_dim is None:
        dnums = GatherDimensionNumbers(
            offset_dims=tuple(1 + d for d in axes), collapsed_slice_dims=(),
            start_index_map=axes)
        out = gather_p.bind(x, index, dimension_numbers=dnums, slice_sizes=tuple(slice_sizes),
                            unique_indices=False, indices_are_sorted=False, **common)
    else:
        x = moveaxis(x, x_dim, 0)
        dnums = GatherDimensionNumbers(
            offset_dims=tuple(np.add(1, axes)), collapsed_slice_dims=(),
            start_index_map=tuple(np.add(1, axes)), operand_batching_dims=(0,),
            start_indices_batching_dims=(0,))
        sizes = (0 if axis.size == 0 else 1, *slice_sizes)
        out = gather_p.bind(x, index, dimension_numbers=dnums, slice_sizes=sizes,
                            unique_indices=True, indices_are_sorted=True, **common)
    return [out], [0]


dynamic_slice_p = declare("dynamic_slice", lowering=ST.dynamic_slice, typing=_dynamic_slice_type,
                          impl=_dynamic_slice_impl, jvp=_dynamic_slice_jvp,
                          transpose=_dynamic_slice_transpose, batch=_dynamic_slice_batch,
                          sharding=SK.auto_placed(SK.section("dynamic_slice",
                                                             _dynamic_slice_parts,
                                                             _dynamic_slice_ur),
                                                  SK.as_split_operands),
                          transpose_accumulates=True,
                          per_device=from_primitive(lambda p: PD.guarded(
                              p, _full_on_sharded, PD.localized(p, PD.shape_fix("slice_sizes")))))


def _dynamic_update_slice_type(x: ArrayType, update: ArrayType, *idx: ArrayType
                               ) -> list[ArrayType]:
    name = "dynamic_update_slice"
    require(update.ndim == x.ndim, name, "C1",
            f"update shape {update.shape} must have the rank of operand shape {x.shape}")
    require(all(u <= d for u, d in zip(update.shape, x.shape)), name, "C2",
            f"update shape {update.shape} must be <= operand shape {x.shape}")
    require(update.dtype == x.dtype, name, "C3",
            f"operand and update must have the same dtype, got {x.dtype.name}, "
            f"{update.dtype.name}")
    _check_indices(name, x, idx, "C4", "C5")
    return [ArrayType(x.shape, x.dtype, _all_weak(x, update, *idx))]


def _dynamic_update_slice_impl(x: np.ndarray, update: np.ndarray, *idx: np.ndarray
                               ) -> list[np.ndarray]:
    starts = _clamped_starts(x.shape, update.shape, idx)
    out = x.copy()
    out[tuple(_builtin_slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return [out]


def _dynamic_update_slice_jvp(primals: list[Any], tangents: list[Any]
                              ) -> tuple[list[Any], list[Any]]:
    """Linear in (operand, update) jointly: the tangents are combined the same way."""
    x, update, *idx = primals
    tx, tu = tangents[:2]
    out = dynamic_update_slice_p.bind(x, update, *idx)
    if type(tx) is Zero and type(tu) is Zero:
        return [out], [Zero.from_primal_value(out)]
    return [out], [dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *idx)]


def _dynamic_update_slice_transpose(ct: Any, operand: Any, update: Any, *idx: Any
                                    ) -> list[Any]:
    """The operand's cotangent is ct with the window zeroed; the update's is
    the window of ct."""
    if type(ct) is Zero:
        return [*_zero_cts([operand, update]), *([None] * len(idx))]
    update_shape = _shape_of(update)
    zeros = full_like(ct, 0, shape=update_shape)
    op_ct = (dynamic_update_slice_p.bind(ct, zeros, *idx)
             if is_undefined_primal(operand) else None)
    up_ct = (dynamic_slice_p.bind(ct, *idx, slice_sizes=update_shape)
             if is_undefined_primal(update) else None)
    return [op_ct, up_ct, *([None] * len(idx))]


def _dynamic_update_slice_batch(axis: AxisData, args: list[Any], dims: list[BatchDim]
                                ) -> Batched:
    """A scatter, as JAX batches it: operand and update get their batch axis
    in front (broadcast there when unbatched); the start indices become one
    index vector, and the batch axis is an update window axis when that is
    unbatched, a batching axis shared with the indices otherwise."""
    x, update, *idx = args
    x_dim, u_dim, *idx_dims = dims
    axes = tuple(range(len(idx)))
    index, index_dim = _index_vector(axis, idx, idx_dims)
    x = bdim_at_front(x, x_dim, axis.size, axis.explicit_mesh_axis)
    update = bdim_at_front(update, u_dim, axis.size, axis.explicit_mesh_axis)
    if index_dim is None:
        dnums = ScatterDimensionNumbers(
            update_window_dims=(0, *np.add(1, axes)), inserted_window_dims=(),
            scatter_dims_to_operand_dims=tuple(np.add(1, axes)))
    else:
        dnums = ScatterDimensionNumbers(
            update_window_dims=tuple(np.add(1, axes)), inserted_window_dims=(),
            scatter_dims_to_operand_dims=tuple(np.add(1, axes)), operand_batching_dims=(0,),
            scatter_indices_batching_dims=(0,))
    out = scatter_p.bind(x, index, update, update_jaxpr=None, update_consts=(),
                         dimension_numbers=dnums, indices_are_sorted=True,
                         unique_indices=True, mode=GatherScatterMode.CLIP)
    return [out], [0]


dynamic_update_slice_p = declare("dynamic_update_slice", lowering=ST.dynamic_update_slice,
                                 typing=_dynamic_update_slice_type,
                                 impl=_dynamic_update_slice_impl,
                                 jvp=_dynamic_update_slice_jvp,
                                 transpose=_dynamic_update_slice_transpose,
                                 batch=_dynamic_update_slice_batch,
                                 sharding=SK.auto_placed(
                                     SK.section("dynamic_update_slice", _dus_parts, _dus_ur),
                                     SK.as_split_operands),
                                 per_device=from_primitive(
                                     lambda p: PD.guarded(p, _dus_ok, PD.local(p))))


# ============================================================== concatenate

def _same_dtypes(name: str, c: str, avals: Sequence[ArrayType]) -> None:
    require(all(a.dtype == avals[0].dtype for a in avals), name, c,
            f"operands must have the same dtypes, got "
            f"{', '.join(a.dtype.name for a in avals)} (jnp.{name} promotes dtypes)")


def _concatenate_type(*xs: ArrayType, dimension: int) -> list[ArrayType]:
    name = "concatenate"
    require(len(xs) > 0, name, "C1", "expects at least one operand, got 0")
    require(len({x.ndim for x in xs}) == 1, name, "C2",
            f"operands must have one rank, got shapes {', '.join(str(x.shape) for x in xs)}")
    require(0 <= dimension < xs[0].ndim, name, "C3",
            f"dimension {dimension} is out of bounds for shapes "
            f"{', '.join(str(x.shape) for x in xs)}")
    others = {x.shape[:dimension] + x.shape[dimension + 1:] for x in xs}
    require(len(others) == 1, name, "C4",
            f"shapes may differ only along dimension {dimension}, got "
            f"{', '.join(str(x.shape) for x in xs)}")
    _same_dtypes(name, "C5", xs)
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [ArrayType(tuple(shape), xs[0].dtype, _all_weak(*xs))]


def _concatenate_impl(*xs: np.ndarray, dimension: int) -> list[np.ndarray]:
    return [np.concatenate(xs, axis=dimension)]


def _concatenate_transpose(ct: Any, *operands: Any, dimension: int) -> list[Any]:
    """Split the cotangent into the operands' pieces along ``dimension``."""
    if type(ct) is Zero:
        return _zero_cts(operands)
    sizes = tuple(_shape_of(x)[dimension] for x in operands)
    return _cts_or_none(split(ct, sizes, axis=dimension), operands)


def _front(axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
           keep_sharding: bool = False) -> list[Any]:
    """Every operand with its batch axis in front (unbatched ones broadcast
    with ``lax.broadcast``, as JAX's concatenate and stack rules do; with
    ``keep_sharding`` (concatenate's rule) a sharded unbatched operand's new
    axis is sharded as the first batched operand's batch axis)."""
    entry = next(_spec_entry(x, d) for x, d in zip(args, dims) if d is not None)

    def front(x: Any) -> Any:
        s = canonical_aval_of(x).sharding
        if not keep_sharding or s is None:
            return broadcast(x, (axis.size,))
        return broadcast(x, (axis.size,), out_sharding=insert_spec_entry(s, 0, entry))
    return [moveaxis(x, d, 0) if d is not None else front(x) for x, d in zip(args, dims)]


def _spec_entry(x: Any, dim: int) -> Any:
    """The spec entry of dimension ``dim`` of ``x``'s type (None unsharded)."""
    s = canonical_aval_of(x).sharding
    return None if s is None else SK.parts(canonical_aval_of(x))[dim]


def _concatenate_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                       dimension: int) -> Batched:
    """Batch axes to the front; concatenate along the shifted dimension."""
    return [concatenate(_front(axis, args, dims, True), dimension + 1)], [0]


concatenate_p = declare("concatenate", typing=_concatenate_type, impl=_concatenate_impl,
                        lowering=LR.concatenate,
                        jvp=linear_jvp(), transpose=_concatenate_transpose,
                        batch=_concatenate_batch,
                        sharding=SK.auto_placed(
                            SK.section("concatenate", _concatenate_parts, _concatenate_ur),
                            SK.concatenated_placement),
                        per_device=from_primitive(
                            lambda p: PD.guarded(p, _concat_ok, PD.aligned(p))))


# ==================================================================== stack

def _stack_type(*xs: ArrayType, axis: int) -> list[ArrayType]:
    name = "stack"
    require(len(xs) > 0, name, "C1", "expects at least one operand, got 0", ValueError)
    require(len({x.shape for x in xs}) == 1, name, "C2",
            f"all operands must have the same shape, got "
            f"{', '.join(str(x.shape) for x in xs)}", ValueError)
    require(0 <= axis <= xs[0].ndim, name, "C3",
            f"axis {axis} is out of bounds for result rank {xs[0].ndim + 1}", ValueError)
    _same_dtypes(name, "C4", xs)
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return [ArrayType(tuple(shape), xs[0].dtype, _all_weak(*xs))]


def _stack_impl(*xs: np.ndarray, axis: int) -> list[np.ndarray]:
    return [np.stack(xs, axis=axis)]


def _stack_transpose(ct: Any, *operands: Any, axis: int) -> list[Any]:
    """Unstack the cotangent along ``axis``."""
    if type(ct) is Zero:
        return _zero_cts(operands)
    return _cts_or_none(unstack_p.bind(ct, axis=axis), operands)


def _stack_batch(axis_data: AxisData, args: list[Any], dims: list[BatchDim], /, *,
                 axis: int) -> Batched:
    """Operands batched at one axis stack as they are (the new axis placed
    around the batch axis); otherwise batch axes go to the front. (The
    primitive's ``axis`` param shadows the usual rule argument name.)"""
    ax, dim = axis, dims[0]
    if dim is not None and all(d == dim for d in dims):
        if ax <= dim:
            return [stack_p.bind(*args, axis=ax)], [dim + 1]
        return [stack_p.bind(*args, axis=ax + 1)], [dim]
    return [stack_p.bind(*_front(axis_data, args, dims), axis=ax + 1)], [0]


stack_p = declare("stack", lowering=ST.stack,
                  typing=_stack_type, impl=_stack_impl, jvp=linear_jvp(),
                  transpose=_stack_transpose, batch=_stack_batch,
                  sharding=SK.auto_placed(SK.section("stack", _stack_parts, _stack_ur),
                                          SK.stacked_placement),
                  per_device=from_primitive(aligned_stack))


# ==================================================================== split

def _split_type(x: ArrayType, *, sizes: Shape, axis: int) -> list[ArrayType]:
    name = "split"
    require(0 <= axis < x.ndim, name, "C1",
            f"axis {axis} is out of bounds for operand of rank {x.ndim}", ValueError)
    require(all(s >= 0 for s in sizes), name, "C2",
            f"sizes must be nonnegative, got {[int(s) for s in sizes]}", ValueError)
    total = int(sum(int(s) for s in sizes))
    require(total == x.shape[axis], name, "C3",
            f"sum of sizes {total} must equal dimension {axis} of operand shape "
            f"{list(x.shape)}", ValueError)
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = int(s)
        outs.append(ArrayType(tuple(shape), x.dtype, x.weak_type))
    return outs


def _split_impl(x: np.ndarray, *, sizes: Shape, axis: int) -> list[np.ndarray]:
    cuts = np.cumsum([int(s) for s in sizes])[:-1]
    return list(np.split(x, cuts, axis=axis))


def _split_transpose(cts: list[Any], operand: UndefinedPrimal, *, sizes: Shape, axis: int
                     ) -> list[Any]:
    """Concatenate the pieces' cotangents (zeros materialised) along ``axis``."""
    if all(type(c) is Zero for c in cts):
        return [Zero(operand.aval.ct_type())]
    return [concatenate([instantiate(c) for c in cts], axis)]


def _split_batch(axis_data: AxisData, args: list[Any], dims: list[BatchDim], /, *,
                 sizes: Shape, axis: int) -> Batched:
    """Split along the axis renumbered around the batch axis."""
    ax, dim = axis, _bd(dims[0])
    outs = split(args[0], sizes, ax + 1 if ax >= dim else ax)
    return list(outs), [dim] * len(sizes)


split_p = declare("split", lowering=ST.split,
                  typing=_split_type, impl=_split_impl, multiple_results=True,
                  jvp=linear_jvp(), transpose=_split_transpose, batch=_split_batch,
                  sharding=SK.auto_placed(SK.section("split", _split_parts, SK.linear_unary),
                                          SK.kept_placement),
                  per_device=from_primitive(
                      lambda p: PD.guarded(p, _axes_untouched("axis"), PD.local(p))))


# ================================================================== unstack

def _unstack_type(x: ArrayType, *, axis: int) -> list[ArrayType]:
    require(x.ndim > 0, "unstack", "C1",
            f"operand must have rank > 0, got shape {x.shape}", ValueError)
    require(0 <= axis < x.ndim, "unstack", "C2",
            f"axis {axis} is out of bounds for operand of rank {x.ndim}", ValueError)
    shape = x.shape[:axis] + x.shape[axis + 1:]
    return [ArrayType(shape, x.dtype, x.weak_type)] * x.shape[axis]


def _unstack_impl(x: np.ndarray, *, axis: int) -> list[np.ndarray]:
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unstack_transpose(cts: list[Any], operand: UndefinedPrimal, *, axis: int) -> list[Any]:
    """Stack the slices' cotangents (zeros materialised) along ``axis``."""
    if all(type(c) is Zero for c in cts):
        return [Zero(operand.aval.ct_type())]
    return [stack_p.bind(*[instantiate(c) for c in cts], axis=axis)]


def _unstack_batch(axis_data: AxisData, args: list[Any], dims: list[BatchDim], /, *,
                   axis: int) -> Batched:
    """Unstack along the axis renumbered around the batch axis, which the
    slices keep (shifted down when it followed the unstacked axis)."""
    ax, dim = axis, _bd(dims[0])
    out_ax, out_dim = (ax, dim - 1) if ax < dim else (ax + 1, dim)
    outs = unstack_p.bind(args[0], axis=out_ax)
    return list(outs), [out_dim] * len(outs)


unstack_p = declare("unstack", lowering=ST.unstack, typing=_unstack_type, impl=_unstack_impl,
                    multiple_results=True, jvp=linear_jvp(), transpose=_unstack_transpose,
                    batch=_unstack_batch,
                    sharding=SK.section("unstack", _unstack_parts, SK.linear_unary),
                    per_device=from_primitive(PD.local))


# ===================================================================== tile

def _tile_type(x: ArrayType, *, reps: Shape) -> list[ArrayType]:
    require(len(reps) == x.ndim, "tile", "C1",
            f"reps length must equal the operand rank, got len(reps)={len(reps)} and "
            f"ndim={x.ndim}")
    require(all(r >= 0 for r in reps), "tile", "C2", f"reps must be nonnegative, got {reps}")
    return [ArrayType(tuple(int(d) * int(r) for d, r in zip(x.shape, reps)), x.dtype,
                      x.weak_type)]


def _tile_impl(x: np.ndarray, *, reps: Shape) -> list[np.ndarray]:
    return [np.tile(x, reps) if x.ndim else x.copy()]


def _tile_transpose(ct: Any, operand: UndefinedPrimal, *, reps: Shape) -> Any:
    """View the cotangent as (rep, size) pairs of axes and sum over the reps."""
    shape = operand.aval.shape
    pairs = tuple(k for pair in zip(reps, shape) for k in pair)
    return bind_reduce_sum(reshape(ct, pairs), tuple(2 * i for i in range(len(shape))))


def _tile_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *, reps: Shape
                ) -> Batched:
    """The batch axis is repeated once."""
    dim = _bd(dims[0])
    new_reps = list(reps)
    new_reps.insert(dim, 1)
    return [tile(args[0], new_reps)], [dim]


tile_p = declare("tile", lowering=ST.tile, typing=_tile_type, impl=_tile_impl, jvp=linear_jvp(),
                 transpose=linear_transpose(_tile_transpose), batch=_tile_batch,
                 sharding=SK.auto_placed(SK.section("tile", _tile_parts), SK.as_split_operands),
                 per_device=from_primitive(PD.local))


# ====================================================================== pad

def _pad_type(x: ArrayType, padding_value: ArrayType, *,
              padding_config: tuple[tuple[int, int, int], ...]) -> list[ArrayType]:
    name = "pad"
    require(x.dtype == padding_value.dtype, name, "C1",
            f"operand and padding_value must have the same dtype, got {x.dtype.name} and "
            f"{padding_value.dtype.name}")
    require(padding_value.ndim == 0, name, "C2",
            f"padding_value must be a scalar, got shape {padding_value.shape}", ValueError)
    require(len(padding_config) == x.ndim, name, "C3",
            f"padding_config {padding_config} must have one (low, high, interior) entry per "
            f"axis of operand shape {x.shape}", ValueError)
    require(all(i >= 0 for _, _, i in padding_config), name, "C4",
            f"interior padding must be nonnegative, got padding_config {padding_config}",
            ValueError)
    shape = tuple(int(lo + hi + (d + max(d - 1, 0) * i if d else 0))
                  for (lo, hi, i), d in zip(padding_config, x.shape))
    require(all(d >= 0 for d in shape), name, "C5",
            f"padded size is negative: result shape {shape} for padding_config "
            f"{padding_config} and operand shape {x.shape}", ValueError)
    return [ArrayType(shape, x.dtype, _all_weak(x, padding_value))]


def _pad_impl(x: np.ndarray, padding_value: np.ndarray, *,
              padding_config: tuple[tuple[int, int, int], ...]) -> list[np.ndarray]:
    # Interior padding and non-negative edges first, then crop the negative edges.
    grown = [max(lo, 0) + max(hi, 0) + (d + max(d - 1, 0) * i if d else 0)
             for (lo, hi, i), d in zip(padding_config, x.shape)]
    out = np.full(grown, padding_value, dtype=x.dtype)
    dst = tuple(_builtin_slice(max(lo, 0), max(lo, 0) + (d - 1) * (i + 1) + 1, i + 1) if d
                else _builtin_slice(0, 0)
                for (lo, _, i), d in zip(padding_config, x.shape))
    out[dst] = x
    crop = tuple(_builtin_slice(max(-lo, 0), g - max(-hi, 0))
                 for (lo, hi, _), g in zip(padding_config, grown))
    return [out[crop]]


def _pad_transpose(ct: Any, operand: Any, padding_value: Any, *,
                   padding_config: tuple[tuple[int, int, int], ...]) -> list[Any]:
    """Linear in (operand, padding_value) jointly. The operand's cotangent is
    ct with the edges cut off (negative padding) and the interior padding
    skipped (a strided slice); the padding value's is the sum of ct over the
    padding, i.e. the total of ct minus the total of the operand's part."""
    if type(ct) is Zero:
        return _zero_cts([operand, padding_value])
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    dtype = canonical_aval_of(ct).dtype
    unpad = tuple(zip(np.negative(lo), np.negative(hi), np.zeros_like(interior)))
    unpadded = pad_p.bind(ct, np.array(0., dtype), padding_config=unpad)
    t_operand = slice_p.bind(unpadded, start_indices=tuple(np.zeros_like(lo)),
                             limit_indices=canonical_aval_of(unpadded).shape,
                             strides=tuple(np.add(interior, 1)))
    t_padv = None
    if is_undefined_primal(padding_value):
        axes = tuple(range(len(padding_config)))
        t_padv = sub(bind_reduce_sum(ct, axes), bind_reduce_sum(t_operand, axes))
    return [t_operand if is_undefined_primal(operand) else None, t_padv]


def _pad_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
               padding_config: tuple[tuple[int, int, int], ...]) -> Batched:
    """The batch axis is not padded. A batched padding value cannot be a
    pad's scalar: pad with zero, pad a mask of the operand's positions the
    same way, and select the padding values (broadcast along the batch
    axis) outside the mask."""
    x, pv = args
    x_dim, pv_dim = dims
    if x_dim is None:
        x, x_dim = broadcast(x, (axis.size,)), 0
    # Bound directly: lax.pad would turn the config's np.int64 entries (as
    # jnp.pad makes them) into ints, and JAX keeps them.
    cfg = list(padding_config)
    cfg.insert(x_dim, (0, 0, 0))
    config = tuple(cfg)
    if pv_dim is None:
        return [pad_p.bind(x, pv, padding_config=config)], [x_dim]
    padded = pad_p.bind(x, full_like(x, 0, shape=()), padding_config=config)
    mask = pad_p.bind(full_like(x, True, np.bool_), False, padding_config=config)
    fill = broadcast_in_dim(pv, canonical_aval_of(padded).shape, (x_dim,))
    return [select(mask, padded, fill)], [x_dim]


pad_p = declare("pad", typing=_pad_type, impl=_pad_impl, jvp=linear_jvp(), lowering=LR.pad,
                transpose=_pad_transpose, batch=_pad_batch,
                sharding=SK.auto_placed(SK.section("pad", _pad_parts, SK.linear_unary),
                                        SK.kept_placement),
                per_device=from_primitive(lambda p: PD.guarded(p, _pad_ok, PD.local(p))))



# ===================================================================== copy

def _copy_type(x: ArrayType) -> list[ArrayType]:
    return [x]


def _copy_impl(x: np.ndarray) -> list[np.ndarray]:
    return [x.copy()]


def _copy_transpose(ct: Any, x: UndefinedPrimal) -> Any:
    return copy_p.bind(ct)


copy_p = declare("copy", typing=_copy_type, impl=_copy_impl, jvp=linear_jvp(),
                 lowering=LR.copy,
                 transpose=linear_transpose(_copy_transpose), batch=vectorized(),
                 sharding=SK.section("copy", SK.same_as(0), SK.keeps),
                 per_device=from_primitive(PD.aligned))


__all__ = [
    "concatenate", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "index_in_dim", "pad", "rev", "slice", "slice_in_dim",
    "split", "stack", "tile", "unstack",
    "concatenate_p", "copy_p", "dynamic_slice_p", "dynamic_update_slice_p", "pad_p", "rev_p",
    "slice_p", "split_p", "stack_p", "tile_p", "unstack_p",
]


# =================================================================== wrappers

def _array_copy(x: Any) -> Any:
    return copy_p.bind(x)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    return rev_p.bind(operand, dimensions=tuple(dimensions))


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1 and _is_array(operands[0]):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=operator.index(dimension))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    arrays = [asarray(op) for op in operands]
    if not arrays:
        raise ValueError("stack expects at least one operand, got 0.")
    ax = canonicalize_axis(axis, _ndim(arrays[0]) + 1)
    return stack_p.bind(*arrays, axis=ax)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> Sequence[Any]:
    operand = asarray(operand)
    return split_p.bind(operand, sizes=tuple(sizes),  # type: ignore[no-any-return]
                        axis=canonicalize_axis(axis, _ndim(operand)))


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices along ``axis`` (what iterating over a traced array gives in JAX)."""
    arr = asarray(x)
    return tuple(unstack_p.bind(arr, axis=canonicalize_axis(axis, _ndim(arr))))


hooks.unstack = unstack  # iterating over a tracer (Tracer.__iter__)

def tile(operand: Any, reps: Sequence[int]) -> Any:
    return tile_p.bind(operand, reps=tuple(reps))


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    config = tuple(tuple(operator.index(v) for v in entry) for entry in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# =================================================================== slicing

def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    return slice_p.bind(operand, start_indices=tuple(start_indices),
                        limit_indices=tuple(limit_indices),
                        strides=None if strides is None else tuple(strides))


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    shp = _shape(operand)
    starts, limits, strides = [0] * len(shp), list(shp), [1] * len(shp)
    axis = int(axis)
    size = shp[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = size if limit_index is None else operator.index(limit_index)
    starts[axis] = start + size if start < 0 else start
    limits[axis] = limit + size if limit < 0 else limit
    strides[axis] = operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    index, axis = operator.index(index), int(axis)
    size = _shape(operand)[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


def _dynamic_slice_indices(operand: Any, start_indices: Any,
                           allow_negative: bool | Sequence[bool]) -> list[Any]:
    shp = _shape(operand)
    if not isinstance(start_indices, (list, tuple)):
        idx_aval = canonical_aval_of(start_indices)
        if idx_aval.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {idx_aval.shape}")
        start_indices = list(start_indices)
    if len(start_indices) != len(shp):
        raise ValueError("Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shp})")
    flags = [allow_negative] * len(shp) if isinstance(allow_negative, bool) else list(
        allow_negative)
    out: list[Any] = []
    for i, d, neg in zip(start_indices, shp, flags):
        dt = canonical_aval_of(i).dtype
        if T.is_unsigned_int(dt):
            out.append(i)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            if i < 0 and not neg:
                raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                 "allow_negative_indices=False")
            out.append(_convert_element_type(int(i) + d if i < 0 else i, dt, False))
        elif neg:
            out.append(_wrap_negative(i, d, dt))
        else:
            out.append(i)
    return out


def _wrap_negative(i: Any, d: int, dt: T.DType) -> Any:
    """``select(i < 0, i + d, i)`` as JAX stages it for a dynamic index."""
    d_arr = _convert_element_type(d, dt, False)
    negative = i < 0
    return select_n_p.bind(negative, i, i + d_arr)


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    sizes = T.check_shape(slice_sizes, "dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *idx, slice_sizes=sizes)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idx)


def _zero_like_index(start_index: Any) -> Any:
    """The start index of the untouched axes: 0 of the given index's type."""
    if isinstance(start_index, int) and not isinstance(start_index, bool):
        return 0
    dt = canonical_aval_of(start_index).dtype
    return host_value(np.zeros((), dt), T.ArrayType((), dt, False), "index")


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    shp = _shape(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * len(shp)
    starts[axis] = start_index
    sizes = list(shp)
    sizes[axis] = operator.index(slice_size)
    flags = [False] * len(shp)
    flags[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=flags)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    nd = _ndim(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * nd
    starts[axis] = start_index
    flags = [False] * nd
    flags[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=flags)
