"""Shared typing and impl helpers for elementwise primitives.

Elementwise operands broadcast only in the restricted lax sense: rank-0
operands stretch to any shape, the others must share a rank and agree per
axis up to size-1 stretching. All operands must have the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.denormals import arithmetic, flush, flushing, quietly
from spec._src.core.registry import fail
from spec._src.core.types import ArrayType
from spec._src.lax import elementwise_math as M

DTypePredicate = Callable[[T.DType], bool]

# Accepted-dtype classes, named as in constraint messages.
NUMBER: tuple[str, DTypePredicate] = ("number", lambda d: d != T.bool_)
INEXACT: tuple[str, DTypePredicate] = ("floating or complex", T.is_inexact)
FLOAT: tuple[str, DTypePredicate] = ("floating", T.is_float)
INTEGER: tuple[str, DTypePredicate] = ("integer", T.is_int)
INT_OR_BOOL: tuple[str, DTypePredicate] = (
    "integer or boolean", lambda d: T.is_int(d) or d == T.bool_)
ANY: tuple[str, DTypePredicate] = ("any", lambda d: True)
NOT_COMPLEX: tuple[str, DTypePredicate] = ("real (non-complex)", lambda d: not T.is_complex(d))
REAL_NUMBER: tuple[str, DTypePredicate] = (
    "real number", lambda d: d != T.bool_ and not T.is_complex(d))
COMPLEX: tuple[str, DTypePredicate] = ("complex", T.is_complex)


def check_dtypes(name: str, avals: Sequence[ArrayType], accepted: tuple[str, DTypePredicate],
                 constraint: str = "C1", first: int = 0) -> None:
    label, ok = accepted
    for i, a in enumerate(avals, start=first):
        if not ok(a.dtype):
            fail(name, constraint, f"operand {i} has dtype {a.dtype.name}; accepted dtypes "
                 f"are {label} types")


def check_same_dtypes(name: str, avals: Sequence[ArrayType], constraint: str = "C2") -> None:
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        got = ", ".join(a.dtype.name for a in avals)
        fail(name, constraint, f"operands must have the same dtype, got {got} "
             "(the jnp function of the same name promotes operand dtypes)")


def out_shape(name: str, avals: Sequence[ArrayType], constraint: str = "C3") -> T.Shape:
    try:
        return T.broadcast_shapes(name, [a.shape for a in avals])
    except TypeError as err:
        fail(name, constraint, str(err))


def all_weak(avals: Sequence[ArrayType]) -> bool:
    return all(a.weak_type for a in avals)


def nary_type(name: str, avals: Sequence[ArrayType], accepted: tuple[str, DTypePredicate],
              result_dtype: T.DType | None = None) -> list[ArrayType]:
    """The standard n-ary typing rule: C1 dtype class, C2 same dtypes, C3 shapes."""
    check_dtypes(name, avals, accepted)
    check_same_dtypes(name, avals)
    shape = out_shape(name, avals)
    dtype = avals[0].dtype if result_dtype is None else result_dtype
    # JAX keeps the weak flag of all-weak operands even for fixed result
    # dtypes: ``lax.eq(1.0, 2.0)`` is a weak bool.
    return [ArrayType(shape, dtype, all_weak(avals))]


def compute_dtype(dt: T.DType) -> T.DType:
    """Narrow floats are computed in float32 and rounded once, as XLA's CPU
    backend does; everything else is computed in its own dtype."""
    known = _COMPUTE_DTYPES.get(dt)
    if known is None:
        known = _COMPUTE_DTYPES[dt] = T.float32 if T.is_float(dt) and dt.itemsize < 4 else dt
    return known


_COMPUTE_DTYPES: dict[T.DType, T.DType] = {}


def flush_subnormals(a: np.ndarray) -> np.ndarray:
    """XLA's CPU backend runs float32/float64 arithmetic with denormals
    flushed to zero, both as operands and as results (FTZ + DAZ): a
    subnormal becomes a zero of the same sign. Other dtypes pass through.
    See spec/_src/core/denormals.py (and config ``spec_denormals``)."""
    return flush(a) if flushing() else a


def lifted(fn: Callable[..., Any], ftz: bool = True) -> Callable[..., list[np.ndarray]]:
    """Wrap a NumPy ufunc-like for elementwise use: narrow floats are upcast,
    results are cast back to the operand dtype, NumPy warnings silenced
    (IEEE semantics: inf/nan are results, not errors). With ``ftz``,
    float32/float64 operands and results have subnormals flushed to zero,
    as XLA's CPU backend does for arithmetic (not for sign-bit operations
    such as neg and abs)."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        dt = xs[0].dtype
        cd = compute_dtype(dt)
        if cd is not dt:
            xs = tuple(x.astype(cd) for x in xs)
        out = np.asarray(arithmetic(fn, *xs) if ftz else quietly(fn, *xs))
        return [out if out.dtype == dt else quietly(out.astype, dt)]

    return impl


