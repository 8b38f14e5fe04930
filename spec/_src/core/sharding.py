"""The sharding API objects (JAX's ``jax.sharding`` namespace), type level only.

Meshes name the axes of a grid of devices; a ``PartitionSpec`` (``P``) says,
per array dimension, which mesh axes split it; a ``NamedSharding`` pairs the
two. Nothing here moves data: these are the values that array types and the
per-device execution are keyed on. Names, reprs and
error classes follow JAX 0.12 (checked live in tests/sharding/test_api.py).

The functions that bind primitives (``reshard``, ``with_sharding_constraint``,
``auto_axes``, ``explicit_axes``: spec._src.lax.reshard) or that need the
trace or the devices (``set_mesh``, ``get_mesh``, ``make_mesh``:
spec._src.api.sharding) live above; this module is what types and the IR use.

Deviations, on purpose: where JAX fails with an internal error (AttributeError
for a tuple spec, IndexError for a too-short shape, a C++ ``bad_cast`` for a
non-string memory kind) this module raises TypeError/ValueError naming the
value; an ``AbstractMesh`` whose sizes and names differ in length is rejected
when built rather than when first printed.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import math
import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from spec._src.core.backend import current_backend
from spec._src.core.config import no_collectives
from spec._src.core.errors import ForbiddenCollectiveError

__all__ = [
    "AbstractDevice", "AbstractMesh", "AxisType", "DuplicateSpecError", "IndivisibleError",
    "Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding", "SingleDeviceSharding",
    "UnreducedKind", "get_abstract_mesh", "get_concrete_mesh", "use_abstract_mesh",
]

AxisName = Hashable
Index = tuple[slice, ...]


class AxisType(enum.Enum):
    Auto = 1
    Explicit = 2
    Manual = 3

    def __repr__(self) -> str:
        return self.name


class UnreducedKind(enum.Enum):
    sum = 1
    max = 2
    min = 3


class DuplicateSpecError(Exception):
    """A mesh axis named by two dimensions of one spec (JAX: not a ValueError)."""


class IndivisibleError(ValueError):
    """A dimension not divisible by the number of shards along it."""


def _normalize_axis_types(axis_names: tuple[AxisName, ...], axis_types: Any, who: str,
                          default: AxisType) -> tuple[AxisType, ...]:
    if axis_types is None:
        axis_types = (default,) * len(axis_names)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(a, AxisType) for a in axis_types):
        raise TypeError(
            f"axis_types passed to {who} must be of type `jax.sharding.AxisType`. Got "
            f"{axis_types} of type {tuple(type(a) for a in axis_types)}")
    if len(axis_types) != len(axis_names):
        raise ValueError(
            "Number of axis names should match the number of axis_types. Got "
            f"axis_names={axis_names} and axis_types={axis_types}")
    return tuple(axis_types)


# ---------------------------------------------------------------------------
# Meshes


class _BaseMesh:
    axis_names: tuple[AxisName, ...]
    axis_types: tuple[AxisType, ...]
    size: int

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def shape_tuple(self) -> tuple[tuple[AxisName, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def shape(self) -> collections.OrderedDict[AxisName, int]:
        return collections.OrderedDict(self.shape_tuple)

    @property
    def empty(self) -> bool:
        return self.size == 0

    def _axes_of(self, ty: AxisType) -> tuple[AxisName, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == ty)

    @property
    def explicit_axes(self) -> tuple[AxisName, ...]:
        return self._axes_of(AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple[AxisName, ...]:
        return self._axes_of(AxisType.Auto)

    @property
    def manual_axes(self) -> tuple[AxisName, ...]:
        return self._axes_of(AxisType.Manual)

    @property
    def _name_to_type(self) -> dict[AxisName, AxisType]:
        return dict(zip(self.axis_names, self.axis_types))

    def _shape_str(self) -> str:
        return ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)


@dataclasses.dataclass(frozen=True, slots=True)
class AbstractDevice:
    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"

    def _repr(self) -> str:
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")


class AbstractMesh(_BaseMesh):
    """Axis names, sizes and types, without devices (what array types carry)."""

    def __init__(self, axis_sizes: tuple[int, ...], axis_names: tuple[AxisName, ...],
                 axis_types: AxisType | tuple[AxisType, ...] | None = None, *,
                 abstract_device: AbstractDevice | None = None) -> None:
        # JAX interns meshes by their arguments, so unhashable sizes fail there.
        if not isinstance(axis_sizes, tuple):
            raise TypeError(f"AbstractMesh axis_sizes must be a tuple of ints, got "
                            f"{axis_sizes!r} of type {type(axis_sizes).__name__}")
        axis_names = tuple(axis_names)
        if len(axis_sizes) != len(axis_names):
            raise ValueError(
                f"AbstractMesh needs one axis name per axis size, got axis_sizes={axis_sizes}"
                f" and axis_names={axis_names}")
        self._axis_sizes = axis_sizes
        self.axis_names = axis_names
        self.axis_types = _normalize_axis_types(axis_names, axis_types, "AbstractMesh",
                                                AxisType.Explicit)
        self.abstract_device = abstract_device
        self.size = math.prod(axis_sizes) if axis_sizes else 0
        # Read by every bind (is a shard_map body being traced?): computed once.
        self._manual = self._axes_of(AxisType.Manual)

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return self._axis_sizes

    @property
    def manual_axes(self) -> tuple[AxisName, ...]:
        return self._manual

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    @property
    def devices(self) -> np.ndarray:
        raise ValueError("AbstractMesh does not implement devices")

    @property
    def device_ids(self) -> np.ndarray:
        raise ValueError("AbstractMesh does not implement device_ids")

    def _key(self) -> tuple[Any, ...]:
        return (self._axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, AbstractMesh)
                                 and self._key() == other._key())

    def __hash__(self) -> int:
        # Meshes are immutable and key every typing memo lookup: hash once.
        h: int | None = getattr(self, "_hash", None)
        if h is None:
            h = self._hash = hash(self._key())
        return h

    def update(self, axis_sizes: tuple[int, ...] | None = None,
               axis_names: tuple[AxisName, ...] | None = None,
               axis_types: tuple[AxisType, ...] | None = None) -> AbstractMesh:
        return AbstractMesh(
            self._axis_sizes if axis_sizes is None else axis_sizes,
            self.axis_names if axis_names is None else axis_names,
            self.axis_types if axis_types is None else axis_types,
            abstract_device=self.abstract_device)

    def __repr__(self) -> str:
        shape = self._shape_str() if self.axis_names else "()"
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({shape}, axis_types={self.axis_types}{device})"


def _object_array(devices: Any) -> np.ndarray:
    if isinstance(devices, np.ndarray):
        return devices
    items = list(devices)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class Mesh(_BaseMesh):
    """A named grid of concrete devices (``devices`` is a read-only object array)."""

    devices: np.ndarray

    def __init__(self, devices: np.ndarray | Sequence[Any],
                 axis_names: str | Sequence[AxisName],
                 axis_types: AxisType | tuple[AxisType, ...] | None = None) -> None:
        grid = _object_array(devices).copy()
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if any(n is None for n in names):
            raise ValueError(f"Mesh axis names cannot be None. Got: {names}")
        if grid.ndim != len(names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length"
                " of its second argument (`axis_names`), but got "
                f"devices.ndim == {grid.ndim} and len(axis_names) == {len(names)}.")
        grid.flags.writeable = False
        self.devices = grid
        self.axis_names = names
        self.axis_types = _normalize_axis_types(names, axis_types, "Mesh", AxisType.Auto)
        # The "no mesh" value: no axes and a 0-d grid holding no device.
        no_device = grid.size == 0 or grid.flat[0] is None
        self.size = 0 if (not names and no_device) else math.prod(grid.shape)

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.devices.shape)

    @property
    def device_ids(self) -> np.ndarray:
        ids = np.array([d.id for d in self.devices.flat], dtype=np.int64)
        return ids.reshape(self.devices.shape)

    @property
    def local_devices(self) -> list[Any]:
        return list(self.devices.flat)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        if not self.axis_names:
            return AbstractMesh((), ())
        first = self.devices.flat[0]
        device = AbstractDevice(device_kind=first.device_kind, num_cores=None,
                                platform=first.platform)
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=device)

    def _key(self) -> tuple[Any, ...]:
        return (self.devices.shape, tuple(self.devices.flat), self.axis_names,
                self.axis_types)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def update(self, devices: np.ndarray | None = None,
               axis_names: tuple[AxisName, ...] | None = None,
               axis_types: tuple[AxisType, ...] | None = None) -> Mesh:
        return Mesh(self.devices if devices is None else devices,
                    self.axis_names if axis_names is None else axis_names,
                    self.axis_types if axis_types is None else axis_types)

    def __str__(self) -> str:
        if self.empty:
            return "Mesh()"
        return f"Mesh({self._shape_str()}, axis_types={self.axis_types})"

    def __repr__(self) -> str:
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types})")


# ---------------------------------------------------------------------------
# The mesh in context (thread-local; `set_mesh` with no `with` sets it for good)


def _empty_mesh() -> Mesh:
    return Mesh(np.empty((), dtype=object), ())


# The typing memo, one dict per typing key (core.interpreter.apply_typing): a
# dispatch looks its key up in the memo of the context it runs in, without
# hashing the context each time. Few contexts ever exist; the bound is a guard.
_TYPING_MEMOS: dict[tuple[Any, ...], dict[Any, Any]] = {}
_TYPING_MEMOS_LIMIT = 1_000


def _typing_memo(key: tuple[Any, ...]) -> dict[Any, Any]:
    memo = _TYPING_MEMOS.get(key)
    if memo is None:
        if len(_TYPING_MEMOS) >= _TYPING_MEMOS_LIMIT:
            _TYPING_MEMOS.clear()
        memo = _TYPING_MEMOS[key] = {}
    return memo


class _MeshContext(threading.local):
    """What typing depends on besides operand types and params: the abstract
    mesh, whether a shard_map body tracks varying axes (check_vma), and the
    named axes in scope (vmap's and shard_map's, with their sizes). The jit
    cache keys on ``typing_key``, and the typing memo of the context is
    ``typing_memo``; ``update`` keeps both up to date."""

    def __init__(self) -> None:
        self.abstract: AbstractMesh = AbstractMesh((), ())
        self.concrete: Mesh = _empty_mesh()
        self.check_vma: bool = False
        self.axis_frames: tuple[tuple[Any, int], ...] = ()
        self.typing_key: tuple[Any, ...] = (self.abstract, False, ())
        self.typing_memo: dict[Any, Any] = _typing_memo(self.typing_key)
        self.in_manual = False  # inside a shard_map body (the mesh has Manual axes)
        # Under a concrete mesh whose axes are as set_mesh gave them (not in
        # a shard_map body, auto_axes or explicit_axes) every computation
        # runs on all its devices: eager results of unplaced operands are
        # placed on it, as JAX places them (spec._src.core.interpreter also
        # asks that no trace be active).
        self.placing = False

    def update(self, **changes: Any) -> None:
        for name, value in changes.items():
            setattr(self, name, value)
        self.typing_key = (self.abstract, self.check_vma, self.axis_frames)
        self.typing_memo = _typing_memo(self.typing_key)
        self.in_manual = bool(self.abstract.manual_axes)
        self.placing = not self.concrete.empty and self.abstract == self.concrete.abstract_mesh


_context = _MeshContext()


@contextlib.contextmanager
def extend_axis_env(name: Any, size: int) -> Iterator[None]:
    """Bind the axis ``name`` of ``size`` while tracing the block (the
    frames live in the typing context: result types depend on them)."""
    before = _context.axis_frames
    _context.update(axis_frames=before + ((name, size),))
    try:
        yield
    finally:
        _context.update(axis_frames=before)


@contextlib.contextmanager
def concrete_mesh_for(mesh: Mesh) -> Iterator[None]:
    """``set_mesh`` for spec's own use: allowed while tracing."""
    prev_abstract, prev = _context.abstract, _context.concrete
    _context.update(abstract=mesh.abstract_mesh, concrete=mesh)
    try:
        yield
    finally:
        _context.update(abstract=prev_abstract, concrete=prev)


