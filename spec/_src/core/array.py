"""``spec.Array``: a concrete, typed array value.

An Array is a NumPy buffer together with its ArrayType. The buffer's shape
and dtype always equal the type's (checked when an Array is made from a
primitive's output); the type adds what NumPy cannot hold, such as the weak
type flag (and, with the sharding issue, the sharding).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Self

import numpy as np

from spec._src.core.backend import current_backend
from spec._src.core.config import config
from spec._src.core.errors import JaxRuntimeError
from spec._src.core.sharding import NamedSharding, P, SingleDeviceSharding
from spec._src.core.types import ArrayType, MemorySpace, Typed, dtype_of_value


# Read on every array made: the flag store's dict itself, not the accessor.
_CONFIG_VALUES = config._values


class SpecInternalError(AssertionError):
    """A rule broke an invariant of the specification itself (a spec bug)."""


class Array(Typed):
    # ``_py`` marks a host constant made from a Python scalar (JAX's typed
    # scalars): staged, it is a jaxpr literal, not a constant. It holds the
    # value to print: the Python scalar itself when its type was kept (JAX
    # prints 1e-07, not the float32 rounding of it), else the converted value.
    # ``_shards``: for an array sharded over a mesh, one buffer per device of
    # the mesh (mesh order); ``_sharding`` its concrete NamedSharding. Both
    # None for an array on one device. ``_val`` is the global value, or None
    # where this process does not hold all of it (MPI ranks as devices: the
    # other blocks live in other processes; ``_shards`` has None there).
    # ``_device``: for an array on one device, that device, or what
    # ``jax_default_device`` was when the array was made (None or a platform
    # name: the first device). ``_committed``: placed there explicitly
    # (``device_put`` to a device, or computed from committed operands).
    # ``_memory_kind``: the memory kind it was put in (``device_put``), or
    # None: the one its type's memory space names. ``_deleted``: None while
    # the buffers exist; after ``delete()``, whether the array was committed
    # (``_committed`` is then True, so that every fast path, which takes
    # uncommitted arrays only, leaves a deleted array to the checked paths).
    __slots__ = ("_val", "aval", "_py", "_shards", "_sharding", "_device", "_committed",
                 "_memory_kind", "_deleted", "__weakref__")
    __array_priority__ = 100

    _val: np.ndarray | None
    aval: ArrayType
    _py: Any
    _shards: Any
    _sharding: Any
    _device: Any
    _committed: bool
    _memory_kind: str | None
    _deleted: bool | None

    @classmethod
    def _from_checked(cls, value: np.ndarray, aval: ArrayType, prim: Any) -> Array:
        if value.shape != aval.shape or value.dtype != aval.dtype:
            make = getattr(aval.dtype, "_make_array", None)
            if make is not None:  # an extended dtype (PRNG keys) has its own array class
                return make(value, aval)  # type: ignore[no-any-return]
            raise SpecInternalError(
                f"impl of {prim} produced {value.dtype}{list(value.shape)}, "
                f"its typing rule says {aval}")
        # Inline, not through a shared constructor: every eager result comes
        # through here.
        out = object.__new__(cls)
        out._val = value
        out.aval = aval
        out._py = None
        out._shards = None
        out._sharding = None
        out._device = _CONFIG_VALUES["jax_default_device"]
        out._committed = False
        out._memory_kind = None
        out._deleted = None
        return out

    @classmethod
    def _placed_nowhere(cls, value: np.ndarray, aval: ArrayType) -> Self:
        """An uncommitted array of ``value`` with no device recorded (the
        arrays of extended dtypes, keys and tokens, are made this way)."""
        out = object.__new__(cls)
        out._val = value
        out.aval = aval
        out._py = None
        out._shards = None
        out._sharding = None
        out._device = None
        out._committed = False
        out._memory_kind = None
        out._deleted = None
        return out

    @classmethod
    def _spanning(cls, aval: ArrayType, shards: Any, sharding: Any) -> Array:
        """An array whose blocks live in several processes; this one holds
        ``shards`` (None at the others' devices)."""
        out = object.__new__(cls)
        out._val = None
        out.aval = aval
        out._py = None
        out._shards = shards
        out._sharding = sharding
        out._device = None
        out._committed = True
        out._memory_kind = None
        out._deleted = None
        return out

    @property
    def _value(self) -> np.ndarray:
        value = self._val
        if value is None:
            self.check_not_deleted()
            raise RuntimeError(
                "Fetching value for `jax.Array` that spans non-addressable (non process local)"
                " devices is not possible. You can use"
                " `jax.experimental.multihost_utils.process_allgather` to print the global"
                " array or use `.addressable_shards` method of jax.Array to inspect the"
                " addressable (process local) shards.")
        return value

    @property
    def is_fully_addressable(self) -> bool:
        return self._val is not None or self._shards is None or all(
            b is not None for b in self._shards)

    @property
    def is_fully_replicated(self) -> bool:
        s = self._sharding
        return s is None or bool(s.is_fully_replicated)

    # -------------------------------------------------------------- attributes
    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def itemsize(self) -> int:
        return int(self.aval.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def block_until_ready(self) -> Array:
        if self._deleted is not None:
            raise JaxRuntimeError("INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or "
                                  "donated buffer")
        return self

    def copy_to_host_async(self) -> None:
        """Starts copying the array to the host: its value is always there."""

    def on_device_size_in_bytes(self) -> int:
        """The bytes the array takes on all its devices: one shard per device."""
        s = self.sharding
        shard = s.shard_shape(tuple(self.aval.shape))
        return int(np.prod(shard, dtype=np.int64)) * self.itemsize * len(s.device_set)

    # ------------------------------------------------------------- placement
    @property
    def sharding(self) -> Any:
        """Where the array lives: its NamedSharding, or the single device."""
        kind = self._memory_kind
        if kind is None and self.aval.memory_space is MemorySpace.Host:
            kind = "pinned_host"  # computed from values in host memory
        s = self._sharding
        if s is not None:
            return s if kind is None or s.memory_kind == kind else s.with_memory_kind(kind)
        return SingleDeviceSharding(self._single_device(), memory_kind=kind)

    def _single_device(self) -> Any:
        device = self._device
        if device is None or isinstance(device, str):
            return current_backend().local_devices(None)[0]
        return device

    @property
    def device(self) -> Any:
        """The array's device; for an array over several devices, its sharding."""
        if self._sharding is not None:
            return self._sharding
        return self._single_device()

    @property
    def committed(self) -> bool:
        """Whether the array was placed explicitly: computations on it run
        where it lives, and meeting an array committed elsewhere is an error."""
        deleted = self._deleted
        committed = self._committed if deleted is None else deleted
        return committed or self._sharding is not None

    def unsafe_buffer_pointer(self) -> int:
        """The address of the array's one buffer."""
        if self._deleted is not None:
            raise JaxRuntimeError("INVALID_ARGUMENT: UnsafeBufferPointer called on deleted or "
                                  "donated buffer")
        if self._sharding is not None and len(self._sharding.mesh.devices.flat) > 1:
            raise JaxRuntimeError(
                "INVALID_ARGUMENT: UnsafeBufferPointer() is supported only for unsharded "
                "arrays.")
        return int(self._value.ctypes.data)

    def devices(self) -> set[Any]:
        return {shard.device for shard in self.addressable_shards}

    @property
    def addressable_shards(self) -> list[Shard]:
        """One shard per device: its device, its index into the global
        array, its replica id and its local buffer."""
        if self._sharding is None or self._shards is None:
            full = tuple(slice(None) for _ in self.aval.shape)
            return [Shard(self._single_device(), full, 0, self._value)]
        return _shards_of(self._sharding, self.aval.shape, self._placed_buffers())

    def _placed_buffers(self) -> Any:
        """The buffers as ``self.sharding`` places them. They are the
        execution's own, except where the placement splits over Auto mesh
        axes, which types (and so the per-device programs) do not see."""
        typed = self.aval.sharding
        placed = self._sharding.spec
        if typed is not None and typed.spec.partitions == placed._normalized_spec_for_aval(
                self.ndim).partitions:
            return self._shards
        mesh = self._sharding.mesh
        by_blocks = NamedSharding(mesh, P(*placed._normalized_spec_for_aval(self.ndim).partitions))
        indices = by_blocks.devices_indices_map(self.aval.shape)
        procs = [d.process_index for d in mesh.devices.flat]
        me = current_backend().process_index()
        everywhere = not any(procs)  # one process holds every device
        value = self._value
        return tuple(value[indices[d]] if everywhere or p == me else None
                     for d, p in zip(mesh.devices.flat, procs))

    def is_deleted(self) -> bool:
        return self._deleted is not None

    def delete(self) -> None:
        """Frees the array's buffers. Its type (shape, dtype, sharding) stays
        readable; anything that reads its values is JAX's RuntimeError."""
        if self._deleted is None:
            self._deleted = self._committed
            self._committed = True
            self._val = None
            self._shards = None

    def check_not_deleted(self) -> None:
        if self._deleted is not None:
            raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")

    # -------------------------------------------------------- conversion to Python
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False and dtype is not None and np.dtype(dtype) != self._value.dtype:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        arr = self._value if dtype is None else self._value.astype(dtype)
        return arr.copy() if copy else arr

    def _scalar(self, what: str) -> Any:
        # int/float/complex/index take rank-0 arrays only (a size-1 vector
        # is refused, unlike NumPy); truth testing and item() accept size 1.
        if self.ndim != 0:
            raise TypeError("Only scalar arrays can be converted to Python scalars; "
                            f"got arr.ndim={self.ndim} ({what}).")
        return self._value.item()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self._value.reshape(()))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index, "
                            f"got {self.aval}.")
        return int(self._scalar("index"))

    def item(self, *args: Any) -> Any:
        return self._value.item(*args)

    def tolist(self) -> Any:
        return self._value.tolist()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Array]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        row_type = ArrayType(self.shape[1:], self.dtype, self.weak_type)
        return iter([Array._from_checked(np.array(row), row_type, "iter") for row in self._value])

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'Array'")

    def __reduce__(self) -> Any:
        return (_rebuild, (self._value, self.aval))

    def __format__(self, spec: str) -> str:
        if not self.shape:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    # --------------------------------------------------------------- printing
    def _unreduced(self) -> bool:
        s = getattr(self, "_sharding", None)
        return s is not None and bool(s.spec.unreduced)

    def __repr__(self) -> str:
        if self._unreduced():  # partial sums: no one value to show
            return (f"Array(shape={self.shape}, dtype={self.dtype.name}, "
                    f"sharding={self._sharding})")
        prefix = "Array("
        dtype_str = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        if self._val is None:  # other processes hold the rest
            self.check_not_deleted()
            return f"{prefix}shape={self.shape}, {dtype_str})"
        line_width = int(np.get_printoptions()["linewidth"])
        if self.size == 0:
            body = f"[], shape={self.shape}"
        elif self.nbytes >= 1 << 20:
            body = f"shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=line_width)
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " if last_line_len + len(dtype_str) + 2 <= line_width else " " * len(prefix)
        return f"{prefix}{body},{sep}{dtype_str})"

    def __str__(self) -> str:
        self.check_not_deleted()
        return repr(self) if self._unreduced() or self._val is None else str(self._value)


