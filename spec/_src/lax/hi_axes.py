"""Moving, broadcasting, summing and selecting along the mapped axes of hi
values (SPEC.md, "Hi types", HT8).

A hi value's type is built from an element type by ``inc_rank`` along
mapping specs: a scan stacks along the type's ``leading_axis_spec()``, a
vmap maps along the spec the batch carries. A batched program sometimes
needs what a type does not say: two mapped axes trading places (scanning
over a batched hi value, stacking batched hi results), a value broadcast
along the batch (a carry that becomes batched) and the sum over it (the
broadcast's transpose), a per-example choice between values (a cond or
while_loop with a batched predicate). Each is found on the components:
each ``inc_rank`` inserts (at most) one axis into each component of
``lo_ty``, located by comparing the component shapes before and after. The
primitives ``hi_transpose``, ``hi_broadcast``, ``hi_sum`` and
``hi_select_n`` keep the hi types in traced programs; on components
(``to_lojax``) they are one ``transpose``, ``broadcast_in_dim`` or
``select_n`` per component, and for the sum a tree of the type's own
``vspace_add`` over halves of the axis. All four are linear in their hi
operands: their tangents are the same operation on the tangents (the
types' ``to_tangent_aval``; a plain-array tangent directly by the array
op); they transpose to the inverse reordering, to each other (broadcast and
sum) and to the per-example choice between the cotangent and zero. Each
works on ``full_type(elem, axes, view, outer)``: ``outer`` are the batch
axes of the vmaps around it, which map the viewed (tangent or cotangent)
type itself, so that vmap of a differentiated program batches them in
every view.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core.hitypes import (
    HiPspec,
    MappingSpec,
    is_high,
    lo_types,
    lower_value,
    raise_values,
)
from spec._src.core.interpreter import canonical_aval_of, not_applicable, trace_to_jaxpr
from spec._src.core.registry import declare, primitive
from spec._src.core.sharding import P
from spec._src.interpreters.ad_util import Zero, instantiate
from spec._src.interpreters.hi_lowering import eval_lowering

# One mapped axis: its size and the mapping spec it is mapped along.
Axis = tuple[int, Any]  # (the spec: a MappingSpec)

VIEWS = ("primal", "tangent", "ct")


def mapped_type(elem: Any, axes: Sequence[Axis]) -> Any:
    """``elem`` mapped along ``axes``, the first innermost."""
    ty = elem
    for size, spec in axes:
        ty = ty.inc_rank(size, spec)
    return ty


def _viewed(ty: Any, view: str) -> Any:
    if view == "primal" or not is_high(ty):
        return ty
    return ty.to_tangent_aval() if view == "tangent" else ty.to_ct_aval()


def full_type(elem: Any, axes: Sequence[Axis], view: str, outer: Sequence[Axis] = ()) -> Any:
    """The type the hi-axis primitives work on: ``elem`` mapped along
    ``axes``, seen as ``view`` (itself, its tangent or its cotangent type),
    then mapped along ``outer`` (the batch axes of vmaps around a tangent
    or cotangent program, which map the viewed type itself)."""
    return mapped_type(_viewed(mapped_type(elem, axes), view), outer)


def _shapes(ty: Any) -> list[tuple[int, ...]]:
    return [tuple(lo.shape) for lo in lo_types(ty)]


def _positions(before: Any, after: Any, size: int) -> list[int | None] | None:
    """Where ``after``'s components have the axis of ``size`` that
    ``before``'s lack (None: the component is not mapped), or None where a
    component's position is ambiguous (equal sizes side by side)."""
    b, a = _shapes(before), _shapes(after)
    if len(a) != len(b):
        return None
    out: list[int | None] = []
    for sb, sa in zip(b, a):
        if sa == sb:
            out.append(None)
            continue
        at = [p for p in range(len(sa)) if sa[p] == size and sa[:p] + sa[p + 1:] == sb]
        if len(at) != 1:
            return None
        out.append(at[0])
    return out


