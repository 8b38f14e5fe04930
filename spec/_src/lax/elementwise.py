"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise,
select_n and clamp; and their lax wrappers, which the rules call.

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

import builtins
import enum
from collections.abc import Callable, Sequence
from typing import Any, cast

import ml_dtypes
import numpy as np

from spec._src.core.canonical import canonical_integral
from spec._src.core import types as T
from spec._src.lowering import rules as LR
from spec._src.lowering.emitter import LoweringContext, tensor_type
from spec._src.lowering import transcendental as LT
from spec._src.interpreters.ad_util import (
    Zero,
    add_tangents,
    ct_aval,
    defjvp,
    defjvp2,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
    unbroadcast,
    zero_jvp,
)
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    broadcasting,
    moveaxis,
    vectorized,
)
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import (
    Eqn,
    EvalTrace,
    Jaxpr,
    PpContext,
    Primitive,
    Tracer,
    canonical_aval_of,
    current_trace,
    not_applicable,
    pp_eqn_default,
    pp_hiding,
    trace_to_jaxpr,
)
from spec._src.lax import elementwise_kit as K
from spec._src.lax import elementwise_math as M
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import arithmetic
from spec._src.lax.elementwise_kit import (
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
from spec._src.core.registry import declare, primitive, require
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import DEFAULT_PP, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.core.prng import words
from spec._src.lax import ad_prims
from spec._src.lax import calls as _calls
from spec._src.lax.gather_numbers import GatherDimensionNumbers, GatherScatterMode
from spec._src.lax.shaping import (
    asarray,
    bitcast_convert_type,
    broadcast,
    broadcast_in_dim,
    convert_element_type,
    full_like,
    reshape,
)

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


# ================================================================ sharding
# Every primitive of the family gets its sharding section from one table
# (``_declare``): the operands are zipped per dimension
# (spec._src.lax.sharding_kit.elementwise); what differs is how unreduced
# operands are treated (SPEC.md section 14).

def _select_n_parts(mesh: Any, which: ArrayType, *cases: ArrayType) -> list[tuple[Any, ...]]:
    """All cases alike; a non-scalar predicate partitioned as they are.
    Types on the empty mesh (made outside any mesh) count as unsharded."""
    sharded = [c for c in cases if c.sharding is not None and not c.sharding.mesh.empty]
    if not sharded:
        return [SK.parts(cases[0])]
    first = sharded[0].sharding
    if any(c.sharding != first for c in sharded[1:]):
        shown = ", ".join(str(c.sharding) for c in cases)
        raise ShardingTypeError(f"select cases must have the same shardings, got [{shown}].")
    if which.shape and which.sharding is not None and not which.sharding.mesh.empty and (
            which.sharding.mesh != first.mesh or SK.parts(which) != SK.parts(sharded[0])):
        raise ShardingTypeError(
            "select `which` must be scalar or have the same sharding as cases, got `which`"
            f" sharding {which.sharding} but case sharding {cases[0].sharding}.")
    return [SK.parts(sharded[0])]


def _select_n_ur(which: ArrayType, *cases: ArrayType) -> SK.UR:
    sharded = [c for c in cases if c.sharding is not None and not c.sharding.mesh.empty]
    return SK.linear_unary(sharded[0]) if sharded else (frozenset(), frozenset(), None)


_SELECT_N_SECTION = SK.section("select_n", _select_n_parts, _select_n_ur)


def _select_n_sharding(which: ArrayType, *cases: ArrayType, **params: Any) -> list[Any]:
    """As JAX: when every case was typed outside any mesh, the predicate's
    sharding is not consulted and the result is replicated over the context's
    mesh (a constant picked by a mask computed from sharded data)."""
    if not any(c.sharding is not None and not c.sharding.mesh.empty for c in cases):
        which = which.update(sharding=None)
    shardings: list[Any] = _SELECT_N_SECTION(which, *cases, **params)
    return shardings


_UR_KIND = {"neg": "linear", "add": "add", "sub": "add", "mul": "mul", "div": "div",
            "integer_pow": "none", "Frexp": "none", "Ldexp": "none"}


# The elementwise primitives that are one StableHLO op each, by primitive name.
_STABLEHLO_OPS = {
    "neg": "negate", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "is_finite": "is_finite", "exp": "exponential", "log": "log", "tanh": "tanh",
    "logistic": "logistic", "sin": "sine", "cos": "cosine", "tan": "tan", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "cbrt": "cbrt", "real": "real", "imag": "imag", "complex": "complex",
    "abs": "abs", "not": "not",
    "population_count": "popcnt", "clz": "count_leading_zeros", "expm1":
    "exponential_minus_one", "log1p": "log_plus_one", "add": "add", "sub": "subtract",
    "mul": "multiply", "div": "divide", "rem": "remainder", "max": "maximum",
    "min": "minimum", "and": "and", "or": "or", "xor": "xor", "shift_left": "shift_left",
    "shift_right_logical": "shift_right_logical",
    "shift_right_arithmetic": "shift_right_arithmetic", "atan2": "atan2",
}
_STABLEHLO_OPS = {k: "stablehlo." + v for k, v in _STABLEHLO_OPS.items()}

# The elementwise primitives JAX lowers to one CHLO op each, by primitive name.
_CHLO_OPS = {
    "acos": "acos", "acosh": "acosh", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
    "cosh": "cosh", "sinh": "sinh", "digamma": "digamma", "erf": "erf", "erf_inv": "erf_inv",
    "erfc": "erfc", "polygamma": "polygamma", "nextafter": "next_after",
}


def _declare(name: str, *, multiple_results: bool = False, **fields: Any) -> Primitive:
    """Declare a primitive of the family: unless given, its sharding section
    zips the operands per dimension (``_UR_KIND`` says how it treats
    unreduced operands) and its per-device program runs the impl on blocks
    aligned to the result's (``per_device.aligned``)."""
    if "sharding" not in fields:
        fields["sharding"] = SK.elementwise(name, ur=_UR_KIND.get(name, "nonlinear"),
                                            n_out=2 if multiple_results else 1)
    fields.setdefault("per_device", from_primitive(PD.aligned))
    if name in _STABLEHLO_OPS:
        fields.setdefault("lowering", LR.elementwise(_STABLEHLO_OPS[name]))
    if name in _CHLO_OPS:
        fields.setdefault("lowering", LT.chlo(_CHLO_OPS[name]))
    return declare(name, multiple_results=multiple_results, **fields)


def _unary_type(name: str, accepted: Accepted, result: T.DType | None = None) -> Any:
    def typing(x: ArrayType, **params: Any) -> list[ArrayType]:
        return nary_type(name, [x], accepted, result)
    return typing


def _unary(name: str, accepted: Accepted, impl: Impl, *, accuracy: bool = False,
           result: T.DType | None = None, **sections: Any) -> Any:
    """Declare a unary primitive; ``accuracy`` ones carry JAX's ``accuracy``
    param, hidden from the jaxpr while it is None. Batching: elementwise, the
    output is batched where the operand is."""
    sections.setdefault("batch", vectorized())
    return _declare(name, typing=_unary_type(name, accepted, result), impl=impl,
                   pp_rule=_hide_none("accuracy") if accuracy else DEFAULT_PP, **sections)


def declare_binary(name: str, accepted: Accepted, impl: Impl,
                   result: T.DType | None = None, **sections: Any) -> Any:
    """Declare a binary primitive. Batching: lax's implicit broadcasting
    (``batching.broadcasting``)."""
    sections.setdefault("batch", broadcasting())
    return _declare(name, typing=_binary_type(name, accepted, result), impl=impl, **sections)


class AccuracyMode(enum.Enum):
    """The ``accuracy`` modes of transcendental functions (printed as
    ``AccuracyMode.HIGHEST``, as JAX prints them)."""

    HIGHEST = 1
    DEFAULT = 2


# ================================================================== autodiff
# JVP rules use JAX 0.12's formulas and emit the same primitives in the same
# order, with constants made as JAX makes them (``const_like``), so that the
# jaxprs of jvp/grad programs print as JAX's do. Primal-only subexpressions
# never read a tangent, so linearize keeps them on the primal side.
# Where JAX's rules write Python operators (``a * b``) these do too: on
# arrays and tracers they are the jnp functions (array methods), whose
# promotion may convert weak operands where the lax functions would not.

_SCALAR_TYPES: dict[str, type] = {"b": bool, "i": int, "u": int, "f": float, "c": builtins.complex}


def _aval(x: Any) -> ArrayType:
    return canonical_aval_of(x)


def _is_complex_value(x: Any) -> bool:
    return T.is_complex(_aval(x).dtype)


def const_like(example: Any, val: Any) -> Any:
    """A constant ``val`` of ``example``'s dtype, as JAX's rules make it: a
    weak Python scalar when ``example`` is a weak rank-0 value or a Python
    scalar (so it stays weak in arithmetic), else a strong NumPy scalar
    (a literal in jaxprs)."""
    aval = _aval(example)
    if T.is_python_scalar(example) or (aval.weak_type and not aval.shape):
        dt = aval.dtype
        kind = "f" if T.is_float(dt) else ("i" if T.is_int(dt) else dt.kind)
        py = _SCALAR_TYPES[kind](val)
        return py if T.python_scalar_dtype(type(py)) == dt else np.array(py, dt)
    return np.array(val, aval.dtype)


def _full_like(x: Any, val: Any, *, shape: Any = None, dtype: Any = None) -> Any:
    return full_like(x, val, dtype=dtype, shape=shape)


def _zeros(x: Any) -> Any:
    return _full_like(x, 0)


def _ones(x: Any) -> Any:
    return _full_like(x, 1)


def _zero(x: Any) -> Any:
    """A rank-0 zero like ``x`` (weak if ``x`` is)."""
    return _full_like(x, 0, shape=())


def _one(x: Any) -> Any:
    return _full_like(x, 1, shape=())


def _replace_zero(x: Any) -> Any:
    """``x`` with its zeros replaced by ones (a safe divisor or log operand)."""
    return select(eq(x, const_like(x, 0)), _ones(x), x)


def _maybe_broadcast(shape: T.Shape, x: Any) -> Any:
    """``x`` broadcast to ``shape`` (axes of equal size are kept, the others
    squeezed first), as JAX's rules broadcast a tangent."""
    x_shape = _aval(x).shape
    if x_shape == tuple(shape):
        return x
    if not x_shape:
        return broadcast_in_dim(x, shape, ())
    dims = tuple(i for i, (a, b) in enumerate(zip(x_shape, shape)) if a == b)
    return broadcast_in_dim(reshape(x, tuple(x_shape[i] for i in dims)), shape, dims)


def _out_shape(*xs: Any) -> T.Shape:
    return tuple(np.broadcast_shapes(*(_aval(x).shape for x in xs)))


def _balanced_cmp(x: Any, y: Any) -> Any:
    """1 where x > y, 1/2 where x == y, 0 elsewhere (also nan): max and min
    split the derivative of a tie evenly between the operands."""
    gt_mask = gt(x, y)
    eq_mask = eq(x, y)
    dt = _aval(x).dtype
    ones = _full_like(gt_mask, 1, dtype=dt)
    zeros = _full_like(gt_mask, 0, dtype=dt)
    half = _full_like(gt_mask, 0.5, dtype=dt)
    return select(gt_mask, ones, select(eq_mask, half, zeros))


def _stop_gradient(x: Any) -> Any:
    return ad_prims.stop_gradient_p.bind(x)


def _not_linear(name: str) -> Any:
    return not_applicable(f"{name} is not linear")


def _zero_deriv(name: str, why: str = "its output is integer or boolean") -> dict[str, Any]:
    """The sections of a primitive whose derivative is zero everywhere
    (piecewise constant, or integer/boolean valued)."""
    return {"jvp": zero_jvp(), "transpose": not_applicable(f"{name} is not linear ({why})")}


def _unary_jvp(name: str, fn: Callable[..., Any], *, with_out: bool = False) -> dict[str, Any]:
    """Sections of a non-linear unary primitive from its derivative rule
    ``fn(g, x, **params)`` (or ``fn(g, ans, x, **params)`` with ``with_out``)."""
    return {"jvp": defjvp2(fn) if with_out else defjvp(fn), "transpose": _not_linear(name)}


# ---------------------------------------------------------------- unary rules

def _sign_jvp(g: Any, ans: Any, x: Any) -> Any:
    """Zero on the real line; for complex x, sign(x) = e^(i theta) moves by
    i sign(x) dtheta with dtheta = Im(conj(sign x) dx) / |x|."""
    if not _is_complex_value(x):
        return Zero.from_primal_value(ans)
    dtheta = div(imag(mul(conj(ans), g)), _replace_zero(abs(x)))
    return mul(ans, complex(_zeros(dtheta), dtheta))


def _tanh_jvp(g: Any, ans: Any, x: Any, *, accuracy: Any) -> Any:
    if accuracy is AccuracyMode.HIGHEST:
        # 1 - tanh^2 = 4 logistic(2x) logistic(-2x), without cancellation.
        return mul(g, mul(const_like(x, 4), mul(
            logistic(mul(const_like(x, 2), x), accuracy=accuracy),
            logistic(mul(const_like(x, -2), x), accuracy=accuracy))))
    return mul(g, one_minus_square(ans))


def _logistic_jvp(g: Any, ans: Any, x: Any, *, accuracy: Any) -> Any:
    if accuracy is AccuracyMode.HIGHEST:
        return mul(g, mul(ans, logistic(neg(x))))
    return mul(g, mul(ans, sub(_one(ans), ans)))


def _asinh_jvp(g: Any, x: Any) -> Any:
    """g / sqrt(x^2 + 1), evaluated on x scaled by a power of two (held
    constant by stop_gradient) so that x^2 neither overflows nor loses the
    1; complex x keeps the signs of zeros on the branch cuts."""
    finfo = ml_dtypes.finfo(K.real_dtype(_aval(x).dtype))  # type: ignore[no-untyped-call]
    inv_t = 2.0 ** -(int(finfo.maxexp) // 2 - 2)
    max_scale = 2.0 ** (int(finfo.maxexp) // 2 + 2)
    if not _is_complex_value(x):
        scale = _stop_gradient(clamp(_one(x), mul(abs(x), const_like(x, inv_t)),
                                         const_like(x, max_scale)))
        inv_scale = reciprocal(scale)
        x_scaled = mul(x, inv_scale)
        deriv = mul(inv_scale, rsqrt(add(square(x_scaled),
                                                      square(inv_scale))))
        return mul(g, deriv)
    rx, ix = real(x), imag(x)
    max_abs = max(abs(rx), abs(ix))
    scale = _stop_gradient(clamp(_one(rx), mul(max_abs, const_like(rx, inv_t)),
                                     const_like(rx, max_scale)))
    inv_scale = reciprocal(scale)
    rx_s = mul(rx, inv_scale)
    ix_s = mul(ix, inv_scale)
    re_w = add(square(rx_s), one_minus_square(ix_s))
    im_w = mul(const_like(rx_s, 2), mul(rx_s, ix_s))
    r = rsqrt(complex(re_w, im_w))
    deriv = select(eq(max_abs, const_like(rx, np.inf)), _zeros(x),
                       complex(mul(real(r), inv_scale),
                                   mul(imag(r), inv_scale)))
    return mul(g, deriv)


def _abs_jvp(g: Any, ans: Any, x: Any) -> Any:
    """sign(x) g for real x (the + side at 0); Re(conj(x) g) / |x| for complex."""
    if _is_complex_value(x):
        dt = _aval(x).dtype
        return real(mul(g, div(conj(x), _replace_zero(
            convert_element_type(ans, dt)))))
    return select(ge(x, _zero(x)), g, neg(g))


def _split_square(x: Any) -> tuple[Any, Any]:
    """x^2 as s_hi + s_lo with s_hi = x_hi^2 exact (x_hi: x with the low half
    of its mantissa cleared)."""
    if _aval(x).dtype == T.float32:
        x_u = bitcast_convert_type(x, np.uint32)
        x_hi = bitcast_convert_type(x_u & np.uint32(0xFFFFF000), np.float32)
    else:
        x_u = bitcast_convert_type(x, np.uint64)
        x_hi = bitcast_convert_type(x_u & const_like(x_u, 0xFFFFFFFFF8000000), np.float64)
    x_lo = x - x_hi
    return x_hi * x_hi, x_lo * (x + x_hi)


def _expm1_lo(u: Any) -> Any:
    """e^u - 1 for the small |u| of a split square's low part (Taylor)."""
    if _aval(u).dtype == T.float32:
        return u * polynomial(u, [1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0])
    return u * polynomial(u, [1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0])


def _exp_neg_sq_body(x: Any) -> Any:
    """exp(-x^2): float32/float64 split x^2 exactly into two parts so that
    its rounding is not magnified by exp; |x| is capped where the result
    underflows anyway."""
    dt = _aval(x).dtype
    if dt not in (T.float32, T.float64):
        return exp(neg(square(x)))
    max_ax = 11.0 if dt == T.float32 else 28.0
    ax = min(abs(x), const_like(x, max_ax))
    s_hi, s_lo = _split_square(ax)
    e = exp(-s_hi, accuracy=AccuracyMode.HIGHEST)
    return e + e * _expm1_lo(-s_lo)


def _exp_neg_sq_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """d exp(-x^2) = -2 x exp(-x^2) dx, with x taken as 0 where the value
    has underflowed to 0 (so x = inf gives 0, not inf * 0)."""
    (x,), (x_dot,) = primals, tangents
    x = asarray(x)
    ans = exp_neg_sq(x)
    max_ax = 11.0 if _aval(x).dtype == T.float32 else 28.0
    safe_x = select(abs(x) < const_like(x, max_ax), x, full_like(x, 0.0))
    return ans, const_like(x, -2.0) * safe_x * ans * x_dot


class _ExpNegSqRule:
    """exp_neg_sq's JVP rule as ``custom_jvp_call`` calls it (flat lists in
    and out), named as JAX prints it."""

    __name__ = "_exp_neg_sq_jvp"
    fun_name = "exp_neg_sq"

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any]
                 ) -> tuple[list[Any], list[Any]]:
        ans, ans_dot = _exp_neg_sq_jvp(tuple(primals), tuple(tangents))
        return [ans], [ans_dot]


_EXP_NEG_SQ_RULE = _ExpNegSqRule()


def exp_neg_sq(x: Any) -> Any:
    """exp(-x^2) as JAX 0.12 computes it for the derivatives of erf and
    erfc: a ``custom_jvp`` function (bound as ``custom_jvp_call`` named
    exp_neg_sq) whose derivative is -2 x exp(-x^2). Evaluated eagerly it is
    its body; traced, the body is staged and ``custom_jvp_call`` (a
    primitive of a higher family, so found in the registry) is bound."""
    if isinstance(current_trace(), EvalTrace):
        return _exp_neg_sq_body(x)
    traced, _ = trace_to_jaxpr(lambda v: [_exp_neg_sq_body(v)], [canonical_aval_of(x)])
    body = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars, traced.eqns,
                 traced.effects)
    consts = list(traced.consts)
    (out,) = primitive("custom_jvp_call").bind(
        *consts, x, call_jaxpr=body, jvp_jaxpr_fun=_EXP_NEG_SQ_RULE,
        num_consts=len(consts), symbolic_zeros=False)
    return out


