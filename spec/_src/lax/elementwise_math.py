"""Machine-independent real transcendental kernels.

NumPy picks a SIMD kernel for ``exp``, ``log``, ``sin``, ... at run time
(AVX-512, AVX2 or baseline) and glibc picks FMA or non-FMA variants of its
libm the same way; their last bits differ, so a result computed with them
is a function of the CPU as well as of the operands. The kernels here use
only operations IEEE 754 specifies exactly (``+ - * /``, ``sqrt``,
``rint``/``floor``, ``frexp``/``ldexp``, integer arithmetic), with the
classic fdlibm algorithms (argument reduction, then a fixed minimax
polynomial evaluated without fused multiply-adds), so every machine
computes the same bits.

They are about two orders of magnitude slower than NumPy's, so they run only
when config ``spec_transcendentals`` is ``"exact"``; the default,
``"numpy"``, calls NumPy's ufuncs (whose last bits depend on the CPU).

Each public kernel takes a float32 or float64 array and returns the same
dtype. float32 operands are evaluated with the float64 kernel and rounded
once, which puts them within an ULP of the correctly rounded result;
float64 results are within an ULP (``exp``, ``log``, ``log1p``, ``expm1``,
``sin``, ``cos``, ``atan``) or a few ULPs (the composed ones: ``tan``,
``atan2``, inverse trigonometric and hyperbolic functions, ``pow``).
Large trigonometric arguments are reduced exactly (Payne-Hanek, with the
bits of 2/pi computed once from Machin's formula).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from spec._src.core.config import config

F64 = npt.NDArray[np.float64]

_VALUES = config._values  # read directly: this is on every transcendental's path
Kernel = Callable[[F64], F64]

# ------------------------------------------------------------ dtype dispatch


def exact() -> bool:
    """Whether config ``spec_transcendentals`` asks for these kernels."""
    return bool(_VALUES["spec_transcendentals"] == "exact")


def _via64(kernel: Kernel, numpy_fn: Callable[[np.ndarray], np.ndarray]
           ) -> Callable[[npt.ArrayLike], np.ndarray]:
    """Run a float64 kernel on a real float array, rounding once to its
    dtype; complex operands, and every operand unless ``exact()``, go to
    NumPy's ``numpy_fn``."""
    def fn(operand: npt.ArrayLike) -> np.ndarray:
        x = np.asarray(operand)
        if np.iscomplexobj(x) or not exact():
            return np.asarray(numpy_fn(x))
        with np.errstate(all="ignore"):
            out = kernel(x.astype(np.float64))
            return out if x.dtype == np.float64 else out.astype(x.dtype)
    fn.__name__ = kernel.__name__.lstrip("_")
    fn.__doc__ = kernel.__doc__
    return fn


def _via64_binary(kernel: Callable[[F64, F64], F64],
                  numpy_fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
                  ) -> Callable[[npt.ArrayLike, npt.ArrayLike], np.ndarray]:
    def fn(first: npt.ArrayLike, second: npt.ArrayLike) -> np.ndarray:
        a, b = np.asarray(first), np.asarray(second)
        if np.iscomplexobj(a) or np.iscomplexobj(b) or not exact():
            return np.asarray(numpy_fn(a, b))
        with np.errstate(all="ignore"):
            out = kernel(a.astype(np.float64), b.astype(np.float64))
            return out if a.dtype == np.float64 else out.astype(a.dtype)
    fn.__name__ = kernel.__name__.lstrip("_")
    fn.__doc__ = kernel.__doc__
    return fn


# ------------------------------------------------------- exact-op arithmetic