def _inserted_axes(ty: Any, size: int, spec: MappingSpec, view: str) -> list[int | None]:
    """For each component of ``view(ty)``: the axis mapping ``ty`` along
    ``spec`` inserts. The map is parametric in the size, so where the real
    size leaves a position ambiguous a size unlike every dimension decides."""
    before = _viewed(ty, view)
    found = _positions(before, _viewed(ty.inc_rank(size, spec), view), size)
    if found is None:
        probe = max((d for s in _shapes(before) for d in s), default=0) + size + 1
        found = _positions(before, _viewed(ty.inc_rank(probe, spec), view), probe)
    if found is None:
        raise NotImplementedError(
            f"mapping a value of type {ty.str_short(True)} along {spec!r} does not add one "
            "axis to each of its components (lo_ty), so its mapped axes cannot be reordered")
    return found


def _labels(elem: Any, axes: Sequence[Axis], view: str, outer: Sequence[Axis] = ()
            ) -> list[list[Any]]:
    """Each component's axes of ``full_type(elem, axes, view, outer)``,
    named: ``("e", i)`` for the element's own, ``k`` for the k-th of
    ``axes``, ``("o", k)`` for the k-th of ``outer``."""
    names: list[list[Any]] = [[("e", i) for i in range(len(s))]
                              for s in _shapes(_viewed(elem, view))]
    ty = elem
    for k, (size, spec) in enumerate(axes):
        for comp, at in zip(names, _inserted_axes(ty, size, spec, view)):
            if at is not None:
                comp.insert(at, k)
        ty = ty.inc_rank(size, spec)
    ty = _viewed(ty, view)
    for k, (size, spec) in enumerate(outer):
        for comp, at in zip(names, _inserted_axes(ty, size, spec, "primal")):
            if at is not None:
                comp.insert(at, ("o", k))
        ty = ty.inc_rank(size, spec)
    return names


def _permutations(elem: Any, axes: Sequence[Axis], order: Sequence[int], view: str,
                  outer: Sequence[Axis]) -> list[tuple[int, ...]]:
    """Per component, the transpose taking ``axes`` to their ``order``."""
    before = _labels(elem, axes, view, outer)
    after = _labels(elem, [axes[k] for k in order], view, outer)
    perms = []
    for b, a in zip(before, after):
        renamed = [order[x] if isinstance(x, int) else x for x in a]
        if sorted(map(str, renamed)) != sorted(map(str, b)):
            raise NotImplementedError(
                f"the components of {mapped_type(elem, axes).str_short(True)} are not mapped "
                f"along the same axes in the order {tuple(order)}, so its mapped axes cannot "
                "be reordered")
        perms.append(tuple(b.index(x) for x in renamed))
    return perms


def _transposed(x: Any, perm: tuple[int, ...]) -> Any:
    if perm == tuple(range(len(perm))):
        return x
    return primitive("transpose").bind(x, permutation=perm)


def _reordered(axes: Sequence[Axis], order: Sequence[int]) -> tuple[Axis, ...]:
    return tuple(axes[k] for k in order)


