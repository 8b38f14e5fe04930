"""conv_general_dilated: n-dimensional convolution with dilation, padding,
feature groups and batch groups, and the ``ConvDimensionNumbers`` record.

Constraint numbering (see SPEC.md, section 9.5), checked in this order:
C1 lhs and rhs have equal rank, at least 2;
C2 dimension_numbers is (lhs_spec, rhs_spec, out_spec), each a permutation
   of the axes;
C3 feature_group_count is positive, divides the lhs feature size, the
   quotient equals the rhs input-feature size, and it divides the rhs
   output-feature size;
C4 batch_group_count is positive, divides the lhs batch size and the rhs
   output-feature size, and at most one group count exceeds 1;
C5 window_strides has one positive entry per spatial dimension;
C6 lhs_dilation and rhs_dilation have one positive entry per spatial dimension;
C7 padding has one (low, high) integer pair per spatial dimension;
C8 every padded, dilated lhs spatial size is non-negative;
C9 every rhs spatial (window) size is positive;
C10 lhs and rhs have the same dtype;
C11 preferred_element_type is compatible with the operand dtype.

Autodiff: bilinear; both transposes are convolutions, as JAX's (see the end
of the module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.interpreters.ad_util import Zero, defjvp
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import arithmetic, flush_all, flush_result
from spec._src.core.registry import declare, require
from spec._src.lowering import structural as ST
from spec._src.lax.dot import _real_matmul, bilinear_transpose
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist
import operator
from spec._src.lax.dot import canonicalize_precision
from spec._src.lax.slicing import rev
from spec._src.lax.shaping import transpose
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.shaping import convert_element_type, full, reshape
from spec._src.interpreters.batching import unbatched_aval

_P = "conv_general_dilated"
Padding = tuple[tuple[int, int], ...]
Shape3 = tuple[int, ...]  # a shape in canonical (batch/out, feature/in, spatial...) order


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial axes of a convolution live.

    ``lhs_spec`` and ``out_spec`` list (batch axis, feature axis, spatial
    axes...); ``rhs_spec`` lists (output-feature axis, input-feature axis,
    spatial axes...). Spatial axes correspond by position across the three.
    """

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


# ------------------------------------------------------------------- typing

def dilate_dim(d: int, dilation: int) -> int:
    """Size of an axis of size ``d`` after inserting ``dilation - 1`` zeros
    between neighbouring elements."""
    return d if dilation == 1 else max(0, 1 + dilation * (d - 1))


