"""Builders for the ``sharding`` sections of primitives (SPEC.md section 14).

A sharding section is ``rule(*avals, **params) -> [NamedSharding | None]``,
one entry per output; ``spec._src.core.interpreter._typed`` calls it only when some
operand's type has a sharding. Each builder here splits JAX's rule in two,
as JAX does: a *partition* rule (which mesh axes split each output
dimension) and an *unreduced/reduced* rule (which mesh axes the output is
unreduced or reduced over). ``section`` composes them: it finds the mesh,
builds the output spec, and turns a mesh axis named by two output
dimensions into JAX's "illegally sharded result" ShardingTypeError.

An operand whose type has no sharding (a NumPy constant, a Python scalar)
counts as replicated over the other operands' mesh.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spec._src.core.errors import ShardingTypeError
from spec._src.core.sharding import (
    AbstractMesh,
    AxisType,
    DuplicateSpecError,
    Mesh,
    NamedSharding,
    P,
    UnreducedKind,
    get_abstract_mesh,
)
from spec._src.core.types import ArrayType
from spec._src.core.registry import REGISTRY

Parts = tuple[Any, ...]
Axes = frozenset[Any]
UR = tuple[Axes, Axes, UnreducedKind | None]
PartsRule = Callable[..., list[Parts]]
URRule = Callable[..., UR]
ShardingRule = Callable[..., list[NamedSharding | None]]

_NONE: Axes = frozenset()


# ---------------------------------------------------------------- operands


def mesh_of(avals: Sequence[ArrayType]) -> AbstractMesh:
    """The operands' common mesh (the mesh in context when none has one)."""
    mesh: AbstractMesh | None = None
    for a in avals:
        s = a.sharding
        if s is None or s.mesh.empty:
            continue
        if mesh is not None and mesh != s.mesh:
            raise ValueError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and"
                             f" another mesh: {s.mesh}")
        mesh = s.mesh
    return get_abstract_mesh() if mesh is None else mesh


def _operands_or_param_mesh(avals: Sequence[ArrayType], params: dict[str, Any]
                            ) -> AbstractMesh:
    """The operands' mesh; without one, the context's, except that an output
    sharding given on the context's mesh with other axis types names the
    view the equation was typed under (inside ``auto_axes``, re-checked by
    check_jaxpr outside it)."""
    if any(a.sharding is not None and not a.sharding.mesh.empty for a in avals):
        return mesh_of(avals)
    context = get_abstract_mesh()
    for key in ("sharding", "out_sharding"):
        s = params.get(key)
        if isinstance(s, NamedSharding) and not context.empty:
            given = abstract(s).mesh
            if isinstance(given, AbstractMesh) and (given.axis_names, given.axis_sizes) == (
                    context.axis_names, context.axis_sizes):
                return given
    return context


def parts(aval: ArrayType) -> Parts:
    """One partition entry per dimension (all None for an unsharded type)."""
    if aval.sharding is None:
        return (None,) * aval.ndim
    ps: Parts = aval.sharding.spec.partitions
    return ps + (None,) * (aval.ndim - len(ps))


def getu(aval: ArrayType) -> Axes:
    return _NONE if aval.sharding is None else frozenset(aval.sharding.spec.unreduced)


def getu_kind(aval: ArrayType) -> UnreducedKind | None:
    return None if aval.sharding is None else aval.sharding.spec.unreduced_kind


def getr(aval: ArrayType) -> Axes:
    return _NONE if aval.sharding is None else frozenset(aval.sharding.spec.reduced)


def abstract(sharding: Any) -> NamedSharding:
    """A sharding param (concrete or abstract mesh) as an abstract-mesh sharding."""
    if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, Mesh):
        return NamedSharding(sharding.mesh.abstract_mesh, sharding.spec)
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"expected a NamedSharding for the output sharding, got {sharding!r}")
    return sharding


def param_parts(sharding: NamedSharding, ndim: int) -> Parts:
    ps: Parts = sharding.spec.partitions
    return ps + (None,) * (ndim - len(ps))


