"""The type system: dtypes, weak types, promotion, x64 canonicalisation, ArrayType.

Everything here is pure data and pure functions of it; nothing traces or runs.
SPEC.md section "Types" is the prose version of this module.
"""

from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union

import ml_dtypes
import numpy as np

from spec._src.core.config import config, x64_enabled

DType = np.dtype[Any]

# ---------------------------------------------------------------- dtype sets

bool_: DType = np.dtype(np.bool_)
int8: DType = np.dtype(np.int8)
int16: DType = np.dtype(np.int16)
int32: DType = np.dtype(np.int32)
int64: DType = np.dtype(np.int64)
uint8: DType = np.dtype(np.uint8)
uint16: DType = np.dtype(np.uint16)
uint32: DType = np.dtype(np.uint32)
uint64: DType = np.dtype(np.uint64)
float16: DType = np.dtype(np.float16)
float32: DType = np.dtype(np.float32)
float64: DType = np.dtype(np.float64)
complex64: DType = np.dtype(np.complex64)
complex128: DType = np.dtype(np.complex128)
bfloat16: DType = np.dtype(ml_dtypes.bfloat16)


def _ml(name: str) -> DType | None:
    scalar = getattr(ml_dtypes, name, None)
    return None if scalar is None else np.dtype(scalar)


def _present(names: Iterable[str]) -> list[DType]:
    return [d for d in (_ml(n) for n in names) if d is not None]


