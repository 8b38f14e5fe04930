"""Structural primitives: dtype conversion, creation, broadcasting, reshaping, slicing.

None of these computes on element values except convert_element_type (a cast)
and bitcast_convert_type (a reinterpretation of bits); the rest move, copy or
select elements. Each typing rule's constraints are numbered C1, C2, ... in
the order they are checked; the numbers are cited in error messages and in
SPEC.md (section 9.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.interpreters.ad_util import (
    UndefinedPrimal,
    Zero,
    instantiate,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
    zero_jvp,
)
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    insert_spec_entry,
    moveaxis,
    sharding_for_vmap,
    vectorized,
)
from spec._src.core.interpreter import (
    canonical_aval_of,
    Primitive,
    from_primitive,
    not_applicable,
    pp_eqn_default,
    pp_hiding,
)
from spec._src.core.errors import ShardingTypeError
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import flush_result as flush
from spec._src.core.sharding import NamedSharding, P, UnreducedKind
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry

Shape = tuple[int, ...]


def _is_int_seq(obj: Any) -> bool:
    return isinstance(obj, (tuple, list, np.ndarray)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in obj)


def _check_shapelike(prim: str, c: str, arg: str, obj: Any) -> None:
    """Static shape-like params: a sequence of non-negative ints (TypeError)."""
    require(_is_int_seq(obj), prim, c, f"{arg} must be a tuple of integers, got {obj!r}")
    require(all(d >= 0 for d in obj), prim, c,
            f"{arg} must have every element be nonnegative, got {tuple(obj)}")


def _all_weak(*avals: ArrayType) -> bool:
    return all(a.weak_type for a in avals)


def _lax() -> Any:
    """``spec.lax``, imported when a rule runs (it imports this module)."""
    from spec import lax
    return lax


def _shape_of(x: Any) -> Shape:
    return x.aval.shape if is_undefined_primal(x) else canonical_aval_of(x).shape


def _cts_or_none(cts: Sequence[Any], operands: Sequence[Any]) -> list[Any]:
    """Per operand: its cotangent if it is being transposed, else None."""
    return [ct if is_undefined_primal(x) else None for ct, x in zip(cts, operands)]


def _zero_cts(operands: Sequence[Any]) -> list[Any]:
    return [Zero(x.aval.ct_type()) if is_undefined_primal(x) else None for x in operands]


# Batching rules: ``rule(axis, args, dims, **params) -> (outs, out_dims)``,
# called with at least one operand mapped (see spec/batching.py). They follow
# JAX 0.12's rules primitive for primitive, including where JAX computes
# axis numbers with NumPy (the params then hold np.int64 values, which the
# jaxpr prints as ``np.int64(1)``).

Batched = tuple[list[Any], list[BatchDim]]


def _bd(dim: BatchDim) -> int:
    """A batch axis known to be present (the rule was called because the
    only operand, or this one, is mapped)."""
    assert dim is not None
    return dim


def _no_operands(name: str) -> Any:
    return not_applicable(f"{name} has no operands, so vmap never batches it")


# ================================================================ sharding
# The sharding sections of the structural primitives (SPEC.md section 14),
# following JAX's partition rules; the unreduced/reduced rules come from
# spec._src.lax.sharding_kit.

_Parts = tuple[Any, ...]
_NO_AXES: frozenset[Any] = frozenset()


def _spec_size(mesh: Any, entry: Any) -> int:
    names = entry if isinstance(entry, tuple) else (entry,)
    return int(np.prod([mesh.shape[n] for n in names], dtype=np.int64))


def _varying_out_shape(name: str, mesh: Any, x: ArrayType, out_shape: Shape) -> _Parts:
    """slice/pad/dynamic_slice: the operand's partitions, as long as every
    resized sharded dim still splits evenly; all-None for a shape of ones."""
    if not out_shape or all(o == 1 for o in out_shape):
        return (None,) * len(out_shape)
    ps = SK.parts(x)
    for op_sh, out_sh, entry in zip(x.shape, out_shape, ps):
        if op_sh != out_sh and entry is not None and out_sh % _spec_size(mesh, entry):
            raise ShardingTypeError(
                f"{name} on sharded dims where out dim ({out_sh}) is not divisible by mesh"
                f" axes ({_spec_size(mesh, entry)}) with spec ({entry}) is not implemented. Got"
                f" input type={x.str_short()} and output shape={tuple(out_shape)}")
    return ps


def _param_ur(x: ArrayType, sharding: Any, who: str) -> SK.UR:
    """Unreduced/reduced axes of an op with an optional output-sharding param:
    the param's where it names some, else the operand's (as sums)."""
    spec = None if sharding is None else SK.abstract(sharding).spec
    if spec is not None and spec.unreduced:
        if spec.unreduced_kind not in (None, UnreducedKind.sum):
            raise ValueError(f"`{who}` passed to `convert_element_type` can only contain"
                             f" unreduced of kind `sum`. Got sharding={sharding}")
        unreduced = frozenset(spec.unreduced)
    else:
        unreduced = SK.getu(x)
    reduced = frozenset(spec.reduced) if spec is not None and spec.reduced else SK.getr(x)
    return unreduced, reduced, UnreducedKind.sum if unreduced else None


def _convert_parts(mesh: Any, x: ArrayType, *, new_dtype: Any, weak_type: bool,
                   sharding: Any = None) -> list[_Parts]:
    if sharding is None:
        return [SK.parts(x)]
    return [SK.param_parts(SK.abstract(sharding), x.ndim)]


def _convert_ur(x: ArrayType, *, new_dtype: Any, weak_type: bool, sharding: Any = None
                ) -> SK.UR:
    return _param_ur(x, sharding, "sharding")


def _bid_parts(mesh: Any, x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape,
               sharding: Any = None) -> list[_Parts]:
    if sharding is not None:
        return [SK.param_parts(SK.abstract(sharding), len(shape))]
    src = dict(zip(broadcast_dimensions, SK.parts(x)))
    return [tuple(src.get(i) for i in range(len(shape)))]


def _bid_ur(x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape, sharding: Any = None
            ) -> SK.UR:
    if sharding is not None:
        spec = SK.abstract(sharding).spec
        if spec.unreduced and spec.unreduced_kind is not UnreducedKind.sum:
            raise ValueError("`out_sharding` passed to `broadcast_in_dim` can only contain"
                             f" unreduced of kind `sum`. Got out_sharding={sharding}")
        u = frozenset(spec.unreduced)
        return u, frozenset(spec.reduced), UnreducedKind.sum if u else None
    return SK.linear_unary(x)


def _transpose_parts(mesh: Any, x: ArrayType, *, permutation: Shape) -> list[_Parts]:
    ps = SK.parts(x)
    return [tuple(ps[i] for i in permutation)]


def _squeeze_parts(mesh: Any, x: ArrayType, *, dimensions: Shape) -> list[_Parts]:
    drop = set(dimensions)
    return [tuple(p for i, p in enumerate(SK.parts(x)) if i not in drop)]


# --- reshape: JAX's rule. A reshape that only adds or removes size-1 dims
# keeps the partitions; one that splits a single dim gives the split dims the
# dim's mesh axes, major first, as far as they divide; one that merges dims
# into a single dim needs the merged group's sharded dims to lead. Any other
# reshape of a sharded operand needs an explicit `out_sharding`.

class _Unsupported(Exception):
    pass


def _reshape_error(x: ArrayType, new_sizes: Shape) -> ShardingTypeError:
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the"
        f" `out_sharding` argument of jax.lax.reshape. Got operand type: {x}, new sizes:"
        f" {tuple(new_sizes) if not isinstance(new_sizes, tuple) else new_sizes}")


def _split_one_axis(op_shape: Sequence[int], new_sizes: Sequence[int]
                    ) -> tuple[bool, list[Any]]:
    """Whether ``new_sizes`` (ones dropped) splits exactly one dim of
    ``op_shape`` (ones dropped) into several; per operand dim its size, or
    the list of sizes it splits into."""
    op = [s for s in op_shape if s != 1]
    new = [s for s in new_sizes if s != 1]
    if len(new) <= len(op):
        return False, []
    i = j = count = 0
    out: list[Any] = []
    while j < len(new):
        if i >= len(op):
            raise _Unsupported()
        if op[i] == new[j]:
            out.append(op[i])
        else:
            count += 1
            if count > 1:
                raise _Unsupported()
            group = [new[j]]
            while int(np.prod(group)) != op[i]:
                if int(np.prod(group)) > op[i]:
                    return False, []
                j += 1
                if j >= len(new):
                    raise _Unsupported()
                group.append(new[j])
            out.append(group)
        i += 1
        j += 1
    if len(out) != len(op):
        raise _Unsupported()
    return True, out


def _split_partitions(mesh: Any, axes: tuple[Any, ...], sizes: Sequence[int]) -> list[Any]:
    it = iter(axes)
    result: list[Any] = []
    for o in sizes:
        taken: list[Any] = []
        while o > 1:
            name = next(it, None)
            if name is None:
                break
            o, rem = divmod(o, mesh.shape[name])
            if rem:
                raise _Unsupported()
            taken.append(name)
        result.append(tuple(taken))
    if next(it, None) is not None:
        raise _Unsupported()
    return result


def _place_ones(x: ArrayType, new_sizes: Shape, inner: list[Any], keep_ones: bool) -> _Parts:
    """Spread the partitions of the non-1 output dims over ``new_sizes``;
    size-1 output dims take the operand's entry at the same position when it
    is a size-1 dim too (``keep_ones``), else None."""
    ps = SK.parts(x)
    it = iter(inner)
    out: list[Any] = []
    for i, n in enumerate(new_sizes):
        if n == 1:
            out.append(ps[i] if keep_ones and i < x.ndim and x.shape[i] == 1 else None)
        else:
            out.append(next(it))
    return tuple(out)


def _reshape_partitions(mesh: Any, x: ArrayType, new_sizes: Shape,
                        dimensions: Shape | None) -> _Parts:
    ps = SK.parts(x)
    if all(p is None for p in ps):
        return (None,) * len(new_sizes)
    live = [p for s, p in zip(x.shape, ps) if s != 1]
    if [s for s in x.shape if s != 1] == [s for s in new_sizes if s != 1]:
        it = iter(live)
        return tuple(None if n == 1 else next(it) for n in new_sizes)
    is_split, groups = _split_one_axis(x.shape, new_sizes)
    if is_split:
        inner: list[Any] = []
        for g, p in zip(groups, live):
            if not isinstance(g, list):
                inner.append(p)
            elif p is None:
                inner.extend([None] * len(g))
            elif dimensions is None:
                inner.extend(_split_partitions(mesh, p if isinstance(p, tuple) else (p,), g))
            else:
                raise _Unsupported()
        return _place_ones(x, new_sizes, inner, keep_ones=True)
    is_merge, groups = _split_one_axis(new_sizes, x.shape)
    if not is_merge:
        raise _Unsupported()
    merged: list[Any] = []
    it = iter(live)
    for n, g in zip([s for s in new_sizes if s != 1], groups):
        if not isinstance(g, list):
            merged.append(next(it))
            continue
        group = [next(it) for _ in g]
        if all(p is None for p in group):
            merged.append(None)
        elif dimensions is None:
            flat: list[Any] = []
            for p in group:
                flat.extend(p if isinstance(p, tuple) else (p,))
            while flat and flat[-1] is None:
                flat.pop()
            if None in flat:
                raise _Unsupported()
            merged.extend(_split_partitions(mesh, tuple(flat), [n]))
        else:
            raise _Unsupported()
    return _place_ones(x, new_sizes, merged, keep_ones=True)


def _reshape_parts(mesh: Any, x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                   sharding: Any = None) -> list[_Parts]:
    if sharding is not None:
        return [SK.param_parts(SK.abstract(sharding), len(new_sizes))]
    try:
        return [_reshape_partitions(mesh, x, tuple(new_sizes), dimensions)]
    except _Unsupported:
        raise _reshape_error(x, new_sizes) from None


def _reshape_ur(x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                sharding: Any = None) -> SK.UR:
    spec = None if sharding is None else SK.abstract(sharding).spec
    u, kind, r = SK.getu(x), SK.getu_kind(x), SK.getr(x)
    if u and spec is not None:
        if frozenset(spec.unreduced) != u:
            raise ValueError("out_sharding passed to reshape must be unreduced over the same"
                             f" mesh axes as operand. Got out_sharding: {spec} and operand"
                             f" type: {x.str_short()}")
        if spec.unreduced_kind != kind:
            raise ValueError("out_sharding passed to reshape must have the same unreduced_kind"
                             f" as operand. Got out_sharding: {spec} and operand type:"
                             f" {x.str_short()}")
    if not u and spec is not None and spec.unreduced:
        raise ValueError("out_sharding passed to `reshape` cannot contain unreduced axes."
                         f" Got {sharding}")
    if r and spec is not None and frozenset(spec.reduced) != r:
        raise ValueError("out_sharding passed to reshape must be reduced over the same mesh"
                         f" axes as operand. Got out_sharding: {spec} and operand type:"
                         f" {x.str_short()}")
    if not r and spec is not None and spec.reduced:
        raise ValueError("out_sharding passed to `reshape` cannot contain reduced axes."
                         f" Got {sharding}")
    return u, r, kind if u else None


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
            f" operand sharding {x.str_short()} and update sharding {update.str_short()}.")
    return [SK.parts(x)]


def _dus_ur(x: ArrayType, update: ArrayType, *idx: ArrayType) -> SK.UR:
    if any(SK.getu(i) or SK.getr(i) for i in idx):
        raise ShardingTypeError("dynamic_update_slice start_indices cannot have unreduced or"
                                f" reduced axes. Got start_indices={idx}")
    # Operand and update have equal shardings (checked by the partition rule).
    return SK.keeps(x)


def _from_param(key: str) -> Any:
    """iota/empty: the output sharding is the param (they have no operands)."""
    def rule(*avals: ArrayType, **params: Any) -> list[Any]:
        s = params.get(key)
        return [None if s is None else SK.abstract(s)]
    return rule


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
                                f" {axis}. Got operand type={x.str_short()}")
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


def _bitcast_parts(mesh: Any, x: ArrayType, *, new_dtype: T.DType) -> list[_Parts]:
    # A narrower dtype adds a trailing (replicated) dim; a wider one drops it.
    old, new = _nbits(x.dtype), _nbits(new_dtype)
    ps = SK.parts(x)
    if old == new:
        return [ps]
    return [(*ps, None)] if old > new else [ps[:-1]]


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


def _reshape_natural(args: list[Dist], out_avals: list[ArrayType], *, new_sizes: Any,
                     dimensions: Any, sharding: Any = None) -> list[ArrayType] | None:
    if dimensions is not None:
        return None
    x = args[0].aval
    if x.sharding is None:
        return [out_avals[0].update(sharding=None)] if S.is_plain(out_avals[0]) else None
    rule: Any = reshape_p.sharding
    try:
        (s,) = rule(x, new_sizes=new_sizes, dimensions=None, sharding=None)
    except Exception:  # a layout the local reshape cannot realise
        return None
    nat = out_avals[0].update(sharding=s)
    return [nat] if _reshape_is_local(x, nat) else None


def _reshape_is_local(x: ArrayType, out: ArrayType) -> bool:
    """A local reshape realises the layout when dims merge or split only in
    groups whose leading dim alone is split, over the same axes on both
    sides (then every device's block is a contiguous run of each group)."""
    groups = _reshape_groups(x.shape, out.shape)
    if groups is None:
        return False
    xp, op = S.parts_of(x), S.parts_of(out)
    for ins, outs in groups:
        if any(xp[d] for d in ins[1:]) or any(op[d] for d in outs[1:]):
            return False
        lead_in = xp[ins[0]] if ins else ()
        lead_out = op[outs[0]] if outs else ()
        if lead_in != lead_out:
            return False
    return True


def _reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]
                    ) -> list[tuple[list[int], list[int]]] | None:
    """Pair runs of input and output dims with equal products (size-1 dims
    join the run before them)."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        ins, outs = [], []
        pa = pb = 1
        while True:
            if pa <= pb and i < len(src):
                pa *= src[i]
                ins.append(i)
                i += 1
            elif j < len(dst):
                pb *= dst[j]
                outs.append(j)
                j += 1
            else:
                break
            if pa == pb and (i == len(src) or src[i] != 1) and (j == len(dst) or dst[j] != 1):
                break
        if pa != pb:
            return None
        groups.append((ins, outs))
    return groups


def _bid_natural(args: list[Dist], out_avals: list[ArrayType], *, shape: Any,
                 broadcast_dimensions: Any, sharding: Any = None) -> list[ArrayType] | None:
    x, out = args[0].aval, out_avals[0]
    parts: list[tuple[str, ...]] = [()] * len(shape)
    xp = S.parts_of(x)
    for i, d in enumerate(broadcast_dimensions):
        if xp[i] and x.shape[i] != shape[d]:
            return None
        parts[d] = xp[i]
    return [PD.laid_out(out, parts, S.unreduced_of(x), out, x)]


def _same_layout_natural(args: list[Dist], out_avals: list[ArrayType], **params: Any
                         ) -> list[ArrayType] | None:
    x = args[0].aval
    return [PD.laid_out(out_avals[0], S.parts_of(x), S.unreduced_of(x), out_avals[0], x)]


def _iota(prim: Primitive) -> PD.Program:
    """Each device's block of the ramp: a local ramp plus the block's offset."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, dtype: Any,
                shape: Any, dimension: int, sharding: Any = None) -> list[Dist]:
        (out,) = out_avals
        local_shape = S.local_shape(out, geo)
        (ramp,) = prim.impl(dtype=dtype, shape=local_shape, dimension=dimension)
        axes = S.parts_of(out)[dimension]
        if not axes:
            return [Dist(out, geo.place(ramp))]
        offsets = geo.position(axes) * local_shape[dimension]
        held = {int(offsets[k]) for k in geo.local}
        blocks = {o: (ramp + np.asarray(o).astype(ramp.dtype)).astype(ramp.dtype) for o in held}
        return [Dist(out, tuple(blocks.get(int(o)) for o in offsets))]
    return program


