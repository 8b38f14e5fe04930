"""``jax.experimental.multihost_utils``: values shared across processes.

With the virtual backend there is one process: every array is fully
addressable, and gathering adds the process axis (of size 1) as JAX does.
Under MPI (one device per rank) an array spanning the ranks is fetched
whole; any other value is gathered from every process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from spec._src.backends import mpi as mesh_mpi
from spec._src.backends.devices import process_index
from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.interpreters import spmd as _spmd


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value, as NumPy arrays: stacked along a new leading
    axis, or concatenated along the first when ``tiled``. A global array
    spanning processes comes back as its global value."""
    return tree_util.tree_map(lambda x: _gather(x, tiled), in_tree)


def _gather(x: Any, tiled: bool) -> np.ndarray:
    if isinstance(x, Array) and not x.is_fully_addressable:
        geo = _spmd.geometry(x._sharding.mesh)
        return np.asarray(_spmd.whole_value(_spmd.from_value(x, geo), geo))
    local = np.asarray(x)
    if not mesh_mpi.active():
        return local if tiled else np.expand_dims(local, axis=0)
    blocks = mesh_mpi.allgather_blocks(np.array(local, order="C"), "process_allgather")
    return np.concatenate(blocks, axis=0) if tiled else np.stack(blocks)


def sync_global_devices(name: str) -> None:
    """A barrier across processes (with a deadline under MPI)."""
    if mesh_mpi.active():
        mesh_mpi.barrier(name)


class ProcessFailureError(Exception):
    """Raised on every live process by ``live_devices`` when processes
    failed during its block; ``failed_devices`` is the set of their
    devices."""

    def __init__(self, failed_devices: set[Any]) -> None:
        self.failed_devices = failed_devices
        super().__init__(f"Devices failed: {failed_devices}")


class _LiveDevices:
    """``with live_devices(devices) as live:`` runs its block on the devices
    whose processes are alive. Entering agrees on that list (the same on
    every live process, a barrier among them, at the first entry; later
    entries reuse the list the previous exit agreed on); leaving agrees
    again, and if a process hosting one of the devices failed meanwhile,
    every live process raises ProcessFailureError naming the failed
    devices (chained to the local exception, if any). Otherwise a local
    exception propagates as it is. With one process nothing can fail."""

    def __init__(self) -> None:
        self.devices: list[Any] | None = None

    @contextlib.contextmanager
    def __call__(self, devices: Sequence[Any]) -> Iterator[list[Any]]:
        if not devices:
            raise ValueError("No devices provided.")
        devices = list(devices)
        if process_index() not in {d.process_index for d in devices}:
            raise ValueError("Provided devices do not have any local devices.")
        if self.devices is None:
            self.devices = _live(devices)
        error: BaseException | None = None
        try:
            yield sorted(self.devices, key=lambda d: d.id)
        except Exception as e:
            error = e
        finally:
            before = self.devices
            self.devices = _live(devices)
            failed = {d for d in before if d not in self.devices}
            if failed:
                raise ProcessFailureError(failed) from error
            if error is not None:
                raise error


def _live(devices: list[Any]) -> list[Any]:
    if not mesh_mpi.active():
        return list(devices)
    live = set(mesh_mpi.live_processes([d.process_index for d in devices]))
    return [d for d in devices if d.process_index in live]


live_devices = _LiveDevices()


__all__ = ["ProcessFailureError", "live_devices", "process_allgather", "sync_global_devices"]
