"""The remaining collectives of manual mode (SPEC.md section 15) and the
casts between the four states a value can be in along a manual mesh axis.

Inside a shard_map body a value is, along each manual axis, *varying*
(``{V:x}``: devices hold different values), *invariant* (the same value),
*unreduced* (``{U:x}``: devices hold partial sums of the true value) or
*reduced* (``{R:x}``: the same value, whose cotangent is unreduced). The
primitives here move data or only change that state:

- ``reduce_scatter`` (``lax.psum_scatter``): sum over the axes, each device
  keeping its block of one dimension; transpose ``all_gather``;
- ``all_to_all``: each device splits a dimension into one chunk per member
  of its group and receives the group's chunks concatenated along another
  dimension; transpose: the same with the two dimensions swapped;
- the free casts of ``lax.pcast``: ``preduced`` (invariant -> reduced),
  ``vary_unreduced_cast`` (varying -> unreduced) and ``reduced_vary_cast``
  (reduced -> varying); with ``pvary`` (invariant -> varying, in
  spec/_src/lax/shard_map.py);
- the collectives that consume unreduced values: ``unreduced_psum``
  (unreduced -> invariant, the transpose of ``preduced``) and
  ``unreduced_reduce_scatter`` (unreduced -> varying), whose transpose is
  ``all_gather_reduced`` (varying -> reduced).

Each primitive's per-device program moves the buffers through the Backend
(spec/_spmd.py), recording its collective in the ledger; the casts move
nothing and record nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import linear_jvp, linear_transpose
from spec._src.interpreters.batching import AxisData, delete_spec_entry, insert_spec_entry
from spec._src.core.interpreter import Primitive
from spec._src.core.registry import declare, require
from spec._src.lax.sharding_kit import mesh_ordered
from spec._src.lax.collectives import axis_size as env_axis_size
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import VMA_FROM_TYPING
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.sharding import get_abstract_mesh

# ================================================================= helpers


def names_of(axis_name: Any) -> tuple[Any, ...]:
    """An ``axis_name`` param (one name, or a tuple or list of them) as a tuple."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def group_size(axis_name: Any) -> int:
    """Members of a collective over ``axis_name``: the product of the bound
    axes' sizes (NameError for an unbound one, as JAX)."""
    return int(np.prod([env_axis_size(n) for n in names_of(axis_name)], dtype=np.int64))


def tracked(axes: Sequence[Any]) -> tuple[Any, ...]:
    """The axes among ``axes`` whose varying state types record: manual axes
    of a shard_map in context that checks it (check_vma)."""
    from spec._src.lax.shard_map import vma_checked
    if not vma_checked():
        return ()
    manual = get_abstract_mesh().manual_axes
    return tuple(a for a in axes if a in manual)


def _shown(axes: Any) -> str:
    return "{" + ", ".join(repr(a) for a in sorted(axes, key=str)) + "}"


def _require_varying(prim: str, c: str, x: ArrayType, axes: Sequence[Any]) -> None:
    """A collective that combines devices' values needs them to differ: the
    operand varies along every tracked axis it acts over (JAX's check_vma)."""
    missing = [a for a in tracked(axes) if a not in x.vma]
    require(not missing, prim, c,
            f"{prim} over {tuple(axes)} must be applied to a value varying along them, but "
            f"{x.str_short()} does not vary along {tuple(missing)}", ValueError)


def _require_settled(prim: str, c: str, x: ArrayType, axes: Sequence[Any]) -> None:
    """A data-moving collective needs a settled operand: not unreduced (a
    pending sum) and not reduced along its axes."""
    bad = (x.munreduced | x.mreduced) & frozenset(axes)
    require(not bad, prim, c,
            f"{prim} over {tuple(axes)} cannot take {x.str_short()}, which is unreduced or "
            f"reduced along {_shown(bad)}", ValueError)


def _require_dim(prim: str, c: str, name: str, dim: int, ndim: int) -> None:
    require(isinstance(dim, (int, np.integer)) and 0 <= dim < ndim, prim, c,
            f"{name}={dim} is out of range for an operand of rank {ndim}", ValueError)