def lifted_to(result: T.DType, fn: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    """Like ``lifted`` for predicates and other fixed-dtype results (operands
    are flushed, so a subnormal compares equal to zero as on XLA's CPU)."""

    def impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            out = np.asarray(arithmetic(fn, *xs))
        return [out.astype(result) if out.dtype != result else out]

    return impl


# ------------------------------------------------------------------ typing helpers

SIGNED_OR_INEXACT: tuple[str, DTypePredicate] = (
    "signed integer, floating or complex",
    lambda d: T.is_signed_int(d) or T.is_inexact(d))
ORDERED: tuple[str, DTypePredicate] = (
    "integer, floating or boolean",
    lambda d: T.is_int(d) or T.is_float(d) or d == T.bool_)
COMPLEX_PARTS: tuple[str, DTypePredicate] = (
    "float32 or float64", lambda d: d in (T.float32, T.float64))
CONJ_INPUT: tuple[str, DTypePredicate] = (
    "float32, float64 or complex", lambda d: d in (T.float32, T.float64) or T.is_complex(d))


def real_dtype(dt: T.DType) -> T.DType:
    """The component dtype of a complex dtype; other dtypes map to themselves."""
    return {T.complex64: T.float32, T.complex128: T.float64}.get(dt, dt)


def complex_dtype(dt: T.DType) -> T.DType:
    """The complex dtype whose components have dtype ``dt`` (f32 -> c64)."""
    return T.complex128 if dt in (T.float64, T.complex128) else T.complex64


# ------------------------------------------------------------------ integer kernels

def unsigned_view(dt: T.DType) -> T.DType:
    return np.dtype(f"u{dt.itemsize}")


def signed_view(dt: T.DType) -> T.DType:
    return np.dtype(f"i{dt.itemsize}")


def int_div_rem(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C-style integer division (quotient truncated toward zero, remainder with
    the dividend's sign), with XLA's CPU results where C is undefined:
    ``x / 0`` is all-ones bits (-1, or the max of an unsigned type) and
    ``x % 0`` is ``x``; ``MIN / -1`` wraps to ``MIN`` and ``MIN % -1`` is 0."""
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    safe = np.where(zero, np.ones_like(y), y)
    if T.is_signed_int(x.dtype):
        overflow = (x == np.iinfo(x.dtype).min) & (safe == -1)
        safe = np.where(overflow, np.ones_like(y), safe)
    rem = np.fmod(x, safe)  # C remainder: sign of the dividend
    quo = np.floor_divide(x - rem, safe)  # exact: x - rem is a multiple of safe
    all_ones = np.array(-1).astype(x.dtype) if T.is_signed_int(x.dtype) else \
        np.array(np.iinfo(x.dtype).max, x.dtype)
    quo = np.where(zero, all_ones, quo)
    rem = np.where(zero, x, rem)
    return quo.astype(x.dtype), rem.astype(x.dtype)


def shift(x: np.ndarray, s: np.ndarray, kind: str) -> np.ndarray:
    """XLA shifts: the amount is read as unsigned; amounts >= the bit width give
    0 (left, logical) or the sign fill (arithmetic)."""
    bits = x.dtype.itemsize * 8
    amount = s.view(unsigned_view(s.dtype)) if s.dtype.kind == "i" else s
    too_big = amount >= bits
    amt = np.where(too_big, 0, amount).astype(np.uint8)
    if kind == "left":
        out = np.left_shift(x.view(unsigned_view(x.dtype)), amt).view(x.dtype)
        return np.where(too_big, np.zeros_like(out), out)
    if kind == "logical":
        out = np.right_shift(x.view(unsigned_view(x.dtype)), amt).view(x.dtype)
        return np.where(too_big, np.zeros_like(out), out)
    sx = x.view(signed_view(x.dtype))
    out = np.right_shift(sx, amt)
    fill = np.where(sx < 0, np.array(-1, sx.dtype), np.array(0, sx.dtype))
    return np.where(too_big, fill, out).astype(sx.dtype).view(x.dtype)


def population_count(x: np.ndarray) -> np.ndarray:
    u = x.view(unsigned_view(x.dtype))
    return np.bitwise_count(u).astype(x.dtype)


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Smear the highest set bit rightwards; the zeros above it are the bits
    that stay clear."""
    u = x.view(unsigned_view(x.dtype)).copy()
    step = 1
    while step < u.dtype.itemsize * 8:  # log2(bits) whole-array steps
        u |= u >> np.array(step, u.dtype)
        step *= 2
    return (u.dtype.itemsize * 8 - np.bitwise_count(u)).astype(x.dtype)


# ------------------------------------------------------------------ float kernels
# lgamma for float32 and the narrow floats: evaluated in float64 and rounded
# once (JAX's own float32 lgamma is accurate to a few ULPs, so a correctly
# rounded value is the closest model); accurate to ~1e-15 relative except
# within ~1e-15 absolute of its zeros at 1 and 2.


def _stirling_lgamma(z: np.ndarray) -> np.ndarray:
    """lgamma(z) for z >= 20 by Stirling's series (next term < 1e-17)."""
    r = 1.0 / z
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
    return np.asarray((z - 0.5) * M.log(z) - z + 0.5 * M.log(np.float64(2 * np.pi)) + series)


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """lgamma for x > 0: shift to x + n >= 20 with Gamma(x+n) = Gamma(x) x...(x+n-1)."""
    shift_n = np.where(x < 20.0, np.ceil(20.0 - x), 0.0)
    prod = np.ones_like(x)
    for k in range(21):
        prod = np.where(k < shift_n, prod * (x + k), prod)
    return np.asarray(_stirling_lgamma(x + shift_n) - M.log(prod))


def _sin_pi(x: np.ndarray) -> np.ndarray:
    """sin(pi x), reduced to |x| <= 1/2 first so large x keeps its accuracy."""
    n = np.round(x)
    s = M.sin(np.pi * (x - n))
    return np.where(np.fmod(n, 2.0) == 0, s, -s)


def lgamma64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        pos = x > 0
        xp = np.where(pos, x, 1.0 - x)  # reflection for x <= 0
        xp = np.where(np.isfinite(xp), xp, 1.0)
        lg = _lgamma_positive(xp)
        reflected = M.log(np.pi / np.abs(_sin_pi(x))) - lg
        out = np.where(pos, lg, reflected)
        pole = (x <= 0) & (x == np.floor(x))
        out = np.where(pole | np.isinf(x), np.inf, out)
    return np.where(np.isnan(x), x, out)


def lifted64(fn: Callable[[np.ndarray], np.ndarray],
             fn_f64: Callable[[np.ndarray], np.ndarray] | None = None
             ) -> Callable[..., list[np.ndarray]]:
    """Evaluate a float64 kernel and round once to the operand dtype.

    Narrow floats go through float32 on the way (XLA computes them in
    float32), so a result that is subnormal in float32 flushes to zero even
    where the narrow dtype could hold it (a bfloat16 erf_inv of the smallest
    normal is 0, not 1.04e-38). ``fn_f64``, when given, replaces ``fn`` for
    float64 operands (XLA's own float64 algorithm)."""

    def impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
        kernel = fn_f64 if fn_f64 is not None and x.dtype == np.float64 else fn
        with np.errstate(all="ignore"):
            out = np.asarray(kernel(flush_subnormals(x).astype(np.float64)))
            if x.dtype != np.float64:
                out = flush_subnormals(out.astype(np.float32))
            return [flush_subnormals(out.astype(x.dtype))]

    return impl


# ------------------------------------------------------------------ fused multiply-add
# XLA's CPU backend lets LLVM contract a multiply feeding an add into one
# fused multiply-add (a single rounding). Its complex division and complex
# sign, and the polynomial evaluations of its special functions, therefore
# round as fma(a, b, c), not as (a * b) + c; reproducing their bits needs an
# fma. NumPy has none, so it is built from exact pieces.

_SPLIT64 = 134217729.0  # 2^27 + 1, Veltkamp's constant for float64


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 fma: the float64 product of two float32s is
    exact; the float64 sum is made round-to-odd (its last bit set when the
    sum was inexact), which makes the final rounding to float32 correct."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = np.asarray(c, np.float64)
    s = p + c64
    back = s - p
    err = (p - (s - back)) + (c64 - back)  # exact error of s (TwoSum)
    bits = s.view(np.uint64) if s.ndim else np.asarray(s).reshape(1).view(np.uint64)
    even = (bits & np.uint64(1)) == 0
    fix = np.isfinite(s) & (err != 0) & even.reshape(np.shape(s))
    nudged = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
    return np.asarray(np.where(fix, nudged, s)).astype(np.float32)


def _split64(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLIT64 * x
    hi = t - (t - x)
    return hi, x - hi


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float64 fma from an exact product (Dekker) and an exact sum (Knuth);
    the two error terms are added with one extra rounding, so a result can
    differ from a true fma in rare halfway cases. Where the splitting
    overflows, the unfused a * b + c is used. Operands whose product and
    addend are both tiny are scaled up by 2^600 first (exactly), so that no
    intermediate underflows (or is flushed) where a true fma's would not."""
    tiny = (np.abs(a * b) < 2.0 ** -800) & (np.abs(c) < 2.0 ** -800)
    if tiny.any():
        scale = np.where(tiny, 2.0 ** 600, 1.0)
        return np.asarray(_fma64_core(a * scale, b, c * scale) / scale)
    return _fma64_core(a, b, c)


def _fma64_core(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    p = a * b
    ah, al = _split64(a)
    bh, bl = _split64(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    back = s - p
    t = (p - (s - back)) + (c - back)
    tail = t + e
    # A zero tail is not added: -0 + 0 would turn a -0 sum into +0.
    fused = np.where(tail == 0, s, s + tail)
    return np.asarray(np.where(np.isfinite(fused) & np.isfinite(e), fused, p + c))


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c with one rounding, in the dtype of ``a`` (float32/float64)."""
    a = np.asarray(a)
    dt = a.dtype
    b = np.asarray(b, dt)
    c = np.asarray(c, dt)
    return _fma32(a, b, c) if dt == np.float32 else _fma64(a, b, c)


def horner_fma(x: np.ndarray, coeffs: Sequence[float]) -> np.ndarray:
    """sum(coeffs[i] * x^(n-i)), highest power first, each step a fused
    multiply-add in x's dtype (how XLA evaluates the polynomial of a special
    function once LLVM contracts it)."""
    acc = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = fma(acc, x, np.asarray(c, x.dtype))
    return acc


# ------------------------------------------------------------------ part kernels
# float32 transcendental kernels are evaluated in float64 and rounded once:
# within half an ULP, where XLA's own float32 kernels are within one or two;
# float64 uses the same machine-independent kernels.

def part_fn(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def kernel(*xs: np.ndarray) -> np.ndarray:
        dt = xs[0].dtype
        if dt == np.float32:
            return np.asarray(fn(*[x.astype(np.float64) for x in xs])).astype(np.float32)
        return np.asarray(fn(*xs))
    return kernel


_log = part_fn(M.log)
_log1p = part_fn(M.log1p)
_atan2 = part_fn(M.arctan2)
_sin = part_fn(M.sin)
_cos = part_fn(M.cos)
_expm1 = part_fn(M.expm1)


def _compose(re: np.ndarray, im: np.ndarray, dt: T.DType) -> np.ndarray:
    """A complex array from parts (assigning parts keeps inf/nan apart)."""
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dt)
    out.real = re
    out.imag = im
    return out


# ------------------------------------------------------------------ complex kernels
# XLA's own formulas, reproduced step by step in the component dtype so that
# special values (zeros, infinities, nan parts) come out as XLA's do.

def complex_abs_fused(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """|z| as XLA's complex sign computes it: max * sqrt(fma(q, q, 1)) with
    q = min / max; where that is nan ((0, 0), (inf, inf), a nan part) the
    larger magnitude if it is a number, else the smaller (nan)."""
    a, b = np.abs(re), np.abs(im)
    big, small = np.maximum(a, b), np.minimum(a, b)  # both propagate nan
    q = small / big
    r = big * np.sqrt(fma(q, q, np.ones((), re.dtype)))
    fallback = np.where(np.isnan(big), small, big)
    return np.asarray(np.where(np.isnan(r), fallback, r))


def complex_sign(z: np.ndarray) -> np.ndarray:
    """z / |z| part by part; a zero (of either sign) is returned unchanged;
    an infinite part divided by an infinite |z| gives nan."""
    r = complex_abs_fused(z.real, z.imag)
    out = _compose(z.real / r, z.imag / r, z.dtype)
    return np.asarray(np.where(r == 0, z, out))


def complex_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA's complex division: Smith's algorithm (scale by the ratio of the
    divisor's smaller to larger part), with fused multiply-adds, and three
    corrections where that yields (nan, nan): a zero divisor gives
    copysign(inf, y.re) times x's parts; an infinite dividend over a finite
    divisor and a finite dividend over an infinite divisor give the limits
    (inf or zero with the right signs)."""
    x, y = np.broadcast_arrays(x, y)
    ar, ai, br, bi = x.real, x.imag, y.real, y.imag
    ft = ar.dtype
    zero, one, inf = np.zeros((), ft), np.ones((), ft), np.asarray(np.inf, ft)
    # Intermediates are flushed as XLA's CPU flushes them (a no-op when the
    # kernel already runs in the hardware flush-to-zero mode).
    fl = flush_subnormals
    r1 = fl(br / bi)  # used where |br| < |bi|
    d1 = fl(fma(r1, br, bi))
    r2 = fl(bi / br)
    d2 = fl(fma(r2, bi, br))
    abr, abi = np.abs(br), np.abs(bi)
    first = abr < abi
    cr = np.where(first, fl(fma(r1, ar, ai)) / d1, fl(fma(r2, ai, ar)) / d2)
    ci = np.where(first, fl(fma(r1, ai, -ar)) / d1, fl(fma(-r2, ar, ai)) / d2)
    # Corner cases, consulted only where both parts came out nan.
    zero_den = (abr == 0) & (abi == 0) & ~(np.isnan(ar) & np.isnan(ai))
    signed_inf = np.copysign(inf, br)
    aar, aai = np.abs(ar), np.abs(ai)
    x_inf = (aar == inf) | (aai == inf)
    y_fin = np.isfinite(br) & np.isfinite(bi)
    x_fin = np.isfinite(ar) & np.isfinite(ai)
    y_inf = (abr == inf) | (abi == inf)
    sar = np.copysign(np.where(aar == inf, one, zero), ar)
    sai = np.copysign(np.where(aai == inf, one, zero), ai)
    sbr = np.copysign(np.where(abr == inf, one, zero), br)
    sbi = np.copysign(np.where(abi == inf, one, zero), bi)
    inf_re, inf_im = inf * (sar * br + sai * bi), inf * (sai * br - sar * bi)
    zero_re, zero_im = zero * (ar * sbr + ai * sbi), zero * (ai * sbr - ar * sbi)
    both_nan = np.isnan(cr) & np.isnan(ci)
    pick_zero_den = both_nan & zero_den
    pick_inf = both_nan & ~zero_den & x_inf & y_fin
    pick_zero = both_nan & ~zero_den & ~(x_inf & y_fin) & y_inf & x_fin
    re = np.where(pick_zero_den, signed_inf * ar,
                  np.where(pick_inf, inf_re, np.where(pick_zero, zero_re, cr)))
    im = np.where(pick_zero_den, signed_inf * ai,
                  np.where(pick_inf, inf_im, np.where(pick_zero, zero_im, ci)))
    return _compose(re, im, x.dtype)


def _square_parts(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v * v as an unevaluated sum hi + lo, exactly (Veltkamp split)."""
    split = np.asarray(4097.0 if v.dtype == np.float32 else _SPLIT64, v.dtype)
    hi = v * v
    t = split * v
    vh = t - (t - v)
    vl = v - vh
    lo = ((-hi + vh * vh) + vh * vl + vh * vl) + vl * vl
    return hi, lo


def complex_log(z: np.ndarray) -> np.ndarray:
    """log|z| + i atan2(im, re), with log|z| = log1p(re^2 + im^2 - 1) / 2 while
    that argument is below 1/2 in magnitude (the sum carried in double-length
    pieces, so |z| near 1 keeps its accuracy), else
    log(max) + log1p((min/max)^2) / 2."""
    re, im = z.real, z.imag
    ft = re.dtype
    hx, lx = _square_parts(re)
    hy, ly = _square_parts(im)
    big = np.where(hy > hx, hy, hx)
    small = np.where(hy > hx, hx, hy)
    # -1 + big + small + ly + lx by a chain of fast two-sums (each operand
    # no larger than the running sum), keeping every rounding error.
    s1 = np.asarray(-1.0, ft) + big
    e1 = big - (s1 - np.asarray(-1.0, ft))
    s2 = s1 + small
    e2 = small - (s2 - s1)
    s3 = s2 + ly
    e3 = ly - (s3 - s2)
    s4 = s3 + lx
    e4 = lx - (s4 - s3)
    s = s4 + (((e1 + e2) + e3) + e4)
    half = np.asarray(0.5, ft)
    ax, ay = np.abs(re), np.abs(im)
    mx, mn = np.maximum(ax, ay), np.minimum(ax, ay)
    ratio = np.where(mn == mx, np.ones((), ft), mn / mx)
    near_one = half * _log1p(s)
    general = _log(mx) + half * _log1p(ratio * ratio)
    return _compose(np.where(np.abs(s) < half, near_one, general), _atan2(im, re), z.dtype)


def _hypot_sqrt(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The hypot inside XLA's complex sqrt: sqrt(2) * max for equal parts,
    max + max * r / 2 where 1 + r rounds to 1 (r = (min/max)^2 > 0), else
    max * sqrt(1 + r)."""
    ft = x.dtype
    a, b = np.abs(x), np.abs(y)
    mx, mn = np.maximum(a, b), np.minimum(a, b)
    q = mn / mx
    r = q * q
    one = np.ones((), ft)
    sqa = np.sqrt(one + r)
    tiny_r = mx + (mx * r) * np.asarray(0.5, ft)
    return np.asarray(np.where(mx == mn, np.asarray(np.sqrt(2.0), ft) * mx,
                               np.where((sqa == one) & (r > 0), tiny_r, mx * sqa)))


def complex_sqrt(z: np.ndarray) -> np.ndarray:
    """XLA's complex sqrt: u = sqrt((|z| + |re|) / 2) and v = |im| / (2u),
    with rescaled forms where u under- or overflows; the result is (u, +-v)
    for re >= 0 and (v, +-u) for re < 0, the sign taken from im < 0 (so a
    -0 imaginary part gives the upper branch). Divisions by constants are
    multiplications by their rounded reciprocals, as XLA rewrites them."""
    x, y = z.real, z.imag
    ft = x.dtype
    one, two = np.ones((), ft), np.asarray(2.0, ft)
    inv_sqrt2 = one / np.asarray(np.sqrt(2.0), ft)
    ax, ay = np.abs(x), np.abs(y)
    eq = ax == ay
    gt, lt = ax > ay, ax < ay
    sq_ax, sq_ay = np.sqrt(ax), np.sqrt(ay)
    half_sum = flush_subnormals(_hypot_sqrt(ax, ay) / two) + flush_subnormals(ax / two)
    u_general = np.sqrt(half_sum)
    rescale = (u_general == 0) | (u_general == np.inf)
    r = np.where(eq, one, np.where(lt, ax / ay, ay / ax))
    h = _hypot_sqrt(one, r)
    sq_1h = np.sqrt(one + h)
    sq_rh = np.sqrt(r + h)
    # Equal parts: u = sqrt|x| sqrt(1 + sqrt 2) / sqrt 2 and
    # v = sqrt|y| / (2 sqrt((1 + sqrt 2) / 2)), constants rounded to the dtype.
    c_eq_u = np.asarray(np.sqrt(1.0 + np.sqrt(2.0)), ft)
    c_eq_v = one / np.asarray(2.0 * np.sqrt((1.0 + np.sqrt(2.0)) / 2.0), ft)
    u = np.where(eq, sq_ax * c_eq_u * inv_sqrt2,
                 np.where(rescale,
                          np.where(gt, sq_ax * (sq_1h * inv_sqrt2), sq_ay * (sq_rh * inv_sqrt2)),
                          u_general))
    ratio = np.where(eq, one, np.where(lt, sq_ax / sq_ay, sq_ay / sq_ax))
    v = np.where(eq, sq_ay * c_eq_v,
                 np.where(rescale,
                          np.where(gt, sq_ay * ratio / (sq_1h * np.asarray(np.sqrt(2.0), ft)),
                                   sq_ay / (sq_rh * np.asarray(np.sqrt(2.0), ft))),
                          ay / (u_general * two)))
    neg = y < 0
    re = np.where(x >= 0, u, v)
    im = np.where(x < 0, np.where(neg, -u, u), np.where(neg, -v, v))
    return _compose(re, im, z.dtype)


def _sin_cos_parts(z: np.ndarray) -> tuple[np.ndarray, ...]:
    a, b = z.real, z.imag
    two = np.asarray(2.0, a.dtype)
    e_pos, e_neg = _expm1(b), _expm1(-b)
    sinh_b = (e_pos - e_neg) / two
    cosh_b = ((e_pos + e_neg) + two) / two
    return a, _sin(a), _cos(a), sinh_b, cosh_b


def complex_sin(z: np.ndarray) -> np.ndarray:
    """JAX's complex sin: (sin a cosh b, cos a sinh b) with sinh/cosh from
    expm1, every step rounded in the part dtype; a zero real part gives a
    +0 real part (no nan from 0 * inf)."""
    a, sa, ca, sh, ch = _sin_cos_parts(z)
    re = np.where(a == 0, np.zeros((), a.dtype), sa * ch)
    return _compose(re, ca * sh, z.dtype)


def complex_cos(z: np.ndarray) -> np.ndarray:
    """JAX's complex cos: (cos a cosh b, -sin a sinh b); a zero real part
    gives a +0 imaginary part."""
    a, sa, ca, sh, ch = _sin_cos_parts(z)
    im = np.where(a == 0, np.zeros((), a.dtype), (-sa) * sh)
    return _compose(ca * ch, im, z.dtype)


# ------------------------------------------------------------------ XLA's float64 special functions
# For float64 operands XLA does not compute erf, erfc and lgamma correctly
# rounded: erf calls the C library's erf; erfc and lgamma are the CHLO
# decompositions (Cephes rational approximations; Lanczos' approximation),
# evaluated with fused multiply-adds. These reproduce them; what remains
# are the 1-ULP differences of the exp/log kernels they call.

# The C library's (fdlibm-derived) erf: coefficient tables per interval.
_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01
_ERF_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01,
           -2.84817495755985104766e-02, -5.77027029648944159157e-03,
           -2.37630166566501626084e-05)
_ERF_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02,
           5.08130628187576562776e-03, 1.32494738004321644526e-04,
           -3.96022827877536812320e-06)
_ERF_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01,
           -3.72207876035701323847e-01, 3.18346619901161753674e-01,
           -1.10894694282396677476e-01, 3.54783043256182359371e-02,
           -2.16637559486879084300e-03)
_ERF_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01,
           7.18286544141962662868e-02, 1.26171219808761642112e-01,
           1.36370839120290507362e-02, 1.19844998467991074170e-02)
_ERF_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01,
           -1.05586262253232909814e+01, -6.23753324503260060396e+01,
           -1.62396669462573470355e+02, -1.84605092906711035994e+02,
           -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_ERF_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02,
           4.34565877475229228821e+02, 6.45387271733267880336e+02,
           4.29008140027567833386e+02, 1.08635005541779435134e+02,
           6.57024977031928170135e+00, -6.04244152148580987438e-02)
_ERF_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01,
           -1.77579549177547519889e+01, -1.60636384855821916062e+02,
           -6.37566443368389627722e+02, -1.02509513161107724954e+03,
           -4.83519191608651397019e+02)