def _inverse(order: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(order)
    for i, k in enumerate(order):
        inv[k] = i
    return tuple(inv)


def _linear_view(view: str) -> str:
    """The view of a tangent of a value of ``view`` (a tangent or cotangent
    value, linear, is its own tangent)."""
    return "tangent" if view == "primal" else view


def _outer_axis(prim: str, axis: Any, x: Any, d: Any) -> Axis:
    """The batch axis of a vmap around a hi-axis primitive: one more outer
    mapped axis of its hi operand."""
    if not isinstance(d, MappingSpec):
        raise NotImplementedError(
            f"vmap of {prim} on a value of type {canonical_aval_of(x).str_short(True)} "
            f"batched at {d!r}: a hi value is batched along a mapping spec")
    return (axis.size, d)


def _one_more_outer_axis(prim: str) -> Callable[..., tuple[list[Any], list[Any]]]:
    """The batching rule of a one-operand hi-axis primitive: the batch axis is one more
    outer mapped axis, left in place."""
    def rule(axis_data: Any, args: list[Any], dims: list[Any], **params: Any
             ) -> tuple[list[Any], list[Any]]:
        (x,), (d,) = args, dims
        outer = (*params.pop("outer"), _outer_axis(prim, axis_data, x, d))
        return [primitive(prim).bind(x, **params, outer=outer)], [d]
    return rule


def reorder(x: Any, elem: Any, axes: Sequence[Axis], order: Sequence[int],
            view: str = "primal", outer: Sequence[Axis] = ()) -> Any:
    """``x`` (of type ``full_type(elem, axes, view, outer)``) with its
    mapped axes in the order ``order`` (axis ``order[i]`` of ``axes`` the
    i-th): a transpose for a plain array (a plain tangent type),
    ``hi_transpose`` for a hi value."""
    axes, order, outer = tuple(axes), tuple(order), tuple(outer)
    if order == tuple(range(len(order))):
        return x
    if type(x) is Zero:
        return Zero(full_type(elem, _reordered(axes, order), view, outer))
    if not is_high(full_type(elem, axes, view, outer)):
        (perm,) = _permutations(elem, axes, order, view, outer)
        return _transposed(x, perm)
    return hi_transpose_p.bind(x, elem=elem, axes=axes, order=order, view=view, outer=outer)


def _check_params(axes: Sequence[Axis], order: Sequence[int], view: str) -> None:
    if view not in VIEWS:
        raise TypeError(f"hi_transpose: view must be one of {VIEWS}; got {view!r}")
    if sorted(order) != list(range(len(axes))):
        raise TypeError(f"hi_transpose: order {tuple(order)!r} must be a permutation of the "
                        f"{len(axes)} mapped axes")


def _hi_transpose_type(x: Any, *, elem: Any, axes: tuple[Axis, ...], order: tuple[int, ...],
                       view: str, outer: tuple[Axis, ...]) -> list[Any]:
    _check_params(axes, order, view)
    want = full_type(elem, axes, view, outer)
    if x != want:
        raise TypeError(f"hi_transpose: the operand has type {x.str_short(True)}; "
                        f"{elem.str_short(True)} mapped along {axes!r} is "
                        f"{want.str_short(True)}")
    return [full_type(elem, _reordered(axes, order), view, outer)]


def _hi_transpose_impl(x: Any, **params: Any) -> list[Any]:
    # (eager operands are hi values, which bind hands to ``to_lojax``)
    raise TypeError(f"hi_transpose applies to hi values; got {type(x).__name__}")


def _hi_transpose_to_lojax(x: Any, *, elem: Any, axes: tuple[Axis, ...],
                           order: tuple[int, ...], view: str, outer: tuple[Axis, ...]) -> Any:
    """One transpose per component."""
    aval = full_type(elem, axes, view, outer)
    perms = _permutations(elem, axes, order, view, outer)
    los = [_transposed(lo, p) for lo, p in zip(lower_value(aval, x), perms)]
    return raise_values([full_type(elem, _reordered(axes, order), view, outer)], los)[0]


def _hi_transpose_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                      axes: tuple[Axis, ...], order: tuple[int, ...], view: str,
                      outer: tuple[Axis, ...]) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    out = hi_transpose_p.bind(x, elem=elem, axes=axes, order=order, view=view, outer=outer)
    return [out], [reorder(t, elem, axes, order, _linear_view(view), outer)]


def _hi_transpose_transpose(ct: Any, operand: Any, *, elem: Any, axes: tuple[Axis, ...],
                            order: tuple[int, ...], view: str, outer: tuple[Axis, ...]
                            ) -> list[Any]:
    """The reverse reordering of the cotangent."""
    if type(ct) is Zero:
        return [Zero(full_type(elem, axes, "ct", outer))]
    return [reorder(instantiate(ct), elem, _reordered(axes, order), _inverse(order), "ct",
                    outer)]


def _hi_sharding(*avals: Any, **params: Any) -> list[Any]:
    return [None]  # (a hi type's sharding is inside the type: its typing made it)