def _scattered_shape(prim: str, c: str, x: ArrayType, dim: int, size: int, tiled: bool
                     ) -> tuple[int, ...]:
    """The shape of one member's block: ``dim`` divided among ``size``
    members (tiled), or removed (untiled: ``dim`` has exactly ``size``)."""
    n = x.shape[dim]
    shape = list(x.shape)
    if tiled:
        require(n % size == 0, prim, c,
                f"tiled: dimension {dim} of {x.str_short()} (size {n}) must be divisible by "
                f"the number of members {size}", ValueError)
        shape[dim] = n // size
    else:
        require(n == size, prim, c,
                f"untiled: dimension {dim} of {x.str_short()} (size {n}) must equal the "
                f"number of members {size}", ValueError)
        del shape[dim]
    return tuple(shape)


def _gathered_shape(x: ArrayType, dim: int, size: int, tiled: bool) -> tuple[int, ...]:
    shape = list(x.shape)
    if tiled:
        shape[dim] *= size
    else:
        shape.insert(dim, size)
    return tuple(shape)


def _on_mesh(axis_name: Any, geo: S.Geometry) -> tuple[Any, ...]:
    """The collective's mesh axes, in the order the collective names them
    (the order a member's position is counted in, major first)."""
    return tuple(a for a in names_of(axis_name) if a in geo.names)


def _block(buf: np.ndarray, dim: int, ways: int, index: int, tiled: bool) -> np.ndarray:
    """Member ``index``'s block of ``dim``: a slice (tiled) or an index."""
    if not tiled:
        return np.asarray(np.take(buf, index, axis=dim))
    step = buf.shape[dim] // ways
    sl = [slice(None)] * buf.ndim
    sl[dim] = slice(index * step, (index + 1) * step)
    return buf[tuple(sl)]


def _scatter(bufs: S.Bufs, axes: tuple[Any, ...], dim: int, tiled: bool, geo: S.Geometry
             ) -> S.Bufs:
    ways, pos = geo.size_of(axes), geo.position(axes)
    return tuple(None if b is None else _block(b, dim, ways, int(p), tiled)
                 for b, p in zip(bufs, pos))


def _sharding_scattered(x: ArrayType, *, dim: int, tiled: bool) -> list[Any]:
    """Sharding over non-manual axes (a partially manual map): as JAX, the
    operand's spec is kept (tiled: the dimension stays split as it was, now
    over the member's block); untiled, the removed dimension's entry goes."""
    if x.sharding is None or tiled:
        return [x.sharding]
    return [delete_spec_entry(x.sharding, dim, x.ndim)]


def _sharding_gathered(x: ArrayType, *, dim: int, tiled: bool) -> list[Any]:
    if x.sharding is None or tiled:
        return [x.sharding]
    return [insert_spec_entry(x.sharding, dim, None)]


def _cleared(aval: ArrayType, dims: Sequence[int]) -> ArrayType:
    """``aval`` with the spec entries of ``dims`` removed (those dimensions
    whole on every device)."""
    out = aval.sharding
    for dim in sorted(set(dims)):
        out = insert_spec_entry(delete_spec_entry(out, dim, aval.ndim), dim, None)
    return aval.update(sharding=out)


def on_whole_dims(in_dims: Callable[[dict[str, Any]], Sequence[int]],
                  out_dims: Callable[[dict[str, Any]], Sequence[int]],
                  program: S.Program) -> S.Program:
    """A collective's program for operands whose dimensions it reshapes are
    split over non-manual mesh axes (partially manual maps): those
    dimensions are first gathered whole (an all_gather in the ledger), the
    collective runs on the whole dimensions, and each device keeps its
    block of the result's (free)."""
    def wrapped(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                **params: Any) -> list[S.Dist]:
        (x,), (out,) = args, out_avals
        ins, outs = in_dims(params), out_dims(params)
        if x.aval.sharding is None or not any(S.parts_of(x.aval)[d] for d in ins):
            return program(geo, args, out_avals, **params)
        whole = S.reshard(x, _cleared(x.aval, ins), geo)
        (result,) = program(geo, [whole], [_cleared(out, outs)], **params)
        return [S.reshard(result, out, geo)]
    return wrapped


