"""The mesh functions that need the devices or the trace (JAX's
``jax.make_mesh``, ``jax.set_mesh`` and ``jax.sharding.get_mesh``); the
mesh types and the mesh in context are spec._src.core.sharding's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from spec._src.core.backend import current_backend
from spec._src.core.interpreter import EvalTrace, current_trace
from spec._src.core.sharding import (
    AbstractMesh,
    AxisName,
    AxisType,
    Mesh,
    _context,
    _empty_mesh,
    _object_array,
)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[AxisName],
              axis_types: AxisType | tuple[AxisType, ...] | None = None, *,
              devices: Sequence[Any] | None = None) -> Mesh:
    """A mesh over the first prod(axis_shapes) devices, in device order; Explicit axes."""
    if devices is None:
        devices = current_backend().devices()
    try:
        items = list(axis_shapes)
    except TypeError:
        raise TypeError(f"`axis_shapes` passed to `make_mesh` should be a sequence of ints."
                        f" Got {axis_shapes!r}") from None
    try:
        sizes = tuple(int(s) for s in items)
    except (TypeError, ValueError):
        raise ValueError("`axis_sizes` passed to `make_mesh` should be a sequence of ints."
                         f" Got {axis_shapes}") from None
    count = math.prod(sizes)
    current_backend().check_mesh_devices(sizes, count, devices)
    if count > len(devices):
        raise ValueError(
            f"Number of devices {len(devices)} must be >= the product of mesh_shape {sizes}")
    grid = _object_array(list(devices)[:count]).reshape(sizes)
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(sizes)
    return Mesh(grid, axis_names, axis_types)


def _require_outside_jit(message: str) -> None:
    if not isinstance(current_trace(), EvalTrace):
        raise ValueError(message)


class set_mesh:
    """Sets the mesh: as a plain call for the rest of the program, or for a ``with`` block."""

    __slots__ = ("prev_abstract_mesh", "prev_mesh")

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        _require_outside_jit("`set_mesh` can only be used outside of `jax.jit`.")
        if mesh is not None and AxisType.Manual in mesh.axis_types:
            raise ValueError(
                f"mesh {mesh} contains manual axes which is not allowed when using"
                " `jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` mode"
                " instead.")
        self.prev_abstract_mesh = _context.abstract
        self.prev_mesh = _context.concrete
        _context.update(abstract=AbstractMesh((), ()) if mesh is None else mesh.abstract_mesh,
                        concrete=_empty_mesh() if mesh is None else mesh)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _context.update(abstract=self.prev_abstract_mesh, concrete=self.prev_mesh)


def get_mesh() -> Mesh:
    _require_outside_jit("`get_mesh` can only be used outside of `jax.jit`. Maybe you want"
                         " `jax.sharding.get_abstract_mesh()`?")
    return _context.concrete


__all__ = ["get_mesh", "make_mesh", "set_mesh"]