hi_transpose_p = declare(
    "hi_transpose", typing=_hi_transpose_type, impl=_hi_transpose_impl,
    jvp=_hi_transpose_jvp, transpose=_hi_transpose_transpose,
    batch=_one_more_outer_axis("hi_transpose"),
    sharding=_hi_sharding,
    lowering=not_applicable("its operand is a hi value, lowered to its components "
                            "(to_lojax: one transpose each) before a program is lowered"),
    to_lojax=_hi_transpose_to_lojax,
    doc="A hi value's mapped axes reordered (a vmap's batch axis and a scan's stacking "
        "axis): one transpose per component.")

# -------------------------------------------------------------- broadcasting


def _new_axis_at(elem: Any, axis: Axis, view: str, outer: Sequence[Axis]) -> list[int | None]:
    """Per component of ``full_type(elem, [axis], view, outer)``: where
    ``axis`` is (None: the component is not mapped along it)."""
    return [comp.index(0) if 0 in comp else None
            for comp in _labels(elem, [axis], view, outer)]


def broadcast(x: Any, elem: Any, axis: Axis, view: str = "primal",
              outer: Sequence[Axis] = ()) -> Any:
    """``x`` (of type ``full_type(elem, [], view, outer)``) broadcast along
    one more mapped axis: ``full_type(elem, [axis], view, outer)``; a plain
    array along the axis the mapping inserts, a hi value by
    ``hi_broadcast``."""
    outer = tuple(outer)
    out = full_type(elem, [axis], view, outer)
    if type(x) is Zero:
        return Zero(out)
    if not is_high(out):
        (at,) = _new_axis_at(elem, axis, view, outer)
        return x if at is None else _broadcast_lo(x, out, at)
    return hi_broadcast_p.bind(x, elem=elem, axis=axis, view=view, outer=outer)


def _broadcast_lo(x: Any, out: Any, at: int) -> Any:
    ndim = len(out.shape)
    dims = tuple(d for d in range(ndim) if d != at)
    return primitive("broadcast_in_dim").bind(x, shape=tuple(out.shape),
                                              broadcast_dimensions=dims,
                                              sharding=getattr(out, "sharding", None))


def _hi_broadcast_type(x: Any, *, elem: Any, axis: Axis, view: str, outer: tuple[Axis, ...]
                       ) -> list[Any]:
    _check_params([axis], [0], view)
    want = full_type(elem, [], view, outer)
    if x != want:
        raise TypeError(f"hi_broadcast: the operand has type {x.str_short(True)}; the "
                        f"element type is {want.str_short(True)}")
    return [full_type(elem, [axis], view, outer)]


def _hi_broadcast_impl(x: Any, **params: Any) -> list[Any]:
    # (eager operands are hi values, which bind hands to ``to_lojax``)
    raise TypeError(f"hi_broadcast applies to hi values; got {type(x).__name__}")


def _hi_broadcast_to_lojax(x: Any, *, elem: Any, axis: Axis, view: str,
                           outer: tuple[Axis, ...]) -> Any:
    """Each component broadcast along the axis the mapping inserts in it."""
    out = full_type(elem, [axis], view, outer)
    at = _new_axis_at(elem, axis, view, outer)
    los = [lo if a is None else _broadcast_lo(lo, ty, a) for lo, ty, a in
           zip(lower_value(full_type(elem, [], view, outer), x), lo_types(out), at)]
    return raise_values([out], los)[0]


def _hi_broadcast_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                      axis: Axis, view: str, outer: tuple[Axis, ...]
                      ) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    out = hi_broadcast_p.bind(x, elem=elem, axis=axis, view=view, outer=outer)
    return [out], [broadcast(t, elem, axis, _linear_view(view), outer)]


def _hi_broadcast_transpose(ct: Any, x: Any, *, elem: Any, axis: Axis, view: str,
                            outer: tuple[Axis, ...]) -> list[Any]:
    """The cotangent summed over the broadcast axis (``hi_sum``)."""
    if type(ct) is Zero:
        return [Zero(full_type(elem, [], "ct", outer))]
    return [mapped_sum(instantiate(ct), elem, axis, "ct", outer)]


