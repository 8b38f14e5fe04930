"""A pair of arrays as a hi type whose tangent type is a pair again (a hi
tangent type, with ``vspace_zero``/``vspace_add``), built by ``MakePair`` and
read by ``Get``; mapped along a new leading axis of both arrays (``Front``),
so vmap batches it and the hi-axis primitives (hi_axes) reorder, broadcast,
select and sum its mapped axes, its tangents and cotangents included. A
component may be a hi value itself (mapped along its type's leading axis
spec), and shard_map splits a pair by a ``Leaves`` spec: one partition spec
per array the pair lowers to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import spec
import spec.numpy as snp
from spec.experimental.hijax import HiPspec, HiType, MappingSpec, VJPHiPrimitive, register_hitype


@dataclass(frozen=True)
class Pair:
    a: Any
    b: Any


@dataclass(frozen=True)
class Front(MappingSpec):
    """A pair's arrays mapped along their leading axes."""


@dataclass(frozen=True)
class PairTy(HiType):
    a: Any
    b: Any

    def lo_ty(self) -> list[Any]:
        return [self.a, self.b]

    def lower_val(self, p: Any) -> list[Any]:
        return [p.a, p.b]

    def raise_val(self, a: Any, b: Any) -> Any:
        return Pair(a, b)

    def to_tangent_aval(self) -> Any:
        return PairTy(self.a.to_tangent_aval(), self.b.to_tangent_aval())

    def vspace_zero(self) -> Any:
        return make_pair(snp.zeros(self.a.shape, self.a.dtype),
                         snp.zeros(self.b.shape, self.b.dtype))

    def vspace_add(self, x: Any, y: Any) -> Any:
        return make_pair(get(x, 0) + get(y, 0), get(x, 1) + get(y, 1))

    def inc_rank(self, size: int, spec_: Any) -> Any:
        return PairTy(*(t.inc_rank(size, t.leading_axis_spec()) if isinstance(t, HiType)
                        else t.update(shape=(size, *t.shape)) for t in (self.a, self.b)))

    def dec_rank(self, size: int, spec_: Any) -> Any:
        return PairTy(*(t.dec_rank(size, t.leading_axis_spec()) if isinstance(t, HiType)
                        else t.update(shape=t.shape[1:]) for t in (self.a, self.b)))

    def shard(self, mesh: Any, manual_axes: Any, check_vma: bool, spec_: Any) -> Any:
        return PairTy(*(t.shard(mesh, manual_axes, check_vma, s)
                        for t, s in zip(self.lo_ty(), _per_component(self, spec_))))

    def unshard(self, mesh: Any, check_vma: bool, spec_: Any) -> Any:
        return PairTy(*(t.unshard(mesh, check_vma, s)
                        for t, s in zip(self.lo_ty(), _per_component(self, spec_))))

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return f"Pair{{{self.a.str_short(short_dtypes)},{self.b.str_short(short_dtypes)}}}"


register_hitype(Pair, lambda p: PairTy(spec.typeof(p.a), spec.typeof(p.b)))


@dataclass(frozen=True)
class Leaves(HiPspec):
    """A partition spec per array a value lowers to, its hi components'
    arrays included."""
    specs: tuple[Any, ...]

    def to_lo(self) -> Any:
        return self.specs


def _arrays(ty: Any) -> int:
    return sum(_arrays(t) for t in ty.lo_ty()) if isinstance(ty, HiType) else 1


def _per_component(ty: PairTy, spec_: Any) -> list[Any]:
    """A pair's spec split by component: an array's partition spec, a hi
    component's ``Leaves``."""
    leaves, out = list(spec_.to_lo()), []
    for t in ty.lo_ty():
        n = _arrays(t)
        out.append(Leaves(tuple(leaves[:n])) if isinstance(t, HiType) else leaves[0])
        leaves = leaves[n:]
    return out


class MakePair(VJPHiPrimitive):
    def __init__(self, a: Any, b: Any) -> None:
        self.in_avals = (a, b)
        self.out_aval = PairTy(a, b)
        self.params = {}
        super().__init__()

    def expand(self, a: Any, b: Any) -> Any:
        return Pair(a, b)

    def vjp_fwd(self, nzs_in: Any, a: Any, b: Any) -> Any:
        return self(a, b), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return (get(g, 0), get(g, 1))

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        # (both arrays batched at their leading axes, an unbatched one
        # broadcast; a hi component batched along its leading axis spec)
        a, b = (x if isinstance(t, HiType) else
                snp.broadcast_to(x, (axis_data.size, *x.shape)) if d is None
                else snp.moveaxis(x, d, 0) for x, d, t in zip(args, dims, self.in_avals))
        for t, d in zip(self.in_avals, dims):
            assert not isinstance(t, HiType) or d == t.leading_axis_spec()
        return make_pair(a, b), Front()


class Get(VJPHiPrimitive):
    def __init__(self, p: Any, idx: int) -> None:
        self.in_avals = (p,)
        self.out_aval = (p.a, p.b)[idx]
        self.params = {"idx": idx}
        super().__init__()

    def expand(self, p: Any) -> Any:
        return (p.a, p.b)[self.idx]

    def vjp_fwd(self, nzs_in: Any, p: Any) -> Any:
        return self(p), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        ty = self.in_avals[0]
        other_ty = (ty.b, ty.a)[self.idx]
        other = snp.zeros(other_ty.shape, other_ty.dtype)
        return (make_pair(g, other) if self.idx == 0 else make_pair(other, g),)

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        (p,), (d,) = args, dims
        out = self.out_aval
        batched = out.leading_axis_spec() if isinstance(out, HiType) else 0
        return get(p, self.idx), (None if d is None else batched)


def make_pair(a: Any, b: Any) -> Any:
    return MakePair(spec.typeof(a), spec.typeof(b))(a, b)


def get(p: Any, idx: int) -> Any:
    return Get(spec.typeof(p), idx)(p)