# The narrow floats ml_dtypes provides; none of them promotes implicitly.
FLOAT8_TYPES: list[DType] = _present((
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"))
NARROW_FLOAT_TYPES: list[DType] = _present(("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"))
SMALL_FLOAT_TYPES: list[DType] = NARROW_FLOAT_TYPES + FLOAT8_TYPES
NARROW_INT_TYPES: list[DType] = _present(("int1", "int2", "int4"))
NARROW_UINT_TYPES: list[DType] = _present(("uint1", "uint2", "uint4"))

SIGNED_TYPES = NARROW_INT_TYPES + [int8, int16, int32, int64]
UNSIGNED_TYPES = NARROW_UINT_TYPES + [uint8, uint16, uint32, uint64]
INT_TYPES = SIGNED_TYPES + UNSIGNED_TYPES
FLOAT_TYPES = SMALL_FLOAT_TYPES + [bfloat16, float16, float32, float64]
COMPLEX_TYPES = [complex64, complex128]
ALL_DTYPES: list[DType] = [bool_] + INT_TYPES + FLOAT_TYPES + COMPLEX_TYPES
_ALL_DTYPE_SET = frozenset(ALL_DTYPES)
# Custom (ml_dtypes) floats report numpy kind 'V'; classify them explicitly.
_CUSTOM_FLOATS = frozenset(SMALL_FLOAT_TYPES + [bfloat16])
_CUSTOM_INTS = frozenset(NARROW_INT_TYPES + NARROW_UINT_TYPES)

# The Python scalar types are the weak lattice nodes.
PYTHON_SCALAR_TYPES: tuple[type, ...] = (bool, int, float, complex)
_X64_TO_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


_PYTHON_SCALAR_SET = set(PYTHON_SCALAR_TYPES)


def is_python_scalar(x: Any) -> bool:
    """Exactly a Python bool/int/float/complex (or a registered weak scalar
    type). NumPy's float64 and complex128 subclass float and complex but are
    strongly typed, so the test is on the exact type, not isinstance."""
    return type(x) in _PYTHON_SCALAR_SET


def register_weak_scalar_type(t: type) -> None:
    """Treat ``t`` (a subclass of a Python scalar type) as that Python
    scalar: weakly typed. ``core.literals`` registers its typed scalars at
    import, as JAX's ``dtypes.register_weak_scalar_type``."""
    _PYTHON_SCALAR_SET.add(t)


class TypePromotionError(ValueError):
    """Raised when two dtypes have no implicit promotion path."""


def is_float(dt: DType) -> bool:
    return dt in _CUSTOM_FLOATS or dt.kind == "f"


def is_complex(dt: DType) -> bool:
    return dt.kind == "c"


def is_inexact(dt: DType) -> bool:
    return is_float(dt) or is_complex(dt)


# The dtype of tangents of integer and boolean primals: zero bytes per element.
FLOAT0: DType = np.dtype([("float0", np.void, 0)])


def tangent_dtype(dt: DType) -> DType:
    """Inexact primals have tangents of their own dtype; all others float0."""
    return dt if is_inexact(dt) else FLOAT0


def is_signed_int(dt: DType) -> bool:
    return dt.kind == "i" or dt in NARROW_INT_TYPES


def is_unsigned_int(dt: DType) -> bool:
    return dt.kind == "u" or dt in NARROW_UINT_TYPES


def is_int(dt: DType) -> bool:
    return is_signed_int(dt) or is_unsigned_int(dt)


def is_bool(dt: DType) -> bool:
    return dt == bool_


def kind(dt: DType) -> str:
    """numpy's kind letter, with ml_dtypes types classified by what they hold."""
    if dt in _CUSTOM_FLOATS:
        return "f"
    if dt in NARROW_INT_TYPES:
        return "i"
    if dt in NARROW_UINT_TYPES:
        return "u"
    return str(dt.kind)


def is_valid_dtype(dt: DType) -> bool:
    return dt in _ALL_DTYPE_SET


# ------------------------------------------------------- x64 canonicalisation

def canonicalize_dtype(dt: DType) -> DType:
    """The dtype a value of dtype ``dt`` gets in the current x64 mode."""
    if x64_enabled():
        return dt
    return _X64_TO_X32.get(dt, dt)


def default_int() -> DType:
    return int64 if x64_enabled() else int32


def default_uint() -> DType:
    return uint64 if x64_enabled() else uint32


def default_float() -> DType:
    return float64 if x64_enabled() else float32


def default_complex() -> DType:
    return complex128 if x64_enabled() else complex64


_SCALAR_DTYPES: dict[bool, dict[type, DType]] = {
    False: {bool: bool_, int: int32, float: float32, complex: complex64},
    True: {bool: bool_, int: int64, float: float64, complex: complex128},
}


def default_dtype_for_kind(k: str) -> DType:
    if k == "b":
        return bool_
    return {"i": default_int, "u": default_uint, "f": default_float,
            "c": default_complex}[k]()


def python_scalar_dtype(value_type: type) -> DType:
    """The (weak) dtype a Python scalar of this type gets."""
    known = _SCALAR_DTYPES[x64_enabled()].get(value_type)
    if known is not None:
        return known
    if issubclass(value_type, bool):
        return bool_
    if issubclass(value_type, int):
        return default_int()
    if issubclass(value_type, float):
        return default_float()
    return default_complex()


def to_dtype(spec: Any, fun_name: str = "") -> DType:
    """A user-given dtype specifier (name, type, dtype) to a canonical jax dtype.

    Explicit 64-bit requests under x64-off are truncated with JAX's warning
    (or error, per ``jax_explicit_x64_dtypes``).
    """
    if spec is None:
        raise ValueError("dtype must be specified.")
    if isinstance(spec, type) and spec in PYTHON_SCALAR_TYPES:
        return python_scalar_dtype(spec)
    try:
        dt = np.dtype(spec)
    except TypeError as err:
        raise TypeError(f"Cannot interpret {spec!r} as a data type") from err
    if dt not in _ALL_DTYPE_SET:
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dt}{where}")
    return explicit_dtype(dt, fun_name)


def explicit_dtype(dt: DType, fun_name: str = "") -> DType:
    canonical = canonicalize_dtype(dt)
    if canonical == dt:
        return dt
    mode = config.jax_explicit_x64_dtypes
    if mode == "allow":
        return dt
    where = f" requested in {fun_name}" if fun_name else ""
    msg = (f"Explicitly requested dtype {dt}{where} is not available, and will be "
           f"truncated to dtype {canonical}. To enable more dtypes, set the "
           "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
           "environment variable.")
    if mode == "error":
        raise ValueError(msg)
    warnings.warn(msg, stacklevel=4)
    return canonical


def refuse_jax_array(value: Any) -> None:
    """JAX converts an object with ``__jax_array__`` only where an array is
    asked for by name (``jnp.asarray`` and the functions and operators that
    call it); taking the type of one as an operand is a ValueError."""
    if hasattr(type(value), "__jax_array__"):
        raise ValueError("Triggering __jax_array__() during abstractification is no longer "
                         "supported. To avoid this error, either explicitly convert your "
                         "object using jax.numpy.array(), or register your object as a pytree.")


def from_jax_array(value: Any) -> Any:
    """``value.__jax_array__()`` for an object that has it, else ``value``
    (the conversion of ``jnp.asarray`` and of the functions that call it)."""
    if hasattr(type(value), "__jax_array__") and not isinstance(value, Typed):
        return value.__jax_array__()
    return value


def dtype_of_value(value: Any) -> DType:
    """The canonical dtype of a concrete value (no warning: implicit conversion)."""
    if is_python_scalar(value):
        return python_scalar_dtype(type(value))
    aval = getattr(value, "aval", None)
    if isinstance(aval, ArrayType):
        return aval.dtype
    dt = getattr(value, "dtype", None)
    if dt is None:
        refuse_jax_array(value)
        dt = np.asarray(value).dtype
    dt = np.dtype(dt)
    if dt == FLOAT0:
        return FLOAT0  # zero tangents of integers, as JAX returns them
    if dt not in _ALL_DTYPE_SET:
        raise TypeError(f"Value {value!r} with dtype {dt} is not a valid JAX array type. "
                        "Only arrays of numeric types are supported by JAX.")
    return canonicalize_dtype(dt)


# ------------------------------------------------------------------ promotion
# The lattice (JEP 9407): each node maps to the nodes immediately above it.
# Weak nodes are the Python types int, float and complex.

LatticeNode = Union[DType, type]


def _lattice(x64: bool) -> dict[LatticeNode, list[LatticeNode]]:
    i_, f_, c_ = int, float, complex
    narrow_ints: list[LatticeNode] = [*NARROW_INT_TYPES, *NARROW_UINT_TYPES]
    graph: dict[LatticeNode, list[LatticeNode]] = {
        bool_: [i_],
        i_: [uint8, int8, *narrow_ints],
        uint8: [int16, uint16], uint16: [int32, uint32],
        # Without x64, uint32 joins int32 at uint64's bound rather than int64.
        uint32: [int64, uint64] if x64 else [int32, uint64],
        uint64: [f_],
        int8: [int16], int16: [int32], int32: [int64], int64: [f_],
        f_: [*SMALL_FLOAT_TYPES, bfloat16, float16, c_],
        bfloat16: [float32], float16: [float32], float32: [float64, complex64],
        float64: [complex128],
        c_: [complex64], complex64: [complex128], complex128: [],
    }
    for t in SMALL_FLOAT_TYPES + NARROW_INT_TYPES + NARROW_UINT_TYPES:
        graph[t] = []
    return graph


def _upper_bounds(x64: bool) -> dict[LatticeNode, frozenset[LatticeNode]]:
    graph = _lattice(x64)
    bounds: dict[LatticeNode, set[LatticeNode]] = {n: {n} for n in graph}
    changed = True
    while changed:  # transitive closure; the graph has ~40 nodes
        changed = False
        for node, above in bounds.items():
            grown = above.union(*(graph[m] for m in above))
            if grown != above:
                bounds[node] = grown
                changed = True
    return {n: frozenset(b) for n, b in bounds.items()}


def _strict_upper_bounds() -> dict[LatticeNode, frozenset[LatticeNode]]:
    """``jax_numpy_dtype_promotion="strict"``: no implicit promotion between
    dtypes; a weak Python type joins any dtype of its kind or a wider kind."""
    ints: list[LatticeNode] = [*INT_TYPES]
    floats: list[LatticeNode] = [*FLOAT_TYPES]
    complexes: list[LatticeNode] = [*COMPLEX_TYPES]
    bounds: dict[LatticeNode, frozenset[LatticeNode]] = {t: frozenset({t}) for t in ALL_DTYPES}
    bounds[complex] = frozenset({complex, *complexes})
    bounds[float] = frozenset({float, *floats}) | bounds[complex]
    bounds[int] = frozenset({int, *ints}) | bounds[float]
    return bounds


# Lattices by mode: standard promotion with x64 on or off, and strict.
_UPPER_BOUNDS = {True: _upper_bounds(True), False: _upper_bounds(False),
                 "strict": _strict_upper_bounds()}


def lattice_mode() -> bool | str:
    """The lattice in force: "strict", or the x64 flag for standard promotion."""
    if config.jax_numpy_dtype_promotion == "strict":
        return "strict"
    return x64_enabled()


def _node_name(node: LatticeNode) -> str:
    return node.__name__ if isinstance(node, type) else str(node)


@functools.lru_cache(maxsize=4096)
def least_upper_bound(mode: bool | str, *nodes: LatticeNode) -> LatticeNode:
    upper = _UPPER_BOUNDS[mode]
    for n in nodes:
        if n not in upper:
            # Extended dtypes (PRNG keys) are not in the lattice: a ValueError,
            # as JAX's (jnp's arithmetic on keys and other dtypes raises its
            # TypeError before promoting: spec.numpy's check_for_prngkeys).
            raise ValueError(f"dtype={n!r} is not a valid dtype for JAX type promotion.")
    common = frozenset.intersection(*(upper[n] for n in nodes))
    least = (common & set(nodes)) or {c for c in common if common <= upper[c]}
    if len(least) == 1:
        return next(iter(least))
    names = tuple(_node_name(n) for n in nodes)
    if any(n in FLOAT8_TYPES for n in nodes):
        reason = " To avoid unintended promotion, 8-bit floats do not support implicit promotion."
    elif any(n in NARROW_FLOAT_TYPES for n in nodes):
        reason = (" To avoid unintended promotion, 4- and 6-bit floats do not support implicit"
                  " promotion.")
    elif any(n in _CUSTOM_INTS for n in nodes):
        reason = (" To avoid unintended promotion, 1-bit, 2-bit and 4-bit integers do not"
                  " support implicit promotion.")
    else:
        reason = ""
    if mode == "strict":
        reason = (" jax_numpy_dtype_promotion is 'strict': dtypes do not promote "
                  "implicitly (set it to 'standard' to allow it).")
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path.{reason} "
        "Try explicitly casting inputs to the desired output type, e.g. x.astype('float32').")


