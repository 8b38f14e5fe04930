"""Correctly rounded matrix products, whatever the BLAS.

``matmul(a, b)`` multiplies float32 or float64 operands ``a (..., m, k)`` and
``b (..., k, n)`` (equal batch shapes, equal dtypes) and returns every element
as the exact sum of the exact products, rounded once, to nearest with ties to
even, to the operands' type (SPEC.md 9.4, "Numerical contract of
contractions"). The result
is a function of the operands alone: not of the BLAS library, its kernel
(``OPENBLAS_CORETYPE``), its blocking or its thread count.

How, at close to BLAS speed:

1. float64 GEMMs compute an approximation ``hi + lo`` of every element and a
   rigorous bound on its error that holds for ANY order of summation (the
   one thing BLAS builds disagree on).
2. Rounding is monotone: when both ends of ``[hi + lo - bound, hi + lo +
   bound]`` round to the same value, that value is the correctly rounded
   result. One bound for all elements settles nearly every one.
3. The few left get tighter bounds of their own, and what is still open
   (exact ties, sums that cancel to nothing) is summed exactly: with
   ``math.fsum`` where the products are exact floats, in integers
   otherwise.

float32 operands: products of float32 values are exact in float64, so one
float64 GEMM gives ``hi`` with error at most gamma_k * sum |products|.
float64 operands: products are not exact, so each operand is scaled by powers
of two (rows of ``a``, columns of ``b``) and cut into slices of few enough
bits that the slices' GEMMs are exact in any order (Ozaki's splitting); only
a small remainder is summed with rounding, and a TwoSum chain keeps
``hi + lo`` exact apart from it.

Non-finite operands give the IEEE sum of the IEEE products, which does not
depend on the order either: NaN if a product is NaN (a NaN factor, or
inf * 0) or products of both infinite signs meet, else the infinite
products' sign. Finite operands are summed exactly even where a product or
a partial sum would leave the float range, so only a result that itself
rounds beyond the largest float overflows.

The arithmetic assumes IEEE gradual underflow (no FTZ/DAZ mode), which is
how spec calls it; flushing subnormal results is the caller's business, and
so is flushing operands unless ``daz`` asks for it (float32 operands are
then flushed as they are widened to float64). Arrays are updated in place
where a value is dead: fresh multi-megabyte temporaries cost page faults
comparable to the arithmetic.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator, Sequence

import numpy as np

from spec._src.core.denormals import flush, widen_flushed

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)

_U = 2.0 ** -53  # float64 unit roundoff
_TINY = float(np.finfo(F64).tiny)
# The longest contraction one BLAS call gets. Some OpenBLAS kernels crash
# for longer ones on CPUs they were not built for (OPENBLAS_CORETYPE=Haswell
# or Zen on an AVX-512 machine corrupt the stack in dgemm from about 300
# terms); 256 stays clear of that, for one addition per extra chunk. The
# kernel OpenBLAS picks for the CPU itself runs NumPy's own float64 products
# of any depth, so only a kernel forced on it (read when NumPy loaded
# OpenBLAS, as here) gets the limit. The results are the same either way.
_CHUNK = 256 if os.environ.get("OPENBLAS_CORETYPE") else 1 << 62
# Up to this depth one slice per float64 operand leaves an error small
# enough to settle nearly every element; deeper contractions take two.
_ONE_SLICE_MAX_K = 32
# What an underflowing float64 operation can lose, with room to spare.
_UNDERFLOW = 2.0 ** -1022
# Result elements checked at once: a block of the GEMM's result, both of
# its rounded ends and their comparison stay in the core's cache.
_CHECK_BLOCK = 1 << 15
# Elements (times the depth) gathered at once for per-element work.
_GATHER = 1 << 16
# Products with at most this many terms in all are summed in Python floats.
_FEW = 64
# TwoProduct (Dekker, Veltkamp's splitting) is exact when no factor's
# splitting overflows and each nonzero product lies where neither it nor
# its partial products (multiples of 2**-104 times it) leave the range;
# sums of up to 2**22 such products stay finite.
_SPLIT_MAX = 2.0 ** 995
_PRODUCT_MIN, _PRODUCT_MAX = 2.0 ** -900, 2.0 ** 1000
# The float32 path's temporaries come from per-thread scratch memory when
# they take between these many bytes (see _Scratch).
_SCRATCH_MIN, _SCRATCH_MAX = 1 << 18, 1 << 26


def matmul(a: np.ndarray, b: np.ndarray, daz: bool = False) -> np.ndarray:
    """``a @ b``, each element the exact sum rounded once to ``a.dtype``;
    ``daz``: subnormal operands read as zeros of their sign (for float32
    operands as they are widened to float64)."""
    dtype = a.dtype
    if dtype not in (F32, F64) or b.dtype != dtype:
        raise TypeError(f"matmul needs two float32 or two float64 operands, got {a.dtype} "
                        f"and {b.dtype}")
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul needs (..., m, k) and (..., k, n) operands with equal batch "
                         f"shapes, got {a.shape} and {b.shape}")
    shape = (*a.shape[:-1], b.shape[-1])
    if 0 in shape or a.shape[-1] == 0:
        return np.zeros(shape, dtype)
    few = math.prod(shape) * a.shape[-1] <= _FEW
    with np.errstate(all="ignore"):
        if few:
            found = _few_terms(*((flush(a), flush(b)) if daz else (a, b)))
            if found is not None:
                return found
        if dtype == F32:
            return _matmul_f32(a, b, daz)
        if daz:
            a, b = flush(a), flush(b)
        found = _round_to_f64(a, b)
        if found is None:
            found = _round_to_f64(_finite_part(a), _finite_part(b))
            assert found is not None
            _apply_ieee_specials(a, b, found)
        return found


def _matmul_f32(a: np.ndarray, b: np.ndarray, daz: bool) -> np.ndarray:
    """``matmul`` of float32 operands: both widened to float64 (in scratch
    memory where the sizes suit it) in the order they are stored, which
    the GEMM takes as it comes."""
    a_swapped, b_swapped = _swapped(a), _swapped(b)
    a_stored, b_stored = _stored(a, a_swapped), _stored(b, b_swapped)
    shape = (*a.shape[:-1], b.shape[-1])
    work = _SCRATCH.arrays([a_stored.shape, b_stored.shape, shape, shape])
    s_buf: np.ndarray | None = None
    part: np.ndarray | None = None
    if work is None:
        xw, yw = np.empty(a_stored.shape, F64), np.empty(b_stored.shape, F64)
    else:
        xw, yw, s_buf, part = work
    widen = widen_flushed if daz else np.copyto
    widen(xw, a_stored)
    widen(yw, b_stored)
    x, y = _stored(xw, a_swapped), _stored(yw, b_swapped)
    out = _round_to_f32(x, y, s_buf, part)
    if out is None:  # inf or nan among the operands: the finite parts first
        out = _round_to_f32(_finite_part(x), _finite_part(y))
        assert out is not None
        _apply_ieee_specials(x, y, out)
    return out


def _swapped(v: np.ndarray) -> bool:
    """Whether ``v`` is stored with its last two axes swapped (a transposed
    view of a C-contiguous array): then its float64 copy is made in that
    order, a plain copy, rather than transposed."""
    return not v.flags.c_contiguous and v.swapaxes(-1, -2).flags.c_contiguous


def _stored(v: np.ndarray, swapped: bool) -> np.ndarray:
    """``v`` with its last two axes swapped if ``swapped``: the order it is
    stored in, or back from it."""
    return v.swapaxes(-1, -2) if swapped else v


class _Scratch(threading.local):
    """Per-thread memory for temporaries, reused from call to call. A fresh
    multi-megabyte array costs a page fault per 4 KiB page once the
    allocator has returned the previous call's to the system, which on some
    machines costs as much as the arithmetic; arrays carved out of one
    kept buffer do not. Only for sizes between _SCRATCH_MIN and
    _SCRATCH_MAX bytes: smaller ones are cheap, bigger ones not worth
    keeping. Nothing carved from it may outlive the call."""

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)
        # The last call's shapes and views: a loop of equal products asks for
        # the same ones every time.
        self.last: tuple[list[tuple[int, ...]], list[np.ndarray]] = ([], [])

    def arrays(self, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray] | None:
        """float64 arrays of these shapes (uninitialised), or None outside
        the size range."""
        if self.last[0] == shapes:
            return list(self.last[1])
        sizes = [math.prod(shape) * 8 for shape in shapes]
        if not _SCRATCH_MIN <= sum(sizes) <= _SCRATCH_MAX:
            return None
        steps = [-(-n // 64) * 64 for n in sizes]  # 64-byte aligned offsets
        if self.buffer.size < sum(steps):
            self.buffer = np.empty(sum(steps), np.uint8)
        views, at = [], 0
        for shape, n, step in zip(shapes, sizes, steps):
            views.append(self.buffer[at:at + n].view(F64).reshape(shape))
            at += step
        self.last = (list(shapes), views)
        return list(views)


_SCRATCH = _Scratch()


def _few_terms(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """A product with few terms (a dot product, say): each element summed
    exactly on its own, in Python floats, which costs less than the GEMM
    machinery's array operations. None if an operand is inf or nan."""
    rows = a.reshape(-1, *a.shape[-2:]).tolist()
    cols = np.swapaxes(b, -1, -2).reshape(-1, b.shape[-1], b.shape[-2]).tolist()
    values = [v for batch in rows for row in batch for v in row]
    values += [v for batch in cols for col in batch for v in col]
    if not all(map(math.isfinite, values)):
        return None
    dot = _fsum_f32 if a.dtype == F32 else _fsum_f64
    found = [dot(r, c) for rs, cs in zip(rows, cols) for r in rs for c in cs]
    return np.array(found, a.dtype).reshape(*a.shape[:-1], b.shape[-1])


