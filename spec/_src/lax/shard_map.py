"""``shard_map`` (SPEC.md section 15); the manual-axis casts and collectives
it adds (``pvary``, ``psum_invariant``, ``ppermute``...) are in
spec/_src/lax/collectives.py.

Inside a shard_map body every value is one device's block; its type says
along which manual mesh axes it may differ between devices (``vma``, printed
``{V:x}``). Execution is per device (spec/_src/interpreters/spmd.py): a body equation runs on
each device's block, and a collective combines the blocks of the devices that
differ only along its axes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import Zero, instantiate
from spec._src.interpreters.batching import AxisData, moveaxis
from spec._src.core.interpreter import (
    Eqn,
    Jaxpr,
    Primitive,
    Var,
    canonical_aval_of,
    pp_eqn_default,
    trace_to_jaxpr,
)
from spec._src.lowering import collectives as LC
from spec._src.core.registry import declare, require
from spec._src.core.sharding import (
    AbstractMesh,
    Mesh,
    AxisType,
    NamedSharding,
    P,
    axis_names_of,
    entry_of,
)
from spec._src.core.state_types import RefType
from spec._src.core.hitypes import HiPspec, is_high, lo_types, lower_value, raise_values
from spec._src.core.types import SHARD_MAP_TYPING, ArrayType
from spec._src.interpreters.hi_lowering import lower_jaxpr
from spec._src.core.interpreter import VMA_FROM_TYPING
from spec._src.lax.calls import call_effects
from spec._src.lax import hi_axes as HA
from spec._src.lax.collectives import (
    _ordered,
    manual_context,
)
from spec._src.lax.shaping import broadcast_in_dim, reshape
from spec._src.core.interpreter import JitTracer, dce_jaxpr, eval_jaxpr, set_current_trace
from spec._src.core.sharding import extend_axis_env, use_abstract_mesh
from spec._src.interpreters import ad, batching
from spec._src.interpreters.ad_util import UndefinedPrimal

# ------------------------------------------------------------------ shard_map


def local_aval(aval: ArrayType, spec: P, mesh: AbstractMesh, manual: frozenset[Any],
               check_vma: bool, who: str, index: int) -> ArrayType:
    """One device's block type of an argument split by ``spec``."""
    sizes = mesh.shape
    entries = tuple(spec.partitions)
    if len(entries) > aval.ndim:
        raise ValueError(f"{who}: in_specs[{index}] is {spec} of length {len(entries)}, but "
                         f"the corresponding argument has shape {aval.str_short(True)} of rank "
                         f"{aval.ndim}")
    shape = list(aval.shape)
    varying: set[Any] = set()
    for d, e in enumerate(entries):
        names = () if e is None else (e,) if isinstance(e, str) else tuple(e)
        names = tuple(n for n in names if n in manual)
        ways = int(np.prod([sizes[n] for n in names], dtype=np.int64)) if names else 1
        if shape[d] % ways:
            raise ValueError(f"{who}: in_specs[{index}] is {spec}, which divides dimension {d}"
                             f" of the argument of shape {aval.str_short(True)} into {ways} parts,"
                             f" but {shape[d]} is not divisible by {ways}")
        shape[d] //= ways
        varying |= set(names) & manual
    vma = frozenset(varying) | (aval.vma if check_vma else frozenset()) if check_vma \
        else frozenset()
    # Unreduced and reduced manual axes pass through as themselves; the
    # split over the other (explicit) axes stays in the type.
    # A ref argument's block is a ref (of the block's type).
    block_type = RefType if type(aval) is RefType else ArrayType
    return block_type(tuple(shape), aval.dtype, aval.weak_type, vma=vma,
                     sharding=_explicit_part(aval, mesh, manual),
                     munreduced=frozenset(spec.unreduced) & manual if check_vma else frozenset(),
                     mreduced=frozenset(spec.reduced) & manual if check_vma else frozenset())


_entry = entry_of
_names_of = axis_names_of


def _explicit_part(aval: ArrayType, mesh: AbstractMesh, manual: frozenset[Any]) -> Any:
    """The argument's split over the non-manual axes, on the manual mesh
    (None when every mesh axis is manual or the argument is unsplit)."""
    if aval.sharding is None or manual >= frozenset(mesh.axis_names):
        return None
    spec = aval.sharding.spec._normalized_spec_for_aval(aval.ndim)
    parts = [_entry([n for n in _names_of(e) if n not in manual]) for e in spec.partitions]
    if all(p is None for p in parts):
        return None
    return NamedSharding(manual_mesh(mesh, manual), P(*parts))