def _same_sharding(x: ArrayType, **params: Any) -> list[Any]:
    return [x.sharding]


def _program_error(name: str) -> Callable[..., list[np.ndarray]]:
    def impl(*args: Any, **params: Any) -> list[np.ndarray]:
        axes = params.get("axis_name", params.get("axes", ()))
        for n in names_of(axes):
            env_axis_size(n)  # NameError (as JAX) when unbound
        raise NameError(f"{name} can only be evaluated inside vmap or shard_map")
    return impl


def _not_batchable(name: str) -> Callable[..., tuple[list[Any], list[Any]]]:
    """JAX 0.12 defines no batching rule (NotImplementedError, as JAX)."""
    def rule(axis: AxisData, args: list[Any], dims: list[Any], **params: Any
             ) -> tuple[list[Any], list[Any]]:
        raise NotImplementedError(f"vmap of {name} is not implemented in JAX 0.12")
    return rule


def _identity_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                      **params: Any) -> list[S.Dist]:
    """A free cast: every device keeps its buffer; only the type changes."""
    return [S.Dist(out_avals[0], args[0].bufs)]


def _manual(axes_key: str) -> dict[str, Any]:
    """The declaration fields every manual collective shares: typing rules
    here give the varying/unreduced/reduced axes themselves; the batch trace
    hands a collective over a vmapped axis to the rule."""
    return {"vma_rule": VMA_FROM_TYPING,
            "axis_collective": lambda params: names_of(params[axes_key])}


# =========================================================== reduce_scatter


def _reduce_scatter_type(x: ArrayType, *, axis_name: tuple[Any, ...], scatter_dimension: int,
                         axis_index_groups: Any, axis_size: int, tiled: bool
                         ) -> list[ArrayType]:
    prim = "reduce_scatter"
    require(axis_index_groups is None, prim, "C1", "axis_index_groups is not supported",
            NotImplementedError)
    _require_dim(prim, "C2", "scatter_dimension", scatter_dimension, x.ndim)
    shape = _scattered_shape(prim, "C3", x, scatter_dimension, axis_size, tiled)
    _require_settled(prim, "C4", x, axis_name)
    _require_varying(prim, "C5", x, axis_name)
    return [x.update(shape=shape)]


def _reduce_scatter_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                            *, axis_name: tuple[Any, ...], scatter_dimension: int,
                            axis_index_groups: Any, axis_size: int, tiled: bool
                            ) -> list[S.Dist]:
    """Sum the group's buffers, each member keeping its block (one
    reduce_scatter in the ledger)."""
    (x,), (out,) = args, out_avals
    axes = _on_mesh(axis_name, geo)
    summed = S.all_reduce(x.bufs, axes, "sum", geo, kind="reduce_scatter")
    return [S.Dist(out, _scatter(summed, axes, scatter_dimension, tiled, geo))]


def _reduce_scatter_transpose(ct: Any, x: Any, *, axis_name: tuple[Any, ...],
                              scatter_dimension: int, axis_index_groups: Any, axis_size: int,
                              tiled: bool) -> Any:
    """Each member's block of the sum came from every member's operand: the
    cotangent is every member's cotangent block, gathered."""
    from spec._src.lax.collectives_api import all_gather
    return all_gather(ct, axis_name, axis_index_groups=axis_index_groups,
                      axis=scatter_dimension, tiled=tiled)


def _reduce_scatter_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                          axis_name: tuple[Any, ...], scatter_dimension: int,
                          axis_index_groups: Any, axis_size: int, tiled: bool
                          ) -> tuple[list[Any], list[Any]]:
    """Over another axis: the batch dimension rides along (the scattered
    dimension shifts past it). Over the vmapped axis: members are the batch,
    so sum it and leave member k's block at batch index k."""
    from spec import lax
    (x,), (d,) = args, dims
    params = {"axis_name": axis_name, "axis_index_groups": axis_index_groups,
              "axis_size": axis_size, "tiled": tiled}
    if axis.name is None or axis.name not in axis_name:
        if d is None:
            return [reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension,
                                          **params)], [None]
        dim = scatter_dimension + (d <= scatter_dimension)
        out_d = d if tiled or d < dim else d - 1
        return [reduce_scatter_p.bind(x, scatter_dimension=dim, **params)], [out_d]
    if axis_index_groups is not None or len(axis_name) > 1:
        raise NotImplementedError("reduce_scatter over a vmapped axis together with other "
                                  "axes (or with axis_index_groups) is not implemented")
    y = x * axis.size if d is None else lax.reduce_sum(x, (d,))
    if tiled:
        y = _split_dim(y, scatter_dimension, axis.size)
    return [y], [scatter_dimension]


