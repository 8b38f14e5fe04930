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
from spec._src.lax.control_flow import while_loop
from spec._src.lax.reductions import reduce_or
from spec._src.lax.shaping import broadcast_in_dim, convert_element_type, full_like
from spec._src.lowering.emitter import LoweringContext, tensor_type
from spec._src.lowering.transcendental import lower_fun

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
# 1/2 where |x| <= eps. Lowering: i1e is ``chlo.bessel_i1e``; i0e is the
# composite JAX lowers it to, Cephes' Chebyshev expansions of e^-x I0(x) on
# [0, 8] (in x/2 - 2) and on (8, inf) (in 32/x - 2, divided by sqrt(x)),
# summed by Clenshaw's recurrence in the operand's dtype (float16/bfloat16
# in float32): XLA's values, within the tolerance SPEC.md states of spec's.

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


# Cephes' coefficients (i0.c), highest order first. float64 sums all of
# them; float32 only the last 18 of A and the last 7 of B, as Cephes' float
# version does.
_I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
_I0E_FLOAT32_TERMS = (18, 7)


def _clenshaw(t: Any, coefficients: Sequence[float]) -> Any:
    """sum_k c_k T_k(t/2) - c_0/2 by Clenshaw's recurrence, written with
    Python operators as JAX's lowering is (each constant a fresh fill)."""
    b0, b1, b2 = full_like(t, 0), full_like(t, 0), full_like(t, 0)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = t * b1 - b2 + full_like(t, c)
    return 0.5 * (b0 - b2)


def _i0e_chebyshev(x: Any) -> Any:
    """e^-|x| I0(x) by the two Chebyshev expansions, in x's dtype."""
    dt = canonical_aval_of(x).dtype
    n_a, n_b = (len(_I0E_A), len(_I0E_B)) if dt == np.float64 else _I0E_FLOAT32_TERMS
    x = E.abs(x)
    half, two, thirty_two = full_like(x, 0.5), full_like(x, 2.0), full_like(x, 32.0)
    near = _clenshaw(half * x - two, _I0E_A[-n_a:])
    far = E.div(_clenshaw(thirty_two / x - two, _I0E_B[-n_b:]), E.sqrt(x))
    return E.select(x <= 8.0, near, far)


def _i0e_composite(x: Any) -> Any:
    """The composite in float32 for a float16/bfloat16 operand (the
    coefficients need float32's precision), rounded back."""
    dt = canonical_aval_of(x).dtype
    if dt in (np.float32, np.float64):
        return _i0e_chebyshev(x)
    return convert_element_type(_i0e_chebyshev(convert_element_type(x, np.float32)), dt)


bessel_i0e_p = _declare(
    "bessel_i0e", 1, _in_float64(_i0e64), jvp=defjvp2(_i0e_jvp),
    transpose=not_applicable("bessel_i0e is not linear"),
    lowering=lower_fun(_i0e_composite))
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
# ValueError. Lowering: the while-loop composite JAX lowers it to (below).

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


# The lowering: the composite JAX lowers the primitive to (XLA's
# math.cc), written with Python operators where JAX's is so that each
# equation is JAX's. The continued fraction of DLMF 8.17.22 is evaluated by
# the Lentz-Thompson-Barnett method in a while_loop: 200 steps at most in
# float32, 600 in float64, an element frozen once its step changes h by
# less than eps/2; the loop ends when every element is frozen.

def _any(pred: Any) -> Any:
    return reduce_or(pred, tuple(range(canonical_aval_of(pred).ndim)))


def _lentz(steps: int, small: Any, numerator: Callable[..., Any],
           denominator: Callable[..., Any], inputs: Sequence[Any]) -> Any:
    """h = b0 + a1 / (b1 + a2 / (b2 + ...)), with a_n, b_n from
    ``numerator``/``denominator`` of the step number."""
    def more(state: dict[str, Any]) -> Any:
        return E.bitwise_and(E.lt(state["iteration"], steps), _any(state["unconverged"]))

    def step(state: dict[str, Any]) -> dict[str, Any]:
        n, live = state["iteration"], state["unconverged"]
        a_n, b_n = numerator(n, *inputs), denominator(n, *inputs)
        c = E.add(b_n, E.div(a_n, state["c"]))
        tiny = full_like(c, small)
        c = E.select(E.lt(E.abs(c), tiny), tiny, c)
        d = E.add(b_n, E.mul(a_n, state["d"]))
        d = E.reciprocal(E.select(E.lt(E.abs(d), tiny), tiny, d))
        delta = E.mul(c, d)
        h = E.mul(state["h"], delta)
        moving = E.ge(E.abs(E.sub(delta, E.const_like(delta, 1.0))), small)
        return {"iteration": n + 1, "unconverged": E.bitwise_and(live, moving),
                "c": E.select(live, c, state["c"]), "d": E.select(live, d, state["d"]),
                "h": E.select(live, h, state["h"])}

    b0 = denominator(0, *inputs)
    h = E.select(E.lt(E.abs(b0), small), broadcast_in_dim(small, canonical_aval_of(b0).shape, ()),
                 b0)
    state = {"iteration": 1, "unconverged": full_like(h, True, dtype=np.bool_), "c": h,
             "d": full_like(h, 0), "h": h}
    return while_loop(more, step, state)["h"]