def aligned_stack(prim: Primitive) -> PD.Program:
    """stack: operands take the result's layout without the new axis."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, axis: int
                ) -> list[Dist]:
        parts = list(S.parts_of(out_avals[0]))
        del parts[axis]
        cut = [a if not a.aval.ndim else PD.cut(a, parts, geo, out_avals[0]) for a in args]
        return S.run_local(prim, geo, cut, out_avals, {"axis": axis})
    return program


# ====================================================== convert_element_type

def _convert_type(x: ArrayType, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[ArrayType]:
    require(isinstance(new_dtype, np.dtype) and T.is_valid_dtype(new_dtype),
            "convert_element_type", "C1", f"new_dtype {new_dtype!r} is not a JAX dtype")
    if not isinstance(x.dtype, np.dtype):  # an extended dtype (typed PRNG keys)
        raise ValueError(f"Cannot convert_element_type from {x.dtype} to {new_dtype} "
                         "(convert_element_type C2)")
    return [ArrayType(x.shape, new_dtype, bool(weak_type))]


def _float_to_int(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """XLA CPU semantics: truncate toward zero, NaN -> 0, saturate at the bounds."""
    info = ml_dtypes.iinfo(dt)  # type: ignore[no-untyped-call]
    lo, hi = int(info.min), int(info.max)
    f = np.trunc(x.astype(np.float64))
    f = np.where(np.isnan(f), 0.0, f)
    # float(hi) may round up (2**63 for int64); >= then catches exactly the
    # values that do not fit.
    above, below = f >= float(hi), f <= float(lo)
    inner = np.where(above | below, 0.0, f)
    wide = np.uint64 if lo == 0 else np.int64
    out = inner.astype(wide)
    out = np.where(above, wide(hi), np.where(below, wide(lo), out))
    return out.astype(dt)


def _int_to_int(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """Two's-complement wrap-around, also for the sub-byte ml_dtypes ints."""
    if dt not in T.NARROW_INT_TYPES and dt not in T.NARROW_UINT_TYPES:
        if x.dtype in T.NARROW_INT_TYPES or x.dtype in T.NARROW_UINT_TYPES:
            x = x.astype(np.int64)
        return x.astype(dt)
    bits = T.iinfo_bits(dt)
    lo = int(ml_dtypes.iinfo(dt).min)  # type: ignore[no-untyped-call]
    wide = x.astype(np.int64) if x.dtype != np.uint64 else x.astype(np.uint64).view(np.int64)
    wrapped = ((wide - lo) & ((1 << bits) - 1)) + lo
    return wrapped.astype(dt)