class use_abstract_mesh:
    """Sets only the abstract mesh for a ``with`` block (its size may not change)."""

    __slots__ = ("mesh", "prev")

    def __init__(self, mesh: AbstractMesh) -> None:
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(
                f"Expected mesh of type `jax.sharding.AbstractMesh`. Got type: {type(mesh)}")
        self.mesh = mesh

    def __enter__(self) -> None:
        prev = _context.abstract
        if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
            raise ValueError(
                f"use_abstract_mesh cannot change the size of the mesh. Got new mesh:"
                f" {self.mesh} with size={self.mesh.size} and prev mesh: {prev} with"
                f" size={prev.size}")
        self.prev = prev
        _context.update(abstract=self.mesh)

    def __exit__(self, *exc: object) -> None:
        _context.update(abstract=self.prev)


def get_abstract_mesh() -> AbstractMesh:
    return _context.abstract


def get_concrete_mesh() -> Mesh:
    """The concrete mesh in context, also under jit (internal in JAX)."""
    return _context.concrete


# ---------------------------------------------------------------------------
# PartitionSpec


class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


_UNCONSTRAINED = _Unconstrained()


def _canonical_partition(entry: Any) -> Any:
    """None / a name / a tuple of >= 2 names; lists become tuples, () None, (a,) a."""
    if isinstance(entry, (tuple, list)):
        for inner in entry:
            if isinstance(inner, (tuple, list)):
                raise ValueError(
                    "A tuple inside PartitionSpec cannot contain a nested tuple. Got "
                    f"partition: {tuple(entry)} and the nested tuple: {tuple(inner)}")
        names = tuple(entry)
        entry = None if not names else names[0] if len(names) == 1 else names
    try:
        hash(entry)
    except TypeError:
        raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a tuple of"
                        f" names; got unhashable {entry!r}") from None
    return entry