def merged_spec(spec: P, local: ArrayType, ndim: int) -> P:
    """A boundary spec (manual axes) with the local type's explicit split
    added: the layout the global value has outside."""
    entries = list(spec._normalized_spec_for_aval(ndim).partitions)
    if local.sharding is not None:
        inner = local.sharding.spec._normalized_spec_for_aval(ndim).partitions
        entries = [_entry(_names_of(e) + _names_of(i)) for e, i in zip(entries, inner)]
    return P(*entries, unreduced=spec.unreduced, reduced=spec.reduced,
             unreduced_kind=spec.unreduced_kind)


def global_aval(local: ArrayType, spec: P, mesh: AbstractMesh, outer_sharded: bool
                ) -> ArrayType:
    sizes = mesh.shape
    shape = list(local.shape)
    for d, e in enumerate(spec.partitions):
        names = _names_of(e)
        shape[d] *= int(np.prod([sizes[n] for n in names], dtype=np.int64)) if names else 1
    sharding = None
    if outer_sharded:
        sharding = NamedSharding(mesh, merged_spec(spec, local, len(shape)))
    return ArrayType(tuple(shape), local.dtype, local.weak_type, sharding=sharding)


def _shard_map_type(*avals: ArrayType, mesh: Mesh | AbstractMesh, in_specs: tuple[P, ...],
                    out_specs: tuple[P, ...], jaxpr: Jaxpr, check_vma: bool,
                    newly_manual_axes: frozenset[Any]) -> list[ArrayType]:
    mesh = _abstract(mesh)
    require(len(avals) == len(in_specs), "shard_map", "C1",
            f"{len(avals)} operands for {len(in_specs)} in_specs", TypeError)
    explicit = bool(mesh.explicit_axes)
    return [a.unshard(mesh, check_vma, s) if is_high(a) else
            global_aval(a, _array_spec(s, a, "out_specs", i), mesh, explicit)
            for i, (a, s) in enumerate(zip(jaxpr.out_avals, out_specs))]


def _array_spec(spec: Any, aval: ArrayType, what: str, index: int) -> P:
    """An array's spec is a PartitionSpec: a hi type's spec (HiPspec) places
    values of that type only."""
    if isinstance(spec, HiPspec):
        side = "args" if what == "in_specs" else "f(*args)"
        raise TypeError(f"shard_map {what}[{index}] is {spec!r}, a partition spec for values of"
                        f" a hi type, but {side}[{index}] is an array of type"
                        f" {aval.str_short(True)}: arrays take a PartitionSpec")
    return spec  # type: ignore[no-any-return]


def _shard_map_sharding(*avals: ArrayType, **params: Any) -> list[Any]:
    return [getattr(a, "sharding", None) for a in _shard_map_type(*avals, **params)]


def _abstract(mesh: Any) -> AbstractMesh:
    """The abstract mesh of the ``mesh`` param: the map's equation holds
    the mesh it was given, a concrete ``Mesh`` or an ``AbstractMesh``, and
    prints it so, as JAX's does."""
    return mesh if isinstance(mesh, AbstractMesh) else mesh.abstract_mesh


def shard_array_type(aval: ArrayType, mesh: Any, manual_axes: frozenset[Any], check_vma: bool,
                     spec: P) -> ArrayType:
    """``ArrayType.shard``: the block type as ``typeof`` shows it inside the
    map (a block with no split of its own is replicated on the manual mesh)."""
    abstract = _abstract(mesh)
    manual = frozenset(manual_axes)
    block = local_aval(aval, spec, abstract, manual, check_vma, "shard_map", 0)
    if block.sharding is None:
        block = block.update(sharding=NamedSharding(manual_mesh(abstract, manual),
                                                    P(*([None] * block.ndim))))
    return block


def unshard_array_type(aval: ArrayType, mesh: Any, check_vma: bool, spec: P) -> ArrayType:
    """``ArrayType.unshard``: the type of the array blocks of type ``aval``
    make, put together by ``spec``."""
    abstract = _abstract(mesh)
    return global_aval(aval, spec, abstract, bool(abstract.explicit_axes))