_FLUSHED_WHEN_WIDENED = (T.float32, T.complex64)


def _convert_impl(x: np.ndarray, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[np.ndarray]:
    src = x.dtype
    with np.errstate(all="ignore"):
        if T.is_complex(src) and not T.is_complex(new_dtype):
            x = x.real  # complex -> real keeps the real part, as XLA does
            src = x.dtype
        if new_dtype == T.bool_:
            wide = x.astype(np.float32) if T.is_float(src) and src.itemsize < 4 else x
            return [np.asarray(flush(wide) != 0)]  # a float compare: subnormals are zero
        if src in _FLUSHED_WHEN_WIDENED and new_dtype in (T.float64, T.complex128):
            x = flush(x)  # widening is float arithmetic on XLA CPU: denormals-are-zero
        if T.is_int(new_dtype) and T.is_float(src):
            return [_float_to_int(x, new_dtype)]
        if T.is_int(new_dtype) and T.is_int(src):
            return [_int_to_int(x, new_dtype)]
        if src in T.NARROW_INT_TYPES or src in T.NARROW_UINT_TYPES:
            x = x.astype(np.int64)
        return [np.asarray(x.astype(new_dtype))]


def fold_convert(x: Any, dtype: T.DType, weak_type: bool) -> Any:
    """JAX's staging folds a conversion of a rank-0 host constant (a jaxpr
    literal, such as the 1.0 that seeds ``grad``) into a new literal, by a
    NumPy cast, instead of recording an equation. Returns None where it does
    not apply: no staging trace, or not a rank-0 host value."""
    from spec._src.core.interpreter import EvalTrace, current_trace
    if type(current_trace()) is EvalTrace:
        return None
    return _fold_literal(x, dtype, weak_type)


def _fold_literal(x: Any, dtype: T.DType, weak_type: bool) -> Any:
    from spec._src.core.array import Array, host_value
    if type(x) is not Array or x._py is None or x.aval.shape:
        return None
    value = np.asarray(x._value)
    if T.is_complex(value.dtype) and not T.is_complex(dtype):
        value = value.real
    with np.errstate(all="ignore"):
        out = value.astype(dtype)
    return host_value(out, ArrayType((), dtype, bool(weak_type)), "convert_element_type")


def _convert(x: Any, dtype: T.DType, weak_type: bool, sharding: Any) -> Any:
    """convert_element_type as JAX stages it: no equation when it would not
    change the type (forwarded to its operand) or when it folds."""
    aval = canonical_aval_of(x)
    if aval.dtype == dtype and aval.weak_type == weak_type and sharding is None:
        return x
    folded = fold_convert(x, dtype, weak_type) if sharding is None else None
    if folded is not None:
        return folded
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type,
                                       sharding=sharding)