def _axis_set(name: str, value: Any) -> frozenset[AxisName]:
    if isinstance(value, frozenset):
        return value
    if not isinstance(value, set):
        raise TypeError(f"{name} argument of PartitionSpec should of type `frozenset` or `set`."
                        f" Got type {type(value)}")
    return frozenset(value)


def axis_names_of(entry: Any) -> tuple[AxisName, ...]:
    """A spec entry (None, a mesh axis, or a tuple of them) as its axes."""
    if entry is None or entry is _UNCONSTRAINED:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)


def entry_of(names: Sequence[AxisName]) -> Any:
    """The spec entry splitting a dimension over ``names`` (major first)."""
    return None if not names else names[0] if len(names) == 1 else tuple(names)


_names_of = axis_names_of


class P:
    """How each dimension of an array is split over mesh axes (``jax.P``)."""

    __slots__ = ("_partitions", "unreduced", "reduced", "unreduced_kind")
    _partitions: tuple[Any, ...]
    unreduced: frozenset[AxisName]
    reduced: frozenset[AxisName]
    unreduced_kind: UnreducedKind | None

    UNCONSTRAINED = _UNCONSTRAINED

    def __init__(self, *partitions: Any, unreduced: Any = frozenset(),
                 reduced: Any = frozenset(), unreduced_kind: UnreducedKind | None = None) -> None:
        parts = tuple(_canonical_partition(p) for p in partitions)
        ur = _axis_set("unreduced", unreduced)
        red = _axis_set("reduced", reduced)
        if ur and unreduced_kind is None:
            unreduced_kind = UnreducedKind.sum
        _check_spec(parts, ur, red, unreduced_kind)
        for field, value in (("_partitions", parts), ("unreduced", ur), ("reduced", red),
                             ("unreduced_kind", unreduced_kind)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field '{name}'")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("Subclassing `jax.P` is prohibited.")

    @property
    def partitions(self) -> tuple[Any, ...]:
        return self._partitions

    def _key(self) -> tuple[Any, ...]:
        return (self._partitions, self.unreduced, self.reduced, self.unreduced_kind)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, P) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = repr(self._partitions)[1:-1]
        if not self.unreduced and not self.reduced:
            return f"P({parts})"
        sets = []
        if self.unreduced:
            sets.append(f"unreduced={set(self.unreduced)!r}")
        if self.reduced:
            sets.append(f"reduced={set(self.reduced)!r}")
        prefix = "" if not parts else f"{parts} " if parts.endswith(",") else f"{parts}, "
        kind = "" if self.unreduced_kind is None else f", unreduced_kind={self.unreduced_kind.name}"
        return f"P({prefix}{', '.join(sets)}{kind})"

    def _refuse_positional(self, what: str, instead: str) -> None:
        # With unreduced/reduced axes, the positional entries are only part of the spec.
        if self.unreduced or self.reduced:
            raise ValueError(f"Using {what} is dangerous when PartitionSpec has non-empty"
                             f" unreduced/reduced set. Please use {instead}")

    def __getitem__(self, i: Any) -> Any:
        self._refuse_positional("pspec[...]", "spec.partitions[...]")
        return self._partitions[i]

    def __iter__(self) -> Iterator[Any]:
        self._refuse_positional("*pspec", "*spec.partitions")
        return iter(self._partitions)

    def __len__(self) -> int:
        return len(self._partitions)

    def __add__(self, other: object) -> P:
        if isinstance(other, P):
            if self.unreduced_kind != other.unreduced_kind:
                raise TypeError("PartitionSpec can't be added if the unreduced_kind differs in"
                                f" self and other. Got self={self!r} and other={other!r}")
            return P(*self._partitions, *other._partitions,
                     unreduced={*self.unreduced, *other.unreduced},
                     reduced={*self.reduced, *other.reduced},
                     unreduced_kind=self.unreduced_kind)
        if isinstance(other, tuple):
            self._refuse_tuple_add(other, "__add__")
            return P(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other: object) -> P:
        if isinstance(other, tuple):
            self._refuse_tuple_add(other, "__radd__")
            return P(*other, *self._partitions)
        return NotImplemented

    def _refuse_tuple_add(self, other: tuple[Any, ...], method: str) -> None:
        for name, axes in (("unreduced", self.unreduced), ("reduced", self.reduced)):
            if axes:
                raise TypeError(f"other {other} cannot be of instance `tuple` when self {self}"
                                f" has {name} in `{method}` of PartitionSpec.")

    def index(self, value: Any) -> int:
        return self._partitions.index(_canonical_partition(value))

    def count(self, value: Any) -> int:
        return self._partitions.count(_canonical_partition(value))

    def update(self, partitions: Sequence[Any] | None = None, unreduced: Any = None,
               reduced: Any = None, **kwargs: Any) -> P:
        kind = kwargs.pop("unreduced_kind", self.unreduced_kind)
        return P(*(self._partitions if partitions is None else partitions),
                 unreduced=self.unreduced if unreduced is None else unreduced,
                 reduced=self.reduced if reduced is None else reduced, unreduced_kind=kind)

    def to_lo(self) -> list[P]:
        """The specs of the components an array lowers to: itself (the
        protocol shard_map uses for hi types' partition specs)."""
        return [self]

    def to_tangent_spec(self) -> P:
        return self

    def to_ct_spec(self) -> P:
        """The cotangent's spec: unreduced and reduced axes swap roles."""
        kind = UnreducedKind.sum if self.reduced else None
        return self.update(unreduced=self.reduced, reduced=self.unreduced, unreduced_kind=kind)

    def _normalized_spec_for_aval(self, ndim: int) -> P:
        parts = [None if p is _UNCONSTRAINED else p for p in self._partitions]
        return self.update(partitions=parts + [None] * (ndim - len(parts)))