SHARD_MAP_TYPING.update(shard=shard_array_type, unshard=unshard_array_type)


def _shard_map_to_lojax(*args: Any, jaxpr: Jaxpr, in_specs: tuple[Any, ...],
                        out_specs: tuple[Any, ...], mesh: Mesh | AbstractMesh,
                        check_vma: bool, newly_manual_axes: frozenset[Any]) -> list[Any]:
    """A map with hi-typed operands or results: the map of its lowered body
    over the values' components, each hi spec giving one partition spec per
    component (``to_lo``); the results are raised again."""
    los = [lo for x in args for lo in lower_value(canonical_aval_of(x), x)]
    lo_in_specs = _lo_specs(in_specs, [canonical_aval_of(x) for x in args], "in_specs")
    lo_out_specs = _lo_specs(out_specs, jaxpr.out_avals, "out_specs")
    who = "shard_map"
    lo_blocks = [local_aval(canonical_aval_of(x), s, _abstract(mesh), newly_manual_axes,
                            check_vma, who, i)
                 for i, (x, s) in enumerate(zip(los, lo_in_specs))]
    with _inside(mesh, check_vma, newly_manual_axes):
        lowered = lower_jaxpr(jaxpr, lo_blocks)
    outs = shard_map_p.bind(*los, jaxpr=lowered, in_specs=tuple(lo_in_specs),
                            out_specs=tuple(lo_out_specs), mesh=mesh, check_vma=check_vma,
                            newly_manual_axes=newly_manual_axes)
    hi_out = _shard_map_type(*[canonical_aval_of(x) for x in args], jaxpr=jaxpr,
                             in_specs=in_specs, out_specs=out_specs, mesh=mesh,
                             check_vma=check_vma, newly_manual_axes=newly_manual_axes)
    return raise_values(hi_out, outs)


def _lo_specs(specs: Sequence[Any], avals: Sequence[Any], what: str) -> list[P]:
    """One partition spec per component: a hi type's spec gives its ``to_lo``."""
    out: list[P] = []
    for i, (spec, aval) in enumerate(zip(specs, avals)):
        lo = list(spec.to_lo())
        n = len(lo_types(aval))
        if len(lo) != n:
            raise ValueError(f"shard_map {what}[{i}] is {spec!r}, whose to_lo() gives {len(lo)}"
                             f" partition specs, but the value's type {aval.str_short(True)}"
                             f" lowers to {n} arrays")
        out.extend(lo)
    return out


def _geometry(mesh: AbstractMesh, geo: S.Geometry | None = None) -> S.Geometry:
    g = S.geometry(mesh, None if geo is None else geo.procs)
    if geo is not None and g.n != geo.n:
        raise ValueError(f"shard_map over a mesh of {g.n} devices run on {geo.n}")
    return g


def _shard_map_program(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType], *,
                       mesh: Mesh | AbstractMesh, in_specs: tuple[P, ...],
                       out_specs: tuple[P, ...], jaxpr: Jaxpr, check_vma: bool,
                       newly_manual_axes: frozenset[Any]) -> list[S.Dist]:
    """Each argument laid out by its in_spec, the body run on every device's
    block, each result's blocks put together by its out_spec."""
    mesh = _abstract(mesh)
    g = _geometry(mesh, geo)
    blocks = [enter_block(x, spec, inner, mesh, g)
              for x, spec, inner in zip(args, in_specs, jaxpr.in_avals)]
    outs = S.run_jaxpr(jaxpr, jaxpr.consts, blocks, g)
    return [leave_block(o, a, spec, mesh, g)
            for o, a, spec in zip(outs, out_avals, out_specs)]


def enter_block(x: S.Dist, spec: P, inner: ArrayType, mesh: AbstractMesh, g: S.Geometry
                ) -> S.Dist:
    """An argument laid out by its in_spec (plus its own split over the other
    axes): every device's block, typed by the block type ``inner``."""
    laid = x.aval.update(sharding=NamedSharding(mesh, merged_spec(spec, inner, x.aval.ndim)))
    moved = S.parts_of(x.aval) != S.parts_of(laid) or bool(S.unreduced_of(x.aval))
    return S.Dist(inner, (S.reshard(x, laid, g) if moved else x).bufs)