hi_broadcast_p = declare(
    "hi_broadcast", typing=_hi_broadcast_type, impl=_hi_broadcast_impl,
    jvp=_hi_broadcast_jvp, batch=_one_more_outer_axis("hi_broadcast"),
    transpose=_hi_broadcast_transpose,
    sharding=_hi_sharding,
    lowering=not_applicable("its operand is a hi value, lowered to its components "
                            "(to_lojax: one broadcast_in_dim each) before a program is "
                            "lowered"),
    to_lojax=_hi_broadcast_to_lojax,
    doc="A hi value broadcast along one more mapped axis (a vmap's batch axis): each "
        "component broadcast along the axis the mapping inserts in it.")


# ------------------------------------------------- summing along a mapped axis


def mapped_sum(x: Any, elem: Any, axis: Axis, view: str = "ct",
               outer: Sequence[Axis] = ()) -> Any:
    """The sum of ``x`` (of type ``full_type(elem, [axis], view, outer)``)
    over its mapped ``axis``: a plain array by ``reduce_sum``, a hi value by
    ``hi_sum`` (the type's own ``vspace_add``)."""
    outer = tuple(outer)
    if type(x) is Zero:
        return Zero(full_type(elem, [], view, outer))
    if not is_high(full_type(elem, [axis], view, outer)):
        (at,) = _summed_axes(elem, axis, view, outer)
        return primitive("reduce_sum").bind(x, axes=(at,), out_sharding=None)
    return hi_sum_p.bind(x, elem=elem, axis=axis, view=view, outer=outer)


def _summed_axes(elem: Any, axis: Axis, view: str, outer: Sequence[Axis]) -> list[int]:
    at = _new_axis_at(elem, axis, view, outer)
    if any(a is None for a in at):
        raise NotImplementedError(
            f"summing values of type {full_type(elem, [axis], view, outer).str_short(True)} "
            f"over their axis mapped along {axis[1]!r}: a component is not mapped along it, "
            "so the sum is not the type's addition of its slices")
    return [a for a in at if a is not None]


def _hi_sum_type(x: Any, *, elem: Any, axis: Axis, view: str, outer: tuple[Axis, ...]
                 ) -> list[Any]:
    _check_params([axis], [0], view)
    want = full_type(elem, [axis], view, outer)
    if x != want:
        raise TypeError(f"hi_sum: the operand has type {x.str_short(True)}; "
                        f"{elem.str_short(True)} mapped along {axis!r} is "
                        f"{want.str_short(True)}")
    return [full_type(elem, [], view, outer)]


def _hi_sum_impl(x: Any, **params: Any) -> list[Any]:
    # (eager operands are hi values, which bind hands to ``to_lojax``)
    raise TypeError(f"hi_sum applies to hi values; got {type(x).__name__}")


def _slices(los: Sequence[Any], at: Sequence[int], start: int, stop: int) -> list[Any]:
    out = []
    for lo, a in zip(los, at):
        shape = canonical_aval_of(lo).shape
        begin = [0] * len(shape)
        begin[a] = start
        end = list(shape)
        end[a] = stop
        out.append(primitive("slice").bind(lo, start_indices=tuple(begin),
                                           limit_indices=tuple(end), strides=None))
    return out


def _added(ty: Any, x: Any, y: Any) -> Any:
    """``ty.vspace_add(x, y)`` on hi values given as their value classes:
    the type's addition staged, then run lowered (each of its equations by
    its ``to_lojax``), eagerly or inside a program being lowered."""
    jaxpr, _ = trace_to_jaxpr(lambda a, b: [ty.vspace_add(a, b)], [ty, ty])
    return eval_lowering(jaxpr, jaxpr.consts, [x, y])[0]


