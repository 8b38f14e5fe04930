"""The Hurwitz zeta function, the scaled modified Bessel functions of orders 0
and 1, and the regularized incomplete beta function.

JAX declares each as a primitive (``zeta``, ``bessel_i0e``, ``bessel_i1e``,
``regularized_incomplete_beta``) and XLA evaluates them with its own
kernels. spec's impls compute in float64 by textbook methods with a fixed
amount of work per element (no data-dependent iteration), so a result is
the same on every machine; float32 and narrower operands are rounded once
from float64. They agree with XLA's CPU kernels to a tolerance stated per
function in SPEC.md, not bit for bit.

Typing is the standard n-ary rule over floating dtypes (C1 dtype class, C2
one dtype, C3 shapes broadcast); the result is weak iff every operand is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core.interpreter import Primitive, canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import defjvp, defjvp2
from spec._src.interpreters.batching import broadcasting, vectorized
from spec._src.lax import elementwise as E
from spec._src.lax import sharding_kit as SK
from spec._src.lax import elementwise_kit as K
from spec._src.lax.elementwise_kit import FLOAT, nary_type
from spec._src.lax.shaping import full_like
from spec._src.lowering.emitter import LoweringContext, tensor_type

Impl = Callable[..., list[np.ndarray]]


def _in_float64(fn: Callable[..., np.ndarray]) -> Impl:
    """``fn`` evaluated on float64 copies of the operands (broadcast to one
    shape), its result rounded once to the operands' dtype; subnormal
    float32/float64 operands and results flushed to zero, as on XLA's CPU."""
    def impl(*xs: np.ndarray) -> list[np.ndarray]:
        dt = xs[0].dtype
        wide = np.broadcast_arrays(*(np.asarray(K.flush_subnormals(x), np.float64)
                                     for x in xs))
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*wide), np.float64)
        return [K.flush_subnormals(out.astype(dt))]
    return impl


