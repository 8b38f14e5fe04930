"""Moving, broadcasting and selecting along the mapped axes of hi values
(SPEC.md, "Hi types", HT8).

A hi value's type is built from an element type by ``inc_rank`` along
mapping specs: a scan stacks along the type's ``leading_axis_spec()``, a
vmap maps along the spec the batch carries. A batched program sometimes
needs what a type does not say: two mapped axes trading places (scanning
over a batched hi value, stacking batched hi results), a value broadcast
along the batch (a carry that becomes batched), a per-example choice
between values (a cond with a batched predicate). Each is found on the
components: each ``inc_rank`` inserts (at most) one axis into each
component of ``lo_ty``, located by comparing the component shapes before
and after. The primitives ``hi_transpose``, ``hi_broadcast`` and
``hi_select_n`` keep the hi types in traced programs; on components
(``to_lojax``) they are one ``transpose``, ``broadcast_in_dim`` or
``select_n`` per component. All three are linear in their hi operands:
their tangents are the same operation on the tangents (the types'
``to_tangent_aval``; a plain-array tangent directly by the array op), and
``hi_transpose`` and ``hi_select_n`` transpose to the inverse reordering
and to the per-example choice between the cotangent and zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core.hitypes import (
    HiPspec,
    MappingSpec,
    is_high,
    lo_types,
    lower_value,
    raise_values,
)
from spec._src.core.interpreter import canonical_aval_of, not_applicable
from spec._src.core.registry import declare, primitive
from spec._src.core.sharding import P
from spec._src.interpreters.ad_util import Zero, instantiate

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


def _labels(elem: Any, axes: Sequence[Axis], view: str) -> list[list[Any]]:
    """Each component's axes of ``view(elem mapped along axes)``, named:
    ``("e", i)`` for the element's own, ``k`` for the k-th of ``axes``."""
    names: list[list[Any]] = [[("e", i) for i in range(len(s))]
                              for s in _shapes(_viewed(elem, view))]
    ty = elem
    for k, (size, spec) in enumerate(axes):
        for comp, at in zip(names, _inserted_axes(ty, size, spec, view)):
            if at is not None:
                comp.insert(at, k)
        ty = ty.inc_rank(size, spec)
    return names


def _permutations(elem: Any, axes: Sequence[Axis], order: Sequence[int],
                  view: str) -> list[tuple[int, ...]]:
    """Per component, the transpose taking ``axes`` to their ``order``."""
    before = _labels(elem, axes, view)
    after = _labels(elem, [axes[k] for k in order], view)
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


def reorder(x: Any, elem: Any, axes: Sequence[Axis], order: Sequence[int],
            view: str = "primal") -> Any:
    """``x`` (of type ``view(elem mapped along axes)``) with its mapped axes
    in the order ``order`` (axis ``order[i]`` of ``axes`` the i-th): a
    transpose for a plain array (a plain tangent type), ``hi_transpose``
    for a hi value."""
    axes, order = tuple(axes), tuple(order)
    if order == tuple(range(len(order))):
        return x
    if type(x) is Zero:
        return Zero(_viewed(mapped_type(elem, _reordered(axes, order)), view))
    if not is_high(_viewed(mapped_type(elem, axes), view)):
        (perm,) = _permutations(elem, axes, order, view)
        return _transposed(x, perm)
    return hi_transpose_p.bind(x, elem=elem, axes=axes, order=order, view=view)


def _check_params(axes: Sequence[Axis], order: Sequence[int], view: str) -> None:
    if view not in VIEWS:
        raise TypeError(f"hi_transpose: view must be one of {VIEWS}; got {view!r}")
    if sorted(order) != list(range(len(axes))):
        raise TypeError(f"hi_transpose: order {tuple(order)!r} must be a permutation of the "
                        f"{len(axes)} mapped axes")