_TWO_OVER_SQRT_PI = 2.0 / np.sqrt(np.pi)


def _erf_jvp(g: Any, x: Any) -> Any:
    return mul(const_like(x, _TWO_OVER_SQRT_PI), mul(g, exp_neg_sq(x)))


def _erfc_jvp(g: Any, x: Any, **params: Any) -> Any:
    return mul(const_like(x, -_TWO_OVER_SQRT_PI), mul(g, exp_neg_sq(x)))


def _polygamma_jvp_m(g: Any, m: Any, x: Any) -> Any:
    raise ValueError("polygamma gradient with respect to m is not supported")


def _polygamma_jvp_x(g: Any, m: Any, x: Any) -> Any:
    return g * polygamma(add(m, const_like(m, 1)), x)


def _real_transpose(ct: Any, x: Any) -> Any:
    return complex(ct, np.zeros((), _aval(ct).dtype))


def _imag_transpose(ct: Any, x: Any) -> Any:
    return complex(np.zeros((), _aval(ct).dtype), neg(ct))


def _conj_transpose(ct: Any, x: Any, *, input_dtype: Any) -> Any:
    """conj is linear over the reals: its transpose conjugates back (complex
    input) or keeps the real part (real input)."""
    return conj(ct) if T.is_complex(np.dtype(input_dtype)) else real(ct)


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
        return np.asarray(M.log1p(x))
    # log|1+z| = log1p(2a + a^2 + b^2) / 2 keeps small |z| accurate, where
    # NumPy's complex log1p loses the real part; evaluated in complex128.
    z = x.astype(np.complex128)
    a, b = z.real, z.imag
    re = 0.5 * M.log1p(2 * a + a * a + b * b)
    out = re + 1j * M.arctan2(b, 1 + a)
    return np.asarray(out.astype(x.dtype))


def _logistic_decomposition(x: Any, accuracy: Any) -> Any:
    """1 / (1 + exp(-x)), the sequence JAX lowers logistic to off TPU; like
    JAX's, it takes no ``accuracy`` (the requested one is dropped)."""
    del accuracy
    one = const_like(x, 1)
    return div(one, add(one, exp(neg(x))))


