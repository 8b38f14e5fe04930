"""Devices, and the embedded (virtual, in-process) backend.

``jax_num_cpu_devices`` sets how many virtual CPU devices exist (when it is
unset, ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``). The MPI
backend (spec._src.backends.mpi) replaces this list with one device per rank.
The device functions (``devices()``, ``process_index()``, ...) ask the
registered backend (spec._src.core.backend).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.api import placement
from spec._src.core import tree_util
from spec._src.core.backend import Axes, Bufs, current_backend
from spec._src.core.compiler_options import xla_flag
from spec._src.core.config import config
from spec._src.core.hitypes import hi_type_of, is_hi_value, is_high
from spec._src.core.interpreter import Tracer
from spec._src.core.errors import InvalidInputException, JaxRuntimeError
from spec._src.core.sharding import (
    AxisType,
    NamedSharding,
    P,
    SingleDeviceSharding,
    axis_names_of,
    get_concrete_mesh,
    modify_spec_for_auto_manual,
)
from spec._src.core.interpreter import EvalTrace, current_trace
from spec._src.core.types import (
    ArrayType,
    MemorySpace,
    canonicalize_dtype,
    memory_kind_of_space,
    memory_space_of_kind,
    refuse_jax_array,
)
from spec._src.interpreters import spmd as _spmd
from spec._src.lax.reshard import (
    ArrayCopySemantics,
    device_put_p,
    full_spec,
    place,
    register_eager_put,
)
from spec._src.numpy.creation import to_device_array as asarray
from spec._src.api.vmap import _prefix_errors as prefix_errors
from spec._src.core.array import Array, placed_on


# A CPU device's memories, in the order it lists them, with the class names
# their ``str`` shows.
_MEMORY_CLASS_NAMES = {"device": "CpuDeviceMemory", "pinned_host": "PinnedHostMemory",
                       "unpinned_host": "UnpinnedHostMemorySpace"}


class Memory:
    """One memory a device addresses (``device.memory(kind)``): its device
    memory, or pinned or unpinned host memory. Device ``k``'s memories have
    ids ``3k``, ``3k+1``, ``3k+2``, in that order, as XLA's CPU client
    numbers them."""

    platform = "cpu"

    def __init__(self, device: Device, kind: str) -> None:
        self._device = device
        self.kind = kind
        self._id = 3 * device.id + list(_MEMORY_CLASS_NAMES).index(kind)
        self.process_index = device.process_index

    def addressable_by_devices(self) -> list[Device]:
        return [self._device]

    def __repr__(self) -> str:
        return f"{self.kind.upper()}_{self._id}".replace("DEVICE", "CPU_DEVICE")

    def __str__(self) -> str:
        return (f"{_MEMORY_CLASS_NAMES[self.kind]}(id={self._id}, "
                f"process_index={self.process_index}, client={self.platform})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memory) and other._id == self._id

    def __hash__(self) -> int:
        return hash(("memory", self._id))


class Device:
    platform = "cpu"
    device_kind = "cpu"

    def __init__(self, id: int, process_index: int = 0) -> None:
        self.id = id
        self.process_index = process_index

    def memory(self, kind: str) -> Memory:
        """The memory of ``kind`` this device addresses."""
        if not isinstance(kind, str):
            raise TypeError("memory(): incompatible function arguments. The following argument"
                            " types are supported:\n    1. memory(self, kind: str) ->"
                            f" jaxlib._jax.Memory\n\nInvoked with types: jaxlib._jax.Device,"
                            f" {type(kind).__name__}")
        if kind not in _MEMORY_CLASS_NAMES:
            raise JaxRuntimeError(
                "INVALID_ARGUMENT: Could not find memory addressable by device cpu. Device cpu"
                " can address the following memory kinds: " + ", ".join(_MEMORY_CLASS_NAMES)
                + f". Got memory kind: {kind}")
        return _memory(self, kind)

    def addressable_memories(self) -> list[Memory]:
        """Device memory, then pinned and unpinned host memory."""
        return [_memory(self, kind) for kind in _MEMORY_CLASS_NAMES]

    def default_memory(self) -> Memory:
        return _memory(self, "device")

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cpu", self.id))


class VirtualBackend:
    """Every device in this process (``jax_num_cpu_devices`` of them):
    collectives combine the buffers in position order along their axes."""

    name = "virtual"

    def devices(self) -> list[Any]:
        return list(_virtual_devices(virtual_device_count()))

    def local_devices(self, process_index: int | None) -> list[Any]:
        return self.devices()

    def process_index(self) -> int:
        return 0

    def process_count(self) -> int:
        return 1

    def check_mesh_devices(self, sizes: tuple[int, ...], count: int,
                           devices: Sequence[Any]) -> None:
        pass

    def agree(self, what: str, value: Any, procs: Sequence[int]) -> None:
        pass

    def all_reduce(self, bufs: Bufs, axes: Axes, op: str, geo: Any) -> Bufs:
        return _spmd.reduce_in_groups(bufs, axes, op, geo)

    def all_gather(self, bufs: Bufs, axes: Axes, dim: int, geo: Any) -> Bufs:
        out = list(bufs)
        for group in geo.groups(axes):
            whole = np.concatenate([bufs[k] for k in group], axis=dim)
            for k in group:
                out[k] = whole
        return tuple(out)

    def ppermute(self, bufs: Bufs, axes: Axes, perm: Sequence[tuple[int, int]],
                 geo: Any) -> Bufs:
        sent = {int(d): int(s) for s, d in perm}
        out = list(bufs)
        for group in geo.groups(axes):
            for pos, k in enumerate(group):
                # Buffers are never mutated: a received block is the sender's.
                out[k] = bufs[group[sent[pos]]] if pos in sent else np.zeros_like(bufs[k])
        return tuple(out)


def virtual_device_count() -> int:
    """``jax_num_cpu_devices`` when set; otherwise XLA's host device count
    flag, as JAX's CPU client reads it; otherwise one. (A flag text that is
    not a number ends the process at the first compilation, as in XLA.)"""
    configured = int(config.jax_num_cpu_devices)
    if configured >= 1:
        return configured
    text = xla_flag("xla_force_host_platform_device_count")
    return int(text) if text is not None and text.isdigit() and int(text) >= 1 else 1


@functools.cache
def _virtual_devices(n: int) -> tuple[Device, ...]:
    return tuple(Device(i) for i in range(n))


@functools.cache
def _memory(device: Device, kind: str) -> Memory:
    return Memory(device, kind)


def devices(backend: Any = None) -> list[Any]:
    """Every device: the virtual ones (``jax_num_cpu_devices``), or one per
    MPI rank under mpiexec (device r is rank r's)."""
    return current_backend().devices()


def local_devices(process_index: int | None = None, backend: Any = None) -> list[Any]:
    """The devices of one process (this one by default)."""
    return current_backend().local_devices(process_index)


def device_count(backend: Any = None) -> int:
    return len(devices())


def local_device_count(backend: Any = None) -> int:
    return len(local_devices())


def process_index(backend: Any = None) -> int:
    return current_backend().process_index()


def process_count(backend: Any = None) -> int:
    return current_backend().process_count()


def process_indices(backend: Any = None) -> list[int]:
    """The indices of every process, in order."""
    return list(range(process_count(backend)))


def _renamed(old: str, new: str) -> None:
    # JAX's warning text, its doubled name included.
    warnings.warn(f"jax.{old} has been renamed to jax.{new}. This alias will eventually be "
                  "removed; please update your code.", UserWarning, stacklevel=3)


def host_count(backend: Any = None) -> int:
    """The old name of ``process_count`` (with JAX's warning)."""
    _renamed("process_count", "process_count")
    return process_count(backend)


def host_id(backend: Any = None) -> int:
    """The old name of ``process_index`` (with JAX's warning)."""
    _renamed("process_index", "process_index")
    return process_index(backend)


def host_ids(backend: Any = None) -> list[int]:
    """The old name of ``process_indices`` (with JAX's warning)."""
    _renamed("process_indexs", "process_indices")
    return process_indices(backend)


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: Any = False,
               may_alias: Any = None) -> Any:
    """Place ``x`` (a pytree) on a device, lay it out by a sharding (a
    NamedSharding, or a PartitionSpec over the mesh of ``set_mesh``), or move
    it to a memory (a sharding's memory kind, or a ``jax.memory.Space``).
    ``device`` may be a pytree prefix of ``x``, one placement per subtree.
    Placed on a device or by a sharding, the result is committed there;
    with no placement, an array keeps its own and anything else goes to
    the default device, uncommitted. Under a trace, one ``device_put``
    equation places every leaf."""
    leaves, structure = tree_util.tree_flatten(x)
    placements = _per_leaf(x, structure, device)
    semantics = _copy_semantics(structure, donate, may_alias)
    if not isinstance(current_trace(), EvalTrace):
        for leaf in leaves:
            refuse_jax_array(leaf)
            _refuse_foreign_array(leaf)
            _refuse_hi_value(leaf)
        devices_ = tuple(_as_sharding(p) for p in placements)
        srcs = tuple(_source(leaf, src) for leaf in leaves)
        outs = device_put_p.bind(*leaves, devices=devices_, srcs=srcs,
                                 copy_semantics=tuple(semantics))
        return structure.unflatten(list(outs))
    return structure.unflatten([_put_leaf(leaf, p) for leaf, p in zip(leaves, placements)])