def _pick(mask: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> F64:
    """np.where(mask, a, b) for float64 values as a bitwise blend: the masks
    here follow the data, and np.where's data-dependent branches cost
    several times the arithmetic around them."""
    bits_a = np.asarray(a, np.float64).view(np.uint64)
    bits_b = np.asarray(b, np.float64).view(np.uint64)
    ones = np.negative(np.asarray(mask).astype(np.int64)).view(np.uint64)
    return np.asarray(bits_b ^ ((bits_a ^ bits_b) & ones)).view(np.float64)

_SPLITTER = 134217729.0  # 2^27 + 1: Dekker's split into two 26-bit halves


def _two_prod(a: F64, b: F64) -> tuple[F64, F64]:
    """a*b as an unevaluated sum hi + lo, exactly (Dekker, no FMA)."""
    p = a * b
    ca, cb = _SPLITTER * a, _SPLITTER * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a: F64, b: F64) -> tuple[F64, F64]:
    """a + b exactly as hi + lo, any magnitudes (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fast_two_sum(a: F64, b: F64) -> tuple[F64, F64]:
    """a + b exactly as hi + lo, for |a| >= |b| (or a == 0)."""
    s = a + b
    return s, b - (s - a)


# ----------------------------------------------------------------------- exp

_LN2_HI = 6.93147180369123816490e-01  # 32 leading bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_EXP_P = (1.66666666666666019037e-01, -2.77777777770155933842e-03,
          6.61375632143793436117e-05, -1.65339022054652515390e-06,
          4.13813679705723846039e-08)
_EXP_OVER = 7.09782712893383973096e+02
_EXP_UNDER = -7.45133219101941108420e+02


def _exp_dd(x: F64, x_lo: F64 | float = 0.0) -> F64:
    """e^(x + x_lo) for a small correction x_lo: x = k ln2 + r, |r| <= ln2/2,
    e^r from a degree-5 minimax rational form in r^2, scaled by 2^k."""
    k = np.rint(x * _INV_LN2)
    k = _pick(np.isfinite(k), k, 0.0)
    hi = x - k * _LN2_HI
    lo = k * _LN2_LO - x_lo
    r = hi - lo
    t = r * r
    p1, p2, p3, p4, p5 = _EXP_P
    c = r - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    out = np.ldexp(y, k.astype(np.int32))
    out = _pick(x > _EXP_OVER, np.inf, out)
    out = _pick(x < _EXP_UNDER, 0.0, out)
    return np.asarray(_pick(np.isnan(x), x, out))


def _exp(x: F64) -> F64:
    """e^x (fdlibm's algorithm)."""
    return _exp_dd(x)


# ----------------------------------------------------------------------- log

_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
       2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
       1.479819860511658591e-01)
_SQRT_HALF = 0.70710678118654752440


def _log_parts(u: F64) -> tuple[F64, F64]:
    """u = 2^k (1 + f) with sqrt(1/2) <= 1 + f < sqrt(2): (k, f), exactly."""
    m, e = np.frexp(u)
    low = m < _SQRT_HALF
    m = _pick(low, m * 2.0, m)
    k = (e - low).astype(np.float64)
    return k, m - 1.0


