"""Collectives over named axes (SPEC.md section 15): the named axes' sizes,
the primitives that combine the values of the members of an axis, and their
``lax`` wrappers.

A named axis is bound by ``vmap(..., axis_name=...)``, by ``make_jaxpr``'s
``axis_env`` and by shard_map, whose mesh axes are manual in its body. Under
vmap the batch trace hands a collective naming its axis to the primitive's
batching rule, which replaces the named axis by the positional batch axis:
``psum`` over a vmapped axis is a sum over the batch axis, ``axis_index`` an
``iota``. Integer entries of ``axes`` are positional axes of the operand,
reduced like ``reduce_sum``.

Inside a shard_map body a value is, along each manual axis, *varying*
(``{V:x}``: devices hold different values), *invariant* (the same value),
*unreduced* (``{U:x}``: devices hold partial sums of the true value) or
*reduced* (``{R:x}``: the same value, whose cotangent is unreduced). The
primitives, in the order of this module:

- ``psum``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``: over named
  axes, under vmap or shard_map;
- ``pvary`` (invariant -> varying, free), ``psum_invariant`` (varying ->
  invariant, an all-reduce) and ``ppermute``;
- ``reduce_scatter`` (``lax.psum_scatter``), whose transpose is
  ``all_gather``, ``all_to_all`` and ``ragged_all_to_all`` (slices of
  rows sent to the members, written into their ``output``);
- the free casts of ``lax.pcast``: ``preduced`` (invariant -> reduced),
  ``vary_unreduced_cast`` (varying -> unreduced), ``reduced_vary_cast``
  (reduced -> varying);
- the collectives that consume unreduced values: ``unreduced_psum``
  (unreduced -> invariant, the transpose of ``preduced``) and
  ``unreduced_reduce_scatter`` (unreduced -> varying), whose transpose is
  ``all_gather_reduced`` (varying -> reduced).

Each primitive's per-device program moves the buffers through the Backend
(spec/_src/interpreters/spmd.py), recording its collective in the ledger; the
casts move nothing and record nothing. The wrappers come last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import numpy as np

from spec._src.core import tree_util, types as T
from spec._src.core.array import host_value
from spec._src.core.config import no_collectives
from spec._src.core.dtypes import issubdtype
from spec._src.core.denormals import arithmetic
from spec._src.core.errors import ForbiddenCollectiveError
from spec._src.core.hitypes import HiType, aval_method
from spec._src.core.interpreter import (
    EvalTrace,
    JaxprTrace,
    Primitive,
    Tracer,
    VMA_FROM_TYPING,
    canonical_aval_of,
    current_trace,
    from_primitive,
    hooks,
    not_applicable,
)
from spec._src.core.registry import declare, require
from spec._src.core.sharding import (
    NamedSharding,
    _context,
    get_abstract_mesh,
)
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD, spmd as S
from spec._src.interpreters.ad_util import (
    Zero,
    instantiate,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
    zeros_like_aval,
)
from spec._src.interpreters.batching import (
    AxisData,
    broadcast,
    delete_spec_entry,
    insert_spec_entry,
    moveaxis,
    vectorized,
)
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.lax import elementwise as E
from spec._src.lax import shaping
from spec._src.lax import slicing
from spec._src.lax.elementwise import div, mul
from spec._src.lax.reductions import reduce_or, reduce_sum
from spec._src.lax.shaping import canonicalize_axis
from spec._src.lax.sharding_kit import mesh_ordered
from spec._src.lowering import collectives as LC


# ------------------------------------------------------------- axis env


def bound_axis_size(name: Any) -> int:
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


def forbid_collectives(names: Sequence[Any], api: str) -> None:
    """A collective (``api``, as JAX names it) across an axis that
    ``jax.sharding.no_collectives`` forbids: ForbiddenCollectiveError."""
    forbidden = no_collectives.value
    for n in names:
        if n in forbidden and not isinstance(n, (int, np.integer)):
            raise ForbiddenCollectiveError(
                f"Collective across axis '{n}' is forbidden by `no_collectives`, but "
                f"`{api}` acts on axis '{n}'.")


def _named(axes: Sequence[Any]) -> list[Any]:
    return [a for a in axes if not isinstance(a, (int, np.integer))]


def _positional(axes: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))


# ------------------------------------------------------ psum / pmax / pmin


def _reduce_type(name: str) -> Callable[..., list[ArrayType]]:
    def typing(x: ArrayType, *, axes: tuple[Any, ...], axis_index_groups: Any) -> list[
            ArrayType]:
        forbid_collectives(axes, "psum")
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
            bound_axis_size(named[0])
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
    if type(ct) is Zero:
        return [Zero(x.aval.ct_type())]
    pos = _positional(axes)
    named = tuple(_named(axes))
    out = psum_p.bind(ct, axes=named, axis_index_groups=None) if named else ct
    if pos:
        shape = x.aval.shape
        kept = tuple(i for i in range(len(shape)) if i not in pos)
        out = shaping.broadcast_in_dim(out, shape, kept)
    return [out]


def _times(x: Any, n: int) -> Any:
    """``x * n``; for a constant operand computed now (JAX multiplies the
    Python value, so a literal stays a literal)."""
    aval = canonical_aval_of(x)
    if isinstance(x, Tracer):
        return mul(x, np.asarray(n, aval.dtype))
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
    "psum", lowering=LC.all_reduce("psum"),
    typing=_reduce_type("psum"), impl=_reduce_impl("psum", np.sum),
    jvp=linear_jvp(), transpose=_psum_transpose, batch=_reduce_batch("psum"),
    doc="All-reduce sum over named axes (and positional axes).",
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "sum")))
pmax_p = declare(
    "pmax", lowering=LC.all_reduce("pmax"),
    typing=_reduce_type("pmax"), impl=_reduce_impl("pmax", np.max),
    jvp=not_applicable("JAX defines no derivative for pmax"),
    transpose=not_applicable("pmax is not linear"), batch=_reduce_batch("pmax"),
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "max")))
pmin_p = declare(
    "pmin", lowering=LC.all_reduce("pmin"),
    typing=_reduce_type("pmin"), impl=_reduce_impl("pmin", np.min),
    jvp=not_applicable("JAX defines no derivative for pmin"),
    transpose=not_applicable("pmin is not linear"), batch=_reduce_batch("pmin"),
    sharding=_reduce_sharding, axis_collective=_collective_axes, vma_rule=_reduced_vma,
    per_device=from_primitive(lambda p: _named_reduce(p, "min")))
_PRIMS = {"psum": psum_p, "pmax": pmax_p, "pmin": pmin_p}


# ---------------------------------------------------------------- all_gather


def _all_gather_type(x: ArrayType, *, all_gather_dimension: int, axis_name: tuple[Any, ...],
                     axis_index_groups: Any, axis_size: int, tiled: bool) -> list[ArrayType]:
    forbid_collectives(names_of(axis_name), "all_gather")
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
    bound_axis_size(params["axis_name"][0])
    raise NameError("all_gather can only be evaluated inside vmap or shard_map")


def _all_gather_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      all_gather_dimension: int, axis_name: tuple[Any, ...],
                      axis_index_groups: Any, axis_size: int, tiled: bool
                      ) -> tuple[list[Any], list[Any]]:
    """Gathering over the vmapped axis: every member sees the whole batch,
    the batch axis moved to the gathered position (merged into it if tiled)."""
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
        out = shaping.reshape(out, tuple(merged))
    return [out], [None]


def _all_gather_transpose(ct: Any, x: Any, **params: Any) -> Any:
    """A reduce_scatter of the cotangent (``all_gather_transpose``, with the
    manual-mode collectives below)."""
    return all_gather_transpose(ct, x, **params)


all_gather_p = declare(
    "all_gather", lowering=LC.all_gather,
    typing=_all_gather_type, impl=_all_gather_impl,
    jvp=linear_jvp(), transpose=linear_transpose(_all_gather_transpose),
    batch=_all_gather_batch,
    sharding=_all_gather_sharding, per_device=_all_gather_program,
    axis_collective=lambda params: tuple(params["axis_name"]))


# ---------------------------------------------------------------- axis_index


def _axis_index_type(*, axis_name: Any) -> list[ArrayType]:
    return [ArrayType((), T.int32, False)]


def _axis_index_impl(*, axis_name: Any) -> list[Any]:
    bound_axis_size(axis_name)
    raise NameError("axis_index can only be evaluated inside vmap or shard_map")


def _axis_index_vma(*, axis_name: Any) -> list[frozenset[Any]]:
    """Inside shard_map (check_vma) the index varies along its axis."""
    if vma_checked() and axis_name in get_abstract_mesh().manual_axes:
        return [frozenset({axis_name})]
    return [frozenset()]


def _axis_index_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      axis_name: Any) -> tuple[list[Any], list[Any]]:
    return [shaping.iota(T.int32, axis.size)], [0]


axis_index_p = declare(
    "axis_index", lowering=LC.axis_index,
    typing=_axis_index_type, impl=_axis_index_impl,
    jvp=not_applicable("integer-valued, no inputs"),
    transpose=not_applicable("no inputs"), batch=_axis_index_batch,
    sharding=lambda **params: [None], per_device=_axis_index_program,
    axis_collective=lambda params: (params["axis_name"],), vma_rule=_axis_index_vma)


# ------------------------------------------------------------ manual context


@contextmanager
def manual_context(check_vma: bool) -> Iterator[None]:
    before = _context.check_vma
    _context.update(check_vma=check_vma)
    try:
        yield
    finally:
        _context.update(check_vma=before)


def vma_checked() -> bool:
    """Whether the innermost shard_map tracks varying axes (check_vma)."""
    return _context.check_vma


def _ordered(axes: Any, mesh: Any) -> tuple[Any, ...]:
    names = list(getattr(mesh, "axis_names", ()))
    return tuple(sorted(axes, key=lambda a: names.index(a) if a in names else len(names)))


def _per_device_only(name: str) -> Any:
    def impl(*args: Any, **params: Any) -> list[np.ndarray]:
        raise NotImplementedError(f"{name} runs per device: it can only be evaluated inside "
                                  "shard_map")
    return impl


# --------------------------------------------------------------- pvary


def _identity_type(x: ArrayType, **params: Any) -> list[ArrayType]:
    return [x]


def _no_unreduced(name: str, x: ArrayType, axes: Sequence[Any]) -> None:
    """C1 of pvary and psum_invariant: not along unreduced or reduced axes."""
    bad = (x.munreduced | x.mreduced) & frozenset(axes)
    require(not bad, name, "C1",
            f"{name} over axes {tuple(axes)} cannot take an operand unreduced or reduced "
            f"along {tuple(sorted(bad, key=str))}: got {x.str_short(True)}", ValueError)


def _pvary_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    _no_unreduced("pvary", x, axes)
    return [x]


def _pvary_vma(x: ArrayType, *, axes: tuple[Any, ...]) -> list[frozenset[Any]]:
    return [x.vma | frozenset(axes)]


def _pvary_transpose(ct: Any, x: Any, *, axes: tuple[Any, ...]) -> Any:
    """Making a value vary along axes transposes to summing the cotangent's
    per-device variants back to one invariant value."""
    return psum_invariant_p.bind(ct, axes=axes)


def vary(x: Any, axes: Sequence[Any]) -> Any:
    """``x`` made to vary along ``axes``: a reduced value by the free cast
    reduced -> varying, an invariant one by ``pvary`` (JAX's
    auto_insert_reshard)."""
    aval = canonical_aval_of(x)
    if aval.mreduced and aval.mreduced == frozenset(axes):
        return reduced_vary_cast_p.bind(x, axes=_ordered(axes, get_abstract_mesh()))
    return bind_pvary(x, axes)


def bind_pvary(x: Any, axes: Sequence[Any]) -> Any:
    if not axes:
        return x
    return pvary_p.bind(x, axes=_ordered(axes, get_abstract_mesh()))


def _pvary_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                   **params: Any) -> list[S.Dist]:
    """Each device's buffer as it is, typed as varying."""
    return [S.Dist(out_avals[0], args[0].bufs)]