def stride_dim(d: int, window: int, stride: int) -> int:
    """Number of windows of size ``window`` placed every ``stride`` elements
    in an axis of size ``d``."""
    return max(0, (d - window) // stride + 1)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_specs(dn: Any, rank: int) -> tuple[tuple[int, ...], ...]:
    ok = isinstance(dn, tuple) and len(dn) == 3
    require(ok, _P, "C2", f"dimension_numbers must be a ConvDimensionNumbers "
            f"(lhs_spec, rhs_spec, out_spec), got {dn!r}", TypeError)
    specs = []
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
        ints = isinstance(spec, (tuple, list)) and all(_is_int(i) for i in spec)
        require(ints and sorted(int(i) for i in spec) == list(range(rank)), _P, "C2",
                f"dimension_numbers.{name} must be a permutation of the {rank} axes "
                f"(batch/feature axes first, then the spatial axes), got {spec!r}",
                ValueError)
        specs.append(tuple(int(i) for i in spec))
    return tuple(specs)


def _check_groups(lhs: Shape3, rhs: Shape3, fgc: Any, bgc: Any) -> None:
    """C3 and C4 on the canonical (batch, feature, ...) / (out, in, ...) shapes."""
    require(_is_int(fgc) and fgc > 0, _P, "C3",
            f"feature_group_count must be a positive integer, got {fgc!r}", ValueError)
    feats, in_feats, out_feats = lhs[1], rhs[1], rhs[0]
    require(feats % fgc == 0, _P, "C3", f"feature_group_count {fgc} must divide the lhs "
            f"feature dimension size {feats}", ValueError)
    require(feats // fgc == in_feats, _P, "C3",
            f"the lhs feature dimension size divided by feature_group_count must equal the "
            f"rhs input feature dimension size, but {feats} // {fgc} != {in_feats}", ValueError)
    require(out_feats % fgc == 0, _P, "C3",
            f"the rhs output feature dimension size {out_feats} must be a multiple of "
            f"feature_group_count {fgc}", ValueError)
    require(_is_int(bgc) and bgc > 0, _P, "C4",
            f"batch_group_count must be a positive integer, got {bgc!r}", ValueError)
    require(lhs[0] % bgc == 0, _P, "C4", f"batch_group_count {bgc} must divide the lhs "
            f"batch dimension size {lhs[0]}", ValueError)
    require(out_feats % bgc == 0, _P, "C4",
            f"the rhs output feature dimension size {out_feats} must be a multiple of "
            f"batch_group_count {bgc}", ValueError)
    require(fgc == 1 or bgc == 1, _P, "C4",
            f"at most one of batch_group_count and feature_group_count may exceed 1, got "
            f"batch_group_count={bgc} and feature_group_count={fgc}", ValueError)


def _check_window(n: int, window_strides: Any, lhs_dilation: Any, rhs_dilation: Any,
                  padding: Any) -> None:
    """C5-C7: one entry per spatial dimension, of the right kind."""
    ok = isinstance(window_strides, (tuple, list)) and len(window_strides) == n
    require(ok, _P, "C5", f"window_strides must have one entry per spatial dimension "
            f"({n}), got {window_strides!r}", ValueError)
    require(all(_is_int(s) for s in window_strides), _P, "C5",
            f"window_strides must be integers, got {tuple(window_strides)}", TypeError)
    require(all(s > 0 for s in window_strides), _P, "C5",
            f"window_strides must be positive integers, got {tuple(window_strides)}",
            ValueError)
    for name, dil in (("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        ok = isinstance(dil, (tuple, list)) and all(_is_int(d) for d in dil)
        require(ok, _P, "C6", f"{name} must be a tuple of integers, got {dil!r}", TypeError)
        require(all(d > 0 for d in dil), _P, "C6",
                f"{name} must be positive, got {tuple(dil)}", TypeError)
        require(len(dil) == n, _P, "C6", f"{name} must have one entry per spatial "
                f"dimension ({n}), got {tuple(dil)}", ValueError)
    pairs = isinstance(padding, (tuple, list)) and all(
        isinstance(p, (tuple, list)) and len(p) == 2 and all(_is_int(v) for v in p)
        for p in padding)
    require(pairs, _P, "C7", f"padding must be a sequence of (low, high) integer pairs, "
            f"got {padding!r}", TypeError)
    require(len(padding) == n, _P, "C7", f"padding must have one (low, high) pair per "
            f"spatial dimension ({n}), got {len(padding)}: {padding!r}", TypeError)


def conv_output_shape(lhs: ArrayType, rhs: ArrayType, *, window_strides: Any, padding: Any,
                      lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
                      feature_group_count: Any, batch_group_count: Any) -> T.Shape:
    require(lhs.ndim == rhs.ndim, _P, "C1", f"lhs and rhs must have the same rank, got shapes "
            f"{lhs.shape} and {rhs.shape}", ValueError)
    require(lhs.ndim >= 2, _P, "C1", f"operands need a batch and a feature axis (rank >= 2), "
            f"got shapes {lhs.shape} and {rhs.shape}", ValueError)
    lspec, rspec, ospec = _check_specs(dimension_numbers, lhs.ndim)
    ls = tuple(lhs.shape[i] for i in lspec)
    rs = tuple(rhs.shape[i] for i in rspec)
    _check_groups(ls, rs, feature_group_count, batch_group_count)
    n = lhs.ndim - 2
    _check_window(n, window_strides, lhs_dilation, rhs_dilation, padding)
    dilated = tuple(dilate_dim(d, ld) for d, ld in zip(ls[2:], lhs_dilation))
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, padding)]
    require(all(p >= 0 for p in padded), _P, "C8",
            f"negative padding {tuple(tuple(p) for p in padding)} removes more than the "
            f"(dilated) lhs spatial sizes {dilated}", ValueError)
    require(all(k > 0 for k in rs[2:]), _P, "C9",
            f"every rhs spatial (window) size must be positive, got {rs[2:]}", ValueError)
    spatial = [stride_dim(p, dilate_dim(k, rd), s)
               for p, k, rd, s in zip(padded, rs[2:], rhs_dilation, window_strides)]
    canon = (ls[0] // batch_group_count, rs[0], *spatial)
    out = [0] * lhs.ndim
    for axis, size in zip(ospec, canon):
        out[axis] = size
    return tuple(out)


def conv_dtype(lhs: T.DType, rhs: T.DType, preferred: T.DType | None) -> T.DType:
    require(lhs == rhs, _P, "C10", f"lhs and rhs must have the same dtype, got {lhs.name} "
            f"and {rhs.name}")
    if preferred is None:
        return lhs
    if not (T.is_int(lhs) and T.is_float(preferred)):
        for kind in (T.is_int, T.is_float, T.is_complex):
            require(not kind(lhs) or kind(preferred), _P, "C11",
                    f"preferred_element_type {preferred.name} is incompatible with the "
                    f"operand type {lhs.name}; allowed (operand, preferred) kinds are "
                    "(integer, integer), (integer, floating), (floating, floating), "
                    "(complex, complex)")
        require(not T.is_signed_int(lhs) or T.is_signed_int(preferred), _P, "C11",
                f"preferred_element_type {preferred.name} must be signed like the operand "
                f"type {lhs.name}")
    require(preferred.itemsize >= lhs.itemsize, _P, "C11",
            f"preferred_element_type {preferred.name} must not be narrower than the operand "
            f"type {lhs.name}")
    return preferred


def _conv_type(lhs: ArrayType, rhs: ArrayType, *, window_strides: Any, padding: Any,
               lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
               feature_group_count: Any, batch_group_count: Any, precision: Any,
               preferred_element_type: T.DType | None, out_sharding: Any = None
               ) -> list[ArrayType]:
    shape = conv_output_shape(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        feature_group_count=feature_group_count, batch_group_count=batch_group_count)
    dtype = conv_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    return [ArrayType(shape, dtype, lhs.weak_type and rhs.weak_type)]


# --------------------------------------------------------------------- impl
#
# Both operands are first brought to the canonical layouts (batch, feature,
# spatial...) and (out feature, in feature, spatial...). The lhs is dilated
# and padded explicitly; each output position's window is then a strided view
# (sliding_window_view, subsampled by the strides and the rhs dilation), and a
# single batched matmul over the group axis contracts every window with the
# kernel at once.

def _dilate(x: np.ndarray, dilation: Sequence[int]) -> np.ndarray:
    """Insert ``d - 1`` zeros between neighbours along each spatial axis."""
    if all(d == 1 for d in dilation):
        return x
    shape = x.shape[:2] + tuple(dilate_dim(n, d) for n, d in zip(x.shape[2:], dilation))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None), *(slice(None, None, d) for d in dilation))] = x
    return out