P.__module__ = "spec"
PartitionSpec = P


def _check_spec(parts: tuple[Any, ...], unreduced: frozenset[AxisName],
                reduced: frozenset[AxisName], kind: Any) -> None:
    for name, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if None in axes:
            raise ValueError(f"{name} cannot contain None. All elements in {name} should refer"
                             " to the mesh axes.")
    if unreduced & reduced:
        raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                         f"Got unreduced: {unreduced} and reduced: {reduced}")
    if kind is not None and not isinstance(kind, UnreducedKind):
        raise TypeError("Expected unreduced_kind to be of type `jax.sharding.UnreducedKind`"
                        f" but got {type(kind)}")
    if not unreduced and kind is not None:
        raise ValueError("`unreduced_kind` should be `None` when `unreduced` is an empty set."
                         f" Got unreduced_kind={kind!r} and unreduced={unreduced!r}")
    for entry in parts:
        for axis in _names_of(entry):
            if axis in unreduced:
                raise ValueError("partitions cannot overlap with unreduced axes passed to"
                                 f" PartitionSpec. Got partitions: {parts} and unreduced axes:"
                                 f" {unreduced}")
            if axis in reduced:
                raise ValueError("partitions cannot overlap with reduced axes passed to"
                                 f" PartitionSpec. Got partitions: {parts} and reduced axes:"
                                 f" {reduced}")