setattr(_pvary_program, PD.LAYOUT_ATTR, "alias")  # generated code copies the names


pvary_p = declare(
    "pvary", lowering=LC.identity,
    typing=_pvary_type, impl=lambda x, **p: [x], jvp=linear_jvp(),
    transpose=linear_transpose(_pvary_transpose), batch=vectorized(),
    sharding=lambda x, **p: [x.sharding],
    doc="Invariant to varying along manual axes: a free cast (types only).",
    vma_rule=_pvary_vma, per_device=_pvary_program)
hooks.vary = vary  # the core's traces cast operands up with it (Primitive.bind)


# ------------------------------------------------------------ psum_invariant


def _psum_invariant_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    forbid_collectives(axes, "psum")
    _no_unreduced("psum_invariant", x, axes)
    missing = [a for a in axes if a not in x.vma]
    require(not missing, "psum_invariant", "C1",
            f"psum_invariant over axes {tuple(axes)} needs an operand varying along them; "
            f"{x.str_short(True)} is invariant along {tuple(missing)}", ValueError)
    return [x]


def _psum_invariant_vma(x: ArrayType, *, axes: tuple[Any, ...]) -> list[frozenset[Any]]:
    return [x.vma - frozenset(axes)]


def _psum_invariant_transpose(ct: Any, x: Any, *, axes: tuple[Any, ...]) -> Any:
    return pvary_p.bind(ct, axes=axes)


def _all_reduce_program(op: str, axes_of: Any) -> S.Program:
    def program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                **params: Any) -> list[S.Dist]:
        (x,), (out,) = args, out_avals
        axes = _mesh_axes(axes_of(params), geo)
        if not axes:
            return [S.Dist(out, x.bufs)]
        return [S.Dist(out, S.all_reduce(x.bufs, axes, op, geo))]
    return program


def _mesh_axes(names: Sequence[Any], geo: S.Geometry) -> tuple[Any, ...]:
    return tuple(a for a in geo.names if a in names)


psum_invariant_p = declare(
    "psum_invariant", lowering=LC.all_reduce("psum_invariant"),
    typing=_psum_invariant_type, impl=_per_device_only("psum_invariant"),
    jvp=linear_jvp(), transpose=linear_transpose(_psum_invariant_transpose),
    batch=vectorized(), sharding=lambda x, **p: [x.sharding],
    doc="All-reduce sum over manual axes: varying to invariant.",
    vma_rule=_psum_invariant_vma,
    per_device=_all_reduce_program("sum", lambda params: params["axes"]))


# ------------------------------------------------------------------ ppermute