def _hi_sum_to_lojax(x: Any, *, elem: Any, axis: Axis, view: str,
                     outer: tuple[Axis, ...]) -> Any:
    """A tree of the type's ``vspace_add``: the halves of the mapped axis
    (each a value of the type mapped along the half's size) added until one
    example is left, then the axis squeezed from each component."""
    at = _summed_axes(elem, axis, view, outer)
    size, spec = axis
    los = lower_value(full_type(elem, [axis], view, outer), x)
    while size > 1:
        half = size // 2
        ty = full_type(elem, [(half, spec)], view, outer)
        left, right = (raise_values([ty], _slices(los, at, k * half, (k + 1) * half))[0]
                       for k in (0, 1))
        summed = lower_value(ty, _added(ty, left, right))
        if size % 2:
            rest = _slices(los, at, 2 * half, size)
            summed = [primitive("concatenate").bind(s, r, dimension=a)
                      for s, r, a in zip(summed, rest, at)]
        los, size = summed, half + size % 2
    squeezed = [primitive("squeeze").bind(lo, dimensions=(a,)) for lo, a in zip(los, at)]
    return raise_values([full_type(elem, [], view, outer)], squeezed)[0]


def _hi_sum_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any, axis: Axis,
                view: str, outer: tuple[Axis, ...]) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    out = hi_sum_p.bind(x, elem=elem, axis=axis, view=view, outer=outer)
    return [out], [mapped_sum(t, elem, axis, _linear_view(view), outer)]


def _hi_sum_transpose(ct: Any, x: Any, *, elem: Any, axis: Axis, view: str,
                      outer: tuple[Axis, ...]) -> list[Any]:
    """The cotangent broadcast along the summed axis."""
    if type(ct) is Zero:
        return [Zero(full_type(elem, [axis], "ct", outer))]
    return [broadcast(instantiate(ct), elem, axis, "ct", outer)]


hi_sum_p = declare(
    "hi_sum", typing=_hi_sum_type, impl=_hi_sum_impl, jvp=_hi_sum_jvp,
    transpose=_hi_sum_transpose, batch=_one_more_outer_axis("hi_sum"), sharding=_hi_sharding,
    lowering=not_applicable("its operand is a hi value, lowered to its components "
                            "(to_lojax: slices added by the type's vspace_add) before a "
                            "program is lowered"),
    to_lojax=_hi_sum_to_lojax,
    doc="A hi value summed over one of its mapped axes by its type's vspace_add (the "
        "transpose of hi_broadcast).")


# ------------------------------------------------------- selecting per example


def select(which: Any, cases: Sequence[Any], elem: Any, axis: Axis, view: str = "primal",
           outer: Sequence[Axis] = ()) -> Any:
    """Per example along the mapped ``axis``, the case ``which`` picks
    (``which``: one index per example, shape ``(*outer sizes outermost
    first, axis size)``): cases of type ``full_type(elem, [axis], view,
    outer)``; plain arrays by ``select_n``, hi values by ``hi_select_n``."""
    outer = tuple(outer)
    if not is_high(full_type(elem, [axis], view, outer)):
        (labels,) = _labels(elem, [axis], view, outer)
        return _select_lo(which, list(cases), _selector_dims(labels, elem, axis, outer),
                          elem, axis)
    return hi_select_n_p.bind(which, *cases, elem=elem, axis=axis, view=view, outer=outer)


def _selector_dims(labels: list[Any], elem: Any, axis: Axis, outer: Sequence[Axis]
                   ) -> tuple[int, ...] | None:
    """Where a component has the selector's axes (the outer ones outermost
    first, then ``axis``); None where it lacks one."""
    names = [("o", k) for k in reversed(range(len(outer)))] + [0]
    if any(n not in labels for n in names):
        return None
    return tuple(labels.index(n) for n in names)


def _select_lo(which: Any, cases: list[Any], dims: tuple[int, ...] | None, elem: Any,
               axis: Axis) -> Any:
    if dims is None:
        raise NotImplementedError(
            f"selecting per example between values of type {elem.str_short(True)} mapped "
            f"along {axis[1]!r}: a component is not mapped, so it cannot differ per example")
    shape = tuple(canonical_aval_of(cases[0]).shape)
    picked = primitive("broadcast_in_dim").bind(which, shape=shape, broadcast_dimensions=dims,
                                                sharding=None)
    return primitive("select_n").bind(picked, *cases)


def _selector_shape(axis: Axis, outer: Sequence[Axis]) -> tuple[int, ...]:
    return (*(size for size, _ in reversed(outer)), axis[0])