def _pad(x: np.ndarray, padding: Padding) -> np.ndarray:
    """Zero padding; a negative amount removes elements from that edge. The
    positive part is applied first so that e.g. (-4, 3) on a size-2 axis
    keeps the last padding zero, as XLA does."""
    widths = [(0, 0), (0, 0), *((max(lo, 0), max(hi, 0)) for lo, hi in padding)]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                 for n, (lo, hi) in zip(x.shape[2:], padding))
    return x[(slice(None), slice(None), *crop)]


def _int_wrap(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """Two's-complement wrap of an exact int64/uint64 result to ``dt``
    (also for the sub-byte ml_dtypes ints, which NumPy casts do not wrap)."""
    if dt not in T.NARROW_INT_TYPES and dt not in T.NARROW_UINT_TYPES:
        return x.astype(dt)
    bits = T.iinfo_bits(dt)
    lo = int(ml_dtypes.iinfo(dt).min)  # type: ignore[no-untyped-call]
    wide = x.astype(np.int64)
    return (((wide - lo) & ((1 << bits) - 1)) + lo).astype(dt)


class _Geometry(NamedTuple):
    strides: tuple[int, ...]
    padding: Padding
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    fgc: int
    bgc: int


def _conv_canonical(lhs: np.ndarray, rhs: np.ndarray, out_shape: tuple[int, ...],
                    g: _Geometry) -> np.ndarray:
    """The convolution of canonical-layout operands, in their (compute) dtype;
    ``out_shape`` is the canonical (batch, feature, spatial...) result shape."""
    n = lhs.ndim - 2
    if 0 in out_shape:
        return np.zeros(out_shape, lhs.dtype)
    x = _pad(_dilate(lhs, g.lhs_dilation), g.padding)
    ks = rhs.shape[2:]
    window = tuple(dilate_dim(k, r) for k, r in zip(ks, g.rhs_dilation))
    win = np.lib.stride_tricks.sliding_window_view(x, window, axis=tuple(range(2, 2 + n)))
    win = win[(slice(None), slice(None), *(slice(None, None, s) for s in g.strides),
               *(slice(None, None, r) for r in g.rhs_dilation))]
    # win: (N, C, out spatial..., kernel spatial...)
    groups = g.fgc * g.bgc  # at most one of them exceeds 1
    nb = lhs.shape[0] // g.bgc
    cg = lhs.shape[1] // g.fgc
    fg = rhs.shape[0] // groups
    osp = out_shape[2:]
    npos, kvol = int(np.prod(osp, dtype=np.int64)), int(np.prod(ks, dtype=np.int64))
    # lhs batch index = group * nb + b; lhs feature index = group * cg + c.
    w = win.reshape((g.bgc, nb, g.fgc, cg, *osp, *ks))
    w = np.moveaxis(w, 1, 2).reshape((groups, nb, cg, npos, kvol))
    w = np.moveaxis(w, 2, 3).reshape((groups, nb * npos, cg * kvol))
    k = rhs.reshape((groups, fg, cg * kvol)).transpose(0, 2, 1)
    res = _real_matmul(w, k)  # (groups, nb * npos, fg), under dot_general's contract
    res = res.reshape((groups, nb, *osp, fg))
    # Output feature index = group * fg + f.
    res = np.moveaxis(res, -1, 1).reshape((groups * fg, nb, *osp))
    return np.asarray(np.moveaxis(res, 0, 1))


def _compute_dtype(operand: T.DType, out: T.DType) -> T.DType:
    """Accumulation dtype: exact wrapping integers; narrow floats in float32."""
    if not T.is_inexact(operand):
        return T.uint64 if T.is_unsigned_int(out) else T.int64
    real = out if T.is_inexact(out) else operand
    return real if real.itemsize >= 4 and real not in T.SMALL_FLOAT_TYPES else T.float32


def _real_part_dtype(dt: T.DType) -> T.DType:
    return T.float32 if dt == T.complex64 else T.float64


def _complex_conv(conv: Callable[[np.ndarray, np.ndarray], np.ndarray], lhs: np.ndarray,
                  rhs: np.ndarray, out: T.DType) -> np.ndarray:
    """XLA CPU computes a complex convolution as three real ones (Gauss's
    trick), each operand sum rounded in the operands' real type."""
    real = _real_part_dtype(out)
    xr, xi, yr, yi = lhs.real, lhs.imag, rhs.real, rhs.imag

    def real_conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return conv(a.astype(real, copy=False), b.astype(real, copy=False))

    k1 = real_conv(xr + xi, yr)
    k2 = real_conv(xr, yi - yr)
    k3 = real_conv(xi, yr + yi)
    res = np.empty(k1.shape, out)
    res.real = k1 - k3
    res.imag = k1 + k2
    return res


def _conv_impl(lhs: np.ndarray, rhs: np.ndarray, *, window_strides: Any, padding: Any,
               lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
               feature_group_count: Any, batch_group_count: Any, precision: Any,
               preferred_element_type: T.DType | None, out_sharding: Any = None
               ) -> list[np.ndarray]:
    lspec, rspec, ospec = (tuple(int(i) for i in s) for s in dimension_numbers)
    out_dtype = conv_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    g = _Geometry(tuple(int(s) for s in window_strides),
                  tuple((int(lo), int(hi)) for lo, hi in padding),
                  tuple(int(d) for d in lhs_dilation), tuple(int(d) for d in rhs_dilation),
                  int(feature_group_count), int(batch_group_count))
    lt, rt = np.transpose(lhs, lspec), np.transpose(rhs, rspec)
    out_full = conv_output_shape(
        ArrayType(lt.shape, lhs.dtype), ArrayType(rt.shape, rhs.dtype),
        window_strides=g.strides, padding=g.padding, lhs_dilation=g.lhs_dilation,
        rhs_dilation=g.rhs_dilation, dimension_numbers=ConvDimensionNumbers(
            *(tuple(range(lhs.ndim)),) * 3),
        feature_group_count=g.fgc, batch_group_count=g.bgc)

    def conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _conv_canonical(a, b, out_full, g)

    def float_conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # Subnormal operands read as zero and a subnormal result is written
        # as zero (XLA CPU), flushed explicitly: the exact contraction must
        # not run in the FTZ/DAZ mode that ``arithmetic`` may use.
        fa, fb = flush_all((a, b))
        return flush_result(conv(fa, fb))

    with np.errstate(all="ignore"):
        if T.is_complex(lhs.dtype):
            res = _complex_conv(float_conv, lt, rt, out_dtype)
        elif T.is_inexact(lhs.dtype):
            cd = _compute_dtype(lhs.dtype, out_dtype)
            res = float_conv(lt.astype(cd, copy=False), rt.astype(cd, copy=False))
            res = np.asarray(res).astype(out_dtype, copy=False)
        else:
            cd = _compute_dtype(lhs.dtype, out_dtype)
            res = conv(lt.astype(cd), rt.astype(cd))
            if out_dtype == T.bool_:
                res = res != 0  # a sum of ANDs is an OR
            elif T.is_int(out_dtype):
                res = _int_wrap(res, out_dtype)
            else:
                res = arithmetic(lambda r: r.astype(out_dtype), res)
    return [np.ascontiguousarray(np.transpose(res, np.argsort(ospec)))]


# ----------------------------------------------------------------- autodiff
#
# The convolution is bilinear. Its JVP is conv(t_lhs, rhs) + conv(lhs, t_rhs)
# with the same params; each transpose is again a convolution, as in JAX:
#
# - lhs: the output cotangent convolved with the spatially reversed kernel
#   whose in/out feature axes are swapped; the roles of window strides and
#   lhs dilation are exchanged, and the padding makes the result cover the
#   lhs exactly. With feature groups the group axis moves from the kernel's
#   output features into its input features; with batch groups the result's
#   features are folded back into the batch.
# - rhs: the lhs convolved with the output cotangent acting as the kernel
#   (batch and feature axes swapped in every spec); the roles of window
#   strides and rhs dilation are exchanged; feature groups become batch
#   groups and vice versa.



def _shape_of(x: Any) -> tuple[int, ...]:
    return canonical_aval_of(x).shape


def _dtype_of(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


def _swap_spec(spec: Sequence[int]) -> tuple[int, ...]:
    """The spec with its first two (batch/feature) entries exchanged."""
    return (spec[1], spec[0], *spec[2:])


def _spatial(spec: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(s) for s in spec[2:])


def _take(shape: Sequence[int], axes: Sequence[int]) -> list[int]:
    return [int(shape[a]) for a in axes]


def _split_axis(src: int, size1: int, x: Any) -> Any:
    """Reshape axis ``src`` of size size1 * size2 into two axes (size1, size2)."""
    shape = list(_shape_of(x))
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, shape)


def _merge_axis(src: int, dst: int, x: Any) -> Any:
    """Move axis ``src`` next to (before) the axis that is ``dst`` once src
    is removed, and merge the two (src major)."""
    shape = _shape_of(x)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [d for i, d in enumerate(shape) if i != src]
    new_shape[dst] *= shape[src]
    return reshape(x, new_shape, perm)


def _lhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                 out_shape: Sequence[int], padding: Padding, lhs_dilation: Sequence[int],
                 rhs_dilation: Sequence[int]) -> list[tuple[int, int]]:
    pads = []
    for i, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                          lhs_dilation, rhs_dilation):
        lhs_d, rhs_d, out_d = dilate_dim(i, ld), dilate_dim(k, rd), dilate_dim(o, s)
        before = rhs_d - lo - 1
        pads.append((before, lhs_d + rhs_d - 1 - out_d - before))
    return pads