def _logistic(x: np.ndarray) -> np.ndarray:
    one = np.ones((), x.dtype)
    return np.asarray(one / (one + M.exp(-x)))


def _exp2_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    """JAX lowers exp2 as exp(log(2) * x) with log(2) and the product in x's
    dtype; the rounding of the product is visible in narrow floats."""
    cd = K.compute_dtype(x.dtype)
    ln2 = np.asarray(M.log(np.float64(2.0)), x.dtype).astype(cd)
    with np.errstate(all="ignore"):
        product = (ln2 * x.astype(cd)).astype(x.dtype)
    return lifted(M.exp)(product)


def _sinh(x: np.ndarray) -> np.ndarray:
    """XLA's real sinh: copysign(e^(|x| - ln 2) - e^(-|x| - ln 2), x) for
    |x| >= 1 (no overflow before the result does), else
    (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2; every step rounds in x's
    (compute) dtype."""
    if T.is_complex(x.dtype):
        return np.asarray(np.sinh(x))
    half = np.asarray(M.log(np.float64(0.5)), x.dtype)
    a = np.abs(x)
    big = np.copysign(M.exp(a + half) - M.exp(-a + half), x)
    em = M.expm1(x)
    small = (em + em / (em + np.ones((), x.dtype))) * np.asarray(0.5, x.dtype)
    return np.asarray(np.where(a >= 1, big, small))


def _cosh(x: np.ndarray) -> np.ndarray:
    """XLA's real cosh: e^(x - ln 2) + e^(-x - ln 2)."""
    if T.is_complex(x.dtype):
        return np.asarray(np.cosh(x))
    half = np.asarray(M.log(np.float64(0.5)), x.dtype)
    return np.asarray(M.exp(x + half) + M.exp(-x + half))


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


def _conj_decomposition(x: Any, *, input_dtype: Any) -> Any:
    """JAX's lowering: complex(real x, -imag x); a real x gets a zero
    imaginary part."""
    if T.is_complex(_aval(x).dtype):
        return complex(real(x), neg(imag(x)))
    return complex(x, _zeros(x))


def _asin_lowering(ctx: LoweringContext, operands: Sequence[str],
                   in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]) -> list[str]:
    """``chlo.asin`` for complex x; for real x JAX's CPU lowering
    atan2(x, sqrt((1 - x)(1 + x)))."""
    if T.is_complex(in_avals[0].dtype):
        return LT.chlo("asin")(ctx, operands, in_avals, out_avals)
    return LT.lower_fun(lambda x: atan2(x, sqrt(mul(sub(const_like(x, 1), x),
                                                    add(const_like(x, 1), x)))))(
        ctx, operands, in_avals, out_avals)


def _sinh_cosh_by_expm1(b: Any) -> tuple[Any, Any]:
    """(sinh b, cosh b) from expm1(b) and expm1(-b), which keep their
    accuracy for small b: 2 sinh b = e1 - e2, 2 cosh b = e1 + e2 + 2."""
    two = const_like(b, 2)
    up, down = expm1(b), expm1(neg(b))
    return div(sub(up, down), two), div(add(add(up, down), two), two)


def _complex_sin(x: Any) -> Any:
    """sin(a + ib) = sin a cosh b + i cos a sinh b; a zero real part gives
    a zero real result (not 0 * inf = NaN for a huge b)."""
    a, b = real(x), imag(x)
    a_is_zero = eq(a, const_like(a, 0))
    sin_a, cos_a = sin(a), cos(a)
    sinh_b, cosh_b = _sinh_cosh_by_expm1(b)
    re, im = mul(sin_a, cosh_b), mul(cos_a, sinh_b)
    return select(a_is_zero, complex(const_like(a, 0), im), complex(re, im))


def _complex_cos(x: Any) -> Any:
    """cos(a + ib) = cos a cosh b - i sin a sinh b; a zero real part gives
    a zero imaginary result."""
    a, b = real(x), imag(x)
    a_is_zero = eq(a, const_like(a, 0))
    sin_a, cos_a = sin(a), cos(a)
    sinh_b, cosh_b = _sinh_cosh_by_expm1(b)
    re, im = mul(cos_a, cosh_b), mul(neg(sin_a), sinh_b)
    return select(a_is_zero, complex(re, const_like(a, 0)), complex(re, im))


def _scaled_hypot(x: Any, y: Any) -> tuple[Any, Any, Any]:
    """(r, x / r, y / r) for r = sqrt(x^2 + y^2), JAX's expansion: x and y
    scaled by a power of two when max(|x|, |y|) is so large that the sum of
    squares would overflow, or so small that it would underflow, and r
    scaled back; an infinite component gives inf even beside a NaN."""
    info = ml_dtypes.finfo(_aval(x).dtype)  # type: ignore[no-untyped-call]
    # 2**k lifts the smallest subnormal's square above the subnormals; 2**top
    # is the largest power of two whose doubled square is finite.
    k = (info.nmant - info.minexp + 1) // 2
    top = (info.maxexp - 1) // 2
    abs_x, abs_y = abs(x), abs(y)
    largest = max(abs_x, abs_y)
    large = ge(largest, const_like(x, 2.0 ** top))
    small = le(largest, const_like(x, 2.0 ** (top - k)))
    down, up, one = _full_like(x, 2.0 ** -k), _full_like(x, 2.0 ** k), _full_like(x, 1.0)
    sx = select(large, mul(x, down), select(small, mul(x, up), x))
    sy = select(large, mul(y, down), select(small, mul(y, up), y))
    unscale = select(large, up, select(small, down, one))
    scaled = sqrt(add(square(sx), square(sy)))
    r = mul(scaled, unscale)
    inf = _full_like(x, np.inf)
    r = select(bitwise_or(eq(abs_x, inf), eq(abs_y, inf)), inf, r)
    return r, div(sx, scaled), div(sy, scaled)


def _complex_lowering(name: str, decomposition: Callable[[Any], Any]) -> Any:
    """The primitive's one StableHLO op for real operands; for complex ones
    ``decomposition`` lowered in place, as JAX lowers them."""
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
             out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
        if T.is_complex(in_avals[0].dtype):  # (an accuracy is not lowered)
            return LT.lower_fun(lambda x, **_: decomposition(x))(ctx, operands, in_avals,
                                                                  out_avals, **params)
        return LR.elementwise(_STABLEHLO_OPS[name])(ctx, operands, in_avals, out_avals,
                                                   **params)
    return rule


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


neg_p = _unary("neg", NUMBER, lifted(_neg, ftz=False), jvp=linear_jvp(),
               transpose=linear_transpose(lambda ct, x: neg(ct)))
def _sign_lowering(ctx: LoweringContext, operands: Sequence[str],
                   in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]) -> list[str]:
    """``stablehlo.sign``, which takes no unsigned integers: for those, as
    JAX lowers it, ``select(x == 0, 0, 1)``."""
    aval = in_avals[0]
    if np.dtype(aval.dtype).kind != "u":
        return LR.elementwise("stablehlo.sign")(ctx, operands, in_avals, out_avals)
    scalar = ArrayType((), aval.dtype)

    def full(value: int) -> str:
        return ctx.broadcast(ctx.constant(np.asarray(value, aval.dtype), scalar), scalar, aval,
                             ())
    t, mask = tensor_type(aval), tensor_type(ArrayType(aval.shape, T.bool_))
    zero = full(0)
    is_zero = ctx.line(f"stablehlo.compare EQ, {operands[0]}, {zero}, UNSIGNED : ({t}, {t}) -> "
                       f"{mask}")
    zero, one = full(0), full(1)
    return [ctx.line(f"stablehlo.select {is_zero}, {zero}, {one} : {mask}, {t}")]


sign_p = _unary("sign", NUMBER, lifted(_sign), lowering=_sign_lowering,
                **_unary_jvp("sign", _sign_jvp, with_out=True))
floor_p = _unary("floor", FLOAT, lifted(np.floor), **_zero_deriv("floor", "piecewise constant"))
ceil_p = _unary("ceil", FLOAT, lifted(np.ceil), **_zero_deriv("ceil", "piecewise constant"))
def _round_lowering(ctx: LoweringContext, operands: Sequence[str],
                    in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                    rounding_method: Any) -> list[str]:
    even = int(rounding_method) == RoundingMethod.TO_NEAREST_EVEN
    op = "stablehlo.round_nearest_even" if even else "stablehlo.round_nearest_afz"
    return [ctx.op(op, operands, in_avals, out_avals[0])]


# ------------------------------------------------- float32 lgamma lowering
# JAX 0.12 lowers lgamma of every dtype but float64 to its own float32
# computation (operands of narrower dtypes converted to float32 and back),
# staged as nested jitted helpers; float64 stays one chlo.lgamma. The
# helpers below emit that computation op for op, under the helpers' names.
# The method: x >= 1/2 directly (polynomials in (x - 1)(x - 2) P(x) on
# [1/2, 4], Stirling's series above), x < 1/2 by Euler's reflection around
# n = round(x), or, near the zeros of lgamma on (-10, -2), by the root
# windows of K.LGAMMA_ROOT_WINDOWS. Products keep a float32 head of 12
# significant bits (exact when multiplied) and a tail, for the reflection's
# cancellation.

# One body per helper and operand types; the oldest goes past
# _STAGED_HELPERS_KEPT (programs of many shapes would keep one each).
_STAGED_HELPERS: dict[tuple[Any, ...], Jaxpr] = {}
_STAGED_HELPERS_KEPT = 512