def leave_block(o: S.Dist, aval: ArrayType, spec: P, mesh: AbstractMesh, g: S.Geometry
                ) -> S.Dist:
    """A result's blocks read as the global value split by its out_spec; over
    Auto axes the result type is not split, so its blocks are gathered."""
    laid = aval.update(sharding=NamedSharding(mesh, merged_spec(spec, o.aval, aval.ndim)))
    same = S.parts_of(laid) == S.parts_of(aval) and S.unreduced_of(laid) == \
        S.unreduced_of(aval)
    return S.Dist(aval, o.bufs) if same else S.reshard(S.Dist(laid, o.bufs), aval, g)


def _shard_map_impl(*args: np.ndarray, **params: Any) -> list[np.ndarray]:
    """Outside a mesh evaluation (no operand placed): split the operands
    into blocks, run per device, assemble."""
    mesh = _abstract(params["mesh"])
    g = S.geometry(mesh)
    # The operands' types: their shapes, the dtypes (and ref-ness) of the
    # blocks the body takes (a key's value does not tell its key dtype).
    avals = [(RefType if type(b) is RefType else ArrayType)(np.shape(a), b.dtype, b.weak_type)
             for a, b in zip(args, params["jaxpr"].in_avals)]
    out_avals = _shard_map_type(*avals, **params)
    # A ref's blocks are views of its buffer: the body writes it in place.
    dists = [S.Dist(aval, S.split_value(a, aval, g)) if type(aval) is RefType
             else S.uniform(np.asarray(a), aval, g) for a, aval in zip(args, avals)]
    outs = _shard_map_program(g, dists, out_avals, **params)
    return [np.asarray(S.assemble(o, g)) for o in outs]


class _Axes:
    """A frozenset of axes printed as JAX prints it (sorted)."""

    def __init__(self, axes: frozenset[Any]) -> None:
        self.axes = axes

    def __repr__(self) -> str:
        return "frozenset({" + ", ".join(repr(a) for a in sorted(self.axes, key=str)) + "})"


def _pp_shard_map(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params["newly_manual_axes"] = _Axes(params["newly_manual_axes"])
    return pp_eqn_default(eqn, ctx, params)


def _shard_map_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: Jaxpr,
                   in_specs: tuple[P, ...], out_specs: tuple[P, ...], **params: Any
                   ) -> tuple[list[Any], list[Any]]:
    nonzero = tuple(type(t) is not Zero for t in tangents)
    n_out = len(jaxpr.outvars)
    with _inside(params["mesh"], params["check_vma"], params["newly_manual_axes"]):
        recorded = _recorded_body(jaxpr, nonzero, n_out)
        new, out_nonzero = (ad.jvp_jaxpr(jaxpr, nonzero) if recorded is None
                            else (recorded.jaxpr, recorded.out_nonzero))
    n_sres = 0 if recorded is None else recorded.n_sres
    mesh = _abstract(params["mesh"])
    sres_specs = tuple(_stacked_spec(v.aval, mesh, params["check_vma"],
                                     params["newly_manual_axes"])
                       for v in new.outvars[n_out:n_out + n_sres])
    # Tangents cross the boundary with their tangent specs (a hi type's
    # spec gives the spec of its tangent type; a PartitionSpec is its own).
    t_specs = tuple(s.to_tangent_spec() for s, nz in zip(in_specs, nonzero) if nz)
    t_out_specs = tuple(s.to_tangent_spec() for s, nz in zip(out_specs, out_nonzero) if nz)
    operands = [*primals, *(t for t in tangents if type(t) is not Zero)]
    outs = shard_map_p.bind(*operands, jaxpr=new, in_specs=in_specs + t_specs,
                            out_specs=out_specs + sres_specs + t_out_specs, **params)
    if recorded is not None and n_sres:
        ad.fill_call_entry(ad.filled_entries(recorded.template, outs[n_out:n_out + n_sres]))
    it = iter(outs[n_out + n_sres:])
    t_outs = [next(it) if nz else Zero(canonical_aval_of(o).tangent_type())
              for nz, o in zip(out_nonzero, outs[:n_out])]
    return list(outs[:n_out]), t_outs