def _ppermute_type(x: ArrayType, *, axis_name: tuple[Any, ...], perm: Any
                   ) -> list[ArrayType]:
    forbid_collectives(names_of(axis_name), "ppermute")
    sources = [s for s, _ in perm]
    dests = [d for _, d in perm]
    require(len(set(sources)) == len(sources) and len(set(dests)) == len(dests), "ppermute",
            "C1", f"ppermute sources and destinations must be unique, got {perm}", ValueError)
    return [x]


def _ppermute_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                      axis_name: tuple[Any, ...], perm: Any) -> list[S.Dist]:
    """Along the axes, position s sends its block to position d; positions
    no pair sends to receive zeros."""
    (x,), (out,) = args, out_avals
    axes = _mesh_axes(axis_name, geo)
    pairs = [(int(s), int(d)) for s, d in perm]
    return [S.Dist(out, S.ppermute(x.bufs, axes, pairs, geo))]


def _ppermute_transpose(ct: Any, x: Any, *, axis_name: tuple[Any, ...], perm: Any) -> Any:
    inverse = tuple((d, s) for s, d in perm)
    return ppermute_p.bind(ct, axis_name=axis_name, perm=inverse)


ppermute_p = declare(
    "ppermute", lowering=LC.ppermute,
    typing=_ppermute_type, impl=_per_device_only("ppermute"), jvp=linear_jvp(),
    transpose=linear_transpose(_ppermute_transpose), batch=vectorized(),
    sharding=lambda x, **p: [x.sharding],
    doc="Send each block to another position along manual axes.",
    per_device=_ppermute_program)


# ---------------------------------------------------------------- pbroadcast


def _no_evaluation(name: str) -> Any:
    """Outside shard_map and vmap a collective has no value (JAX's error)."""
    def impl(*args: Any, **params: Any) -> list[np.ndarray]:
        raise NotImplementedError(f"Evaluation rule for '{name}' not implemented")
    return impl


def _pbroadcast_type(x: ArrayType, *, axis_name: Any, source: int) -> list[ArrayType]:
    forbid_collectives(names_of(axis_name), "pbroadcast")
    require(isinstance(source, (int, np.integer)) and source >= 0, "pbroadcast", "C1",
            f"pbroadcast source must be a non-negative int, got {source!r}", ValueError)
    return [x]


def _pbroadcast_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                        axis_name: Any, source: int) -> list[S.Dist]:
    """Every member of a group along the axes receives the block of member
    ``source`` (a one-to-all permutation)."""
    (x,), (out,) = args, out_avals
    axes = tuple(a for a in _names(axis_name) if a in geo.names)
    size = geo.size_of(axes)
    require(source < size, "pbroadcast", "C2",
            f"pbroadcast source {source} is out of range for axes {axes} of size {size}",
            ValueError)
    pairs = [(int(source), d) for d in range(size)]
    return [S.Dist(out, S.ppermute(x.bufs, axes, pairs, geo))]


def _pbroadcast_transpose(ct: Any, x: Any, *, axis_name: Any, source: int) -> Any:
    """JAX's rule: the sum of the cotangents at the source, zero elsewhere."""
    index = axis_index(axis_name)
    aval = canonical_aval_of(ct)
    is_source = shaping.broadcast_in_dim(E.eq(index, E.const_like(index, source)),
                                         aval.shape, ())
    total = pvary(psum(ct, axis_name), axis_name) if vma_checked() else psum(ct, axis_name)
    return E.select(is_source, total, shaping.full_like(ct, 0))


def _pbroadcast_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      axis_name: Any, source: int) -> tuple[list[Any], list[Any]]:
    """JAX's rule: over the vmapped axis, every member takes the source's value."""
    (x,), (d,) = args, dims
    if axis.name not in _names(axis_name):
        return [pbroadcast_p.bind(x, axis_name=axis_name, source=source)], [d]
    if len(_names(axis_name)) > 1:
        raise NotImplementedError("pbroadcast batcher only supports a single axis")
    if d is None:
        return [x], [None]
    picked = slicing.slice_in_dim(x, source, source + 1, axis=d)
    return [shaping.broadcast_in_dim(
        picked, canonical_aval_of(x).shape,
        tuple(range(canonical_aval_of(x).ndim)))], [d]


pbroadcast_p = declare(
    "pbroadcast", lowering=not_applicable("JAX lowers pbroadcast (XLA's collective "
                                          "broadcast) for GPU only"),
    typing=_pbroadcast_type, impl=_no_evaluation("pbroadcast"), jvp=linear_jvp(),
    transpose=linear_transpose(_pbroadcast_transpose), batch=_pbroadcast_batch,
    sharding=lambda x, **p: [x.sharding],
    doc="Every member along manual axes receives the source member's block.",
    per_device=_pbroadcast_program)


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member along the named axes gets member ``source``'s value
    (``axis_name`` recorded as given, as JAX records it)."""
    return tree_util.tree_map(
        lambda leaf: pbroadcast_p.bind(leaf, axis_name=axis_name, source=int(source)), x)


def names_of(axis_name: Any) -> tuple[Any, ...]:
    """An ``axis_name`` param (one name, or a tuple or list of them) as a tuple."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def group_size(axis_name: Any) -> int:
    """Members of a collective over ``axis_name``: the product of the bound
    axes' sizes (NameError for an unbound one, as JAX)."""
    return int(np.prod([bound_axis_size(n) for n in names_of(axis_name)], dtype=np.int64))


def tracked(axes: Sequence[Any]) -> tuple[Any, ...]:
    """The axes among ``axes`` whose varying state types record: manual axes
    of a shard_map in context that checks it (check_vma)."""
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
            f"{x.str_short(True)} does not vary along {tuple(missing)}", ValueError)


def _require_settled(prim: str, c: str, x: ArrayType, axes: Sequence[Any]) -> None:
    """A data-moving collective needs a settled operand: not unreduced (a
    pending sum) and not reduced along its axes."""
    bad = (x.munreduced | x.mreduced) & frozenset(axes)
    require(not bad, prim, c,
            f"{prim} over {tuple(axes)} cannot take {x.str_short(True)}, which is unreduced or "
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
                f"tiled: dimension {dim} of {x.str_short(True)} (size {n}) must be divisible by "
                f"the number of members {size}", ValueError)
        shape[dim] = n // size
    else:
        require(n == size, prim, c,
                f"untiled: dimension {dim} of {x.str_short(True)} (size {n}) must equal the "
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
            bound_axis_size(n)  # NameError (as JAX) when unbound
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


def _manual_fields(axes_key: str) -> dict[str, Any]:
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
    forbid_collectives(names_of(axis_name), prim)
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
    return all_gather(ct, axis_name, axis_index_groups=axis_index_groups,
                      axis=scatter_dimension, tiled=tiled)


def _reduce_scatter_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                          axis_name: tuple[Any, ...], scatter_dimension: int,
                          axis_index_groups: Any, axis_size: int, tiled: bool
                          ) -> tuple[list[Any], list[Any]]:
    """Over another axis: the batch dimension rides along (the scattered
    dimension shifts past it). Over the vmapped axis: members are the batch,
    so sum it and leave member k's block at batch index k."""
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
    y = x * axis.size if d is None else reduce_sum(x, (d,))
    if tiled:
        y = _split_dim(y, scatter_dimension, axis.size)
    return [y], [scatter_dimension]