def _hi_transpose_type(x: Any, *, elem: Any, axes: tuple[Axis, ...], order: tuple[int, ...],
                       view: str) -> list[Any]:
    _check_params(axes, order, view)
    want = _viewed(mapped_type(elem, axes), view)
    if x != want:
        raise TypeError(f"hi_transpose: the operand has type {x.str_short(True)}; "
                        f"{elem.str_short(True)} mapped along {axes!r} is "
                        f"{want.str_short(True)}")
    return [_viewed(mapped_type(elem, _reordered(axes, order)), view)]


def _hi_transpose_impl(x: Any, **params: Any) -> list[Any]:
    # (eager operands are hi values, which bind hands to ``to_lojax``)
    raise TypeError(f"hi_transpose applies to hi values; got {type(x).__name__}")


def _hi_transpose_to_lojax(x: Any, *, elem: Any, axes: tuple[Axis, ...],
                           order: tuple[int, ...], view: str) -> Any:
    """One transpose per component."""
    aval = _viewed(mapped_type(elem, axes), view)
    perms = _permutations(elem, axes, order, view)
    los = [_transposed(lo, p) for lo, p in zip(lower_value(aval, x), perms)]
    return raise_values([_viewed(mapped_type(elem, _reordered(axes, order)), view)], los)[0]


def _hi_transpose_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                      axes: tuple[Axis, ...], order: tuple[int, ...], view: str
                      ) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    out = hi_transpose_p.bind(x, elem=elem, axes=axes, order=order, view=view)
    # (the tangent of a primal value has its tangent type; a tangent or
    # cotangent value, linear, is its own)
    return [out], [reorder(t, elem, axes, order, "tangent" if view == "primal" else view)]


def _hi_transpose_transpose(ct: Any, operand: Any, *, elem: Any, axes: tuple[Axis, ...],
                            order: tuple[int, ...], view: str) -> list[Any]:
    """The reverse reordering of the cotangent."""
    if type(ct) is Zero:
        return [Zero(_viewed(mapped_type(elem, axes), "ct"))]
    return [reorder(instantiate(ct), elem, _reordered(axes, order), _inverse(order), "ct")]


def _hi_transpose_batch(axis: Any, args: list[Any], dims: list[Any], *, elem: Any,
                        axes: tuple[Axis, ...], order: tuple[int, ...], view: str
                        ) -> tuple[list[Any], list[Any]]:
    """The batch axis is one more mapped axis, outermost, left in place."""
    (x,), (d,) = args, dims
    if view != "primal" or not isinstance(d, MappingSpec):
        raise NotImplementedError(
            f"vmap of hi_transpose on a {view} value of type "
            f"{canonical_aval_of(x).str_short(True)} batched at {d!r}")
    return [hi_transpose_p.bind(x, elem=elem, axes=(*axes, (axis.size, d)),
                                order=(*order, len(order)), view=view)], [d]


def _hi_sharding(*avals: Any, **params: Any) -> list[Any]:
    return [None]  # (a hi type's sharding is inside the type: its typing made it)


hi_transpose_p = declare(
    "hi_transpose", typing=_hi_transpose_type, impl=_hi_transpose_impl,
    jvp=_hi_transpose_jvp, transpose=_hi_transpose_transpose, batch=_hi_transpose_batch,
    sharding=_hi_sharding,
    lowering=not_applicable("its operand is a hi value, lowered to its components "
                            "(to_lojax: one transpose each) before a program is lowered"),
    to_lojax=_hi_transpose_to_lojax,
    doc="A hi value's mapped axes reordered (a vmap's batch axis and a scan's stacking "
        "axis): one transpose per component.")

# -------------------------------------------------------------- broadcasting


def broadcast(x: Any, elem: Any, axis: Axis, view: str = "primal") -> Any:
    """``x`` (of type ``view(elem)``) broadcast along one more mapped axis:
    ``view(elem mapped along axis)``; a plain array along the axis the
    mapping inserts, a hi value by ``hi_broadcast``."""
    if type(x) is Zero:
        return Zero(_viewed(mapped_type(elem, [axis]), view))
    if not is_high(_viewed(elem, view)):
        (at,) = _inserted_axes(elem, axis[0], axis[1], view)
        out = _viewed(mapped_type(elem, [axis]), view)
        return x if at is None else _broadcast_lo(x, out, at)
    return hi_broadcast_p.bind(x, elem=elem, axis=axis, view=view)


