"""``lax`` functions that JAX writes in terms of other primitives, and the
type names of ``jax.lax``.

- ``conv_general_dilated_patches``: a convolution with a kernel whose output
  features are the indicator of each (input channel, window position), one
  feature group per input channel; its "C" output dimension holds each
  window's patch flattened in the order channel, then the kernel's spatial
  dimensions in the rhs layout.
- ``conv_general_dilated_local``: the patches contracted with a kernel of
  its own at every output position (a locally connected layer): a
  ``dot_general`` of the patches with ``rhs`` batched over the output's
  spatial dimensions.
- ``index_take``: the elements of ``src`` at the index arrays ``idxs``
  (one per axis in ``axes``, taken modulo the axis size), whole along the
  other axes: a gather.
- ``broadcast_shapes``, ``broadcast_like``: NumPy's broadcasting of shapes,
  and a broadcast to another array's shape.
- ``platform_dependent``: the branch for the platform the program runs on;
  spec's platform is ``cpu``, so it is the ``cpu`` branch, else ``default``.
- ``ragged_dot(lhs, rhs, group_sizes)``: lhs's rows in consecutive groups
  (``group_sizes[g]`` rows each, rows past their sum belong to none and give
  zeros), each group times its own ``rhs[g]``. Written with ``dot_general``
  of lhs with every group's matrix, the product of each row's own group
  selected (one nonzero term per row, so the selection is exact);
  ``ragged_dot_general`` takes this layout only. JAX binds one
  ``ragged_dot_general`` primitive, so the jaxprs differ.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from spec._src.core.dtypes import dtype_of as dtype
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import conv as C
from spec._src.lax.control_flow import platform_dependent
from spec._src.lax.dot import Precision, canonicalize_precision, dot_general
from spec._src.lax.elementwise import bitwise_and, ge, lt, rem, select, sub
from spec._src.lax.reductions import cumsum, reduce_sum
from spec._src.lax.indexing import GatherDimensionNumbers, gather
from spec._src.lax.shaping import asarray, broadcast_in_dim, broadcast_to_rank, \
    broadcasted_iota, expand_dims, full_like, reshape, transpose
from spec._src.lax.slicing import concatenate
from spec._src.lax.prng import RandomAlgorithm

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
PrecisionLike = None | str | Precision | tuple[str, str] | tuple[Precision, Precision]


class RaggedDotDimensionNumbers(NamedTuple):
    """The contracting and batch dimensions of a ragged dot, the lhs
    dimensions that are ragged, and the rhs dimensions that index groups."""

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


@dataclasses.dataclass(init=False)
class Tolerance:
    """The tolerances a unary function's result may have: at most two of an
    absolute, a relative and a units-in-the-last-place bound, all
    non-negative and not all zero."""

    atol: float
    rtol: float
    ulps: int

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0) -> None:
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps


# ---------------------------------------------------------------- shapes

def shape_as_value(shape: Sequence[int]) -> Any:
    """``shape`` as a signed integer array (int32, int64 for a dimension
    int32 cannot hold); the empty shape is an empty array."""
    dims = tuple(int(d) for d in shape)
    dtype = np.int64 if any(d > np.iinfo(np.int32).max for d in dims) else np.int32
    if not dims:
        return full_like(np.zeros(0, dtype), 0)
    return np.asarray(dims, dtype=dtype)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy's broadcasting gives ``shapes``."""
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(int(d) for d in s) for s in shapes]
    result = []
    for sizes in zip(*padded):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        result.append(big.pop() if big else 1)
    return tuple(result)


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast (NumPy's rules) to ``like_arr``'s shape."""
    shape = canonical_aval_of(like_arr).shape
    x = broadcast_to_rank(asarray(arr), len(shape))
    xshape = canonical_aval_of(x).shape
    if tuple(xshape) == tuple(shape):
        return x
    kept = tuple(d for d, n in enumerate(xshape) if n != 1)
    squeezed = reshape(x, tuple(xshape[d] for d in kept))
    return broadcast_in_dim(squeezed, tuple(shape), kept)


# -------------------------------------------------------------- indexing

def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src[idxs[0], idxs[1], ...]`` along ``axes`` (indices wrap modulo
    the axis sizes), the remaining axes whole after the index axis."""
    shape = canonical_aval_of(src).shape
    axes = tuple(int(a) for a in axes)
    columns = [expand_dims(asarray(i), (1,)) for i in idxs]
    indices = concatenate(columns, 1)
    sizes = np.array([shape[a] for a in axes],
                      dtype=canonical_aval_of(indices).dtype)
    indices = rem(indices, expand_dims(asarray(sizes), (0,)))
    # rem keeps the sign of the index: a negative one wraps once more.
    indices = rem(indices + expand_dims(asarray(sizes), (0,)),
                  expand_dims(asarray(sizes), (0,)))
    slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(shape))
    offset_dims = tuple(range(1, len(shape) - len(axes) + 1))
    dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=axes,
                                   start_index_map=axes)
    return gather(src, indices, dnums, slice_sizes)


# ---------------------------------------------------------- convolutions