def _lattice_node(dt: DType, weak: bool) -> LatticeNode:
    if not weak or dt == bool_:
        return dt
    if is_complex(dt):
        return complex
    if is_float(dt):
        return float
    return int


def _as_dtype_and_weak(x: Any) -> tuple[DType, bool]:
    """(dtype, weak) of a value, a Python scalar type, or a dtype specifier."""
    aval = getattr(x, "aval", None)
    if type(aval) is ArrayType:
        return aval.dtype, aval.weak_type
    if isinstance(x, type) and x in PYTHON_SCALAR_TYPES:
        return python_scalar_dtype(x), x is not bool
    if is_python_scalar(x):
        return python_scalar_dtype(type(x)), not isinstance(x, bool)
    aval = getattr(x, "aval", None)
    if isinstance(aval, ArrayType):
        return aval.dtype, aval.weak_type
    if isinstance(x, ArrayType):
        return x.dtype, x.weak_type
    if isinstance(x, (str, np.dtype)) or (isinstance(x, type) and issubclass(x, np.generic)):
        return to_dtype(x, "result_type"), False
    return dtype_of_value(x), False


def result_type_and_weak(*args: Any) -> tuple[DType, bool]:
    """JAX's ``result_type``, returning also whether the result is weak."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = tuple(_as_dtype_and_weak(default_float() if a is None else a) for a in args)
    return _result_of_pairs(pairs, lattice_mode(), x64_enabled())


@functools.lru_cache(maxsize=4096)
def _result_of_pairs(pairs: tuple[tuple[DType, bool], ...], mode: bool | str, x64: bool
                     ) -> tuple[DType, bool]:
    dts = [d for d, _ in pairs]
    weaks = [w for _, w in pairs]
    if len(pairs) == 1:
        out, weak = pairs[0]
    elif len(set(dts)) == 1 and not all(weaks):
        out, weak = dts[0], False
    elif all(weaks) and mode != "strict":
        # Join the strong counterparts, then mark the result weak.
        node = least_upper_bound(mode, *dict.fromkeys(dts))
        out, weak = _node_dtype(node), True
    else:
        node = least_upper_bound(mode, *dict.fromkeys(_lattice_node(d, w) for d, w in pairs))
        out, weak = _node_dtype(node), isinstance(node, type)
    weak = weak and out != bool_
    if weak:
        out = _default_for_kind(kind(out), x64)
    return (out if x64 else _X64_TO_X32.get(out, out)), weak


def _default_for_kind(k: str, x64: bool) -> DType:
    wide = {"b": bool_, "i": int64, "u": uint64, "f": float64, "c": complex128}[k]
    return wide if x64 else _X64_TO_X32.get(wide, wide)


def _node_dtype(node: LatticeNode) -> DType:
    return python_scalar_dtype(node) if isinstance(node, type) else node


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """``jnp.result_type`` / ``jax.dtypes.result_type``. An object with
    ``__jax_array__`` has no dtype here (JAX asks its type for one, without
    converting it): a TypeError, as JAX's."""
    for a in args:
        if hasattr(type(a), "__jax_array__") and not isinstance(a, Typed):
            raise TypeError(f"Cannot determine dtype of {a}")
    dt, weak = result_type_and_weak(*args)
    return (dt, weak) if return_weak_type_flag else dt