def _convert_jvp(primals: list[Any], tangents: list[Any], *, new_dtype: T.DType,
                 weak_type: bool, sharding: Any = None) -> tuple[list[Any], list[Any]]:
    """The tangent is converted like the primal; a conversion to an integer or
    bool type (or from one: its tangent is float0) has a zero tangent."""
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                      sharding=sharding)
    t_dtype = T.tangent_dtype(new_dtype)
    if type(t) is Zero or t_dtype == T.FLOAT0 or canonical_aval_of(t).dtype == T.FLOAT0:
        return [out], [Zero.from_primal_value(out)]
    return [out], [_convert(t, t_dtype, weak_type, sharding)]


def _convert_transpose(ct: Any, operand: UndefinedPrimal, *, new_dtype: T.DType,
                       weak_type: bool, sharding: Any = None) -> list[Any]:
    """Back to the operand's dtype AND weak type; integer operands get a float0 zero."""
    aval = operand.aval
    if type(ct) is Zero or T.tangent_dtype(aval.dtype) == T.FLOAT0:
        return [Zero(ArrayType(aval.shape, T.tangent_dtype(aval.dtype), False))]
    return [_convert(ct, aval.dtype, aval.weak_type, None)]


def _convert_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_dtype: T.DType, weak_type: bool, sharding: Any = None) -> Batched:
    """Elementwise: the same conversion, batched where the operand is (a
    ``sharding`` param gains the batch axis, sharded over the vmap's explicit
    mesh axes)."""
    if sharding is not None:
        sharding = sharding_for_vmap(axis, sharding, _bd(dims[0]))
    out = convert_element_type_p.bind(args[0], new_dtype=new_dtype, weak_type=weak_type,
                                      sharding=sharding)
    return [out], [dims[0]]


def _convert_const_fold(x: Any, *, new_dtype: T.DType, weak_type: bool,
                        sharding: Any = None) -> list[Any] | None:
    """A literal operand reaching a staging trace (e.g. through an autodiff
    trace, which binds constants' conversions on its parent) folds too."""
    if sharding is not None:
        return None
    folded = _fold_literal(x, new_dtype, weak_type)
    return None if folded is None else [folded]


convert_element_type_p = declare(
    "convert_element_type", typing=_convert_type, impl=_convert_impl,
    pp_rule=pp_hiding("sharding"), jvp=_convert_jvp, transpose=_convert_transpose,
    batch=_convert_batch,
    sharding=SK.section("convert_element_type", _convert_parts, _convert_ur),
    const_fold=_convert_const_fold,
    per_device=from_primitive(lambda p: PD.then_reshard(p, _same_layout_natural, PD.local)))


# ====================================================== bitcast_convert_type

def _nbits(dt: T.DType) -> int:
    if T.is_int(dt):
        return T.iinfo_bits(dt)
    if dt in T.SMALL_FLOAT_TYPES:
        return int(ml_dtypes.finfo(dt).bits)  # type: ignore[no-untyped-call]
    return int(dt.itemsize * 8)


