"""The regularized incomplete gamma functions and the gamma-sample derivative.

``igamma(a, x)`` = P(a, x) = gamma(a, x) / Gamma(a), ``igammac`` = 1 - P and
``igamma_grad_a`` = dP/da are primitives (JAX declares them so); XLA has no
kernel for them, so JAX lowers each to a composite of lax operations: a
power series for small x and Legendre's continued fraction for large x, both
iterated in a ``while_loop`` until every element has converged. The impls of
the primitives evaluate those same composites (``special_values``), so the
numbers follow XLA's.

``random_gamma_grad(a, x)`` is not a primitive: it stages the composite for
d(sample)/da of a Gamma(a, 1) sample x (implicit differentiation of
P(a, x) = const), which is what ``random_gamma``'s JVP multiplies its tangent
by. Its jaxpr is the composite itself, equation for equation as JAX emits it;
where JAX writes Python operators (``a * b``) the code below does too, because
those go through jnp's promotion (weak operands may be converted), while the
lax functions do not.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import elementwise as E
from spec._src.lax.elementwise import const_like, declare_binary
from spec._src.lax.elementwise_kit import FLOAT
from spec._src.lax.control_flow import while_loop
from spec._src.lax.reductions import reduce_or
from spec._src.lax.shaping import broadcast_in_dim, convert_element_type, full_like
from spec._src.interpreters.ad_util import defjvp
from spec._src.lowering.transcendental import lower_fun
from spec._src.core.interpreter import not_applicable
from spec._src.core.interpreter import canonical_value, eval_jaxpr_values, trace_to_jaxpr


class _Want(enum.Enum):
    """What a loop's result is turned into."""

    VALUE = 0        # P(a, x) (or 1 - P from the continued fraction)
    DERIVATIVE = 1   # dP/da
    SAMPLE = 2       # dx/da along P(a, x) = const


def _finfo(dtype: Any) -> Any:
    return ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]


def _or_all(preds: list[Any]) -> Any:
    out = preds[0]
    for p in preds[1:]:
        out = E.bitwise_or(out, p)
    return out


def _any(pred: Any) -> Any:
    """True iff some element is true (a reduce_or over every axis)."""
    return reduce_or(pred, tuple(range(canonical_aval_of(pred).ndim)))


def _log_prefactor(a: Any, x: Any) -> Any:
    """log(x^a e^-x / Gamma(a))."""
    return a * E.log(x) - x - E.lgamma(a)


# ----------------------------------------------------------------- the series