def _log_core(k: F64, f: F64, c: F64 | float = 0.0) -> F64:
    """k ln2 + log(1 + f) + c, with log(1 + f) = 2 atanh(s), s = f / (2 + f),
    from a degree-7 minimax polynomial in s^2."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    r = t2 + t1
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + (k * _LN2_LO + c))) - f)


def _log_specials(x: F64, out: F64) -> F64:
    out = _pick(x == 0, -np.inf, out)
    out = _pick(x < 0, np.nan, out)
    out = _pick(x == np.inf, np.inf, out)
    return np.asarray(_pick(np.isnan(x), x, out))


def _log(x: F64) -> F64:
    """Natural logarithm (fdlibm's algorithm)."""
    safe = _pick((x > 0) & np.isfinite(x), x, 1.0)
    k, f = _log_parts(safe)
    return _log_specials(x, _log_core(k, f))


def _log1p(x: F64) -> F64:
    """log(1 + x): log of u = fl(1 + x) plus the rounding error of u over u."""
    u = 1.0 + x
    safe = _pick((u > 0) & np.isfinite(u), u, 1.0)
    k, f = _log_parts(safe)
    # u - x is exact from u = 2 up, u - 1 below it (Sterbenz).
    err = _pick(safe >= 2, 1.0 - (safe - x), x - (safe - 1.0)) / safe
    out = _log_core(k, f, err)
    out = _pick(x == -1, -np.inf, out)
    out = _pick(x < -1, np.nan, out)
    out = _pick(x == np.inf, np.inf, out)
    return np.asarray(_pick(np.isnan(x) | (x == 0), x, out))


_LOG2_E = 1.44269504088896338700
_LOG10_E = 4.34294481903251816668e-01


def _log2(x: F64) -> F64:
    """log(x) / ln 2 with the product split so integer powers of two are exact."""
    safe = _pick((x > 0) & np.isfinite(x), x, 1.0)
    k, f = _log_parts(safe)
    return _log_specials(x, k + _log_core(np.zeros_like(k), f) * _LOG2_E)


_LOG10_2_HI = 3.01029995663611771306e-01  # trailing zeros: k * hi is exact
_LOG10_2_LO = 3.69423907715893078616e-13


def _log10(x: F64) -> F64:
    safe = _pick((x > 0) & np.isfinite(x), x, 1.0)
    k, f = _log_parts(safe)
    mantissa = _log_core(np.zeros_like(k), f) * _LOG10_E
    return _log_specials(x, k * _LOG10_2_HI + (k * _LOG10_2_LO + mantissa))


# --------------------------------------------------------------------- expm1

_EXPM1_Q = (-3.33333333333331316428e-02, 1.58730158725481460165e-03,
            -7.93650757867487942473e-05, 4.00821782732936239552e-06,
            -2.01099218183624371326e-07)


def _expm1(x: F64) -> F64:
    """e^x - 1 (fdlibm's algorithm): x = k ln2 + r with the reduction error
    carried, e^r - 1 from a rational form, recombined per range of k."""
    xs = _pick(np.isfinite(x), x, 0.0)
    k = np.rint(xs * _INV_LN2)
    hi = xs - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    c = (hi - r) - lo
    hfx = 0.5 * r
    hxs = r * hfx
    q1, q2, q3, q4, q5 = _EXPM1_Q
    r1 = 1.0 + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))))
    t = 3.0 - r1 * hfx
    e = hxs * ((r1 - t) / (6.0 - r * t))
    small = r - (r * e - hxs)  # k == 0
    e = (r * (e - c) - c) - hxs
    ki = k.astype(np.int32)
    scale = np.ldexp(1.0, ki)
    k_m1 = 0.5 * (r - e) - 0.5
    k_1 = _pick(r < -0.25, -2.0 * (e - (r + 0.5)), 1.0 + 2.0 * (r - e))
    wide = np.ldexp(1.0 - (e - r), ki) - 1.0  # k <= -2 or k > 56
    mid = (_pick(k < 20, 1.0 - np.ldexp(1.0, -ki), 1.0) - (e - r)) * scale
    high = ((r - (e + np.ldexp(1.0, -ki))) + 1.0) * scale
    out = _pick(k == 0, small, _pick(k == -1, k_m1, _pick(k == 1, k_1, _pick(
        (k <= -2) | (k > 56), wide, _pick(k < 20, mid, high)))))
    out = _pick(x > _EXP_OVER, np.inf, out)
    out = _pick(x < -38.0, -1.0, out)
    return np.asarray(_pick(np.isnan(x) | (x == 0), x, out))  # keeps the sign of zero


# --------------------------------------------------------- trigonometric ones

_INV_PIO2 = 6.36619772367581382433e-01
# pi/2 in three 33-bit pieces, each with its tail (Cody-Waite): n * piece is
# exact for |n| < 2^20.
_PIO2 = ((1.57079632673412561417e+00, 6.07710050650619224932e-11),
         (6.07710050630396597660e-11, 2.02226624879595063154e-21),
         (2.02226624871116645580e-21, 8.47842766036889956997e-32))
_PIO2_HI = 1.57079632679489655800e+00
_PIO2_LO = 6.12323399573676603587e-17
_MEDIUM = 1647099.0  # about 2^20 pi/2: n * pi/2 piece is exact below it


def _rem_pio2_medium(x: F64) -> tuple[F64, F64, F64]:
    """x = n pi/2 + (y0 + y1) by Cody-Waite in three steps, |x| < _MEDIUM."""
    n = np.rint(x * _INV_PIO2)
    (p1, _), (p2, _), (p3, p3t) = _PIO2
    r = x - n * p1  # exact: n * p1 has at most 53 bits and cancels
    r, err = _two_sum(r, -(n * p2))
    r, err3 = _two_sum(r, -(n * p3))
    y0, y1 = _two_sum(r, (err + err3) - n * p3t)
    return n, y0, y1


_WINDOW_LIMBS = 6  # 192 bits of 2/pi around each exponent's binary point
_E2_MIN = -40
_E2_MAX = 1024 - 53


