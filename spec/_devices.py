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
    from spec import tree_util
    from spec.numpy import asarray
    return tree_util.tree_map(asarray, x)


def device_get(x: Any) -> Any:
    from spec import tree_util
    return tree_util.tree_map(lambda a: np.asarray(a) if hasattr(a, "aval") else a, x)