def _moved(x: Any, src: Sequence[int], dst: Sequence[int]) -> Any:
    """``x`` with axes ``src`` moved to positions ``dst`` (NumPy's moveaxis)."""
    ndim = canonical_aval_of(x).ndim
    perm = [d for d in range(ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return transpose(x, perm)


def conv_general_dilated_patches(
        lhs: Any, filter_shape: Sequence[int], window_strides: Sequence[int], padding: Any,
        lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
        dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None) -> Any:
    """The patches each window of ``lhs`` sees, flattened into the output's
    feature dimension (see the module docstring)."""
    x = asarray(lhs)
    aval = canonical_aval_of(x)
    window = tuple(int(n) for n in filter_shape)
    dn = C.conv_dimension_numbers(aval.shape, (1, 1, *window), dimension_numbers)
    lhs_spec, rhs_spec, _ = dn
    size = math.prod(window)
    channels = aval.shape[lhs_spec[1]]
    eye = asarray(np.eye(size, dtype=aval.dtype))
    kernel = broadcast_in_dim(eye, (channels, size, size), (1, 2))
    kernel = reshape(kernel, (channels * size, 1, *window))
    kernel = _moved(kernel, (0, 1), (rhs_spec[0], rhs_spec[1]))
    return C.conv_general_dilated(
        x, kernel, window_strides, padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dn,
        precision=None if precision is None else (precision, Precision.DEFAULT),
        feature_group_count=channels, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(
        lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
        filter_shape: Sequence[int], lhs_dilation: Sequence[int] | None = None,
        rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
        precision: Any = None) -> Any:
    """A convolution with an unshared kernel at every output position (see
    the module docstring)."""
    x = asarray(lhs)
    canonical = canonicalize_precision(precision)
    if canonical is None:
        lhs_precision = None
    elif isinstance(canonical, tuple) and len(canonical) == 2:
        lhs_precision = canonical[0]
    else:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    patches = conv_general_dilated_patches(
        x, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        precision=lhs_precision)
    _, rhs_spec, out_spec = C.conv_dimension_numbers(
        canonical_aval_of(x).shape, (1, 1, *filter_shape), dimension_numbers)
    out_spatial = list(out_spec[2:])
    rhs_spatial = list(rhs_spec[2:])
    order = sorted(range(len(out_spatial)), key=lambda k: out_spatial[k])
    dn = (([out_spec[1]], [rhs_spec[1]]),
          (sorted(out_spatial), [rhs_spatial[k] for k in order]))
    out = dot_general(patches, rhs, dn, precision=precision)
    return _moved(out, (out.ndim - 2, out.ndim - 1), (out_spec[0], out_spec[1]))


# ------------------------------------------------------------ ragged dot

def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None) -> Any:
    """``lhs[m, k]`` row groups times ``rhs[g, k, n]`` (see the module docstring)."""
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    a, b, sizes = asarray(lhs), asarray(rhs), asarray(group_sizes)
    la, ra, sa = canonical_aval_of(a), canonical_aval_of(b), canonical_aval_of(sizes)
    if la.ndim != 2 or ra.ndim != 3 or sa.ndim != 1:
        raise TypeError(f"ragged_dot takes lhs [m, k], rhs [g, k, n] and group_sizes [g], got "
                        f"shapes {la.shape}, {ra.shape} and {sa.shape}")
    if ra.shape[0] != sa.shape[0] or la.shape[1] != ra.shape[1]:
        raise TypeError(f"ragged_dot: group_sizes has {sa.shape[0]} groups and rhs "
                        f"{ra.shape[0]}; lhs contracts {la.shape[1]} against rhs's "
                        f"{ra.shape[1]}")
    every = dot_general(a, b, (((1,), (1,)), ((), ())), precision=precision,
                        preferred_element_type=preferred_element_type)  # [m, g, n]
    grid = (la.shape[0], sa.shape[0])
    ends = cumsum(sizes, axis=0)
    starts = broadcast_in_dim(sub(ends, sizes), grid, (1,))
    row = broadcasted_iota(sa.dtype, grid, 0)
    mine = bitwise_and(ge(row, starts), lt(row, broadcast_in_dim(ends, grid, (1,))))
    mine = broadcast_in_dim(mine, canonical_aval_of(every).shape, (0, 1))
    return reduce_sum(select(mine, every, full_like(every, 0)), (1,))


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None) -> Any:
    """``ragged_dot`` for its layout: lhs ``[m, k]`` ragged along m, rhs
    ``[g, k, n]`` grouped along g."""
    dn = ragged_dot_dimension_numbers
    (contract, batch) = dn.dot_dimension_numbers
    if (tuple(map(tuple, contract)) != ((1,), (1,)) or any(batch[0]) or any(batch[1])
            or tuple(dn.lhs_ragged_dimensions) != (0,)
            or tuple(dn.rhs_group_dimensions) != (0,)):
        raise NotImplementedError(f"ragged_dot_general with ragged_dot_dimension_numbers={dn}: "
                                  "only ragged_dot's layout is specified")
    return ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                      out_sharding)


__all__ = [
    "DotDimensionNumbers", "PrecisionLike", "RaggedDotDimensionNumbers", "RandomAlgorithm",
    "Tolerance", "broadcast_like", "broadcast_shapes", "conv_general_dilated_local",
    "conv_general_dilated_patches", "dtype", "index_take", "platform_dependent", "ragged_dot",
    "ragged_dot_general", "shape_as_value",
]