def _rhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                 out_shape: Sequence[int], padding: Padding, lhs_dilation: Sequence[int],
                 rhs_dilation: Sequence[int]) -> list[tuple[int, int]]:
    pads = []
    for i, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                          lhs_dilation, rhs_dilation):
        lhs_d, rhs_d, out_d = dilate_dim(i, ld), dilate_dim(k, rd), dilate_dim(o, s)
        pads.append((lo, (out_d - lhs_d) + (rhs_d - lo - 1)))
    return pads


def _conv_transpose_lhs(g: Any, lhs: Any, rhs: Any, *, window_strides: Any, padding: Any,
                        lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
                        feature_group_count: int, batch_group_count: int, precision: Any,
                        preferred_element_type: T.DType | None, out_sharding: Any = None
                        ) -> Any:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_aval = lhs.aval
    rhs_shape = _shape_of(rhs)  # of the kernel as given, before any regrouping
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        count = max(feature_group_count, batch_group_count)
        rhs = _split_axis(int(rhs_spec[0]), count, rhs)
        rhs = _merge_axis(int(rhs_spec[0]), int(rhs_spec[1]), rhs)
        groups = count
    trans_dnums = ConvDimensionNumbers(out_spec, _swap_spec(rhs_spec), lhs_spec)
    pads = _lhs_padding(_take(lhs_aval.shape, _spatial(lhs_spec)),
                        _take(rhs_shape, _spatial(rhs_spec)), window_strides,
                        _take(_shape_of(g), _spatial(out_spec)), padding, lhs_dilation,
                        rhs_dilation)
    kernel = rev(rhs, _spatial(rhs_spec))
    g_dtype = _dtype_of(g)
    if g_dtype != _dtype_of(kernel):
        kernel = convert_element_type(kernel, g_dtype)
    out = conv_general_dilated(
        g, kernel, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation, dimension_numbers=trans_dnums, feature_group_count=groups,
        batch_group_count=1, precision=precision, preferred_element_type=preferred_element_type,
        out_sharding=lhs_aval.sharding)
    if _dtype_of(out) != lhs_aval.dtype:
        out = convert_element_type(out, lhs_aval.dtype)
    if batch_group_count > 1:
        out = _split_axis(int(lhs_spec[1]), batch_group_count, out)
        out = _merge_axis(int(lhs_spec[1]), int(lhs_spec[0]), out)
    return out


