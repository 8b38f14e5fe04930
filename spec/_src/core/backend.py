"""The backend interface: which devices exist, which process holds each, and
how the buffers of a mesh's devices meet in collectives.

Core and the interpreters never name a backend: they ask ``current_backend()``.
The backends (the top layer) implement ``Backend``: the virtual one
(spec._src.backends.devices, every device in this process) and the MPI one
(spec._src.backends.mpi, one device per rank). The backends package registers
a chooser with ``set_backend_chooser`` when it is imported; the backend is
chosen on first use (choosing MPI starts it, so a program that never asks for
a device never starts MPI).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

Axes = tuple[Any, ...]
Bufs = tuple[np.ndarray | None, ...]  # one buffer per device, mesh order; None: another process's


class Backend(Protocol):
    """What core and the per-device interpreter need of a backend.

    A collective takes every device's buffer (mesh order) and returns every
    device's result; ``geo`` is the mesh's ``spec._src.interpreters.spmd.Geometry``
    (where each device sits, which process holds it). The ledger entry is
    written by the caller, once per collective."""

    name: str

    def devices(self) -> list[Any]:
        """Every device, in id order."""
        ...

    def local_devices(self, process_index: int | None) -> list[Any]:
        """The devices of one process (this one for None)."""
        ...

    def process_index(self) -> int:
        ...

    def process_count(self) -> int:
        ...

    def check_mesh_devices(self, sizes: tuple[int, ...], count: int,
                           devices: Sequence[Any]) -> None:
        """Raise ValueError when a mesh of ``sizes`` (``count`` devices) over
        ``devices`` cannot run on this backend."""
        ...

    def agree(self, what: str, value: Any, procs: Sequence[int]) -> None:
        """Check that every process of ``procs`` passes the same ``value``
        (a JSON-able description) here; ValueError naming those that differ."""
        ...

    def all_reduce(self, bufs: Bufs, axes: Axes, op: str, geo: Any) -> Bufs:
        ...

    def all_gather(self, bufs: Bufs, axes: Axes, dim: int, geo: Any) -> Bufs:
        ...

    def ppermute(self, bufs: Bufs, axes: Axes, perm: Sequence[tuple[int, int]],
                 geo: Any) -> Bufs:
        """Along ``axes``, position s's block goes to position d for each
        pair (s, d); positions no pair sends to get zeros."""
        ...


_chooser: list[Callable[[], Backend]] = []
_chosen: list[Backend] = []


def set_backend_chooser(choose: Callable[[], Backend]) -> None:
    """Register how the backend is chosen (called once, on first use)."""
    _chooser[:] = [choose]
    _chosen.clear()


def current_backend() -> Backend:
    if not _chosen:
        if not _chooser:
            raise RuntimeError("no spec backend is registered: import spec (its backends "
                               "package registers one)")
        _chosen.append(_chooser[-1]())
    return _chosen[-1]


@contextlib.contextmanager
def substituted(backend: Backend) -> Iterator[None]:
    """``backend`` answers ``current_backend()`` inside the block (one that
    watches the collectives of a per-device run and forwards them to the
    backend chosen before)."""
    current_backend()
    _chosen.append(backend)
    try:
        yield
    finally:
        _chosen.remove(backend)


__all__ = ["Axes", "Backend", "Bufs", "current_backend", "set_backend_chooser", "substituted"]
