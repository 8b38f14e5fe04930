"""User-defined ("hi") types: the base class a type derives from, the
registry of the value classes that carry hi values, and the conversions
between a hi value and the low-level arrays it lowers to.

A hi type is any type whose ``is_high`` is true. It lowers to a list of
array types (``lo_ty``); a value of it lowers to one array per such type
(``lower_val``) and is rebuilt from them (``raise_val``). Values of a hi
type flow through traced programs as single values of that type; lowering
(``jit`` running its program) replaces each by its components.
"""

from __future__ import annotations

import abc
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core.sharding import AbstractMesh, NamedSharding, P, get_abstract_mesh
from spec._src.core.types import ArrayType


class AbstractValue(abc.ABC):  # noqa: B024 (a base of types, with no abstract method)
    """The base of every type (JAX's ``core.AbstractValue``): spec's array
    and ref types are registered as its subclasses, hi types derive from it."""


AbstractValue.register(ArrayType)

# Forwarding of a tracer's properties and methods to its type: a hi type
# lists them as class attributes; the records are JAX's.
aval_property = namedtuple("aval_property", ["fget"])
aval_method = namedtuple("aval_method", ["fun"])


def _must_override(ty: Any, method: str, needed_for: str) -> Any:
    raise NotImplementedError(f"{needed_for} requires {type(ty).__name__} to implement the "
                              f"`{method}` method")


class HiType(AbstractValue):
    """The base of user-defined (hi) types: each method is what a
    transformation needs of the type (SPEC.md, "Hi types")."""

    is_high = True
    # A hi value is never weakly typed and never varies inside shard_map by
    # itself: its components carry those facts.
    weak_type = False
    vma: frozenset[Any] = frozenset()

    def __hash__(self) -> int:
        return _must_override(self, "__hash__", "type equality")  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        return _must_override(self, "__eq__", "type equality")  # type: ignore[no-any-return]

    def lo_ty(self) -> list[Any]:
        return _must_override(self, "lo_ty", "lowering (e.g. under jit)")  # type: ignore[no-any-return]

    def lower_val(self, hi_val: Any, /) -> list[Any]:
        return _must_override(self, "lower_val", "lowering values (e.g. under jit)")  # type: ignore[no-any-return]

    def raise_val(self, *lo_vals: Any) -> Any:
        return _must_override(self, "raise_val", "raising lowered values (e.g. under jit)")

    def to_tangent_aval(self) -> Any:
        return _must_override(self, "to_tangent_aval", "autodiff")

    def to_ct_aval(self) -> Any:
        return self.to_tangent_aval()

    def tangent_type(self) -> Any:
        return self.to_tangent_aval()

    def ct_type(self) -> Any:
        return self.to_ct_aval()

    def strip_weak_type(self) -> HiType:
        return self

    def vspace_zero(self) -> Any:
        return _must_override(self, "vspace_zero", "use as a tangent/cotangent type")

    def vspace_add(self, x: Any, y: Any) -> Any:
        return _must_override(self, "vspace_add", "use as a tangent/cotangent type")

    def dec_rank(self, size: int | None, spec: MappingSpec) -> Any:
        return _must_override(self, "dec_rank", "vmap")

    def inc_rank(self, size: int | None, spec: MappingSpec) -> Any:
        return _must_override(self, "inc_rank", "vmap")

    def leading_axis_spec(self) -> Any:
        return _must_override(self, "leading_axis_spec", "scan")

    def shard(self, mesh: Any, manual_axes: frozenset[Any], check_vma: bool,
              spec: HiPspec) -> Any:
        return _must_override(self, "shard", "shard_map")

    def unshard(self, mesh: Any, check_vma: bool, spec: HiPspec) -> Any:
        return _must_override(self, "unshard", "shard_map")

    def nospec(self, mesh: Any, check_vma: bool, all_names: tuple[Any, ...]) -> Any:
        return _must_override(self, "nospec", "autodiff through shard_map")

    def reshard(self, sharding: Any) -> Any:
        return _must_override(self, "reshard", "reshard")

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return type(self).__name__


class MappingSpec:
    """How a hi type maps over an axis (vmap, scan): the type defines it."""


class HiPspec:
    """A hi type's partition spec for shard_map: the type defines it."""

    def to_lo(self) -> Any:
        return _must_override(self, "to_lo", "shard_map")

    def to_tangent_spec(self) -> Any:
        return _must_override(self, "to_tangent_spec", "autodiff through shard_map")

    def to_ct_spec(self) -> Any:
        return _must_override(self, "to_ct_spec", "autodiff through shard_map")