def _conv_transpose_rhs(g: Any, lhs: Any, rhs: Any, *, window_strides: Any, padding: Any,
                        lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
                        feature_group_count: int, batch_group_count: int, precision: Any,
                        preferred_element_type: T.DType | None, out_sharding: Any = None
                        ) -> Any:
    rhs_aval = rhs.aval
    g_shape = _shape_of(g)
    if math.prod(g_shape) == 0:
        # An empty output cotangent: JAX returns a zero rather than forming a
        # convolution whose kernel would have an empty spatial axis.
        return Zero(rhs_aval.ct_type())
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    # Feature groups of the forward convolution are batch groups of this one
    # and vice versa (at most one exceeds 1).
    fgc, bgc = batch_group_count, feature_group_count
    trans_dnums = ConvDimensionNumbers(_swap_spec(lhs_spec), _swap_spec(out_spec),
                                       _swap_spec(rhs_spec))
    pads = _rhs_padding(_take(_shape_of(lhs), _spatial(lhs_spec)),
                        _take(rhs_aval.shape, _spatial(rhs_spec)), window_strides,
                        _take(g_shape, _spatial(out_spec)), padding, lhs_dilation,
                        rhs_dilation)
    g_dtype = _dtype_of(g)
    if g_dtype != _dtype_of(lhs):
        lhs = convert_element_type(lhs, g_dtype)
    out = conv_general_dilated(
        lhs, g, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides, dimension_numbers=trans_dnums, feature_group_count=fgc,
        batch_group_count=bgc, precision=precision, preferred_element_type=preferred_element_type,
        out_sharding=rhs_aval.sharding)
    if _dtype_of(out) != rhs_aval.dtype:
        out = convert_element_type(out, rhs_aval.dtype)
    return out


def _conv_jvp_lhs(g: Any, lhs: Any, rhs: Any, **params: Any) -> Any:
    return conv_general_dilated_p.bind(g, rhs, **params)


def _conv_jvp_rhs(g: Any, lhs: Any, rhs: Any, **params: Any) -> Any:
    return conv_general_dilated_p.bind(lhs, g, **params)


# ----------------------------------------------------------------- batching
#
# A convolution has one batch axis and grouped features, so a vmap axis is
# folded into one of them (JAX's rule, with its reshapes): a batched lhs
# joins the lhs batch axis (or, with batch groups, each group's slice of
# it); a batched rhs joins the output-feature axis (inside each group when
# there are groups); both batched, the examples become feature groups (or
# batch groups) so that example k's input only meets example k's kernel.
# The folded axis is split back out of the output's batch or feature axis.


