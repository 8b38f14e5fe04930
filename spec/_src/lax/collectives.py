"""Collectives over named axes: ``psum``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``.

A named axis is bound by ``vmap(..., axis_name=...)`` (and by ``make_jaxpr``'s
``axis_env``; shard_map binds mesh axes in issue 6). Under vmap the batch
trace hands a collective naming its axis to the primitive's batching rule,
which replaces the named axis by the positional batch axis: ``psum`` over a
vmapped axis is a sum over the batch axis (``psum`` with an integer axis),
``axis_index`` is an ``iota``. Integer entries of ``axes`` are positional
axes of the operand, reduced like ``reduce_sum``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.interpreters.ad_util import Zero, linear_jvp, linear_transpose
from spec._src.interpreters.batching import AxisData, moveaxis
from spec._src.core.interpreter import canonical_aval_of, not_applicable
from spec._src.core.denormals import arithmetic
from spec._src.core.registry import declare, require
from spec._src.core.sharding import extend_axis_env
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.core.array import host_value
from spec._src.core.interpreter import Tracer
from spec._src.core.sharding import NamedSharding, _context, get_abstract_mesh
from spec._src.interpreters.batching import broadcast

# ------------------------------------------------------------- axis env


def axis_size(name: Any) -> int:
    """The size of a bound named axis; NameError (as JAX) when unbound."""
    for bound, size in reversed(_context.axis_frames):
        if bound == name:
            return int(size)
    raise NameError(f"unbound axis name: {name}")


def check_bound(names: Sequence[Any], api: str) -> None:
    """Every named axis among ``names`` is bound; JAX's advice (for the
    collective ``api``) otherwise."""
    bound = {n for n, _ in _context.axis_frames}
    for n in names:
        if not isinstance(n, (int, np.integer)) and n not in bound:
            raise NameError(f"Found an unbound axis name: {n}. To fix this, please call "
                            f"{api} under `jax.shard_map`.")


def _named(axes: Sequence[Any]) -> list[Any]:
    return [a for a in axes if not isinstance(a, (int, np.integer))]


def _positional(axes: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))


# ------------------------------------------------------ psum / pmax / pmin


def _reduce_type(name: str) -> Callable[..., list[ArrayType]]:
    def typing(x: ArrayType, *, axes: tuple[Any, ...], axis_index_groups: Any) -> list[
            ArrayType]:
        require(axis_index_groups is None, name, "C1",
                "axis_index_groups is not supported", NotImplementedError)
        pos = _positional(axes)
        require(all(0 <= a < x.ndim for a in pos), name, "C2",
                f"positional axes {pos} out of range for an operand of rank {x.ndim}",
                ValueError)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in pos)
        return [x.update(shape=shape)]
    return typing


def _reduce_impl(name: str, np_fn: Callable[..., np.ndarray]) -> Callable[..., list[Any]]:
    def impl(x: np.ndarray, *, axes: tuple[Any, ...], axis_index_groups: Any) -> list[Any]:
        named = _named(axes)
        if named:
            # Outside vmap/shard_map a named axis has no members to reduce over.
            axis_size(named[0])
            raise NameError(f"{name} over the named axis {named[0]!r} can only be evaluated "
                            "inside vmap or shard_map")
        pos = _positional(axes)
        out = arithmetic(lambda v: np_fn(v, axis=pos), x) if pos else x.copy()
        return [np.asarray(out, dtype=x.dtype)]
    return impl


def _reduce_batch(prim_name: str) -> Callable[..., tuple[list[Any], list[Any]]]:
    """Over the vmapped axis: reduce the batch axis (an unmapped operand is
    the same for every member: psum multiplies by the axis size, pmax/pmin
    keep it). Over other axes: elementwise along the batch."""
    def rule(axis: AxisData, args: list[Any], dims: list[Any], *, axes: tuple[Any, ...],
             axis_index_groups: Any) -> tuple[list[Any], list[Any]]:
        (x,), (d,) = args, dims
        prim = _PRIMS[prim_name]
        if axis.name is None or axis.name not in axes:
            shifted = tuple(a + 1 if isinstance(a, (int, np.integer)) and d is not None
                            and a >= d else a for a in axes)
            return [prim.bind(x, axes=shifted, axis_index_groups=axis_index_groups)], [d]
        rest = tuple(a for a in axes if a != axis.name)
        if d is None:
            if prim_name == "psum":
                x = _times(x, axis.size)
            out = prim.bind(x, axes=rest, axis_index_groups=None) if rest else x
            return [out], [None]
        shifted = tuple(a + 1 if isinstance(a, (int, np.integer)) and a >= d else a
                        for a in rest)
        return [prim.bind(x, axes=(d, *shifted), axis_index_groups=axis_index_groups)], [None]
    return rule


def _psum_transpose(ct: Any, x: Any, *, axes: tuple[Any, ...], axis_index_groups: Any
                    ) -> list[Any]:
    """Positional axes transpose to a broadcast back (as reduce_sum); named
    axes to a psum of the cotangent."""
    from spec import lax
    if type(ct) is Zero:
        return [Zero(x.aval.ct_type())]
    pos = _positional(axes)
    named = tuple(_named(axes))
    out = psum_p.bind(ct, axes=named, axis_index_groups=None) if named else ct
    if pos:
        shape = x.aval.shape
        kept = tuple(i for i in range(len(shape)) if i not in pos)
        out = lax.broadcast_in_dim(out, shape, kept)
    return [out]


def _times(x: Any, n: int) -> Any:
    """``x * n``; for a constant operand computed now (JAX multiplies the
    Python value, so a literal stays a literal)."""
    from spec import lax
    aval = canonical_aval_of(x)
    if isinstance(x, Tracer):
        return lax.mul(x, np.asarray(n, aval.dtype))
    value = np.asarray(np.asarray(x) * n, aval.dtype)
    return host_value(value, aval, "psum")


# ------------------------------------------------------------------ sharding
#
# Named axes are vmap's or shard_map's manual axes, never explicit ones: the
# result keeps the operand's split over explicit mesh axes (partially manual
# maps), minus the dimensions the collective removes or gathers whole.


def _drop_entries(s: Any, ndim: int, gone: set[int], insert: int | None = None) -> Any:
    if s is None:
        return None
    parts = [p for i, p in enumerate(s.spec._normalized_spec_for_aval(ndim).partitions)
             if i not in gone]
    if insert is not None:
        parts.insert(insert, None)
    return NamedSharding(s.mesh, s.spec.update(partitions=parts))


def _reduce_sharding(x: ArrayType, *, axes: tuple[Any, ...], axis_index_groups: Any
                     ) -> list[Any]:
    return [_drop_entries(x.sharding, x.ndim, set(_positional(axes)))]


def _all_gather_sharding(x: ArrayType, *, all_gather_dimension: int, tiled: bool,
                         **params: Any) -> list[Any]:
    if tiled:
        return [_drop_entries(x.sharding, x.ndim, set(), None) if x.sharding is None else
                _drop_entries(x.sharding, x.ndim, {all_gather_dimension},
                              all_gather_dimension)]
    return [_drop_entries(x.sharding, x.ndim, set(), all_gather_dimension)]


# ------------------------------------------------------- per-device programs


def _named_reduce(prim: Primitive, op: str) -> PD.Program:
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


def _reduced_vma(x: ArrayType, *, axes: tuple[Any, ...], axis_index_groups: Any
                 ) -> list[frozenset[Any]]:
    """Reduced over manual axes, a value no longer varies along them."""
    return [x.vma - frozenset(_named(axes))]


def _collective_axes(params: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(params["axes"])


psum_p = declare(
    "psum", typing=_reduce_type("psum"), impl=_reduce_impl("psum", np.sum),
    jvp=linear_jvp(), transpose=_psum_transpose, batch=_reduce_batch("psum"),
    doc="All-reduce sum over named axes (and positional axes).",
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "sum")))
pmax_p = declare(
    "pmax", typing=_reduce_type("pmax"), impl=_reduce_impl("pmax", np.max),
    jvp=not_applicable("JAX defines no derivative for pmax"),
    transpose=not_applicable("pmax is not linear"), batch=_reduce_batch("pmax"),
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "max")))
pmin_p = declare(
    "pmin", typing=_reduce_type("pmin"), impl=_reduce_impl("pmin", np.min),
    jvp=not_applicable("JAX defines no derivative for pmin"),
    transpose=not_applicable("pmin is not linear"), batch=_reduce_batch("pmin"),
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "min")))
_PRIMS = {"psum": psum_p, "pmax": pmax_p, "pmin": pmin_p}


# ---------------------------------------------------------------- all_gather


def _all_gather_type(x: ArrayType, *, all_gather_dimension: int, axis_name: tuple[Any, ...],
                     axis_index_groups: Any, axis_size: int, tiled: bool) -> list[ArrayType]:
    require(0 <= all_gather_dimension <= x.ndim, "all_gather", "C1",
            f"all_gather_dimension {all_gather_dimension} out of range for rank {x.ndim}",
            ValueError)
    shape = list(x.shape)
    if tiled:
        require(x.ndim > 0, "all_gather", "C2", "tiled all_gather needs a rank >= 1 operand",
                ValueError)
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return [x.update(shape=tuple(shape))]


def _all_gather_impl(x: np.ndarray, **params: Any) -> list[Any]:
    axis_size(params["axis_name"][0])
    raise NameError("all_gather can only be evaluated inside vmap or shard_map")


def _all_gather_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      all_gather_dimension: int, axis_name: tuple[Any, ...],
                      axis_index_groups: Any, axis_size: int, tiled: bool
                      ) -> tuple[list[Any], list[Any]]:
    """Gathering over the vmapped axis: every member sees the whole batch,
    the batch axis moved to the gathered position (merged into it if tiled)."""
    from spec import lax
    (x,), (d,) = args, dims
    if axis.name not in axis_name:
        # Gathering over other axes: the batch dimension rides along.
        if d is None:
            return [all_gather_p.bind(
                x, all_gather_dimension=all_gather_dimension, axis_name=axis_name,
                axis_index_groups=axis_index_groups, axis_size=axis_size,
                tiled=tiled)], [None]
        x = moveaxis(x, d, 0)
        return [all_gather_p.bind(
            x, all_gather_dimension=all_gather_dimension + 1, axis_name=axis_name,
            axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)], [0]
    if d is None:
        x, d = broadcast(x, axis.size, 0), 0
    out = moveaxis(x, d, all_gather_dimension)
    if tiled:
        shape = list(canonical_aval_of(out).shape)
        merged = shape[:all_gather_dimension] + [
            shape[all_gather_dimension] * shape[all_gather_dimension + 1]] + \
            shape[all_gather_dimension + 2:]
        out = lax.reshape(out, tuple(merged))
    return [out], [None]


def _all_gather_transpose(ct: Any, x: Any, **params: Any) -> Any:
    """A reduce_scatter of the cotangent (spec/_src/lax/manual_collectives.py)."""
    from spec._src.lax.manual_collectives import all_gather_transpose
    return all_gather_transpose(ct, x, **params)


all_gather_p = declare(
    "all_gather", typing=_all_gather_type, impl=_all_gather_impl,
    jvp=linear_jvp(), transpose=linear_transpose(_all_gather_transpose),
    batch=_all_gather_batch,
    sharding=_all_gather_sharding, per_device=_all_gather_program,
    axis_collective=lambda params: tuple(params["axis_name"]))


# ---------------------------------------------------------------- axis_index


def _axis_index_type(*, axis_name: Any) -> list[ArrayType]:
    return [ArrayType((), T.int32, False)]


def _axis_index_impl(*, axis_name: Any) -> list[Any]:
    axis_size(axis_name)
    raise NameError("axis_index can only be evaluated inside vmap or shard_map")


def _axis_index_vma(*, axis_name: Any) -> list[frozenset[Any]]:
    """Inside shard_map (check_vma) the index varies along its axis."""
    from spec._src.lax.shard_map import vma_checked
    if vma_checked() and axis_name in get_abstract_mesh().manual_axes:
        return [frozenset({axis_name})]
    return [frozenset()]


def _axis_index_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      axis_name: Any) -> tuple[list[Any], list[Any]]:
    from spec import lax
    return [lax.iota(T.int32, axis.size)], [0]


axis_index_p = declare(
    "axis_index", typing=_axis_index_type, impl=_axis_index_impl,
    jvp=not_applicable("integer-valued, no inputs"),
    transpose=not_applicable("no inputs"), batch=_axis_index_batch,
    sharding=lambda **params: [None], per_device=_axis_index_program,
    axis_collective=lambda params: (params["axis_name"],), vma_rule=_axis_index_vma)


__all__ = ["all_gather_p", "axis_index_p", "axis_size", "extend_axis_env", "pmax_p",
           "pmin_p", "psum_p"]
