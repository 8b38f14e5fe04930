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
    """An Array laid out over ``sharding``'s mesh (virtual devices)."""
    from spec.array import Array, sharded
    from spec.interpreter import Tracer
    from spec.sharding import NamedSharding, P
    if isinstance(x, Tracer):
        raise NotImplementedError("device_put of a traced value to a sharding is pending "
                                  "(sharding in types, issue 5)")
    assert isinstance(x, Array)
    if sharding.spec.unreduced or sharding.spec.reduced:
        raise NotImplementedError("device_put to an unreduced or reduced sharding is pending "
                                  "(issue 5)")
    shape = x.aval.shape
    # The type's sharding: the abstract mesh, one spec entry per dimension.
    parts = tuple(sharding.spec) + (None,) * (len(shape) - len(tuple(sharding.spec)))
    typed = NamedSharding(sharding.mesh.abstract_mesh, P(*parts))
    sharding.shard_shape(shape)  # divisibility, with JAX's error
    return sharded(x._value, x.aval.update(sharding=typed), sharding)


def device_get(x: Any) -> Any:
    from spec import tree_util
    return tree_util.tree_map(lambda a: np.asarray(a) if hasattr(a, "aval") else a, x)