def _hi_select_n_type(which: Any, *cases: Any, elem: Any, axis: Axis, view: str,
                      outer: tuple[Axis, ...]) -> list[Any]:
    _check_params([axis], [0], view)
    want = full_type(elem, [axis], view, outer)
    if tuple(which.shape) != _selector_shape(axis, outer):
        raise TypeError(f"hi_select_n: the selector has shape {tuple(which.shape)}; one index "
                        f"per example is shape {_selector_shape(axis, outer)}")
    for c in cases:
        if c != want:
            raise TypeError(f"hi_select_n: a case has type {c.str_short(True)}; "
                            f"{elem.str_short(True)} mapped along {axis!r} is "
                            f"{want.str_short(True)}")
    return [want]


def _hi_select_n_impl(which: Any, *cases: Any, **params: Any) -> list[Any]:
    # (eager cases are hi values, which bind hands to ``to_lojax``)
    raise TypeError("hi_select_n applies to hi values")


def _hi_select_n_to_lojax(which: Any, *cases: Any, elem: Any, axis: Axis, view: str,
                          outer: tuple[Axis, ...]) -> Any:
    """Each component selected per example along its mapped axes."""
    out = full_type(elem, [axis], view, outer)
    dims = [_selector_dims(c, elem, axis, outer) for c in _labels(elem, [axis], view, outer)]
    per_case = [lower_value(out, c) for c in cases]
    los = [_select_lo(which, list(comps), d, elem, axis)
           for d, comps in zip(dims, zip(*per_case))]
    return raise_values([out], los)[0]


def _hi_select_n_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                     axis: Axis, view: str, outer: tuple[Axis, ...]
                     ) -> tuple[list[Any], list[Any]]:
    which, *cases = primals
    out = hi_select_n_p.bind(which, *cases, elem=elem, axis=axis, view=view, outer=outer)
    ts = tangents[1:]
    t_view = _linear_view(view)
    if all(type(t) is Zero for t in ts):
        return [out], [Zero(full_type(elem, [axis], t_view, outer))]
    return [out], [select(which, [instantiate(t) for t in ts], elem, axis, t_view, outer)]


def _hi_select_n_transpose(ct: Any, which: Any, *cases: Any, elem: Any, axis: Axis,
                           view: str, outer: tuple[Axis, ...]) -> list[Any]:
    """Each case's cotangent: the output's where it was picked, else zero
    (a hi cotangent type's ``vspace_zero``)."""
    ct_ty = full_type(elem, [axis], "ct", outer)
    if type(ct) is Zero:
        return [None, *(Zero(ct_ty) for _ in cases)]
    ct, zero = instantiate(ct), instantiate(Zero(ct_ty))
    return [None, *(select(which, [ct if j == i else zero for j in range(len(cases))],
                           elem, axis, "ct", outer) for i in range(len(cases)))]


def _hi_select_n_batch(axis_data: Any, args: list[Any], dims: list[Any], *, elem: Any,
                       axis: Axis, view: str, outer: tuple[Axis, ...]
                       ) -> tuple[list[Any], list[Any]]:
    """The batch axis is one more outer mapped axis of the cases (an
    unbatched case broadcast along the spec of the batched ones, or of the
    type's leading axis where none is) and the selector's leading axis."""
    which, *cases = args
    d_which, *d_cases = dims
    case_ty = full_type(elem, [axis], view, outer)
    batched = [d for d in d_cases if d is not None]
    spec = batched[0] if batched else case_ty.leading_axis_spec()
    if any(d != spec for d in batched):
        raise NotImplementedError(
            f"vmap of hi_select_n between values of type {case_ty.str_short(True)} batched "
            f"along different specs ({', '.join(map(repr, d_cases))})")
    new = (*outer, (axis_data.size, spec))
    cases = [broadcast(c, case_ty, (axis_data.size, spec)) if d is None else c
             for c, d in zip(cases, d_cases)]
    if d_which is None:
        shape = canonical_aval_of(which).shape
        which = primitive("broadcast_in_dim").bind(
            which, shape=(axis_data.size, *shape),
            broadcast_dimensions=tuple(range(1, 1 + len(shape))), sharding=None)
    elif d_which != 0:
        which = primitive("transpose").bind(which, permutation=_front(d_which, which))
    return [hi_select_n_p.bind(which, *cases, elem=elem, axis=axis, view=view,
                               outer=new)], [spec]