def _source(leaf: Any, src: Any) -> Any:
    """Where a staged leaf comes from: ``src`` if given; a device array's
    sharding (an autodiff tracer's concrete primal's; a host scalar made while
    tracing, which JAX keeps off any device, has none); a value typed over a
    mesh whose axes are all Explicit, its type's sharding in its memory;
    else unknown (None)."""
    if src is not None:
        return src
    if isinstance(leaf, Tracer):  # an autodiff tracer of a concrete array: where it lives
        value = leaf.to_concrete_value()
        if isinstance(value, Array):
            return value.sharding
    if isinstance(leaf, Array) and leaf._py is None:
        return leaf.sharding
    aval = getattr(leaf, "aval", None)
    s = getattr(aval, "sharding", None)
    if aval is None or s is None or s.mesh.empty or any(
            t != AxisType.Explicit for t in s.mesh.axis_types):
        return None
    return NamedSharding(s.mesh, s.spec, memory_kind=memory_kind_of_space(aval.memory_space))


def _per_leaf(x: Any, structure: Any, device: Any) -> list[Any]:
    """One placement per leaf of ``x`` from ``device`` (a placement, or a
    pytree prefix of ``x`` of them)."""
    if _is_placement(device):
        return [device] * structure.num_leaves
    placements, prefix = tree_util.tree_flatten(device, is_leaf=_is_placement)
    for p in placements:
        _check_placement(p)
    try:
        subtrees = prefix.flatten_up_to(x)
    except (TypeError, ValueError):
        raise _prefix_mismatch(x, device) from None
    return [p for sub, p in zip(subtrees, placements)
            for _ in range(tree_util.tree_structure(sub).num_leaves)]