# ---------------------------------------------------------------------------
# Shardings

_MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")


def _check_memory_kind(kind: Any, concrete: bool) -> None:
    if kind is None:
        return
    if not isinstance(kind, str):
        raise TypeError(f"memory_kind must be a string or None, got {kind!r}")
    if kind in _MEMORY_KINDS:
        return
    valid = ", ".join(_MEMORY_KINDS)
    if concrete:
        raise ValueError(f"Could not find memory addressable by device cpu. Device cpu can"
                         f" address the following memory kinds: {valid}. Got memory kind: {kind}")
    raise ValueError(f"Got invalid memory kind: {kind}. Valid memory kinds are: {valid}")


class Sharding:
    """What every sharding answers: its devices and the block each device holds."""

    @property
    def num_devices(self) -> int:
        raise NotImplementedError

    @property
    def memory_kind(self) -> str | None:
        raise NotImplementedError

    @property
    def device_set(self) -> set[Any]:
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    def _tiling(self, ndim: int) -> tuple[int, ...]:
        """Number of shards along each dimension."""
        raise NotImplementedError

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        pass

    def _checked_tiling(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        if not isinstance(global_shape, tuple):
            raise TypeError(f"global_shape must be a tuple of ints, got {global_shape!r}")
        self.check_compatible_aval(global_shape)
        tiling = self._tiling(len(global_shape))
        for dim, (size, ways) in enumerate(zip(global_shape, tiling)):
            if size % ways:
                raise IndivisibleError(
                    f"{self!r} implies that array axis {dim} is partitioned {ways} times, but"
                    f" the dimension size is {size} (full shape: {global_shape}, per-dimension"
                    f" tiling factors: {tiling} should evenly divide the shape)")
        return tiling

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        tiling = self._checked_tiling(global_shape)
        return tuple(s // t for s, t in zip(global_shape, tiling))

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Any, Index]:
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape: tuple[int, ...]
                                        ) -> dict[Any, Index]:
        """``devices_indices_map`` for the devices of this process."""
        here = current_backend().process_index()
        return {d: i for d, i in self.devices_indices_map(global_shape).items()
                if d.process_index == here}