def _flat(entries: Parts) -> Axes:
    out: set[Any] = set()
    for e in entries:
        if e is None:
            continue
        out.update(e if isinstance(e, tuple) else (e,))
    return frozenset(out)


# ------------------------------------------------------------- composition


class _Shown:
    """Stands in for a NamedSharding when printing a type whose spec is illegal."""

    def __init__(self, mesh: AbstractMesh, spec: P) -> None:
        self.mesh = mesh
        self.spec = spec


def _illegal(name: str, avals: Sequence[ArrayType], params: dict[str, Any], mesh: AbstractMesh,
             spec: P, index: int) -> ShardingTypeError:
    # Imported here: the registry imports the interpreter, which imports rule modules' kit users.
    out = REGISTRY[name].typing(*avals, **params)[index]
    shown = ArrayType(out.shape, out.dtype, sharding=_Shown(mesh, spec))
    ins = ", ".join(a.str_short(True) for a in avals)
    return ShardingTypeError(f"{name} operation with inputs: {ins} produces an illegally"
                             f" sharded result: {shown.str_short(True)}")


def show(aval: ArrayType) -> str:
    """``str(aval)``, also for unreduced/reduced specs (ArrayType's own
    printing iterates the spec, which P refuses when it has such axes)."""
    s = aval.sharding
    if s is None or not (s.spec.unreduced or s.spec.reduced):
        return str(aval)
    bare = aval.update(sharding=_Shown(s.mesh, P(*s.spec.partitions)))
    return str(bare) + aval._suffix()


def no_ur(name: str) -> URRule:
    """JAX's default: primitives without an unreduced/reduced rule refuse such operands."""
    def rule(*avals: ArrayType, **params: Any) -> UR:
        if any(getu(a) or getr(a) for a in avals if isinstance(a, ArrayType)):
            raise NotImplementedError(
                f"unreduced/reduced rule for {name} is not implemented. Please file an issue"
                " at https://github.com/jax-ml/jax/issues")
        return _NONE, _NONE, None
    return rule


def section(name: str, parts_rule: PartsRule, ur_rule: URRule | None = None, *,
            out_ndims: Callable[..., list[int]] | None = None) -> ShardingRule:
    """The sharding section of primitive ``name``: ``parts_rule(mesh, *avals, **params)``
    gives each output's partitions, ``ur_rule(*avals, **params)`` its unreduced and
    reduced axes (all outputs share them)."""
    ur = no_ur(name) if ur_rule is None else ur_rule

    def rule(*avals: ArrayType, **params: Any) -> list[NamedSharding | None]:
        mesh = _operands_or_param_mesh(avals, params)
        if AxisType.Explicit not in mesh.axis_types:
            # Auto/manual meshes carry no shardings in types: replicated outputs.
            outs = REGISTRY[name].typing(*avals, **params)
            return [NamedSharding(mesh, P(*(None,) * o.ndim)) for o in outs]
        out_parts = parts_rule(mesh, *avals, **params)
        unreduced, reduced, kind = ur(*avals, **params)
        result: list[NamedSharding | None] = []
        for i, ps in enumerate(out_parts):
            spec = P(*ps, unreduced=unreduced, reduced=reduced, unreduced_kind=kind)
            try:
                result.append(NamedSharding(mesh, spec))
            except DuplicateSpecError as e:
                raise _illegal(name, avals, params, mesh, spec, i) from e
        return result
    return rule


# ------------------------------------------------------- partition rules


def same_as(index: int = 0, n_out: int = 1) -> PartsRule:
    """Every output is partitioned as operand ``index`` (unary ops, clamp, rev...)."""
    def rule(mesh: AbstractMesh, *avals: ArrayType, **params: Any) -> list[Parts]:
        return [parts(avals[index])] * n_out
    return rule