def _staged(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called as a nested jit named ``name`` (its operands flat); one
    body per function and operand types, so equal calls lower to one
    private function, as JAX's jitted helpers do."""
    def call(*args: Any) -> Any:
        avals = [canonical_aval_of(a) for a in args]
        key = (fn, *avals)
        jaxpr = _STAGED_HELPERS.get(key)
        if jaxpr is None:
            def flat(*xs: Any) -> list[Any]:
                out = fn(*xs)
                return list(out) if isinstance(out, tuple) else [out]
            jaxpr, _ = trace_to_jaxpr(flat, avals)
            if len(_STAGED_HELPERS) >= _STAGED_HELPERS_KEPT:
                del _STAGED_HELPERS[next(iter(_STAGED_HELPERS))]
            _STAGED_HELPERS[key] = jaxpr
        outs = _calls.jit_p.bind(*args, jaxpr=jaxpr, name=name, donated_invars=(False,) * len(args),
                          inline=False, keep_unused=False)
        return tuple(outs) if len(outs) > 1 else outs[0]
    return call


def _head_tail(x: Any) -> tuple[Any, Any]:
    """``x`` as a head of 12 significant bits (its low 12 bits cleared) and
    the exact remainder."""
    head = bitcast_convert_type(bitcast_convert_type(x, np.int32) & -0x1000, np.float32)
    return head, x - head


def _lg_poly(x: Any, *coeffs: Any) -> Any:
    """sum_i coeffs[i] x^i by Horner's rule, from the highest power."""
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * x + c
    return acc


_LG_POLY = _staged("_horner", _lg_poly)


def _lg_log(x: Any, shift: Any = 0) -> tuple[Any, Any]:
    """log(x 2^-shift) as a head and tail: x = 2^k m with m in
    [sqrt(2)/2, sqrt(2)), log(m) = log1p(m - 1) by its series."""
    bits = bitcast_convert_type(x, np.int32)
    k_bits = shift_right_arithmetic(bits - 0x3F3504F3, full_like(bits, 23))
    k = convert_element_type(k_bits - shift, np.float32)
    m = bitcast_convert_type(bits - shift_left(k_bits, full_like(bits, 23)), np.float32)
    f = m - 1.0
    f2 = f * f
    log1p_f = f - 0.5 * f2 + (f2 * f) * _LG_POLY(f, *K.LGAMMA_LOG_TAIL)
    k_ln2_head = k * 0.693115234375  # ln 2's head: k times it is exact
    rest = log1p_f + k * 3.19461832987e-05
    head = k_ln2_head + rest
    return head, (k_ln2_head - head) + rest


_LG_LOG = _staged("_log_f32", _lg_log)


def _lg_near_one_to_four(x: Any) -> tuple[Any, Any, Any]:
    """lgamma on [1/2, 4] as (x - 1)(x - 2) P: the sum, its head, its tail."""
    upper = x > 1.5
    u = x - 1.0
    v = u - 1.0
    d = u - select(upper, full_like(u, 1.75), full_like(u, 0.0))
    coeffs = [select(upper, full_like(x, hi), full_like(x, lo))
              for lo, hi in zip(K.LGAMMA_AROUND_1, K.LGAMMA_AROUND_2_75)]
    p = _LG_POLY(d, *coeffs)
    u_head, u_tail = _head_tail(u)
    v_head, v_tail = _head_tail(v)
    uv_head = u_head * v_head
    uv_tail = u_tail * v + u_head * v_tail
    p_head, p_tail = _head_tail(p)
    head = uv_head * p_head
    tail = uv_tail * p + uv_head * p_tail
    return head + tail, head, tail


def _lg_stirling(x: Any) -> tuple[Any, Any, Any]:
    """Stirling's series (x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + S(1/x)/x
    for x > 4, as an exact leading product and the rest; and
    psi(x) ~ log x - 1/(2x)."""
    log_head, log_tail = _LG_LOG(x)
    h, h_tail = _head_tail(log_head)
    log_rest = h_tail + log_tail
    b = x - 0.5
    b_head, b_tail = _head_tail(b)
    h_minus_1 = h - 1.0
    lead = b_head * h_minus_1
    lead_rest = b_tail * h_minus_1 + b * log_rest
    inv = reciprocal(x)
    series = _LG_POLY(inv * inv, *K.LGAMMA_STIRLING)
    rest = lead_rest + 0.4189385175704956 + inv * series
    return lead, rest, log_head - 0.5 * inv


def _lg_reflected(d: Any, log_d: Any, lg_head: Any, lg_tail: Any, correction: Any) -> Any:
    """Euler's reflection: -(log|d| + lgamma(1 - x) + log(sin(pi d) / (pi d)))."""
    d2 = d * d
    sinc = d2 * _LG_POLY(d2, *K.LGAMMA_SINC)
    return -((log_d + lg_head) + (lg_tail + (sinc + correction)))


def _lg_root_window(x: Any, n: Any) -> tuple[Any, Any]:
    """Whether x lies in the window of a zero -k + r of lgamma, and
    lgamma(x) there as w P(w), w = (d - r) / (d + r), d = x + k."""
    # The zeros at -2.457 and -2.748 split at -2.6, not at round's -2.5.
    pole = select((x > -2.6) & (x < -2.0), full_like(x, -2.0), n)
    d = x - pole
    k = convert_element_type(-pole, np.int32)
    tabulated = (k >= 2) & (k <= 9)
    side = select(d > 0.0, full_like(k, 1), full_like(k, 0))
    column = select(tabulated, 2 * (k - 2) + side, full_like(k, 1))
    index = broadcast_in_dim(column, (*column.shape, 1), tuple(range(column.ndim)))
    numbers = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                     start_index_map=(0,))
    rows = [primitive("gather").bind(
        row, index, dimension_numbers=numbers, slice_sizes=(1,), unique_indices=False,
        indices_are_sorted=False, mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
        for row in K.LGAMMA_ROOT_WINDOWS]
    r_head, r_tail, w_max = rows[0], rows[1], rows[2]
    d_minus = d - r_head
    d_plus = d + r_head
    inv = reciprocal(d_plus)
    w = (d_minus - r_tail) * inv
    w = w + ((d_minus - w * d_plus) - r_tail * (1.0 + w)) * inv  # one refinement
    inside = abs(w) <= w_max
    w = select(inside, w, full_like(x, 0.0))
    return inside, w * _LG_POLY(w, *rows[3:])


def _lgamma_f32(x: Any) -> Any:
    """float32 lgamma of every float32, subnormals normalised in integer
    arithmetic first (exact where subnormals are flushed)."""
    bits = bitcast_convert_type(x, np.int32)
    magnitude = bits & 0x7FFFFFFF
    zero = magnitude == 0
    subnormal = (magnitude > 0) & (magnitude < 0x00800000)
    shift = select(subnormal, clz(magnitude) - 8, full_like(bits, 0))
    x_n = bitcast_convert_type(
        select(subnormal, (bits & -0x80000000) | shift_left(magnitude, shift), bits),
        np.float32)
    direct = x_n >= 0.5
    x_n = select(zero, full_like(x, 1.0), x_n)  # no 0/0 or log(0) in unused lanes
    # Below -2^23 every float32 is a pole; those and x >= 1/2 use -1/2.
    x_neg = select((~direct) & (x_n > -8388608.0), x_n, full_like(x, -0.5))
    n = round(x_neg, RoundingMethod.TO_NEAREST_EVEN)
    d = x_neg - n
    abs_d = abs(d)
    y = (1.0 - n) - d  # 1 - x, and its rounding error
    y_err = ((1.0 - n) - y) - d
    at = min(select(direct, x_n, y), full_like(x, 4.085003e36))
    log_d, log_d_tail = _LG_LOG(abs_d, shift)
    small, small_head, small_tail = _staged("_lgamma_pos_small", _lg_near_one_to_four)(at)
    lead, rest, psi = _staged("_lgamma_pos_large", _lg_stirling)(at)
    up_to_4 = at <= 4.0
    lg = select(up_to_4, small, lead + rest)
    lg_head = select(up_to_4, small_head, lead)
    lg_tail = select(up_to_4, small_tail, rest)
    reflected = _staged("_lgamma_neg_reflection", _lg_reflected)(
        d, log_d, lg_head, lg_tail + log_d_tail, psi * y_err)
    inside, windowed = _staged("_lgamma_neg_root", _lg_root_window)(x_neg, n)
    out = select(direct, lg, select(inside, windowed, reflected))
    out = select(out == 0.0, full_like(x, 0.0), out)  # +0 at 1 and 2
    pole = zero | ((~direct) & (x_n == floor(x_n))) | (x > 4.085003e36)
    out = select(pole, full_like(x, np.inf), out)
    return select(x != x, full_like(x, np.nan), out)


_LGAMMA_F32 = _staged("lgamma_impl", _lgamma_f32)


def _lgamma_decomposed(x: Any) -> Any:
    if canonical_aval_of(x).dtype == T.float32:
        return _LGAMMA_F32(x)
    return convert_element_type(_LGAMMA_F32(convert_element_type(x, np.float32)),
                                canonical_aval_of(x).dtype)


def _lgamma_lowering(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                     out_avals: Sequence[ArrayType], **params: Any) -> list[str]:
    if in_avals[0].dtype == T.float64:
        return LT.chlo("lgamma")(ctx, operands, in_avals, out_avals, **params)
    return LT.lower_fun(_lgamma_decomposed)(ctx, operands, in_avals, out_avals, **params)


round_p = _declare("round", typing=_round_type, impl=_round_impl, lowering=_round_lowering,
                  batch=vectorized(), **_zero_deriv("round", "piecewise constant"))
is_finite_p = _unary("is_finite", FLOAT, lifted_to(T.bool_, np.isfinite), result=T.bool_,
                     **_zero_deriv("is_finite"))
exp_p = _unary("exp", INEXACT, lifted(M.exp), accuracy=True, **_unary_jvp(
    "exp", lambda g, ans, x, **p: mul(g, ans), with_out=True))
exp2_p = _unary("exp2", INEXACT, _exp2_impl, accuracy=True, lowering=LT.exp2, **_unary_jvp(
    "exp2", lambda g, ans, x, **p: mul(log(const_like(x, 2)), mul(g, ans)),
    with_out=True))
log_p = _unary("log", INEXACT, lifted(_complex_or(M.log, K.complex_log)), accuracy=True,
               **_unary_jvp("log", lambda g, x, **p: div(g, x)))
log2_p = _unary("log2", INEXACT, lifted(M.log2), accuracy=True, lowering=LT.log2,
                 **_unary_jvp(
    "log2", lambda g, x, **p: div(g, mul(x, log(const_like(x, 2))))))
log1p_p = _unary("log1p", INEXACT, lifted(_log1p), accuracy=True, **_unary_jvp(
    "log1p", lambda g, x, **p: div(g, add(x, _one(x)))))
expm1_p = _unary("expm1", INEXACT, lifted(M.expm1), accuracy=True, **_unary_jvp(
    "expm1", lambda g, ans, x, accuracy: mul(g, exp(x, accuracy=accuracy)),
    with_out=True))
tanh_p = _unary("tanh", INEXACT, lifted(M.tanh), accuracy=True,
                **_unary_jvp("tanh", _tanh_jvp, with_out=True))
logistic_p = _unary("logistic", INEXACT, lifted(_logistic), accuracy=True,
                    lowering=LT.lower_fun(_logistic_decomposition),
                    **_unary_jvp("logistic", _logistic_jvp, with_out=True))
sin_p = _unary("sin", INEXACT, lifted(_complex_or(M.sin, K.complex_sin)), accuracy=True,
               lowering=_complex_lowering("sin", _complex_sin),
               jvp=defjvp(lambda g, x, accuracy: mul(g, cos(x, accuracy=accuracy))),
               transpose=not_applicable("sin is not linear"))
cos_p = _unary("cos", INEXACT, lifted(_complex_or(M.cos, K.complex_cos)), accuracy=True,
               lowering=_complex_lowering("cos", _complex_cos),
               jvp=defjvp(lambda g, x, accuracy: neg(
                   mul(g, sin(x, accuracy=accuracy)))),
               transpose=not_applicable("cos is not linear"))
tan_p = _unary("tan", INEXACT, lifted(M.tan), accuracy=True, **_unary_jvp(
    "tan", lambda g, ans, x, **p: mul(g, add(const_like(x, 1), square(ans))),
    with_out=True))
asin_p = _unary("asin", INEXACT, lifted(M.arcsin), lowering=_asin_lowering, **_unary_jvp(
    "asin", lambda g, x: mul(g, rsqrt(one_minus_square(x)))))
acos_p = _unary("acos", INEXACT, lifted(M.arccos), **_unary_jvp(
    "acos", lambda g, x: mul(g, neg(rsqrt(one_minus_square(x))))))
atan_p = _unary("atan", INEXACT, lifted(M.arctan), **_unary_jvp(
    "atan", lambda g, x: div(g, add(const_like(x, 1), square(x)))))
sinh_p = _unary("sinh", INEXACT, lifted(_sinh),
                **_unary_jvp("sinh", lambda g, x: mul(g, cosh(x))))
cosh_p = _unary("cosh", INEXACT, lifted(_cosh),
                **_unary_jvp("cosh", lambda g, x: mul(g, sinh(x))))
asinh_p = _unary("asinh", INEXACT, lifted(M.arcsinh), **_unary_jvp("asinh", _asinh_jvp))
acosh_p = _unary("acosh", INEXACT, lifted(M.arccosh), **_unary_jvp(
    "acosh", lambda g, x: mul(g, mul(rsqrt(sub(x, _one(x))),
                                               rsqrt(add(x, _one(x)))))))
atanh_p = _unary("atanh", INEXACT, lifted(M.arctanh), **_unary_jvp(
    "atanh", lambda g, x: div(g, one_minus_square(x))))
sqrt_p = _unary("sqrt", INEXACT, lifted(_complex_or(np.sqrt, K.complex_sqrt)), accuracy=True,
                **_unary_jvp("sqrt", lambda g, ans, x, **p: mul(
                    g, div(const_like(x, 0.5), ans)), with_out=True))
rsqrt_p = _unary("rsqrt", INEXACT, lifted(_rsqrt), accuracy=True, **_unary_jvp(
    "rsqrt", lambda g, ans, x, **p: mul(g, mul(const_like(x, -0.5), div(ans, x))),
    with_out=True))
cbrt_p = _unary("cbrt", FLOAT, _lift64_or_float(M.cbrt), accuracy=True, **_unary_jvp(
    "cbrt", lambda g, ans, x, **p: mul(g, mul(const_like(x, 1 / 3),
                                                        integer_pow(ans, -2))),
    with_out=True))
square_p = _unary("square", NUMBER, lifted(lambda x: x * x), lowering=LR.square, **_unary_jvp(
    "square", lambda g, ans, x: mul(g, mul(const_like(x, 2), x)), with_out=True))
abs_p = _declare("abs", typing=_abs_type, impl=_abs_impl, batch=vectorized(),
                lowering=_complex_lowering("abs", lambda x: _scaled_hypot(real(x), imag(x))[0]),
                **_unary_jvp("abs", _abs_jvp, with_out=True))
erf_p = _unary("erf", FLOAT, K.lifted_xla(K.erf32_xla, K.erf64_libm),
               **_unary_jvp("erf", _erf_jvp))
erfc_p = _unary("erfc", FLOAT, K.lifted_xla(K.erfc32_xla, K.erfc64_xla), accuracy=True,
                **_unary_jvp("erfc", _erfc_jvp))
erf_inv_p = _unary("erf_inv", FLOAT, K.lifted_xla(K.erf_inv32_xla, K.erf_inv64_xla),
                   **_unary_jvp("erf_inv", lambda g, ans, x: mul(
                       const_like(x, np.sqrt(np.pi) / 2.0),
                       mul(g, exp(square(ans)))), with_out=True))
lgamma_p = _unary("lgamma", FLOAT, _lift64_or_float(K.lgamma64, K.lgamma64_xla),
                  lowering=_lgamma_lowering,
                  **_unary_jvp("lgamma", lambda g, x: mul(g, digamma(x))))
digamma_p = _unary("digamma", FLOAT, K.lifted_xla(K.digamma_xla, K.digamma_xla),
                   **_unary_jvp("digamma", lambda g, x: mul(
                       g, polygamma(const_like(x, 1), x))))
real_p = _declare("real", typing=_part_type("real"), impl=lambda x: [np.real(x).copy()],
                 jvp=linear_jvp(), transpose=linear_transpose(_real_transpose),
                 batch=vectorized())
imag_p = _declare("imag", typing=_part_type("imag"), impl=lambda x: [np.imag(x).copy()],
                 jvp=linear_jvp(), transpose=linear_transpose(_imag_transpose),
                 batch=vectorized())
conj_p = _declare("conj", typing=_conj_type, impl=_conj_impl, pp_rule=_pp_conj,
                  lowering=LT.lower_fun(_conj_decomposition),
                 jvp=linear_jvp(), transpose=linear_transpose(_conj_transpose),
                 batch=vectorized())
not_p = _unary("not", INT_OR_BOOL, lifted(np.invert), **_zero_deriv("not"))
population_count_p = _unary("population_count", INTEGER, lifted(K.population_count),
                            **_zero_deriv("population_count"))
clz_p = _unary("clz", INTEGER, lifted(K.count_leading_zeros), **_zero_deriv("clz"))


# ------------------------------------------------------------ one_minus_square
# 1 - x^2, for the derivatives of tanh, asin, acos, atanh and asinh. Typing:
# the standard unary rule over integers, floats and complex. Impl:
# (1 + x) * (1 - x), each step rounded to x's dtype (JAX's lowering), which
# keeps |x| near 1 accurate; its JVP is -2x directly, so no cancellation
# appears in the derivative near 0.

def _one_minus_square_impl(x: np.ndarray) -> list[np.ndarray]:
    one = np.ones((), x.dtype)
    with np.errstate(all="ignore"):
        return lifted(np.multiply)(lifted(np.add)(one, x)[0], lifted(np.subtract)(one, x)[0])


one_minus_square_p = _unary(
    "one_minus_square", NUMBER, _one_minus_square_impl,
    lowering=LT.lower_fun(lambda x: mul(add(const_like(x, 1), x), sub(const_like(x, 1), x))),
    **_unary_jvp(
        "one_minus_square",
        lambda g, x: mul(g, mul(const_like(x, -2), x))))


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


# XLA's max and min on arrays of one dtype, for kernels that fold them.
xla_max = _minmax(True)
xla_min = _minmax(False)


def _atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    if T.is_complex(x.dtype):
        # atan2 on complex numbers: -i log((x + i y) / sqrt(x^2 + y^2)).
        return np.asarray(-1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y)))
    # float32 through float64: one correctly rounded result (NumPy's float32
    # kernel is off by an ULP or two).
    wide = M.arctan2(y.astype(np.float64), x.astype(np.float64)) if x.dtype == T.float32 \
        else M.arctan2(y, x)
    return np.asarray(wide).astype(x.dtype)