_ERF_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
           1.53672958608443695994e+03, 3.19985821950859553908e+03,
           2.55305040643316442583e+03, 4.74528541206955367215e+02,
           -2.24409524465858183362e+01)


def _paired(v: np.ndarray, coeffs: Sequence[float]) -> np.ndarray:
    """sum(coeffs[i] v^i), ascending, grouped the library's way: pairs
    c[2k] + v c[2k+1] weighted by powers of v^2 (the grouping sets the
    rounding, so it is part of the definition)."""
    v2 = v * v
    groups = [coeffs[i] + v * coeffs[i + 1] if i + 1 < len(coeffs) else np.full_like(v, coeffs[i])
              for i in range(0, len(coeffs), 2)]
    powers = [np.ones_like(v), v2, v2 * v2, (v2 * v2) * v2, (v2 * v2) * (v2 * v2)]
    total = groups[0]
    for g, pw in zip(groups[1:], powers[1:]):
        total = total + pw * g
    return np.asarray(total)


def erf64_libm(x: np.ndarray) -> np.ndarray:
    """The C library's float64 erf, interval by interval."""
    ax = np.abs(x)
    z = x * x
    small = x + x * (_paired(z, _ERF_PP) / _paired(z, _ERF_QQ))
    # Tiny x: x (1 + efx); below 2^-1015 scaled by 16 first so that efx x is
    # not subnormal (and not flushed).
    tiny = np.where(ax < 2.0 ** -1015, 0.0625 * (16.0 * x + (16.0 * _EFX) * x), x + _EFX * x)
    small = np.where(ax < 2.0 ** -28, tiny, small)
    s = ax - 1.0
    pq = _paired(s, _ERF_PA) / _paired(s, _ERF_QA)
    middle = np.where(x >= 0, _ERX + pq, -_ERX - pq)
    w = 1.0 / (ax * ax)
    near = ax < 1.0 / 0.35
    rs = np.where(near, _paired(w, _ERF_RA) / _paired(w, _ERF_SA),
                  _paired(w, _ERF_RB) / _paired(w, _ERF_SB))
    # ax with its low 32 bits cleared, so exp(-hi^2) is evaluated exactly.
    hi = (ax.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
    r = M.exp(-hi * hi - 0.5625) * M.exp((hi - ax) * (hi + ax) + rs)
    large = np.where(x >= 0, 1.0 - r / ax, r / ax - 1.0)
    out = np.where(ax < 0.84375, small,
                   np.where(ax < 1.25, middle, np.where(ax < 6.0, large, np.copysign(1.0, x))))
    return np.asarray(np.where(np.isnan(x), x, out))


_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
          7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
          2.26290000613890934246E4, 4.92673942608635921086E4)
