"""Lowering rules for shard_map, the collectives inside it, and sharding
annotations, in JAX 0.12's forms: ``sdy.manual_computation`` for the
per-device body, ``stablehlo.all_reduce``/``all_gather``/``reduce_scatter``/
``all_to_all``/``collective_permute`` over the body's mesh axes
(``#stablehlo.replica_group_mesh_axes``), the ``ragged_all_to_all`` custom
call, ``stablehlo.partition_id``
arithmetic for ``axis_index``, and ``sdy.sharding_constraint``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.types import ArrayType
from spec._src.lowering import rules as LR
from spec._src.lowering.emitter import (
    LoweringContext,
    LoweringRule,
    lower_body,
    tensor_type,
)
from spec._src.lowering.sharding import explicit_sharding, tensor_sharding

_CHANNEL = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"


def _body_mesh(ctx: LoweringContext, prim: str) -> tuple[Any, str]:
    """The mesh of the enclosing shard_map body and its symbol."""
    if not ctx.module.manual:
        raise NotImplementedError(f"lowering {prim} outside a shard_map body is not specified")
    mesh = ctx.module.manual[-1]
    return mesh, ctx.module.symbol(mesh, "manual")


def _axes(mesh: Any, names: Any) -> list[str]:
    """Named axes in the mesh's order (positional axes have no lowering)."""
    named = names if isinstance(names, (tuple, list, frozenset, set)) else (names,)
    unknown = [n for n in named if n not in mesh.axis_names]
    if unknown:
        raise NotImplementedError(f"lowering a collective over axes {unknown} that are not "
                                  "axes of the shard_map mesh is not specified")
    return [n for n in mesh.axis_names if n in named]


def _groups(ctx: LoweringContext, prim: str, names: Any, axis_index_groups: Any = None
            ) -> tuple[Any, list[str], str]:
    if axis_index_groups is not None:
        raise NotImplementedError(f"lowering {prim} with axis_index_groups is not specified")
    mesh, symbol = _body_mesh(ctx, prim)
    axes = _axes(mesh, names)
    refs = ", ".join(f'#stablehlo.axis_ref<name = "{n}">' for n in axes)
    return mesh, axes, (f"replica_groups = #stablehlo.replica_group_mesh_axes<mesh = {symbol}, "
                        f"axes = [{refs}]>")


def _reducing_op(ctx: LoweringContext, opname: str, operand: str, aval: ArrayType,
                 out_aval: ArrayType, reducer: str, attrs: str) -> str:
    """``"stablehlo.<opname>"(x) <{attrs}> ({reduction region}) : (T) -> R``."""
    name = ctx.fresh()
    a, b, s = ctx.fresh(), ctx.fresh(), ctx.fresh()
    scalar = tensor_type(ArrayType((), aval.dtype))
    ctx.lines += [
        f'    {name} = "stablehlo.{opname}"({operand}) <{{{attrs}}}> ({{',
        f"    ^bb0({a}: {scalar}, {b}: {scalar}):",
        f"      {s} = stablehlo.{reducer} {a}, {b} : {scalar}",
        f"      stablehlo.return {s} : {scalar}",
        f"    }}) : ({tensor_type(aval)}) -> {tensor_type(out_aval)}"]
    return name


_REDUCERS = {"psum": "add", "pmax": "maximum", "pmin": "minimum"}
_POSITIONAL = {"psum": LR.reduce_sum, "pmax": LR.reduce_max, "pmin": LR.reduce_min}


def all_reduce(prim: str) -> LoweringRule:
    """psum/pmax/pmin (and psum_invariant, a psum): positional axes (what
    vmap makes of its named axis) reduced first with the reduction's own
    rule, as JAX lowers them; then one ``all_reduce`` per operand over the
    named axes, combining with add/maximum/minimum."""
    kind = "psum" if prim == "psum_invariant" else prim
    reducer = _REDUCERS[kind]

    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], *, axes: Any, axis_index_groups: Any = None,
             **params: Any) -> list[str]:
        every = axes if isinstance(axes, (tuple, list)) else (axes,)
        positional = tuple(a for a in every if isinstance(a, int))
        named = tuple(a for a in every if not isinstance(a, int))
        if positional:
            reduced = []
            for o, a in zip(operands, in_avals):
                shape = [d for k, d in enumerate(a.shape) if k not in positional]
                out = ArrayType(tuple(shape), a.dtype)
                reduced.append((_POSITIONAL[kind](ctx, [o], [a], [out], axes=positional)[0],
                                out))
            operands, in_avals = [o for o, _ in reduced], [a for _, a in reduced]
            if not named:
                return list(operands)
        if any(np.dtype(a.dtype) == np.bool_ for a in in_avals):
            raise NotImplementedError(f"lowering {prim} of booleans is not specified")
        _, _, groups = _groups(ctx, prim, named, axis_index_groups)
        attrs = f"{_CHANNEL}, {groups}, use_global_device_ids"
        return [_reducing_op(ctx, "all_reduce", o, a, r, reducer, attrs)
                for o, a, r in zip(operands, in_avals, out_avals)]
    return rule