class NamedSharding(Sharding):
    """A mesh and a PartitionSpec over its axes."""

    def __init__(self, mesh: Mesh | AbstractMesh, spec: P, *,
                 memory_kind: str | None = None) -> None:
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding mesh must be a jax.sharding.Mesh or AbstractMesh,"
                            f" got {mesh!r} of type {type(mesh).__name__}")
        if not isinstance(spec, P):
            raise TypeError(f"NamedSharding spec must be a PartitionSpec (jax.P), got {spec!r}"
                            f" of type {type(spec).__name__}")
        _check_memory_kind(memory_kind, isinstance(mesh, Mesh))
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = memory_kind
        _check_spec_on_mesh(mesh, spec)
        self._axes_by_rank: dict[int, tuple[tuple[AxisName, ...], ...]] = {}

    def axes_per_dim(self, ndim: int) -> tuple[tuple[AxisName, ...], ...]:
        """Per dimension of a rank-``ndim`` array, the mesh axes splitting it
        (major first); remembered per rank, as per-device programs ask at
        every step of a loop."""
        known = self._axes_by_rank.get(ndim)
        if known is None:
            entries = tuple(self.spec.partitions)
            entries += (None,) * (ndim - len(entries))
            known = self._axes_by_rank[ndim] = tuple(axis_names_of(e) for e in entries)
        return known

    @property
    def memory_kind(self) -> str | None:
        # A concrete mesh's devices default to their own memory.
        if self._memory_kind is None and isinstance(self.mesh, Mesh) and not self.mesh.empty:
            return "device"
        return self._memory_kind

    def __repr__(self) -> str:
        mem = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{mem})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, NamedSharding) and self.spec == other.spec
                and self.memory_kind == other.memory_kind and self.mesh == other.mesh)

    def __hash__(self) -> int:
        return hash((self.mesh, self.memory_kind, self.spec))

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        if self.mesh.size == 1:
            return True
        if self.spec.unreduced:
            return False
        return math.prod(self._tiling(len(self.spec))) == 1

    def _concrete_mesh(self, what: str) -> Mesh:
        if not isinstance(self.mesh, Mesh):
            raise ValueError(f"{what} is not implemented for `jax.sharding.AbstractMesh`.")
        return self.mesh

    @property
    def device_set(self) -> set[Any]:
        return set(self._concrete_mesh("device_set").devices.flat)

    @property
    def addressable_devices(self) -> set[Any]:
        return set(self._concrete_mesh("addressable_devices").devices.flat)

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def update(self, **kwargs: Any) -> NamedSharding:
        spec = kwargs.pop("spec", self.spec)
        return NamedSharding(kwargs.pop("mesh", self.mesh),
                             spec if isinstance(spec, P) else P(*spec),
                             memory_kind=kwargs.pop("memory_kind", self._memory_kind))

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        if len(aval_shape) < len(self.spec):
            extra = " For scalars the PartitionSpec should be P()" if not aval_shape else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)},"
                f" but was applied to a value of rank {len(aval_shape)}.{extra}")

    def _tiling(self, ndim: int) -> tuple[int, ...]:
        sizes = self.mesh.shape
        parts = self.spec.partitions + (None,) * (ndim - len(self.spec))
        return tuple(math.prod(sizes[a] for a in _names_of(p)) for p in parts)

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Any, Index]:
        """Device (mesh order) -> the slices of the global array it holds."""
        mesh = self._concrete_mesh("_device_assignment")
        if self.spec.unreduced:
            raise NotImplementedError("device_indices_map doesn't work with unreduced. Please"
                                      " file a bug at https://github.com/jax-ml/jax/issues")
        tiling = self._checked_tiling(global_shape)
        # coords[k] is every device's position along mesh axis k, in mesh (flat) order.
        coords = np.indices(mesh.devices.shape).reshape(len(mesh.axis_names), -1)
        position = dict(zip(mesh.axis_names, coords))
        sizes = mesh.shape
        parts = self.spec.partitions + (None,) * (len(global_shape) - len(self.spec))
        per_dim: list[list[slice]] = []
        for size, ways, entry in zip(global_shape, tiling, parts):
            if ways == 1:
                per_dim.append([slice(None)] * mesh.size)
                continue
            # Shard number along this dim: mixed radix over its axes, first axis major.
            shard = np.zeros(mesh.size, dtype=np.int64)
            for axis in _names_of(entry):
                shard = shard * sizes[axis] + position[axis]
            step = size // ways
            per_dim.append([slice(int(i) * step, (int(i) + 1) * step) for i in shard])
        return {dev: tuple(col[k] for col in per_dim)
                for k, dev in enumerate(mesh.devices.flat)}