def promote_types(a: Any, b: Any) -> DType:
    """``jnp.promote_types``: Python scalar types act as weak lattice nodes."""
    na: LatticeNode = a if a in (int, float, complex) else np.dtype(a)
    nb: LatticeNode = b if b in (int, float, complex) else np.dtype(b)
    node = least_upper_bound(lattice_mode(), na, nb)
    return np.dtype(node)


# ------------------------------------------------------------------ ArrayType

_SHORT_PREFIXES = (("bfloat", "bf"), ("float", "f"), ("complex", "c"), ("uint", "u"), ("int", "i"))


@functools.lru_cache(maxsize=None)
def short_dtype_name(dt: DType) -> str:
    """``float32`` -> ``f32``, ``bfloat16`` -> ``bf16``, ``bool`` and
    ``float0`` stay."""
    name = dtype_name(dt)
    if dt == FLOAT0:
        return name
    for long, short in _SHORT_PREFIXES:
        if name.startswith(long):
            return short + name[len(long):]
    return name


def dtype_name(dt: DType) -> str:
    """A dtype's name as JAX prints it (NumPy calls float0 "void")."""
    return "float0" if dt == FLOAT0 else dt.name


Shape = tuple[int, ...]


class MemorySpace(enum.Enum):
    """Where a value lives (``jax.memory.Space``): device memory, host memory
    (a sharding's ``pinned_host`` memory kind), or either (``Any``, which
    Pallas-style refs use). Printed as JAX prints its enum
    (``MemorySpace.Host``); a type in host memory prints ``f32<host>[8]``."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"


def memory_space_of_kind(kind: str | None) -> MemorySpace:
    """The memory space a sharding's memory kind puts a value's type in:
    only ``pinned_host`` is host memory to the type system (an
    ``unpinned_host`` array types as device memory, as in JAX)."""
    return MemorySpace.Host if kind == "pinned_host" else MemorySpace.Device


def memory_kind_of_space(space: MemorySpace) -> str:
    """The memory kind a value of a memory space lives in."""
    return "pinned_host" if space is MemorySpace.Host else "device"


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualAxisType:
    """Per manual mesh axis: varying, unreduced or reduced (else invariant);
    ``unreduced_kind`` how unreduced values combine (None: a sum)."""

    varying: frozenset[Any] = frozenset()
    unreduced: frozenset[Any] = frozenset()
    reduced: frozenset[Any] = frozenset()
    unreduced_kind: Any = None


# shard_map's typing of arrays (its block type, and the type its blocks
# make), for ``ArrayType.shard``/``unshard``: a hi type's own ``shard`` and
# ``unshard`` build on its components'. shard_map's module installs them.
SHARD_MAP_TYPING: dict[str, Callable[..., ArrayType]] = {}


@dataclass(frozen=True, slots=True)
class ArrayType:
    """The type of an array value: shape, dtype and weak type.

    Sharding fields are added by the sharding issue; equality and hashing
    include every field, so a cache keyed on ArrayTypes keys on all of them.
    """

    shape: Shape
    dtype: DType
    weak_type: bool = False
    # A NamedSharding (spec._src.core.sharding) in explicit sharding mode, or None when
    # no mesh is involved. Part of equality and hashing, so jit caches and
    # the typing memo key on it.
    sharding: Any = None
    # Inside shard_map: the manual mesh axes along which the value may
    # differ from device to device ("varying"); empty everywhere else.
    vma: frozenset[Any] = frozenset()
    # Inside shard_map: manual axes along which the value is unreduced
    # (per-device partial sums) or reduced (already summed; replicated).
    munreduced: frozenset[Any] = frozenset()
    mreduced: frozenset[Any] = frozenset()
    # Host or device memory (``jax.memory.Space``): part of the type, so a
    # value in host memory meets only host or rank-0 values in an operation.
    memory_space: MemorySpace = MemorySpace.Device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def manual_axis_type(self) -> ManualAxisType:
        """The manual-axis part of the type (inside shard_map)."""
        return ManualAxisType(varying=self.vma, unreduced=self.munreduced, reduced=self.mreduced)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, **changes: Any) -> ArrayType:
        return replace(self, **changes)

    def strip_weak_type(self) -> ArrayType:
        return replace(self, weak_type=False) if self.weak_type else self

    def tangent_type(self) -> ArrayType:
        """The type of this type's tangents (float0 for integers and booleans)."""
        dt = tangent_dtype(self.dtype)
        return self if dt is self.dtype else replace(self, dtype=dt)

    # The hi-type protocol (SPEC.md, "Hi types"), so that types built from
    # component types (a tuple type) treat array components alike.
    def lo_ty(self) -> list[ArrayType]:
        return [self]

    def lower_val(self, x: Any) -> list[Any]:
        return [x]

    def raise_val(self, x: Any) -> Any:
        return x

    def to_tangent_aval(self) -> ArrayType:
        return self.tangent_type()

    def dec_rank(self, size: int | None, axis: int | None) -> ArrayType:
        """The type of one slice along ``axis`` (``None``: unmapped)."""
        if axis is None:
            return self
        return replace(self, shape=self.shape[:axis] + self.shape[axis + 1:])

    def inc_rank(self, size: int, axis: int | None) -> ArrayType:
        """The type of ``size`` values of this type stacked along ``axis``."""
        if axis is None:
            return self
        return replace(self, shape=self.shape[:axis] + (size,) + self.shape[axis:])

    def shard(self, mesh: Any, manual_axes: frozenset[Any], check_vma: bool, spec: Any
              ) -> ArrayType:
        """One device's block type inside ``shard_map``, split by ``spec``."""
        return SHARD_MAP_TYPING["shard"](self, mesh, manual_axes, check_vma, spec)

    def unshard(self, mesh: Any, check_vma: bool, spec: Any) -> ArrayType:
        """The type of the array a ``shard_map`` result's blocks (of this
        type) make, put together by ``spec``."""
        return SHARD_MAP_TYPING["unshard"](self, mesh, check_vma, spec)

    def ct_type(self) -> ArrayType:
        """The type of this type's cotangents: the tangent type, whose sharding
        is the primal's (sharded stays sharded, replicated stays replicated),
        except that unreduced and reduced mesh axes swap roles (summing a
        replicated value's cotangent is what transposing a replication means)."""
        t = self.tangent_type()
        if self.munreduced or self.mreduced:
            t = replace(t, munreduced=self.mreduced, mreduced=self.munreduced)
        spec = getattr(self.sharding, "spec", None)
        if spec is None or not (spec.unreduced or spec.reduced):
            return t
        return replace(t, sharding=self.sharding.update(spec=spec.to_ct_spec()))

    def _dims(self) -> str:
        """``3,4``; with a sharding, sharded dims carry their mesh axes
        (``8@X``, ``8@(X,Y)``) and unreduced/reduced axes follow the
        brackets (see ``_suffix``)."""
        spec = getattr(self.sharding, "spec", None)
        if spec is None:
            return ",".join(str(d) for d in self.shape)
        partitions = list(getattr(spec, "partitions", spec))
        parts = partitions + [None] * (len(self.shape) - len(partitions))
        return ",".join(str(d) if p is None else f"{d}@{_axes_text(p)}"
                        for d, p in zip(self.shape, parts))

    def _suffix(self) -> str:
        """``{V:x, U:X, R:(X,Y)}``: varying manual axes, unreduced axes
        (``U_max``/``U_min`` for those kinds) and reduced ones, each in mesh
        order; nothing when all are empty."""
        spec = getattr(self.sharding, "spec", None)
        unreduced = self.munreduced | (frozenset() if spec is None else spec.unreduced)
        reduced = self.mreduced | (frozenset() if spec is None else spec.reduced)
        if not (self.vma or unreduced or reduced):
            return ""
        order = list(getattr(getattr(self.sharding, "mesh", None), "axis_names", ()))
        kind = getattr(spec, "unreduced_kind", None)
        u_tag = "U" if kind is None or kind.name == "sum" else f"U_{kind.name}"
        parts = [f"{tag}:{_axes_text(_mesh_ordered(axes, order))}"
                 for tag, axes in (("V", self.vma), (u_tag, unreduced), ("R", reduced)) if axes]
        return "{" + ", ".join(parts) + "}"

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        """``float32[3,4]``, or with ``short_dtypes`` the form used in
        jaxprs: ``f32[3,4]``, ``f32[8@X,4]{U:Y}``. (JAX's ``mesh_axis_types``
        is accepted; spec's axis types are in the suffix.)"""
        custom = getattr(self.dtype, "_format_aval", None)
        if custom is not None:  # an extended dtype printing its own types (tokens)
            return str(custom(self, short_dtypes))
        name = short_dtype_name(self.dtype) if short_dtypes else dtype_name(self.dtype)
        return f"{name}{self._space()}[{self._dims()}]{self._suffix()}"

    def _space(self) -> str:
        """``<host>`` (``<any>``) after the dtype; nothing for device memory."""
        space = self.memory_space
        return "" if space is MemorySpace.Device else f"<{space.name.lower()}>"

    def __str__(self) -> str:
        """``jax.typeof`` form: ``float32[3,4]``, weak types prefixed ``~``."""
        custom = getattr(self.dtype, "_format_aval", None)
        if custom is not None:
            return str(custom(self, False))
        return (("~" if self.weak_type else "") + f"{dtype_name(self.dtype)}{self._space()}"
                f"[{self._dims()}]{self._suffix()}")

    def __repr__(self) -> str:
        custom = getattr(self.dtype, "_format_aval", None)
        if custom is not None:
            return str(custom(self, False))
        weak = ", weak_type=True" if self.weak_type else ""
        return (f"ShapedArray({dtype_name(self.dtype)}{self._space()}[{self._dims()}]"
                f"{self._suffix()}"
                f"{weak})")