def axis_index(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
               out_avals: Sequence[ArrayType], *, axis_name: Any) -> list[str]:
    """The device's position along the axes: its partition id divided by
    the number of devices along the later mesh axes, modulo the axes'
    size (partition ids run over the mesh in row-major order)."""
    mesh, _ = _body_mesh(ctx, "axis_index")
    axes = _axes(mesh, axis_name)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    last = mesh.axis_names.index(axes[-1])
    later = math.prod(mesh.axis_sizes[last + 1:])
    u32 = ArrayType((), np.dtype(np.uint32))
    div = ctx.constant(np.asarray(later, np.uint32), u32)
    mod = ctx.constant(np.asarray(math.prod(sizes[a] for a in axes), np.uint32), u32)
    pid = ctx.line("stablehlo.partition_id : tensor<ui32>")
    q = ctx.op("stablehlo.divide", [pid, div], [u32, u32], u32)
    r = ctx.op("stablehlo.remainder", [q, mod], [u32, u32], u32)
    return [ctx.op("stablehlo.convert", [r], [u32], out_avals[0])]


def _insert_dim(ctx: LoweringContext, x: str, aval: ArrayType, dim: int) -> tuple[str, ArrayType]:
    shape = (*aval.shape[:dim], 1, *aval.shape[dim:])
    new = ArrayType(shape, aval.dtype)
    return ctx.op("stablehlo.reshape", [x], [aval], new), new


def all_gather(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
               out_avals: Sequence[ArrayType], *, all_gather_dimension: int, axis_name: Any,
               axis_size: int, tiled: bool, axis_index_groups: Any = None, **params: Any
               ) -> list[str]:
    """``all_gather`` along the dimension; untiled, the operand first gets
    a size-1 dimension there, which the gather fills."""
    _, _, groups = _groups(ctx, "all_gather", axis_name, axis_index_groups)
    x, aval = operands[0], in_avals[0]
    if not tiled:
        x, aval = _insert_dim(ctx, x, aval, all_gather_dimension)
    return [ctx.line(
        f'"stablehlo.all_gather"({x}) <{{all_gather_dim = {all_gather_dimension} : i64, '
        f"{_CHANNEL}, {groups}, use_global_device_ids}}> : ({tensor_type(aval)}) -> "
        f"{tensor_type(out_avals[0])}")]


def reduce_scatter(ctx: LoweringContext, operands: Sequence[str],
                   in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                   scatter_dimension: int, axis_name: Any, axis_size: int, tiled: bool,
                   axis_index_groups: Any = None, **params: Any) -> list[str]:
    """psum_scatter: ``reduce_scatter`` (add) along the dimension; untiled,
    the scattered size-1 dimension is then dropped."""
    _, _, groups = _groups(ctx, "reduce_scatter", axis_name, axis_index_groups)
    aval = in_avals[0]
    shape = list(aval.shape)
    shape[scatter_dimension] //= axis_size
    scattered = ArrayType(tuple(shape), aval.dtype)
    attrs = (f"{_CHANNEL}, {groups}, scatter_dimension = {scatter_dimension} : i64, "
             "use_global_device_ids")
    out = _reducing_op(ctx, "reduce_scatter", operands[0], aval, scattered, "add", attrs)
    if tiled:
        return [out]
    return [ctx.op("stablehlo.reshape", [out], [scattered], out_avals[0])]


def all_to_all(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
               out_avals: Sequence[ArrayType], *, split_axis: int, concat_axis: int,
               axis_name: Any, axis_index_groups: Any, tiled: bool, **params: Any
               ) -> list[str]:
    mesh, axes, groups = _groups(ctx, "all_to_all", axis_name, axis_index_groups)
    if not tiled:
        raise NotImplementedError("lowering all_to_all with tiled=False is not specified")
    count = math.prod(dict(zip(mesh.axis_names, mesh.axis_sizes))[a] for a in axes)
    return [ctx.line(
        f'"stablehlo.all_to_all"({operands[0]}) <{{{_CHANNEL}, concat_dimension = '
        f"{concat_axis} : i64, {groups}, split_count = {count} : i64, split_dimension = "
        f"{split_axis} : i64}}> : ({tensor_type(in_avals[0])}) -> "
        f"{tensor_type(out_avals[0])}")]