def _check_spec_on_mesh(mesh: Mesh | AbstractMesh, spec: P) -> None:
    counts = collections.Counter(a for p in spec.partitions for a in _names_of(p))
    repeated = [a for a, c in counts.items() if c > 1]
    if repeated:
        shown = ", ".join(sorted(f"`{a}`" for a in repeated))
        raise DuplicateSpecError(
            "A single NamedSharding spec specification can map every mesh axis to at most one"
            f" positional dimension, but {spec} has duplicate entries for {shown}")
    for p in spec.partitions:
        for axis in _names_of(p):
            if axis not in mesh.axis_names:
                raise ValueError(f"Resource axis: {axis} of {spec} is not found in mesh:"
                                 f" {tuple(mesh.shape.keys())}.")
    if AxisType.Auto not in mesh.axis_types and _UNCONSTRAINED in spec.partitions:
        raise ValueError(f"{spec} cannot contain `P.UNCONSTRAINED` when no mesh axis_types are"
                         f" `Auto`. Got mesh axis_types: {mesh.axis_types}")
    types = mesh._name_to_type
    for label, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
        for axis in axes:
            if axis not in mesh.axis_names:
                raise ValueError(f"{label} axes {axis} is not found in "
                                 f"mesh.axis_names={mesh.axis_names}. Got pspec={spec}")
            if types[axis] != AxisType.Explicit:
                raise ValueError(f"{label} axes can only refer to mesh axes that is of type"
                                 f" `Explicit`. Got {label.lower()} axes: {axes} and mesh: {mesh}")


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Any, *, memory_kind: str | None = None) -> None:
        _check_memory_kind(memory_kind, True)
        self._device = device
        self._memory_kind = memory_kind

    @property
    def memory_kind(self) -> str | None:
        return "device" if self._memory_kind is None else self._memory_kind

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SingleDeviceSharding) and self._device == other._device
                and self.memory_kind == other.memory_kind)

    def __hash__(self) -> int:
        return hash((self._device, self.memory_kind))

    @property
    def num_devices(self) -> int:
        return 1

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def device_set(self) -> set[Any]:
        return {self._device}

    @property
    def addressable_devices(self) -> set[Any]:
        here = current_backend().process_index()
        return {self._device} if self._device.process_index == here else set()

    def _tiling(self, ndim: int) -> tuple[int, ...]:
        return (1,) * ndim

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Any, Index]:
        self._checked_tiling(global_shape)
        return {self._device: (slice(None),) * len(global_shape)}