def _copy_semantics(structure: Any, donate: Any, may_alias: Any) -> list[ArrayCopySemantics]:
    """Per leaf: shares its buffer (``may_alias``, the default unless
    donating), copies it, or takes it (``donate``)."""
    donates = _flags(structure, donate, "donate")
    aliases = _flags(structure, may_alias, "may_alias")
    out = []
    for alias, give in zip(aliases, donates):
        if alias and give:
            raise ValueError("may_alias and donate cannot be True at the same time.")
        alias = not give if alias is None else alias
        out.append(ArrayCopySemantics.REUSE_INPUT if alias and not give
                   else ArrayCopySemantics.DONATE_INPUT if give and not alias
                   else ArrayCopySemantics.ALWAYS_COPY)
    return out


def _flags(structure: Any, flag: Any, name: str) -> list[Any]:
    if flag is None or isinstance(flag, bool):
        return [flag] * structure.num_leaves
    flags, prefix = tree_util.tree_flatten(flag, is_leaf=lambda f: f is None)
    dummy = tree_util.tree_unflatten(structure, [0] * structure.num_leaves)
    subtrees = prefix.flatten_up_to(dummy)
    return [f for sub, f in zip(subtrees, flags)
            for _ in range(tree_util.tree_structure(sub).num_leaves)]