def _broadcast_lo(x: Any, out: Any, at: int) -> Any:
    ndim = len(out.shape)
    dims = tuple(d for d in range(ndim) if d != at)
    return primitive("broadcast_in_dim").bind(x, shape=tuple(out.shape),
                                              broadcast_dimensions=dims,
                                              sharding=getattr(out, "sharding", None))


def _hi_broadcast_type(x: Any, *, elem: Any, axis: Axis, view: str) -> list[Any]:
    _check_params([axis], [0], view)
    want = _viewed(elem, view)
    if x != want:
        raise TypeError(f"hi_broadcast: the operand has type {x.str_short(True)}; the "
                        f"element type is {want.str_short(True)}")
    return [_viewed(mapped_type(elem, [axis]), view)]


def _hi_broadcast_impl(x: Any, **params: Any) -> list[Any]:
    # (eager operands are hi values, which bind hands to ``to_lojax``)
    raise TypeError(f"hi_broadcast applies to hi values; got {type(x).__name__}")


def _hi_broadcast_to_lojax(x: Any, *, elem: Any, axis: Axis, view: str) -> Any:
    """Each component broadcast along the axis the mapping inserts in it."""
    out = _viewed(mapped_type(elem, [axis]), view)
    at = _inserted_axes(elem, axis[0], axis[1], view)
    los = [lo if a is None else _broadcast_lo(lo, ty, a)
           for lo, ty, a in zip(lower_value(_viewed(elem, view), x), lo_types(out), at)]
    return raise_values([out], los)[0]


def _hi_broadcast_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                      axis: Axis, view: str) -> tuple[list[Any], list[Any]]:
    (x,), (t,) = primals, tangents
    out = hi_broadcast_p.bind(x, elem=elem, axis=axis, view=view)
    return [out], [broadcast(t, elem, axis, "tangent" if view == "primal" else view)]


def _hi_broadcast_batch(axis: Any, args: list[Any], dims: list[Any], *, elem: Any,
                        view: str, **params: Any) -> tuple[list[Any], list[Any]]:
    """Broadcast per example: of the batched element, then the two mapped
    axes reordered (the batch axis outermost)."""
    (x,), (d,) = args, dims
    new: Axis = params["axis"]
    if view != "primal" or not isinstance(d, MappingSpec):
        raise NotImplementedError(
            f"vmap of hi_broadcast on a {view} value of type "
            f"{canonical_aval_of(x).str_short(True)} batched at {d!r}")
    batch: Axis = (axis.size, d)
    y = hi_broadcast_p.bind(x, elem=mapped_type(elem, [batch]), axis=new, view=view)
    return [reorder(y, elem, [batch, new], (1, 0))], [d]


hi_broadcast_p = declare(
    "hi_broadcast", typing=_hi_broadcast_type, impl=_hi_broadcast_impl,
    jvp=_hi_broadcast_jvp, batch=_hi_broadcast_batch,
    transpose=not_applicable("it is linear only on hi tangent types (a plain tangent is "
                             "broadcast by broadcast_in_dim), whose transpose would sum hi "
                             "cotangents over an axis, which no hi type declares"),
    sharding=_hi_sharding,
    lowering=not_applicable("its operand is a hi value, lowered to its components "
                            "(to_lojax: one broadcast_in_dim each) before a program is "
                            "lowered"),
    to_lojax=_hi_broadcast_to_lojax,
    doc="A hi value broadcast along one more mapped axis (a vmap's batch axis): each "
        "component broadcast along the axis the mapping inserts in it.")


# ------------------------------------------------------- selecting per example


def select(which: Any, cases: Sequence[Any], elem: Any, axis: Axis, view: str = "primal"
           ) -> Any:
    """Per example along the mapped ``axis``, the case ``which`` picks
    (``which``: one index per example): cases of type ``view(elem mapped
    along axis)``; plain arrays by ``select_n``, hi values by
    ``hi_select_n``."""
    if not is_high(_viewed(elem, view)):
        (at,) = _inserted_axes(elem, axis[0], axis[1], view)
        return _select_lo(which, list(cases), at, elem, axis)
    return hi_select_n_p.bind(which, *cases, elem=elem, axis=axis, view=view)