def ppermute(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], *, axis_name: Any, perm: Any) -> list[str]:
    """``collective_permute`` with the permutation's (source, target)
    positions along the axes made partition ids, for every position along
    the other mesh axes."""
    mesh, _ = _body_mesh(ctx, "ppermute")
    axes = _axes(mesh, axis_name)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    others = [n for n in mesh.axis_names if n not in axes]
    pairs: list[tuple[int, int]] = []
    for rest in itertools.product(*(range(sizes[n]) for n in others)):
        fixed = dict(zip(others, rest))
        for src, dst in perm:
            pairs.append((_partition(mesh, axes, fixed, src), _partition(mesh, axes, fixed, dst)))
    table = ", ".join(f"[{s}, {d}]" for s, d in pairs)
    return [ctx.line(
        f'"stablehlo.collective_permute"({operands[0]}) <{{{_CHANNEL}, source_target_pairs = '
        f"dense<[{table}]> : tensor<{len(pairs)}x2xi64>}}> : ({tensor_type(in_avals[0])}) -> "
        f"{tensor_type(out_avals[0])}")]


def ragged_all_to_all(ctx: LoweringContext, operands: Sequence[str],
                      in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                      axis_name: Any, axis_index_groups: Any) -> list[str]:
    """JAX's ``ragged_all_to_all`` custom call (API version 4): the replica
    groups are partition ids, members counted along the axes in the order
    the call names them, one group per position along the other axes (and
    per group of ``axis_index_groups``)."""
    mesh, _ = _body_mesh(ctx, "ragged_all_to_all")
    names = list(axis_name)
    _axes(mesh, names)  # every axis is an axis of the mesh
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    others = [n for n in mesh.axis_names if n not in names]
    members = (list(range(math.prod(sizes[n] for n in names))) if axis_index_groups is None
               else None)
    groups = [members] if members is not None else [list(g) for g in axis_index_groups]
    rows = [[_partition(mesh, names, dict(zip(others, rest)), int(p)) for p in group]
            for rest in itertools.product(*(range(sizes[n]) for n in others))
            for group in groups]
    if len({len(r) for r in rows}) != 1:
        raise ValueError("Replica groups must be equally sized")
    table = ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows)
    config = (f"channel_id = 1 : i64, replica_groups = dense<[{table}]> : "
              f"tensor<{len(rows)}x{len(rows[0])}xi64>")
    types = ", ".join(tensor_type(a) for a in in_avals)
    return [ctx.line(
        f"stablehlo.custom_call @ragged_all_to_all({', '.join(operands)}) "
        f"{{api_version = 4 : i32, backend_config = {{{config}}}}} : ({types}) -> "
        f"{tensor_type(out_avals[0])}")]