def _as_sharding(placement: Any) -> Any:
    """A PartitionSpec as a NamedSharding over the mesh of ``set_mesh``."""
    if not isinstance(placement, P):
        return placement
    mesh = get_concrete_mesh()
    if mesh.empty:
        raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed "
                         "to device_put")
    return NamedSharding(mesh, placement)


def _is_placement(p: Any) -> bool:
    return p is None or isinstance(p, (Device, NamedSharding, SingleDeviceSharding, P,
                                       MemorySpace))


def _check_placement(p: Any) -> None:
    if not _is_placement(p):
        raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                         "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these "
                         f"values. Received invalid value: {p}")


def _prefix_mismatch(x: Any, device: Any) -> ValueError:
    structure = tree_util.tree_structure(x)
    dummy = tree_util.tree_unflatten(structure, [0] * structure.num_leaves)
    errors = prefix_errors("device_put device", device, dummy)
    details = "\n  ".join(errors)
    return ValueError("device_put device specification must be a tree prefix of the "
                      f"corresponding value; \n  Mismatch details ({len(errors)} found):"
                      f"\n  {details}")


def _refuse_hi_value(leaf: Any) -> None:
    aval = getattr(leaf, "aval", None) if isinstance(leaf, Tracer) else (
        hi_type_of(leaf) if is_hi_value(leaf) else None)
    if is_high(aval):
        raise NotImplementedError(
            f"jax.device_put does not yet support values of hijax type {aval}. Instead, shard "
            "the value's components (e.g. before constructing it), or produce the value with "
            "the desired sharding under jit or shard_map.")


def _refuse_foreign_array(leaf: Any) -> None:
    """Another library's array (an object with ``__array__`` that is no
    NumPy value, a real JAX array among them) is no value ``device_put``
    places: JAX's TypeError, of JAX's class for one that has a dtype."""
    if not hasattr(type(leaf), "__array__") or isinstance(
            leaf, (Array, Tracer, np.ndarray, np.generic)):
        return
    if not hasattr(leaf, "dtype"):
        raise TypeError(f"Cannot interpret value of type {type(leaf)} as an abstract array; it "
                        "does not have a dtype attribute")
    raise InvalidInputException(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX "
                                "type.")


def _put_leaf(leaf: Any, placement: Any) -> Any:
    refuse_jax_array(leaf)
    _refuse_foreign_array(leaf)
    _refuse_hi_value(leaf)
    placement = _as_sharding(placement)
    if isinstance(placement, MemorySpace):
        return _to_memory(asarray(leaf), placement)
    if isinstance(placement, NamedSharding):
        return _in_memory_of(place(asarray(leaf), placement), placement.memory_kind)
    kind = None
    if isinstance(placement, SingleDeviceSharding):
        kind = placement._memory_kind
        placement = next(iter(placement.device_set))
    arr = asarray(leaf)
    if placement is None:
        if isinstance(leaf, Array):
            return leaf
        return arr
    if not isinstance(arr, Array):  # a key array or a traced value: placement is not tracked
        return arr
    if arr._sharding is not None:  # gathered onto the one device
        arr = Array._from_checked(np.asarray(arr), ArrayType(arr.shape, arr.dtype,
                                                             arr.weak_type), "device_put")
    return _in_memory_of(placed_on(arr, placement, True), kind)