_MAXLOG64 = 7.09782712893383996843E2


def erfc64_xla(x: np.ndarray) -> np.ndarray:
    """XLA's float64 erfc: 1 - x T(x^2)/U(x^2) for |x| < 1; otherwise
    exp(-x^2) P(|x|)/Q(|x|) below 8 and exp(-x^2) R(|x|)/S(|x|) above, 0 once
    -x^2 < -maxlog, reflected as 2 - erfc(|x|) for negative x."""
    ax = np.abs(x)
    x2 = x * x
    inner = 1.0 - x * horner_fma(x2, _ERF_T) / horner_fma(x2, _ERF_U)
    e = M.exp(-x2)
    tail = np.where(ax < 8.0, e * horner_fma(ax, _ERFC_P) / horner_fma(ax, _ERFC_Q),
                    e * horner_fma(ax, _ERFC_R) / horner_fma(ax, _ERFC_S))
    tail = np.where(-x2 < -_MAXLOG64, 0.0, tail)
    tail = np.where(x < 0, 2.0 - tail, tail)
    return np.asarray(np.where(ax < 1.0, inner, tail))


_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)


def lgamma64_xla(x: np.ndarray) -> np.ndarray:
    """XLA's float64 lgamma: Lanczos' approximation (g = 7, 9 terms) for
    x >= 1/2, Euler's reflection below (with |sin(pi x)| taken on the
    fractional part folded into [0, 1/2]); lgamma(+-inf) = inf."""
    reflect = x < 0.5
    z = np.where(reflect, -x, x - 1.0)
    a = np.full_like(x, _LANCZOS_BASE)
    for k, c in enumerate(_LANCZOS, start=1):
        a = a + c / (z + float(k))
    half_g = _LANCZOS_G + 0.5
    t = half_g + z
    # log(t) = log(g + 1/2) + log1p(z / (g + 1/2)); the division by a
    # constant is a multiplication by its reciprocal in XLA.
    log_t = M.log(np.float64(half_g)) + M.log1p(z * (1.0 / half_g))
    factor = (z + 0.5) - t / log_t
    log_sqrt_2pi = (M.log(np.float64(2.0)) + M.log(np.float64(np.pi))) / 2.0
    direct = fma(factor, log_t, np.full_like(x, log_sqrt_2pi)) + M.log(a)
    ax = np.abs(x)
    frac = ax - np.floor(ax)
    frac = np.where(0.5 < frac, 1.0 - frac, frac)
    denom = M.log(M.sin(np.pi * frac))
    reflected = np.where(np.isfinite(denom), (M.log(np.float64(np.pi)) - denom) - direct, -denom)
    out = np.where(reflect, reflected, direct)
    return np.asarray(np.where(np.isinf(x), np.inf, out))