def _conv_batch(axis: Any, args: list[Any], dims: list[Any], **params: Any
                ) -> tuple[list[Any], list[Any]]:
    lhs, rhs = args
    lbd, rbd = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    size = axis.size
    if size == 0:
        # Folding a size-0 axis into another loses that axis's size: build
        # the (empty) result from the unbatched type instead.
        lt = unbatched_aval(canonical_aval_of(lhs), lbd)
        rt = unbatched_aval(canonical_aval_of(rhs), rbd)
        (out,) = _conv_type(lt, rt, **params)
        return [full((0, *out.shape), 0, out.dtype)], [0]

    def conv(x: Any, y: Any, **changed: Any) -> Any:
        return conv_general_dilated_p.bind(x, y, **{**params, **changed})

    if lbd is not None and rbd is not None:
        if bgc > 1:
            new_lhs = _merge_axis(lbd, lhs_spec[0], lhs)
            changed = {"batch_group_count": bgc * size}
        else:
            new_lhs = _merge_axis(lbd, lhs_spec[1], lhs)
            changed = {"feature_group_count": fgc * size}
        out = conv(new_lhs, _merge_axis(rbd, rhs_spec[0], rhs), **changed)
        return [_split_axis(out_spec[1], size, out)], [out_spec[1]]
    if lbd is not None:
        if bgc == 1:
            out = conv(_merge_axis(lbd, lhs_spec[0], lhs), rhs)
            return [_split_axis(out_spec[0], size, out)], [out_spec[0]]
        # Each batch group must keep its own slice: split the groups out of
        # the lhs batch axis, fold the vmap axis inside them, fold back.
        new_lhs = _split_axis(lhs_spec[0] + int(lbd <= lhs_spec[0]), bgc, lhs)
        new_lhs = _merge_axis(lbd + int(lhs_spec[0] < lbd), lhs_spec[0] + 1, new_lhs)
        new_lhs = _merge_axis(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv(new_lhs, rhs)
        return [_split_axis(out_spec[0], size, out)], [out_spec[0]]
    assert rbd is not None
    if fgc == 1 and bgc == 1:
        out = conv(lhs, _merge_axis(rbd, rhs_spec[0], rhs))
        return [_split_axis(out_spec[1], size, out)], [out_spec[1]]
    # Groups are outermost in the rhs output-feature axis: fold the vmap
    # axis inside each group, then undo that on the output features.
    groups = fgc if fgc > 1 else bgc
    new_rhs = _split_axis(rhs_spec[0] + int(rbd <= rhs_spec[0]), groups, rhs)
    new_rhs = _merge_axis(rbd + int(rhs_spec[0] < rbd), rhs_spec[0] + 1, new_rhs)
    new_rhs = _merge_axis(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv(lhs, new_rhs)
    out = _split_axis(out_spec[1], groups, out)
    out = _split_axis(out_spec[1] + 1, size, out)
    out = _merge_axis(out_spec[1], out_spec[1] + 1, out)
    return [out], [out_spec[1]]


# ----------------------------------------------------------------- sharding
#
# Explicit-sharding types (SPEC.md section 14.1), as JAX 0.12: an explicit
# ``out_sharding`` is the result's sharding; otherwise the result takes the
# lhs's partitions position by position, which is only allowed when the
# kernel is replicated and the lhs feature axis (the contracted one) is not
# split. Neither operand may be unreduced or reduced.


def _int64s(shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The shape as JAX's conv shape rule computes it (NumPy int64s), for messages."""
    return tuple(np.int64(n) for n in shape)


def _replicated(a: ArrayType) -> bool:
    """Every device holds all of ``a`` (a split over size-1 mesh axes counts);
    unreduced axes hold partial values, so they do not count as replicated."""
    s = a.sharding
    if s is None or s.mesh.empty or math.prod(s.mesh.shape.values()) == 1:
        return True
    if s.spec.unreduced:
        return False
    axes = [x for e in SK.parts(a) if e is not None for x in (e if isinstance(e, tuple) else (e,))]
    return bool(math.prod(s.mesh.shape[x] for x in axes) == 1)


def _conv_parts(mesh: Any, lhs: ArrayType, rhs: ArrayType, *, dimension_numbers: Any,
                out_sharding: Any = None, **params: Any) -> list[SK.Parts]:
    (out,) = _conv_type(lhs, rhs, dimension_numbers=dimension_numbers, **params)
    if out_sharding is not None:
        # S1: an explicit out_sharding is the result's sharding.
        return [SK.param_parts(SK.abstract(out_sharding), out.ndim)]
    if not _replicated(rhs):
        # S2: a split kernel needs an explicit out_sharding.
        raise ShardingTypeError("Please specify the output sharding via `out_sharding`"
                                " parameter of `conv_general_dilated`")
    if SK.getu(lhs) or SK.getr(lhs):
        # JAX reads the lhs feature entry positionally, which its
        # PartitionSpec refuses when the spec has unreduced/reduced axes.
        raise ValueError("Using pspec[...] is dangerous when PartitionSpec has non-empty"
                         " unreduced/reduced set. Please use spec.partitions[...]")
    lparts = SK.parts(lhs)
    if lparts[int(dimension_numbers[0][1])] is not None:
        # S2: nor may the contracted lhs feature axis be split.
        raise ShardingTypeError("Please specify the output sharding via `out_sharding`"
                                " parameter of `conv_general_dilated`")
    if all(n == 1 for n in out.shape):
        return [(None,) * out.ndim]
    # S3: the lhs partitions carry over position by position (whatever the
    # axes mean in the two layouts, as in JAX); a split axis whose size
    # changes must stay divisible by its mesh axes.
    sizes = mesh.shape
    for n_in, n_out, entry in zip(lhs.shape, out.shape, lparts):
        if entry is None or n_in == n_out:
            continue
        ways = math.prod(sizes[a] for a in (entry if isinstance(entry, tuple) else (entry,)))
        if n_out % ways:
            raise ShardingTypeError(
                f"{_P} on sharded dims where out dim ({n_out}) is not divisible by mesh axes"
                f" ({ways}) with spec ({entry}) is not implemented. Got input"
                f" type={lhs.str_short(True)} and output shape={_int64s(out.shape)}")
    return [lparts]


def _conv_ur(lhs: ArrayType, rhs: ArrayType, *, out_sharding: Any = None, **params: Any
             ) -> SK.UR:
    requested = None if out_sharding is None else SK.abstract(out_sharding).spec
    if (any(SK.getu(a) or SK.getr(a) for a in (lhs, rhs))
            or (requested is not None and (requested.unreduced or requested.reduced))):
        raise NotImplementedError(f"unreduced/reduced rule for {_P} is not implemented. Please"
                                  " file an issue at https://github.com/jax-ml/jax/issues")
    return frozenset(), frozenset(), None


def _conv_batch_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """A convolution is local when only the lhs batch dim is split (the same
    way in the result) and the kernel is whole: each device convolves its
    examples. Split spatial dims would need halos; split features, sums."""
    lhs, rhs = args[0].aval, args[1].aval
    lspec, _, ospec = (tuple(int(i) for i in s) for s in params["dimension_numbers"])
    lp, op = S.parts_of(lhs), S.parts_of(out_avals[0])
    return (params["batch_group_count"] == 1 and not any(S.parts_of(rhs))
            and not S.unreduced_of(lhs) and not S.unreduced_of(rhs)
            and all(not lp[d] for d in lspec[1:]) and lp[lspec[0]] == op[ospec[0]]
            and all(not op[d] for d in ospec[1:]))


conv_general_dilated_p = declare(
    "conv_general_dilated", typing=_conv_type, impl=_conv_impl,
    lowering=ST.conv_general_dilated,
    batch=_conv_batch,
    jvp=defjvp(_conv_jvp_lhs, _conv_jvp_rhs),
    transpose=bilinear_transpose(_conv_transpose_lhs, _conv_transpose_rhs,
                                 "conv_general_dilated"),
    sharding=SK.section(_P, _conv_parts, _conv_ur),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _conv_batch_only, PD.local(p))))


# ------------------------------------------------------------ lax wrappers

ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None
Pads = list[tuple[int, int]]

_PAD_STRINGS = ("VALID", "SAME", "SAME_LOWER")


# ------------------------------------------------------------ static helpers

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: Any) -> Pads:
    """Explicit (low, high) pads for ``'VALID'``, ``'SAME'`` or ``'SAME_LOWER'``.

    SAME pads so that each output size is ceil(input / stride); an odd total
    puts the extra element at the end (SAME) or the start (SAME_LOWER).
    """
    if not isinstance(padding, str):
        raise TypeError(f"Unknown padding type: {padding!r}; expected 'VALID', 'SAME' or "
                        "'SAME_LOWER'.")
    mode = padding.upper()
    if mode not in _PAD_STRINGS:
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    if len(in_shape) != len(window_shape) or len(in_shape) != len(window_strides):
        raise ValueError(f"padtype_to_pads: in_shape {tuple(in_shape)}, window_shape "
                         f"{tuple(window_shape)} and window_strides {tuple(window_strides)} "
                         "must have equal lengths")
    pads: Pads = []
    for d, k, s in zip(in_shape, window_shape, window_strides):
        d, k, s = int(d), int(k), int(s)
        if s <= 0:
            raise ValueError(f"padtype_to_pads: window_strides must be positive, got "
                             f"{tuple(window_strides)}")
        total = max((-(-d // s) - 1) * s + k - d, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if mode == "SAME" else (large, small))
    return pads


def conv_general_permutations(dimension_numbers: Any
                              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Axis permutations (batch/out-feature, feature/in-feature, spatial...)
    for string dimension numbers such as ('NHWC', 'HWIO', 'NHWC'). Spatial
    axes are ordered as they appear in the rhs string."""
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        s = dimension_numbers[i]
        if not s.count(a) == s.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {s}.")
        if len(s) != len(set(s)):
            raise TypeError(f"convolution dimension_numbers[{i}] must not repeat a "
                            f"character, got {s}.")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError("convolution dimension_numbers must name the same spatial characters "
                        f"in all three strings, got {tuple(dimension_numbers)}.")

    def perm(s: str, pair: tuple[str, str]) -> tuple[int, ...]:
        sp = sorted((i for i, c in enumerate(s) if c not in pair),
                    key=lambda i: rhs_s.index(s[i]))
        return (s.index(pair[0]), s.index(pair[1]), *sp)

    return perm(lhs_s, pairs[0]), perm(rhs_s, pairs[1]), perm(out_s, pairs[2])


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """``None``, a ConvDimensionNumbers, or three layout strings, as a
    ConvDimensionNumbers of axis permutations."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError("convolution dimension_numbers elements must be strings, got "
                        f"{tuple(type(s) for s in dimension_numbers)}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """Output shape of a convolution of canonical-layout shapes (no dilation)."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError("Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    space = tuple(stride_dim(p, int(k), int(s))
                  for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0]), *space)


def _permuted_shape(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"convolution dimension numbers {tuple(perm)} are not a permutation "
                         f"of the axes of shape {tuple(shape)}")
    return tuple(int(shape[i]) for i in perm)


def _unpermute(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    out = [0] * len(shape)
    for axis, size in zip(perm, shape):
        out[axis] = int(size)
    return tuple(out)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any) -> tuple[int, ...]:
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_permuted_shape(lhs_shape, lp), _permuted_shape(rhs_shape, rp),
                           window_strides, padding)
    return _unpermute(out, op)


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(low, high) padding of the dilated input of a transposed convolution
    whose forward convolution used ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        low, total = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any) -> tuple[int, ...]:
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _permuted_shape(lhs_shape, lp), _permuted_shape(rhs_shape, rp)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rt[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + int(sum(p))
             for i, k, s, p in zip(lt[2:], rt[2:], window_strides, padding)]
    return _unpermute((lt[0], rt[0], *space), op)