def _chlo(opname: str) -> Callable[..., list[str]]:
    """The lowering to the CHLO op ``opname``, printed as JAX prints it
    (``chlo.zeta %0, %1 : T, T -> T``)."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType]) -> list[str]:
        ins = ", ".join(tensor_type(a) for a in in_avals)
        return [ctx.line(f"{opname} {', '.join(operands)} : {ins} -> "
                         f"{tensor_type(out_avals[0])}")]
    return rule


def _declare(name: str, arity: int, impl: Impl, **sections: Any) -> Primitive:
    """An elementwise primitive of ``arity`` floating operands: sharding zips
    the operands per dimension, the per-device program runs the impl on
    aligned blocks, batching is elementwise."""
    def typing(*avals: ArrayType) -> list[ArrayType]:
        return nary_type(name, avals, FLOAT)
    sections.setdefault("batch", vectorized() if arity == 1 else broadcasting())
    return declare(name, typing=typing, impl=impl,
                   sharding=SK.elementwise(name, ur="nonlinear", n_out=1),
                   per_device=from_primitive(PD.aligned), **sections)


# ------------------------------------------------------------------ zeta
# zeta(x, q) = sum_{k >= 0} (q + k)^-x, the Hurwitz zeta function. Impl:
# Euler-Maclaurin summation with the first 16 terms summed directly and 16
# Bernoulli corrections, in float64. Special values as XLA's, the later
# rule winning: nan for a nan or infinite operand, for x < 1 and for q <= 0
# with x not an integer; at a pole (q a non-positive integer, -inf
# included) inf for even integer x, else nan; inf for x = 1. JAX gives
# the primitive no derivative rule (jax.scipy.special.zeta's custom_jvp
# differentiates a series instead); it is not linear.

_DIRECT_TERMS = 16
_CORRECTIONS = 16


def _bernoulli_even(count: int) -> list[Fraction]:
    """B_2, B_4, ..., B_{2 count} (exact, by the Akiyama-Tanigawa recurrence)."""
    top = 2 * count
    row = [Fraction(0)] * (top + 1)
    numbers = []
    for m in range(top + 1):
        row[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        numbers.append(row[0])
    return [numbers[2 * j] for j in range(1, count + 1)]


# B_2j / (2j)! as float64, the Euler-Maclaurin weights.
_EM_WEIGHTS = np.array([float(b / math.factorial(2 * j))
                        for j, b in enumerate(_bernoulli_even(_CORRECTIONS), 1)])


def _zeta64(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    ks = np.arange(_DIRECT_TERMS, dtype=np.float64)
    direct = np.sum(np.power(q[..., None] + ks, -x[..., None]), axis=-1)
    n = q + _DIRECT_TERMS
    tail = np.power(n, 1.0 - x) / (x - 1.0) + 0.5 * np.power(n, -x)
    # Term j: B_2j/(2j)! * x (x+1) ... (x+2j-2) * n^(-x-2j+1).
    rising = np.ones_like(x)
    power = np.power(n, -x - 1.0)
    correction = np.zeros_like(x)
    for j in range(_CORRECTIONS):
        rising = rising * (x + 2 * j) if j == 0 else rising * (x + 2 * j - 1) * (x + 2 * j)
        correction = correction + _EM_WEIGHTS[j] * rising * power
        power = power / (n * n)
    out = direct + tail + correction
    whole_x = x == np.floor(x)
    out = np.where(np.isnan(x) | np.isnan(q) | np.isinf(x) | np.isinf(q), np.nan, out)
    out = np.where((x < 1) | ((q <= 0) & ~whole_x), np.nan, out)
    # At a pole (q a non-positive integer) the limit is +inf for even x only.
    at_pole = (q <= 0) & (q == np.floor(q))
    even_x = whole_x & (np.fmod(x, 2.0) == 0)
    out = np.where(at_pole, np.where(even_x, np.inf, np.nan), out)
    return np.where(x == 1, np.inf, out)


zeta_p = _declare(
    "zeta", 2, _in_float64(_zeta64),
    jvp=not_applicable("JAX defines no derivative rule for the zeta primitive"),
    transpose=not_applicable("zeta is not linear"), lowering=_chlo("chlo.zeta"))


# ---------------------------------------------------------- bessel_i0e/i1e
# i0e(x) = e^-|x| I0(x), i1e(x) = e^-|x| I1(x). Impl: the power series of
# I_nu for |x| <= 30 (96 terms, all positive), else Hankel's asymptotic
# series (24 terms), in float64. i0e is even, i1e odd. JVPs as JAX's:
# i0e' = i1e(x) - sign(x) i0e(x); i1e' = i0e(x) - i1e(x) (sign(x) + 1/x),
# 1/2 where |x| <= eps. Lowering: i1e is ``chlo.bessel_i1e``; JAX lowers
# i0e to a Chebyshev composite of StableHLO ops, which spec does not write.

_SERIES_BELOW = 30.0
_SERIES_TERMS = 96
_ASYMPTOTIC_TERMS = 24


def _scaled_bessel_i(order: int, x: np.ndarray) -> np.ndarray:
    """e^-x I_order(x) for x >= 0."""
    small = np.minimum(x, _SERIES_BELOW)
    quarter_sq = small * small / 4.0
    term = np.power(small / 2.0, order) / math.factorial(order)
    series = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter_sq / (k * (k + order))
        series = series + term
    series = series * np.exp(-small)
    big = np.maximum(x, _SERIES_BELOW)
    four_nu_sq = 4.0 * order * order
    coef = np.ones_like(big)
    asymptotic = np.ones_like(big)
    for k in range(1, _ASYMPTOTIC_TERMS):
        coef = -coef * (four_nu_sq - (2 * k - 1) ** 2) / (k * 8.0 * big)
        asymptotic = asymptotic + coef
    asymptotic = asymptotic / np.sqrt(2.0 * np.pi * big)
    out: np.ndarray = np.where(x <= _SERIES_BELOW, series, asymptotic)
    return out


def _i0e64(x: np.ndarray) -> np.ndarray:
    return _scaled_bessel_i(0, np.abs(x))


def _i1e64(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.sign(x) * _scaled_bessel_i(1, np.abs(x))
    return out


def _i0e_jvp(g: Any, ans: Any, x: Any) -> Any:
    return E.mul(g, E.sub(bessel_i1e(x), E.mul(E.sign(x), ans)))


def _i1e_jvp(g: Any, ans: Any, x: Any) -> Any:
    eps = float(ml_dtypes.finfo(canonical_aval_of(x).dtype).eps)  # type: ignore[no-untyped-call]
    not_tiny = E.gt(E.abs(x), E.const_like(x, eps))
    safe_x = E.select(not_tiny, x, full_like(x, eps))
    slope = E.sub(bessel_i0e(safe_x),
                  E.mul(ans, E.add(E.sign(safe_x), E.reciprocal(safe_x))))
    return E.mul(g, E.select(not_tiny, slope, full_like(x, 0.5)))


bessel_i0e_p = _declare(
    "bessel_i0e", 1, _in_float64(_i0e64), jvp=defjvp2(_i0e_jvp),
    transpose=not_applicable("bessel_i0e is not linear"),
    lowering=not_applicable("JAX lowers bessel_i0e to a Chebyshev-series composite of "
                            "StableHLO ops; spec writes no lowering for it"))
bessel_i1e_p = _declare(
    "bessel_i1e", 1, _in_float64(_i1e64), jvp=defjvp2(_i1e_jvp),
    transpose=not_applicable("bessel_i1e is not linear"),
    lowering=_chlo("chlo.bessel_i1e"))


# ------------------------------------------------ regularized_incomplete_beta
# I_x(a, b) = B(x; a, b) / B(a, b). Impl: the continued fraction of
# B(x; a, b) (DLMF 8.17.22) by the modified Lentz method, 512 steps, on x
# itself when x < (a + 1) / (a + b + 2) and on 1 - I_{1-x}(b, a) otherwise,
# in float64. nan where a < 0, b < 0, x < 0, x > 1, a = b = 0 or a = b =
# inf; 0 at x = 0 and 1 at x = 1; a = 0 or b = inf gives 1 for x > 0, b = 0
# or a = inf gives 0 for x < 1 (XLA's values). JVP as JAX's:
# d/dx = x^(a-1) (1-x)^(b-1) / B(a, b); a derivative in a or b raises
# ValueError. Lowering: JAX lowers it to a while-loop
# composite; spec writes no lowering for it.

_BETA_STEPS = 512
_TINY = 1e-300


def _lbeta64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out: np.ndarray = K.lgamma64(a) + K.lgamma64(b) - K.lgamma64(a + b)
    return out


def _beta_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction 1 / (1 + d1 / (1 + d2 / ...)) of B(x; a, b)."""
    c = np.ones_like(x)
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    for m in range(1, _BETA_STEPS):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + numerator / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            h = h * d * c
    return h