reduce_scatter_p: Primitive = declare(
    "reduce_scatter", lowering=LC.reduce_scatter,
    typing=_reduce_scatter_type, impl=_program_error("reduce_scatter"),
    jvp=linear_jvp(), transpose=linear_transpose(_reduce_scatter_transpose),
    batch=_reduce_scatter_batch,
    sharding=lambda x, *, scatter_dimension, tiled, **p: _sharding_scattered(
        x, dim=scatter_dimension, tiled=tiled),
    doc="Sum over named axes, each member keeping its block of one dimension.",
    **_manual_fields("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["scatter_dimension"],),
        lambda p: (p["scatter_dimension"],) if p["tiled"] else (), _reduce_scatter_program))


# ============================================== reduce_scatter_start / _done


class FutureType(HiType):
    """The type of a collective started but not yet waited for (JAX's
    ``AbstractFuture``): it carries the type its ``done()`` gives, and
    lowers to that one array."""

    def __init__(self, inner_aval: ArrayType) -> None:
        self.inner_aval = inner_aval

    def __hash__(self) -> int:
        return hash(("future", self.inner_aval))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FutureType) and other.inner_aval == self.inner_aval

    def lo_ty(self) -> list[Any]:
        return [self.inner_aval]

    def lower_val(self, hi_val: Any, /) -> list[Any]:
        return [hi_val]

    def raise_val(self, *lo_vals: Any) -> Any:
        return lo_vals[0]

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return f"AbstractFuture{{{self.inner_aval.str_short(True)}}}"

    def __repr__(self) -> str:
        return f"AbstractFuture(inner_aval={self.inner_aval})"

    # A future is placed, typed and varies as the value it will hold.
    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)
    sharding = property(lambda self: self.inner_aval.sharding)
    vma = property(lambda self: self.inner_aval.vma)
    munreduced = property(lambda self: self.inner_aval.munreduced)
    mreduced = property(lambda self: self.inner_aval.mreduced)

    def unshard(self, mesh: Any, check_vma: bool, spec: Any) -> FutureType:
        """A future returned from a shard_map body: of the array its blocks
        make."""
        return FutureType(self.inner_aval.unshard(mesh, check_vma, spec))

    # the wait: ``future.done()`` on a traced future
    done = aval_method(lambda future: reduce_scatter_done_p.bind(future))


def _reduce_scatter_start_type(x: ArrayType, **params: Any) -> list[Any]:
    (inner,) = _reduce_scatter_type(x, **params)
    return [FutureType(inner)]


def _reduce_scatter_done_type(future: Any) -> list[ArrayType]:
    if not isinstance(future, FutureType):
        raise TypeError(f"reduce_scatter_done takes a future; got {future}")
    return [future.inner_aval]


def _reduce_scatter_start_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[Any],
                                  **params: Any) -> list[S.Dist]:
    """The reduce_scatter itself; the future holds its blocks."""
    (out,) = out_avals
    (result,) = _reduce_scatter_program(geo, args, [out.inner_aval], **params)
    return [S.Dist(out, result.bufs)]


reduce_scatter_start_p: Primitive = declare(
    "reduce_scatter_start", lowering=LC.reduce_scatter_start,
    typing=_reduce_scatter_start_type, impl=_program_error("reduce_scatter_start"),
    jvp=not_applicable("JAX 0.12 defines no differentiation rule"),
    transpose=not_applicable("not linear in JAX 0.12: no differentiation rule"),
    batch=not_applicable("JAX 0.12 defines no batching rule"),
    sharding=lambda x, **p: [None],
    doc="reduce_scatter started asynchronously: its result is a future.",
    **_manual_fields("axis_name"),
    per_device=_reduce_scatter_start_program,
    to_lojax=lambda x, **p: reduce_scatter_p.bind(x, **p))

reduce_scatter_done_p: Primitive = declare(
    "reduce_scatter_done", lowering=LC.reduce_scatter_done,
    typing=_reduce_scatter_done_type, impl=_program_error("reduce_scatter_done"),
    jvp=not_applicable("JAX 0.12 defines no differentiation rule"),
    transpose=not_applicable("not linear in JAX 0.12: no differentiation rule"),
    batch=not_applicable("JAX 0.12 defines no batching rule"),
    sharding=lambda f, **p: [None],
    doc="The wait for a reduce_scatter_start: the future's value.",
    vma_rule=VMA_FROM_TYPING, axis_collective=lambda params: (),
    per_device=lambda geo, args, out_avals, **p: [S.Dist(out_avals[0], args[0].bufs)],
    to_lojax=lambda future: future)


# ================================================================ all_to_all


