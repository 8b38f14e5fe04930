"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise,
select_n and clamp.

Typing (the standard n-ary rule, unless a primitive says otherwise):
C1 each operand's dtype is in the primitive's accepted class;
C2 operands share one dtype;
C3 shapes broadcast (rank-0 stretches, else equal ranks and per-axis equal
sizes up to 1).
The result is weak iff every operand is weak (also for bool results).

Impl: NumPy, vectorised; float16/bfloat16 are computed in float32 and rounded
once (XLA CPU does the same); integer arithmetic wraps.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from spec import types as T
from spec.interpreter import Eqn, PpContext, pp_eqn_default, pp_hiding
from spec.rules import _elementwise_kit as K
from spec.rules._elementwise_kit import (
    ANY,
    COMPLEX,
    FLOAT,
    INEXACT,
    INT_OR_BOOL,
    INTEGER,
    NUMBER,
    DTypePredicate,
    lifted,
    lifted_to,
    nary_type,
)
from spec.rules._registry import declare, require
from spec.types import ArrayType

Impl = Callable[..., list[np.ndarray]]
Accepted = tuple[str, DTypePredicate]


class RoundingMethod(enum.IntEnum):
    """``round``'s tie rule; an IntEnum so the jaxpr prints ``0``/``1`` as JAX does."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _hide_none(*names: str) -> Any:
    return pp_hiding(when=lambda k, v: k in names and v is None)


def _binary_type(name: str, accepted: Accepted, result: T.DType | None = None) -> Any:
    def typing(x: ArrayType, y: ArrayType, **params: Any) -> list[ArrayType]:
        return nary_type(name, [x, y], accepted, result)
    return typing


def _unary_type(name: str, accepted: Accepted, result: T.DType | None = None) -> Any:
    def typing(x: ArrayType, **params: Any) -> list[ArrayType]:
        return nary_type(name, [x], accepted, result)
    return typing


def _unary(name: str, accepted: Accepted, impl: Impl, *, accuracy: bool = False,
           result: T.DType | None = None) -> Any:
    """Declare a unary primitive; ``accuracy`` ones carry JAX's ``accuracy``
    param, hidden from the jaxpr while it is None."""
    return declare(name, typing=_unary_type(name, accepted, result), impl=impl,
                   pp_rule=_hide_none("accuracy") if accuracy else None)


def _binary(name: str, accepted: Accepted, impl: Impl,
            result: T.DType | None = None) -> Any:
    return declare(name, typing=_binary_type(name, accepted, result), impl=impl)


# ====================================================================== unary

def _neg(x: np.ndarray) -> np.ndarray:
    return np.negative(x)


def _sign(x: np.ndarray) -> np.ndarray:
    if T.is_unsigned_int(x.dtype):
        return np.asarray((x != 0).astype(x.dtype))
    if T.is_complex(x.dtype):
        return K.complex_sign(x)
    if T.is_float(x.dtype):
        # sign(+-0) keeps the zero's sign and sign(nan) is nan, as XLA.
        return np.where((x == 0) | np.isnan(x), x, np.sign(x))
    return np.sign(x)


def _round_afz(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    # x - t is exact, so ties are detected exactly (0.49999997 stays 0).
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _round_impl(x: np.ndarray, *, rounding_method: Any) -> list[np.ndarray]:
    fn = np.rint if int(rounding_method) == RoundingMethod.TO_NEAREST_EVEN else _round_afz
    return lifted(fn)(x)


def _round_type(x: ArrayType, *, rounding_method: Any) -> list[ArrayType]:
    require(isinstance(rounding_method, (int, enum.IntEnum)) and int(rounding_method) in (0, 1),
            "round", "C2", f"rounding_method {rounding_method!r} is not a RoundingMethod "
            "(0 = AWAY_FROM_ZERO, 1 = TO_NEAREST_EVEN)", ValueError)
    return nary_type("round", [x], FLOAT)


def _complex_or(real_fn: Callable[..., Any], complex_fn: Callable[..., np.ndarray]
                ) -> Callable[..., np.ndarray]:
    """A kernel that uses XLA's own formula for complex operands (NumPy's
    complex kernels differ on special values)."""
    def fn(x: np.ndarray) -> np.ndarray:
        return complex_fn(x) if T.is_complex(x.dtype) else np.asarray(real_fn(x))
    return fn


def _log1p(x: np.ndarray) -> np.ndarray:
    if not T.is_complex(x.dtype):
        return np.asarray(np.log1p(x))
    # log|1+z| = log1p(2a + a^2 + b^2) / 2 keeps small |z| accurate, where
    # NumPy's complex log1p loses the real part; evaluated in complex128.
    z = x.astype(np.complex128)
    a, b = z.real, z.imag
    re = 0.5 * np.log1p(2 * a + a * a + b * b)
    out = re + 1j * np.arctan2(b, 1 + a)
    return np.asarray(out.astype(x.dtype))


def _logistic(x: np.ndarray) -> np.ndarray:
    one = np.ones((), x.dtype)
    return np.asarray(one / (one + np.exp(-x)))


def _exp2_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    """JAX lowers exp2 as exp(log(2) * x) with log(2) and the product in x's
    dtype; the rounding of the product is visible in narrow floats."""
    cd = K.compute_dtype(x.dtype)
    ln2 = np.asarray(np.log(2), x.dtype).astype(cd)
    with np.errstate(all="ignore"):
        product = (ln2 * x.astype(cd)).astype(x.dtype)
    return lifted(np.exp)(product)


def _sinh(x: np.ndarray) -> np.ndarray:
    """XLA's real sinh: copysign(e^(|x| - ln 2) - e^(-|x| - ln 2), x) for
    |x| >= 1 (no overflow before the result does), else
    (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2; every step rounds in x's
    (compute) dtype."""
    if T.is_complex(x.dtype):
        return np.asarray(np.sinh(x))
    half = np.asarray(np.log(0.5), x.dtype)
    a = np.abs(x)
    big = np.copysign(np.exp(a + half) - np.exp(-a + half), x)
    em = np.expm1(x)
    small = (em + em / (em + np.ones((), x.dtype))) * np.asarray(0.5, x.dtype)
    return np.asarray(np.where(a >= 1, big, small))


def _cosh(x: np.ndarray) -> np.ndarray:
    """XLA's real cosh: e^(x - ln 2) + e^(-x - ln 2)."""
    if T.is_complex(x.dtype):
        return np.asarray(np.cosh(x))
    half = np.asarray(np.log(0.5), x.dtype)
    return np.asarray(np.exp(x + half) + np.exp(-x + half))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    # One rounding from a wider type: within an ULP of XLA's rsqrt.
    wide = np.complex128 if T.is_complex(x.dtype) else np.float64
    return (1.0 / np.sqrt(x.astype(wide))).astype(x.dtype)


def _abs_type(x: ArrayType) -> list[ArrayType]:
    (out,) = nary_type("abs", [x], K.SIGNED_OR_INEXACT)
    return [out.update(dtype=K.real_dtype(x.dtype))]


def _abs_impl(x: np.ndarray) -> list[np.ndarray]:
    if T.is_complex(x.dtype):
        with np.errstate(all="ignore"):
            return [np.abs(x).astype(K.real_dtype(x.dtype))]
    return lifted(np.abs, ftz=False)(x)


def _part_type(name: str) -> Any:
    def typing(x: ArrayType) -> list[ArrayType]:
        (out,) = nary_type(name, [x], COMPLEX)
        return [out.update(dtype=K.real_dtype(x.dtype))]
    return typing


def _conj_type(x: ArrayType, *, input_dtype: Any) -> list[ArrayType]:
    (out,) = nary_type("conj", [x], K.CONJ_INPUT)
    return [out.update(dtype=K.complex_dtype(x.dtype))]


def _conj_impl(x: np.ndarray, *, input_dtype: Any) -> list[np.ndarray]:
    as_complex = x.astype(K.complex_dtype(x.dtype))
    # A real operand gets a +0 imaginary part (not the -0 of conjugating 0).
    return [np.conj(x) if T.is_complex(x.dtype) else as_complex]


def _pp_conj(eqn: Eqn, ctx: PpContext) -> Any:
    # JAX prints the dtype by its name (``input_dtype=complex64``).
    params = {k: (np.dtype(v).name if k == "input_dtype" else v) for k, v in eqn.params.items()}
    return pp_eqn_default(eqn, ctx, params)


def _lift64_or_float(fn64: Callable[[np.ndarray], np.ndarray],
                     xla_f64: Callable[[np.ndarray], np.ndarray] | None = None) -> Impl:
    """A float64 kernel, rounded to the operand dtype; ``xla_f64`` is XLA's
    own float64 algorithm, used for float64 operands."""
    inner = K.lifted64(fn64, xla_f64)

    def impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
        return inner(x)
    return impl


neg_p = _unary("neg", NUMBER, lifted(_neg, ftz=False))
sign_p = _unary("sign", NUMBER, lifted(_sign))
floor_p = _unary("floor", FLOAT, lifted(np.floor))
ceil_p = _unary("ceil", FLOAT, lifted(np.ceil))
round_p = declare("round", typing=_round_type, impl=_round_impl)
is_finite_p = _unary("is_finite", FLOAT, lifted_to(T.bool_, np.isfinite), result=T.bool_)
exp_p = _unary("exp", INEXACT, lifted(np.exp), accuracy=True)
exp2_p = _unary("exp2", INEXACT, _exp2_impl, accuracy=True)
log_p = _unary("log", INEXACT, lifted(_complex_or(np.log, K.complex_log)), accuracy=True)
log2_p = _unary("log2", INEXACT, lifted(np.log2), accuracy=True)
log1p_p = _unary("log1p", INEXACT, lifted(_log1p), accuracy=True)
expm1_p = _unary("expm1", INEXACT, lifted(np.expm1), accuracy=True)
tanh_p = _unary("tanh", INEXACT, lifted(np.tanh), accuracy=True)
logistic_p = _unary("logistic", INEXACT, lifted(_logistic), accuracy=True)
sin_p = _unary("sin", INEXACT, lifted(_complex_or(np.sin, K.complex_sin)), accuracy=True)
cos_p = _unary("cos", INEXACT, lifted(_complex_or(np.cos, K.complex_cos)), accuracy=True)
tan_p = _unary("tan", INEXACT, lifted(np.tan), accuracy=True)
asin_p = _unary("asin", INEXACT, lifted(np.arcsin))
acos_p = _unary("acos", INEXACT, lifted(np.arccos))
atan_p = _unary("atan", INEXACT, lifted(np.arctan))
sinh_p = _unary("sinh", INEXACT, lifted(_sinh))
cosh_p = _unary("cosh", INEXACT, lifted(_cosh))
asinh_p = _unary("asinh", INEXACT, lifted(np.arcsinh))
acosh_p = _unary("acosh", INEXACT, lifted(np.arccosh))
atanh_p = _unary("atanh", INEXACT, lifted(np.arctanh))
sqrt_p = _unary("sqrt", INEXACT, lifted(_complex_or(np.sqrt, K.complex_sqrt)), accuracy=True)
rsqrt_p = _unary("rsqrt", INEXACT, lifted(_rsqrt), accuracy=True)
cbrt_p = _unary("cbrt", FLOAT, _lift64_or_float(np.cbrt), accuracy=True)
square_p = _unary("square", NUMBER, lifted(lambda x: x * x))
abs_p = declare("abs", typing=_abs_type, impl=_abs_impl)
erf_p = _unary("erf", FLOAT, K.lifted_xla(K.erf32_xla, K.erf64_libm))
erfc_p = _unary("erfc", FLOAT, K.lifted_xla(K.erfc32_xla, K.erfc64_xla), accuracy=True)
erf_inv_p = _unary("erf_inv", FLOAT, K.lifted_xla(K.erf_inv32_xla, K.erf_inv64_xla))
lgamma_p = _unary("lgamma", FLOAT, _lift64_or_float(K.lgamma64, K.lgamma64_xla))
digamma_p = _unary("digamma", FLOAT, K.lifted_xla(K.digamma_xla, K.digamma_xla))
real_p = declare("real", typing=_part_type("real"), impl=lambda x: [np.real(x).copy()])
imag_p = declare("imag", typing=_part_type("imag"), impl=lambda x: [np.imag(x).copy()])
conj_p = declare("conj", typing=_conj_type, impl=_conj_impl, pp_rule=_pp_conj)
not_p = _unary("not", INT_OR_BOOL, lifted(np.invert))
population_count_p = _unary("population_count", INTEGER, lifted(K.population_count))
clz_p = _unary("clz", INTEGER, lifted(K.count_leading_zeros))


# ===================================================================== binary

def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if T.is_int(x.dtype):
        return K.int_div_rem(x, y)[0]
    if T.is_complex(x.dtype):
        return K.complex_div(x, y)
    return np.asarray(np.true_divide(x, y))


def _rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if T.is_int(x.dtype):
        return K.int_div_rem(x, y)[1]
    return np.asarray(np.fmod(x, y))


def _minmax(take_max: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def fn(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if T.is_complex(x.dtype):
            # Lexicographic on (real, imag); when neither wins (ties, nan) the
            # second operand, as XLA's CPU backend does.
            a, b = (x, y) if take_max else (y, x)
            first = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
            return np.where(first, x, y)
        if not T.is_float(x.dtype):
            return np.asarray(np.maximum(x, y) if take_max else np.minimum(x, y))
        out = np.maximum(x, y) if take_max else np.minimum(x, y)  # propagates nan
        # Equal zeros: max prefers +0 and min prefers -0 regardless of order.
        zeros = (x == 0) & (y == 0)
        signed = (x + y) if take_max else -((-x) + (-y))
        return np.asarray(np.where(zeros, signed, out))
    return fn


def _atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    if T.is_complex(x.dtype):
        # atan2 on complex numbers: -i log((x + i y) / sqrt(x^2 + y^2)).
        return np.asarray(-1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y)))
    # float32 through float64: one correctly rounded result (NumPy's float32
    # kernel is off by an ULP or two).
    wide = np.arctan2(y.astype(np.float64), x.astype(np.float64)) if x.dtype == T.float32 \
        else np.arctan2(y, x)
    return np.asarray(wide).astype(x.dtype)


def _nextafter(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.asarray(np.nextafter(x, y))]


def _complex_impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    shape = np.broadcast_shapes(x.shape, y.shape)
    out = np.empty(shape, K.complex_dtype(x.dtype))
    out.real = x  # assigning parts keeps inf/nan components apart
    out.imag = y
    return [out]


def _bool_or_int(fn: Callable[..., Any], bool_fn: Callable[..., Any]) -> Impl:
    def impl(*xs: np.ndarray) -> list[np.ndarray]:
        return [np.asarray((bool_fn if xs[0].dtype == T.bool_ else fn)(*xs))]
    return impl


def _shift(kind: str) -> Impl:
    def impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
        x, y = np.broadcast_arrays(x, y)
        return [K.shift(x, y, kind)]
    return impl


def _comparison(name: str, accepted: Accepted, fn: Callable[..., Any]) -> Any:
    return _binary(name, accepted, lifted_to(T.bool_, fn), result=T.bool_)


def _mul_type(x: ArrayType, y: ArrayType, *, out_dtype: Any = None) -> list[ArrayType]:
    if out_dtype is None:
        return nary_type("mul", [x, y], NUMBER)
    K.check_dtypes("mul", [x, y], NUMBER)
    shape = K.out_shape("mul", [x, y])
    return [ArrayType(shape, np.dtype(out_dtype), K.all_weak([x, y]))]


def _mul_impl(x: np.ndarray, y: np.ndarray, *, out_dtype: Any = None) -> list[np.ndarray]:
    if out_dtype is not None:
        x, y = x.astype(out_dtype), y.astype(out_dtype)
    return lifted(np.multiply)(x, y)


add_p = _binary("add", NUMBER, lifted(np.add))
sub_p = _binary("sub", NUMBER, lifted(np.subtract))
mul_p = declare("mul", typing=_mul_type, impl=_mul_impl, pp_rule=_hide_none("out_dtype"))
div_p = _binary("div", NUMBER, lifted(_div))
rem_p = _binary("rem", K.REAL_NUMBER, lifted(_rem))
max_p = _binary("max", ANY, lifted(_minmax(True)))
min_p = _binary("min", ANY, lifted(_minmax(False)))
atan2_p = _binary("atan2", INEXACT, lifted(_atan2))
nextafter_p = _binary("nextafter", FLOAT, _nextafter)
and_p = _binary("and", INT_OR_BOOL, _bool_or_int(np.bitwise_and, np.logical_and))
or_p = _binary("or", INT_OR_BOOL, _bool_or_int(np.bitwise_or, np.logical_or))
xor_p = _binary("xor", INT_OR_BOOL, _bool_or_int(np.bitwise_xor, np.logical_xor))
shift_left_p = _binary("shift_left", INTEGER, _shift("left"))
shift_right_logical_p = _binary("shift_right_logical", INTEGER, _shift("logical"))
shift_right_arithmetic_p = _binary("shift_right_arithmetic", INTEGER, _shift("arithmetic"))
eq_p = _comparison("eq", ANY, np.equal)
ne_p = _comparison("ne", ANY, np.not_equal)
lt_p = _comparison("lt", K.ORDERED, np.less)
le_p = _comparison("le", K.ORDERED, np.less_equal)
gt_p = _comparison("gt", K.ORDERED, np.greater)
ge_p = _comparison("ge", K.ORDERED, np.greater_equal)


def _complex_type(x: ArrayType, y: ArrayType) -> list[ArrayType]:
    (out,) = nary_type("complex", [x, y], K.COMPLEX_PARTS)
    return [out.update(dtype=K.complex_dtype(x.dtype))]


complex_p = declare("complex", typing=_complex_type, impl=_complex_impl)


# ------------------------------------------------------------------------ pow
# C1 x is floating or complex; C2 y is integer, floating or complex;
# C3 y is an integer or has x's dtype; C4 shapes broadcast. Result: x's dtype.

def _pow_type(x: ArrayType, y: ArrayType) -> list[ArrayType]:
    K.check_dtypes("pow", [x], INEXACT, "C1")
    K.check_dtypes("pow", [y], NUMBER, "C2", first=1)
    require(T.is_int(y.dtype) or x.dtype == y.dtype, "pow", "C3",
            f"an inexact exponent must have the base's dtype, got {x.dtype.name} and "
            f"{y.dtype.name}")
    shape = K.out_shape("pow", [x, y], "C4")
    return [ArrayType(shape, x.dtype, K.all_weak([x, y]))]


def _complex_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA's complex power in polar form (so integer exponents are not exact
    either): |x|^c e^(-d arg x) (cos t + i sin t), t = c arg x + d log|x|,
    for x = a+bi, y = c+di."""
    x, y = np.broadcast_arrays(x, y)
    a, b, c, d = x.real, x.imag, y.real, y.imag
    sq = a * a + b * b
    arg = np.arctan2(b, a)
    coeff = np.power(sq, c / 2) * np.exp(-d * arg)
    angle = c * arg + d * np.log(sq) / 2
    general = np.empty(x.shape, x.dtype)
    general.real = coeff * np.cos(angle)  # set parts: no complex multiply
    general.imag = coeff * np.sin(angle)
    # A zero base: 1 for a zero exponent, 0 for a positive real one, else nan.
    at_zero = np.where(y == 0, 1 + 0j,
                       np.where((c > 0) & (d == 0), 0j, complex(np.nan, np.nan)))
    return np.where(x == 0, at_zero.astype(x.dtype), general)


def _pow_impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    # An integer exponent is converted to the base's dtype first, as JAX's
    # lowering does.
    cd = K.compute_dtype(x.dtype)
    with np.errstate(all="ignore"):
        xs = K.flush_subnormals(x.astype(cd))
        ys = K.flush_subnormals(y.astype(x.dtype).astype(cd))
        if T.is_complex(cd):
            out = _complex_pow(xs, ys)
        else:  # float32 through float64, rounded once
            wide = np.power(xs.astype(np.float64), ys.astype(np.float64))
            out = K.flush_subnormals(wide.astype(cd))
        return [np.asarray(out).astype(x.dtype)]


pow_p = declare("pow", typing=_pow_type, impl=_pow_impl)


# ---------------------------------------------------------------- integer_pow
# C1 x is integer, floating or complex; C2 y is a Python int; C3 an integer
# x needs y >= 0.

def _integer_pow_type(x: ArrayType, *, y: Any) -> list[ArrayType]:
    require(isinstance(y, (int, np.integer)) and not isinstance(y, bool), "integer_pow", "C2",
            f"exponent y={y!r} must be an integer")
    out = nary_type("integer_pow", [x], NUMBER)
    require(not (y < 0 and T.is_int(x.dtype)), "integer_pow", "C3",
            f"integers cannot be raised to negative powers, got integer_pow({x}, {y})")
    return out


def _power_by_squaring(x: np.ndarray, y: int, mul: Callable[..., np.ndarray]
                       ) -> np.ndarray:
    """The multiplication sequence of JAX's lowering: binary exponentiation
    (y = 2 and 3 as x*x and (x*x)*x), then 1/acc for negative y."""
    if y == 0:
        return np.ones_like(x)
    n = -y if y < 0 else y
    acc: np.ndarray | None = None
    base = x
    while n > 0:  # log2(y) whole-array steps
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n > 0:
            base = mul(base, base)
    assert acc is not None
    return lifted(np.true_divide)(np.ones_like(acc), acc)[0] if y < 0 else acc


def _integer_pow_impl(x: np.ndarray, *, y: int) -> list[np.ndarray]:
    # Every multiplication rounds to x's dtype (visible in float16: x**3
    # overflows before 1/x**3 is taken).
    def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return lifted(np.multiply)(a, b)[0]
    with np.errstate(all="ignore"):
        return [np.asarray(_power_by_squaring(x, int(y), mul))]


integer_pow_p = declare("integer_pow", typing=_integer_pow_type, impl=_integer_pow_impl)


# ------------------------------------------------------------------- select_n
# C1 at least one case; C2 `which` is bool or integer; C3 bool `which` takes at
# most 2 cases; C4 cases share one dtype; C5 cases share one shape; C6 `which`
# is rank-0 or has the cases' shape. Result: the cases' type, weak iff all
# cases are weak. Out-of-range integer `which` clamps to [0, n-1] (XLA's
# lowering is a binary tree of `which < k` selects).

def _select_n_type(which: ArrayType, *cases: ArrayType) -> list[ArrayType]:
    name = "select_n"
    require(len(cases) > 0, name, "C1", "select_n needs at least one case", ValueError)
    require(which.dtype == T.bool_ or T.is_int(which.dtype), name, "C2",
            f"`which` must be boolean or integer, got {which.dtype.name}")
    require(not (which.dtype == T.bool_ and len(cases) > 2), name, "C3",
            f"a boolean `which` selects between at most 2 cases, got {len(cases)}")
    K.check_same_dtypes(name, cases, "C4")
    shapes = [c.shape for c in cases]
    require(all(s == shapes[0] for s in shapes), name, "C5",
            f"cases must have the same shapes, got {shapes}")
    require(not which.shape or which.shape == shapes[0], name, "C6",
            f"`which` must be scalar or have the cases' shape {shapes[0]}, got {which.shape}")
    return [ArrayType(shapes[0], cases[0].dtype, K.all_weak(cases))]


def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> list[np.ndarray]:
    shape = cases[0].shape
    if len(cases) == 1:
        return [cases[0].copy()]
    idx = np.clip(which.astype(np.int64), 0, len(cases) - 1)
    stacked = np.stack(cases)
    picked = np.take_along_axis(stacked, np.broadcast_to(idx, shape)[None], axis=0)
    return [picked[0]]


select_n_p = declare("select_n", typing=_select_n_type, impl=_select_n_impl)


# ---------------------------------------------------------------------- clamp
# C1 operands share one dtype (any dtype); C2 min is rank-0 or has operand's
# shape; C3 max likewise. Result: operand's shape and dtype, weak iff all weak.

def _clamp_type(lo: ArrayType, x: ArrayType, hi: ArrayType) -> list[ArrayType]:
    name = "clamp"
    K.check_same_dtypes(name, [lo, x, hi], "C1")
    require(not lo.shape or lo.shape == x.shape, name, "C2",
            f"min must be scalar or have the operand's shape, got min.shape={lo.shape}, "
            f"operand.shape={x.shape}")
    require(not hi.shape or hi.shape == x.shape, name, "C3",
            f"max must be scalar or have the operand's shape, got max.shape={hi.shape}, "
            f"operand.shape={x.shape}")
    return [ArrayType(x.shape, x.dtype, K.all_weak([lo, x, hi]))]


def _clamp_impl(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> list[np.ndarray]:
    # clamp(lo, x, hi) = min(max(x, lo), hi), with max/min's nan and zero rules.
    upper = max_p.impl(x, lo)[0]
    return [np.broadcast_to(min_p.impl(upper, hi)[0], x.shape).copy()]


clamp_p = declare("clamp", typing=_clamp_type, impl=_clamp_impl)


# ---------------------------------------------------------- Ldexp and Frexp
# jnp.ldexp / jnp.frexp bind these two primitives (JAX 0.12 names them after
# their classes, capitalised). They work on the bit fields of the float:
# subnormal operands read as signed zero, results that would be subnormal are
# signed zero, and too-large results are signed infinity (XLA's
# flush-to-zero semantics, made explicit so every dtype shares them).
# Ldexp: C1 x1 is floating; C2 x2 is integer; C3 x1 and x2 have one shape;
# result: x1's dtype and shape, strong. Frexp: C1 x is floating; results:
# (mantissa of x's dtype, int32 exponent), strong, of x's shape.

def _float_fields(x: np.ndarray) -> tuple[Any, ...]:
    info = ml_dtypes.finfo(x.dtype)  # type: ignore[no-untyped-call]
    bits, nexp, nmant = int(info.bits), int(info.nexp), int(info.nmant)
    ut = np.dtype(f"u{bits // 8}")
    u = x.view(ut)
    exp_mask = ut.type((1 << nexp) - 1)
    sign = u & ut.type(1 << (bits - 1))
    exp = (u >> ut.type(nmant)) & exp_mask
    mant = u & ut.type((1 << nmant) - 1)
    return info, ut, u, sign, exp, mant, exp_mask, nmant


def _ldexp_impl(x1: np.ndarray, x2: np.ndarray, *, x1_aval: Any, x2_aval: Any
                ) -> list[np.ndarray]:
    info, ut, u, sign, exp, mant, exp_mask, nmant = _float_fields(x1)
    max_shift = 1 << (int(info.nexp) + 1)
    # Clamp the shift first: anything this large over- or underflows anyway,
    # and the clamp keeps the exponent sum from wrapping.
    if T.is_unsigned_int(x2.dtype):
        shift = np.minimum(x2.astype(np.uint64), np.uint64(max_shift)).astype(np.int32)
    else:
        shift = np.clip(x2.astype(np.int64), -max_shift, max_shift).astype(np.int32)
    new_exp = exp.astype(np.int32) + shift
    with np.errstate(all="ignore"):
        normal = sign | (new_exp.astype(ut) << ut.type(nmant)) | mant
    inf_bits = sign | (exp_mask << ut.type(nmant))
    scaled = np.where(new_exp <= 0, sign, np.where(new_exp >= int(exp_mask), inf_bits, normal))
    out = np.where(exp == exp_mask, u, np.where(exp == 0, sign, scaled))
    return [np.asarray(out, ut).view(x1.dtype)]


def _frexp_impl(x: np.ndarray, *, x_aval: Any) -> list[np.ndarray]:
    info, ut, u, sign, exp, mant, exp_mask, nmant = _float_fields(x)
    bias = int(info.maxexp) - 1
    special = (exp == exp_mask) | (exp == 0)
    halved = sign | (ut.type(bias - 1) << ut.type(nmant)) | mant  # |m| in [1/2, 1)
    m = np.where(exp == exp_mask, u, np.where(exp == 0, sign, halved))
    e = np.where(special, np.int32(0), exp.astype(np.int32) - np.int32(bias - 1))
    return [np.asarray(m, ut).view(x.dtype), np.asarray(e, np.int32)]


def _ldexp_type(x1: ArrayType, x2: ArrayType, *, x1_aval: Any, x2_aval: Any
                ) -> list[ArrayType]:
    K.check_dtypes("Ldexp", [x1], FLOAT, "C1")
    K.check_dtypes("Ldexp", [x2], INTEGER, "C2", first=1)
    require(x1.shape == x2.shape, "Ldexp", "C3",
            f"operands must have one shape, got {x1.shape} and {x2.shape}", ValueError)
    return [ArrayType(x1.shape, x1.dtype, False)]


def _frexp_type(x: ArrayType, *, x_aval: Any) -> list[ArrayType]:
    K.check_dtypes("Frexp", [x], FLOAT, "C1")
    return [ArrayType(x.shape, x.dtype, False), ArrayType(x.shape, T.int32, False)]


def _pp_avals(eqn: Eqn, ctx: PpContext) -> Any:
    # JAX prints the aval params in their short form (``f32[3]``).
    params = {k: (v.str_short() if isinstance(v, ArrayType) else v)
              for k, v in eqn.params.items()}
    return pp_eqn_default(eqn, ctx, params)


ldexp_p = declare("Ldexp", typing=_ldexp_type, impl=_ldexp_impl, pp_rule=_pp_avals)
frexp_p = declare("Frexp", typing=_frexp_type, impl=_frexp_impl, pp_rule=_pp_avals,
                  multiple_results=True)


__all__ = [n for n in dir() if n.endswith("_p")] + ["RoundingMethod"]