def weak_scalar(py: Any, value: np.ndarray, aval: ArrayType) -> Array:
    """A scalar Array converted from a Python scalar; ``py`` is what a jaxpr
    literal of it prints (see ``Array._py``)."""
    out = Array._from_checked(value, aval, "convert")
    out._py = py
    return out


def _rebuild(value: np.ndarray, aval: ArrayType) -> Array:
    return Array._from_checked(value, aval, "unpickle")


def from_numpy(value: Any, weak_type: bool = False) -> Array:
    """Wrap a concrete value (already of a valid dtype) as an Array."""
    arr = np.asarray(value)
    dt = dtype_of_value(arr)
    if arr.dtype != dt:
        arr = arr.astype(dt)
    return Array._from_checked(arr, ArrayType(arr.shape, dt, weak_type), "from_numpy")


def host_constant(value: Any, weak_type: bool = False) -> Array:
    """A NumPy value as an Array; rank-0 ones stay jaxpr literals when staged
    (JAX keeps NumPy scalars as host values until they meet a computation)."""
    out = from_numpy(value, weak_type)
    if not out.aval.shape:
        out._py = out._value
    return out


def host_value(value: np.ndarray, aval: ArrayType, origin: str) -> Array:
    """A value computed on the host while tracing (a folded constant, JAX's
    TypedNdArray): rank-0 ones stay jaxpr literals when staged."""
    out = Array._from_checked(value, aval, origin)
    if not aval.shape:
        out._py = out._value
    return out