# ------------------------------------------------------------------ XLA's float32 special functions
# float32 (and, upcast to it, float16/bfloat16) erf, erfc, erf_inv and
# digamma as XLA evaluates them: rational or polynomial approximations in
# float32, polynomials by fused multiply-adds; the exp/log1p/sqrt/log/sin/cos
# they call are evaluated in float64 and rounded (within XLA's own kernels'
# error of one or two ULPs).

_exp = part_fn(M.exp)

_ERF32_ALPHA = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861,
                0.18520832239976145, 1.128379143519084)
_ERF32_BETA = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885,
               0.014070470171167667, 0.11098505178285362, 0.49746925110067538, 1.0)


def erf32_xla(x: np.ndarray) -> np.ndarray:
    """x P(x^2) / Q(x^2) (Eigen's rational), +-1 beyond |x| = 3.8325."""
    x2 = x * x
    p = x * horner_fma(x2, _ERF32_ALPHA)
    q = horner_fma(x2, _ERF32_BETA)
    one = np.ones((), np.float32)
    return np.asarray(np.where(np.abs(x) >= np.float32(3.832506856900711),
                               np.copysign(one, x), p / q))


_ERFC32_P = (+2.326819970068386E-2, -1.387039388740657E-1, +3.687424674597105E-1,
             -5.824733027278666E-1, +6.210004621745983E-1, -4.944515323274145E-1,
             +3.404879937665872E-1, -2.741127028184656E-1, +5.638259427386472E-1)
