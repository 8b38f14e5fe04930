"""Per-device programs of the primitives (the execution half of each
sharding section; SPEC.md section 14.3).

``prim.per_device(geo, args, out_avals, **params) -> [Dist]`` runs the
primitive on a mesh: ``args`` are Dists (one buffer per device), the result
Dists have the types the typing and sharding sections gave. The building
blocks, from cheapest to most general:

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
from spec._src.core.state_types import NDIndexer, RefType, Slice, indexer_tree, unflatten_transforms
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import Primitive
from spec._src.core.registry import REGISTRY
from spec._src.core.sharding import NamedSharding, P, entry_of
from spec._src.core.types import ArrayType

Program = Callable[..., list[Dist]]


def _laid_out(aval: ArrayType, parts: Sequence[tuple[str, ...]], unreduced: frozenset[str],
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


def _has_duplicates(parts: Sequence[tuple[str, ...]], extra: frozenset[str] = frozenset()
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
                    target = _laid_out(a.aval, want, S.unreduced_of(a.aval), out)
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


# ================================================================ families


def _sharded_dims(aval: ArrayType) -> set[int]:
    return {i for i, p in enumerate(S.parts_of(aval)) if p}


def _axes_untouched(param: str) -> Callable[..., bool]:
    """The primitive's ``param`` dimensions are all unsharded."""
    def ok(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
        dims = params[param]
        dims = (dims,) if isinstance(dims, int) else dims
        return not (_sharded_dims(args[0].aval) & {int(d) for d in dims})
    return ok


def _batch_split_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Decompositions: every operand and result is split alike over the
    batch dimensions (those before the first operand's two matrix
    dimensions) and not at all over the rest, so each device's blocks are
    whole matrices of its own batch entries."""
    n_batch = args[0].aval.ndim - 2
    batch = tuple(S.parts_of(args[0].aval)[:n_batch])
    for aval in [*(a.aval for a in args), *out_avals]:
        parts = tuple(S.parts_of(aval))
        if parts[:n_batch] != batch or any(parts[n_batch:]) or S.unreduced_of(aval):
            return False
    return True


def _full_on_sharded(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Sharded dimensions keep their size (the op is the identity there)."""
    x, out = args[0].aval, out_avals[0]
    return all(x.shape[d] == out.shape[d] for d in _sharded_dims(x))


def _slice_ok(args: list[Dist], out_avals: list[ArrayType], *, start_indices: Any,
              limit_indices: Any, strides: Any) -> bool:
    x = args[0].aval
    steps = strides or (1,) * x.ndim
    return all(start_indices[d] == 0 and limit_indices[d] == x.shape[d] and steps[d] == 1
               for d in _sharded_dims(x))


def _slice_fix(args: list[Dist], out_avals: list[ArrayType], shapes: list[Any], *,
               start_indices: Any, limit_indices: Any, strides: Any) -> dict[str, Any]:
    limits = tuple(int(s) if d in _sharded_dims(args[0].aval) else int(limit_indices[d])
                   for d, s in enumerate(shapes[0]))
    return {"start_indices": start_indices, "limit_indices": limits, "strides": strides}


def _pad_ok(args: list[Dist], out_avals: list[ArrayType], *, padding_config: Any) -> bool:
    return all(tuple(padding_config[d]) == (0, 0, 0) for d in _sharded_dims(args[0].aval))


def _dus_ok(args: list[Dist], out_avals: list[ArrayType]) -> bool:
    x, update = args[0].aval, args[1].aval
    return all(x.shape[d] == update.shape[d] for d in _sharded_dims(x)) and \
        S.parts_of(x) == S.parts_of(update)


def _concat_ok(args: list[Dist], out_avals: list[ArrayType], *, dimension: int) -> bool:
    return not S.parts_of(out_avals[0])[dimension]


def _reshape_natural(args: list[Dist], out_avals: list[ArrayType], *, new_sizes: Any,
                     dimensions: Any, sharding: Any = None) -> list[ArrayType] | None:
    from spec._src.lax.structural import reshape_p
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
    return [_laid_out(out, parts, S.unreduced_of(x), out, x)]


def _same_layout_natural(args: list[Dist], out_avals: list[ArrayType], **params: Any
                         ) -> list[ArrayType] | None:
    x = args[0].aval
    return [_laid_out(out_avals[0], S.parts_of(x), S.unreduced_of(x), out_avals[0], x)]


def _shape_fix(key: str) -> Callable[..., dict[str, Any]]:
    def fix(args: list[Dist], out_avals: list[ArrayType], shapes: list[Any], **params: Any
            ) -> dict[str, Any]:
        return {**params, key: tuple(shapes[0])}
    return fix


def _iota(prim: Primitive) -> Program:
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


# ----------------------------------------------------- reductions and dot


def _reduction(prim: Primitive, op: str) -> Program:
    """Local reduction to the natural result (unreduced over the mesh axes of
    the reduced dims), then the collective to the result type."""
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        (x,), (out,) = args, out_avals
        axes = {int(a) for a in params["axes"]}
        xp = S.parts_of(x.aval)
        split = frozenset(a for d in axes for a in xp[d])
        if split and op == "none":  # argmax/argmin: no monoid to finish with
            return fallback(geo, args, out_avals, **params)
        kept = [p for d, p in enumerate(xp) if d not in axes]
        nat = _laid_out(out, kept, S.unreduced_of(x.aval) | split, out, x.aval)
        (partial,) = S.run_local(prim, geo, [x], [nat], params)
        return [S.reshard(partial, out, geo, op)]
    return program


def _dot_general(prim: Primitive) -> Program:
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        lhs, rhs = args
        (out,) = out_avals
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        lp, rp = list(S.parts_of(lhs.aval)), list(S.parts_of(rhs.aval))
        # Contracted and batch dims must be split alike on both sides: an
        # unsplit side keeps only the other side's block (free).
        # When the split is taken by another dim of the unsplit side, or the
        # two sides disagree, both are gathered along that dim instead.
        for ld, rd in [*zip(lc, rc), *zip(lb, rb)]:
            if lp[ld] == rp[rd]:
                continue
            axes = lp[ld] or rp[rd]
            taken = {a for i, p in enumerate(lp) if i != ld for a in p} | \
                {a for i, p in enumerate(rp) if i != rd for a in p}
            if (lp[ld] and rp[rd]) or set(axes) & taken:
                axes = ()
            lp[ld] = rp[rd] = axes
        lhs = _cut(lhs, lp, geo, rhs.aval)
        rhs = _cut(rhs, rp, geo, lhs.aval)
        contracted = frozenset(a for d in lc for a in lp[d])
        free_l = [lp[d] for d in range(len(lp)) if d not in lc and d not in lb]
        free_r = [rp[d] for d in range(len(rp)) if d not in rc and d not in rb]
        parts = [lp[d] for d in lb] + free_l + free_r
        u = contracted | S.unreduced_of(lhs.aval) | S.unreduced_of(rhs.aval)
        if _has_duplicates(parts, u):
            return fallback(geo, args, out_avals, **params)
        nat = _laid_out(out, parts, u, out, lhs.aval, rhs.aval)
        (partial,) = S.run_local(prim, geo, [lhs, rhs], [nat], params)
        return [S.reshard(partial, out, geo, "sum")]
    return program


def _cut(d: Dist, parts: list[tuple[str, ...]], geo: Geometry, *like: ArrayType) -> Dist:
    if list(S.parts_of(d.aval)) == parts:
        return d
    return S.reshard(d, _laid_out(d.aval, parts, S.unreduced_of(d.aval), d.aval, *like), geo)


def _conv_batch_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """A convolution is local when only the lhs batch dim is split (the same
    way in the result) and the kernel is whole: each device convolves its
    examples. Split spatial dims would need halos; split features, sums."""
    lhs, rhs = args[0].aval, args[1].aval
    lspec, _, ospec = (tuple(int(i) for i in s) for s in params["dimension_numbers"])
    lp, op = S.parts_of(lhs), S.parts_of(out_avals[0])
    return (params["batch_group_count"] == 1 and not any(S.parts_of(rhs))
            and not S.unreduced_of(lhs) and not S.unreduced_of(rhs)
            and all(not lp[d] for d in lspec[1:]) and lp[lspec[0]] == op[ospec[0]]
            and all(not op[d] for d in ospec[1:]))


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


def _gather(prim: Primitive) -> Program:
    """A whole operand batching dim is cut to its indices' split (free: batch
    elements pair positionally), then each device gathers locally."""
    run = localized(prim, _gather_fix)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        dn = params["dimension_numbers"]
        operand, indices = args
        parts = list(S.parts_of(operand.aval))
        ix = S.parts_of(indices.aval)
        for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            parts[od] = parts[od] or ix[idd]
        operand = _cut(operand, parts, geo, indices.aval)
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


def _named_reduce(prim: Primitive, op: str) -> Program:
    """psum/pmax/pmin over manual mesh axes: positional axes reduced on each
    device, then an all-reduce over the named ones."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                axes: tuple[Any, ...], axis_index_groups: Any) -> list[Dist]:
        pos = tuple(a for a in axes if isinstance(a, (int, np.integer)))
        named = tuple(a for a in geo.names if a in axes)
        (x,), (out,) = args, out_avals
        local = S.run_local(prim, geo, [x], [out.update(vma=frozenset())],
                            {"axes": pos, "axis_index_groups": None})[0] if pos else x
        bufs = S.all_reduce(local.bufs, named, op, geo) if named else local.bufs
        return [Dist(out, bufs)]
    return program


def _all_gather_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                        all_gather_dimension: int, axis_name: tuple[Any, ...],
                        axis_index_groups: Any, axis_size: int, tiled: bool) -> list[Dist]:
    (x,), (out,) = args, out_avals
    axes = tuple(a for a in axis_name if a in geo.names)
    bufs = x.bufs if tiled else S.each(lambda b: np.expand_dims(b, all_gather_dimension), x.bufs)
    return [Dist(out, S.all_gather(bufs, axes, all_gather_dimension, geo))]


def _axis_index_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                        axis_name: Any) -> list[Dist]:
    pos = geo.position((axis_name,))
    return [Dist(out_avals[0], tuple(np.asarray(p, np.int32) for p in pos))]


def _reshard(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        (x,), (out,) = args, out_avals
        src = x.aval.sharding
        if src is not None and not src.mesh.empty:
            src_geo = S.geometry(src.mesh, geo.procs)
            if src_geo != geo:  # onto another mesh of the same devices
                return [S.moved_mesh(x, out, src_geo, geo)]
        return [S.reshard(x, out, geo)]
    return program


# ---------------------------------------------------- sub-jaxpr primitives


def _call(key: str) -> Callable[[Primitive], Program]:
    def make(prim: Primitive) -> Program:
        def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                    **params: Any) -> list[Dist]:
            jaxpr = params[key]
            check_ref_equations(jaxpr)
            outs = S.eval_jaxpr(jaxpr, jaxpr.consts, args, geo)
            return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
        return program
    return make


def _cond(prim: Primitive) -> Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                branches: Any, **params: Any) -> list[Dist]:
        index, *ops = args
        # The index is replicated (scalar): every device takes the same branch.
        i = min(max(int(index.any), 0), len(branches) - 1)
        outs = S.eval_jaxpr(branches[i], branches[i].consts, ops, geo)
        return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
    return program


def _while(prim: Primitive) -> Program:
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                cond_nconsts: int, cond_jaxpr: Any, body_nconsts: int, body_jaxpr: Any
                ) -> list[Dist]:
        if cond_jaxpr.out_avals[0].ndim:  # a batched predicate (vmap)
            return fallback(geo, args, out_avals, cond_nconsts=cond_nconsts,
                            cond_jaxpr=cond_jaxpr, body_nconsts=body_nconsts,
                            body_jaxpr=body_jaxpr)
        cconsts = args[:cond_nconsts]
        bconsts = args[cond_nconsts:cond_nconsts + body_nconsts]
        carry = args[cond_nconsts + body_nconsts:]
        while True:
            (pred,) = S.eval_jaxpr(cond_jaxpr, cond_jaxpr.consts, [*cconsts, *carry], geo)
            if not bool(pred.any):
                return [Dist(a, c.bufs) for c, a in zip(carry, out_avals)]
            carry = S.eval_jaxpr(body_jaxpr, body_jaxpr.consts, [*bconsts, *carry], geo)
    return program


def _scan(prim: Primitive) -> Program:
    from spec._src.lax.scan import counts
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], **params: Any
                ) -> list[Dist]:
        nc, nk, nx, ny = counts(params["ft_in"], params["ft_out"])
        jaxpr, length, reverse = params["jaxpr"], params["length"], params["reverse"]
        consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
        if any(S.parts_of(x.aval)[0] for x in xs):
            return fallback(geo, args, out_avals, **params)
        x_avals = jaxpr.in_avals[nc + nk:]
        ys: list[list[list[np.ndarray]]] = [[[] for _ in range(geo.n)] for _ in range(ny)]
        order = range(length - 1, -1, -1) if reverse else range(length)
        for i in order:
            x_i = [_step_slice(x, a, i, geo) for x, a in zip(xs, x_avals)]
            outs = S.eval_jaxpr(jaxpr, jaxpr.consts, [*consts, *carry, *x_i], geo)
            carry = outs[:nk]
            for slot, y in zip(ys, outs[nk:]):
                for k in geo.local:
                    slot[k].append(S.held(y.bufs[k]))
        if reverse:
            for slot in ys:
                for column in slot:
                    column.reverse()
        stacked = [_stacked(slot, a, geo) for slot, a in zip(ys, out_avals[nk:])]
        return [*(Dist(a, c.bufs) for c, a in zip(carry, out_avals)), *stacked]
    return program


def _step_slice(x: Dist, aval: ArrayType, i: int, geo: Geometry) -> Dist:
    """Iteration i's slice of a scanned operand (one shared slice when every
    device shares the buffer: replicated work stays done once)."""
    if x.uniform:
        return S.uniform(x.any[i], aval, geo)
    return Dist(aval, S.each(lambda b: b[i], x.bufs))


def _stacked(columns: list[list[np.ndarray]], aval: ArrayType, geo: Geometry) -> Dist:
    """Per device, the iterations' outputs stacked (once when shared)."""
    held = [columns[k] for k in geo.local]
    if not held[0]:
        empty = np.empty(S.local_shape(aval, geo), aval.dtype)
        return S.uniform(empty, aval, geo)
    first = held[0]
    if all(all(a is b for a, b in zip(c, first)) for c in held[1:]):
        return S.uniform(np.stack(first), aval, geo)
    mine = set(geo.local)
    return Dist(aval, tuple(np.stack(c) if k in mine else None for k, c in enumerate(columns)))