# ---------------------------------------------------------- Auto and Explicit


def modify_spec_for_auto_manual(spec: P, mesh: AbstractMesh | Mesh) -> P:
    """Types name Explicit mesh axes only: the others are dropped from
    ``spec`` (partitions, unreduced and reduced alike)."""
    types = mesh._name_to_type

    def keep(names: Any) -> Any:
        kept = tuple(n for n in _names_of(names) if types.get(n) == AxisType.Explicit)
        return None if not kept else kept[0] if len(kept) == 1 else kept

    unreduced = {u for u in spec.unreduced if types.get(u) == AxisType.Explicit}
    reduced = {r for r in spec.reduced if types.get(r) == AxisType.Explicit}
    return P(*(keep(p) for p in spec.partitions), unreduced=unreduced, reduced=reduced,
             unreduced_kind=spec.unreduced_kind if unreduced else None)


def make_single_device_sharding(device: Any, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


# ------------------------------------------------------------ no_collectives


def _spec_axes(partitions: Sequence[Any]) -> set[AxisName]:
    return {a for p in partitions for a in axis_names_of(p)}


def _dims_of(partitions: Sequence[Any], axis: AxisName) -> list[int]:
    return [i for i, p in enumerate(partitions) if axis in axis_names_of(p)]


def _forbidden(axis: AxisName, prim: str, what: str) -> ForbiddenCollectiveError:
    return ForbiddenCollectiveError(
        f"Collective across axis '{axis}' is forbidden by `no_collectives`, but `{prim}` "
        f"{what}")


def forbid_lost_axes(prim: str, outs: Sequence[Any], avals: Sequence[Any]) -> None:
    """Under ``no_collectives``, a result may not drop an axis its operands
    are split or unreduced over (that takes a collective) unless it marks the
    axis unreduced (JAX's check of its sharding rules, and of reshard)."""
    forbidden = no_collectives.value
    ins = [a.sharding.spec for a in avals if getattr(a, "sharding", None) is not None]
    out_specs = [s.spec for s in outs if isinstance(s, NamedSharding)]
    if not forbidden or not ins or not out_specs:
        return
    in_parts = set().union(*(_spec_axes(s.partitions) for s in ins))
    in_unreduced = set().union(*(s.unreduced for s in ins))
    out_parts = set().union(*(_spec_axes(s.partitions) for s in out_specs))
    out_unreduced = set().union(*(s.unreduced for s in out_specs))
    for r in forbidden:
        if r in in_unreduced and r not in out_unreduced:
            raise _forbidden(r, prim, f"consumes unreduced axis '{r}' without keeping it "
                             "unreduced in the output.")
        if r in in_parts and r not in out_parts and r not in out_unreduced:
            raise _forbidden(r, prim, f"loses sharding axis '{r}' in the output without "
                             "marking it unreduced.")


def forbid_moved_axes(prim: str, in_parts: Sequence[Any], out_parts: Sequence[Any]) -> None:
    """Under ``no_collectives``, an axis split in both the natural and the
    requested result must split the same dimensions (moving it is an
    all-to-all)."""
    forbidden = no_collectives.value
    if not forbidden:
        return
    ins, outs = _spec_axes(in_parts), _spec_axes(out_parts)
    for r in forbidden:
        if r in ins and r in outs and _dims_of(in_parts, r) != _dims_of(out_parts, r):
            raise _forbidden(r, prim, f"changes the sharded dimension of axis '{r}'.")


def forbid_unmarked_reduction(entries: Sequence[Any], out_unreduced: frozenset[AxisName],
                              what: str) -> None:
    """Under ``no_collectives``, a contraction or reduction over dimensions
    split over a forbidden axis must leave the result unreduced over it;
    ``what`` (with ``{r}`` for the axis) ends JAX's message."""
    axes = _spec_axes(entries)
    for r in no_collectives.value:
        if r in axes and r not in out_unreduced:
            raise ForbiddenCollectiveError(
                f"Collective across axis '{r}' is forbidden by `no_collectives`, but "
                + what.format(r=r))
