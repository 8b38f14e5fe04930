"""Devices of the embedded (virtual, in-process) backend.

``jax_num_cpu_devices`` sets how many virtual CPU devices exist; every array
of this issue lives on device 0. The MPI backend (spec.mesh_mpi) replaces
this list with one device per rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec.config import config


class Device:
    platform = "cpu"
    device_kind = "cpu"

    def __init__(self, id: int, process_index: int = 0) -> None:
        self.id = id
        self.process_index = process_index

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cpu", self.id))


def devices(backend: Any = None) -> list[Device]:
    return [Device(i) for i in range(int(config.jax_num_cpu_devices))]


def local_devices(process_index: int | None = None, backend: Any = None) -> list[Device]:
    return devices()


def device_count(backend: Any = None) -> int:
    return len(devices())


def local_device_count(backend: Any = None) -> int:
    return device_count()


def process_index(backend: Any = None) -> int:
    return 0


def process_count(backend: Any = None) -> int:
    return 1


def device_put(x: Any, device: Any = None, *, donate: bool = False, may_alias: Any = None) -> Any:
    """Place ``x`` (a pytree) on a device, or lay it out by a sharding: a
    NamedSharding, or a PartitionSpec over the mesh of ``set_mesh``."""
    from spec import tree_util
    from spec.numpy import asarray
    from spec.sharding import NamedSharding, P, get_concrete_mesh
    if isinstance(device, P):
        mesh = get_concrete_mesh()
        if mesh.empty:
            raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed "
                             "to device_put")
        device = NamedSharding(mesh, device)
    if isinstance(device, NamedSharding):
        sharding = device
        return tree_util.tree_map(lambda leaf: _place(asarray(leaf), sharding), x)
    return tree_util.tree_map(asarray, x)


def _place(x: Any, sharding: Any) -> Any:
    """An Array laid out over ``sharding``'s mesh (virtual devices); staged,
    a reshard to that sharding."""
    from spec import _spmd
    from spec.array import Array
    from spec.interpreter import Tracer
    from spec.sharding import NamedSharding
    if isinstance(x, Tracer):
        from spec.rules.reshard import reshard_p
        return reshard_p.bind(x, dst_sharding=NamedSharding(sharding.mesh.abstract_mesh,
                                                            _full_spec(sharding, x.aval.ndim)),
                              concrete_mesh=sharding.mesh)
    assert isinstance(x, Array)
    same_mesh = x._sharding is not None and x._sharding.mesh == sharding.mesh
    if sharding.spec.unreduced and not (x._shards is not None and same_mesh):
        # As JAX: placing a host value indexes devices by blocks, which an
        # unreduced layout does not have (an array on the mesh is resharded).
        raise NotImplementedError("device_indices_map doesn't work with unreduced. Please file"
                                  " a bug at https://github.com/jax-ml/jax/issues")
    shape = x.aval.shape
    # The type's sharding: the abstract mesh, one spec entry per dimension.
    from spec.sharding import modify_spec_for_auto_manual
    typed = NamedSharding(sharding.mesh.abstract_mesh, modify_spec_for_auto_manual(
        _full_spec(sharding, len(shape)), sharding.mesh))
    sharding.shard_shape(shape)  # divisibility, with JAX's error
    aval = x.aval.update(sharding=typed)
    geo = _spmd.geometry(sharding.mesh)
    source = _spmd.from_value(x, geo) if x._shards is not None and same_mesh else None
    if source is not None:  # already on the mesh: move it (recorded collectives)
        placed = _spmd.reshard(source, aval, geo)
    else:
        placed = _spmd.Dist(aval, _spmd.split_value(x._value, aval, geo))
    out = _spmd.to_array(placed, sharding.mesh, geo)
    out._sharding = sharding  # x.sharding is the one asked for, as written
    return out


def _full_spec(sharding: Any, ndim: int) -> Any:
    from spec.sharding import P
    spec = sharding.spec
    parts = spec.partitions + (None,) * (ndim - len(spec.partitions))
    return P(*parts, unreduced=spec.unreduced, reduced=spec.reduced)


def device_get(x: Any) -> Any:
    from spec import tree_util
    return tree_util.tree_map(lambda a: np.asarray(a) if hasattr(a, "aval") else a, x)