# ================================================================ attach

_ELEMENTWISE_EXTRA = ("sort", "select_n", "clamp", "add_any", "stop_gradient", "copy",
                      "reduce_precision", "convert_element_type", "bitcast_convert_type")
_LOCAL = ("transpose", "squeeze", "unstack", "cumsum", "cumprod", "cummax", "cummin",
          "cumlogsumexp", "top_k", "name", "tile", "sharding_constraint")
_REDUCERS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
             "reduce_prod": "prod", "reduce_and": "and", "reduce_or": "or",
             "reduce_xor": "xor", "argmax": "none", "argmin": "none"}


def _elementwise_names() -> list[str]:
    from spec._src.lax import elementwise
    return [p.name for p in vars(elementwise).values() if isinstance(p, Primitive)]


def _programs() -> dict[str, Program]:
    prims = {p.name: p for p in REGISTRY.values()}
    out: dict[str, Program] = {}
    for name in (*_elementwise_names(), *_ELEMENTWISE_EXTRA):
        out[name] = aligned(prims[name])
    for name in _LOCAL:
        out[name] = local(prims[name])
    for name, op in _REDUCERS.items():
        out[name] = _reduction(prims[name], op)
    p = prims
    out["rev"] = guarded(p["rev"], _axes_untouched("dimensions"), local(p["rev"]))
    out["split"] = guarded(p["split"], _axes_untouched("axis"), local(p["split"]))
    out["pad"] = guarded(p["pad"], _pad_ok, local(p["pad"]))
    out["slice"] = guarded(p["slice"], _slice_ok, localized(p["slice"], _slice_fix))
    out["dynamic_slice"] = guarded(p["dynamic_slice"], _full_on_sharded,
                                   localized(p["dynamic_slice"], _shape_fix("slice_sizes")))
    out["dynamic_update_slice"] = guarded(p["dynamic_update_slice"], _dus_ok,
                                          local(p["dynamic_update_slice"]))
    out["concatenate"] = guarded(p["concatenate"], _concat_ok, aligned(p["concatenate"]))
    out["stack"] = aligned_stack(p["stack"])
    out["broadcast_in_dim"] = then_reshard(
        p["broadcast_in_dim"], _bid_natural,
        lambda q: localized(q, _shape_fix("shape")))
    out["reshape"] = then_reshard(p["reshape"], _reshape_natural,
                                  lambda q: localized(q, _shape_fix("new_sizes")))
    out["convert_element_type"] = then_reshard(p["convert_element_type"],
                                               _same_layout_natural, local)
    out["empty"] = localized(p["empty"], _shape_fix("shape"))
    # Decompositions act on the trailing matrix dims, which their typing keeps
    # unsplit: each device factors its own block of the batch.
    for name in ("cholesky", "triangular_solve", "qr", "eigh", "svd"):
        out[name] = guarded(p[name], _batch_split_only, local(p[name]))
    # (split dimensions are never stretched: each block broadcasts locally)
    out["broadcast_to"] = localized(p["broadcast_to"], _shape_fix("shape"))
    out["iota"] = _iota(p["iota"])
    out["dot_general"] = _dot_general(p["dot_general"])
    out["gather"] = guarded(p["gather"], _gather_ok, _gather(p["gather"]))
    for name in ("scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min",
                 "scatter-max"):
        out[name] = guarded(p[name], _scatter_ok, local(p[name]))
    out["conv_general_dilated"] = guarded(p["conv_general_dilated"], _conv_batch_only,
                                          local(p["conv_general_dilated"]))
    out["reshard"] = _reshard(p["reshard"])
    for name, op in (("psum", "sum"), ("pmax", "max"), ("pmin", "min")):
        out[name] = _named_reduce(p[name], op)
    out["all_gather"] = _all_gather_program
    out["axis_index"] = _axis_index_program
    out["jit"] = _call("jaxpr")(p["jit"])
    out["remat2"] = _call("jaxpr")(p["remat2"])
    out["custom_jvp_call"] = _call("call_jaxpr")(p["custom_jvp_call"])
    out["custom_vjp_call"] = _call("call_jaxpr")(p["custom_vjp_call"])
    out["eval_jaxpr"] = _call("call_jaxpr")(p["eval_jaxpr"])
    out["cond"] = _cond(p["cond"])
    out["while"] = _while(p["while"])
    out["scan"] = _scan(p["scan"])
    # PRNG: a key is an elementwise value; the words or bits a primitive adds
    # (or removes) after the key dimensions must not be split.
    for name in ("threefry2x32", "random_seed", "random_fold_in", "random_clone",
                 "random_gamma"):
        out[name] = aligned(p[name])
    for name in ("random_bits", "random_split", "random_wrap", "random_unwrap"):
        out[name] = guarded(p[name], _leading_layout_kept, local(p[name]))
    out["new_ref"] = _new_ref_program
    out["get"] = _get_program
    out["swap"] = _swap_program
    out["addupdate"] = _addupdate_program
    out["freeze"] = _freeze_program
    return out