def _betainc64(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    flip = x > (a + 1.0) / (a + b + 2.0)
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1.0 - x, x)
    safe_x = np.clip(xx, _TINY, 1.0 - 1e-16)
    safe_a, safe_b = np.maximum(aa, _TINY), np.maximum(bb, _TINY)
    log_front = (safe_a * np.log(safe_x) + safe_b * np.log1p(-safe_x)
                 - _lbeta64(safe_a, safe_b) - np.log(safe_a))
    value = np.exp(log_front) * _beta_fraction(safe_a, safe_b, safe_x)
    out = np.where(flip, 1.0 - value, value)
    out = np.where(x == 0, 0.0, out)
    out = np.where(x == 1, 1.0, out)
    # A zero a (or an infinite b) puts all the mass at 0, a zero b (or an
    # infinite a) at 1.
    out = np.where((a == 0) | (b == np.inf), np.where(x == 0, 0.0, 1.0), out)
    out = np.where((b == 0) | (a == np.inf), np.where(x == 1, 1.0, 0.0), out)
    bad = ((a < 0) | (b < 0) | (x < 0) | (x > 1) | np.isnan(a) | np.isnan(b) | np.isnan(x)
           | ((a == 0) & (b == 0)) | ((a == np.inf) & (b == np.inf)))
    return np.where(bad, np.nan, out)


def _betainc_no_derivative(g: Any, a: Any, b: Any, x: Any) -> Any:
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_jvp_x(g: Any, a: Any, b: Any, x: Any) -> Any:
    one = E.const_like(a, 1)
    lbeta = E.sub(E.add(E.lgamma(a), E.lgamma(b)), E.lgamma(E.add(a, b)))
    log_density = E.sub(E.add(E.mul(E.sub(b, one), E.log1p(E.neg(x))),
                              E.mul(E.sub(a, one), E.log(x))), lbeta)
    return E.mul(g, E.exp(log_density))


regularized_incomplete_beta_p = _declare(
    "regularized_incomplete_beta", 3, _in_float64(_betainc64),
    jvp=defjvp(_betainc_no_derivative, _betainc_no_derivative, _betainc_jvp_x),
    transpose=not_applicable("regularized_incomplete_beta is not linear"),
    lowering=not_applicable("JAX lowers regularized_incomplete_beta to a while-loop "
                            "composite; spec writes no lowering for it"))


# ----------------------------------------------------------------- lax functions

def zeta(x: Any, q: Any) -> Any:
    """Elementwise Hurwitz zeta function sum_k (q + k)^-x."""
    return zeta_p.bind(x, q)


def bessel_i0e(x: Any) -> Any:
    """Elementwise e^-|x| I0(x)."""
    return bessel_i0e_p.bind(x)


def bessel_i1e(x: Any) -> Any:
    """Elementwise e^-|x| I1(x)."""
    return bessel_i1e_p.bind(x)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """Elementwise regularized incomplete beta function I_x(a, b)."""
    return regularized_incomplete_beta_p.bind(a, b, x)


__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc",
           "regularized_incomplete_beta_p", "zeta", "zeta_p"]