# ------------------------------------------------------------------ wrappers

def _explicit_padding(padding: Any) -> tuple[tuple[int, int], ...]:
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError) as err:
        raise ValueError("padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding}") from err


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None,
                         out_sharding: Any = None) -> Any:
    """General n-dimensional convolution with lhs (input) and rhs (kernel)
    dilation, zero padding, and feature/batch grouping."""
    lshape, rshape = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
    dnums = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    # As JAX (which names dot_general here): a P takes the context mesh, and a
    # concrete mesh becomes abstract, so the param prints as JAX's.
    out_sharding = canonicalize_out_sharding(out_sharding, "dot_general")
    if lhs_dilation is None:
        lhs_dilation = (1,) * (len(lshape) - 2)
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not supported for transposed (lhs-dilated) "
                         "convolution with conv_general_dilated: give explicit padding "
                         "pairs or use conv_transpose.")
    if rhs_dilation is None:
        rhs_dilation = (1,) * (len(rshape) - 2)
    pads: Any
    if isinstance(padding, str):
        lhs_sp = _permuted_shape(lshape, dnums.lhs_spec)[2:]
        rhs_sp = _permuted_shape(rshape, dnums.rhs_spec)[2:]
        window = [dilate_dim(k, int(r)) for k, r in zip(rhs_sp, rhs_dilation)]
        pads = padtype_to_pads(lhs_sp, window, window_strides, padding)
    else:
        pads = _explicit_padding(padding)
    pet = (None if preferred_element_type is None
           else T.to_dtype(preferred_element_type, "conv_general_dilated"))
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(window_strides), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dnums, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, precision=canonicalize_precision(precision),
        preferred_element_type=pet, out_sharding=out_sharding)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Convolution in the NCHW/OIHW layout with string padding."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """Convolution in the NCHW/OIHW layout with explicit padding and dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_DNUMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                            4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _flip_kernel(rhs: Any, dn: ConvDimensionNumbers) -> Any:
    """Reverse the kernel's spatial axes and swap its feature axes; on a
    NumPy kernel this stays NumPy (no equations), as in JAX."""
    spatial = [int(a) for a in dn.rhs_spec[2:]]
    o, i = int(dn.rhs_spec[0]), int(dn.rhs_spec[1])
    if isinstance(rhs, np.ndarray):
        return np.swapaxes(np.flip(rhs, tuple(spatial)), o, i)
    for axis in spatial:
        rhs = rev(rhs, (axis,))
    perm = list(range(len(canonical_aval_of(rhs).shape)))
    perm[o], perm[i] = perm[i], perm[o]
    return transpose(rhs, perm)


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """A fractionally strided convolution: the lhs is dilated by ``strides``
    and convolved with stride 1 (the kernel is not flipped unless
    ``transpose_kernel``)."""
    lshape, rshape = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
    ndims = len(lshape)
    if ndims != len(rshape) or ndims < 2:
        raise ValueError(f"conv_transpose needs lhs and rhs of equal rank >= 2, got shapes "
                         f"{lshape} and {rshape}")
    if dimension_numbers is None:
        if ndims not in _TRANSPOSE_DEFAULT_DNUMS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DNUMS[ndims]
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    k_spatial = _permuted_shape(rshape, dn.rhs_spec)[2:]
    if rhs_dilation is None:
        rhs_dilation = (1,) * (ndims - 2)
    pads: Any
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads = tuple(_conv_transpose_padding(dilate_dim(k, int(r)), int(s), p)
                     for k, r, s, p in zip(k_spatial, rhs_dilation, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = _flip_kernel(rhs, dn)
    return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


__all__ = [
    "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv", "conv_dimension_numbers",
    "conv_general_dilated", "conv_general_permutations", "conv_general_shape_tuple",
    "conv_shape_tuple", "conv_transpose", "conv_transpose_shape_tuple",
    "conv_with_general_padding", "padtype_to_pads",
]