# ------------------------------------------------------------------- refs
#
# (SPEC.md 17, "Refs over a mesh".) A ref's Dist holds views of one buffer:
# each device's block of it, devices holding the same block viewing the same
# memory. Reads copy every device's block out; writes go through one device
# per block (``S.writers``), after every device has read what a swap
# returns. Indexers into a split ref are slices, whole on split dims (M2,
# M3): each device applies them to its block with the split dims' sizes made
# local. Before anything runs, the ref equations are checked as JAX checks
# them when it compiles them (``lowering_check``).


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
    whole = np.array(S.assemble(x, geo), copy=True)  # (the ref's own buffer)
    return [Dist(out, S.new_ref_blocks(whole, out, geo))]


def _get_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, tree: Any
                 ) -> list[Dist]:
    ref, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("get", ref.aval, None, [i.aval for i in idx], tree)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    return S.run_local(_prim("get"), geo, [ref, *idx], out_avals, {"tree": local})


def _swap_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, tree: Any
                  ) -> list[Dist]:
    ref, val, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("swap", ref.aval, val.aval, [i.aval for i in idx], tree)
    val = _to_layout(val, out_avals[0].sharding, geo)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    old = S.run_local(_prim("get"), geo, [ref, *idx], out_avals, {"tree": local})
    _write(_prim("swap"), geo, ref, val, idx, local)
    return old