def _all_to_all_type(x: ArrayType, *, axis_name: Any, split_axis: int, concat_axis: int,
                     axis_index_groups: Any, tiled: bool) -> list[ArrayType]:
    prim = "all_to_all"
    forbid_collectives(names_of(axis_name), prim)
    require(axis_index_groups is None, prim, "C1", "axis_index_groups is not supported",
            NotImplementedError)
    _require_dim(prim, "C2", "split_axis", split_axis, x.ndim)
    _require_dim(prim, "C2", "concat_axis", concat_axis, x.ndim)
    size = group_size(axis_name)
    require(x.shape[split_axis] % size == 0, prim, "C3",
            f"dimension split_axis={split_axis} of {x.str_short(True)} (size "
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
    shape = list(canonical_aval_of(x).shape)
    shape[dim:dim + 1] = [factor, shape[dim] // factor]
    return shaping.reshape(x, tuple(shape))


def _merge_dims(x: Any, dim: int) -> Any:
    shape = list(canonical_aval_of(x).shape)
    shape[dim:dim + 2] = [shape[dim] * shape[dim + 1]]
    return shaping.reshape(x, tuple(shape))


def _transpose_to(x: Any, src: int, dst: int) -> Any:
    perm = [i for i in range(canonical_aval_of(x).ndim) if i != src]
    perm.insert(dst, src)
    return shaping.transpose(x, tuple(perm))


def _all_to_all_batch(axis: AxisData, args: list[Any], dims: list[Any], *, axis_name: Any,
                      split_axis: int, concat_axis: int, axis_index_groups: Any, tiled: bool
                      ) -> tuple[list[Any], list[Any]]:
    """Over another axis: the batch dimension rides along. Over the vmapped
    axis (alone): the members are the batch, so the exchange is a local
    reshuffle of the batch dimension with split_axis and concat_axis."""
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
        x, d = shaping.broadcast(x, (n,)), 0
    if split_axis == concat_axis:
        # Member k's j-th block of the axis is member j's k-th chunk: split
        # the axis into (chunk, rest) and swap the chunk index with the batch.
        dim = split_axis + (d <= split_axis)
        y = _split_dim(x, dim, n)
        bd = d + (dim < d)
        perm = list(range(len(_shape(y))))
        perm[bd], perm[dim] = dim, bd
        return [_merge_dims(shaping.transpose(y, tuple(perm)), dim)], [d]
    # Otherwise the members' operands, concatenated along concat_axis, are
    # every member's result stacked along split_axis: the chunk index of
    # split_axis becomes the batch.
    y = _merge_dims(_transpose_to(x, d, concat_axis), concat_axis)
    return [_split_dim(y, split_axis, n)], [split_axis]


def _shape(x: Any) -> tuple[int, ...]:
    return canonical_aval_of(x).shape


all_to_all_p: Primitive = declare(
    "all_to_all", lowering=LC.all_to_all,
    typing=_all_to_all_type, impl=_program_error("all_to_all"),
    jvp=linear_jvp(), transpose=linear_transpose(_all_to_all_transpose),
    batch=_all_to_all_batch,
    sharding=_same_sharding,
    doc="Split one dimension among the members, concatenate their chunks along another.",
    **_manual_fields("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["split_axis"], p["concat_axis"]),
        lambda p: (p["split_axis"], p["concat_axis"]), _all_to_all_program))


# ========================================================= ragged_all_to_all

_RAGGED_INDEX_NAMES = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


def _ragged_type(operand: ArrayType, output: ArrayType, *index: ArrayType,
                 axis_name: tuple[Any, ...], axis_index_groups: Any) -> list[ArrayType]:
    """JAX's checks, in its order: the four index arrays are integer (C1),
    then rank 1 and non-empty (C2); the axes are bound (C3). The result has
    ``output``'s type (strong), ``output``'s varying axes included."""
    prim = "ragged_all_to_all"
    for name, aval in zip(_RAGGED_INDEX_NAMES, index):
        require(issubdtype(aval.dtype, np.integer), prim, "C1",
                f"{name} must be integer type, got {aval.str_short(True)}", ValueError)
    for name, aval in zip(_RAGGED_INDEX_NAMES, index):
        require(aval.ndim == 1 and aval.shape[0] >= 1, prim, "C2",
                f"{name} must be rank 1 with positive dimension size, but got shape "
                f"{aval.shape}", ValueError)
    check_bound(names_of(axis_name), prim)
    forbid_collectives(names_of(axis_name), prim)
    return [output.update(weak_type=False)]


def _ragged_members(position: int, ways: int, axis_index_groups: Any) -> list[int]:
    """The positions exchanging with ``position``, in member order: the whole
    axis, or the group of ``axis_index_groups`` holding it."""
    if axis_index_groups is None:
        return list(range(ways))
    for group in axis_index_groups:
        if position in group:
            return [int(g) for g in group]
    raise ValueError(f"ragged_all_to_all: position {position} along the axes is in no group "
                     f"of axis_index_groups={axis_index_groups}")


def _ragged_receive(operands: np.ndarray, tables: np.ndarray, output: np.ndarray,
                    position: int, axis_index_groups: Any) -> np.ndarray:
    """One member's result: ``output`` with, for each member j and each of
    j's slices addressed to this member, j's rows written at the offset j
    names. ``operands[j]`` is member j's operand and ``tables[j]`` its
    (input_offsets, send_sizes, output_offsets, recv_sizes)."""
    members = _ragged_members(position, operands.shape[0], axis_index_groups)
    me, count = members.index(position), tables.shape[2]
    if count % len(members):
        raise ValueError(f"ragged_all_to_all: the index arrays' length {count} must be "
                         f"divisible by the number of members {len(members)}")
    per = count // len(members)
    result = output.copy()
    recv_sizes = tables[position, 3]
    for j_place, j in enumerate(members):
        for m in range(per):
            start, size, at = (int(v) for v in tables[j, :3, me * per + m])
            expected = int(recv_sizes[j_place * per + m])
            _check_ragged_slice(j, me * per + m, start, size, at, expected,
                                operands.shape[1], output.shape[0])
            result[at:at + size] = operands[j, start:start + size]
    return result


def _check_ragged_slice(member: int, k: int, start: int, size: int, at: int, expected: int,
                        rows_in: int, rows_out: int) -> None:
    """A slice is in bounds on both sides and its receiver expects its size
    (otherwise XLA's result is undefined)."""
    where = f"slice {k} of member {member}"
    if size != expected:
        raise ValueError(f"ragged_all_to_all: {where} sends {size} rows but its receiver's "
                         f"recv_sizes says {expected}")
    if size < 0 or start < 0 or start + size > rows_in:
        raise ValueError(f"ragged_all_to_all: {where} reads rows [{start}, {start + size}) of "
                         f"an operand with {rows_in} rows")
    if at < 0 or at + size > rows_out:
        raise ValueError(f"ragged_all_to_all: {where} writes rows [{at}, {at + size}) of an "
                         f"output with {rows_out} rows")


def _ragged_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                    axis_name: tuple[Any, ...], axis_index_groups: Any) -> list[S.Dist]:
    """Every member's operand and index arrays travel to the group (the
    operand's move is the collective the ledger records, an all_to_all; the index arrays
    ride along with it), and each member writes what is addressed to it
    into its ``output``."""
    operand, output, *index = args
    axes = _on_mesh(axis_name, geo)
    _require_ragged_rows(operand.aval, output.aval)
    stacked = S.all_gather(S.each(lambda b: b[None], operand.bufs), axes, 0, geo,
                           kind="all_to_all")
    packed = tuple(_packed_index([d.bufs[k] for d in index]) for k in range(geo.n))
    tables = S.backend().all_gather(packed, axes, 0, geo)
    result: list[np.ndarray | None] = []
    for k, (ops, tab, p) in enumerate(zip(stacked, tables, geo.position(axes))):
        held = output.bufs[k]
        result.append(None if ops is None or tab is None or held is None else
                      _ragged_receive(ops, tab, held, int(p), axis_index_groups))
    return [S.Dist(out_avals[0], tuple(result))]


def _require_ragged_rows(operand: ArrayType, output: ArrayType) -> None:
    """Rows move between the two arrays: same element type and row shape."""
    if operand.dtype != output.dtype or operand.shape[1:] != output.shape[1:]:
        raise ValueError(f"ragged_all_to_all: operand {operand.str_short(True)} and output "
                         f"{output.str_short(True)} must have the same element type and the "
                         "same shape after the leading dimension")


def _packed_index(bufs: list[np.ndarray | None]) -> np.ndarray | None:
    """A device's four index arrays as one (1, 4, K) int64 block."""
    if any(b is None for b in bufs):
        return None
    held = [np.asarray(b, np.int64) for b in bufs]
    lengths = {b.shape[0] for b in held}
    if len(lengths) != 1:
        raise ValueError("ragged_all_to_all: input_offsets, send_sizes, output_offsets and "
                         f"recv_sizes must have the same length, got {[b.shape for b in held]}")
    return np.stack(held)[None]


def _ragged_impl(*args: Any, **params: Any) -> NoReturn:
    raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap or "
                       "shard_map.")


def _ragged_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                ) -> tuple[list[Any], list[Any]]:
    """Linear in (operand, output); the index arrays carry no tangent."""
    operand, output, *index = primals
    out = ragged_all_to_all_p.bind(operand, output, *index, **params)
    if type(tangents[0]) is Zero and type(tangents[1]) is Zero:
        return [out], [Zero.from_primal_value(out)]
    dx, dy = (instantiate(t) for t in tangents[:2])
    return [out], [ragged_all_to_all_p.bind(dx, dy, *index, **params)]


def _ragged_transpose(ct: Any, operand: Any, output: Any, input_offsets: Any,
                      send_sizes: Any, output_offsets: Any, recv_sizes: Any, *,
                      axis_name: tuple[Any, ...], axis_index_groups: Any) -> list[Any]:
    """The reverse exchange carries the cotangent's received rows back to
    their senders (offsets and sizes swap roles, and each member learns
    where its rows were written with an all_to_all of the offsets); the
    output's cotangent is ct with the received rows zeroed."""
    rest: list[Any] = [None] * 4
    if type(ct) is Zero:
        return [Zero(operand.aval.ct_type()) if is_undefined_primal(operand) else None,
                Zero(output.aval.ct_type()) if is_undefined_primal(output) else None, *rest]
    groups = {"axis_name": axis_name, "axis_index_groups": axis_index_groups}
    written_at = all_to_all_p.bind(output_offsets, split_axis=0, concat_axis=0, tiled=True,
                                   **groups)
    read_at = all_to_all_p.bind(input_offsets, split_axis=0, concat_axis=0, tiled=True,
                                **groups)
    op_ct = None
    if is_undefined_primal(operand):
        zero = zeros_like_aval(operand.aval)
        op_ct = ragged_all_to_all_p.bind(ct, zero, written_at, recv_sizes, read_at,
                                         send_sizes, **groups)
    out_ct = None
    if is_undefined_primal(output):
        out_ct = E.select(_received_rows(ct, written_at, recv_sizes),
                          shaping.full_like(ct, 0), ct)
    return [op_ct, out_ct, *rest]