def _put_operand(x: Any, placement: Any, space: MemorySpace) -> Any:
    """An eager ``device_put`` equation's result (one reached under a
    transformation): placed as ``jax.device_put`` places a concrete array,
    in the memory the equation's type names (a cotangent moved back to a
    device sharding leaves host memory)."""
    out = _put_leaf(x, placement)
    if isinstance(out, Array) and out.aval.memory_space is not space:
        return _to_memory(out, space)
    return out


register_eager_put(_put_operand)


def _in_memory_of(arr: Any, kind: str | None) -> Any:
    """``arr`` (just placed) in the memory of ``kind`` (None: device memory)."""
    if kind is None or not isinstance(arr, Array):
        return arr
    arr.aval = arr.aval.update(memory_space=memory_space_of_kind(kind))
    arr._memory_kind = kind
    return arr


def _to_memory(arr: Any, space: MemorySpace) -> Any:
    """``arr`` where it lives, moved to the memory ``space`` names; committed
    there, as JAX commits it."""
    if space is MemorySpace.Any:
        raise AssertionError("unreachable: MemorySpace.Any")
    if not isinstance(arr, Array):
        return arr
    if arr._sharding is not None:
        kind = memory_kind_of_space(space)
        return _in_memory_of(place(arr, arr._sharding.with_memory_kind(kind)), kind)
    return _in_memory_of(placed_on(arr, arr._single_device(), True),
                         memory_kind_of_space(space))


def device_get(x: Any) -> Any:
    return tree_util.tree_map(lambda a: np.asarray(a) if hasattr(a, "aval") else a, x)


def make_array_from_callback(shape: Any, sharding: Any, data_callback: Any,
                             dtype: Any = None) -> Any:
    """An array of ``shape`` laid out by ``sharding``, each device's block
    produced by ``data_callback(index)`` (its slices of the global array)."""
    # A fully replicated layout asks for the whole array once (as JAX).
    return _assembled(shape, sharding, lambda device, index: data_callback(index), dtype,
                      ask_once_if_replicated=True)


def make_array_from_single_device_arrays(shape: Any, sharding: Any, arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Any:
    """An array of ``shape`` laid out by ``sharding`` from one array per
    device the sharding addresses, each on its device (in any order)."""
    arrays = list(arrays)
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"Unsupported type for elements in `arrays`: {type(a)}")
    expected = len(sharding.addressable_devices)
    if len(arrays) != expected:
        raise ValueError(f"Expected {expected} per-device arrays (this is how many devices are "
                         f"addressable by the sharding), but got {len(arrays)}")
    ids = [a.device.id for a in arrays]
    if len(set(ids)) != len(ids):
        raise ValueError("When making an array from single-device arrays, the input arrays "
                         f"must be from distinct devices, but got device IDs {ids}")
    blocks = {i: np.asarray(a) for i, a in zip(ids, arrays)}
    return _assembled(shape, sharding, lambda device, index: blocks[device.id], dtype,
                      ask_once_if_replicated=False)