reduce_scatter_p: Primitive = declare(
    "reduce_scatter", typing=_reduce_scatter_type, impl=_program_error("reduce_scatter"),
    jvp=linear_jvp(), transpose=linear_transpose(_reduce_scatter_transpose),
    batch=_reduce_scatter_batch,
    sharding=lambda x, *, scatter_dimension, tiled, **p: _sharding_scattered(
        x, dim=scatter_dimension, tiled=tiled),
    doc="Sum over named axes, each member keeping its block of one dimension.",
    **_manual("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["scatter_dimension"],),
        lambda p: (p["scatter_dimension"],) if p["tiled"] else (), _reduce_scatter_program))


# ================================================================ all_to_all


def _all_to_all_type(x: ArrayType, *, axis_name: Any, split_axis: int, concat_axis: int,
                     axis_index_groups: Any, tiled: bool) -> list[ArrayType]:
    prim = "all_to_all"
    require(axis_index_groups is None, prim, "C1", "axis_index_groups is not supported",
            NotImplementedError)
    _require_dim(prim, "C2", "split_axis", split_axis, x.ndim)
    _require_dim(prim, "C2", "concat_axis", concat_axis, x.ndim)
    size = group_size(axis_name)
    require(x.shape[split_axis] % size == 0, prim, "C3",
            f"dimension split_axis={split_axis} of {x.str_short()} (size "
            f"{x.shape[split_axis]}) must be divisible by the number of members {size}",
            ValueError)
    _require_settled(prim, "C4", x, names_of(axis_name))
    _require_varying(prim, "C5", x, names_of(axis_name))
    shape = list(x.shape)
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return [x.update(shape=tuple(shape), weak_type=False)]


def _all_to_all_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                        axis_name: Any, split_axis: int, concat_axis: int,
                        axis_index_groups: Any, tiled: bool) -> list[S.Dist]:
    """Member j's chunk k (of split_axis) goes to member k, which concatenates
    what it receives along concat_axis in member order (one all_to_all in
    the ledger). The backend moves the group's buffers; each member keeps
    its chunks."""
    (x,), (out,) = args, out_avals
    axes = _on_mesh(axis_name, geo)
    ways, pos = geo.size_of(axes), geo.position(axes)
    stacked = S.all_gather(S.each(lambda b: b[None], x.bufs), axes, 0, geo, kind="all_to_all")
    result: list[np.ndarray | None] = []
    for whole, p in zip(stacked, pos):
        if whole is None:  # another process's device
            result.append(None)
            continue
        mine = _block(whole, split_axis + 1, ways, int(p), True)  # (members, ...chunk...)
        moved = np.moveaxis(mine, 0, concat_axis)
        shape = list(mine.shape[1:])
        shape[concat_axis] *= ways
        result.append(moved.reshape(shape))
    return [S.Dist(out, tuple(result))]


def _all_to_all_transpose(ct: Any, x: Any, *, axis_name: Any, split_axis: int,
                          concat_axis: int, axis_index_groups: Any, tiled: bool) -> Any:
    """A permutation of blocks: its transpose sends them back, the two
    dimensions' roles swapped. (JAX 0.12 re-enters its ``all_to_all``
    wrapper here, which fails for untiled calls; binding the primitive is
    the transpose for both.)"""
    return all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                             concat_axis=split_axis, axis_index_groups=axis_index_groups,
                             tiled=tiled)