def _pi_fixed(bits: int) -> int:
    """floor(pi 2^bits) - O(1), from Machin's formula in integers."""
    guard = bits + 16

    def arctan_inv(n: int) -> int:
        total, term, k, n2 = 0, (1 << guard) // n, 0, n * n
        while term:
            total += term // (2 * k + 1) if k % 2 == 0 else -(term // (2 * k + 1))
            term //= n2
            k += 1
        return total
    return (16 * arctan_inv(5) - 4 * arctan_inv(239)) >> 16


@functools.cache
def _two_over_pi_windows() -> npt.NDArray[np.uint64]:
    """Row s - _E2_MIN: floor(2/pi 2^(s + 190)) mod 2^192 as six 32-bit limbs,
    least significant first."""
    scale = _E2_MAX + 190 + 64
    two_over_pi = (2 << (2 * scale)) // _pi_fixed(scale)  # 2/pi 2^scale
    rows = []
    mask = (1 << 32) - 1
    for s in range(_E2_MIN, _E2_MAX + 1):
        window = (two_over_pi >> (scale - (s + 190))) & ((1 << 192) - 1)
        rows.append([(window >> (32 * j)) & mask for j in range(_WINDOW_LIMBS)])
    return np.array(rows, dtype=np.uint64)


def _rem_pio2_large(ax: F64) -> tuple[F64, F64, F64]:
    """|x| = n pi/2 + (y0 + y1) for finite |x| >= _MEDIUM (Payne-Hanek): the
    integer mantissa times the 192 bits of 2/pi that matter modulo 4."""
    m, e = np.frexp(ax)
    mant = (m * 2.0 ** 53).astype(np.uint64)
    window = _two_over_pi_windows()[np.clip(e - 53, _E2_MIN, _E2_MAX) - _E2_MIN]
    mask = np.uint64(0xFFFFFFFF)
    thirty_two = np.uint64(32)
    low, high = mant & mask, mant >> thirty_two
    acc = [np.zeros(ax.shape, np.uint64) for _ in range(_WINDOW_LIMBS + 2)]
    for j in range(_WINDOW_LIMBS):
        p = low * window[:, j]
        acc[j] += p & mask
        acc[j + 1] += p >> thirty_two
        q = high * window[:, j]
        acc[j + 1] += q & mask
        acc[j + 2] += q >> thirty_two
    for j in range(_WINDOW_LIMBS - 1):
        acc[j + 1] += acc[j] >> thirty_two
        acc[j] &= mask
    top = acc[_WINDOW_LIMBS - 1] & mask  # bits 191..160: 2 integer bits, then fraction
    n = (top >> np.uint64(30)).astype(np.float64)
    head = (top & np.uint64((1 << 30) - 1)).astype(np.float64)
    up = head >= 2.0 ** 29  # fraction >= 1/2: round n up, fraction negative
    n = _pick(up, n + 1.0, n)
    head = _pick(up, head - 2.0 ** 30, head) * 2.0 ** -30
    parts = [acc[_WINDOW_LIMBS - 1 - i].astype(np.float64) * 2.0 ** (-30 - 32 * i)
             for i in range(1, 4)]
    f_hi, f_lo = _fast_two_sum(head, parts[0])
    f_hi, f_lo = _fast_two_sum(f_hi, f_lo + (parts[1] + parts[2]))
    y0, y1 = _two_prod(f_hi, np.full_like(f_hi, _PIO2_HI))
    y1 = y1 + (f_hi * _PIO2_LO + f_lo * _PIO2_HI)
    y0, y1 = _fast_two_sum(y0, y1)
    return n, y0, y1


def _rem_pio2(x: F64) -> tuple[npt.NDArray[np.int64], F64, F64]:
    """x = n pi/2 + (y0 + y1), |y0 + y1| <= pi/4 (about); n as an integer."""
    ax = np.abs(x)
    large = (ax >= _MEDIUM) & np.isfinite(ax)
    n, y0, y1 = _rem_pio2_medium(_pick(large, 0.0, x))
    if large.any():
        idx = np.nonzero(large)
        ln, ly0, ly1 = _rem_pio2_large(ax[idx])
        neg = x[idx] < 0
        n, y0, y1 = n.copy(), y0.copy(), y1.copy()
        n[idx] = _pick(neg, -ln, ln)
        y0[idx] = _pick(neg, -ly0, ly0)
        y1[idx] = _pick(neg, -ly1, ly1)
    y0 = _pick(np.isfinite(x), y0, np.nan)
    return _pick(np.isfinite(n), n, 0.0).astype(np.int64), y0, y1