def _received_rows(ct: Any, offsets: Any, sizes: Any) -> Any:
    """A boolean mask of ct's shape: the rows some received slice wrote."""
    aval, index = canonical_aval_of(ct), canonical_aval_of(offsets)
    rows = shaping.broadcasted_iota(index.dtype, (aval.shape[0], 1), 0)
    start = shaping.broadcast_in_dim(offsets, (1, index.shape[0]), (1,))
    size = shaping.broadcast_in_dim(shaping.convert_element_type(sizes, index.dtype),
                                    (1, index.shape[0]), (1,))
    inside = E.bitwise_and(E.ge(rows, start), E.lt(rows, E.add(start, size)))
    hit = reduce_or(inside, (1,))
    return shaping.broadcast_in_dim(hit, aval.shape, (0,))


def _ragged_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                  axis_name: tuple[Any, ...], axis_index_groups: Any
                  ) -> tuple[list[Any], list[Any]]:
    """As JAX: over another axis, the batch's instances are laid end to end
    (operand and output rows, index arrays instance-minor) and their offsets
    shifted to their instance's rows, so one exchange serves all of them."""
    params = {"axis_name": axis_name, "axis_index_groups": axis_index_groups}
    if all(d is None for d in dims) and axis.name not in names_of(axis_name):
        return [ragged_all_to_all_p.bind(*args, **params)], [None]
    if axis.name in names_of(axis_name) or axis_index_groups is not None:
        raise NotImplementedError("Please open a feature request!")
    n = axis.size
    operand, output = (moveaxis(broadcast(x, n, 0) if d is None else x, 0 if d is None else d, 0)
                       for x, d in zip(args[:2], dims[:2]))
    index = [_instance_minor(x, d, n) for x, d in zip(args[2:], dims[2:])]
    rows_in, rows_out = _shape(operand)[1], _shape(output)[1]
    index[0] = E.add(index[0], _instance_starts(index[0], n, rows_in))
    index[2] = E.add(index[2], _instance_starts(index[2], n, rows_out))
    flat = [_merge_dims(x, 0) for x in (operand, output, *index)]
    out = ragged_all_to_all_p.bind(*flat, **params)
    return [_split_dim(out, 0, n)], [0]


def _instance_minor(x: Any, d: Any, n: int) -> Any:
    """An index array as (K, n): the batch dimension second."""
    if d is None:
        return broadcast(x, n, 1)
    return moveaxis(x, d, 1)


def _instance_starts(x: Any, n: int, rows: int) -> Any:
    """Instance b's first row, b * rows, broadcast against a (K, n) array."""
    dtype = canonical_aval_of(x).dtype
    iota = shaping.broadcasted_iota(dtype, (1, n), 1)
    return E.mul(iota, shaping.full_like(iota, rows))


ragged_all_to_all_p: Primitive = declare(
    "ragged_all_to_all", lowering=LC.ragged_all_to_all,
    typing=_ragged_type, impl=_ragged_impl,
    jvp=_ragged_jvp, transpose=_ragged_transpose, batch=_ragged_batch,
    sharding=lambda operand, output, *index, **params: [output.sharding],
    doc="Send slices of ragged rows to the members; each writes what it receives into "
        "its output.",
    **_manual_fields("axis_name"),
    per_device=_ragged_program)


# ================================================================== casts


def _preduced_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "preduced"
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C1",
            f"invariant -> reduced: {x.str_short(True)} varies along {_shown(bad)}", ValueError)
    bad = x.mreduced & frozenset(axes)
    require(not bad, prim, "C2",
            f"{x.str_short(True)} is already reduced along {_shown(bad)}", ValueError)
    return [x.update(mreduced=x.mreduced | frozenset(axes))]


def _vary_unreduced_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "vary_unreduced_cast"
    _require_settled(prim, "C1", x, axes)
    missing = frozenset(axes) - x.vma
    require(not missing, prim, "C2",
            f"varying -> unreduced: {x.str_short(True)} does not vary along {_shown(missing)}",
            ValueError)
    return [x.update(vma=x.vma - frozenset(axes), munreduced=x.munreduced | frozenset(axes))]


def _reduced_vary_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "reduced_vary_cast"
    missing = frozenset(axes) - x.mreduced
    require(not missing, prim, "C1",
            f"reduced -> varying: {x.str_short(True)} is not reduced along {_shown(missing)}",
            ValueError)
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C2", f"{x.str_short(True)} already varies along {_shown(bad)}",
            ValueError)
    return [x.update(vma=x.vma | frozenset(axes), mreduced=x.mreduced - frozenset(axes))]


def _unreduced_psum_type(x: ArrayType, *, axes: tuple[Any, ...]) -> list[ArrayType]:
    prim = "unreduced_psum"
    forbid_collectives(axes, prim)
    require(not any(isinstance(a, (int, np.integer)) for a in axes), prim, "C1",
            f"axes must be mesh axis names, got {axes}", ValueError)
    missing = frozenset(axes) - x.munreduced
    require(not missing, prim, "C2",
            f"unreduced -> invariant: {x.str_short(True)} is not unreduced along "
            f"{_shown(missing)}", ValueError)
    bad = x.vma & frozenset(axes)
    require(not bad, prim, "C3", f"{x.str_short(True)} varies along {_shown(bad)}", ValueError)
    return [x.update(munreduced=x.munreduced - frozenset(axes))]


def _unreduced_psum_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                            *, axes: tuple[Any, ...]) -> list[S.Dist]:
    """The pending sum, paid: one all_reduce over the axes."""
    (x,), (out,) = args, out_avals
    ordered = tuple(a for a in geo.names if a in axes)
    return [S.Dist(out, S.all_reduce(x.bufs, ordered, "sum", geo))]


def _cast(name: str, typing: Any, transpose: Callable[..., Any], doc: str,
          program: Any = _identity_program, lowering: Any = LC.identity) -> Primitive:
    """A cast between manual types; its lowering is its operand (JAX's),
    but ``unreduced_psum``'s, an all-reduce."""
    return declare(name, typing=typing, impl=_program_error(name), jvp=linear_jvp(),
                   transpose=linear_transpose(transpose), batch=_not_batchable(name),
                   sharding=_same_sharding, vma_rule=VMA_FROM_TYPING, per_device=program,
                   doc=doc, lowering=lowering)


preduced_p: Primitive = _cast(
    "preduced", _preduced_type,
    lambda ct, x, *, axes: unreduced_psum_p.bind(ct, axes=axes),
    "Invariant to reduced along manual axes: free (types only).")