def _assembled(shape: Any, sharding: Any, block_of: Any, dtype: Any,
               ask_once_if_replicated: bool) -> Any:
    """The global array whose block on each of this process's devices is
    ``block_of(device, index)`` (``index``: the block's slices)."""
    shape = tuple(int(d) for d in shape)
    if isinstance(sharding, SingleDeviceSharding):
        index = tuple(slice(None) for _ in shape)
        block = np.asarray(block_of(sharding._device, index))
        if block.shape != shape:
            raise ValueError(f"Expected shard shape {shape} doesn't match the single device "
                             f"array shape {block.shape}.")
        return device_put(asarray(block if dtype is None else block.astype(dtype)), sharding)
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"make_array_from_callback expects a Sharding, got {sharding!r}")
    want = sharding.shard_shape(shape)
    indices = sharding.devices_indices_map(shape)
    replicated = all(p is None for p in sharding.spec.partitions)
    mine = {d.id for d in local_devices()}
    blocks: list[np.ndarray | None] = []
    held: list[np.ndarray] = []
    for device in sharding.mesh.devices.flat:
        if device.id not in mine:  # another process makes that block
            blocks.append(None)
            continue
        if ask_once_if_replicated and replicated and held:
            blocks.append(held[0])
            continue
        block = np.asarray(block_of(device, indices[device]))
        if dtype is not None:
            block = block.astype(dtype)
        if block.shape != tuple(want):
            raise ValueError(f"Expected shard shape {tuple(want)} doesn't match the single "
                             f"device array shape {block.shape}. Shape of Array is "
                             f"{ArrayType(shape, block.dtype).str_short(True)} with sharding "
                             f"{sharding}")
        blocks.append(block)
        held.append(block)
    dt = canonicalize_dtype(held[0].dtype)
    procs = sorted({d.process_index for d in sharding.mesh.devices.flat})
    current_backend().agree("make_array_from_callback's global shape, dtype and sharding",
                            [list(shape), str(dt), str(sharding.spec)], procs)
    blocks = [None if b is None else b.astype(dt, copy=False) for b in blocks]
    spec = full_spec(sharding, len(shape))
    typed = NamedSharding(sharding.mesh.abstract_mesh,
                          modify_spec_for_auto_manual(spec, sharding.mesh))
    aval = ArrayType(shape, dt, sharding=typed)
    geo = _spmd.geometry(sharding.mesh)
    out = _spmd.to_array(_spmd.Dist(aval, tuple(blocks)), sharding.mesh, geo)
    out._sharding = sharding
    return out


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Any = None) -> Any:
    """This process's data as a global array laid out by ``sharding``. With
    one process, the local data is the whole array; with one device per
    process (MPI ranks), it is that device's block, and the global shape,
    when not given, is the block's times the number of blocks per
    dimension."""
    data = np.asarray(local_data)
    if process_count() == 1:
        shape = data.shape if global_shape is None else tuple(int(d) for d in global_shape)
        if shape != data.shape:
            raise ValueError(f"With one process the local data is the whole array: got local "
                             f"data of shape {data.shape} for global shape {shape}")
        return make_array_from_callback(shape, sharding, lambda index: data[index])
    ways = _blocks_per_dim(sharding, data.ndim)
    shape = (tuple(n * w for n, w in zip(data.shape, ways)) if global_shape is None
             else tuple(int(d) for d in global_shape))
    if len(shape) != data.ndim or any(
            n * w != g and n != g for n, w, g in zip(data.shape, ways, shape)):
        raise ValueError(f"rank {process_index()}: local data of shape {data.shape} is not "
                         f"this process's block of global shape {shape} under {sharding}")
    return make_array_from_callback(shape, sharding, lambda index: _local_block(data, index,
                                                                                 shape))


def _blocks_per_dim(sharding: Any, ndim: int) -> tuple[int, ...]:
    sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
    parts = tuple(sharding.spec.partitions) + (None,) * ndim
    return tuple(int(np.prod([sizes[a] for a in axis_names_of(p)], dtype=np.int64))
                 for p in parts[:ndim])


def _local_block(data: np.ndarray, index: tuple[slice, ...], shape: tuple[int, ...]
                 ) -> np.ndarray:
    """The device's block: the local data itself along split dimensions,
    its slice along dimensions where the process holds the whole extent."""
    cut = tuple(s if n == g else slice(None) for s, n, g in zip(index, data.shape, shape))
    return data[cut]


placement.register_placement(Device, device_put)