_SIN_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03,
          -1.98412698298579493134e-04, 2.75573137070700676789e-06,
          -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03,
          2.48015872894767294178e-05, -2.75573143513906633035e-07,
          2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _kernel_sin(x: F64, y: F64) -> F64:
    """sin(x + y) for |x + y| <= pi/4, y the tail of the reduced argument."""
    s1, s2, s3, s4, s5, s6 = _SIN_S
    z = x * x
    v = z * x
    r = s2 + z * (s3 + z * (s4 + z * (s5 + z * s6)))
    return np.asarray(x - ((z * (0.5 * y - v * r) - y) - v * s1))


def _kernel_cos(x: F64, y: F64) -> F64:
    """cos(x + y) for |x + y| <= pi/4."""
    c1, c2, c3, c4, c5, c6 = _COS_C
    z = x * x
    w = z * z
    r = z * (c1 + z * (c2 + z * c3)) + w * w * (c4 + z * (c5 + z * c6))
    hz = 0.5 * z
    w = 1.0 - hz
    return np.asarray(w + (((1.0 - w) - hz) + (z * r - x * y)))


def _by_quadrant(n: npt.NDArray[np.int64], s: F64, c: F64) -> F64:
    """sin(n pi/2 + y) from s = sin y, c = cos y: blends by 0/1 factors (exact
    for finite s, c) rather than selects, whose branches follow the data."""
    odd = (n & 1).astype(np.float64)
    sign = 1.0 - (n & 2).astype(np.float64)
    return np.asarray((s * (1.0 - odd) + c * odd) * sign)


def _sin(x: F64) -> F64:
    """sine: reduction modulo pi/2, then the sine or cosine kernel by quadrant."""
    n, y0, y1 = _rem_pio2(x)
    s, c = _kernel_sin(y0, y1), _kernel_cos(y0, y1)
    return np.asarray(_pick(x == 0, x, _by_quadrant(n, s, c)))  # keeps the sign of zero


def _cos(x: F64) -> F64:
    n, y0, y1 = _rem_pio2(x)
    s, c = _kernel_sin(y0, y1), _kernel_cos(y0, y1)
    return _by_quadrant(n + 1, s, c)


def _tan(x: F64) -> F64:
    """tangent as the quotient of the two kernels on the reduced argument."""
    n, y0, y1 = _rem_pio2(x)
    s, c = _kernel_sin(y0, y1), _kernel_cos(y0, y1)
    out = _pick((n & 1) == 0, s / c, -c / s)
    return np.asarray(_pick(x == 0, x, out))


# ---------------------------------------------------------------------- atan

_ATAN_HI = (4.63647609000806093515e-01, 7.85398163397448278999e-01,
            9.82793723247329054082e-01, 1.57079632679489655800e+00)
_ATAN_LO = (2.26987774529616870924e-17, 3.06161699786838301793e-17,
            1.39033110312309984516e-17, 6.12323399573676603587e-17)
_AT = (3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01,
       -1.11111104054623557880e-01, 9.09088713343650656196e-02, -7.69187620504482999495e-02,
       6.66107313738753120669e-02, -5.83357013379057348645e-02, 4.97687799461593236017e-02,
       -3.65315727442169155270e-02, 1.62858201153657823623e-02)


def _atan(x: F64) -> F64:
    """arctangent (fdlibm's algorithm): |x| reduced to [-7/16, 7/16] around
    one of atan(1/2), atan(1), atan(3/2), atan(inf), then an odd polynomial."""
    # Regions by arithmetic, not by branching selects: the masks follow
    # the data and mispredicted branches would dominate the time.
    a = np.minimum(np.abs(x), 2.0 ** 1000)  # atan(inf) as atan(2^1000)
    region = ((a >= 7 / 16).astype(np.int8) + (a >= 11 / 16) + (a >= 19 / 16)
              + (a >= 39 / 16))
    centre = np.take(np.array([0.0, 0.5, 1.0, 1.5, 0.0]), region)
    last = (region == 4).astype(np.float64)  # t = -1/a there
    keep = 1.0 - last
    # (a - c) / (1 + c a): 2(a - 1/2) / 2(1 + a/2) is fdlibm's (2a - 1) / (2 + a).
    t = ((a - centre) * keep - last) / ((1.0 + centre * a) * keep + a * last)
    z = t * t
    w = z * z
    s1 = z * (_AT[0] + w * (_AT[2] + w * (_AT[4] + w * (_AT[6] + w * (_AT[8] + w * _AT[10])))))
    s2 = w * (_AT[1] + w * (_AT[3] + w * (_AT[5] + w * (_AT[7] + w * _AT[9]))))
    hi = np.take(np.array((0.0, *_ATAN_HI)), region)
    lo = np.take(np.array((0.0, *_ATAN_LO)), region)
    out = hi - ((t * (s1 + s2) - lo) - t)  # region 0: exactly t - t (s1 + s2)
    return np.asarray(_pick(np.isnan(x), x, np.copysign(out, x)))


