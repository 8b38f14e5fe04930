"""``jax.experimental.multihost_utils``: values shared across processes.

With the virtual backend there is one process: every array is fully
addressable, and gathering adds the process axis (of size 1) as JAX does.
Under MPI (one device per rank) an array spanning the ranks is fetched
whole; any other value is gathered from every process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import tree_util


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value, as NumPy arrays: stacked along a new leading
    axis, or concatenated along the first when ``tiled``. A global array
    spanning processes comes back as its global value."""
    return tree_util.tree_map(lambda x: _gather(x, tiled), in_tree)


def _gather(x: Any, tiled: bool) -> np.ndarray:
    from spec import _spmd, mesh_mpi
    from spec.array import Array
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
    from spec import mesh_mpi
    if mesh_mpi.active():
        mesh_mpi.barrier(name)


__all__ = ["process_allgather", "sync_global_devices"]