def _finite_part(v: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(v), v, 0.0)


# ------------------------------------------------------------ arithmetic

def _gemm(pairs: Sequence[tuple[np.ndarray, np.ndarray]],
          scratch: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """The float64 sum of ``x @ y`` over the pairs, at most ``_CHUNK``
    contraction terms per BLAS call (into ``out`` if given; ``scratch``,
    if given, holds the partial products). Callers either bound its
    rounding for any order of summation or use it where every partial sum
    is exact."""
    if len(pairs) == 1 and pairs[0][0].shape[-1] <= _CHUNK:
        return np.matmul(*pairs[0], out=out)
    first = True
    for x, y in pairs:
        for lo in range(0, x.shape[-1], _CHUNK):
            xs, ys = x[..., lo:lo + _CHUNK], y[..., lo:lo + _CHUNK, :]
            if first:
                out = np.matmul(xs, ys, out=out)
                first = False
                continue
            scratch = np.matmul(xs, ys, out=scratch)
            out += scratch
    assert out is not None
    return out


def _gamma(n: int) -> float:
    """Higham's gamma_n = n*u / (1 - n*u): a float64 sum of n products
    (each exact or rounded once), in any order and with or without FMA,
    is off by at most gamma_n * sum |products|. The factor 1 + 2**-40
    absorbs the rounding of the few operations that make a bound of it."""
    nu = n * _U
    return nu / (1.0 - nu) * (1.0 + 2.0 ** -40)


def _two_sum(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None,
             scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s = fl(a + b)`` and ``e`` with ``s + e == a + b``
    exactly. ``s`` goes to ``out``, ``e`` to ``a``; ``b`` and ``scratch``
    are clobbered (none of them may alias another)."""
    s = np.add(a, b, out=out)
    bb = np.subtract(s, a, out=scratch)
    np.subtract(b, bb, out=b)
    np.subtract(s, bb, out=bb)
    np.subtract(a, bb, out=a)
    np.add(a, b, out=a)
    return s, a


def _abs_max(v: np.ndarray, axis: int) -> np.ndarray:
    """max |v| along ``axis`` (nan if one is nan); for big arrays without
    an |v| temporary."""
    if v.size < 1 << 16:
        return np.asarray(np.maximum.reduce(np.abs(v), axis=axis))
    return np.asarray(np.maximum(np.maximum.reduce(v, axis=axis),
                                 -np.minimum.reduce(v, axis=axis)))


def _largest(v: np.ndarray) -> float:
    """max(v) as a Python float (nan if one is nan)."""
    return float(np.maximum.reduce(v, axis=None))


def _row_max(v: np.ndarray) -> np.ndarray:
    return _abs_max(v, -1)


def _col_max(v: np.ndarray) -> np.ndarray:
    return _abs_max(v, -2)


def _row_col(idx: np.ndarray, shape: tuple[int, ...]
             ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Index tuples of flat result elements ``idx`` into the arrays of row
    quantities (batch..., i) and of column quantities (batch..., j)."""
    *batch, i, j = np.unravel_index(idx, shape)
    return (*batch, i), (*batch, j)


def _gathered(x: np.ndarray, y: np.ndarray, rows: tuple[np.ndarray, ...],
              cols: tuple[np.ndarray, ...]) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """For the elements at ``rows``/``cols``, in blocks of bounded size:
    the block, its rows of x and its columns of y (each as a row)."""
    count, k = len(rows[0]), x.shape[-1]
    xlines, ylines = x, y.swapaxes(-1, -2)
    step = max(1, _GATHER // k)
    for start in range(0, count, step):
        block = slice(start, start + step)
        yield (block, _picked(xlines, tuple(r[block] for r in rows)),
               _picked(ylines, tuple(c[block] for c in cols)))


def _picked(lines: np.ndarray, at: tuple[np.ndarray, ...]) -> np.ndarray:
    """``lines[at]``: the matrix rows named by ``at``. Rows stored as
    columns are picked a stored row at a time (far fewer cache misses than
    a stored column at a time)."""
    if lines.ndim == 2 and lines.strides[-1] != lines.itemsize:
        return np.asarray(np.take(lines.T, at[0], axis=1).T)
    return np.asarray(lines[at])


# --------------------------------------------------------------- float32

def _round_to_f32(x: np.ndarray, y: np.ndarray, s_buf: np.ndarray | None = None,
                  part: np.ndarray | None = None) -> np.ndarray | None:
    """float32 results from float64 operands holding float32 values (None
    if one is inf or nan); ``s_buf``, ``part``: float64 arrays of the
    result's shape to compute in."""
    k = x.shape[-1]
    # Squared row and column norms (the squares are exact): by
    # Cauchy-Schwarz their roots' product bounds sum |products|.
    sx, sy = _sum_squares(x, -1), _sum_squares(y, -2)
    mx, my = _largest(sx), _largest(sy)
    if not math.isfinite(mx + my):
        return None
    if mx == 0.0 or my == 0.0:
        return np.zeros((*x.shape[:-1], y.shape[-1]), F32)  # all products zero: +0.0
    s = _gemm([(x, y)], part, s_buf)
    width = float(_f32_width(k, math.sqrt(mx) * math.sqrt(my)))
    out = np.empty(s.shape, F32)
    unsettled = _unsettled(s, width, out)
    if unsettled.size:
        _settle_f32(x, y, s, out, unsettled, (sx, sy))
    return out


class _Ends(threading.local):
    """Per-thread memory for one block of upper ends and their comparison."""

    def __init__(self) -> None:
        self.upper = np.empty(_CHECK_BLOCK, F32)
        self.differ = np.empty(_CHECK_BLOCK, bool)


_ENDS = _Ends()
_NONE = np.empty(0, np.intp)


def _unsettled(s: np.ndarray, width: float, out: np.ndarray) -> np.ndarray:
    """The flat indices of the elements of ``s`` whose ends ``s - width``
    and ``s + width`` round to different float32 values (bits); ``out``
    receives the rounded lower ends. A block at a time, so that each block
    of ``s`` is read from the cache the second time."""
    flat_s, flat_out = s.reshape(-1), out.reshape(-1)
    found = []
    for start in range(0, flat_s.size, _CHECK_BLOCK):
        part = flat_s[start:start + _CHECK_BLOCK]
        lower, upper = flat_out[start:start + part.size], _ENDS.upper[:part.size]
        np.subtract(part, width, out=lower, casting="unsafe")
        np.add(part, width, out=upper, casting="unsafe")
        differ = np.not_equal(lower.view(np.uint32), upper.view(np.uint32),
                              out=_ENDS.differ[:part.size])
        if differ.any():
            found.append(np.flatnonzero(differ) + start)
    return found[0] if len(found) == 1 else np.concatenate(found) if found else _NONE


def _sum_squares(v: np.ndarray, axis: int) -> np.ndarray:
    """The sums of squares of ``v``'s rows (axis -1) or columns (axis -2),
    read along whichever of the two axes is contiguous."""
    lines = v if axis == -1 else v.swapaxes(-1, -2)
    if lines.strides[-1] == lines.itemsize:
        return np.asarray(np.vecdot(lines, lines))
    across = lines.swapaxes(-1, -2)
    return np.asarray(np.einsum("...ji,...ji->...i", across, across))


def _f32_width(k: int, norms: float | np.ndarray) -> float | np.ndarray:
    """The half-width to put around a float64 GEMM result of depth k whose
    operands' computed norms multiply to ``norms``: gamma_(k+2) rather than
    gamma_(k-1) also covers rounding the ends, and each computed norm may
    fall short of the true one by 1 + gamma_(k+2)."""
    return _gamma(k + 2) * (1.0 + _gamma(k + 2)) ** 2 * norms


def _settle_f32(x: np.ndarray, y: np.ndarray, s: np.ndarray, out: np.ndarray,
                idx: np.ndarray, squares: tuple[np.ndarray, np.ndarray]) -> None:
    """Decide the flat elements ``idx`` of ``out`` that the common bound
    left open, by sharper and exact sums of their own products. When
    there are many (sums that cancel to zero, rows of very different
    norms), first cheaper tests: the bound of their own row and column
    norms, then no error at all where every partial sum is exact."""
    k = x.shape[-1]
    rows, cols = _row_col(idx, s.shape)
    flat = out.reshape(-1)
    if idx.size * k > x.size + y.size:  # gathering would cost more than a pass over x and y
        norms = np.sqrt(squares[0][rows]) * np.sqrt(squares[1][cols])
        sv = s.reshape(-1)[idx]
        found, settled = _f32_interval(sv, _f32_width(k, norms))
        flat[idx] = found
        keep = ~settled
        idx, sv, norms = idx[keep], sv[keep], norms[keep]
        rows, cols = tuple(r[keep] for r in rows), tuple(c[keep] for c in cols)
        # Every product is a multiple of ux * uy; if their magnitudes add up
        # to at most 2**53 such units, every partial sum is exact: s is the sum.
        exact = norms * (1.0 + _gamma(k + 2)) ** 2 <= 2.0 ** 53 * (
            _lowest_bits(x, rows, -1) * _lowest_bits(y, cols, -2))
        flat[idx[exact]] = (sv[exact] + 0.0).astype(F32)  # an exact zero is +0.0
        keep = ~exact
        idx, rows, cols = idx[keep], tuple(r[keep] for r in rows), tuple(c[keep] for c in cols)
    for block, xr, yr in _gathered(x, y, rows, cols):
        flat[idx[block]] = _gathered_f32(xr, yr)


def _gathered_f32(xr: np.ndarray, yr: np.ndarray) -> np.ndarray:
    """Row r: the exact sum of ``xr[r] * yr[r]`` rounded once to float32.
    One ExtractVector pass over the exact products, with one sigma for all
    rows, decides nearly every row; the rest are summed exactly."""
    if _few_short_rows(xr):
        return _fsum_rows(xr, yr)
    found, settled = _extracted_once_f32(xr * yr)
    if not settled.all():
        open_ = ~settled
        xo, yo = xr[open_], yr[open_]
        found[open_] = _exact_f32(xo, yo, xo * yo)
    return found


def _extracted_once_f32(products: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row r: the float32 rounding of sum(products[r]) (exact float64
    products, overwritten) and whether it is decided. One ExtractVector
    pass with a sigma common to all rows, so that each step is an
    operation with a scalar: the parts it splits off sum exactly, and the
    remainders, each at most 2**-53 sigma, leave a sum whose error has a
    common bound. Rows of far smaller products than the largest get that
    coarser bound and may stay open."""
    k = products.shape[-1]
    spread = (k + 1).bit_length()  # 2**spread >= k + 2
    largest = max(_largest(products), -float(np.minimum.reduce(products, axis=None)))
    sigma = math.ldexp(1.0, math.frexp(largest)[1] + spread)
    high = products + sigma
    high -= sigma  # multiples of 2**-53 sigma summing exactly
    rest = np.subtract(products, high, out=products)
    hi, lo = _two_sum(np.add.reduce(high, axis=-1), np.add.reduce(rest, axis=-1))
    tail_error = _gamma(k) * k * math.ldexp(sigma, -53)
    width = (np.abs(lo) * (1.0 + 2.0 ** -50) + tail_error * (1.0 + 2.0 ** -50)
             + np.abs(hi) * 2.0 ** -52)
    return _f32_interval(hi, width)


def _f32_interval(center: np.ndarray, width: float | np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """float32 of ``center - width`` and whether ``center + width`` rounds
    to the same float32 (the same bits: -0.0 and +0.0 differ)."""
    lo = np.empty(center.shape, F32)
    hi = np.empty(center.shape, F32)
    np.subtract(center, width, out=lo, casting="unsafe")
    np.add(center, width, out=hi, casting="unsafe")
    return lo, np.asarray(lo.view(np.uint32) == hi.view(np.uint32))


def _lowest_bits(v: np.ndarray, at: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    """For the rows (axis -1) or columns (axis -2) of ``v`` named by ``at``:
    the value of the lowest set bit over the nonzero elements (each is a
    multiple of it); inf for one that is all zeros. Computed once per
    distinct row or column."""
    vt = v if axis == -1 else np.swapaxes(v, -1, -2)
    distinct, where = np.unique(np.ravel_multi_index(at, vt.shape[:-1]), return_inverse=True)
    frac, exp = np.frexp(vt[np.unravel_index(distinct, vt.shape[:-1])])
    mant = (frac * 2.0 ** 53).astype(np.int64)
    low = np.ldexp((mant & -mant).astype(F64), exp - 53)
    per_line = np.min(np.where(mant != 0, low, np.inf), axis=-1)
    return np.asarray(per_line[where.reshape(-1)])


def _exact_f32(xr: np.ndarray, yr: np.ndarray, products: np.ndarray) -> np.ndarray:
    """Row r: the exact sum of ``products[r] = xr[r] * yr[r]`` (exact
    float64 products; ``products`` is overwritten) rounded once to float32.
    Two ExtractVector passes (Rump, Ogita and Oishi) split off exactly
    summable parts and leave a remainder summed with a tiny error;
    ``math.fsum`` decides what that leaves open, and all of a few short
    rows."""
    k = xr.shape[-1]
    if _few_short_rows(xr):
        return _fsum_rows(xr, yr)
    rest = products
    parts = []
    spread = (k + 1).bit_length()  # 2**spread >= k + 2
    for _ in range(2):
        sigma = np.ldexp(1.0, np.frexp(_row_max(rest))[1] + spread)[:, None]
        high = (rest + sigma) - sigma  # multiples of ulp(sigma) / 2 summing exactly
        rest -= high
        parts.append(np.sum(high, axis=-1))
    tail = np.sum(rest, axis=-1)
    tail_error = _gamma(k) * (1.0 + _gamma(k)) * np.sum(np.abs(rest), axis=-1)
    hi, lo = _two_sum(parts[0], parts[1])
    hi, lo2 = _two_sum(hi, tail)
    lo += lo2  # the rounding of this addition joins the width
    width = (np.abs(lo) * (1.0 + 2.0 ** -50) + tail_error * (1.0 + 2.0 ** -50)
             + np.abs(hi) * 2.0 ** -52)
    out, settled = _f32_interval(hi, width)
    exact = (tail_error == 0.0) & (lo == 0.0)  # hi is the sum
    out[exact] = (hi[exact] + 0.0).astype(F32)
    for r in np.flatnonzero(~(settled | exact)):
        out[r] = _fsum_f32(xr[r].tolist(), yr[r].tolist())
    return out


def _few_short_rows(xr: np.ndarray) -> bool:
    """Whether ``math.fsum`` of each row costs less than array passes."""
    return len(xr) * (int(xr.shape[-1]) + 64) <= 2048


def _fsum_rows(xr: np.ndarray, yr: np.ndarray) -> np.ndarray:
    return np.array([_fsum_products_f32(p, xr[r], yr[r])
                     for r, p in enumerate((xr * yr).tolist())], F32)


def _fsum_f32(xs: list[float], ys: list[float]) -> float:
    """sum(xs * ys) of float32 values as a float64 whose rounding to
    float32 is the correctly rounded sum."""
    return _fsum_products_f32([a * b for a, b in zip(xs, ys)], xs, ys)


def _fsum_products_f32(products: list[float], xs: Sequence[float], ys: Sequence[float]
                       ) -> float:
    """The sum of ``products``, the exact products of float32 values ``xs``
    and ``ys``, as a float64 whose rounding to float32 is the correctly
    rounded sum. ``math.fsum`` rounds their sum to float64 once; rounding
    that to float32 is the same single rounding unless it lands exactly
    halfway between two float32 values (or past the largest), which
    integers settle."""
    s = math.fsum(products)
    if s == 0.0:
        return 0.0  # an exact zero is +0.0
    e = math.frexp(s)[1]
    halfway_bit = max(e - 25, -150)  # a float32 tie is an odd multiple of 2**halfway_bit
    t = math.ldexp(s, -halfway_bit)
    if e <= 128 and not (t == math.floor(t) and math.floor(t) % 2 == 1):
        return s
    return _exact_sum([float(v) for v in xs], [float(v) for v in ys], F32)


def _fsum_f64(xs: list[float], ys: list[float]) -> float:
    """sum(xs * ys) of float64 values, rounded once to float64: Dekker's
    TwoProduct turns each product into an exact pair of floats, which
    ``math.fsum`` sums with one rounding; where a product could overflow
    or lose bits to underflow in TwoProduct, integers instead."""
    terms: list[float] = []
    for a, b in zip(xs, ys):
        if a == 0.0 or b == 0.0:
            continue
        p = a * b
        if not (abs(a) <= _SPLIT_MAX and abs(b) <= _SPLIT_MAX
                and _PRODUCT_MIN <= abs(p) <= _PRODUCT_MAX):
            return _exact_sum(xs, ys, F64)
        t = a * 134217729.0  # Veltkamp's splitting, 2**27 + 1
        ah = t - (t - a)
        al = a - ah
        t = b * 134217729.0
        bh = t - (t - b)
        bl = b - bh
        terms += (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
    return math.fsum(terms)


# --------------------------------------------------------------- float64

def _cut(rest: np.ndarray, level: int, bits: int) -> np.ndarray:
    """Take the slice of level ``level`` out of ``rest`` (in place): for
    |rest| <= 2**-((level-1)*bits), a multiple of 2**-(level*bits) of at
    most that magnitude, leaving |rest| <= 2**-(level*bits). Adding and
    subtracting 2**(53 - level*bits) rounds to that grid (Rump, Ogita and
    Oishi's ExtractScalar); what is left is exact."""
    c = 2.0 ** (53 - level * bits)
    piece = rest + c
    piece -= c
    rest -= piece
    return piece


def _round_to_f64(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """float64 results (None if an operand is inf or nan)."""
    k = x.shape[-1]
    ax, ay = np.abs(x), np.abs(y)
    mx, my = np.maximum.reduce(ax, axis=-1), np.maximum.reduce(ay, axis=-2)
    if not math.isfinite(_largest(mx) + _largest(my)):
        return None
    # Scale rows of x and columns of y to maxima in [1/2, 1): exact, except
    # for elements that land below 2**-1022, whose error the bound covers.
    ex, ey = np.frexp(mx)[1], np.frexp(my)[1]
    xs = np.ldexp(x, -ex[..., :, None])
    ys = np.ldexp(y, -ey[..., None, :])
    slices = 2 if k > _ONE_SLICE_MAX_K else 1
    hi, lo, extra, rx, ry = _approximate(xs, ys, slices)
    # Rows or columns spanning more than the exponent range lost elements to
    # underflow in the scaling; a positive remainder size brings in the
    # width's underflow term, which covers them.
    rx[_lossy_scaling(ax, ex, -1)] += _UNDERFLOW
    ry[_lossy_scaling(ay, ey, -2)] += _UNDERFLOW
    del ax, ay
    width = _remainder_width(k, _largest(rx) + _largest(ry), slices)
    settled = _settled(hi, lo, width, extra)
    hi += 0.0  # an exact zero is +0.0
    res = np.ldexp(hi, ex[..., :, None] + ey[..., None, :])
    small = np.abs(res) < _TINY
    if small.any():  # a subnormal result would be rounded twice (then by ldexp)
        settled &= ~small | (hi == 0.0)
    if not settled.all():
        _settle_f64(x, y, (hi, lo, extra), (rx, ry), res, np.flatnonzero(~settled), slices)
    return np.asarray(res)


def _lossy_scaling(magnitudes: np.ndarray, exps: np.ndarray, axis: int) -> np.ndarray:
    """Which rows (axis -1) or columns (axis -2) of ``magnitudes``, scaled by
    2**-exps, may have had nonzero elements rounded below 2**-1022 (or to
    zero): those spanning more than about 1020 binades."""
    positive = magnitudes > 0.0
    smallest = float(np.minimum.reduce(magnitudes, axis=None, where=positive, initial=np.inf))
    if math.frexp(smallest)[1] >= int(np.maximum.reduce(exps, axis=None)) - 1020:
        return np.zeros(exps.shape, bool)  # no element is that far below any row's maximum
    limit = np.expand_dims(np.ldexp(1.0, exps - 1020), axis)
    return np.asarray(np.any(positive & (magnitudes < limit), axis=axis))


def _approximate(xs: np.ndarray, ys: np.ndarray, slices: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """For scaled operands (|xs|, |ys| < 1; xs is overwritten):
    ``hi + lo (+ extra)``, equal to their exact product apart from the
    rounding of one GEMM of small remainder terms; and per row of xs and
    column of ys the sizes rx, ry with |each remainder term| <= rx_i + ry_j."""
    k = xs.shape[-1]
    # A GEMM of slices is exact in any order when each of its terms has at
    # most 2*bits bits on a common grid and k (or 2k, for the cross terms
    # of two slices) of them fit in 53 bits.
    bits = (53 - (slices * k - 1).bit_length()) // 2
    xr = xs
    x1 = _cut(xr, 1, bits)
    yr1 = ys.copy()
    y1 = _cut(yr1, 1, bits)
    scratch = np.empty((*xs.shape[:-1], ys.shape[-1]), F64)
    if slices == 1:
        exact = _gemm([(x1, y1)], scratch)
        # x1 @ yr1 + xr @ ys: terms of at most |yr1| + |xr| (|x1|, |ys| <= 1).
        approx = _gemm([(x1, yr1), (xr, ys)], scratch)
        hi, lo = _two_sum(exact, approx, scratch=scratch)
        return hi, lo, None, _row_max(xr), _col_max(yr1)
    x2 = _cut(xr, 2, bits)
    yr2 = yr1.copy()
    y2 = _cut(yr2, 2, bits)
    t11 = _gemm([(x1, y1)], scratch)
    t12 = _gemm([(x1, y2), (x2, y1)], scratch)
    # x1 @ yr2 + x2 @ yr1 + xr2 @ ys: terms of at most |yr2| + |x2| |yr1| +
    # |xr2| <= (|xr2| + |x2|**2 / 2) + (|yr2| + |yr1|**2 / 2).
    approx = _gemm([(x1, yr2), (x2, yr1), (xr, ys)], scratch)
    rx = _row_max(xr) + 0.5 * _row_max(x2) ** 2
    ry = _col_max(yr2) + 0.5 * _col_max(yr1) ** 2
    # t11 + t12 + approx as hi + lo + extra, exactly; dead arrays take the
    # new values.
    s1, e1 = _two_sum(t11, t12, scratch=scratch)
    s2, e2 = _two_sum(s1, approx, out=t12, scratch=scratch)
    e12, extra = _two_sum(e1, e2, out=approx, scratch=scratch)
    hi, lo = _two_sum(s2, e12, out=s1, scratch=scratch)
    return hi, lo, extra, rx, ry


def _remainder_width(k: int, size: float | np.ndarray, slices: int) -> float | np.ndarray:
    """Bound on the error of ``hi + lo (+ extra)`` when the remainder
    terms are at most ``size``: gamma of the remainder GEMM's depth times
    k * size, plus what underflow can lose there and in the scaling; zero
    when the remainder is zero."""
    depth = (2 if slices == 1 else 3) * k
    width = _gamma(depth) * k * size + 16.0 * k * _UNDERFLOW
    if isinstance(size, np.ndarray):
        return np.where(size > 0.0, width, 0.0)
    return width if size > 0.0 else 0.0


def _settled(hi: np.ndarray, lo: np.ndarray, width: float | np.ndarray,
             extra: np.ndarray | None) -> np.ndarray:
    """Where every value within ``width + |extra|`` of ``hi + lo`` rounds
    to ``hi``. The ends are computed as ``hi + (lo -+ w)``, with ``w``
    widened so that the rounded ``lo -+ w`` still enclose the exact ends;
    rounding is monotone, so ends that round to ``hi`` pin the value's
    rounding to ``hi``."""
    w = np.abs(lo)
    w *= 2.0 ** -51
    w += np.multiply(width, 1.0 + 2.0 ** -50)
    if extra is not None:
        w += np.abs(extra) * (1.0 + 2.0 ** -50)
    end = lo - w
    end += hi
    ok = end == hi
    np.add(lo, w, out=end)
    end += hi
    ok &= end == hi
    return np.asarray(ok)


def _settle_f64(x: np.ndarray, y: np.ndarray,
                approx: tuple[np.ndarray, np.ndarray, np.ndarray | None],
                sizes: tuple[np.ndarray, np.ndarray], res: np.ndarray, idx: np.ndarray,
                slices: int) -> None:
    """Decide the flat elements ``idx`` of ``res`` that the common bound
    left open: by a bound from their own row's and column's remainders
    (none where the slices hold them exactly); then exactly. ``approx``
    is the scaled ``hi``, ``lo`` and ``extra``."""
    rows, cols = _row_col(idx, res.shape)
    hi, lo, extra = (None if a is None else a.reshape(-1)[idx] for a in approx)
    assert hi is not None and lo is not None
    width = _remainder_width(x.shape[-1], sizes[0][rows] + sizes[1][cols], slices)
    flat = res.reshape(-1)
    settled = _settled(hi, lo, width, extra) & ((np.abs(flat[idx]) >= _TINY) | (hi == 0.0))
    if settled.all():
        return
    keep = ~settled
    idx, rows, cols = idx[keep], tuple(r[keep] for r in rows), tuple(c[keep] for c in cols)
    for block, xr, yr in _gathered(x, y, rows, cols):
        flat[idx[block]] = _exact_f64(xr, yr)


def _exact_f64(xr: np.ndarray, yr: np.ndarray) -> np.ndarray:
    """Row r: sum(xr[r] * yr[r]) rounded once to float64. Where no product
    can overflow or lose bits to underflow, Dekker's TwoProduct makes each
    an exact pair of floats and ``math.fsum`` rounds their sum correctly;
    other rows are summed in integers."""
    out = np.empty(xr.shape[0], F64)
    p = np.abs(xr * yr)
    in_range = (p >= _PRODUCT_MIN) & (p <= _PRODUCT_MAX) | (xr == 0.0) | (yr == 0.0)
    safe = in_range.all(axis=-1) & (np.maximum(_row_max(xr), _row_max(yr)) <= _SPLIT_MAX)
    safe &= xr.shape[-1] <= 1 << 22
    if safe.any():
        p, e = _two_product(xr[safe], yr[safe])
        out[safe] = [math.fsum(row) for row in np.concatenate([p, e], axis=-1).tolist()]
    for r in np.flatnonzero(~safe):
        out[r] = _exact_sum(xr[r].tolist(), yr[r].tolist(), F64)
    return out


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct with Veltkamp's splitting: ``p + e == a * b``
    exactly, for magnitudes where nothing overflows or underflows."""
    def halves(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = v * 134217729.0  # 2**27 + 1
        h = t - (t - v)
        return h, v - h

    ah, al = halves(a)
    bh, bl = halves(b)
    p = a * b
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


# ---------------------------------------------------------- exact sums

# Significand bits, and the exponent of the smallest subnormal's bit.
_FORMATS = {F32: (24, -149), F64: (53, -1074)}


def _exact_sum(xs: Sequence[float], ys: Sequence[float], dtype: np.dtype) -> float:
    """sum(xs * ys) of finite floats, exactly in integers, rounded once to
    ``dtype`` (to nearest, ties to even, with subnormals and overflow)."""
    terms = []
    for a, b in zip(xs, ys):
        if a == 0.0 or b == 0.0:
            continue
        fa, ea = math.frexp(a)
        fb, eb = math.frexp(b)
        terms.append((int(fa * 2.0 ** 53) * int(fb * 2.0 ** 53), ea + eb - 106))
    if not terms:
        return 0.0
    base = min(e for _, e in terms)
    total = sum(m << (e - base) for m, e in terms)
    return _round_scaled(total, base, *_FORMATS[dtype])


def _round_scaled(total: int, exp: int, bits: int, min_exp: int) -> float:
    """``total * 2**exp`` rounded to nearest-even with ``bits`` significand
    bits and no bit below 2**min_exp, as a Python float (inf past float64;
    a float32 caller's conversion turns values past float32 into inf). An
    exact zero is +0.0; a negative value that rounds to zero is -0.0."""
    if total == 0:
        return 0.0
    negative, t = total < 0, abs(total)
    top = t.bit_length() - 1 + exp
    q = max(top - (bits - 1), min_exp)  # the exponent of the last kept bit
    shift = q - exp
    if shift <= 0:
        m = t << -shift
    else:
        m = t >> shift
        rem = t - (m << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and m & 1):
            m += 1
    try:
        v = math.ldexp(float(m), q)
    except OverflowError:
        v = math.inf
    return -v if negative else v


# ----------------------------------------------------- non-finite values

def _apply_ieee_specials(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """Overwrite the elements whose products include inf or nan with the
    IEEE sum of those products (finite products cannot change it): counts
    of each kind of special product, from GEMMs of 0/1 indicator matrices
    (exact: the counts are small integers)."""
    def ind(mask: np.ndarray) -> np.ndarray:
        return mask.astype(F64)

    xinf, yinf = ind(np.isinf(x)), ind(np.isinf(y))
    xzero, yzero = ind(x == 0.0), ind(y == 0.0)
    xpos, xneg, ypos, yneg = ind(x > 0.0), ind(x < 0.0), ind(y > 0.0), ind(y < 0.0)
    xpinf, xninf = ind(x == np.inf), ind(x == -np.inf)
    ypinf, yninf = ind(y == np.inf), ind(y == -np.inf)
    nan = _gemm([(xinf, yzero), (xzero, yinf)]) > 0.0  # inf * 0
    nan |= np.isnan(x).any(axis=-1)[..., :, None] | np.isnan(y).any(axis=-2)[..., None, :]
    pinf = _gemm([(xpinf, ypos), (xninf, yneg), (xpos, ypinf), (xneg, yninf)]) > 0.0
    ninf = _gemm([(xpinf, yneg), (xninf, ypos), (xpos, yninf), (xneg, ypinf)]) > 0.0
    nan |= pinf & ninf
    out[pinf] = np.inf
    out[ninf] = -np.inf
    out[nan] = np.nan