_PI = 3.1415926535897931160e+00
_PI_LO = 1.2246467991473531772e-16


def _atan2(y: F64, x: F64) -> F64:
    """atan(y / x) in the quadrant of (x, y), with C99's special values."""
    y, x = np.broadcast_arrays(y, x)
    z = _atan(np.abs(y) / np.abs(x))
    neg_x = np.signbit(x)
    out = _pick(neg_x, _PI - (z - _PI_LO), z)
    both_inf = np.isinf(x) & np.isinf(y)
    out = _pick(both_inf, _pick(neg_x, 3 * _PI / 4, _PI / 4), out)
    out = _pick(y == 0, _pick(neg_x, _PI, 0.0), out)
    out = _pick((x == 0) & (y != 0), _PIO2_HI, out)
    out = np.copysign(out, y)
    return np.asarray(_pick(np.isnan(x) | np.isnan(y), x + y, out))


def _asin(x: F64) -> F64:
    return _atan2(x, np.sqrt((1.0 - x) * (1.0 + x)))


def _acos(x: F64) -> F64:
    out = 2.0 * _atan2(np.sqrt(1.0 - x), np.sqrt(1.0 + x))
    return np.asarray(_pick(np.abs(x) > 1, np.nan, out))


# ------------------------------------------------------------- hyperbolic ones


def _tanh(x: F64) -> F64:
    """tanh (fdlibm's algorithm) from expm1 of 2|x| or -2|x|."""
    a = np.abs(x)
    big = np.minimum(a, 22.0)
    t_big = _expm1(2.0 * big)
    t_small = _expm1(-2.0 * big)
    out = _pick(a >= 1, 1.0 - 2.0 / (t_big + 2.0), -t_small / (t_small + 2.0))
    out = _pick(a >= 22, 1.0, out)
    out = _pick(a < 2.0 ** -55, a, out)
    return np.asarray(_pick(np.isnan(x), x, np.copysign(out, x)))


_LN2 = 6.93147180559945286227e-01


def _asinh(x: F64) -> F64:
    a = np.abs(x)
    with np.errstate(all="ignore"):
        small = _log1p(a + a * a / (1.0 + np.sqrt(1.0 + a * a)))
        mid = _log(2.0 * a + 1.0 / (np.sqrt(a * a + 1.0) + a))
    out = _pick(a > 2.0 ** 28, _log(a) + _LN2, _pick(a > 2.0, mid, small))
    return np.asarray(_pick(np.isnan(x), x, np.copysign(out, x)))


def _acosh(x: F64) -> F64:
    t = x - 1.0
    with np.errstate(all="ignore"):
        small = _log1p(t + np.sqrt(2.0 * t + t * t))
        mid = _log(2.0 * x - 1.0 / (x + np.sqrt(x * x - 1.0)))
    out = _pick(x > 2.0 ** 28, _log(x) + _LN2, _pick(x > 2.0, mid, small))
    return np.asarray(_pick(x < 1, np.nan, _pick(np.isnan(x), x, out)))


def _atanh(x: F64) -> F64:
    a = np.abs(x)
    out = 0.5 * _log1p(2.0 * a / (1.0 - a))
    out = _pick(a > 1, np.nan, out)
    return np.asarray(_pick(np.isnan(x), x, np.copysign(out, x)))


# ---------------------------------------------------------------------- cbrt