def _recorded_body(jaxpr: Jaxpr, nonzero: tuple[bool, ...], n_out: int
                   ) -> ad.StructuredJVP | None:
    """On the legacy linearize path (a JVP recording structured residuals),
    the body's JVP returning its structured residuals after the primal
    outputs, each ready to leave the map as a block of the leading axis
    (``_stackable``); None off that path."""
    if not ad.recording_structured():
        return None
    sj = ad.structured_jvp_jaxpr(jaxpr, nonzero)
    if not sj.n_sres:
        return sj
    body, n_sres = sj.jaxpr, sj.n_sres

    def stacked(*xs: Any) -> list[Any]:
        outs = eval_jaxpr(body, body.consts, *xs)
        return [*outs[:n_out], *(_stackable(x) for x in outs[n_out:n_out + n_sres]),
                *outs[n_out + n_sres:]]

    new, _ = trace_to_jaxpr(stacked, [v.aval for v in body.invars])
    return ad.StructuredJVP(new, sj.out_nonzero, sj.template, n_sres)


def _stackable(x: Any) -> Any:
    """A structured residual value leaving a map: rank 0 becomes shape (1,)."""
    return x if canonical_aval_of(x).shape else broadcast_in_dim(x, (1,), ())


def _shard_map_transpose(cts: list[Any], *args: Any, jaxpr: Jaxpr, in_specs: tuple[P, ...],
                         out_specs: tuple[P, ...], **params: Any) -> list[Any]:
    """The body's backward pass, as a shard_map: defined operands and nonzero
    cotangents go in by their specs, the undefined operands' cotangents come
    out by theirs."""
    undefined = [type(a) is UndefinedPrimal for a in args]
    defined = [a for a, u in zip(args, undefined) if not u]
    ct_nonzero = [type(c) is not Zero for c in cts]
    backward = ad.call_backward(jaxpr, jaxpr.consts, undefined, ct_nonzero)
    n_ct = sum(ct_nonzero)

    def transposed(*xs: Any) -> list[Any]:
        # Cotangents come first, then the defined operands (JAX's order).
        cts_in, rest = xs[:n_ct], xs[n_ct:]
        return [instantiate(c) for c, u in zip(backward(*rest, *cts_in), undefined) if u]

    local_in = [v.aval.ct_type() for v, nz in zip(jaxpr.outvars, ct_nonzero) if nz] + \
        [v.aval for v, u in zip(jaxpr.invars, undefined) if not u]
    # The body's backward-pass logs leave the map as its structured residuals do.
    logged = ad.LoggedBody(lambda logs: tree_util.tree_map(_stackable, logs))
    mesh, check_vma, manual = params["mesh"], params["check_vma"], params["newly_manual_axes"]
    with _inside(mesh, check_vma, manual):
        t_jaxpr, _ = trace_to_jaxpr(logged.wrap(transposed), local_in)
    log_avals = t_jaxpr.out_avals[len(t_jaxpr.outvars) - logged.num_leaves:]
    # Cotangents cross the boundary with their cotangent specs: unreduced and
    # reduced swap (varying and invariant are their own).
    new_in = tuple(s.to_ct_spec() for s, nz in zip(out_specs, ct_nonzero) if nz) + \
        tuple(s for s, u in zip(in_specs, undefined) if not u)
    new_out = tuple(s.to_ct_spec() for s, u in zip(in_specs, undefined) if u) + \
        tuple(_stacked_spec(a, _abstract(mesh), check_vma, manual) for a in log_avals)
    outs, logs = logged.split(shard_map_p.bind(
        *(c for c in cts if type(c) is not Zero), *defined, jaxpr=t_jaxpr, in_specs=new_in,
        out_specs=new_out, **params))
    ad.add_logs(logs, "the transpose rule for 'shard_map'")
    it = iter(outs)
    return [next(it) if u else None for u in undefined]