unreduced_psum_p: Primitive = _cast(
    "unreduced_psum", _unreduced_psum_type,
    lambda ct, x, *, axes: preduced_p.bind(ct, axes=axes),
    "Unreduced to invariant: the all-reduce a pending sum waits for.",
    _unreduced_psum_program, LC.all_reduce("psum"))
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
    forbid_collectives(axis_name, "reduce_scatter")
    missing = frozenset(axis_name) - x.munreduced
    require(not missing, prim, "C1",
            f"unreduced -> varying: {x.str_short(True)} is not unreduced along "
            f"{_shown(missing)}", ValueError)
    bad = x.vma & frozenset(axis_name)
    require(not bad, prim, "C2", f"{x.str_short(True)} varies along {_shown(bad)}", ValueError)
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
    forbid_collectives(axis_name, prim)
    missing = frozenset(axis_name) - x.vma
    require(not missing, prim, "C1",
            f"varying -> reduced: {x.str_short(True)} does not vary along {_shown(missing)}",
            ValueError)
    bad = x.mreduced & frozenset(axis_name)
    require(not bad, prim, "C2", f"{x.str_short(True)} is already reduced along {_shown(bad)}",
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
    "unreduced_reduce_scatter", lowering=LC.reduce_scatter, typing=_unreduced_rs_type,
    impl=_program_error("unreduced_reduce_scatter"), jvp=linear_jvp(),
    transpose=linear_transpose(lambda ct, x, *, axis_name, scatter_dimension, axis_size,
                               tiled: all_gather_reduced_p.bind(
                                   ct, all_gather_dimension=scatter_dimension,
                                   axis_name=axis_name, axis_size=axis_size, tiled=tiled)),
    batch=_not_batchable("unreduced_reduce_scatter"),
    sharding=lambda x, *, scatter_dimension, tiled, **p: _sharding_scattered(
        x, dim=scatter_dimension, tiled=tiled),
    doc="Unreduced to varying: the pending sum, each member keeping its block.",
    **_manual_fields("axis_name"),
    per_device=on_whole_dims(
        lambda p: (p["scatter_dimension"],),
        lambda p: (p["scatter_dimension"],) if p["tiled"] else (), _unreduced_rs_program))

all_gather_reduced_p: Primitive = declare(
    "all_gather_reduced", lowering=LC.all_gather, typing=_ag_reduced_type,
    impl=_program_error("all_gather_reduced"),
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
    **_manual_fields("axis_name"),
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
    return psum_scatter(ct, axis_name, scatter_dimension=all_gather_dimension,
                        axis_index_groups=axis_index_groups, tiled=tiled)


def _axes(axis_name: Any) -> tuple[Any, ...]:
    """Axis names as a tuple, each bound (NameError otherwise, as JAX)."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        if not isinstance(n, (int, np.integer)):
            axis_size(n)
    return names


def _manual(axes: tuple[Any, ...]) -> tuple[Any, ...]:
    """The named axes that are manual mesh axes of the shard_map in context
    (when it tracks varying axes)."""
    if not vma_checked():
        return ()
    manual = get_abstract_mesh().manual_axes
    return tuple(a for a in axes if a in manual)


def _varying_over(leaf: Any, axes: tuple[Any, ...]) -> Any:
    """``leaf`` cast to vary along ``axes`` (a reduction over an axis first
    makes an invariant operand vary along it, as JAX does)."""
    missing = tuple(a for a in axes if a not in canonical_aval_of(leaf).vma)
    return bind_pvary(leaf, missing) if missing else leaf


def _names(axis_name: Any) -> tuple[Any, ...]:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _reduce(prim: Any, x: Any, axis_name: Any, axis_index_groups: Any) -> Any:
    # As JAX: the reductions check their axes when typing an equation.
    check_bound(_names(axis_name), "psum")
    axes = _axes(axis_name)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: prim.bind(_varying_over(leaf, manual) if manual else leaf, axes=axes,
                               axis_index_groups=axis_index_groups), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """All-reduce sum over the named axes (a pytree is reduced leafwise).
    Over manual axes of a shard_map that tracks varying axes it is
    ``psum_invariant`` (varying in, invariant out)."""
    if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(x)):
        check_bound(_names(axis_name), "psum")
    axes = _axes(axis_name)
    manual = _manual(axes)
    if manual and len(manual) == len(axes):
        return tree_util.tree_map(lambda leaf: _manual_sum(leaf, manual, psum_invariant_p), x)
    return _reduce(psum_p, x, axis_name, axis_index_groups)


def _manual_sum(leaf: Any, axes: tuple[Any, ...], psum_invariant_p: Any) -> Any:
    """An operand unreduced along the axes is summed from its partials
    (unreduced -> invariant); otherwise varying -> invariant."""
    if frozenset(axes) <= canonical_aval_of(leaf).munreduced:
        return unreduced_psum_p.bind(leaf, axes=axes)
    return psum_invariant_p.bind(_varying_over(leaf, axes), axes=axes)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    return _reduce(pmax_p, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    return _reduce(pmin_p, x, axis_name, axis_index_groups)


def _group_size(axis_name: Any) -> int:
    size = 1
    for n in _axes(axis_name):
        if not isinstance(n, (int, np.integer)):
            size *= axis_size(n)
    return size


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """``psum(x) / n``, n the number of members of the named axes."""
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    n = _group_size(axis_name)
    return tree_util.tree_map(lambda t: div(t, shaping.full_like(t, n, shape=())), total)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> Any:
    """Every member's value, stacked along ``axis`` (concatenated if tiled)."""
    names = _axes(axis_name)
    size = _group_size(axis_name)

    manual = _manual(names)

    def gather(leaf: Any) -> Any:
        if manual:  # an invariant operand first varies along the gathered axes
            leaf = _varying_over(leaf, manual)
        ndim = canonical_aval_of(leaf).ndim
        dim = canonicalize_axis(axis, ndim if tiled else ndim + 1)
        return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                 axis_index_groups=axis_index_groups, axis_size=size,
                                 tiled=tiled)
    return tree_util.tree_map(gather, x)


def axis_index(axis_name: Any) -> Any:
    """This member's position along the named axis (int32). Along a tuple of
    axes it is their mixed-radix position, the first axis major, computed (as
    JAX stages it) from one ``axis_index`` per axis."""
    check_bound(_names(axis_name), "axis_index")
    axis_size(axis_name)
    if not isinstance(axis_name, (tuple, list)):
        return axis_index_p.bind(axis_name=axis_name)
    inner_size = 1
    index = shaping.asarray(0)
    for name in reversed(axis_name):
        index = index + axis_index(name) * inner_size
        inner_size *= axis_size(name)
    return index


def pvary(x: Any, axis_name: Any) -> Any:
    """Cast to varying along manual axes (free: only the type changes)."""
    axes = _axes(axis_name)
    return tree_util.tree_map(lambda leaf: bind_pvary(leaf, axes), x)


def _check_ppermute_bound(names: tuple[Any, ...]) -> None:
    """An unbound axis name fails as in JAX: while staging (jit, make_jaxpr;
    under vmap too, whose rule passes the collective down) with JAX's advice
    (NameError); eagerly, ppermute reaches evaluation, which it has none
    of outside shard_map (NotImplementedError)."""
    bound = {n for n, _ in _context.axis_frames}
    if all(isinstance(n, (int, np.integer)) or n in bound for n in names):
        return
    trace: Any = current_trace()
    while trace is not None:
        if isinstance(trace, JaxprTrace):
            check_bound(names, "ppermute")
        trace = getattr(trace, "parent", None)
    raise NotImplementedError("Evaluation rule for 'ppermute' not implemented")


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Send each device's block to another position along the named axes."""
    _check_ppermute_bound(_names(axis_name))
    axes = _axes(axis_name)
    pairs = tuple((int(s), int(d)) for s, d in perm)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: ppermute_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                     axis_name=axes, perm=pairs), x)