def _cbrt(x: F64) -> F64:
    """Cube root: exponent divided by 3, Newton steps on the mantissa, and
    fdlibm's final step that leaves the result within an ULP."""
    a = _pick(np.isfinite(x) & (x != 0), np.abs(x), 1.0)
    m, e = np.frexp(a)
    q = np.floor_divide(e, 3)
    m = np.ldexp(m, e - 3 * q)  # in [1/2, 4)
    t = 0.7 + 0.23 * m  # cbrt on [1/2, 4) to 8%
    for _ in range(4):
        t = t - (t - m / (t * t)) / 3.0
    s = t * t
    r = m / s
    t = t + t * ((r - t) / (t + t + r))
    out = np.ldexp(t, q)
    out = _pick(np.isfinite(x) & (x != 0), np.copysign(out, x), x)
    return np.asarray(out)


# ----------------------------------------------------------------------- pow


def _log_dd(x: F64) -> tuple[F64, F64]:
    """log(x) for finite x > 0 as hi + lo to about 2^-70 relative: the
    leading 2s of 2 atanh(s) carried in two pieces, the tail in one."""
    k, f = _log_parts(x)
    u = 2.0 + f
    u_lo = (2.0 - u) + f
    s = f / u
    p, p_lo = _two_prod(s, u)
    s_lo = (((f - p) - p_lo) - s * u_lo) / u
    z = s * s
    w = z * z
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    tail = s * (t2 + t1)  # 2 atanh(s) - 2 s
    hi, lo = _two_sum(k * _LN2_HI, 2.0 * s)
    lo = lo + (2.0 * s_lo + tail + k * _LN2_LO)
    return _two_sum(hi, lo)


def _pow(x: F64, y: F64) -> F64:
    """x^y = e^(y log|x|) with log|x| and the product in double length, the
    sign from odd integer y, and C99's special values (as NumPy's power)."""
    x, y = np.broadcast_arrays(x, y)
    ax = np.abs(x)
    ok = (ax > 0) & np.isfinite(ax) & np.isfinite(y)
    lhi, llo = _log_dd(_pick(ok, ax, 1.0))
    yy = _pick(ok & (np.abs(y) < 2.0 ** 995), y, 0.0)
    p, p_lo = _two_prod(yy, lhi)
    p_lo = p_lo + yy * llo
    direct = y * lhi
    huge = np.abs(direct) > 2000.0
    p = _pick(huge, direct, p)
    p_lo = _pick(huge, 0.0, p_lo)
    mag = _exp_dd(p, p_lo)
    y_int = np.floor(y) == y
    y_odd = y_int & (np.abs(y) < 2.0 ** 53) & (np.floor(y / 2.0) != y / 2.0)
    neg = np.signbit(x)
    out = _pick(neg & y_odd, -mag, mag)
    out = _pick((x < 0) & ~y_int & np.isfinite(x), np.nan, out)
    # Zeros and infinities of x: the power of |x| gets the sign of an odd y.
    zero_or_inf = _pick((ax == 0) == (y > 0), 0.0, np.inf)
    out = _pick((ax == 0) | np.isinf(ax),
                   _pick(neg & y_odd, -zero_or_inf, zero_or_inf), out)
    # Infinite y: |x| < 1 and |x| > 1 go opposite ways; |x| == 1 gives 1.
    inf_y = _pick((ax < 1) == (y > 0), 0.0, np.inf)
    out = _pick(np.isinf(y), _pick(ax == 1, 1.0, inf_y), out)
    out = _pick(np.isnan(x) | np.isnan(y), np.nan, out)
    out = _pick((y == 0) | (x == 1), 1.0, out)
    return np.asarray(out)


# --------------------------------------------------------------- public names

exp = _via64(_exp, np.exp)
expm1 = _via64(_expm1, np.expm1)
log = _via64(_log, np.log)
log1p = _via64(_log1p, np.log1p)
log2 = _via64(_log2, np.log2)
log10 = _via64(_log10, np.log10)
sin = _via64(_sin, np.sin)
cos = _via64(_cos, np.cos)
tan = _via64(_tan, np.tan)
arctan = _via64(_atan, np.arctan)
arcsin = _via64(_asin, np.arcsin)
arccos = _via64(_acos, np.arccos)
tanh = _via64(_tanh, np.tanh)
arcsinh = _via64(_asinh, np.arcsinh)
arccosh = _via64(_acosh, np.arccosh)
arctanh = _via64(_atanh, np.arctanh)
cbrt = _via64(_cbrt, np.cbrt)
arctan2 = _via64_binary(_atan2, np.arctan2)
power = _via64_binary(_pow, np.power)