def on_device(x: Any) -> Any:
    """``x`` without the host-scalar mark (see ``interpreter.device_array``)."""
    if type(x) is Array and x._py is not None:
        out = Array._from_checked(x._value, x.aval, "device_array")
        out._device, out._committed, out._memory_kind = x._device, x._committed, x._memory_kind
        return out
    return x


def placed_on(x: Array, device: Any, committed: bool) -> Array:
    """``x``'s value on ``device`` (a new array; ``x`` keeps its placement)."""
    out = Array._from_checked(x._value, x.aval, "device_put")
    out._py = x._py
    out._device = device
    out._committed = committed
    return out


class Shard:
    """One device's part of an array (``x.addressable_shards[i]``)."""

    __slots__ = ("device", "index", "replica_id", "_buffer")

    def __init__(self, device: Any, index: tuple[slice, ...], replica_id: int,
                 buffer: np.ndarray) -> None:
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self._buffer = buffer

    @property
    def data(self) -> Array:
        aval = ArrayType(tuple(self._buffer.shape), self._buffer.dtype, False)
        return Array._from_checked(self._buffer, aval, "shard")

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self._buffer})")


def _shards_of(sharding: Any, shape: tuple[int, ...], buffers: Any) -> list[Shard]:
    # Unreduced axes hold partial sums of the whole block: index by the
    # partitions alone.
    placed = NamedSharding(sharding.mesh, P(*sharding.spec.partitions))
    indices = placed.devices_indices_map(shape)
    seen: dict[Any, int] = {}
    shards = []
    for device, buffer in zip(sharding.mesh.devices.flat, buffers):
        index = indices[device]
        key = tuple((s.start, s.stop, s.step) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        if buffer is not None:  # held by this process
            shards.append(Shard(device, index, replica, buffer))
    return shards