def _select_lo(which: Any, cases: list[Any], at: int | None, elem: Any, axis: Axis) -> Any:
    if at is None:
        raise NotImplementedError(
            f"selecting per example between values of type {elem.str_short(True)} mapped "
            f"along {axis[1]!r}: a component is not mapped, so it cannot differ per example")
    shape = tuple(canonical_aval_of(cases[0]).shape)
    picked = primitive("broadcast_in_dim").bind(which, shape=shape, broadcast_dimensions=(at,),
                                                sharding=None)
    return primitive("select_n").bind(picked, *cases)


def _hi_select_n_type(which: Any, *cases: Any, elem: Any, axis: Axis, view: str
                      ) -> list[Any]:
    _check_params([axis], [0], view)
    want = _viewed(mapped_type(elem, [axis]), view)
    if tuple(which.shape) != (axis[0],):
        raise TypeError(f"hi_select_n: the selector has shape {tuple(which.shape)}; one index "
                        f"per example is shape {(axis[0],)}")
    for c in cases:
        if c != want:
            raise TypeError(f"hi_select_n: a case has type {c.str_short(True)}; "
                            f"{elem.str_short(True)} mapped along {axis!r} is "
                            f"{want.str_short(True)}")
    return [want]


def _hi_select_n_impl(which: Any, *cases: Any, **params: Any) -> list[Any]:
    # (eager cases are hi values, which bind hands to ``to_lojax``)
    raise TypeError("hi_select_n applies to hi values")


def _hi_select_n_to_lojax(which: Any, *cases: Any, elem: Any, axis: Axis, view: str) -> Any:
    """Each component selected per example along its mapped axis."""
    out = _viewed(mapped_type(elem, [axis]), view)
    at = _inserted_axes(elem, axis[0], axis[1], view)
    per_case = [lower_value(out, c) for c in cases]
    los = [_select_lo(which, list(comps), a, elem, axis) for a, comps in zip(at, zip(*per_case))]
    return raise_values([out], los)[0]


def _hi_select_n_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, elem: Any,
                     axis: Axis, view: str) -> tuple[list[Any], list[Any]]:
    which, *cases = primals
    out = hi_select_n_p.bind(which, *cases, elem=elem, axis=axis, view=view)
    ts = tangents[1:]
    t_view = "tangent" if view == "primal" else view
    if all(type(t) is Zero for t in ts):
        return [out], [Zero(_viewed(mapped_type(elem, [axis]), t_view))]
    return [out], [select(which, [instantiate(t) for t in ts], elem, axis, t_view)]


def _hi_select_n_transpose(ct: Any, which: Any, *cases: Any, elem: Any, axis: Axis,
                           view: str) -> list[Any]:
    """Each case's cotangent: the output's where it was picked, else zero
    (a hi cotangent type's ``vspace_zero``)."""
    ct_ty = _viewed(mapped_type(elem, [axis]), "ct")
    if type(ct) is Zero:
        return [None, *(Zero(ct_ty) for _ in cases)]
    ct, zero = instantiate(ct), instantiate(Zero(ct_ty))
    return [None, *(select(which, [ct if j == i else zero for j in range(len(cases))],
                           elem, axis, "ct") for i in range(len(cases)))]


def _hi_select_n_batch(axis: Any, args: list[Any], dims: list[Any], **params: Any
                       ) -> tuple[list[Any], list[Any]]:
    raise NotImplementedError(
        "vmap of a per-example selection between hi values (hi_select_n) under another vmap")


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
        comps = list(self.aval.lo_ty())
        if any(is_high(c) for c in comps):
            raise NotImplementedError(
                f"a batched partition spec for {self.aval.str_short(True)}, whose components "
                "are hi types themselves")
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


__all__ = ["Axis", "BatchedHiPspec", "broadcast", "hi_broadcast_p", "hi_select_n_p",
           "hi_transpose_p", "mapped_type", "reorder", "select"]