def _bitcast_type(x: ArrayType, *, new_dtype: T.DType) -> list[ArrayType]:
    name = "bitcast_convert_type"
    require(isinstance(new_dtype, np.dtype) and T.is_valid_dtype(new_dtype), name, "C1",
            f"new_dtype {new_dtype!r} is not a JAX dtype")
    special = (T.is_bool(x.dtype) or T.is_complex(x.dtype) or T.is_bool(new_dtype)
               or T.is_complex(new_dtype))
    require(not special or x.dtype == new_dtype, name, "C2",
            "bool and complex values can only be bitcast to their own dtype; got operand "
            f"dtype={x.dtype.name}, new_dtype={new_dtype.name}")
    old_bits, new_bits = _nbits(x.dtype), _nbits(new_dtype)
    if old_bits == new_bits:
        shape = x.shape
    elif old_bits > new_bits:
        require(old_bits % new_bits == 0, name, "C3",
                f"{x.dtype.name} ({old_bits} bits) is not a multiple of {new_dtype.name} "
                f"({new_bits} bits)", ValueError)
        shape = (*x.shape, old_bits // new_bits)
    else:
        last = x.shape[-1] if x.shape else 1
        require(last * old_bits == new_bits, name, "C3",
                f"converting shape {x.shape} from {x.dtype.name} ({old_bits} bits) to "
                f"{new_dtype.name} ({new_bits} bits) needs a last axis of size "
                f"{new_bits // old_bits}, got {last}", ValueError)
        shape = x.shape[:-1]
    return [ArrayType(shape, new_dtype, False)]


def _bitcast_impl(x: np.ndarray, *, new_dtype: T.DType) -> list[np.ndarray]:
    old_bits, new_bits = _nbits(x.dtype), _nbits(new_dtype)
    if (old_bits < 8 or new_bits < 8) and old_bits != new_bits:
        raise NotImplementedError(
            "bitcast_convert_type between sub-byte types of different widths is not "
            "specified yet")
    arr = np.ascontiguousarray(x)
    if old_bits == new_bits:
        return [arr.view(new_dtype).reshape(x.shape)]
    if old_bits > new_bits:  # little-endian (XLA CPU): lowest bytes first
        return [arr.reshape(*x.shape, 1).view(new_dtype)]
    return [arr.view(new_dtype).reshape(x.shape[:-1])]


def _bitcast_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_dtype: T.DType) -> Batched:
    """Elementwise, except that a bitcast to a wider dtype consumes the last
    axis (and one to a narrower dtype appends one): a batch axis that is the
    last axis is moved to the front first. (JAX 0.12 treats the primitive as
    purely elementwise and fails on that case.)"""
    (x,), dim = args, _bd(dims[0])
    aval = canonical_aval_of(x)
    if _nbits(aval.dtype) < _nbits(new_dtype) and dim == aval.ndim - 1:
        x, dim = moveaxis(x, dim, 0), 0
    return [bitcast_convert_type_p.bind(x, new_dtype=new_dtype)], [dim]


bitcast_convert_type_p = declare(
    "bitcast_convert_type", typing=_bitcast_type, impl=_bitcast_impl, jvp=zero_jvp(),
    batch=_bitcast_batch,
    transpose=not_applicable("bitcast_convert_type has a zero derivative (its bits are "
                             "reinterpreted), so it never appears in a linear program"),
    sharding=SK.section("bitcast_convert_type", _bitcast_parts),
    per_device=from_primitive(PD.aligned))


# ===================================================================== iota

def _iota_type(*, dtype: T.DType, shape: Shape, dimension: int, sharding: Any = None
               ) -> list[ArrayType]:
    _check_shapelike("iota", "C1", "shape", shape)
    require(isinstance(dtype, np.dtype) and T.is_valid_dtype(dtype) and dtype != T.bool_,
            "iota", "C2", f"iota does not accept dtype {dtype}; accepted dtypes are integer, "
            "floating and complex types")
    require(0 <= dimension < len(shape), "iota", "C3",
            f"dimension must be between 0 and len(shape), got dimension={dimension} for "
            f"shape={tuple(shape)}", ValueError)
    return [ArrayType(tuple(shape), dtype, False)]


def _iota_impl(*, dtype: T.DType, shape: Shape, dimension: int, sharding: Any = None
               ) -> list[np.ndarray]:
    ramp = np.arange(shape[dimension], dtype=np.int64)
    if T.is_int(dtype):
        vals = _int_to_int(ramp, dtype)
    else:
        vals = ramp.astype(dtype)  # exact where representable, rounded otherwise
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return [np.broadcast_to(vals.reshape(view), shape).copy()]


iota_p = declare("iota", typing=_iota_type, impl=_iota_impl, jvp=zero_jvp(),
                 transpose=not_applicable("iota has no operands"), batch=_no_operands("iota"),
                 sharding=_from_param("sharding"),
                 per_device=from_primitive(_iota))


# ==================================================================== empty

def _as_dtype(dtype: Any) -> T.DType | None:
    """The NumPy dtype ``dtype`` names (the param keeps what the caller gave,
    e.g. ``jnp.float32``, as JAX's does), or None."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    return dt if T.is_valid_dtype(dt) else None


def _empty_type(*, shape: Shape, dtype: Any, out_sharding: Any = None
                ) -> list[ArrayType]:
    _check_shapelike("empty", "C1", "shape", shape)
    dt = _as_dtype(dtype)
    require(dt is not None, "empty", "C2", f"dtype {dtype!r} is not a JAX dtype")
    assert dt is not None
    return [ArrayType(tuple(shape), dt, False)]


def _empty_impl(*, shape: Shape, dtype: Any, out_sharding: Any = None
                ) -> list[np.ndarray]:
    # The contents are unspecified; zeros is one valid choice.
    return [np.zeros(shape, np.dtype(dtype))]


empty_p = declare("empty", typing=_empty_type, impl=_empty_impl, jvp=zero_jvp(),
                  transpose=not_applicable("empty has no operands"), batch=_no_operands("empty"),
                  sharding=_from_param("out_sharding"),
                  per_device=from_primitive(lambda p: PD.localized(p, PD.shape_fix("shape"))))


# ========================================================= broadcast_in_dim

def _broadcast_in_dim_type(x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape,
                           sharding: Any = None) -> list[ArrayType]:
    name = "broadcast_in_dim"
    _check_shapelike(name, "C1", "shape", shape)
    _check_shapelike(name, "C1", "broadcast_dimensions", broadcast_dimensions)
    require(len(broadcast_dimensions) == x.ndim, name, "C2",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must have one entry per "
            f"operand axis, operand has rank {x.ndim}")
    require(len(shape) >= x.ndim, name, "C3",
            f"target shape {tuple(shape)} must have rank at least the operand rank {x.ndim}")
    require(all(0 <= d < len(shape) for d in broadcast_dimensions), name, "C4",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must be axes of the result "
            f"shape {tuple(shape)}")
    for axis, d in enumerate(broadcast_dimensions):
        require(x.shape[axis] in (1, shape[d]), name, "C5",
                f"operand axis {axis} has size {x.shape[axis]}, which cannot broadcast to "
                f"result axis {d} of size {shape[d]} (sizes must match or be 1)")
    require(len(set(broadcast_dimensions)) == len(broadcast_dimensions), name, "C6",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must not contain duplicates")
    return [ArrayType(tuple(shape), x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x: np.ndarray, *, shape: Shape, broadcast_dimensions: Shape,
                           sharding: Any = None) -> list[np.ndarray]:
    # Put operand axes in the order of their result axes, then insert the new ones.
    order = np.argsort(broadcast_dimensions, kind="stable")
    x = np.transpose(x, order) if x.ndim else x
    expanded = [1] * len(shape)
    for k, d in enumerate(sorted(broadcast_dimensions)):
        expanded[d] = x.shape[k]
    return [np.broadcast_to(x.reshape(expanded), shape)]


def _pp_broadcast_in_dim(eqn: Any, ctx: Any) -> Any:
    params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
    if not params.get("broadcast_dimensions"):
        params.pop("broadcast_dimensions", None)
    return pp_eqn_default(eqn, ctx, params)


def _broadcast_in_dim_transpose(ct: Any, operand: UndefinedPrimal, *, shape: Shape,
                                broadcast_dimensions: Shape, sharding: Any = None) -> Any:
    """Sum over the result axes that are new or broadcast from size 1, then
    reinsert the operand's size-1 axes."""
    unit = [i for i, d in enumerate(operand.aval.shape) if d == 1]
    kept = [d for i, d in enumerate(broadcast_dimensions) if i not in unit]
    axes = tuple(i for i in range(len(shape)) if i not in kept)
    lax = _lax()
    return lax.expand_dims(lax.reduce_sum(ct, axes), unit)