def _split_dim(x: Any, dim: int, factor: int) -> Any:
    from spec import lax
    shape = list(canonical_aval_of(x).shape)
    shape[dim:dim + 1] = [factor, shape[dim] // factor]
    return lax.reshape(x, tuple(shape))


def _merge_dims(x: Any, dim: int) -> Any:
    from spec import lax
    shape = list(canonical_aval_of(x).shape)
    shape[dim:dim + 2] = [shape[dim] * shape[dim + 1]]
    return lax.reshape(x, tuple(shape))


def _transpose_to(x: Any, src: int, dst: int) -> Any:
    from spec import lax
    perm = [i for i in range(canonical_aval_of(x).ndim) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, tuple(perm))


def _all_to_all_batch(axis: AxisData, args: list[Any], dims: list[Any], *, axis_name: Any,
                      split_axis: int, concat_axis: int, axis_index_groups: Any, tiled: bool
                      ) -> tuple[list[Any], list[Any]]:
    """Over another axis: the batch dimension rides along. Over the vmapped
    axis (alone): the members are the batch, so the exchange is a local
    reshuffle of the batch dimension with split_axis and concat_axis."""
    from spec import lax
    (x,), (d,) = args, dims
    params = {"axis_name": axis_name, "axis_index_groups": axis_index_groups, "tiled": tiled}
    names = names_of(axis_name)
    if axis.name is None or axis.name not in names:
        if d is None:
            return [all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                                      **params)], [None]
        return [all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                                  concat_axis=concat_axis + (d <= concat_axis),
                                  **params)], [d]
    if axis_index_groups is not None or len(names) > 1:
        raise NotImplementedError("all_to_all over a vmapped axis together with other axes "
                                  "(or with axis_index_groups) is not implemented")
    n = axis.size
    if d is None:
        x, d = lax.broadcast(x, (n,)), 0
    if split_axis == concat_axis:
        # Member k's j-th block of the axis is member j's k-th chunk: split
        # the axis into (chunk, rest) and swap the chunk index with the batch.
        dim = split_axis + (d <= split_axis)
        y = _split_dim(x, dim, n)
        bd = d + (dim < d)
        perm = list(range(len(_shape(y))))
        perm[bd], perm[dim] = dim, bd
        return [_merge_dims(lax.transpose(y, tuple(perm)), dim)], [d]
    # Otherwise the members' operands, concatenated along concat_axis, are
    # every member's result stacked along split_axis: the chunk index of
    # split_axis becomes the batch.
    y = _merge_dims(_transpose_to(x, d, concat_axis), concat_axis)
    return [_split_dim(y, split_axis, n)], [split_axis]


def _shape(x: Any) -> tuple[int, ...]:
    return canonical_aval_of(x).shape


all_to_all_p: Primitive = declare(
    "all_to_all", typing=_all_to_all_type, impl=_program_error("all_to_all"),
    jvp=linear_jvp(), transpose=linear_transpose(_all_to_all_transpose),
    batch=_all_to_all_batch,
    sharding=_same_sharding,
    doc="Split one dimension among the members, concatenate their chunks along another.",
    **_manual("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["split_axis"], p["concat_axis"]),
        lambda p: (p["split_axis"], p["concat_axis"]), _all_to_all_program))


# ================================================================== casts


def _preduced_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "preduced"
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C1",
            f"invariant -> reduced: {x.str_short()} varies along {_shown(bad)}", ValueError)
    bad = x.mreduced & frozenset(axes)
    require(not bad, prim, "C2",
            f"{x.str_short()} is already reduced along {_shown(bad)}", ValueError)
    return [x.update(mreduced=x.mreduced | frozenset(axes))]


def _vary_unreduced_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "vary_unreduced_cast"
    _require_settled(prim, "C1", x, axes)
    missing = frozenset(axes) - x.vma
    require(not missing, prim, "C2",
            f"varying -> unreduced: {x.str_short()} does not vary along {_shown(missing)}",
            ValueError)
    return [x.update(vma=x.vma - frozenset(axes), munreduced=x.munreduced | frozenset(axes))]


def _reduced_vary_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "reduced_vary_cast"
    missing = frozenset(axes) - x.mreduced
    require(not missing, prim, "C1",
            f"reduced -> varying: {x.str_short()} is not reduced along {_shown(missing)}",
            ValueError)
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C2", f"{x.str_short()} already varies along {_shown(bad)}",
            ValueError)
    return [x.update(vma=x.vma | frozenset(axes), mreduced=x.mreduced - frozenset(axes))]