_ERFC32_R = (-1.047766399936249E+1, +1.297719955372516E+1, -7.495518717768503E+0,
             +2.921019019210786E+0, -1.015265279202700E+0, +4.218463358204948E-1,
             -2.820767439740514E-1, +5.641895067754075E-1)
_ERF32_T = (+7.853861353153693E-5, -8.010193625184903E-4, +5.188327685732524E-3,
            -2.685381193529856E-2, +1.128358514861418E-1, -3.761262582423300E-1,
            +1.128379165726710E+0)


def erfc32_xla(x: np.ndarray) -> np.ndarray:
    """1 - x T(x^2) for |x| < 1; else exp(-x^2)/|x| times P(1/x^2) below 2 and
    R(1/x^2) above, 0 once -x^2 < -88.72, reflected as 2 - erfc(|x|)."""
    f = np.float32
    ax = np.abs(x)
    x2 = x * x
    inner = f(1) - x * horner_fma(x2, _ERF32_T)
    inv_x2 = f(1) / x2
    scaled = _exp(-x2) * (f(1) / ax)
    poly = np.where(ax < f(2), horner_fma(inv_x2, _ERFC32_P), horner_fma(inv_x2, _ERFC32_R))
    tail = np.where(-x2 < f(-88.72283905206835), f(0), scaled * poly)
    tail = np.where(x < 0, f(2) - tail, tail)
    return np.asarray(np.where(ax < f(1), inner, tail))


_ERFINV32_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV32_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv32_xla(x: np.ndarray) -> np.ndarray:
    """Giles' single-precision erfinv: w = -log1p(-x^2), a degree-8
    polynomial in w - 2.5 (w < 5) or sqrt(w) - 3, times x; +-inf at +-1."""
    f = np.float32
    w = -_log1p(x * (-x))
    small = w < f(5)
    w = np.where(small, w - f(2.5), np.sqrt(w) - f(3))
    p = np.where(small, f(_ERFINV32_LT5[0]), f(_ERFINV32_GE5[0]))
    for a, b in zip(_ERFINV32_LT5[1:], _ERFINV32_GE5[1:]):
        p = fma(p, w, np.where(small, f(a), f(b)))
    return np.asarray(np.where(np.abs(x) == f(1), x * f(np.inf), p * x))


_ERFINV64_LT625 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_LT16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_GE16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def erf_inv64_xla(x: np.ndarray) -> np.ndarray:
    """Giles' double-precision erfinv: three polynomials in w = -log1p(-x^2)
    (w < 6.25, w < 16, beyond), of degrees 22, 18 and 16, times x."""
    w = -M.log1p(x * (-x))
    lt625, lt16 = w < 6.25, w < 16.0
    sq = np.sqrt(w)
    w = np.where(lt625, w - 3.125, sq - np.where(lt16, 3.25, 5.0))

    def coeff(i: int) -> np.ndarray:
        c = np.full_like(x, _ERFINV64_LT625[i])
        if i < 19:
            c = np.where(lt625, c, _ERFINV64_LT16[i])
        if i < 17:
            c = np.where(lt16, c, _ERFINV64_GE16[i])
        return np.asarray(c)

    p = coeff(0)
    for i in range(1, 17):
        p = fma(p, w, coeff(i))
    for i in range(17, 19):
        p = np.where(lt16, fma(p, w, coeff(i)), p)
    for i in range(19, 23):
        p = np.where(lt625, fma(p, w, coeff(i)), p)
    return np.asarray(np.where(np.abs(x) == 1.0, x * np.inf, p * x))


def digamma_xla(x: np.ndarray) -> np.ndarray:
    """XLA's digamma (float32 or float64): psi(z + 1) = log(t) + a'(z)/a(z)
    - g/t from Lanczos' approximation (t = z + g + 1/2), reflected as
    psi(1 - x) - pi cos(pi r)/sin(pi r) below 1/2 (r = x reduced to
    [-1/2, 1/2]); -inf at 0, nan at the negative integers and -inf."""
    dt = x.dtype
    c = dt.type
    log1p = _log1p if dt == np.float32 else M.log1p
    sin, cos = (_sin, _cos) if dt == np.float32 else (M.sin, M.cos)
    reflect = x < c(0.5)
    z = np.where(reflect, -x, x - c(1))
    a = np.full_like(x, _LANCZOS_BASE)
    a_prime = np.zeros_like(x)
    for k, coef in enumerate(_LANCZOS, start=1):
        zk = z + c(k)
        a_prime = a_prime - c(coef) / (zk * zk)
        a = a + c(coef) / zk
    half_g = c(_LANCZOS_G + 0.5)
    t = half_g + z
    log_t = c(M.log(np.float64(_LANCZOS_G + 0.5))) + log1p(z * (c(1) / half_g))
    psi = (log_t + a_prime / a) - c(_LANCZOS_G) / t
    reduced = x + np.abs(np.floor(x + c(0.5)))
    pi_r = c(np.pi) * reduced
    reflected = psi - (c(np.pi) * cos(pi_r)) / sin(pi_r)
    out = np.where(reflect, reflected, psi)
    # Negative integers (and -inf) are nan; at 0 the reflection's pi/sin(0)
    # already gives -inf, which is what XLA returns there.
    pole = (x < c(0)) & (x == np.floor(x))
    return np.asarray(np.where(pole, c(np.nan), out))


def lifted_xla(fn32: Callable[[np.ndarray], np.ndarray],
               fn64: Callable[[np.ndarray], np.ndarray]) -> Callable[..., list[np.ndarray]]:
    """Run XLA's float32 algorithm (narrow floats upcast to float32 and the
    result rounded back) or its float64 one, with XLA CPU's subnormal
    flushing throughout."""

    def impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            if x.dtype == np.float64:
                return [np.asarray(arithmetic(fn64, x))]
            out = np.asarray(arithmetic(fn32, x.astype(np.float32)))
            return [out.astype(x.dtype) if x.dtype != np.float32 else out]

    return impl