# The value classes that carry hi values, each with the function giving a
# value's type.
HI_VALUE_TYPES: dict[type, Callable[[Any], Any]] = {}


def register_hitype(val_cls: type, typeof_fn: Callable[[Any], Any]) -> None:
    """Make ``val_cls`` values have the hi type ``typeof_fn`` gives."""
    if not isinstance(val_cls, type):
        raise TypeError(f"register_hitype expects a class, got {val_cls!r}")
    HI_VALUE_TYPES[val_cls] = typeof_fn


def is_high(aval: Any) -> bool:
    return getattr(aval, "is_high", False) is True


def is_hi_value(x: Any) -> bool:
    return type(x) in HI_VALUE_TYPES


def hi_type_of(x: Any) -> Any:
    """The hi type of a value of a registered class."""
    return HI_VALUE_TYPES[type(x)](x)


def lo_types(aval: Any) -> list[ArrayType]:
    """The array types ``aval`` lowers to: itself for an array type, the
    type's ``lo_ty`` (recursively lowered) for a hi type."""
    if not is_high(aval):
        return [aval]
    out = []
    for lo in aval.lo_ty():
        out.extend(lo_types(lo))
    return [plain_aval(a) for a in out]


def lower_value(aval: Any, x: Any) -> list[Any]:
    """The arrays a value of ``aval`` lowers to (one per ``lo_types``)."""
    if not is_high(aval):
        return [x]
    los = list(aval.lower_val(x))
    tys = list(aval.lo_ty())
    if len(los) != len(tys):
        raise ValueError(f"{type(aval).__name__}.lower_val gave {len(los)} values for the "
                         f"{len(tys)} types of lo_ty()")
    return [v for ty, lo in zip(tys, los) for v in lower_value(ty, lo)]


def raise_values(avals: Sequence[Any], los: Sequence[Any]) -> list[Any]:
    """The values of ``avals`` rebuilt from their lowered arrays."""
    it = iter(los)
    return [_raise_one(a, it) for a in avals]


def _raise_one(aval: Any, it: Any) -> Any:
    if not is_high(aval):
        return next(it)
    parts = [_raise_one(ty, it) for ty in aval.lo_ty()]
    return aval.raise_val(*parts)


def any_high(avals: Sequence[Any]) -> bool:
    return any(is_high(a) for a in avals)


# ------------------------------------------------ the sharding of no mesh


class UnmeshedSharding(NamedSharding):
    """What ``typeof`` shows as the sharding of an array on no mesh (an
    empty abstract mesh, every dimension unpartitioned). It is the absent
    sharding (``None``) in every comparison, so types built from it equal
    the types spec makes without a mesh."""

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, UnmeshedSharding) or (
            # (NamedSharding's own comparison: ``other == self`` would come
            # back here, Python trying the subclass's reflected __eq__ first)
            isinstance(other, NamedSharding) and other.mesh.empty
            and NamedSharding.__eq__(other, self))

    def __hash__(self) -> int:
        return hash(None)

    def update(self, **kwargs: Any) -> NamedSharding:
        new = super().update(**kwargs)
        if new.mesh.empty and new.memory_kind is None:
            return unmeshed(new.spec)
        return new


_EMPTY_MESH = AbstractMesh((), ())


def unmeshed(spec: P) -> UnmeshedSharding:
    return UnmeshedSharding(_EMPTY_MESH, spec)


def shown_aval(aval: Any) -> Any:
    """``aval`` as ``typeof`` shows it: an array type without a sharding
    gets the replicated sharding of its rank on the context mesh (the
    unmeshed one where there is none)."""
    if isinstance(aval, ArrayType) and aval.sharding is None:
        spec = P(*([None] * len(aval.shape)))
        mesh = get_abstract_mesh()
        # Under a context mesh an array without a sharding is replicated on it.
        sharding = unmeshed(spec) if mesh.empty else NamedSharding(mesh, spec)
        return aval.update(sharding=sharding)
    return aval


def plain_aval(aval: Any) -> Any:
    """``aval`` with an unmeshed sharding as no sharding (how spec's own
    types say it)."""
    if isinstance(aval, ArrayType):
        s = aval.sharding
        if isinstance(s, UnmeshedSharding) or (isinstance(s, NamedSharding) and s.mesh.empty):
            return aval.update(sharding=None)
    return aval