def _unreduced_psum_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "unreduced_psum"
    require(not any(isinstance(a, (int, np.integer)) for a in axes), prim, "C1",
            f"axes must be mesh axis names, got {axes}", ValueError)
    missing = frozenset(axes) - x.munreduced
    require(not missing, prim, "C2",
            f"unreduced -> invariant: {x.str_short()} is not unreduced along "
            f"{_shown(missing)}", ValueError)
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C3", f"{x.str_short()} varies along {_shown(bad)}", ValueError)
    return [x.update(munreduced=x.munreduced - frozenset(axes))]


def _unreduced_psum_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                            *, axes: tuple[Any, ...]) -> list[S.Dist]:
    """The pending sum, paid: one all_reduce over the axes."""
    (x,), (out,) = args, out_avals
    ordered = tuple(a for a in geo.names if a in axes)
    return [S.Dist(out, S.all_reduce(x.bufs, ordered, "sum", geo))]


def _cast(name: str, typing: Any, transpose: Callable[..., Any], doc: str,
          program: Any = _identity_program) -> Primitive:
    return declare(name, typing=typing, impl=_program_error(name), jvp=linear_jvp(),
                   transpose=linear_transpose(transpose), batch=_not_batchable(name),
                   sharding=_same_sharding, vma_rule=VMA_FROM_TYPING, per_device=program,
                   doc=doc)


preduced_p: Primitive = _cast(
    "preduced", _preduced_type,
    lambda ct, x, *, axes: unreduced_psum_p.bind(ct, axes=axes),
    "Invariant to reduced along manual axes: free (types only).")
unreduced_psum_p: Primitive = _cast(
    "unreduced_psum", _unreduced_psum_type,
    lambda ct, x, *, axes: preduced_p.bind(ct, axes=axes),
    "Unreduced to invariant: the all-reduce a pending sum waits for.",
    _unreduced_psum_program)
vary_unreduced_cast_p: Primitive = _cast(
    "vary_unreduced_cast", _vary_unreduced_type,
    lambda ct, x, *, axes: reduced_vary_cast_p.bind(ct, axes=axes),
    "Varying to unreduced: free (the devices' values are declared partial sums).")
reduced_vary_cast_p: Primitive = _cast(
    "reduced_vary_cast", _reduced_vary_type,
    lambda ct, x, *, axes: vary_unreduced_cast_p.bind(ct, axes=axes),
    "Reduced to varying: free (types only).")


# ============================================ unreduced reduce-scatter pair


def _unreduced_rs_type(x: ArrayType, *, axis_name: tuple[Any, ...], scatter_dimension: int,
                       axis_size: int, tiled: bool) -> list[ArrayType]:
    prim = "unreduced_reduce_scatter"
    missing = frozenset(axis_name) - x.munreduced
    require(not missing, prim, "C1",
            f"unreduced -> varying: {x.str_short()} is not unreduced along "
            f"{_shown(missing)}", ValueError)
    bad = x.vma & frozenset(axis_name)
    require(not bad, prim, "C2", f"{x.str_short()} varies along {_shown(bad)}", ValueError)
    _require_dim(prim, "C3", "scatter_dimension", scatter_dimension, x.ndim)
    shape = _scattered_shape(prim, "C4", x, scatter_dimension, axis_size, tiled)
    return [x.update(shape=shape, vma=x.vma | frozenset(axis_name),
                     munreduced=x.munreduced - frozenset(axis_name))]


def _unreduced_rs_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                          *, axis_name: tuple[Any, ...], scatter_dimension: int,
                          axis_size: int, tiled: bool) -> list[S.Dist]:
    return _reduce_scatter_program(geo, args, out_avals, axis_name=axis_name,
                                   scatter_dimension=scatter_dimension,
                                   axis_index_groups=None, axis_size=axis_size, tiled=tiled)