def broadcast_parts(name: str, avals: Sequence[ArrayType]) -> Parts:
    """JAX's zipping of n-ary elementwise operands: rank-0 operands are left
    out; per dimension the entries must agree, where a None entry on a size-1
    dimension does not count, and a None entry yields to a named one; two
    different named entries are an error."""
    ranked = [a for a in avals if a.shape]
    if not ranked:
        return ()
    specs = [parts(a) for a in ranked]
    out: list[Any] = []
    for i in range(len(specs[0])):
        ss = [s[i] for s in specs]
        if all(s == ss[0] for s in ss[1:]):
            out.append(ss[0])
            continue
        live = [s for s, a in zip(ss, ranked) if not (a.shape[i] == 1 and s is None)]
        if not live:
            out.append(None)
            continue
        if all(s == live[0] for s in live[1:]):
            out.append(live[0])
            continue
        named = [s for s in ss if s is not None]
        if any(s != named[0] for s in named[1:]):
            shown = ", ".join(str(tuple(s)) for s in specs)
            raise ShardingTypeError(
                f"{name} got incompatible shardings for broadcasting: {shown}.")
        out.append(named[0])
    return tuple(out)


def broadcasting(name: str, n_out: int = 1) -> PartsRule:
    def rule(mesh: AbstractMesh, *avals: ArrayType, **params: Any) -> list[Parts]:
        return [broadcast_parts(name, avals)] * n_out
    return rule


# ------------------------------------------------ unreduced/reduced rules


def nary_reduced(avals: Sequence[ArrayType]) -> Axes:
    """The reduced axes of an n-ary op's output: every reduced operand reduced
    over the same axes, which no operand may leave replicated or shard."""
    reds = {r for a in avals if (r := getr(a))}
    if len(reds) > 1:
        raise ShardingTypeError(
            f"All inputs should be reduced across the same mesh axes. Got specs: {reds}")
    if not reds:
        return _NONE
    (red,) = reds
    mesh = mesh_of(avals)
    for a in avals:
        sharded = _flat(parts(a))
        replicated = frozenset(mesh.axis_names) - (sharded | getu(a) | getr(a))
        if replicated & red:
            raise ShardingTypeError(
                "Inputs cannot be replicated on the same axes that another input is reduced"
                f" on. Got input type: {show(a)} and reduced spec: {red}")
        if sharded & red:
            raise ShardingTypeError(
                "Inputs cannot be sharded/varying on the same axes that another input is"
                " reduced on. Reshard the input which is reduced to be sharded on the mesh"
                " axes it is reduced on via `jax.sharding.reshard(inp, jax.P(...))`. Got"
                f" input type: {show(a)} and reduced spec: {red}")
    return red


def nonlinear(name: str) -> URRule:
    """Elementwise ops that are not linear: an unreduced operand is an error
    (its partial sums cannot go through the op); reduced axes carry over."""
    def rule(*avals: ArrayType, **params: Any) -> UR:
        if len(avals) == 1:
            (a,) = avals
            if getu(a):
                raise ShardingTypeError(f"{name} is a non-linear operation and cannot accept"
                                        f" input that is unreduced. Got {show(a)}")
            return _NONE, getr(a), None
        red = nary_reduced(avals)
        if any(getu(a) for a in avals):
            raise ShardingTypeError(f"{name} is a non-linear operation and cannot accept inputs"
                                    " that are unreduced. Got ("
                                    + ", ".join(f"ShapedArray({show(a)})" for a in avals)
                                    + ")")
        return _NONE, red, None
    return rule


def linear_unary(*avals: ArrayType, **params: Any) -> UR:
    """neg and friends: unreduced (as a sum) and reduced axes carry over."""
    u = getu(avals[0])
    return u, getr(avals[0]), UnreducedKind.sum if u else None


def keeps(*avals: ArrayType, **params: Any) -> UR:
    """Structural ops on one operand: its unreduced axes (with their kind) and
    reduced axes carry over."""
    u = getu(avals[0])
    return u, getr(avals[0]), getu_kind(avals[0]) if u else None


def additive(name: str) -> URRule:
    """add/sub: both operands unreduced over the same axes, or neither."""
    def rule(*avals: ArrayType, **params: Any) -> UR:
        x, y = avals
        red = nary_reduced(avals)
        xu, yu = getu(x), getu(y)
        if xu and yu:
            if xu != yu:
                raise ShardingTypeError(f"lhs and rhs to `{name}` must be unreduced along the"
                                        f" same mesh axes. Got lhs={xu}, rhs={yu}")
            return xu, red, UnreducedKind.sum
        if xu or yu:
            lhs, rhs = ("lhs", "rhs") if xu else ("rhs", "lhs")
            raise ShardingTypeError(
                f"{lhs} is unreduced while {rhs} is not. `{name}` operation does not allow"
                f" this because there will be implicit communication. Please reduce {lhs} via"
                f" `reshard` before calling `{name}`.")
        return _NONE, red, None
    return rule


