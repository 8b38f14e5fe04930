"""The parameters of gather and scatter: their dimension numbers and what
an out-of-bounds index means (JAX 0.12's types). Kept below the elementwise
primitives so that a decomposition there can bind a gather."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple


class GatherDimensionNumbers(NamedTuple):
    """How operand, indices and result axes of a gather correspond."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How operand, indices and updates axes of a scatter correspond."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """What an out-of-bounds index means.

    CLIP: clamp the start so the whole window is in bounds.
    FILL_OR_DROP: gather fills an out-of-bounds window with ``fill_value``;
      scatter drops an out-of-bounds window.
    PROMISE_IN_BOUNDS: the caller promises in-bounds indices; XLA CPU clamps
      gathers and drops scatters, and so does this spec.
    ONE_HOT: accepted by the enum; gather/scatter reject it here (JAX fails
      when lowering it on CPU).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f'Unknown gather mode "{s}"')