def _broadcast_in_dim_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                            shape: Shape, broadcast_dimensions: Shape,
                            sharding: Any = None) -> Batched:
    """The batch axis goes to the front of operand and result; the operand's
    other axes shift by one (and so does a ``sharding`` param, whose new
    leading entry is the vmap's explicit mesh axes)."""
    (x,), dim = args, _bd(dims[0])
    x = moveaxis(x, dim, 0)
    new_shape = (canonical_aval_of(x).shape[0], *shape)
    new_dims = (0, *np.add(1, broadcast_dimensions))
    sharding = sharding_for_vmap(axis, sharding, 0)
    if canonical_aval_of(x).shape == new_shape and new_dims == tuple(range(len(new_shape))):
        if sharding is None or sharding == canonical_aval_of(x).sharding:
            return [x], [0]  # the identity, which JAX's staging forwards
        # JAX's lax.broadcast_in_dim turns an identity that changes the
        # sharding into a reshard.
        from spec._src.lax.reshard import reshard
        return [reshard(x, sharding)], [0]
    out = broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims,
                                  sharding=sharding)
    return [out], [0]


broadcast_in_dim_p = declare(
    "broadcast_in_dim", typing=_broadcast_in_dim_type, impl=_broadcast_in_dim_impl,
    pp_rule=_pp_broadcast_in_dim, jvp=linear_jvp(),
    transpose=linear_transpose(_broadcast_in_dim_transpose), batch=_broadcast_in_dim_batch,
    sharding=SK.section("broadcast_in_dim", _bid_parts, _bid_ur),
    per_device=from_primitive(lambda p: PD.then_reshard(
        p, _bid_natural, lambda q: PD.localized(q, PD.shape_fix("shape")))))


# ================================================================== reshape

def _reshape_type(x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                  sharding: Any = None) -> list[ArrayType]:
    name = "reshape"
    require(_is_int_seq(new_sizes) and all(d >= 0 for d in new_sizes), name, "C1",
            f"new_sizes must all be nonnegative integers, got {tuple(new_sizes)}")
    if dimensions is not None:
        require(sorted(dimensions) == list(range(x.ndim)), name, "C2",
                f"dimensions must be a permutation of operand dimensions, got dimensions "
                f"{tuple(dimensions)} for shape {x.shape}")
    size = int(np.prod(new_sizes, dtype=np.int64))
    # JAX's shape rule omits this check and XLA rejects the program later with a
    # ValueError; the spec states it here.
    require(size == x.size, name, "C3",
            f"cannot reshape operand of shape {x.shape} ({x.size} elements) to new_sizes "
            f"{tuple(new_sizes)} ({size} elements)", ValueError)
    return [ArrayType(tuple(new_sizes), x.dtype, x.weak_type)]


def _reshape_impl(x: np.ndarray, *, new_sizes: Shape, dimensions: Shape | None,
                  sharding: Any = None) -> list[np.ndarray]:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return [x.reshape(new_sizes)]


def _reshape_transpose(ct: Any, operand: UndefinedPrimal, *, new_sizes: Shape,
                       dimensions: Shape | None, sharding: Any = None) -> Any:
    """Reshape back; with ``dimensions`` (transpose-then-reshape), reshape to the
    permuted operand shape and undo the permutation."""
    lax, shape = _lax(), operand.aval.shape
    if dimensions is None:
        return lax.reshape(ct, shape)
    permuted = lax.reshape(ct, tuple(shape[d] for d in dimensions))
    return lax.transpose(permuted, np.argsort(dimensions))


def _reshape_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_sizes: Shape, dimensions: Shape | None, sharding: Any = None
                   ) -> Batched:
    """Batch axis to the front, kept as the result's leading axis (also in a
    ``sharding`` param, sharded over the vmap's explicit mesh axes)."""
    x = moveaxis(args[0], _bd(dims[0]), 0)
    if dimensions is not None:
        dimensions = (0, *np.add(1, dimensions))
    size = canonical_aval_of(x).shape[0]
    out_sharding = sharding_for_vmap(axis, sharding, 0)
    return [_lax().reshape(x, (size, *new_sizes), dimensions, out_sharding=out_sharding)], [0]


reshape_p = declare("reshape", typing=_reshape_type, impl=_reshape_impl, jvp=linear_jvp(),
                    transpose=linear_transpose(_reshape_transpose), batch=_reshape_batch,
                    sharding=SK.section("reshape", _reshape_parts, _reshape_ur),
                    per_device=from_primitive(lambda p: PD.then_reshard(
                        p, _reshape_natural, lambda q: PD.localized(q, PD.shape_fix("new_sizes")))))


# ================================================================ transpose

def _transpose_type(x: ArrayType, *, permutation: Shape) -> list[ArrayType]:
    require(isinstance(permutation, (tuple, list, np.ndarray)), "transpose", "C1",
            f"permutation must be a tuple/list/ndarray, got {type(permutation)}")
    require(sorted(permutation) == list(range(x.ndim)), "transpose", "C2",
            f"permutation {tuple(permutation)} is not a permutation of the operand "
            f"dimensions of shape {x.shape}")
    return [ArrayType(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)]