def _betainc_numerator(shape: tuple[int, ...], dtype: Any) -> Callable[..., Any]:
    """a_1 = 1, a_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) (the m = 0 case
    written as -(a+b)x/(a+1), exact under flushing),
    a_{2m} = m(b-m)x / ((a+2m-1)(a+2m))."""
    def numerator(n: Any, a: Any, b: Any, x: Any) -> Any:
        n = broadcast_in_dim(n, shape, [])
        even = E.eq(n % full_like(n, 2), full_like(n, 0))
        first = E.eq(n, full_like(n, 1))
        n_minus_one = n - full_like(n, 1)
        m = n_minus_one // full_like(n_minus_one, 2)
        m_is_zero = E.eq(m, full_like(m, 0))
        m = convert_element_type(m, dtype)
        one, two = full_like(a, 1), full_like(a, 2.0)
        zero_m = -(a + b) * x / (a + one)
        odd_n = E.select(m_is_zero, zero_m,
                         -(a + m) * (a + b + m) * x / ((a + two * m) * (a + two * m + one)))
        even_n = m * (b - m) * x / ((a + two * m - one) * (a + two * m))
        return E.select(first, full_like(x, 1.0), E.select(even, odd_n, even_n))
    return numerator


def _betainc_denominator(shape: tuple[int, ...]) -> Callable[..., Any]:
    """b_0 = 0, b_n = 1."""
    def denominator(n: Any, a: Any, b: Any, x: Any) -> Any:
        n = broadcast_in_dim(n, shape, [])
        return E.select(E.eq(n, full_like(n, 0)), full_like(x, 0), full_like(x, 1))
    return denominator


def _betainc_special(a: Any, b: Any, x: Any) -> tuple[Any, Any, Any]:
    """Where the result is 0, 1 and nan whatever the fraction gives."""
    a_is_zero = E.bitwise_or(E.eq(a, full_like(a, 0)), E.eq(b, full_like(b, float("inf"))))
    b_is_zero = E.bitwise_or(E.eq(b, full_like(b, 0)), E.eq(a, full_like(a, float("inf"))))
    x_is_zero, x_is_one = E.eq(x, full_like(x, 0)), E.eq(x, full_like(x, 1))
    x_not_zero, x_not_one = E.bitwise_not(x_is_zero), E.bitwise_not(x_is_one)
    is_nan = E.bitwise_or(E.bitwise_or(E.ne(a, a), E.ne(b, b)), E.ne(x, x))
    zero = E.bitwise_or(E.bitwise_and(b_is_zero, x_not_one), E.bitwise_and(a_is_zero, x_is_zero))
    one = E.bitwise_or(E.bitwise_and(a_is_zero, x_not_zero), E.bitwise_and(b_is_zero, x_is_one))
    nan = E.bitwise_or(E.bitwise_or(E.bitwise_or(E.lt(a, full_like(a, 0)),
                                                 E.lt(b, full_like(b, 0))),
                                    E.lt(x, full_like(x, 0))), E.gt(x, full_like(x, 1)))
    nan = E.bitwise_or(nan, E.bitwise_or(E.bitwise_and(a_is_zero, b_is_zero), is_nan))
    return zero, one, nan


def _betainc_composite(a: Any, b: Any, x: Any, *, dtype: Any) -> Any:
    """I_x(a, b) on operands of one shape and dtype ``dtype``."""
    shape = tuple(canonical_aval_of(a).shape)
    result_is_zero, result_is_one, result_is_nan = _betainc_special(a, b, x)
    # The fraction converges fast for x < (a+1)/(a+b+2); elsewhere
    # I_x(a, b) = 1 - I_{1-x}(b, a) (DLMF 8.17.4).
    fast = E.lt(x, (a + full_like(a, 1)) / (a + b + full_like(b, 2.0)))
    a, b, x = (E.select(fast, a, b), E.select(fast, b, a),
               E.select(fast, x, E.sub(full_like(x, 1), x)))
    info = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    half_eps = (info.eps / 2).astype(dtype)
    fraction = _lentz(200 if dtype == np.float32 else 600, half_eps,
                      _betainc_numerator(shape, dtype), _betainc_denominator(shape), [a, b, x])
    # a Gamma(a) = Gamma(a + 1) -> 1 as a -> 0+ keeps a tiny a from dividing.
    very_small = (info.tiny * 2).astype(dtype)
    lbeta_small_a = E.lgamma(b) - E.lgamma(a + b)
    lbeta = E.lgamma(a) + lbeta_small_a
    factor = E.select(E.lt(a, full_like(a, very_small)),
                      E.exp(E.log1p(-x) * b - lbeta_small_a),
                      E.exp(E.log(x) * a + E.log1p(-x) * b - lbeta) / a)
    result = fraction * factor
    result = E.select(fast, result, E.sub(full_like(result, 1), result))
    result = E.select(result_is_zero, full_like(a, 0), result)
    result = E.select(result_is_one, full_like(a, 1), result)
    return E.select(result_is_nan, full_like(a, float("nan")), result)


def _widened(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` on the operands broadcast to one shape, float16/bfloat16
    computed in float32 and rounded back (JAX's wrapping of these
    composites)."""
    def run(*args: Any) -> Any:
        shapes = [tuple(canonical_aval_of(v).shape) for v in args]
        shape = np.broadcast_shapes(*shapes)
        args = tuple(broadcast_in_dim(v, shape, tuple(range(len(s))))
                     for v, s in zip(args, shapes))
        dt = canonical_aval_of(args[0]).dtype
        narrow = dt in (ml_dtypes.bfloat16, np.float16)
        if narrow:
            args = tuple(convert_element_type(v, np.float32) for v in args)
        out = fn(*args, dtype=np.dtype(np.float32) if narrow else dt)
        return convert_element_type(out, dt) if narrow else out
    return run


regularized_incomplete_beta_p = _declare(
    "regularized_incomplete_beta", 3, _in_float64(_betainc64),
    jvp=defjvp(_betainc_no_derivative, _betainc_no_derivative, _betainc_jvp_x),
    transpose=not_applicable("regularized_incomplete_beta is not linear"),
    lowering=lower_fun(_widened(_betainc_composite)))


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