def _partition(mesh: Any, axes: list[str], fixed: dict[str, int], position: int) -> int:
    """The partition id of the device at ``position`` along ``axes`` (row
    major) and at ``fixed`` along the other axes."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    coords = dict(fixed)
    for name in reversed(axes):
        coords[name] = position % sizes[name]
        position //= sizes[name]
    pid = 0
    for name in mesh.axis_names:
        pid = pid * sizes[name] + coords[name]
    return pid


def identity(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    """Casts between varying and invariant types change no value: JAX
    lowers them to their operands."""
    return list(operands)


def shard_map(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], *, jaxpr: Any, mesh: Any, in_specs: Any,
              out_specs: Any, newly_manual_axes: Any, **params: Any) -> list[str]:
    """``sdy.manual_computation`` over the manual axes: global operands in,
    the body on per-device blocks (its own region), global results out."""
    name = ctx.fresh()
    args = [ctx.fresh() for _ in jaxpr.invars]
    ins = ", ".join(tensor_sharding(ctx.module, mesh, s, a.ndim)
                    for s, a in zip(in_specs, in_avals))
    outs = ", ".join(tensor_sharding(ctx.module, mesh, s, a.ndim)
                     for s, a in zip(out_specs, out_avals))
    manual = ", ".join(f'"{n}"' for n in mesh.axis_names if n in newly_manual_axes)
    block = ", ".join(f"{a}: {tensor_type(v.aval)}" for a, v in zip(args, jaxpr.invars))
    head = f"{name}:{len(out_avals)}" if len(out_avals) > 1 else name
    ctx.lines.append(f"    {head} = sdy.manual_computation({', '.join(operands)}) "
                     f"in_shardings=[{ins}] out_shardings=[{outs}] manual_axes={{{manual}}} "
                     f"({block}) {{")
    ctx.module.manual.append(mesh)
    try:
        results = lower_body(ctx, jaxpr, args)
    finally:
        ctx.module.manual.pop()
    body_types = ", ".join(tensor_type(v.aval) for v in jaxpr.outvars)
    ctx.lines.append(f"      sdy.return {', '.join(results)} : {body_types}")
    in_types = ", ".join(tensor_type(a) for a in in_avals)
    out_types = ", ".join(tensor_type(a) for a in out_avals)
    ctx.lines.append(f"    }} : ({in_types}) -> ({out_types})")
    if len(out_avals) == 1:
        return [name]
    return [f"{name}#{k}" for k in range(len(out_avals))]


def sharding_constraint(ctx: LoweringContext, operands: Sequence[str],
                        in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                        sharding: Any, unconstrained_dims: Any = frozenset(),
                        **params: Any) -> list[str]:
    """``sdy.sharding_constraint`` to the sharding (unconstrained
    dimensions open, ``{?}``)."""
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or not hasattr(sharding, "spec"):
        raise NotImplementedError(f"lowering a sharding constraint to {sharding} is not "
                                  "specified (only NamedSharding)")
    # The param keeps the sharding as the user gave it: its mesh may be
    # concrete and its spec hold UNCONSTRAINED (open, like unconstrained_dims).
    spec = sharding.spec._normalized_spec_for_aval(out_avals[0].ndim)
    text = tensor_sharding(ctx.module, mesh.abstract_mesh, spec, out_avals[0].ndim,
                           sorted(unconstrained_dims))
    return [ctx.line(f"sdy.sharding_constraint {operands[0]} {text} : "
                     f"{tensor_type(out_avals[0])}")]


def reshard(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
            out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    """A constraint to the result's sharding (which the walk over the
    program adds after every explicitly sharded result)."""
    s = explicit_sharding(out_avals[0])
    if s is None:
        raise NotImplementedError(f"lowering reshard to {out_avals[0]} is not specified")
    return [operands[0]]


def _replica_groups(mesh: Any, axes: list[str]) -> list[list[int]]:
    """Partition ids, one group per position along the mesh's other axes."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    others = [n for n in mesh.axis_names if n not in axes]
    count = math.prod(sizes[a] for a in axes)
    return [[_partition(mesh, axes, dict(zip(others, rest)), k) for k in range(count)]
            for rest in itertools.product(*(range(sizes[n]) for n in others))]


def reduce_scatter_start(ctx: LoweringContext, operands: Sequence[str],
                         in_avals: Sequence[ArrayType], out_avals: Sequence[Any], *,
                         scatter_dimension: int, axis_name: Any, tiled: bool,
                         axis_index_groups: Any = None, **params: Any) -> list[str]:
    """The ``reduce-scatter-start`` custom call: its reduction is a called
    function, its configuration a JSON frontend attribute (escaped quotes)."""
    if axis_index_groups is not None:
        raise NotImplementedError("lowering reduce_scatter_start with axis_index_groups "
                                  "is not specified")
    mesh, _ = _body_mesh(ctx, "reduce_scatter_start")
    groups = _replica_groups(mesh, _axes(mesh, axis_name))
    aval, inner = in_avals[0], out_avals[0].inner_aval
    scalar = ArrayType((), aval.dtype)

    def add(ctx: LoweringContext, args: Sequence[str]) -> list[str]:
        return [ctx.op("stablehlo.add", list(args), [scalar, scalar], scalar)]
    reducer = ctx.function(f"add_{aval.dtype.name}_reducer", [scalar, scalar], [scalar], add,
                           key="reducer", plain_result=True)
    config = (f'{{\\22scatter_dimension\\22: {scatter_dimension}, \\22replica_groups\\22: '
              f'{groups}, \\22tiled\\22: {str(tiled).lower()}, '
              '\\22use_global_device_ids\\22: true, \\22channel_id\\22: 1}')
    return [ctx.line(
        f'stablehlo.custom_call @"reduce-scatter-start"({operands[0]}) {{backend_config = "", '
        f"called_computations = [@{reducer}], mhlo.frontend_attributes = "
        f'{{async_collective_config = "{config}"}}}} : ({tensor_type(aval)}) -> '
        f"{tensor_type(inner)}")]


def reduce_scatter_done(ctx: LoweringContext, operands: Sequence[str],
                        in_avals: Sequence[Any], out_avals: Sequence[ArrayType],
                        **params: Any) -> list[str]:
    """The ``reduce-scatter-done`` custom call, from the start's value."""
    t = tensor_type(out_avals[0])
    return [ctx.line(f'stablehlo.custom_call @"reduce-scatter-done"({operands[0]}) '
                     f'{{backend_config = ""}} : ({t}) -> {t}')]