# ------------------------------------------------------------------ zeta, polygamma
# XLA decomposes polygamma(n, x) into (-1)^(n+1) n! zeta(n + 1, x) (digamma
# for n = 0) and the Hurwitz zeta into nine terms of its series plus an
# Euler-Maclaurin tail of twelve Bernoulli terms, all in the operand dtype
# (narrow floats in float32). These follow that decomposition step by step.

# (2k)! / B_2k for k = 12 down to 1: the Euler-Maclaurin tail's coefficients.
_ZETA_COEFFS = (-7.1661652561756670113e18, 1.8152105401943546773e17,
                -4.5979787224074726105e15, 1.1646782814350067249e14,
                -2.950130727918164224e12, 7.47242496e10, -1.8924375803183791606e9,
                47900160.0, -1209600.0, 30240.0, -720.0, 12.0)


def zeta_xla(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta(x, q) = sum_k (q + k)^-x, float32 or float64 operands."""
    dt = np.result_type(x, q)
    x, q = (np.asarray(v, dt) for v in np.broadcast_arrays(x, q))
    c = dt.type
    one = c(1)
    neg_x = -x

    def power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
        # XLA's float32 pow is within rounding of the float64 result.
        return M.power(base.astype(np.float64), exponent.astype(np.float64)).astype(dt)

    a = q
    initial = power(q, neg_x)
    for _ in range(9):  # nine series terms after the first, whole-array steps
        a = a + one
        initial = initial + power(a, neg_x)
    a = a + one
    neg_power = power(a, neg_x)
    s = initial + neg_power * a / (x - one)
    a_inv_sq = one / (a * a)
    horner = np.zeros_like(x)
    for i in range(11):
        factor = (x + c(22 - 2 * i)) * (x + c(21 - 2 * i))
        horner = factor * (a_inv_sq * (horner + c(1.0 / _ZETA_COEFFS[i])))
    s = s + neg_power * (c(0.5) + (x / a) * (c(1.0 / _ZETA_COEFFS[11]) + horner))
    # The series alone where its tail is negligible.
    tiny = c(np.finfo(dt).smallest_subnormal)
    out = np.where(np.abs(neg_power) < flush_subnormals(np.abs(initial) * tiny), initial, s)
    nan, inf = c(np.nan), c(np.inf)
    out = np.where(x < one, nan, out)
    q_le_zero = q <= 0
    x_is_int = x == np.floor(x)
    out = np.where(q_le_zero & ~x_is_int, nan, out)
    at_pole = q_le_zero & (q == np.floor(q))
    x_even_int = x_is_int & (np.fmod(x, c(2)) == 0)
    out = np.where(at_pole, np.where(x_even_int, inf, nan), out)
    return np.asarray(np.where(x == one, inf, out))


def polygamma_xla(n: np.ndarray, x: np.ndarray, lgamma_n1: np.ndarray,
                  digamma_x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) for float32/float64 operands, given lgamma(n + 1) and
    digamma(x) from the dtype's own kernels. nan unless n is a natural
    number."""
    dt = np.result_type(n, x)
    n, x = (np.asarray(v, dt) for v in np.broadcast_arrays(n, x))
    c = dt.type
    sign = c(2) * np.fmod(n, c(2)) - c(1)
    result = (sign * M.exp(lgamma_n1)) * zeta_xla(n + c(1), x)
    result = np.where(n == 0, digamma_x, result)
    natural = (n == np.floor(n)) & (n >= 0)
    return np.asarray(np.where(natural, result, c(np.nan)))


# ------------------------------------------------------------------ polynomial

def polynomial_horner(x: np.ndarray, coeffs: Sequence[np.ndarray], unroll: int | None,
                      shape: T.Shape) -> np.ndarray:
    """Horner's rule as JAX lowers ``polynomial``: up to ``unroll`` (8 by
    default) coefficients start from the highest one, more start from a zero
    accumulator (a scan), so 0 * inf can make a nan there. Each step is
    acc * x + c, fused into one rounding for float32/float64 (XLA's CPU
    backend contracts the multiply-add)."""
    dt = x.dtype
    threshold = 8 if unroll is None else unroll
    if len(coeffs) <= threshold:
        acc, rest = np.broadcast_to(coeffs[-1], shape), list(reversed(coeffs[:-1]))
    else:
        acc, rest = np.zeros(shape, dt), list(reversed(coeffs))
    fused = dt in (T.float32, T.float64)
    for c in rest:  # one whole-array step per coefficient
        if fused:
            acc = fma(*np.broadcast_arrays(acc, x, c))
        else:
            acc = np.asarray(acc * x + c).astype(dt)
    return np.broadcast_to(acc, shape).astype(dt)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed-integer keys ordered as XLA's total order on ``x``'s dtype:
    for floats -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN (the sign and
    magnitude bits read as a two's-complement integer, negatives mirrored)."""
    if x.dtype == T.bool_:
        return x.astype(np.int8)
    if not T.is_float(x.dtype):
        return x
    signed = np.dtype(f"int{8 * x.dtype.itemsize}")
    bits = x.view(signed)
    magnitude = signed.type(np.iinfo(signed).max)
    return np.where(bits < 0, bits ^ magnitude, bits)


# ------------------------------------------------------ float32 lgamma tables
# The coefficients of the float32 lgamma that JAX 0.12 lowers (the lgamma
# primitive's lowering emits that computation for every dtype but float64).
# (log(1 + f) - f + f^2/2) / f^3 in powers of f, |f| <= sqrt(2) - 1.
LGAMMA_LOG_TAIL = (
    0.3333333432674408, -0.24999989569187164, 0.19999992847442627, -0.16668006777763367,
    0.14287430047988892, -0.12451331317424774, 0.11021918058395386, -0.10625848919153214,
    0.10618706792593002, -0.06354549527168274,
)
# lgamma(x) / ((x - 1)(x - 2)) in powers of x - 1 on [0.5, 1.5].
LGAMMA_AROUND_1 = (
    0.5772156715393066, -0.24525131285190582, 0.15543334186077118, -0.1151529923081398,
    0.09227604418992996, -0.0771135687828064, 0.06608173251152039, -0.06148973107337952,
    0.058332279324531555, -0.03065679967403412, 0.016753701493144035, -0.08664266765117645,
    0.09459882974624634,
)
# lgamma(x) / ((x - 1)(x - 2)) in powers of x - 2.75 on (1.5, 4].
LGAMMA_AROUND_2_75 = (
    0.3620683252811432, -0.06572934240102768, 0.016030851751565933, -0.004419584292918444,
    0.0013036809395998716, -0.00040008797077462077, 0.00012487791536841542, -4.1899154894053936e-05,
    1.5541731045232154e-05, -3.445456741246744e-06, 2.1466885868903773e-07, -9.512536394140625e-07,
    5.093689878776786e-07,
)
# Stirling's remainder times x, in powers of 1/x^2, for x > 4.
LGAMMA_STIRLING = (
    0.0833333358168602, -0.0027777778450399637, 0.0007936508045531809, -0.0005952381179668009,
    0.0008417508215643466,
)
# -log(pi d / sin(pi d)) / d^2 in powers of d^2, |d| <= 1/2.
LGAMMA_SINC = (
    -1.644934058189392, -0.5411607623100281, -0.3391686975955963, -0.24974527955055237,
    -0.21417342126369476, -0.09055595844984055, -0.33258557319641113,
)
# Windows around the zeros -k + r of lgamma, k = 2..9, one column per
# (k, side of -k), column 2 (k - 2) + (r > 0); column 1 is never active.
# Rows: r's float32 head and tail, the largest |w| of the window, where
# w = (d - r) / (d + r) for d = x + k, then the coefficients of
# lgamma(x) / w in powers of w.
LGAMMA_ROOT_WINDOWS = np.array([
    [
        -0.4570247530937195, 1.0, -0.14358088374137878, 0.2523173391819, -0.03936183825135231,
        0.04470571503043175, -0.008218168281018734, 0.008455359376966953, -0.0013852944830432534,
        0.001392519916407764, -0.00019833340775221586, 0.00019849211093969643,
        -2.4800270693958737e-05, 2.480290459061507e-05, -2.755714831437217e-06,
        2.7557489374885336e-06,
    ],
    [
        1.4872918896458032e-08, 0.0, -4.608601056332873e-09, 1.4090687727730256e-08,
        -1.4891843314046582e-09, 1.1097014973593389e-10, -4.15751669202713e-11,
        6.298560284445642e-11, 2.9888522212750956e-11, 2.7165145133345447e-12,
        4.276554967357765e-13, -1.5769613262786586e-12, 1.1601349492618845e-14,
        -4.116331028206771e-13, 8.029728344369734e-15, 8.437904373695751e-14,
    ],
    [
        0.2549999952316284, -1.0, 0.3400000035762787, 0.3700000047683716, 0.41999998688697815,
        0.41999998688697815, 0.41999998688697815, 0.41999998688697815, 0.41999998688697815,
        0.41999998688697815, 0.41999998688697815, 0.41999998688697815, 0.41999998688697815,
        0.41999998688697815, 0.41999998688697815, 0.41999998688697815,
    ],
    [
        -1.3853365182876587, 0.0, -2.2346599102020264, -0.9660475254058838, -2.1090452671051025,
        -1.8530573844909668, -2.0276224613189697, -1.9707038402557373, -2.0051767826080322,
        -1.9947720766067505, -2.0007991790771484, -1.999199628829956, -2.0001060962677,
        -1.9998937845230103, -2.0000123977661133, -1.9999876022338867,
    ],
    [
        2.6737210750579834, 0.0, -0.10455801337957382, 1.472333550453186, -0.09949951618909836,
        0.1592523604631424, -0.027202462777495384, 0.02974076010286808, -0.005164650734513998,
        0.005240116734057665, -0.0007990428712219, 0.0008006766438484192, -0.00010617126827128232,
        0.00010619792737998068, -1.2454861462174449e-05, 1.2445724678400438e-05,
    ],
    [
        5.654962062835693, 0.0, -0.6329700946807861, 1.3282930850982666, -0.7565763592720032,
        -0.49503886699676514, -0.6934509873390198, -0.6364829540252686, -0.6718208193778992,
        -0.6614158749580383, -0.667466938495636, -0.6658671498298645, -0.6667742729187012,
        -0.6665619015693665, -0.6666803359985352, -0.6666555404663086,
    ],
    [
        13.648747444152832, 0.0, 0.18435128033161163, 2.663341760635376, -0.08025430887937546,
        0.18398988246917725, -0.02635575272142887, 0.030618861317634583, -0.005139326676726341,
        0.005263099446892738, -0.0007983599789440632, 0.0008009925368241966,
        -0.00010607429430820048, 0.00010612390178721398, -1.0810486855916679e-05,
        1.1192499187018257e-05,
    ],
    [
        29.05604362487793, 0.0, -0.047576695680618286, 3.1682286262512207, -0.47040924429893494,
        -0.2035086750984192, -0.42581096291542053, -0.36883100867271423, -0.405023992061615,
        -0.39462560415267944, -0.40070071816444397, -0.3991020619869232, -0.4000096917152405,
        -0.3997977674007416, -0.3999229967594147, -0.39989691972732544,
    ],
    [
        64.69268798828125, 0.0, 0.5535060167312622, 4.828585147857666, -0.06051565706729889,
        0.2127881944179535, -0.0257291067391634, 0.0318717323243618, -0.005158360581845045,
        0.005333737935870886, -0.0008044287096709013, 0.0008080150000751019,
        -0.0001079421053873375, 0.00010787778592202812, -3.5387503885431215e-05,
        2.9538590752054006e-05,
    ],
    [
        144.2744140625, 0.0, 0.5029898881912231, 6.225178241729736, -0.3385486900806427,
        -0.058972425758838654, -0.31383317708969116, -0.25587204098701477, -0.2933040261268616,
        -0.28273552656173706, -0.28885287046432495, -0.2872275114059448, -0.2881371080875397,
        -0.2879173457622528, -0.28795185685157776, -0.2879430055618286,
    ],
    [
        354.1711730957031, 0.0, 0.874119758605957, 9.207906723022461, -0.04211042821407318,
        0.19476988911628723, -0.021956387907266617, 0.027959952130913734, -0.004527992568910122,
        0.004708156455308199, -0.0007103931275196373, 0.0007148765143938363, -8.80396764841862e-05,
        8.913140482036397e-05, 0.00013230105105321854, -9.354341455036774e-05,
    ],
    [
        972.521484375, 0.0, 0.8290212154388428, 15.62746810913086, -0.2303585410118103,
        -0.011887536384165287, -0.2158958464860916, -0.16832894086837769, -0.2014114260673523,
        -0.1927308589220047, -0.19840183854103088, -0.19707120954990387, -0.1979275345802307,
        -0.19777315855026245, -0.19833749532699585, -0.19823305308818817,
    ],
    [
        2111.91357421875, 0.0, 2.9675049781799316, 24.958375930786133, -0.012698682025074959,
        0.4708675146102905, -0.03855019807815552, 0.05648542195558548, -0.008209493942558765,
        0.008694824762642384, -0.0012875236570835114, 0.0012958142906427383,
        -0.00018785701831802726, 0.00018500936857890338, -0.00034586386755108833,
        0.0002531808859203011,
    ],
    [
        2133.65771484375, 0.0, 3.8766984939575195, 18.714889526367188, -0.28982892632484436,
        0.24794331192970276, -0.34019771218299866, -0.23934946954250336, -0.30434995889663696,
        -0.286053866147995, -0.2954479455947876, -0.2926260828971863, -0.2939679026603699,
        -0.2935481369495392, -0.29285988211631775, -0.29295918345451355,
    ],
], dtype=np.float32)