def _shard_map_batch(axis: AxisData, args: list[Any], dims: list[Any], *, jaxpr: Jaxpr,
                     in_specs: tuple[P, ...], out_specs: tuple[P, ...], **params: Any
                     ) -> tuple[list[Any], list[Any]]:
    """vmap of shard_map: batched operands carry their batch axis in front,
    unsplit; every array result is batched in front. A hi value keeps its
    mapping spec: batched, its spec adds the batch axis, unsplit, to each
    component the mapping adds it to (``BatchedHiPspec``)."""
    moved = [x if d is None or is_high(a) else moveaxis(x, d, 0)
             for x, a, d in zip(args, jaxpr.in_avals, dims)]
    new_dims = [None if d is None else d if is_high(a) else 0
                for a, d in zip(jaxpr.in_avals, dims)]
    hi_out = [is_high(a) for a in jaxpr.out_avals]
    with _inside(params["mesh"], params["check_vma"], params["newly_manual_axes"]):
        found = batching.batch_jaxpr(jaxpr, axis, new_dims)[1] if any(hi_out) else \
            [None] * len(hi_out)
        wanted = [f if h else 0 for h, f in zip(hi_out, found)]
        new, _ = batching.batch_jaxpr(jaxpr, axis, new_dims, wanted)
    specs = tuple(_batched_spec(axis, s, a, d) for s, a, d in zip(in_specs, jaxpr.in_avals,
                                                                  new_dims))
    o_specs = tuple(_batched_spec(axis, s, a, d) for s, a, d in zip(out_specs, jaxpr.out_avals,
                                                                    wanted))
    outs = shard_map_p.bind(*moved, jaxpr=new, in_specs=specs, out_specs=o_specs, **params)
    return list(outs), wanted


def _batched_spec(axis: AxisData, spec: Any, block: Any, d: Any) -> Any:
    """The spec of a value batched at ``d``: an array's gains an unsplit
    leading entry, a hi value's adds the batch axis where its mapping does."""
    if d is None:
        return spec
    if is_high(block):
        return HA.BatchedHiPspec(spec, block, axis.size, d)
    return P(None, *spec.partitions, unreduced=spec.unreduced, reduced=spec.reduced)


def manual_mesh(mesh: AbstractMesh, manual: frozenset[Any]) -> AbstractMesh:
    """``mesh`` as seen inside the map: its manual axes of type Manual."""
    return mesh.update(axis_types=tuple(AxisType.Manual if n in manual else t
                                        for n, t in zip(mesh.axis_names, mesh.axis_types)))


@contextmanager
def _inside(mesh: Mesh | AbstractMesh, check_vma: bool, manual: frozenset[Any] | None = None
            ) -> Iterator[None]:
    """The context a shard_map body is traced in: its manual axes bound as
    named axes, the abstract mesh with them Manual."""
    mesh = _abstract(mesh)
    axes = frozenset(mesh.axis_names) if manual is None else manual
    frames = [(n, s) for n, s in zip(mesh.axis_names, mesh.axis_sizes) if n in axes]
    with use_abstract_mesh(manual_mesh(mesh, axes)), manual_context(check_vma):
        with _axis_env(frames, extend_axis_env):
            yield


@contextmanager
def _axis_env(frames: list[tuple[Any, int]], extend: Any) -> Iterator[None]:
    if not frames:
        yield
        return
    (name, size), rest = frames[0], frames[1:]
    with extend(name, size), _axis_env(rest, extend):
        yield


__all__ = ["global_aval", "local_aval", "shard_map_p"]


# ------------------------------------------------------- linearize (direct)


def _residual_spec(aval: ArrayType, mesh: AbstractMesh) -> P:
    """A residual leaves the primal shard_map and enters the tangent one
    split along its leading dim over the axes it varies along (each device
    gets its own block back); invariant residuals are replicated."""
    if not aval.vma:
        return P()
    axes = _ordered(aval.vma, mesh)
    return P(axes[0] if len(axes) == 1 else axes)


def _stacked_spec(aval: ArrayType, mesh: AbstractMesh, check_vma: bool,
                  manual: frozenset[Any]) -> P:
    """A structured residual leaves the map with each device's value a block
    along the leading dim: over the axes it varies along, or every manual
    axis when variance is not tracked."""
    axes = _ordered(aval.vma if check_vma else manual, mesh)
    if not axes:
        return P()
    return P(axes[0] if len(axes) == 1 else axes)