def _nextafter(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """The float after x towards y, on the bits (subnormal results kept).
    XLA first asks whether x == y as a float comparison, which reads
    subnormals as zeros: then the result is y itself (so nextafter(0, a
    subnormal) is that subnormal). A nan operand gives the canonical quiet
    nan (no payload)."""
    with np.errstate(all="ignore"):
        x, y = np.broadcast_arrays(x, y)
        equal = K.flush_subnormals(x) == K.flush_subnormals(y)
        out = np.where(equal, y, np.nextafter(x, y))
        nan = np.asarray(np.nan, x.dtype)
        return [np.asarray(np.where(np.isnan(x) | np.isnan(y), nan, out), x.dtype)]


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
    return declare_binary(name, accepted, lifted_to(T.bool_, fn), result=T.bool_,
                          lowering=LR.compare(name.upper()), **_zero_deriv(name))


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


def _add_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """x + y: a tangent on one side alone is broadcast to the output shape."""
    out = add_p.bind(*primals)
    tx, ty = tangents
    if type(tx) is Zero and type(ty) is Zero:
        return [out], [Zero.from_primal_value(out)]
    if type(tx) is Zero or type(ty) is Zero:
        t = ty if type(tx) is Zero else tx
        return [out], [_broadcast_to_shape(t, out)]
    return [out], [add(tx, ty)]


def _sub_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    out = sub_p.bind(*primals)
    tx, ty = tangents
    if type(tx) is Zero and type(ty) is Zero:
        return [out], [Zero.from_primal_value(out)]
    if type(ty) is Zero:
        return [out], [_broadcast_to_shape(tx, out)]
    if type(tx) is Zero:
        return [out], [_broadcast_to_shape(neg(ty), out)]
    return [out], [sub(tx, ty)]


def _broadcast_to_shape(t: Any, like: Any) -> Any:
    return _maybe_broadcast(canonical_aval_of(like).shape, t)


def _add_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [unbroadcast(ct_aval(x), ct), unbroadcast(ct_aval(y), ct)]


def _sub_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [unbroadcast(ct_aval(x), ct), unbroadcast(ct_aval(y), neg(ct))]


def _mul_transpose(ct: Any, x: Any, y: Any, *, out_dtype: Any = None) -> list[Any]:
    """Linear in whichever operand is undefined (never both)."""
    if is_undefined_primal(x):
        if is_undefined_primal(y):
            raise TypeError("mul: cannot transpose a product of two linear operands")
        dt = None if out_dtype is None else x.aval.dtype
        return [unbroadcast(x.aval, mul(ct, y, out_dtype=dt)), None]
    dt = None if out_dtype is None else y.aval.dtype
    return [None, unbroadcast(y.aval, mul(x, ct, out_dtype=dt))]


add_p = declare_binary("add", NUMBER, lifted(np.add), jvp=_add_jvp, transpose=_add_transpose)
sub_p = declare_binary("sub", NUMBER, lifted(np.subtract), jvp=_sub_jvp, transpose=_sub_transpose)
mul_p: Primitive = _declare("mul", typing=_mul_type, impl=_mul_impl,
                pp_rule=_hide_none("out_dtype"),
                jvp=defjvp(lambda g, x, y, out_dtype=None: mul_p.bind(g, y, out_dtype=out_dtype),
                           lambda g, x, y, out_dtype=None: mul_p.bind(x, g, out_dtype=out_dtype)),
                transpose=_mul_transpose, batch=broadcasting())


def _div_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """x / y is linear in x only."""
    if is_undefined_primal(y):
        raise TypeError("div: cannot transpose a quotient whose divisor is linear")
    return [unbroadcast(x.aval, div(ct, y)), None]


def _rem_jvp_y(g: Any, x: Any, y: Any) -> Any:
    """rem(x, y) = x - y trunc(x / y): d/dy = -trunc(x / y)."""
    return mul(neg(g), mul(sign(div(x, y)),
                                       floor(abs(div(x, y)))))


def _atan2_denominator(x: Any, y: Any) -> Any:
    return add(square(x), square(y))


div_p = declare_binary("div", NUMBER, lifted(_div),
                jvp=defjvp(lambda g, x, y: div(g, y),
                           lambda g, x, y: mul(mul(neg(g), x),
                                                    integer_pow(y, -2))),
                transpose=_div_transpose)
rem_p = declare_binary("rem", K.REAL_NUMBER, lifted(_rem),
                jvp=defjvp(lambda g, x, y: _maybe_broadcast(_out_shape(x, y), g), _rem_jvp_y),
                transpose=_not_linear("rem"))
max_p = declare_binary("max", ANY, lifted(_minmax(True)),
                jvp=defjvp(lambda g, x, y: mul(g, _balanced_cmp(x, y)),
                           lambda g, x, y: mul(g, _balanced_cmp(y, x))),
                transpose=_not_linear("max"))
min_p = declare_binary("min", ANY, lifted(_minmax(False)),
                jvp=defjvp(lambda g, x, y: mul(g, _balanced_cmp(y, x)),
                           lambda g, x, y: mul(g, _balanced_cmp(x, y))),
                transpose=_not_linear("min"))
atan2_p = declare_binary("atan2", INEXACT, lifted(_atan2),
                  jvp=defjvp(lambda g, x, y: mul(g, div(y, _atan2_denominator(x, y))),
                             lambda g, x, y: mul(g, div(neg(x),
                                                                  _atan2_denominator(x, y)))),
                  transpose=_not_linear("atan2"))
nextafter_p = declare_binary("nextafter", FLOAT, _nextafter,
                      jvp=defjvp(lambda g, x, y: _maybe_broadcast(_out_shape(x, y), g), None),
                      transpose=_not_linear("nextafter"))
and_p = declare_binary("and", INT_OR_BOOL, _bool_or_int(np.bitwise_and, np.logical_and),
                **_zero_deriv("and"))
or_p = declare_binary("or", INT_OR_BOOL, _bool_or_int(np.bitwise_or, np.logical_or),
               **_zero_deriv("or"))
xor_p = declare_binary("xor", INT_OR_BOOL, _bool_or_int(np.bitwise_xor, np.logical_xor),
                **_zero_deriv("xor"))
shift_left_p = declare_binary("shift_left", INTEGER, _shift("left"), **_zero_deriv("shift_left"))
shift_right_logical_p = declare_binary("shift_right_logical", INTEGER, _shift("logical"),
                                **_zero_deriv("shift_right_logical"))
shift_right_arithmetic_p = declare_binary("shift_right_arithmetic", INTEGER, _shift("arithmetic"),
                                   **_zero_deriv("shift_right_arithmetic"))
def _key_aware(fn: Callable[..., Any], combine: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` elementwise, and for arrays of PRNG keys (record values, see
    spec._src.core.prng) ``fn`` on their words combined over each key's words: keys
    are equal iff all their words are."""
    def impl(x: np.ndarray, y: np.ndarray) -> Any:
        if x.dtype.names is None:
            return fn(x, y)
        w = fn(words(x), words(y))
        key_axes = tuple(range(w.ndim - (words(x).ndim - x.ndim), w.ndim))
        return combine(w, axis=key_axes)
    return impl


eq_p = _comparison("eq", ANY, _key_aware(np.equal, np.all))
ne_p = _comparison("ne", ANY, _key_aware(np.not_equal, np.any))
def _total_order(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` on XLA's total-order keys (floats: -NaN < -inf < ... < -0.0 <
    0.0 < ... < inf < NaN, NaNs by their bits); complex numbers compare equal
    when both parts do."""
    def impl(x: np.ndarray, y: np.ndarray) -> Any:
        if T.is_complex(x.dtype):
            return (fn(K.total_order_key(x.real), K.total_order_key(y.real))
                    & fn(K.total_order_key(x.imag), K.total_order_key(y.imag)))
        return fn(K.total_order_key(x), K.total_order_key(y))
    return impl


def _total_comparison(name: str, accepted: Accepted, fn: Callable[..., Any]) -> Any:
    return declare_binary(name, accepted, lifted_to(T.bool_, _total_order(fn)),
                          result=T.bool_, lowering=LR.compare(name[:2].upper(), True),
                          **_zero_deriv(name))


# The comparisons lax.sort's comparators use: XLA's total order on floats.
eq_to_p = _total_comparison("eq_to", ANY, np.equal)
le_to_p = _total_comparison("le_to", K.ORDERED, np.less_equal)
lt_to_p = _total_comparison("lt_to", K.ORDERED, np.less)
lt_p = _comparison("lt", K.ORDERED, np.less)
le_p = _comparison("le", K.ORDERED, np.less_equal)
gt_p = _comparison("gt", K.ORDERED, np.greater)
ge_p = _comparison("ge", K.ORDERED, np.greater_equal)


def _complex_type(x: ArrayType, y: ArrayType) -> list[ArrayType]:
    (out,) = nary_type("complex", [x, y], K.COMPLEX_PARTS)
    return [out.update(dtype=K.complex_dtype(x.dtype))]


def _complex_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    """x + i y is linear in both parts: x receives Re(ct) and y receives
    Im(-ct) (JAX's convention for complex cotangents), each summed over the
    axes it was broadcast along."""
    ct_x = unbroadcast(x.aval, real(ct)) if is_undefined_primal(x) else None
    ct_y = unbroadcast(y.aval, imag(neg(ct))) if is_undefined_primal(y) else None
    return [ct_x, ct_y]


complex_p = _declare("complex", typing=_complex_type, impl=_complex_impl, jvp=linear_jvp(),
                    transpose=_complex_transpose, batch=broadcasting())


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
    arg = M.arctan2(b, a)
    coeff = M.power(sq, c / 2) * M.exp(-d * arg)
    angle = c * arg + d * M.log(sq) / 2
    general = np.empty(x.shape, x.dtype)
    general.real = coeff * M.cos(angle)  # set parts: no complex multiply
    general.imag = coeff * M.sin(angle)
    # A zero base: 1 for a zero exponent, 0 for a positive real one, else nan.
    at_zero = np.where(y == 0, 1 + 0j,
                       np.where((c > 0) & (d == 0), 0j, builtins.complex(np.nan, np.nan)))
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
            wide = M.power(xs.astype(np.float64), ys.astype(np.float64))
            out = K.flush_subnormals(wide.astype(cd))
        return [np.asarray(out).astype(x.dtype)]


def _pow_jvp_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    """d/dx x^y = y x^(y-1); for an integer exponent the y = 0 case is 0
    (not 0 * x^-1, a nan at x = 0)."""
    y_is_int = T.is_int(_aval(y).dtype)
    dt, _ = T.result_type_and_weak(x, y)
    dt = T.int32 if dt == T.bool_ else dt
    x = convert_element_type(x, dt)
    y = convert_element_type(y, dt)
    if y_is_int:
        x_shape, y_shape = _aval(x).shape, _aval(y).shape
        if x_shape != y_shape:
            shape = _out_shape(x, y)
            x = _maybe_broadcast(shape, x)
            y = _maybe_broadcast(shape, y)
        jac = select(eq(y, const_like(y, 0)), _zeros(y),
                         mul(_replace_zero(y), pow(x, sub(y, _ones(y)))))
    else:
        jac = mul(y, pow(x, sub(y, _ones(y))))
    return mul(g, jac)


def _pow_jvp_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    """d/dy x^y = log(x) x^y (log 1 = 0 where x = 0)."""
    return convert_element_type(mul(g, mul(log(_replace_zero(x)), ans)),
                                    _aval(y).dtype)


def _pow_lowering(ctx: LoweringContext, operands: Sequence[str],
                  in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]) -> list[str]:
    """``stablehlo.power``; an integer exponent converted to the base's
    dtype first (before any broadcast), as the impl does."""
    x, y = operands
    x_aval, y_aval = in_avals
    if y_aval.dtype != out_avals[0].dtype:
        converted = ArrayType(y_aval.shape, out_avals[0].dtype)
        y = ctx.op("stablehlo.convert", [y], [y_aval], converted)
        y_aval = converted
    return LR.elementwise("stablehlo.power")(ctx, [x, y], [x_aval, y_aval], out_avals)


pow_p = _declare("pow", typing=_pow_type, impl=_pow_impl, jvp=defjvp2(_pow_jvp_x, _pow_jvp_y),
                lowering=_pow_lowering,
                transpose=_not_linear("pow"), batch=broadcasting())


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


def _integer_pow_jvp(g: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return _zeros(g)
    if y == 1:
        return g
    if y == 2:
        return mul(g, mul(const_like(x, y), x))
    return mul(g, mul(const_like(x, y), integer_pow(x, y - 1)))


def _integer_pow_lowering(ctx: LoweringContext, operands: Sequence[str],
                          in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                          y: int) -> list[str]:
    """The impl's multiplication sequence as ``stablehlo.multiply`` ops
    (a cube as (x * x) * x, JAX's operand order)."""
    aval = out_avals[0]
    if y == 0:
        one = ctx.constant(np.ones((), aval.dtype), ArrayType((), aval.dtype))
        return [ctx.broadcast(one, ArrayType((), aval.dtype), aval, ())]
    def mul(a: str, b: str) -> str:
        return ctx.op("stablehlo.multiply", [a, b], [aval, aval], aval)
    if y == 3:
        return [mul(mul(operands[0], operands[0]), operands[0])]
    n, acc, base = abs(int(y)), None, operands[0]
    while n > 0:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n > 0:
            base = mul(base, base)
    assert acc is not None
    if y > 0:
        return [acc]
    one = ctx.constant(np.ones((), aval.dtype), ArrayType((), aval.dtype))
    ones = ctx.broadcast(one, ArrayType((), aval.dtype), aval, ())
    return [ctx.op("stablehlo.divide", [ones, acc], [aval, aval], aval)]


integer_pow_p = _declare("integer_pow", typing=_integer_pow_type, impl=_integer_pow_impl,
                        lowering=_integer_pow_lowering,
                        jvp=defjvp(_integer_pow_jvp), transpose=_not_linear("integer_pow"),
                        batch=vectorized())


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


def _select_n_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """Select among the cases' tangents with the same ``which`` (zero
    tangents become materialised zeros unless all are zero)."""
    which, *cases = primals
    case_tangents = tangents[1:]
    out = select_n(which, *cases)
    if all(type(t) is Zero for t in case_tangents):
        return [out], [Zero.from_primal_value(out)]
    z = _zeros(next(t for t in case_tangents if type(t) is not Zero))
    filled = [z if type(t) is Zero else t for t in case_tangents]
    return [out], [select_n(which, *filled)]


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list[Any]:
    """Linear in the cases: each undefined case receives the cotangent where
    it was selected and zero elsewhere (an integer ``which`` clamped first,
    as the selection itself clamps)."""
    if is_undefined_primal(which):
        raise TypeError("select_n: cannot transpose with respect to `which`")
    if len(cases) == 1:
        return [None, ct if is_undefined_primal(cases[0]) else None]
    zeros = _full_like(ct, 0)
    if _aval(which).dtype == T.bool_:
        ct0 = select(which, zeros, ct) if is_undefined_primal(cases[0]) else None
        ct1 = select(which, ct, zeros) if is_undefined_primal(cases[1]) else None
        return [None, ct0, ct1]
    which = clamp(const_like(which, 0), which, const_like(which, len(cases) - 1))
    return [None] + [select(eq(which, const_like(which, i)), ct, zeros)
                     if is_undefined_primal(case) else None for i, case in enumerate(cases)]


def _shape(x: Any) -> T.Shape:
    return _aval(x).shape


def _select_n_batch(axis: AxisData, args: list[Any], dims: list[BatchDim]
                    ) -> tuple[list[Any], list[BatchDim]]:
    """As JAX: when `which` and every case share one batch axis, bind as is
    (a batched rank-0 `which` is first broadcast along the cases); a rank-0
    unbatched `which` with batched cases moves the cases' batch axes to the
    first case's. Otherwise every batch axis goes to the front (unbatched
    cases are broadcast there) and a batched rank-0 `which` is broadcast
    along the cases; rank-0 cases against a batched array `which` are
    broadcast to its shape."""
    which, *cases = args
    wdim, *cdims = dims
    size = axis.size
    if all(d == wdim for d in cdims):
        if _shape(which) == _shape(cases[0]):
            return [select_n(which, *cases)], [wdim]
        which = broadcast_in_dim(which, _shape(cases[0]), (cast(int, wdim),),
                                     out_sharding=_aval(cases[0]).sharding)
        return [select_n(which, *cases)], [wdim]
    if not _shape(which) and all(d is not None for d in cdims):
        if all(d == cdims[0] for d in cdims[1:]):
            return [select_n(which, *cases)], [cdims[0]]
        if all(_shape(c) == _shape(cases[0]) for c in cases):
            first = cdims[0]
            assert first is not None
            rest = [moveaxis(c, d, first) for c, d in zip(cases[1:], cdims[1:])
                    if d is not None]
            return [select_n(which, cases[0], *rest)], [first]
    # Broadcast values take the vmap's explicit mesh axes on the batch
    # dimension, and a broadcast `which` (or case) the other side's sharding,
    # so that select_n's operands agree on it.
    mesh_axis = axis.explicit_mesh_axis
    if _shape(which):
        which = bdim_at_front(which, wdim, size, mesh_axis)
    if not all(_shape(c) == () for c in cases):
        cases = [bdim_at_front(c, d, size, mesh_axis) for c, d in zip(cases, cdims)]
    ndim_which, ndim_case = len(_shape(which)), len(_shape(cases[0]))
    if 0 < ndim_which < ndim_case:
        which = broadcast_in_dim(which, _shape(cases[0]), (0,),
                                     out_sharding=_aval(cases[0]).sharding)
    if ndim_which > ndim_case:
        cases = [broadcast_in_dim(c, _shape(which), (), out_sharding=_aval(which).sharding)
                 for c in cases]
    return [select_n(which, *cases)], [0]


select_n_p = _declare("select_n", typing=_select_n_type, impl=_select_n_impl,
                     lowering=LR.select_n,
                     jvp=_select_n_jvp, transpose=_select_n_transpose, batch=_select_n_batch,
                      sharding=SK.auto_placed(_select_n_sharding, SK.selected_placement))


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


def _clamp_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """The tangent of whichever operand is the result: min where min > x
    (and min < max), x strictly inside (min, max), max where max < x. All
    contributions are formed before they are summed, in operand order."""
    lo, x, hi = primals
    t_lo, t_x, t_hi = tangents
    out = clamp_p.bind(lo, x, hi)
    parts = []
    if type(t_lo) is not Zero:
        parts.append(select(bitwise_and(gt(lo, x), lt(lo, hi)), t_lo, _zeros(x)))
    if type(t_x) is not Zero:
        parts.append(select(bitwise_and(gt(x, lo), lt(x, hi)), t_x, _zeros(x)))
    if type(t_hi) is not Zero:
        parts.append(select(lt(hi, x), t_hi, _zeros(x)))
    total: Any = Zero.from_primal_value(out)
    for part in parts:
        total = add_tangents(total, part)
    return [out], [total]


def _clamp_batch(axis: AxisData, args: list[Any], dims: list[BatchDim]
                 ) -> tuple[list[Any], list[BatchDim]]:
    """As JAX: bind as is when all three share a batch axis and the bounds
    are rank-0 or of the operand's shape, or when the bounds are unbatched
    rank-0 values; batched rank-0 bounds sharing the operand's batch axis
    are broadcast along it. Otherwise the batch axes go to the front and
    rank-0 / batched rank-0 bounds are broadcast to the operand's shape (a
    rank-0 operand to the batched bounds')."""
    lo, x, hi = args
    lo_d, x_d, hi_d = dims
    size = axis.size
    nd_lo, nd_x, nd_hi = len(_shape(lo)), len(_shape(x)), len(_shape(hi))
    if lo_d == x_d == hi_d:
        if _shape(lo) == _shape(x) == _shape(hi) or nd_lo == nd_hi == 0:
            return [clamp_p.bind(lo, x, hi)], [x_d]
        if nd_lo == nd_hi == 1:
            lo = broadcast_in_dim(lo, _shape(x), (cast(int, lo_d),))
            hi = broadcast_in_dim(hi, _shape(x), (cast(int, hi_d),))
            return [clamp_p.bind(lo, x, hi)], [x_d]
    elif nd_lo == 0 and nd_hi == 0 and x_d is not None:
        return [clamp_p.bind(lo, x, hi)], [x_d]
    lo = bdim_at_front(lo, lo_d, size) if nd_lo else lo
    hi = bdim_at_front(hi, hi_d, size) if nd_hi else hi
    x = bdim_at_front(x, x_d, size) if nd_x else x
    x_shape = _shape(x)
    if not _shape(lo) and x_shape:
        lo = broadcast(lo, x_shape)
    if not _shape(hi) and x_shape:
        hi = broadcast(hi, x_shape)
    if 0 < len(_shape(lo)) < len(x_shape):
        lo = broadcast_in_dim(lo, x_shape, (0,))
    if 0 < len(_shape(hi)) < len(x_shape):
        hi = broadcast_in_dim(hi, x_shape, (0,))
    # A rank-0 operand takes the batched bounds' shape. (JAX 0.12 does this
    # only for a batched min, and fails when just max is batched.)
    wider = [b for b in (lo, hi) if len(_shape(b)) > len(x_shape)]
    if wider:
        x = broadcast(x, _shape(wider[0]))
    return [clamp_p.bind(lo, x, hi)], [0]


clamp_p = _declare("clamp", typing=_clamp_type, impl=_clamp_impl, jvp=_clamp_jvp,
                   lowering=LR.clamp,
                  transpose=_not_linear("clamp"), batch=_clamp_batch,
                   # JAX takes the operand's partitions as they are (the bounds are not zipped).
                   sharding=SK.elementwise_rule(SK.section("clamp", SK.same_as(1))))


# ----------------------------------------------------------------- polygamma
# polygamma(m, x), the m-th derivative of digamma (the JVP of digamma binds
# it). Typing: the standard binary rule over floating dtypes. Impl: XLA's
# decomposition (see _elementwise_kit.polygamma_xla), narrow floats in
# float32; nan unless m is a natural number.

def _polygamma_impl(m: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    dt = x.dtype
    cd = T.float64 if dt == T.float64 else T.float32
    m, x = (np.asarray(v, cd) for v in np.broadcast_arrays(m, x))
    # lgamma(m + 1) and digamma(x) come from those primitives' kernels (run
    # first: each sets up its own subnormal handling). XLA's decomposition
    # calls its own float32 lgamma, whose last bits differ: polygamma(m > 1)
    # is within a few tens of float32 ULPs of XLA's; m = 0 and 1 agree.
    lgamma_m1 = lgamma_p.impl(lifted(np.add)(m, np.ones((), cd))[0])[0]
    digamma_x = digamma_p.impl(x)[0]
    with np.errstate(all="ignore"):
        out = np.asarray(arithmetic(K.polygamma_xla, m, x, lgamma_m1, digamma_x))
    return [out.astype(dt)]


polygamma_p = declare_binary("polygamma", FLOAT, _polygamma_impl,
                      jvp=defjvp(_polygamma_jvp_m, _polygamma_jvp_x),
                      transpose=_not_linear("polygamma"))


# ---------------------------------------------------------------- polynomial
# polynomial(x, c0, ..., cN) = c0 + x (c1 + x (c2 + ... + x cN)), optional
# param ``unroll`` (absent unless given). C1 at least one coefficient; C2
# operands are numbers (not bool); C3 operands share one dtype; C4 shapes
# broadcast. Result: the broadcast shape, weak iff all operands are weak.
# Impl: Horner's rule as JAX lowers it (see K.polynomial_horner).

def _polynomial_type(x: ArrayType, *coeffs: ArrayType, unroll: Any = None) -> list[ArrayType]:
    require(len(coeffs) > 0, "polynomial", "C1", "polynomial needs at least one coefficient",
            ValueError)
    K.check_dtypes("polynomial", [x, *coeffs], NUMBER, "C2")
    K.check_same_dtypes("polynomial", [x, *coeffs], "C3")
    shape = K.out_shape("polynomial", [x, *coeffs], "C4")
    return [ArrayType(shape, x.dtype, K.all_weak([x, *coeffs]))]


def _polynomial_impl(x: np.ndarray, *coeffs: np.ndarray, unroll: Any = None
                     ) -> list[np.ndarray]:
    shape = np.broadcast_shapes(x.shape, *(c.shape for c in coeffs))
    with np.errstate(all="ignore"):
        return [np.asarray(arithmetic(
            lambda *a: K.polynomial_horner(a[0], a[1:], unroll, shape), x, *coeffs))]


def _polynomial_jvp(primals: list[Any], tangents: list[Any], **params: Any
                    ) -> tuple[list[Any], list[Any]]:
    """d/dx is the derivative polynomial (coefficients k c_k); the
    polynomial is linear in its coefficients, so their tangents are
    evaluated as a polynomial of the same x."""
    x, *coeffs = primals
    t_x, *t_coeffs = tangents
    unroll = params.get("unroll")
    out = polynomial_p.bind(x, *coeffs, **params)
    total: Any = Zero.from_primal_value(out)
    if type(t_x) is not Zero:
        deriv = [mul(const_like(c, k), c) for k, c in enumerate(coeffs[1:], 1)]
        total = add_tangents(total, mul(t_x, polynomial(x, deriv, unroll=unroll)))
    if any(type(t) is not Zero for t in t_coeffs):
        filled = [_zeros(c) if type(t) is Zero else t for c, t in zip(coeffs, t_coeffs)]
        total = add_tangents(total, polynomial(x, filled, unroll=unroll))
    return [out], [total]


def _polynomial_transpose(ct: Any, x: Any, *coeffs: Any, **params: Any) -> list[Any]:
    """Coefficient k receives ct x^k (summed over its broadcast axes)."""
    if is_undefined_primal(x):
        raise TypeError("polynomial: cannot transpose with respect to x (not linear)")
    cts: list[Any] = [None]
    power_ct = ct
    for k, c in enumerate(coeffs):
        cts.append(unbroadcast(c.aval, power_ct) if is_undefined_primal(c) else None)
        if k + 1 < len(coeffs):
            power_ct = mul(power_ct, x)
    return cts


def _polynomial_horner(x: Any, *coeffs: Any, unroll: Any = None) -> Any:
    """Horner's rule unrolled: JAX's lowering for up to ``unroll`` (8)
    coefficients; longer ones JAX runs as a scan of the same steps, which
    computes the same values."""
    acc = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = add(mul(acc, x), c)
    return acc


polynomial_p = _declare("polynomial", typing=_polynomial_type, impl=_polynomial_impl,
                       lowering=LT.lower_fun(_polynomial_horner),
                       jvp=_polynomial_jvp, transpose=_polynomial_transpose,
                       batch=broadcasting())


# =================================================================== wrappers
# The lax functions of the family, with JAX's signatures. The operands of a
# lax function must already share a dtype (the jnp functions promote); Python
# scalars are accepted and become weak-typed arrays of the default dtype of
# their kind, exactly as when JAX binds them.

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


def _binary_fn(prim: Primitive, name: str, doc: str) -> Fn:
    def fn(x: Any, y: Any) -> Any:
        return prim.bind(x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


neg: Fn = _plain_unary(neg_p, "neg", "Elementwise -x (integers wrap).")
sign: Fn = _plain_unary(sign_p, "sign", "Elementwise sign: -1, 0 or 1 (x/|x| for complex).")
floor: Fn = _plain_unary(floor_p, "floor", "Elementwise floor.")
ceil: Fn = _plain_unary(ceil_p, "ceil", "Elementwise ceiling.")
is_finite: Fn = _plain_unary(is_finite_p, "is_finite", "Elementwise: neither inf nor nan.")
exp: Fn = _accuracy_unary(exp_p, "exp", "Elementwise e**x.")
exp2: Fn = _accuracy_unary(exp2_p, "exp2", "Elementwise 2**x.")
log: Fn = _accuracy_unary(log_p, "log", "Elementwise natural logarithm.")
log2: Fn = _accuracy_unary(log2_p, "log2", "Elementwise base-2 logarithm.")
log1p: Fn = _accuracy_unary(log1p_p, "log1p", "Elementwise log(1 + x).")
expm1: Fn = _accuracy_unary(expm1_p, "expm1", "Elementwise e**x - 1.")
tanh: Fn = _accuracy_unary(tanh_p, "tanh", "Elementwise hyperbolic tangent.")
logistic: Fn = _accuracy_unary(logistic_p, "logistic", "Elementwise 1 / (1 + e**-x).")
sin: Fn = _accuracy_unary(sin_p, "sin", "Elementwise sine.")
cos: Fn = _accuracy_unary(cos_p, "cos", "Elementwise cosine.")
tan: Fn = _accuracy_unary(tan_p, "tan", "Elementwise tangent.")
asin: Fn = _plain_unary(asin_p, "asin", "Elementwise arc sine.")
acos: Fn = _plain_unary(acos_p, "acos", "Elementwise arc cosine.")
atan: Fn = _plain_unary(atan_p, "atan", "Elementwise arc tangent.")
sinh: Fn = _plain_unary(sinh_p, "sinh", "Elementwise hyperbolic sine.")
cosh: Fn = _plain_unary(cosh_p, "cosh", "Elementwise hyperbolic cosine.")
asinh: Fn = _plain_unary(asinh_p, "asinh", "Elementwise inverse hyperbolic sine.")
acosh: Fn = _plain_unary(acosh_p, "acosh", "Elementwise inverse hyperbolic cosine.")
atanh: Fn = _plain_unary(atanh_p, "atanh", "Elementwise inverse hyperbolic tangent.")
sqrt: Fn = _accuracy_unary(sqrt_p, "sqrt", "Elementwise square root.")
rsqrt: Fn = _accuracy_unary(rsqrt_p, "rsqrt", "Elementwise 1 / sqrt(x).")
cbrt: Fn = _accuracy_unary(cbrt_p, "cbrt", "Elementwise cube root.")
square: Fn = _plain_unary(square_p, "square", "Elementwise x * x.")
abs: Fn = _plain_unary(abs_p, "abs", "Elementwise |x|; complex operands give their real dtype.")
erf: Fn = _plain_unary(erf_p, "erf", "Elementwise error function.")
erfc: Fn = _accuracy_unary(erfc_p, "erfc", "Elementwise complementary error function.")
erf_inv: Fn = _plain_unary(erf_inv_p, "erf_inv", "Elementwise inverse error function.")
lgamma: Fn = _plain_unary(lgamma_p, "lgamma", "Elementwise log |Gamma(x)|.")
digamma: Fn = _plain_unary(digamma_p, "digamma", "Elementwise digamma (d/dx lgamma).")
real: Fn = _plain_unary(real_p, "real", "Real part of a complex array.")
imag: Fn = _plain_unary(imag_p, "imag", "Imaginary part of a complex array.")
bitwise_not: Fn = _plain_unary(not_p, "bitwise_not", "Elementwise NOT (logical for bool).")
population_count: Fn = _plain_unary(population_count_p, "population_count",
                                "Elementwise count of set bits.")
clz: Fn = _plain_unary(clz_p, "clz", "Elementwise count of leading zero bits.")
one_minus_square: Fn = _plain_unary(
    one_minus_square_p, "one_minus_square",
    "Elementwise 1 - x**2, evaluated as (1 + x) * (1 - x); its derivative is -2x.")

add: Fn = _binary_fn(add_p, "add", "Elementwise x + y (operands of one dtype; jnp.add promotes).")
sub: Fn = _binary_fn(sub_p, "sub", "Elementwise x - y.")
div: Fn = _binary_fn(div_p, "div", "Elementwise x / y; integers truncate toward zero.")
rem: Fn = _binary_fn(rem_p, "rem", "Elementwise remainder with the dividend's sign (C fmod).")
pow: Fn = _binary_fn(pow_p, "pow", "Elementwise x ** y; y may be an integer array.")
max: Fn = _binary_fn(max_p, "max", "Elementwise maximum; nan propagates.")
min: Fn = _binary_fn(min_p, "min", "Elementwise minimum; nan propagates.")
atan2: Fn = _binary_fn(atan2_p, "atan2", "Elementwise arc tangent of x / y.")
bitwise_and: Fn = _binary_fn(and_p, "bitwise_and", "Elementwise AND.")
bitwise_or: Fn = _binary_fn(or_p, "bitwise_or", "Elementwise OR.")
bitwise_xor: Fn = _binary_fn(xor_p, "bitwise_xor", "Elementwise XOR.")
shift_left: Fn = _binary_fn(shift_left_p, "shift_left", "Elementwise x << y.")
shift_right_logical: Fn = _binary_fn(shift_right_logical_p, "shift_right_logical",
                              "Elementwise logical x >> y.")
shift_right_arithmetic: Fn = _binary_fn(shift_right_arithmetic_p, "shift_right_arithmetic",
                                 "Elementwise arithmetic x >> y.")
eq: Fn = _binary_fn(eq_p, "eq", "Elementwise x == y.")
ne: Fn = _binary_fn(ne_p, "ne", "Elementwise x != y.")
lt: Fn = _binary_fn(lt_p, "lt", "Elementwise x < y.")
le: Fn = _binary_fn(le_p, "le", "Elementwise x <= y.")
gt: Fn = _binary_fn(gt_p, "gt", "Elementwise x > y.")
ge: Fn = _binary_fn(ge_p, "ge", "Elementwise x >= y.")
complex: Fn = _binary_fn(complex_p, "complex", "Elementwise x + i y from float32/float64 parts.")
polygamma: Fn = _binary_fn(polygamma_p, "polygamma", "Elementwise polygamma psi^(m)(x).")


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
        return _maybe_broadcast(tuple(shape), args[0])
    params = {} if unroll is None else {"unroll": unroll}
    return polynomial_p.bind(x, *args, **params)


def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable float after x1 in the direction of x2."""
    return nextafter_p.bind(x1, x2)


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Round to an integral value; ties away from zero (0) or to even (1)."""
    try:
        method = RoundingMethod(rounding_method)
    except ValueError:
        raise ValueError(f"round C2: {rounding_method!r} is not a valid RoundingMethod "
                         "(0 = AWAY_FROM_ZERO, 1 = TO_NEAREST_EVEN)") from None
    return round_p.bind(x, rounding_method=method)


def conj(x: Any) -> Any:
    """Complex conjugate; float32/float64 operands become complex."""
    return conj_p.bind(x, input_dtype=canonical_aval_of(x).dtype)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """Elementwise x * y; ``out_dtype`` names a result dtype to compute in."""
    dt = None if out_dtype is None else T.to_dtype(out_dtype, "mul")
    return mul_p.bind(x, y, out_dtype=dt)


def integer_pow(x: Any, y: int) -> Any:
    """x ** y for a static Python integer y, by repeated squaring. An integral
    float exponent (``2.0``) is read as that integer."""
    return integer_pow_p.bind(x, y=canonical_integral(y, "integer_pow exponent y"))


def select_n(which: Any, *cases: Any) -> Any:
    """Pick ``cases[which]`` elementwise (bool `which`: False->0, True->1)."""
    if not cases:
        raise ValueError("select_n C1: select_n() must have at least one case")
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` else ``on_false``."""
    return select_n_p.bind(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise min(max(x, min), max); min/max rank-0 or of x's shape."""
    return clamp_p.bind(min, x, max)


WRAPPERS = [
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

__all__ = [n for n in dir() if n.endswith("_p")] + WRAPPERS