def _addupdate_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                       tree: Any) -> list[Dist]:
    from spec._src.lax.state import _indexed_sharding
    ref, val, *idx = args
    S.check_ref_layout(ref.aval, geo)
    lowering_check("addupdate", ref.aval, val.aval, [i.aval for i in idx], tree)
    assert isinstance(ref.aval, RefType)
    val = _to_layout(val, _indexed_sharding(ref.aval, val.aval.ndim, []), geo)
    idx = [_replicated(i, geo) for i in idx]
    local = _local_tree(ref.aval, tree, idx, geo)
    _write(_prim("addupdate"), geo, ref, val, idx, local)
    return []


def _freeze_program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType]
                    ) -> list[Dist]:
    S.check_ref_layout(args[0].aval, geo)
    return S.run_local(_prim("freeze"), geo, args, out_avals, {})


def _prim(name: str) -> Primitive:
    return REGISTRY[name]


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


def _leading_layout_kept(args: list[Dist], out_avals: list[ArrayType], **params: Any
                         ) -> bool:
    """The operand's and the result's common leading dimensions are laid out
    alike, and the dimensions only one of them has are whole."""
    src, dst = S.parts_of(args[0].aval), S.parts_of(out_avals[0])
    n = min(len(src), len(dst))
    return src[:n] == dst[:n] and not any(src[n:]) and not any(dst[n:]) and not (
        S.unreduced_of(args[0].aval) or S.unreduced_of(out_avals[0]))


def aligned_stack(prim: Primitive) -> Program:
    """stack: operands take the result's layout without the new axis."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, axis: int
                ) -> list[Dist]:
        parts = list(S.parts_of(out_avals[0]))
        del parts[axis]
        cut = [a if not a.aval.ndim else _cut(a, parts, geo, out_avals[0]) for a in args]
        return S.run_local(prim, geo, cut, out_avals, {"axis": axis})
    return program


def attach() -> None:
    for name, program in _programs().items():
        prim = next(p for p in REGISTRY.values() if p.name == name)
        prim.per_device = program  # type: ignore[attr-defined]


__all__ = ["aligned", "attach", "gathered_names", "local", "localized"]


def gathered_names() -> list[str]:
    """Primitives that run the conservative gathered program."""
    return sorted(p.name for p in REGISTRY.values() if getattr(p, "per_device", None) is None)