def _shard_map_linearize(trace: Any, primals: list[Any], tangents: list[Any], *,
                         jaxpr: Jaxpr, in_specs: tuple[P, ...], out_specs: tuple[P, ...],
                         **params: Any) -> tuple[list[Any], list[Any]]:
    """A primal shard_map returning the primal outputs and the residuals, and
    a tangent shard_map reading them (operands that are residuals are passed
    from outside with their in_specs; rank-0 varying residuals travel as
    shape (1,))."""
    mesh = _abstract(params["mesh"])
    differentiate = [type(t) is not Zero for t in tangents]
    n_out = len(jaxpr.outvars)
    found: dict[str, Any] = {}

    def primal_fun(*xs: Any) -> list[Any]:
        lin = ad.direct_linearize(lambda *a: _eval(jaxpr, a), xs, differentiate,
                                   named=False)
        inputs = {id(x): i for i, x in enumerate(xs)}
        traced = [(v, c) for v, c in zip(lin.jaxpr.constvars, lin.jaxpr.consts)
                  if isinstance(c, JitTracer)]
        found["lin"], found["traced"] = lin.jaxpr, traced
        found["forwarded"] = [inputs.get(id(c)) for _, c in traced]
        found["structured"], sres = ad.slotted_entries(lin.structured)
        found["n_sres"] = len(sres)
        return [*lin.primals_out, *(_stackable(x) for x in sres),
                *(_lift(c, params["check_vma"])
                  for (_, c), f in zip(traced, found["forwarded"]) if f is None)]

    with _inside(mesh, params["check_vma"], params["newly_manual_axes"]):
        primal_jaxpr, _ = trace_to_jaxpr(primal_fun, list(jaxpr.in_avals))
    primal_jaxpr = dce_jaxpr(primal_jaxpr)
    res_avals = primal_jaxpr.out_avals[n_out:]
    n_sres = found["n_sres"]
    sres_specs = tuple(_stacked_spec(a, mesh, params["check_vma"], params["newly_manual_axes"])
                       for a in res_avals[:n_sres])
    # Without variance tracking every residual may differ across the manual
    # axes: each leaves the map stacked over all of them.
    res_specs = sres_specs + tuple(
        _residual_spec(a, mesh) if params["check_vma"]
        else _stacked_spec(a, mesh, False, params["newly_manual_axes"])
        for a in res_avals[n_sres:])
    with set_current_trace(trace.parent):
        outs = shard_map_p.bind(*primals, jaxpr=primal_jaxpr, in_specs=in_specs,
                                out_specs=out_specs + res_specs, **params)
    if n_sres:
        ad.fill_call_entry(ad.filled_entries(found["structured"], outs[n_out:n_out + n_sres]))
    computed = iter(zip(outs[n_out + n_sres:], res_specs[n_sres:]))
    residuals, specs = [], []
    for f in found["forwarded"]:
        if f is not None:
            residuals.append(primals[f])
            specs.append(in_specs[f])
        else:
            r, s = next(computed)
            residuals.append(r)
            specs.append(s)
    lin, traced = found["lin"], found["traced"]
    traced_ids = {id(v) for v, _ in traced}
    kept = [(v, c) for v, c in zip(lin.constvars, lin.consts) if id(v) not in traced_ids]
    res_vars = [v for v, _ in traced]
    tangent_jaxpr = _unlift_inputs(
        Jaxpr([v for v, _ in kept], res_vars + lin.invars, lin.outvars, lin.eqns,
              consts=[c for _, c in kept]),
        [f is None and not v.aval.shape and (bool(v.aval.vma) or not params["check_vma"])
         for v, f in zip(res_vars, found["forwarded"])], mesh, params["check_vma"])
    t_specs = tuple(s.to_tangent_spec() for s, d in zip(in_specs, differentiate) if d)
    t_in = [t for t in tangents if type(t) is not Zero]
    t_outs = trace.tangent_trace.process_primitive(
        shard_map_p, [*residuals, *t_in],
        dict(params, jaxpr=tangent_jaxpr, in_specs=tuple(specs) + t_specs,
             out_specs=tuple(s.to_tangent_spec() for s in out_specs)))
    return list(outs[:n_out]), list(t_outs)


def _eval(jaxpr: Jaxpr, args: Sequence[Any]) -> list[Any]:
    return eval_jaxpr(jaxpr, jaxpr.consts, *args)


def _lift(x: Any, check_vma: bool = True) -> Any:
    """A rank-0 varying residual (any rank-0 one when variance is not
    tracked) as shape (1,): out_specs split dim 0."""
    aval = canonical_aval_of(x)
    if aval.shape or (check_vma and not aval.vma):
        return x
    return broadcast_in_dim(x, (1,), ())


