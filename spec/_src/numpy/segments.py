"""``jax.ops``: segment reductions, ``segment_sum``, ``segment_prod``,
``segment_max`` and ``segment_min``, built as JAX builds them.

``segment_<op>(data, segment_ids, num_segments)`` reduces the rows of data
(its leading axis) that share a segment id: the result ``[num_segments,
*data.shape[1:]]`` starts as the reduction's identity (0, 1, the dtype's
lowest or highest value, -inf or inf, False or True for booleans) and is
scattered into with ``scatter_add``/``scatter_mul``/``scatter_max``/
``scatter_min`` at ``segment_ids``, negative ids not counted from the end
(JAX's ``normalize_indices=False``), out-of-range ids dropped (mode
``FILL_OR_DROP`` unless given). ``num_segments`` defaults to ``max(ids) +
1`` and must be concrete (ConcretizationTypeError under ``jit``, as JAX).
With ``bucket_size``, the rows are scattered into ``ceil(len / bucket_size)``
buckets that are then reduced (JAX's option for parallel hardware; the same
values up to the order of floating-point sums).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.lax import indexing as li
from spec._src.lax.indexing import GatherScatterMode
from spec._src.numpy import creation
from spec._src.numpy import reductions as jr
from spec._src.numpy.indexing import _scatter_update
from spec._src.numpy.util import _concrete, check_arraylike

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(op: Callable[..., Any], dtype: T.DType) -> Any:
    """The value a segment with no rows keeps."""
    if op is li.scatter_add:
        return 0
    if op is li.scatter_mul:
        return 1
    low = op is li.scatter_max
    if dtype == T.bool_:
        return not low
    if T.is_int(dtype):
        info = np.iinfo(np.dtype(dtype))
        return int(info.min if low else info.max)
    return -math.inf if low else math.inf


def _segment_update(name: str, data: Any, segment_ids: Any, op: Callable[..., Any],
                    num_segments: int | None, indices_are_sorted: bool, unique_indices: bool,
                    bucket_size: int | None, reducer: Callable[..., Any],
                    mode: GatherScatterMode | str | None) -> Any:
    check_arraylike(name, data, segment_ids)
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
    data = creation.asarray(data)
    segment_ids = creation.asarray(segment_ids)
    dtype = data.dtype
    what = "segment_sum() `num_segments` argument."
    if num_segments is None:
        num_segments = int(_concrete(jr.max(segment_ids), what)) + 1
    count = int(_concrete(num_segments, what))
    if count < 0:
        raise ValueError("num_segments must be non-negative.")
    fill = _identity(op, dtype)
    if bucket_size is None:
        out = creation.full((count, *data.shape[1:]), fill, dtype=dtype)
        return _scatter_update(out, segment_ids, data, op, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode,
                               normalize_indices=False)
    buckets = -(-segment_ids.size // bucket_size)
    out = creation.full((buckets, count, *data.shape[1:]), fill, dtype=dtype)
    rows = creation.arange(segment_ids.shape[0]) // bucket_size
    out = _scatter_update(out, (rows, segment_ids[None, :]), data, op,
                          indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                          mode=mode, normalize_indices=False)
    return reducer(out, axis=0).astype(dtype)


def _no_sharding(out_sharding: Any) -> None:
    if out_sharding is not None:
        raise NotImplementedError("segment reductions with out_sharding are not implemented "
                                  "in spec")


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: GatherScatterMode | str | None = None,
                out_sharding: Any = None) -> Any:
    """The sum of data's rows within each segment."""
    _no_sharding(out_sharding)
    return _segment_update("segment_sum", data, segment_ids, li.scatter_add, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jr.sum, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: GatherScatterMode | str | None = None,
                 out_sharding: Any = None) -> Any:
    """The product of data's rows within each segment."""
    _no_sharding(out_sharding)
    return _segment_update("segment_prod", data, segment_ids, li.scatter_mul, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jr.prod, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: GatherScatterMode | str | None = None,
                out_sharding: Any = None) -> Any:
    """The maximum of data's rows within each segment."""
    _no_sharding(out_sharding)
    return _segment_update("segment_max", data, segment_ids, li.scatter_max, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jr.max, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: GatherScatterMode | str | None = None,
                out_sharding: Any = None) -> Any:
    """The minimum of data's rows within each segment."""
    _no_sharding(out_sharding)
    return _segment_update("segment_min", data, segment_ids, li.scatter_min, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jr.min, mode)