def _partial_product(red: Axes, u: Axes) -> UR:
    # When an unreduced operand meets one reduced over the same axes, the
    # output is unreduced there and no longer reduced.
    return (u, red - u if u else red, UnreducedKind.sum if u else None)


def multiplicative(*avals: ArrayType, **params: Any) -> UR:
    """mul is bilinear: at most one operand unreduced, the other reduced over its axes."""
    x, y = avals
    red = nary_reduced(avals)
    xu, yu = getu(x), getu(y)
    if xu and yu:
        raise ShardingTypeError("lhs and rhs to `mul` cannot be unreduced since mul is"
                                f" bilinear. Got lhs={xu}, rhs={yu}")
    if xu and xu != getr(y):
        raise ShardingTypeError("RHS should be reduced along the same axes LHS is unreduced"
                                f" on. Got lhs={show(x)} and rhs={show(y)}")
    if yu and getr(x) != yu:
        raise ShardingTypeError("LHS should be reduced along the same axes RHS is unreduced"
                                f" on. Got lhs={show(x)} and rhs={show(y)}")
    return _partial_product(red, xu or yu)


def divisive(*avals: ArrayType, **params: Any) -> UR:
    """div is linear in its numerator only."""
    x, y = avals
    red = nary_reduced(avals)
    xu, yu = getu(x), getu(y)
    if yu:
        raise ValueError("The denominator cannot be unreduced passed to `div`. Got"
                         f" y=ShapedArray({show(y)})")
    if xu and xu != getr(y):
        raise ValueError("Denominator should be reduced along the same axes numerator is"
                         f" unreduced on. Got x=ShapedArray({show(x)}),"
                         f" y=ShapedArray({show(y)})")
    return _partial_product(red, xu)


# ------------------------------------------------------------- builders


def elementwise(name: str, *, ur: str = "nonlinear", n_out: int = 1) -> ShardingRule:
    """The sharding section of an n-ary elementwise primitive: operands zipped
    per dimension (``broadcast_parts``); ``ur`` names how unreduced operands
    are treated: "nonlinear" (refused), "linear" (neg: carried), "add",
    "mul", "div", or "none" (refused with NotImplementedError, as JAX for
    primitives without such a rule)."""
    ur_rules: dict[str, URRule] = {
        "nonlinear": nonlinear(name), "linear": linear_unary, "add": additive(name),
        "mul": multiplicative, "div": divisive, "none": no_ur(name), "keep": keeps,
    }
    return elementwise_rule(section(name, broadcasting(name, n_out), ur_rules[ur]))


# ------------------------------------------- placement over Auto axes
#
# On a mesh of Auto axes alone the types name no axis and the compiler
# places results: JAX's propagation keeps an operand's split through many
# operations. A sharding section may carry ``auto_placement(placed,
# out_shapes, params, sizes)``: from each operand's (shape, partitions, or
# None when it is not split) and the operands' mesh axis sizes, the
# partitions each result lies with (None: replicated). Eager evaluation
# reads it (spec._src.interpreters.spmd).

Placed = tuple[tuple[int, ...], Parts | None]
Sizes = Mapping[Any, int]  # the operands' mesh: each axis's size
AutoPlacement = Callable[[Sequence[Placed], Sequence[tuple[int, ...]], dict[str, Any], Sizes],
                         list[Parts | None]]


def auto_placed(rule: ShardingRule, placement: AutoPlacement) -> ShardingRule:
    """``rule``, marked with where its results lie over Auto axes."""
    rule.auto_placement = placement  # type: ignore[attr-defined]
    return rule