def _unlift_inputs(jaxpr: Jaxpr, lifted: list[bool], mesh: AbstractMesh, check_vma: bool
                   ) -> Jaxpr:
    """``jaxpr`` taking shape (1,) for the lifted rank-0 residuals."""
    if not any(lifted):
        return jaxpr
    n = len(lifted)
    avals = [v.aval.update(shape=(1,)) if lift else v.aval
             for v, lift in zip(jaxpr.invars[:n], lifted)] + \
        [v.aval for v in jaxpr.invars[n:]]

    def body(*xs: Any) -> list[Any]:
        fixed = [reshape(x, ()) if i < n and lifted[i] else x for i, x in enumerate(xs)]
        return _eval(jaxpr, fixed)

    with _inside(mesh, check_vma):
        out, _ = trace_to_jaxpr(body, avals)
    return out


def _shard_map_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                            ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    """The legacy linearize path's split: a known map returning the known
    outputs and the residuals, each leaving as the direct path's residuals
    do (rank-0 varying ones as shape (1,)), and an unknown map reading
    them."""
    params = eqn.params
    mesh, check_vma = _abstract(params["mesh"]), params["check_vma"]
    manual = params["newly_manual_axes"]
    split = ad.partial_eval_jaxpr(params["jaxpr"], ins_unknown)
    n_known_out = len(split.known.outvars) - split.num_res
    known_body = split.known
    lifted = [not v.aval.shape and (bool(v.aval.vma) or not check_vma)
              for v in known_body.outvars[n_known_out:]]
    if any(lifted):
        def lifting(*xs: Any) -> list[Any]:
            outs = _eval(split.known, xs)
            return [*outs[:n_known_out],
                    *(_lift(o, check_vma) for o in outs[n_known_out:])]
        with _inside(mesh, check_vma, manual):
            known_body, _ = trace_to_jaxpr(lifting, list(split.known.in_avals))
    res_avals = known_body.out_avals[n_known_out:]
    res_specs = tuple(_residual_spec(a, mesh) if check_vma
                      else _stacked_spec(a, mesh, False, manual) for a in res_avals)
    unknown_body = _unlift_inputs(split.unknown, lifted, mesh, check_vma)
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    kept_out = [not u for u in split.out_unknowns]
    known_params = dict(params, jaxpr=known_body,
                        in_specs=tuple(s for s, u in zip(in_specs, ins_unknown) if not u),
                        out_specs=tuple(s for s, k in zip(out_specs, kept_out) if k)
                        + res_specs)
    known_in = [a for a, u in zip(eqn.invars, ins_unknown) if not u]
    res_outer = _shard_map_type(*(canonical_aval_of(a) if not isinstance(a, Var) else a.aval
                                  for a in known_in), **known_params)[n_known_out:]
    res_vars = [Var(a) for a in res_outer]
    known = eqn.replace(
        invars=known_in,
        outvars=[*(v for v, k in zip(eqn.outvars, kept_out) if k), *res_vars],
        params=known_params)
    unknown = eqn.replace(
        invars=[*res_vars, *(a for a, u in zip(eqn.invars, ins_unknown) if u)],
        outvars=[v for v, u in zip(eqn.outvars, split.out_unknowns) if u],
        params=dict(params, jaxpr=unknown_body,
                    in_specs=res_specs + tuple(s for s, u in zip(in_specs, ins_unknown) if u),
                    out_specs=tuple(s for s, u in zip(out_specs, split.out_unknowns) if u)))
    return known, unknown, list(split.out_unknowns)


# ============================================================ declaration
#
# Last in the module, after the rules it names. shard_map takes refs under
# jit (each device gets its block as a ref).

shard_map_p: Primitive = declare(
    "shard_map", lowering=LC.shard_map,
    typing=_shard_map_type, impl=_shard_map_impl, multiple_results=True,
    pp_rule=_pp_shard_map, jvp=_shard_map_jvp, transpose=_shard_map_transpose,
    batch=_shard_map_batch, sharding=_shard_map_sharding, vma_rule=VMA_FROM_TYPING,
    body_context=lambda params: _inside(params["mesh"], params["check_vma"],
                                        params["newly_manual_axes"]),
    per_device=_shard_map_program, linearize=_shard_map_linearize,
    partial_eval=_shard_map_partial_eval, accepts_refs=True,
    effects_rule=call_effects, to_lojax=_shard_map_to_lojax,
    doc="Per-device programming over manual mesh axes.")