# The axis order of the meshes seen (shard_map registers its mesh): types
# print their varying axes in mesh order, as JAX does.
AXIS_ORDER: dict[Any, int] = {}


def _mesh_ordered(axes: Any, order: list[Any]) -> tuple[Any, ...]:
    def key(a: Any) -> tuple[int, int, str]:
        if a in order:
            return (0, order.index(a), "")
        return (1, AXIS_ORDER.get(a, len(AXIS_ORDER)), str(a))
    return tuple(sorted(axes, key=key))


def _axes_text(axes: Any) -> str:
    """One mesh axis as its name; several as ``(X,Y)``."""
    if isinstance(axes, (tuple, list)):
        return axes[0] if len(axes) == 1 else "(" + ",".join(axes) + ")"
    return str(axes)


ShapedArray = ArrayType


def check_shape(shape: Any, fun_name: str, arg_name: str = "shape",
                nonnegative: bool = True) -> Shape:
    """Validate a static shape argument: a sequence of ints, non-negative unless
    ``nonnegative`` is False (a caller that checks the sizes later)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, np.ndarray) and shape.ndim == 0:
        raise TypeError(f"{fun_name} {arg_name} must be a sequence of integers, "
                        f"got the 0-d array {shape!r}.")
    try:
        shape = tuple(shape)  # any iterable, a set included, as JAX's lax reads it
    except TypeError:
        raise TypeError(f"{fun_name} {arg_name} must be an iterable of integers, "
                        f"got {type(shape)}.") from None
    dims: list[int] = []
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, (bool, np.bool_)):
            raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                            f"got {tuple(shape)}.")
        if d < 0 and nonnegative:
            raise TypeError(f"{fun_name} {arg_name} must have every element be nonnegative, "
                            f"got {tuple(shape)}.")
        dims.append(int(d))
    return tuple(dims)


def broadcast_shapes(name: str, shapes: Sequence[Shape]) -> Shape:
    """The elementwise result shape: rank-0 operands broadcast freely; the rest
    must agree in rank and, per axis, in size (1 stretches)."""
    ranked = [s for s in shapes if s]
    if not ranked:
        return ()
    ranks = {len(s) for s in ranked}
    if len(ranks) != 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
    out: list[int] = []
    for dims in zip(*ranked):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(str(tuple(s)) for s in ranked)}.")
        out.append(big.pop() if big else 1)
    return tuple(out)


def value_type(value: Any) -> ArrayType:
    """The type of a concrete value: Python scalars are weak."""
    aval = getattr(value, "aval", None)
    if isinstance(aval, ArrayType):
        return aval
    if is_python_scalar(value):
        return ArrayType((), python_scalar_dtype(type(value)), not isinstance(value, bool))
    arr = np.asarray(value) if not isinstance(value, np.ndarray) else value
    return ArrayType(tuple(arr.shape), dtype_of_value(arr), False)


def iinfo_bits(dt: DType) -> int:
    if dt in _CUSTOM_INTS:
        return int(ml_dtypes.iinfo(dt).bits)  # type: ignore[no-untyped-call]
    return int(dt.itemsize * 8)



class Typed:
    """A value that carries its type in ``aval`` (arrays, tracers, refs):
    its shape, dtype, rank and size are the type's."""

    __slots__ = ()
    aval: Any

    @property
    def shape(self) -> tuple[int, ...]:
        shape: tuple[int, ...] = self.aval.shape
        return shape

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self.aval.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return int(self.aval.ndim)

    @property
    def size(self) -> int:
        return int(self.aval.size)

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