def _front(d: int, x: Any) -> tuple[int, ...]:
    rest = [i for i in range(canonical_aval_of(x).ndim) if i != d]
    return (d, *rest)


hi_select_n_p = declare(
    "hi_select_n", typing=_hi_select_n_type, impl=_hi_select_n_impl,
    jvp=_hi_select_n_jvp, transpose=_hi_select_n_transpose, batch=_hi_select_n_batch,
    sharding=_hi_sharding,
    lowering=not_applicable("its cases are hi values, lowered to their components "
                            "(to_lojax: one select_n each) before a program is lowered"),
    to_lojax=_hi_select_n_to_lojax,
    doc="Per example along a mapped axis, one of several hi values (a vmapped cond with a "
        "batched predicate): each component selected along the axis the mapping inserts.")


# ------------------------------------------- partition specs of batched values


def _with_unsplit(spec: Any, at: int | None, ndim: int) -> Any:
    """A PartitionSpec for an array of rank ``ndim`` with an unsplit axis
    inserted at ``at`` (None: unchanged)."""
    if at is None or spec is None:
        return spec
    parts = [*spec.partitions, *([None] * (ndim - len(spec.partitions)))]
    parts.insert(at, None)
    return P(*parts, unreduced=spec.unreduced, reduced=spec.reduced)


class BatchedHiPspec(HiPspec):
    """A hi type's partition spec for its values batched along a mapping
    spec: the batch axis is added, unsplit, to each component the mapping
    adds it to (and likewise to the tangent and cotangent specs)."""

    def __init__(self, inner: HiPspec, aval: Any, size: int, dim: MappingSpec) -> None:
        self.inner, self.aval, self.size, self.dim = inner, aval, size, dim

    def __repr__(self) -> str:
        return f"BatchedHiPspec({self.inner!r}, {self.dim!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BatchedHiPspec) and (self.inner, self.aval, self.size,
                                                      self.dim) == (other.inner, other.aval,
                                                                    other.size, other.dim)

    def __hash__(self) -> int:
        return hash((BatchedHiPspec, self.inner, self.size))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"'{type(self).__name__}' has no attribute '{name}': the partition spec of values "
            f"of {self.aval.str_short(True)} batched along {self.dim!r} gives only to_lo, "
            "to_tangent_spec and to_ct_spec (its type's shard/unshard must read to_lo)")

    def to_lo(self) -> tuple[Any, ...]:
        # (one spec per array the type lowers to, hi components lowered too,
        # as the inner spec's to_lo gives them)
        comps = lo_types(self.aval)
        at = _inserted_axes(self.aval, self.size, self.dim, "primal")
        return tuple(_with_unsplit(s, a, c.ndim)
                     for s, a, c in zip(self.inner.to_lo(), at, comps))

    def _viewed_spec(self, spec: Any, view: str) -> Any:
        if isinstance(spec, HiPspec):
            if view == "tangent":
                return BatchedHiPspec(spec, self.aval.to_tangent_aval(), self.size, self.dim)
            return BatchedHiPspec(spec, self.aval.to_ct_aval(), self.size, self.dim)
        (at,) = _inserted_axes(self.aval, self.size, self.dim, view)
        return _with_unsplit(spec, at, _viewed(self.aval, view).ndim)

    def to_tangent_spec(self) -> Any:
        return self._viewed_spec(self.inner.to_tangent_spec(), "tangent")

    def to_ct_spec(self) -> Any:
        return self._viewed_spec(self.inner.to_ct_spec(), "ct")


__all__ = ["Axis", "BatchedHiPspec", "broadcast", "full_type", "hi_broadcast_p",
           "hi_select_n_p", "hi_sum_p", "hi_transpose_p", "mapped_sum", "mapped_type",
           "reorder", "select"]