def _transpose_impl(x: np.ndarray, *, permutation: Shape) -> list[np.ndarray]:
    return [np.transpose(x, permutation)]


def _transpose_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                     permutation: Shape) -> Batched:
    """One permutation that also brings the batch axis to the front."""
    dim = _bd(dims[0])
    perm = (dim, *(i if i < dim else i + 1 for i in permutation))
    return [_lax().transpose(args[0], perm)], [0]


transpose_p = declare(
    "transpose", typing=_transpose_type, impl=_transpose_impl, jvp=linear_jvp(),
    transpose=linear_transpose(
        lambda ct, x, *, permutation: _lax().transpose(ct, np.argsort(permutation))),
    batch=_transpose_batch,
    sharding=SK.section("transpose", _transpose_parts, SK.keeps),
    per_device=from_primitive(PD.local))


# ================================================================== squeeze

def _squeeze_type(x: ArrayType, *, dimensions: Shape) -> list[ArrayType]:
    name = "squeeze"
    require(len(set(dimensions)) == len(dimensions), name, "C1",
            f"dimensions are not unique: {tuple(dimensions)}", ValueError)
    require(all(0 <= d < x.ndim for d in dimensions), name, "C2",
            f"dimensions outside range [0, {x.ndim}): {tuple(dimensions)}", ValueError)
    require(all(x.shape[d] == 1 for d in dimensions), name, "C3",
            f"cannot squeeze an axis whose size is not one, got shape={x.shape} and "
            f"dimensions={tuple(dimensions)}", ValueError)
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ArrayType(shape, x.dtype, x.weak_type)]


def _squeeze_impl(x: np.ndarray, *, dimensions: Shape) -> list[np.ndarray]:
    return [np.squeeze(x, axis=tuple(dimensions))]


def _squeeze_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   dimensions: Shape) -> Batched:
    """Batch axis to the front; the squeezed axes shift by one."""
    x = moveaxis(args[0], _bd(dims[0]), 0)
    return [_lax().squeeze(x, tuple(np.add(1, dimensions)))], [0]


squeeze_p = declare(
    "squeeze", typing=_squeeze_type, impl=_squeeze_impl, jvp=linear_jvp(),
    transpose=linear_transpose(lambda ct, x, *, dimensions: _lax().expand_dims(ct, dimensions)),
    batch=_squeeze_batch,
    sharding=SK.section("squeeze", _squeeze_parts, SK.keeps),
    per_device=from_primitive(PD.local))


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
    return [_lax().rev(args[0], new)], [dim]


rev_p = declare("rev", typing=_rev_type, impl=_rev_impl, jvp=linear_jvp(),
                transpose=linear_transpose(
                    lambda ct, x, *, dimensions: _lax().rev(ct, dimensions)),
                batch=_rev_batch,
                sharding=SK.section("rev", SK.same_as(0)),
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
    idx = tuple(slice(s, lim, st) for s, lim, st in zip(start_indices, limit_indices, steps))
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
    return [_lax().slice(x, starts, limits, steps)], [dim]


def _slice_transpose_into(ct: Any, operand: Any, *, start_indices: Shape,
                          limit_indices: Shape, strides: Shape | None) -> list[Any]:
    """Into a gradient ref: add the cotangent where the slice read."""
    from spec._src.interpreters.ad import RefAccum
    if not isinstance(operand, RefAccum):
        return _slice_transpose_dense(ct, operand, start_indices=start_indices,
                                      limit_indices=limit_indices, strides=strides)
    if type(ct) is not Zero:
        from spec._src.lax.state import add_into_slices
        add_into_slices(operand, ct, [int(s) for s in start_indices],
                        canonical_aval_of(ct).shape, strides)
    return [None]


_slice_transpose_dense = linear_transpose(_slice_transpose)
slice_p = declare("slice", typing=_slice_type, impl=_slice_impl, jvp=linear_jvp(),
                  transpose=_slice_transpose_into, batch=_slice_batch,
                  sharding=SK.section("slice", _slice_parts, SK.keeps),
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
    return [x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]]


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
    from spec._src.interpreters.ad import RefAccum
    if isinstance(operand, RefAccum):  # into a gradient ref: only the slice read
        if type(ct) is not Zero:
            from spec._src.lax.state import add_into_slices
            add_into_slices(operand, ct, idx, slice_sizes)
        return [None] * (1 + len(idx))
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type())] + [None] * len(idx)
    zeros = _lax().full(operand.aval.shape, 0, canonical_aval_of(ct).dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


def _index_vector(axis: AxisData, idx: Sequence[Any], dims: Sequence[BatchDim]
                  ) -> tuple[Any, BatchDim]:
    """The scalar start indices as one index vector (for gather/scatter):
    shape (n,) when none is batched, else (batch, n) batched at 0 with the
    unbatched ones broadcast along the batch."""
    lax = _lax()
    if not idx:
        return np.array([], np.int32), None
    if all(d is None for d in dims):
        return lax.concatenate([lax.broadcast(i, (1,)) for i in idx], 0), None
    # The index vector's batch axis is sharded as the first batched index's.
    first = next(i for i, d in zip(idx, dims) if d is not None)
    s = canonical_aval_of(first).sharding
    out_s = None if s is None else NamedSharding(s.mesh, P(_spec_entry(first, 0), None))
    cols = [lax.broadcast_in_dim(i, (axis.size, 1), (0,) if d is not None else (),
                                 out_sharding=out_s)
            for i, d in zip(idx, dims)]
    return lax.concatenate(cols, 1), 0


def _dynamic_slice_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                         slice_sizes: Shape) -> Batched:
    """A gather, as JAX batches it: the start indices become one index
    vector (batched when any is); a batched operand gains a batch axis in
    front, which is a window axis of full size when the indices are
    unbatched and a batching axis shared with the indices otherwise."""
    from spec._src.lax.indexing import GatherDimensionNumbers, GatherScatterMode, gather_p
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