def as_split_operands(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                      params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """Results computed entry by entry from their operands' (or moved as
    they are: rev, cumulative reductions, reshard, slices) lie as the
    split operands lie, merged (``merged_split``); a dimension whose size
    changes (broadcast from size 1, cut) is whole."""
    return [merged_split([tuple(p if n == m else None for p, n, m in zip(ps, shape, out))
                          for shape, ps in placed if ps is not None and len(shape) == len(out)])
            for out in out_shapes]


def _axes_of(entry: Any) -> tuple[Any, ...]:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _agreed(entries: Sequence[Any]) -> tuple[Any, ...]:
    """One dimension's axes from its operands' entries, in order: a longer
    entry the axes so far begin refines them; where two disagree they keep
    their common leading axes, and no later entry refines them again."""
    axes: tuple[Any, ...] = ()
    grows = True
    for entry in entries:
        mine = _axes_of(entry)
        common = next((k for k, (a, b) in enumerate(zip(axes, mine)) if a != b),
                      min(len(axes), len(mine)))
        if common < min(len(axes), len(mine)):
            axes, grows = axes[:common], False
        elif grows and len(mine) > len(axes):
            axes = mine
    return axes


def merged_split(contributions: Sequence[Parts], longest_first: bool = True) -> Parts | None:
    """The result's split from its operands' splits of its dimensions, as
    JAX's propagation merges them: each dimension takes the axes its
    operands agree on (``_agreed``); an axis two dimensions would take
    stays with one of them, the other keeping only its axes before it: with
    the dimension that takes more axes (``longest_first``), then with the
    one an earlier operand put it on. None when no dimension is split."""
    if not contributions:
        return None
    wanted = [_agreed([ps[d] for ps in contributions]) for d in range(len(contributions[0]))]
    first: dict[Any, int] = {}
    for ps in contributions:
        for d, entry in enumerate(ps):
            for axis in _axes_of(entry):
                first.setdefault(axis, d)

    def owner(axis: Any) -> int:
        dims = [d for d, axes in enumerate(wanted) if axis in axes]
        return max(dims, key=lambda d: (len(wanted[d]) if longest_first else 0,
                                        d == first[axis], -d))

    def kept(d: int) -> tuple[Any, ...]:
        return _before(wanted[d], lambda axis: owner(axis) != d)

    return _entries([kept(d) for d in range(len(wanted))])


def _before(axes: tuple[Any, ...], stop: Callable[[Any], bool]) -> tuple[Any, ...]:
    """``axes`` up to the first one ``stop`` holds for."""
    return next((axes[:k] for k, a in enumerate(axes) if stop(a)), axes)


def _entries(per_dim: Sequence[tuple[Any, ...]]) -> Parts | None:
    """Partition entries (an axis, a tuple of axes, None) from each
    dimension's axes; None when none is split."""
    out = tuple(None if not axes else axes[0] if len(axes) == 1 else axes for axes in per_dim)
    return out if any(e is not None for e in out) else None


def elementwise_rule(rule: ShardingRule) -> ShardingRule:
    """``rule``, marked as the sharding section of a primitive whose results
    are computed entry by entry from its operands'."""
    return auto_placed(rule, as_split_operands)


def selected_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                       params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A two-way select_n lies as its operands in the compiled select's
    order (predicate, the case taken when true, the other), which decides
    where an axis two dimensions would take goes (``merged_split``)."""
    if len(placed) == 3:
        placed = [placed[0], placed[2], placed[1]]
    return as_split_operands(placed, out_shapes, params, sizes)


def dot_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                  params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A dot_general's result keeps each operand's split of its batch and
    free dimensions (merged, the left operand first); contracted splits
    are summed away."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    (lshape, lps), (rshape, rps) = placed[0], placed[1]
    lfree = [d for d in range(len(lshape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rshape)) if d not in rc and d not in rb]

    def spread(ps: Parts | None, batch: Sequence[int], free: Sequence[int], left: bool) -> Parts:
        if ps is None:
            return (None,) * len(out_shapes[0])
        mine = tuple(ps[d] for d in free)
        other = (None,) * (len(rfree) if left else len(lfree))
        return tuple(ps[d] for d in batch) + (mine + other if left else other + mine)

    # (the left operand's axes win over the right's, however many each takes)
    return [merged_split([spread(lps, lb, lfree, True), spread(rps, rb, rfree, False)],
                         longest_first=False)]


def kept_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                   params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """Results that lie as the first operand, also along the dimensions
    whose size changes where the axes divide the new extent evenly (pad,
    split, scatter)."""
    ps = placed[0][1]
    if ps is None:
        return [None] * len(out_shapes)
    return [_entries([_dividing(_axes_of(p), n, sizes) for p, n in zip(ps, out)])
            for out in out_shapes]


def _dividing(axes: tuple[Any, ...], n: int, sizes: Sizes) -> tuple[Any, ...]:
    """The leading ``axes`` that together divide ``n`` evenly."""
    count = next((k for k in range(len(axes), 0, -1)
                  if n % math.prod(sizes[a] for a in axes[:k]) == 0), 0)
    return axes[:count]


def stacked_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                      params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A stack lies as its split operands merge, the new dimension whole."""
    axis = params["axis"]
    return [merged_split([ps[:axis] + (None,) + ps[axis:]
                          for _, ps in placed if ps is not None])]


def gathered_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                       params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A gather keeps the operand's split of each dimension it takes whole
    (an offset dimension of the result) and the indices' split of their
    batch dimensions, merged so (``merged_split``); indexed dimensions are
    whole."""
    (shape, ps), (_, index_ps), dn = placed[0], placed[1], params["dimension_numbers"]
    ndim = len(out_shapes[0])
    from_operand: list[Any] = [None] * ndim
    if ps is not None:
        dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        carried = [d for d in range(len(shape)) if d not in dropped]
        for d, o in zip(carried, dn.offset_dims):
            if params["slice_sizes"][d] == shape[d]:
                from_operand[o] = ps[d]
    from_indices: list[Any] = [None] * ndim
    if index_ps is not None:
        batch = [o for o in range(ndim) if o not in dn.offset_dims]
        for o, p in zip(batch, index_ps[:-1]):
            from_indices[o] = p
    return [merged_split([tuple(from_operand), tuple(from_indices)], longest_first=False)]


def transposed_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                         params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A transpose's result lies as its operand, dimensions permuted."""
    ps = placed[0][1]
    return [None if ps is None else tuple(ps[i] for i in params["permutation"])]


def broadcast_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                        params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A broadcast's result keeps the operand's split on the dimensions it
    maps to without growing them; new and grown dimensions are whole."""
    shape, ps = placed[0]
    if ps is None:
        return [None]
    out: list[Any] = [None] * len(out_shapes[0])
    for i, d in enumerate(params["broadcast_dimensions"]):
        if shape[i] == out_shapes[0][d]:
            out[d] = ps[i]
    return [tuple(out)]


def squeezed_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                       params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A squeeze's result lies as its operand without the removed dimensions."""
    ps = placed[0][1]
    gone = {d % len(placed[0][0]) for d in params["dimensions"]}
    return [None if ps is None else tuple(p for i, p in enumerate(ps) if i not in gone)]


def concatenated_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                           params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A concatenation lies as its split operands when they all lie alike
    (along the joined dimension too); unsplit operands do not count."""
    split = {p[1] for p in placed if p[1] is not None}
    return [split.pop()] if len(split) == 1 else [None]


def sorted_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                     params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """Sort's results all lie alike: the other dimensions as its split
    operands merge there, the sorted one keeping the axes its operands
    agree on up to the first one those dimensions took. When every other
    dimension has size 1 nothing is split."""
    d, shape = params["dimension"], out_shapes[0]
    if all(n == 1 for i, n in enumerate(shape) if i != d):
        return [None] * len(out_shapes)
    split = [ps for _, ps in placed if ps is not None]
    across = merged_split([tuple(None if i == d else p for i, p in enumerate(ps))
                           for ps in split]) or (None,) * len(shape)
    taken = {a for p in across for a in _axes_of(p)}
    along = _before(_agreed([ps[d] for ps in split]), lambda a: a in taken)
    per_dim = [along if i == d else _axes_of(p) for i, p in enumerate(across)]
    return [_entries(per_dim)] * len(out_shapes)


# A reshape keeps the array's row-major order, so a split is read on the
# flat index k: a mesh axis of size s puts element k on coordinate
# (k // lo) % s, its run of strides [lo, hi = lo * s). A dimension of size n
# and stride t spans the strides [t, t * n); its axes, major first, split it
# from the top down. A result dimension keeps an axis whose run lies within
# its strides (lo a multiple of t) directly below the axes it keeps.

_Run = tuple[Any, int, int]  # (mesh axis, lo, hi)


def _flat_runs(shape: tuple[int, ...], ps: Parts, sizes: Sizes) -> list[_Run]:
    """The run of strides each axis of ``ps`` splits (an axis that does not
    divide its dimension, and those after it, split none; nor does an axis
    of size 1)."""
    runs: list[_Run] = []
    stride = 1
    for n, p in reversed(list(zip(shape, ps))):
        top = stride * n
        for axis in _axes_of(p):
            if sizes[axis] == 1:  # (splits nothing: JAX's result does not name it)
                continue
            if top % sizes[axis] or (top // sizes[axis]) % stride:
                break
            runs.append((axis, top // sizes[axis], top))
            top //= sizes[axis]
        stride *= n
    return runs


def _runs_placed(runs: Sequence[_Run], shape: tuple[int, ...]) -> Parts | None:
    """Each dimension's axes: the runs that stack from the top of its
    strides down, each within them (None where no dimension keeps one)."""
    below = {hi: (axis, lo) for axis, lo, hi in runs}
    per_dim: list[tuple[Any, ...]] = []
    stride = math.prod(shape)
    for n in shape:
        stride //= n
        top, axes = stride * n, []
        while top in below and below[top][1] % stride == 0:
            axis, top = below[top]
            axes.append(axis)
        per_dim.append(tuple(axes))
    return _entries(per_dim)


def reshaped_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                       params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A reshape keeps the mesh axes whose blocks of the flattened array are
    blocks of one result dimension (``_runs_placed``); the others are
    whole."""
    shape, ps = placed[0]
    if ps is None or 0 in shape:
        return [None]
    if params.get("dimensions") is not None:
        shape = tuple(shape[d] for d in params["dimensions"])
        ps = tuple(ps[d] for d in params["dimensions"])
    return [_runs_placed(_flat_runs(shape, ps, sizes), tuple(out_shapes[0]))]


def reduced_placement(placed: Sequence[Placed], out_shapes: Sequence[tuple[int, ...]],
                      params: dict[str, Any], sizes: Sizes) -> list[Parts | None]:
    """A reduction's results lie as its operand without the reduced
    dimensions (the splits of those are summed away)."""
    ps = placed[0][1]
    axes = set(params["axes"])
    if ps is None:
        return [None] * len(out_shapes)
    return [_entries([_axes_of(p) for i, p in enumerate(ps) if i not in axes])] * len(out_shapes)


def broadcast_shardings(*avals: ArrayType) -> NamedSharding | None:
    """The sharding of the common broadcast of ``avals`` (numpy-style rank
    promotion, then size-1 broadcasting), as jnp's implicit broadcasts give
    it to each broadcast operand; None when no operand is on a mesh."""
    on_mesh = [a for a in avals if a.sharding is not None and not a.sharding.mesh.empty]
    if not on_mesh:
        return None
    mesh = mesh_of(avals)
    ndim = max(a.ndim for a in avals)
    padded = [ArrayType((1,) * (ndim - a.ndim) + a.shape, a.dtype,
                        sharding=NamedSharding(mesh, P(*((None,) * (ndim - a.ndim) + parts(a)))))
              for a in avals]
    return NamedSharding(mesh, P(*broadcast_parts("broadcast_shardings", padded)))


def mesh_ordered(axes: Sequence[Any]) -> tuple[Any, ...]:
    """``axes`` in the order of the context mesh (JAX orders cast axes so)."""
    order = list(get_abstract_mesh().axis_names)
    return tuple(sorted(axes, key=lambda a: order.index(a) if a in order else len(order)))