def _series(ax: Any, x: Any, a: Any, enabled: Any, dtype: Any, want: _Want) -> Any:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)...(a+n)), and
    its a-derivative, summed term by term until each element's last term is
    below eps relative to its sum (where ``enabled``)."""
    eps = _finfo(dtype).eps

    def more(state: tuple[Any, ...]) -> Any:
        return _any(state[0])

    def step(state: tuple[Any, ...]) -> tuple[Any, ...]:
        on, r, term, total, xx, dterm, dtotal = state
        r2 = r + const_like(r, 1.)
        dterm2 = dterm * (xx / r2) - (term * xx) / (r2 * r2)
        dtotal2 = dtotal + dterm2
        term2 = term * (xx / r2)
        total2 = total + term2
        if want is _Want.VALUE:
            going = E.bitwise_and(on, term2 / total2 > eps)
        else:
            going = E.bitwise_and(on, abs(dterm2 / dtotal2) > eps)
        new = (r2, term2, total2, xx, dterm2, dtotal2)
        return (going, *(E.select(on, n, o) for n, o in zip(new, state[1:])))

    init = (enabled, a, full_like(a, 1), full_like(a, 1), x, full_like(a, 0),
            full_like(a, 0))
    out = while_loop(more, step, init)
    total, dtotal = out[3], out[6]
    if want is _Want.VALUE:
        return (total * ax) / a
    dlog_ax = E.log(x) - E.digamma(a + const_like(a, 1))
    if want is _Want.DERIVATIVE:
        return ax * (total * dlog_ax + dtotal) / a
    return -(dtotal + total * dlog_ax) * x / a


# -------------------------------------------------------- the continued fraction

def _continued_fraction(ax: Any, x: Any, a: Any, enabled: Any, dtype: Any,
                        want: _Want) -> Any:
    """1 - P(a, x) by the continued fraction of Gamma(a, x) (convergents
    p_k / q_k, with their a-derivatives), at most 2000 steps; convergents
    that grow past 1/eps are rescaled by eps."""
    eps = _finfo(dtype).eps

    def more(state: tuple[Any, ...]) -> Any:
        return E.bitwise_and(state[5] < const_like(state[5], 2000), _any(state[0]))

    def scaled(big: Any, v: Any) -> Any:
        return E.select(big, E.mul(v, const_like(v, eps)), v)

    def step(state: tuple[Any, ...]) -> tuple[Any, ...]:
        (on, ans, _, y, z, c, p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans) = state
        c = c + const_like(c, 1)
        y = y + const_like(y, 1)
        z = z + const_like(z, 2)
        yc = y * c
        pk = p1 * z - p2 * yc
        qk = q1 * z - q2 * yc
        ok = E.ne(qk, const_like(qk, 0))
        ratio = pk / qk
        rel = E.select(ok, abs(E.div(E.sub(ans, ratio), ratio)), full_like(ratio, 1))
        ans = E.select(ok, ratio, ans)
        dpk = dp1 * z - p1 - dp2 * yc + p2 * c
        dqk = dq1 * z - q1 - dq2 * yc + q2 * c
        dans_new = E.select(ok, E.div(dpk - ans * dqk, qk), dans)
        dchange = E.select(ok, abs(dans_new - dans), full_like(dans, 1))
        # Shift the recurrence: (k-2, k-1) <- (k-1, k).
        p2, p1, q2, q1 = p1, pk, q1, qk
        dp2, dq2, dp1, dq1 = dp1, dq1, dpk, dqk
        big = E.gt(abs(pk), E.reciprocal(const_like(pk, eps)))
        p2, p1, q2, q1 = (scaled(big, v) for v in (p2, p1, q2, q1))
        dp2, dq2, dp1, dq1 = (scaled(big, v) for v in (dp2, dq2, dp1, dq1))
        if want is _Want.VALUE:
            going = E.bitwise_and(on, rel > eps)
        else:
            going = E.bitwise_and(on, dchange > const_like(dchange, eps))
        keep = (ans, rel, y, z)
        kept = tuple(E.select(on, n, o) for n, o in zip(keep, state[1:5]))
        rest = (p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans_new)
        kept2 = tuple(E.select(on, n, o) for n, o in zip(rest, state[6:]))
        return (going, *kept, c, *kept2)

    # (The initial values are made in the order JAX makes them: for shaped
    # operands each full_like is an equation.)
    y0 = const_like(a, 1) - a
    z0 = x + y0 + const_like(x, 1)
    c0 = const_like(x, 0)
    p2 = full_like(x, 1)
    p1 = x + const_like(x, 1)
    q1 = z0 * x
    ans0 = p1 / q1
    t0 = full_like(x, 1)
    dp2, dq2, dp1 = full_like(x, 0), full_like(x, 0), full_like(x, 0)
    dq1 = -x
    dans0 = (dp1 - ans0 * dq1) / q1
    init = (enabled, ans0, t0, y0, z0, c0, p1, q1, p2, x, dp2, dq2, dp1, dq1, dans0)
    out = while_loop(more, step, init)
    ans = out[1]
    if want is _Want.VALUE:
        return ans * ax
    dans = out[14]
    dlog_ax = E.log(x) - E.digamma(a)
    if want is _Want.DERIVATIVE:
        return E.mul(ax, E.add(E.mul(ans, dlog_ax), dans))
    return E.neg(E.add(dans, E.mul(ans, dlog_ax)) * x)


# ------------------------------------------------------------ the four functions

def _is_nan(v: Any) -> Any:
    return E.ne(v, v)


def _underflows(log_ax: Any, dtype: Any) -> Any:
    """x^a e^-x / Gamma(a) below 1 / max: exp of it would be zero."""
    return E.lt(log_ax, -E.log(_finfo(dtype).max))


def igamma_value(a: Any, x: Any, *, dtype: Any) -> Any:
    """P(a, x): the series below x = max(1, a), else 1 - continued fraction;
    nan off the domain (x < 0, a < 0, a = x = 0, a = x = inf, nan)."""
    nan = E.bitwise_or(_is_nan(a), _is_nan(x))
    x_inf = E.eq(x, const_like(x, float("inf")))
    a_inf = E.eq(a, const_like(a, float("inf")))
    a_zero = E.eq(a, const_like(a, 0))
    x_zero = E.eq(x, const_like(x, 0))
    bad = _or_all([E.lt(x, const_like(x, 0)), E.lt(a, const_like(a, 0)),
                   E.bitwise_and(a_zero, x_zero), E.bitwise_and(a_inf, x_inf), nan])
    by_fraction = E.bitwise_and(E.ge(x, const_like(x, 1)), E.gt(x, a))
    log_ax = _log_prefactor(a, x)
    under = _underflows(log_ax, dtype)
    ax = E.exp(log_ax)
    on = E.bitwise_not(_or_all([x_zero, bad, under, x_inf, a_inf]))
    out = E.select(
        by_fraction,
        const_like(a, 1) - _continued_fraction(
            ax, x, a, E.bitwise_and(on, by_fraction), dtype, _Want.VALUE),
        _series(ax, x, a, E.bitwise_and(on, E.bitwise_not(by_fraction)), dtype,
                _Want.VALUE))
    out = E.select(a_inf, full_like(a, 0), out)
    out = E.select(x_zero, full_like(a, 0), out)
    out = E.select(x_inf, full_like(a, 1), out)
    return E.select(bad, full_like(a, float("nan")), out)


def igammac_value(a: Any, x: Any, *, dtype: Any) -> Any:
    """1 - P(a, x): 1 - series where x < 1 or x < a, else the continued
    fraction; the domain as for igamma."""
    nan = E.bitwise_or(_is_nan(a), _is_nan(x))
    a_zero = E.eq(a, const_like(a, 0))
    x_zero = E.eq(x, const_like(x, 0))
    x_inf = E.eq(x, const_like(x, float("inf")))
    a_inf = E.eq(a, const_like(a, float("inf")))
    bad = _or_all([E.lt(x, const_like(x, 0)), E.lt(a, const_like(a, 0)),
                   E.bitwise_and(a_zero, x_zero), E.bitwise_and(a_inf, x_inf), nan])
    by_series = E.bitwise_or(E.lt(x, const_like(x, 1)), E.lt(x, a))
    log_ax = _log_prefactor(a, x)
    under = _underflows(log_ax, dtype)
    on = E.bitwise_not(_or_all([bad, under, x_inf, a_zero, a_inf]))
    ax = E.exp(log_ax)
    low = _series(ax, x, a, E.bitwise_and(on, by_series), dtype, _Want.VALUE)
    high = _continued_fraction(ax, x, a, E.bitwise_and(on, E.bitwise_not(by_series)),
                               dtype, _Want.VALUE)
    out = E.select(by_series, const_like(a, 1) - low, high)
    out = E.select(a_inf, full_like(a, 1), out)
    out = E.select(E.bitwise_or(x_inf, a_zero), full_like(out, 0), out)
    return E.select(bad, full_like(a, float("nan")), out)


def _derivative(a: Any, x: Any, dtype: Any, want: _Want, max_of: Any) -> Any:
    """dP/da (``DERIVATIVE``) or dx/da (``SAMPLE``): the continued fraction
    where x > 1 and x > a (its sign flipped), else the series; 0 at x = 0,
    nan for x < 0, a <= 0 or nan operands."""
    nan = E.bitwise_or(_is_nan(a), _is_nan(x))
    x_zero = E.eq(x, full_like(x, 0))
    bad = E.bitwise_or(E.lt(x, full_like(x, 0)), E.le(a, full_like(a, 0)))
    by_fraction = E.bitwise_and(E.gt(x, full_like(x, 1)), E.gt(x, a))
    log_ax = _log_prefactor(a, x)
    under = _underflows(log_ax, max_of)
    ax = E.exp(log_ax)
    on = E.bitwise_not(E.bitwise_or(E.bitwise_or(E.bitwise_or(x_zero, bad), under),
                                        nan))
    out = E.select(
        by_fraction,
        -_continued_fraction(ax, x, a, E.bitwise_and(on, by_fraction), dtype, want),
        _series(ax, x, a, E.bitwise_and(on, E.bitwise_not(by_fraction)), dtype, want))
    out = E.select(x_zero, full_like(out, 0), out)
    return E.select(E.bitwise_or(bad, nan), full_like(a, float("nan")), out)


def igamma_grad_a_value(a: Any, x: Any, *, dtype: Any) -> Any:
    return _derivative(a, x, dtype, _Want.DERIVATIVE, dtype)


def random_gamma_grad_value(a: Any, x: Any, *, dtype: Any) -> Any:
    return _derivative(a, x, dtype, _Want.SAMPLE, canonical_aval_of(a).dtype)


def _widened(fn: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """``fn`` applied as JAX lowers these functions: the operands broadcast
    (as leading axes) to a common shape, float16/bfloat16 computed in float32
    and the result rounded back."""
    def run(*args: Any) -> Any:
        shapes = [canonical_aval_of(v).shape for v in args]
        shape = T.broadcast_shapes("random_gamma_grad", shapes)
        args = tuple(broadcast_in_dim(v, shape, tuple(range(len(s))))
                     for v, s in zip(args, shapes))
        dt = canonical_aval_of(args[0]).dtype
        narrow = dt in (T.bfloat16, T.float16)
        if narrow:
            args = tuple(convert_element_type(v, T.float32) for v in args)
        out = fn(*args, dtype=T.float32 if narrow else dt)
        return convert_element_type(out, dt) if narrow else out
    return run


_VALUES: dict[str, Callable[..., Any]] = {
    "igamma": igamma_value, "igammac": igammac_value, "igamma_grad_a": igamma_grad_a_value,
}
# The staged composites, one per (name, shapes, dtype); the oldest goes
# past _PROGRAMS_KEPT (a program of many shapes would keep one each).
_PROGRAMS: dict[tuple[Any, ...], Any] = {}
_PROGRAMS_KEPT = 256


def special_values(name: str, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The impl of ``igamma``/``igammac``/``igamma_grad_a``: the composite JAX
    lowers the primitive to, staged once per shape and dtype and evaluated."""
    key = (name, a.shape, x.shape, a.dtype)
    program = _PROGRAMS.get(key)
    if program is None:
        run = _widened(_VALUES[name])
        program = trace_to_jaxpr(lambda u, v: [run(u, v)],
                                 [T.ArrayType(a.shape, a.dtype), T.ArrayType(x.shape, x.dtype)])[0]
        if len(_PROGRAMS) >= _PROGRAMS_KEPT:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        _PROGRAMS[key] = program
    consts = [canonical_value(c)[0] for c in program.consts]
    out: np.ndarray = eval_jaxpr_values(program, consts, [a, x])[0]
    return out


