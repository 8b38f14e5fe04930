"""lax wrappers for elementwise primitives, with JAX's signatures.

The operands of a lax function must already share a dtype (the jnp functions
promote); Python scalars are accepted and become weak-typed arrays of the
default dtype of their kind, exactly as when JAX binds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import Primitive, Tracer, canonical_aval_of
from spec._src.lax import elementwise as E
from spec._src.lax.elementwise import AccuracyMode, RoundingMethod, const_like
from spec._src.lax.shaping import convert_element_type, full_like

Fn = Callable[..., Any]


def _plain_unary(prim: Primitive, name: str, doc: str) -> Fn:
    def fn(x: Any) -> Any:
        return prim.bind(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _accuracy_unary(prim: Primitive, name: str, doc: str) -> Fn:
    def fn(x: Any, *, accuracy: Any = None) -> Any:
        return prim.bind(x, accuracy=accuracy)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(prim: Primitive, name: str, doc: str) -> Fn:
    def fn(x: Any, y: Any) -> Any:
        return prim.bind(x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


neg = _plain_unary(E.neg_p, "neg", "Elementwise -x (integers wrap).")
sign = _plain_unary(E.sign_p, "sign", "Elementwise sign: -1, 0 or 1 (x/|x| for complex).")
floor = _plain_unary(E.floor_p, "floor", "Elementwise floor.")
ceil = _plain_unary(E.ceil_p, "ceil", "Elementwise ceiling.")
is_finite = _plain_unary(E.is_finite_p, "is_finite", "Elementwise: neither inf nor nan.")
exp = _accuracy_unary(E.exp_p, "exp", "Elementwise e**x.")
exp2 = _accuracy_unary(E.exp2_p, "exp2", "Elementwise 2**x.")
log = _accuracy_unary(E.log_p, "log", "Elementwise natural logarithm.")
log2 = _accuracy_unary(E.log2_p, "log2", "Elementwise base-2 logarithm.")
log1p = _accuracy_unary(E.log1p_p, "log1p", "Elementwise log(1 + x).")
expm1 = _accuracy_unary(E.expm1_p, "expm1", "Elementwise e**x - 1.")
tanh = _accuracy_unary(E.tanh_p, "tanh", "Elementwise hyperbolic tangent.")
logistic = _accuracy_unary(E.logistic_p, "logistic", "Elementwise 1 / (1 + e**-x).")
sin = _accuracy_unary(E.sin_p, "sin", "Elementwise sine.")
cos = _accuracy_unary(E.cos_p, "cos", "Elementwise cosine.")
tan = _accuracy_unary(E.tan_p, "tan", "Elementwise tangent.")
asin = _plain_unary(E.asin_p, "asin", "Elementwise arc sine.")
acos = _plain_unary(E.acos_p, "acos", "Elementwise arc cosine.")
atan = _plain_unary(E.atan_p, "atan", "Elementwise arc tangent.")
sinh = _plain_unary(E.sinh_p, "sinh", "Elementwise hyperbolic sine.")
cosh = _plain_unary(E.cosh_p, "cosh", "Elementwise hyperbolic cosine.")
asinh = _plain_unary(E.asinh_p, "asinh", "Elementwise inverse hyperbolic sine.")
acosh = _plain_unary(E.acosh_p, "acosh", "Elementwise inverse hyperbolic cosine.")
atanh = _plain_unary(E.atanh_p, "atanh", "Elementwise inverse hyperbolic tangent.")
sqrt = _accuracy_unary(E.sqrt_p, "sqrt", "Elementwise square root.")
rsqrt = _accuracy_unary(E.rsqrt_p, "rsqrt", "Elementwise 1 / sqrt(x).")
cbrt = _accuracy_unary(E.cbrt_p, "cbrt", "Elementwise cube root.")
square = _plain_unary(E.square_p, "square", "Elementwise x * x.")
abs = _plain_unary(E.abs_p, "abs", "Elementwise |x|; complex operands give their real dtype.")
erf = _plain_unary(E.erf_p, "erf", "Elementwise error function.")
erfc = _accuracy_unary(E.erfc_p, "erfc", "Elementwise complementary error function.")
erf_inv = _plain_unary(E.erf_inv_p, "erf_inv", "Elementwise inverse error function.")
lgamma = _plain_unary(E.lgamma_p, "lgamma", "Elementwise log |Gamma(x)|.")
digamma = _plain_unary(E.digamma_p, "digamma", "Elementwise digamma (d/dx lgamma).")
real = _plain_unary(E.real_p, "real", "Real part of a complex array.")
imag = _plain_unary(E.imag_p, "imag", "Imaginary part of a complex array.")
bitwise_not = _plain_unary(E.not_p, "bitwise_not", "Elementwise NOT (logical for bool).")
population_count = _plain_unary(E.population_count_p, "population_count",
                                "Elementwise count of set bits.")
clz = _plain_unary(E.clz_p, "clz", "Elementwise count of leading zero bits.")
one_minus_square = _plain_unary(
    E.one_minus_square_p, "one_minus_square",
    "Elementwise 1 - x**2, evaluated as (1 + x) * (1 - x); its derivative is -2x.")

add = _binary(E.add_p, "add", "Elementwise x + y (operands of one dtype; jnp.add promotes).")
sub = _binary(E.sub_p, "sub", "Elementwise x - y.")
div = _binary(E.div_p, "div", "Elementwise x / y; integers truncate toward zero.")
rem = _binary(E.rem_p, "rem", "Elementwise remainder with the dividend's sign (C fmod).")
pow = _binary(E.pow_p, "pow", "Elementwise x ** y; y may be an integer array.")
max = _binary(E.max_p, "max", "Elementwise maximum; nan propagates.")
min = _binary(E.min_p, "min", "Elementwise minimum; nan propagates.")
atan2 = _binary(E.atan2_p, "atan2", "Elementwise arc tangent of x / y.")
bitwise_and = _binary(E.and_p, "bitwise_and", "Elementwise AND.")
bitwise_or = _binary(E.or_p, "bitwise_or", "Elementwise OR.")
bitwise_xor = _binary(E.xor_p, "bitwise_xor", "Elementwise XOR.")
shift_left = _binary(E.shift_left_p, "shift_left", "Elementwise x << y.")
shift_right_logical = _binary(E.shift_right_logical_p, "shift_right_logical",
                              "Elementwise logical x >> y.")
shift_right_arithmetic = _binary(E.shift_right_arithmetic_p, "shift_right_arithmetic",
                                 "Elementwise arithmetic x >> y.")
eq = _binary(E.eq_p, "eq", "Elementwise x == y.")
ne = _binary(E.ne_p, "ne", "Elementwise x != y.")
lt = _binary(E.lt_p, "lt", "Elementwise x < y.")
le = _binary(E.le_p, "le", "Elementwise x <= y.")
gt = _binary(E.gt_p, "gt", "Elementwise x > y.")
ge = _binary(E.ge_p, "ge", "Elementwise x >= y.")
complex = _binary(E.complex_p, "complex", "Elementwise x + i y from float32/float64 parts.")
polygamma = _binary(E.polygamma_p, "polygamma", "Elementwise polygamma psi^(m)(x).")


def reciprocal(x: Any) -> Any:
    """Elementwise 1 / x (``integer_pow(x, -1)``)."""
    return integer_pow(x, -1)


def polynomial(x: Any, coeffs: Any, *, unroll: int | None = None) -> Any:
    """c0 + x (c1 + x (c2 + ...)) for ``coeffs = (c0, c1, ..., cN)`` by
    Horner's rule. Concrete scalar coefficients become constants of x's
    dtype; others are converted to it. No coefficients give zeros like x;
    one gives that coefficient broadcast to the result shape."""
    cs = tuple(coeffs)
    dtype = canonical_aval_of(x).dtype
    args = [const_like(x, c) if not isinstance(c, Tracer) and np.ndim(c) == 0
            else convert_element_type(c, dtype) for c in cs]
    if not args:
        return full_like(x, 0)
    if len(args) == 1:
        shape = np.broadcast_shapes(canonical_aval_of(x).shape, canonical_aval_of(args[0]).shape)
        return E._maybe_broadcast(tuple(shape), args[0])
    params = {} if unroll is None else {"unroll": unroll}
    return E.polynomial_p.bind(x, *args, **params)


def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable float after x1 in the direction of x2."""
    return E.nextafter_p.bind(x1, x2)


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Round to an integral value; ties away from zero (0) or to even (1)."""
    try:
        method = RoundingMethod(rounding_method)
    except ValueError:
        raise ValueError(f"round C2: {rounding_method!r} is not a valid RoundingMethod "
                         "(0 = AWAY_FROM_ZERO, 1 = TO_NEAREST_EVEN)") from None
    return E.round_p.bind(x, rounding_method=method)


def conj(x: Any) -> Any:
    """Complex conjugate; float32/float64 operands become complex."""
    return E.conj_p.bind(x, input_dtype=canonical_aval_of(x).dtype)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """Elementwise x * y; ``out_dtype`` names a result dtype to compute in."""
    dt = None if out_dtype is None else T.to_dtype(out_dtype, "mul")
    return E.mul_p.bind(x, y, out_dtype=dt)


def integer_pow(x: Any, y: int) -> Any:
    """x ** y for a static Python integer y, by repeated squaring."""
    return E.integer_pow_p.bind(x, y=y)


def select_n(which: Any, *cases: Any) -> Any:
    """Pick ``cases[which]`` elementwise (bool `which`: False->0, True->1)."""
    if not cases:
        raise ValueError("select_n C1: select_n() must have at least one case")
    return E.select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` else ``on_false``."""
    return E.select_n_p.bind(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise min(max(x, min), max); min/max rank-0 or of x's shape."""
    return E.clamp_p.bind(min, x, max)


__all__ = [
    "AccuracyMode", "RoundingMethod", "abs", "acos", "acosh", "add", "asin", "asinh", "atan",
    "atan2", "atanh",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clamp", "clz",
    "complex", "conj", "cos", "cosh", "digamma", "div", "eq", "erf", "erf_inv", "erfc", "exp",
    "exp2", "expm1", "floor", "ge", "gt", "imag", "integer_pow", "is_finite", "le", "lgamma",
    "log", "log1p", "log2", "logistic", "lt", "max", "min", "mul", "ne", "neg", "nextafter",
    "one_minus_square", "polygamma", "polynomial", "population_count", "pow", "real",
    "reciprocal", "rem", "round", "rsqrt", "select", "select_n",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh",
    "sqrt", "square", "sub", "tan", "tanh",
]