# ------------------------------------------------- manual-mode collectives
# psum_scatter, all_to_all, pshuffle, pswapaxes, axis_size and pcast.


def _state(leaf: Any, axes: tuple[Any, ...], who: str) -> str:
    """Along ``axes``, which of the four manual states ``leaf`` is in
    (ValueError when the axes disagree, as JAX)."""
    aval = canonical_aval_of(leaf)
    states = {"varying" if a in aval.vma else "unreduced" if a in aval.munreduced
              else "reduced" if a in aval.mreduced else "invarying" for a in axes}
    if len(states) > 1:
        raise ValueError(f"{who} can only accept axis_name which corresponds to one of "
                         f"varying, unreduced, reduced or invarying state of the input. Got "
                         f"input type: {aval}, axes: {axes} and input state: {states}")
    return states.pop()


def _canonical_dim(dim: int, ndim: int) -> int:
    return canonicalize_axis(dim, ndim)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """``psum`` with each member keeping only its block of
    ``scatter_dimension`` (removed if untiled, divided if tiled). An
    operand unreduced along the axes is summed by ``unreduced_reduce_scatter``."""
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axes:
        return x

    def scatter(leaf: Any) -> Any:
        size = _group_size(axes)
        dim = _canonical_dim(scatter_dimension, canonical_aval_of(leaf).ndim)
        if _state(leaf, axes, "jax.lax.psum_scatter") == "unreduced":
            if axis_index_groups is not None:
                raise NotImplementedError("psum_scatter of an unreduced value with "
                                          "axis_index_groups")
            return unreduced_reduce_scatter_p.bind(leaf, axis_name=axes, scatter_dimension=dim,
                                                   axis_size=size, tiled=tiled)
        manual = _manual(axes)
        return reduce_scatter_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                     axis_name=axes, scatter_dimension=dim,
                                     axis_index_groups=axis_index_groups, axis_size=size,
                                     tiled=tiled)
    return tree_util.tree_map(scatter, x)


def psum_scatter_start(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                       axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """``psum_scatter`` started asynchronously: a future per leaf, whose
    ``done()`` is the scattered sum. Only the tiled form exists in JAX 0.12."""
    if not tiled:
        raise NotImplementedError("psum_scatter_start requires tiled=True")
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)

    def start(leaf: Any) -> Any:
        manual = _manual(axes)
        return reduce_scatter_start_p.bind(
            _varying_over(leaf, manual) if manual else leaf, axis_name=axes,
            scatter_dimension=_canonical_dim(scatter_dimension, canonical_aval_of(leaf).ndim),
            axis_index_groups=axis_index_groups, axis_size=_group_size(axes), tiled=tiled)
    return tree_util.tree_map(start, x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Each member splits ``split_axis`` into one chunk per member and
    receives the members' chunks along ``concat_axis``. Untiled, the split
    axis (of size = number of members) disappears and a new one appears at
    ``concat_axis``; JAX stages that as expand_dims, the primitive, squeeze."""

    def exchange(leaf: Any) -> Any:
        ndim = canonical_aval_of(leaf).ndim
        split, concat = _canonical_dim(split_axis, ndim), _canonical_dim(concat_axis, ndim)
        size = _group_size(axis_name)
        n = canonical_aval_of(leaf).shape[split]
        if tiled and n % size:
            raise ValueError(f"The size of all_to_all split_axis ({n}) has to be divisible by "
                             f"the size of the named axis {axis_name} ({size})")
        if not tiled and n != size:
            raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to "
                             f"equal x.shape[split_axis], but they are {size} and {n} "
                             "respectively.")
        if not tiled and split < concat:
            concat += 1  # concat_axis counts positions after split_axis is gone
            leaf = shaping.expand_dims(leaf, (concat,))
        elif not tiled and concat < split:
            leaf = shaping.expand_dims(leaf, (concat,))
            split += 1
        manual = _manual(_axes(axis_name))
        out = all_to_all_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                split_axis=split, concat_axis=concat, axis_name=axis_name,
                                axis_index_groups=axis_index_groups, tiled=tiled)
        if not tiled and split != concat:
            out = shaping.squeeze(out, (split,))
        return out
    return tree_util.tree_map(exchange, x)


def ragged_all_to_all(operand: Any, output: Any, input_offsets: Any, send_sizes: Any,
                      output_offsets: Any, recv_sizes: Any, *, axis_name: Any,
                      axis_index_groups: Any = None) -> Any:
    """Ragged all_to_all (SPEC.md): slice i of the caller's ``operand``
    (rows ``input_offsets[i]`` to ``input_offsets[i] + send_sizes[i]``) goes
    to member ``i // (len(input_offsets) / members)``, which writes it into
    its ``output`` at the caller's ``output_offsets[i]``; ``recv_sizes`` are
    the sizes each member receives, in the order of the senders' slices."""
    if isinstance(current_trace(), EvalTrace):
        _ragged_impl()  # as JAX: evaluated outside any map, before typing
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    groups = (None if axis_index_groups is None
              else tuple(tuple(int(i) for i in g) for g in axis_index_groups))
    return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                    recv_sizes, axis_name=names, axis_index_groups=groups)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """``all_to_all(x, axis_name, axis, axis)``."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pshuffle(x: Any, axis_name: Any, perm: Any) -> Any:
    """``ppermute`` where member i receives from member ``perm[i]``."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def axis_size(axis_name: Any) -> int:
    """The number of members along the named axes (a Python int; NameError
    for an unbound one)."""
    return group_size(axis_name)


_PCAST_ALLOWED = ("unreduced", "reduced", "varying")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Change a value's state along manual axes without moving data:
    invariant -> varying (``pvary``), invariant -> reduced (``preduced``),
    varying -> unreduced (``vary_unreduced_cast``), reduced -> varying
    (``reduced_vary_cast``)."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"{axis_name=} must be a tuple or a str. Got {axis_name}")
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in _PCAST_ALLOWED:
        raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                         f"{set(_PCAST_ALLOWED)}")
    casts = {("invarying", "varying"): pvary_p, ("invarying", "reduced"): preduced_p,
             ("varying", "unreduced"): vary_unreduced_cast_p,
             ("reduced", "varying"): reduced_vary_cast_p}

    def cast(leaf: Any) -> Any:
        state = _state(leaf, axes, "jax.lax.pcast")
        prim = casts.get((state, to))
        if prim is None:
            raise ValueError(f"Unsupported pcast from={state}, {to=}")
        _axes(axes)  # NameError for an unbound axis
        if not vma_checked() and _all_manual(axes):
            return leaf  # without check_vma the casts are no-ops, as in JAX
        return prim.bind(leaf, axes=mesh_ordered(axes))
    return tree_util.tree_map(cast, x)


def _all_manual(axes: tuple[Any, ...]) -> bool:
    manual = get_abstract_mesh().manual_axes
    return all(a in manual for a in axes)


__all__ = ["all_gather", "all_to_all", "axis_index", "axis_size", "pbroadcast", "pcast", "pmax",
           "pmean", "pmin", "ppermute", "pshuffle", "psum", "psum_scatter", "psum_scatter_start",
           "pswapaxes", "pvary", "ragged_all_to_all"]