def _ag_reduced_type(x: ArrayType, *, all_gather_dimension: int, axis_name: tuple[Any, ...],
                     axis_size: int, tiled: bool) -> list[ArrayType]:
    prim = "all_gather_reduced"
    missing = frozenset(axis_name) - x.vma
    require(not missing, prim, "C1",
            f"varying -> reduced: {x.str_short()} does not vary along {_shown(missing)}",
            ValueError)
    bad = x.mreduced & frozenset(axis_name)
    require(not bad, prim, "C2", f"{x.str_short()} is already reduced along {_shown(bad)}",
            ValueError)
    limit = x.ndim if tiled else x.ndim + 1
    _require_dim(prim, "C3", "all_gather_dimension", all_gather_dimension, limit)
    return [x.update(shape=_gathered_shape(x, all_gather_dimension, axis_size, tiled),
                     vma=x.vma - frozenset(axis_name),
                     mreduced=x.mreduced | frozenset(axis_name))]


def _ag_reduced_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                        all_gather_dimension: int, axis_name: tuple[Any, ...],
                        axis_size: int, tiled: bool) -> list[S.Dist]:
    (x,), (out,) = args, out_avals
    axes = _on_mesh(axis_name, geo)
    bufs = x.bufs if tiled else S.each(lambda b: np.expand_dims(b, all_gather_dimension), x.bufs)
    return [S.Dist(out, S.all_gather(bufs, axes, all_gather_dimension, geo))]


unreduced_reduce_scatter_p: Primitive = declare(
    "unreduced_reduce_scatter", typing=_unreduced_rs_type,
    impl=_program_error("unreduced_reduce_scatter"), jvp=linear_jvp(),
    transpose=linear_transpose(lambda ct, x, *, axis_name, scatter_dimension, axis_size,
                               tiled: all_gather_reduced_p.bind(
                                   ct, all_gather_dimension=scatter_dimension,
                                   axis_name=axis_name, axis_size=axis_size, tiled=tiled)),
    batch=_not_batchable("unreduced_reduce_scatter"),
    sharding=lambda x, *, scatter_dimension, tiled, **p: _sharding_scattered(
        x, dim=scatter_dimension, tiled=tiled),
    doc="Unreduced to varying: the pending sum, each member keeping its block.",
    **_manual("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["scatter_dimension"],),
        lambda p: (p["scatter_dimension"],) if p["tiled"] else (), _unreduced_rs_program))

all_gather_reduced_p: Primitive = declare(
    "all_gather_reduced", typing=_ag_reduced_type, impl=_program_error("all_gather_reduced"),
    jvp=linear_jvp(),
    transpose=linear_transpose(lambda ct, x, *, all_gather_dimension, axis_name, axis_size,
                               tiled: unreduced_reduce_scatter_p.bind(
                                   ct, axis_name=axis_name,
                                   scatter_dimension=all_gather_dimension,
                                   axis_size=axis_size, tiled=tiled)),
    batch=_not_batchable("all_gather_reduced"),
    sharding=lambda x, *, all_gather_dimension, tiled, **p: _sharding_gathered(
        x, dim=all_gather_dimension, tiled=tiled),
    doc="Varying to reduced: every member's block, gathered.",
    **_manual("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["all_gather_dimension"],) if p["tiled"] else (),
        lambda p: (p["all_gather_dimension"],), _ag_reduced_program))


# ======================================================= all_gather's transpose


def all_gather_transpose(ct: Any, x: Any, *, all_gather_dimension: int,
                         axis_name: tuple[Any, ...], axis_index_groups: Any, axis_size: int,
                         tiled: bool) -> Any:
    """The cotangent of a member's block is the sum, over members, of their
    cotangents' blocks at its position: a reduce_scatter (what JAX's
    ``psum_scatter`` stages)."""
    from spec._src.lax.collectives_api import psum_scatter
    return psum_scatter(ct, axis_name, scatter_dimension=all_gather_dimension,
                        axis_index_groups=axis_index_groups, tiled=tiled)


__all__ = ["all_gather_reduced_p", "all_gather_transpose", "all_to_all_p", "group_size",
           "mesh_ordered", "names_of", "preduced_p", "reduce_scatter_p", "reduced_vary_cast_p",
           "tracked", "unreduced_psum_p", "unreduced_reduce_scatter_p", "vary_unreduced_cast_p"]