dynamic_slice_p = declare("dynamic_slice", typing=_dynamic_slice_type,
                          impl=_dynamic_slice_impl, jvp=_dynamic_slice_jvp,
                          transpose=_dynamic_slice_transpose, batch=_dynamic_slice_batch,
                          sharding=SK.section("dynamic_slice", _dynamic_slice_parts,
                                              _dynamic_slice_ur),
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
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
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
    zeros = _lax().full_like(ct, 0, shape=update_shape)
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
    from spec._src.lax.indexing import GatherScatterMode, ScatterDimensionNumbers, scatter_p
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


dynamic_update_slice_p = declare("dynamic_update_slice", typing=_dynamic_update_slice_type,
                                 impl=_dynamic_update_slice_impl,
                                 jvp=_dynamic_update_slice_jvp,
                                 transpose=_dynamic_update_slice_transpose,
                                 batch=_dynamic_update_slice_batch,
                                 sharding=SK.section("dynamic_update_slice", _dus_parts, _dus_ur),
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
    return _cts_or_none(_lax().split(ct, sizes, axis=dimension), operands)


def _front(axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
           keep_sharding: bool = False) -> list[Any]:
    """Every operand with its batch axis in front (unbatched ones broadcast
    with ``lax.broadcast``, as JAX's concatenate and stack rules do; with
    ``keep_sharding`` (concatenate's rule) a sharded unbatched operand's new
    axis is sharded as the first batched operand's batch axis)."""
    lax = _lax()
    entry = next(_spec_entry(x, d) for x, d in zip(args, dims) if d is not None)

    def front(x: Any) -> Any:
        s = canonical_aval_of(x).sharding
        if not keep_sharding or s is None:
            return lax.broadcast(x, (axis.size,))
        return lax.broadcast(x, (axis.size,), out_sharding=insert_spec_entry(s, 0, entry))
    return [moveaxis(x, d, 0) if d is not None else front(x) for x, d in zip(args, dims)]


def _spec_entry(x: Any, dim: int) -> Any:
    """The spec entry of dimension ``dim`` of ``x``'s type (None unsharded)."""
    s = canonical_aval_of(x).sharding
    return None if s is None else SK.parts(canonical_aval_of(x))[dim]


def _concatenate_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                       dimension: int) -> Batched:
    """Batch axes to the front; concatenate along the shifted dimension."""
    return [_lax().concatenate(_front(axis, args, dims, True), dimension + 1)], [0]


concatenate_p = declare("concatenate", typing=_concatenate_type, impl=_concatenate_impl,
                        jvp=linear_jvp(), transpose=_concatenate_transpose,
                        batch=_concatenate_batch,
                        sharding=SK.section("concatenate", _concatenate_parts, _concatenate_ur),
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


stack_p = declare("stack", typing=_stack_type, impl=_stack_impl, jvp=linear_jvp(),
                  transpose=_stack_transpose, batch=_stack_batch,
                  sharding=SK.section("stack", _stack_parts, _stack_ur),
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
    return [_lax().concatenate([instantiate(c) for c in cts], axis)]


def _split_batch(axis_data: AxisData, args: list[Any], dims: list[BatchDim], /, *,
                 sizes: Shape, axis: int) -> Batched:
    """Split along the axis renumbered around the batch axis."""
    ax, dim = axis, _bd(dims[0])
    outs = _lax().split(args[0], sizes, ax + 1 if ax >= dim else ax)
    return list(outs), [dim] * len(sizes)


split_p = declare("split", typing=_split_type, impl=_split_impl, multiple_results=True,
                  jvp=linear_jvp(), transpose=_split_transpose, batch=_split_batch,
                  sharding=SK.section("split", _split_parts, SK.linear_unary),
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


unstack_p = declare("unstack", typing=_unstack_type, impl=_unstack_impl,
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
    lax, shape = _lax(), operand.aval.shape
    pairs = tuple(k for pair in zip(reps, shape) for k in pair)
    return lax.reduce_sum(lax.reshape(ct, pairs), tuple(2 * i for i in range(len(shape))))


def _tile_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *, reps: Shape
                ) -> Batched:
    """The batch axis is repeated once."""
    dim = _bd(dims[0])
    new_reps = list(reps)
    new_reps.insert(dim, 1)
    return [_lax().tile(args[0], new_reps)], [dim]


tile_p = declare("tile", typing=_tile_type, impl=_tile_impl, jvp=linear_jvp(),
                 transpose=linear_transpose(_tile_transpose), batch=_tile_batch,
                 sharding=SK.section("tile", _tile_parts),
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
    dst = tuple(slice(max(lo, 0), max(lo, 0) + (d - 1) * (i + 1) + 1, i + 1) if d
                else slice(0, 0)
                for (lo, _, i), d in zip(padding_config, x.shape))
    out[dst] = x
    crop = tuple(slice(max(-lo, 0), g - max(-hi, 0))
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
        lax = _lax()
        axes = tuple(range(len(padding_config)))
        t_padv = lax.sub(lax.reduce_sum(ct, axes), lax.reduce_sum(t_operand, axes))
    return [t_operand if is_undefined_primal(operand) else None, t_padv]


def _pad_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
               padding_config: tuple[tuple[int, int, int], ...]) -> Batched:
    """The batch axis is not padded. A batched padding value cannot be a
    pad's scalar: pad with zero, pad a mask of the operand's positions the
    same way, and select the padding values (broadcast along the batch
    axis) outside the mask."""
    lax = _lax()
    x, pv = args
    x_dim, pv_dim = dims
    if x_dim is None:
        x, x_dim = lax.broadcast(x, (axis.size,)), 0
    # Bound directly: lax.pad would turn the config's np.int64 entries (as
    # jnp.pad makes them) into ints, and JAX keeps them.
    cfg = list(padding_config)
    cfg.insert(x_dim, (0, 0, 0))
    config = tuple(cfg)
    if pv_dim is None:
        return [pad_p.bind(x, pv, padding_config=config)], [x_dim]
    padded = pad_p.bind(x, lax.full_like(x, 0, shape=()), padding_config=config)
    mask = pad_p.bind(lax.full_like(x, True, np.bool_), False, padding_config=config)
    fill = lax.broadcast_in_dim(pv, canonical_aval_of(padded).shape, (x_dim,))
    return [lax.select(mask, padded, fill)], [x_dim]


pad_p = declare("pad", typing=_pad_type, impl=_pad_impl, jvp=linear_jvp(),
                transpose=_pad_transpose, batch=_pad_batch,
                sharding=SK.section("pad", _pad_parts, SK.linear_unary),
                per_device=from_primitive(lambda p: PD.guarded(p, _pad_ok, PD.local(p))))


# ===================================================================== copy

def _copy_type(x: ArrayType) -> list[ArrayType]:
    return [x]


def _copy_impl(x: np.ndarray) -> list[np.ndarray]:
    return [x.copy()]


def _copy_transpose(ct: Any, x: UndefinedPrimal) -> Any:
    return copy_p.bind(ct)


copy_p = declare("copy", typing=_copy_type, impl=_copy_impl, jvp=linear_jvp(),
                 transpose=linear_transpose(_copy_transpose), batch=vectorized(),
                 sharding=SK.section("copy", SK.same_as(0), SK.keeps),
                 per_device=from_primitive(PD.aligned))


__all__ = [
    "bitcast_convert_type_p", "broadcast_in_dim_p", "concatenate_p", "convert_element_type_p",
    "copy_p", "dynamic_slice_p", "dynamic_update_slice_p", "empty_p", "iota_p",
    "pad_p", "reshape_p", "rev_p", "slice_p", "split_p", "squeeze_p", "stack_p", "tile_p",
    "transpose_p", "unstack_p",
]