# ------------------------------------------------------------- the primitives
# igamma(a, x) = P(a, x), igammac(a, x) = 1 - P(a, x), igamma_grad_a(a, x) =
# dP/da. Typing: the standard binary rule over floating dtypes. Impl: XLA has
# no kernel; JAX lowers each to the composites above, which the impl stages
# and evaluates (``special_values``). JVPs as JAX's, with its Python
# operators: dP/da is igamma_grad_a, dP/dx = x^(a-1) e^-x / Gamma(a);
# igamma_grad_a itself has no derivative rule.

def _special_impl(name: str) -> Callable[..., list[np.ndarray]]:
    def impl(a: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        return [special_values(name, a, x)]
    return impl


def _igamma_jvp_a(g: Any, a: Any, x: Any) -> Any:
    return g * igamma_grad_a_p.bind(a, x)


def _igamma_jvp_x(g: Any, a: Any, x: Any) -> Any:
    log_density = E.neg(x) + (a - full_like(a, 1)) * E.log(x) - E.lgamma(a)
    return g * E.exp(log_density)


def _igammac_jvp_a(g: Any, a: Any, x: Any) -> Any:
    return E.neg(_igamma_jvp_a(g, a, x))


def _igammac_jvp_x(g: Any, a: Any, x: Any) -> Any:
    return E.neg(_igamma_jvp_x(g, a, x))


igamma_p = declare_binary("igamma", FLOAT, _special_impl("igamma"),
                          lowering=lower_fun(_widened(igamma_value)),
                          jvp=defjvp(_igamma_jvp_a, _igamma_jvp_x),
                          transpose=not_applicable("igamma is not linear"))
igamma_grad_a_p = declare_binary(
    "igamma_grad_a", FLOAT, _special_impl("igamma_grad_a"),
    lowering=lower_fun(_widened(igamma_grad_a_value)),
    jvp=not_applicable("JAX defines no derivative of igamma_grad_a"),
    transpose=not_applicable("igamma_grad_a is not linear"))
igammac_p = declare_binary("igammac", FLOAT, _special_impl("igammac"),
                           lowering=lower_fun(_widened(igammac_value)),
                           jvp=defjvp(_igammac_jvp_a, _igammac_jvp_x),
                           transpose=not_applicable("igammac is not linear"))


# ----------------------------------------------------------------- lax functions

def igamma(a: Any, x: Any) -> Any:
    """Elementwise regularized lower incomplete gamma function P(a, x)."""
    return igamma_p.bind(a, x)


def igammac(a: Any, x: Any) -> Any:
    """Elementwise regularized upper incomplete gamma function 1 - P(a, x)."""
    return igammac_p.bind(a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """Elementwise dP(a, x)/da."""
    return igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """Elementwise d(sample)/da for samples x of Gamma(a, 1): staged as the
    composite above (there is no primitive)."""
    return _widened(random_gamma_grad_value)(a, x)


__all__ = ["igamma", "igamma_grad_a", "igammac", "random_gamma_grad"]
