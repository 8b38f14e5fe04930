"""Elementwise jnp functions: dtype promotion, rank promotion, then lax.

Each function emits the primitives JAX 0.12's jnp emits for it, including
the nested ``jit`` equations of the jnp functions JAX stages with a plain
``@jit`` (floor_divide, remainder, fmod, trunc, round, isinf, clip, where's
``_where``, ...). Functions JAX marks ``inline`` leave no ``jit`` equation.
"""

from __future__ import annotations

import builtins
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.api.autodiff import jvp
from spec._src.api.custom_derivatives import custom_jvp
from spec._src.api.hijax import (GradAccum, HiPrim, linearize_from_jvp, printed_form,
                                 vjp_from_jvp)
from spec._src.api.jit import jit
from spec._src.core.canonical import static_int
from spec._src.core import types as T
from spec._src.core.hitypes import is_high
from spec._src.core.array import Array, from_numpy, host_constant
from spec._src.core.config import config
from spec._src.core.interpreter import Tracer, _insert_pvary, canonical_aval_of, is_concrete
from spec._src.core.sharding import _context
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import bdim_at_front
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax import special_functions as special
from spec._src.lax import shaping as L
from spec._src.lax.sharding_kit import broadcast_shardings
from spec._src.numpy.creation import asarray
from spec._src.numpy.dtypes import iscomplexobj
from spec._src.numpy.util import (
    _inline_jit,
    _agree,
    _ensure,
    _jit,
    _promote_inexact,
    check_arraylike,
    check_for_prngkeys,
    promote_dtypes,
    python_scalar_operand,
    to_weak_or_strong,
)

Fn = Callable[..., Any]

# ================================================================== helpers


def _aval(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


def _dtype(x: Any) -> T.DType:
    return _aval(x).dtype


def _const(x: Any, value: Any) -> np.ndarray:
    """A strong constant of ``x``'s dtype (a literal when traced)."""
    return np.asarray(value, dtype=_dtype(x))


def _like(x: Any, value: Any) -> Any:
    """A scalar of ``x``'s dtype and weak type (weak results stay weak)."""
    aval = _aval(x)
    return to_weak_or_strong(float(value), aval.dtype, aval.weak_type)


def _full_like(x: Any, value: Any, dtype: T.DType | None = None) -> Any:
    """``lax.full_like``: without a dtype, the result keeps x's weak type."""
    aval = _aval(x)
    scalar = host_constant(np.asarray(value, dtype=aval.dtype if dtype is None else dtype),
                           weak_type=dtype is None and aval.weak_type)
    if not aval.shape:
        return scalar
    return L.broadcast_in_dim(scalar, aval.shape, ())


def _broadcast_shapes_np(fun_name: str, shapes: list[T.Shape]) -> T.Shape:
    """NumPy broadcasting of shapes (right-aligned); ValueError if impossible."""
    rank = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out: list[int] = []
    for dims in zip(*padded):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def _broadcast_to_rank(x: Any, rank: int) -> Any:
    aval = _aval(x)
    lead = rank - aval.ndim
    if lead == 0:
        return x
    return L.broadcast_in_dim(x, (1,) * lead + aval.shape, tuple(range(lead, rank)))


_RANK_PROMOTION_PAGE = "https://docs.jax.dev/en/latest/101/rank_promotion_warning.html"


def _promote_shapes(fun_name: str, *args: Any) -> list[Any]:
    """Rank promotion: operands of different non-zero ranks get leading size-1
    axes (a ``broadcast_in_dim``); rank-0 operands are left to lax."""
    if len(args) < 2:
        return list(args)
    if all(isinstance(a, (Array, Tracer)) for a in args) and len(
            {len(a.aval.shape) for a in args} - {0}) < 2:
        return list(args)  # equal ranks, or only rank-0 beside them: lax broadcasts
    shapes = [_aval(a).shape for a in args]
    if all(len(s) == len(shapes[0]) for s in shapes[1:]):
        return list(args)
    if len({len(s) for s in shapes if s}) < 2:
        return list(args)
    mode = config.jax_numpy_rank_promotion
    if mode != "allow":
        listed = " ".join(map(str, shapes))
        if mode == "raise":
            raise ValueError(f"Operands could not be broadcast together for {fun_name} on "
                             f"shapes {listed} and with the config option "
                             f"jax_numpy_rank_promotion='raise'. For more information, see "
                             f"{_RANK_PROMOTION_PAGE}.")
        warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                      f"{listed}. Set the jax_numpy_rank_promotion config option to 'allow' "
                      "to disable this warning; for more information, see "
                      f"{_RANK_PROMOTION_PAGE}.", stacklevel=3)
    rank = len(_broadcast_shapes_np(fun_name, shapes))
    return [_broadcast_to_rank(a, rank) for a in args]


def _result(args: tuple[Any, ...]) -> tuple[T.DType, bool]:
    return T.result_type_and_weak(*args)


def _convert_all(args: tuple[Any, ...], dtype: T.DType, weak: bool) -> list[Any]:
    return [to_weak_or_strong(a, dtype, weak) for a in _varying_alike(args)]


def _varying_alike(args: Sequence[Any]) -> Sequence[Any]:
    """Inside shard_map operands are cast to the common varying axes before
    their dtypes are promoted, as JAX stages it."""
    return _insert_pvary(args) if _context.in_manual else args


# JAX's ``promote_dtypes``: every operand converts to the common (dtype, weak
# type); e.g. two weak bools both become strong bools.
_promote_dtypes = promote_dtypes


def _promote_dtypes_inexact(*args: Any) -> list[Any]:
    """Promote, then map integer/bool results to a float (int8..int32 ->
    float32, int64 -> float64), keeping the weak flag."""
    dtype, weak = _result(args)
    return _convert_all(args, _to_inexact(dtype), weak)


def _promote_dtypes_numeric(*args: Any) -> list[Any]:
    """Promote, then map a bool result to int32 (JAX's choice, x64 or not)."""
    dtype, weak = _result(args)
    return _convert_all(args, T.int32 if dtype == T.bool_ else dtype, weak)


def _to_inexact(dt: T.DType) -> T.DType:
    if T.is_inexact(dt):
        return dt
    if dt in (T.int64, T.uint64):
        return T.float64
    return T.float32


# A Python scalar beside an array of its kind or a wider one (int beside
# int/float/complex arrays, float beside float/complex ones, complex beside
# complex ones) takes the array's dtype and weak type: the lattice join is the
# array's own type, so the general promotion can be skipped.
_SCALAR_FITS: dict[type, Callable[[T.DType], bool]] = {
    int: lambda d: T.is_int(d) or T.is_inexact(d),
    float: T.is_inexact,
    complex: T.is_complex,
}


def _array_and_scalar(args: tuple[Any, ...]) -> list[Any] | None:
    if len(args) != 2:
        return None
    a, b = args
    if isinstance(a, (Array, Tracer)) and type(b) in _SCALAR_FITS:
        array, scalar, array_first = a, b, True
    elif isinstance(b, (Array, Tracer)) and type(a) in _SCALAR_FITS:
        array, scalar, array_first = b, a, False
    else:
        return None
    aval = array.aval
    if is_high(aval) or not _SCALAR_FITS[type(scalar)](aval.dtype) or aval.vma:
        return None
    converted = python_scalar_operand(scalar, aval.dtype, aval.weak_type)
    return [array, converted] if array_first else [converted, array]


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    if _agree(args, same_rank=True):
        return list(args)  # one dtype, weak type and rank already: nothing to do
    fast = _array_and_scalar(args)
    if fast is not None:
        return fast
    check_arraylike(fun_name, *args)
    check_for_prngkeys(fun_name, *args)
    return _promote_shapes(fun_name, *_promote_dtypes(*args))


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    if _agree(args, same_rank=True) and T.is_inexact(args[0].aval.dtype):
        return list(args)
    check_arraylike(fun_name, *args)
    check_for_prngkeys(fun_name, *args)
    return _promote_shapes(fun_name, *_promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name: str, *args: Any) -> list[Any]:
    if _agree(args, same_rank=True) and args[0].aval.dtype != T.bool_:
        return list(args)
    check_arraylike(fun_name, *args)
    check_for_prngkeys(fun_name, *args)
    return _promote_shapes(fun_name, *_promote_dtypes_numeric(*args))


def _as_array(x: Any) -> Any:
    """``lax.asarray``: Python scalars become weak arrays; arrays pass through."""
    if T.is_python_scalar(x):
        aval = T.value_type(x)
        return to_weak_or_strong(x, aval.dtype, aval.weak_type)
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(x)  # canonical dtype, strong
    return x


def _named_jit(name: str, fn: Fn, **kw: Any) -> Any:
    """A module-level jitted helper whose equation is named ``name``, as the
    jnp function JAX stages under ``@jit``; one Jitted object per function so
    its cache (and shared-jaxpr printing) persists across calls."""
    fn.__name__ = fn.__qualname__ = name
    return jit(fn, **kw)


def _is_complex(x: Any) -> bool:
    return T.is_complex(_dtype(x))


def _to_bool(x: Any) -> Any:
    """``x != 0``; a weak rank-0 ``x`` is compared with a weak zero, so the
    truth value of Python scalars stays weak (as JAX's)."""
    return x if _dtype(x) == T.bool_ else ew.ne(x, _lax_const(x, 0))


# ============================================================== where / select

def _where_impl(condition: Any, x: Any, y: Any) -> Any:
    check_arraylike("where", condition, x, y)
    if _dtype(condition) != T.bool_:
        condition = ew.ne(condition, _const(condition, 0))
    x, y = _promote_dtypes(x, y)
    if not _aval(condition).shape:
        x, y = _broadcast_arrays(x, y)
    else:
        condition, x, y = _broadcast_arrays(condition, x, y)
    if 0 in _aval(x).shape:
        return x  # nothing to select from: JAX returns the (empty) x unchanged
    return ew.select(condition, x, y)


_where = _named_jit("_where", _where_impl)


def _broadcast_arrays(*args: Any) -> list[Any]:
    shapes = [_aval(a).shape for a in args]
    if all(s == shapes[0] for s in shapes):
        return [_as_array(a) for a in args]
    shape = _broadcast_shapes_np("broadcast_arrays", shapes)
    sharding = broadcast_shardings(*(_aval(a) for a in args))
    return [_broadcast_to(a, shape, sharding) for a in args]


def _broadcast_to(x: Any, shape: T.Shape, sharding: Any = None) -> Any:
    aval = _aval(x)
    if aval.shape == shape:
        return _as_array(x)
    lead = len(shape) - aval.ndim
    return L.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))),
                                out_sharding=sharding)


# ============================================================ arithmetic


@_inline_jit
def add(x: Any, y: Any, /) -> Any:
    a, b = promote_args("add", x, y)
    return ew.bitwise_or(a, b) if _dtype(a) == T.bool_ else ew.add(a, b)


@_inline_jit
def subtract(x: Any, y: Any, /) -> Any:
    return ew.sub(*promote_args("subtract", x, y))


@_inline_jit
def multiply(x: Any, y: Any, /) -> Any:
    a, b = promote_args("multiply", x, y)
    return ew.bitwise_and(a, b) if _dtype(a) == T.bool_ else ew.mul(a, b)


@_inline_jit
def true_divide(x1: Any, x2: Any, /) -> Any:
    """Division in a float dtype: integer and bool operands convert first."""
    return ew.div(*promote_args_inexact("true_divide", x1, x2))


@_inline_jit
def divide(x1: Any, x2: Any, /) -> Any:
    return true_divide(x1, x2)


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    # CPython's float divmod: rem, correct toward floor, round the quotient.
    mod = ew.rem(x1, x2)
    corrected = _where(equal(x2, 0), x1, ew.sub(x1, mod))
    div = ew.div(corrected, x2)
    ind = ew.bitwise_and(not_equal(mod, 0), not_equal(ew.sign(x2), ew.sign(mod)))
    mod = ew.select(ind, mod + x2, mod)
    div = ew.select(ind, div - 1.0, div)
    return ew.round(div), mod


def _floor_divide_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dt = _dtype(x1)
    if T.is_unsigned_int(dt):
        return ew.div(x1, x2)
    if T.is_int(dt):
        quotient = ew.div(x1, x2)
        select = logical_and(not_equal(ew.sign(x1), ew.sign(x2)),
                             not_equal(ew.rem(x1, x2), 0))
        return _where(select, quotient - 1, quotient)
    if T.is_complex(dt):
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


_floor_divide = _named_jit("floor_divide", _floor_divide_impl)


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """Quotient rounded toward -inf (Python's ``//``)."""
    check_arraylike("floor_divide", x1, x2)
    return _floor_divide(x1, x2)


def _remainder_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    zero = _const(x1, 0)
    if T.is_int(_dtype(x2)):
        x2 = _where(equal(x2, 0), _full_like(x2, 1), x2)
    trunc_mod = ew.rem(x1, x2)
    nonzero = ew.ne(trunc_mod, zero)
    do_plus = ew.bitwise_and(ew.ne(ew.lt(trunc_mod, zero), ew.lt(x2, zero)), nonzero)
    return ew.select(do_plus, ew.add(trunc_mod, x2), trunc_mod)


_remainder = _named_jit("remainder", _remainder_impl)


def remainder(x1: Any, x2: Any, /) -> Any:
    """Remainder with the divisor's sign (Python's ``%``); ``x % 0`` is 0 for ints."""
    check_arraylike("remainder", x1, x2)
    return _remainder(x1, x2)


def mod(x1: Any, x2: Any, /) -> Any:
    return remainder(x1, x2)


def _fmod_impl(x1: Any, x2: Any) -> Any:
    if T.is_int(T.result_type(x1, x2)):
        x2 = _where(equal(x2, 0), _full_like(x2, 1), x2)
    return ew.rem(*promote_args_numeric("fmod", x1, x2))


_fmod = _named_jit("fmod", _fmod_impl)


def fmod(x1: Any, x2: Any, /) -> Any:
    """Remainder with the dividend's sign (C fmod)."""
    check_arraylike("fmod", x1, x2)
    return _fmod(x1, x2)


def _divmod_impl(x1: Any, x2: Any) -> tuple[Any, Any]:
    x1, x2 = promote_args_numeric("divmod", x1, x2)
    if T.is_int(_dtype(x1)):
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


_divmod = _named_jit("divmod", _divmod_impl)


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    check_arraylike("divmod", x1, x2)
    return _divmod(x1, x2)  # type: ignore[no-any-return]


def _pow_int_int(x1: Any, x2: Any) -> Any:
    """Integer power by 6 rounds of binary exponentiation (more would
    overflow for any base > 1), as JAX does."""
    zero, one = _const(x2, 0), _const(x2, 1)
    acc = _where(ew.bitwise_and(ew.eq(x1, zero), ew.ne(x2, zero)), zero, one)
    for _ in range(6):
        acc = _where(ew.bitwise_and(x2, one), ew.mul(acc, x1), acc)
        x1 = ew.mul(x1, x1)
        x2 = ew.shift_right_logical(x2, one)
    return acc


def power(x1: Any, x2: Any, /) -> Any:
    """x1 ** x2. A concrete integer exponent is an ``integer_pow``; integer
    operands use binary exponentiation; a float/complex base keeps an
    integer exponent unconverted (``pow`` accepts it)."""
    check_arraylike("power", x1, x2)
    if is_concrete(x2) and not isinstance(x2, (bool, np.bool_)):
        try:
            y = operator.index(x2)
        except TypeError:
            pass
        else:
            (base,) = _promote_dtypes_numeric(x1)
            return ew.integer_pow(base, y)
    return _power(x1, x2)


@_inline_jit
def _power(x1: Any, x2: Any) -> Any:
    a, b = _promote_shapes("power", x1, x2)
    a_, b_ = promote_args_numeric("power", a, b)
    if T.is_int(_dtype(a_)):
        return _pow_int_int(a_, b_)
    if T.is_inexact(_dtype(a)) and T.is_int(_dtype(b)):
        return ew.pow(a, b)
    return ew.pow(a_, b_)


def pow(x1: Any, x2: Any, /) -> Any:
    return power(x1, x2)


@_inline_jit
def float_power(x1: Any, x2: Any, /) -> Any:
    return ew.pow(*promote_args_inexact("float_power", x1, x2))


@_inline_jit
def negative(x: Any, /) -> Any:
    return ew.neg(*promote_args("negative", x))


@_inline_jit
def positive(x: Any, /) -> Any:
    (a,) = promote_args("positive", x)
    return _as_array(a)


@_inline_jit
def sign(x: Any, /) -> Any:
    return ew.sign(*promote_args("sign", x))


@_inline_jit
def square(x: Any, /) -> Any:
    check_arraylike("square", x)
    (a,) = _promote_dtypes_numeric(x)
    return ew.square(a)


@_inline_jit
def reciprocal(x: Any, /) -> Any:
    check_arraylike("reciprocal", x)
    (a,) = _promote_dtypes_inexact(x)
    return ew.integer_pow(a, -1)


@_inline_jit
def absolute(x: Any, /) -> Any:
    """|x|; bool and unsigned operands are returned unchanged."""
    check_arraylike("absolute", x)
    dt = _dtype(x)
    return _as_array(x) if dt == T.bool_ or T.is_unsigned_int(dt) else ew.abs(x)


@_inline_jit
def abs(x: Any, /) -> Any:
    return absolute(x)


@_inline_jit
def fabs(x: Any, /) -> Any:
    check_arraylike("fabs", x)
    if _is_complex(x):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return ew.abs(*promote_args_inexact("fabs", x))


@_inline_jit
def maximum(x: Any, y: Any, /) -> Any:
    return ew.max(*promote_args("maximum", x, y))


@_inline_jit
def minimum(x: Any, y: Any, /) -> Any:
    return ew.min(*promote_args("minimum", x, y))


def _fmax_impl(x1: Any, x2: Any) -> Any:
    return _where(bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def _fmin_impl(x1: Any, x2: Any) -> Any:
    return _where(bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


_fmax = _named_jit("fmax", _fmax_impl)
_fmin = _named_jit("fmin", _fmin_impl)


def fmax(x1: Any, x2: Any, /) -> Any:
    """Maximum that ignores nan where the other operand is a number."""
    check_arraylike("fmax", x1, x2)
    return _fmax(x1, x2)


def fmin(x1: Any, x2: Any, /) -> Any:
    check_arraylike("fmin", x1, x2)
    return _fmin(x1, x2)


@_inline_jit
def nextafter(x1: Any, x2: Any, /) -> Any:
    return ew.nextafter(*promote_args_inexact("nextafter", x1, x2))


def _heaviside_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = _promote_dtypes_inexact(x1, x2)
    zero = _lax_const(x1, 0)
    return _where(ew.lt(x1, zero), zero,
                  _where(ew.gt(x1, zero), _lax_const(x1, 1),
                         _where(ew.ne(x1, x1), x1, x2)))


def _lax_const(x: Any, value: Any) -> Any:
    """A constant of ``x``'s dtype as JAX's ``lax._const`` makes it: weak when
    ``x`` is a weak rank-0 value, strong otherwise (also for weak arrays)."""
    aval = _aval(x)
    if aval.weak_type and not aval.shape:
        return to_weak_or_strong(float(value), aval.dtype, True)
    return _const(x, value)


_heaviside = _named_jit("heaviside", _heaviside_impl)


def heaviside(x1: Any, x2: Any, /) -> Any:
    check_arraylike("heaviside", x1, x2)
    return _heaviside(x1, x2)


def _clip_impl(arr: Any, /, min: Any = None, max: Any = None) -> Any:
    """Clamp ``arr`` to [min, max] (either bound may be None)."""
    if arr is None:
        raise ValueError("No input was provided to the clip function: the array "
                         "argument is None.")
    check_arraylike("clip", arr)
    # Complex bounds are refused before the bounds are checked as arrays, as in JAX.
    if any(iscomplexobj(v) for v in (arr, min, max)):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. "
            "Complex values have no ordering and cannot be clipped. Please convert to a real "
            "value or array by taking the real or imaginary components via jax.numpy.real/imag "
            "respectively.")
    check_arraylike("clip", arr, *[b for b in (min, max) if b is not None])
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return _as_array(arr)


# Jitted as called: bounds passed by keyword are the call's keyword operands
# (after the positional ones, by name), as JAX's jitted jnp.clip stages them.
clip = _named_jit("clip", _clip_impl)


# ============================================================ rounding


@_inline_jit
def floor(x: Any, /) -> Any:
    check_arraylike("floor", x)
    if not T.is_inexact(_dtype(x)):
        return _as_array(x)
    return ew.floor(*promote_args_inexact("floor", x))


@_inline_jit
def ceil(x: Any, /) -> Any:
    check_arraylike("ceil", x)
    if not T.is_inexact(_dtype(x)):
        return _as_array(x)
    return ew.ceil(*promote_args_inexact("ceil", x))


def _trunc_impl(x: Any) -> Any:
    if not T.is_inexact(_dtype(x)):
        return _as_array(x)
    return _where(ew.lt(x, _const(x, 0)), ew.ceil(x), ew.floor(x))


_trunc = _named_jit("trunc", _trunc_impl)


def trunc(x: Any) -> Any:
    """Round toward zero."""
    check_arraylike("trunc", x)
    return _trunc(x)


def _round_impl(a: Any, decimals: int = 0) -> Any:
    # Read inside the jit, as JAX does: an unhashable ``decimals`` is jit's ValueError first.
    decimals = static_int(decimals, "decimals of jnp.round")
    check_arraylike("round", a)
    dt = _dtype(a)
    if T.is_int(dt):
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return _as_array(a)
    if dt == T.bool_:
        raise ValueError(f"data type {dt!r} not compatible with finfo (round needs a "
                         "float or integer operand)")

    def round_float(x: Any) -> Any:
        if decimals == 0:
            return ew.round(x, ew.RoundingMethod.TO_NEAREST_EVEN)
        narrow = _dtype(x) == T.float16
        x = L.convert_element_type(x, np.float32) if narrow else x
        factor = _const(x, 10 ** decimals)
        out = ew.div(ew.round(ew.mul(x, factor), ew.RoundingMethod.TO_NEAREST_EVEN),
                      factor)
        return L.convert_element_type(out, np.float16) if narrow else out

    real_dt = {T.complex64: T.float32, T.complex128: T.float64}.get(dt, dt)
    # ml_dtypes.finfo also knows bfloat16 and the float8s (np.finfo does not).
    if decimals > np.log10(float(ml_dtypes.finfo(real_dt).max)):  # type: ignore[no-untyped-call]
        return _as_array(a)
    if T.is_complex(dt):
        return ew.complex(round_float(ew.real(a)), round_float(ew.imag(a)))
    return round_float(a)


_round = _named_jit("round", _round_impl, static_argnames=("decimals",))


def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round half to even, to ``decimals`` decimal places."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    return _round(a, decimals=decimals)


def _around_impl(a: Any, decimals: int = 0) -> Any:
    return round(a, static_int(decimals, "decimals of jnp.around"))


_around = _named_jit("around", _around_impl, static_argnames=("decimals",))


def around(a: Any, decimals: int = 0, out: None = None) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.around is not supported.")
    return _around(a, decimals=decimals)


def _rint_impl(x: Any) -> Any:
    check_arraylike("rint", x)
    dt = _dtype(x)
    if not T.is_inexact(dt):
        return L.convert_element_type(x, T.default_float())
    if T.is_complex(dt):
        return ew.complex(rint(ew.real(x)), rint(ew.imag(x)))
    return ew.round(x, ew.RoundingMethod.TO_NEAREST_EVEN)


_rint = _named_jit("rint", _rint_impl)


def rint(x: Any, /) -> Any:
    """Round half to even; integer and bool operands become the default float."""
    return _rint(x)


# ============================================================ predicates


@_inline_jit
def isfinite(x: Any, /) -> Any:
    check_arraylike("isfinite", x)
    dt = _dtype(x)
    if T.is_float(dt):
        return ew.is_finite(x)
    if T.is_complex(dt):
        return ew.bitwise_and(ew.is_finite(ew.real(x)), ew.is_finite(ew.imag(x)))
    return _full_like(x, True, T.bool_)


@_inline_jit
def isnan(x: Any, /) -> Any:
    check_arraylike("isnan", x)
    return ew.ne(x, x)


def _isinf_impl(x: Any) -> Any:
    dt = _dtype(x)
    if T.is_float(dt):
        if not np.isinf(np.array(np.inf, dt).astype(np.float64)):
            return _full_like(x, False, T.bool_)  # a dtype without infinity
        return ew.eq(ew.abs(x), _const(x, np.inf))
    if T.is_complex(dt):
        re, im = ew.real(x), ew.imag(x)
        return ew.bitwise_or(ew.eq(ew.abs(re), _const(re, np.inf)),
                              ew.eq(ew.abs(im), _const(im, np.inf)))
    return _full_like(x, False, T.bool_)


_isinf = _named_jit("isinf", _isinf_impl)


def isinf(x: Any, /) -> Any:
    check_arraylike("isinf", x)
    return _isinf(x)


# ============================================================ transcendental


def _inexact_unary(name: str, op: Fn) -> Fn:
    def fn(x: Any, /) -> Any:
        return op(*promote_args_inexact(name, x))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``, computed in a float dtype."
    return _inline_jit(fn)


exp = _inexact_unary("exp", ew.exp)
exp2 = _inexact_unary("exp2", ew.exp2)
expm1 = _inexact_unary("expm1", ew.expm1)
log = _inexact_unary("log", ew.log)
log2 = _inexact_unary("log2", ew.log2)
log1p = _inexact_unary("log1p", ew.log1p)
sqrt = _inexact_unary("sqrt", ew.sqrt)
cbrt = _inexact_unary("cbrt", ew.cbrt)
sin = _inexact_unary("sin", ew.sin)
cos = _inexact_unary("cos", ew.cos)
tan = _inexact_unary("tan", ew.tan)
arcsin = _inexact_unary("arcsin", ew.asin)
arccos = _inexact_unary("arccos", ew.acos)
arctan = _inexact_unary("arctan", ew.atan)
sinh = _inexact_unary("sinh", ew.sinh)
cosh = _inexact_unary("cosh", ew.cosh)
tanh = _inexact_unary("tanh", ew.tanh)
arcsinh = _inexact_unary("arcsinh", ew.asinh)
arctanh = _inexact_unary("arctanh", ew.atanh)


@_inline_jit
def log10(x: Any, /) -> Any:
    (a,) = promote_args_inexact("log10", x)
    inv_ln10 = 0.4342944819032518  # 1 / log(10)
    if _is_complex(a):
        r = ew.log(a)
        re, im = ew.real(r), ew.imag(r)
        return ew.complex(ew.mul(re, _const(re, inv_ln10)), ew.mul(im, _const(im, inv_ln10)))
    return ew.mul(ew.log(a), _const(a, inv_ln10))


def _arccosh_impl(x: Any) -> Any:
    result = ew.acosh(*promote_args_inexact("arccosh", x))
    if _is_complex(result):
        re = ew.real(result)
        result = _where(ew.lt(re, _const(re, 0)), ew.neg(result), result)
    return result


_arccosh = _named_jit("arccosh", _arccosh_impl)


def arccosh(x: Any, /) -> Any:
    check_arraylike("arccosh", x)
    return _arccosh(x)


@_inline_jit
def arctan2(x1: Any, x2: Any, /) -> Any:
    return ew.atan2(*promote_args_inexact("arctan2", x1, x2))


def _hypot_parts(x1: Any, x2: Any) -> tuple[Any, Any, Any]:
    """(r, x1 / r, x2 / r) for r = hypot(x1, x2), as JAX's ``lax.hypot``: both
    operands scaled by a power of two so that the sum of their squares can
    neither overflow nor underflow; inf where either is infinite."""
    a1, a2 = ew.abs(x1), ew.abs(x2)
    m = ew.max(a1, a2)
    fi = ml_dtypes.finfo(np.dtype(_dtype(x1)))  # type: ignore[no-untyped-call]
    k = (int(fi.nmant) - int(fi.minexp) + 1) // 2
    e_hi = (int(fi.maxexp) - 1) // 2
    hi = ew.ge(m, _const(x1, 2.0 ** e_hi))
    lo = ew.le(m, _const(x1, 2.0 ** (e_hi - k)))
    s_down, s_up = L.full_like(x1, 2.0 ** -k), L.full_like(x1, 2.0 ** k)
    one = L.full_like(x1, 1.0)
    y1 = ew.select(hi, ew.mul(x1, s_down), ew.select(lo, ew.mul(x1, s_up), x1))
    y2 = ew.select(hi, ew.mul(x2, s_down), ew.select(lo, ew.mul(x2, s_up), x2))
    inv_scale = ew.select(hi, s_up, ew.select(lo, s_down, one))
    r_scaled = ew.sqrt(ew.add(ew.square(y1), ew.square(y2)))
    r = ew.mul(r_scaled, inv_scale)
    inf = L.full_like(x1, np.inf)
    r = ew.select(ew.bitwise_or(ew.eq(a1, inf), ew.eq(a2, inf)), inf, r)
    # The unit vector from the scaled legs stays accurate where r overflows.
    return r, ew.div(y1, r_scaled), ew.div(y2, r_scaled)


def _hypot_jvp(primals: Any, tangents: Any) -> Any:
    # In terms of the outputs only, so higher derivatives recurse through this
    # rule and never differentiate the power-of-two scale.
    dx1, dx2 = tangents
    r, u1, u2 = _lax_hypot(*primals)
    dr = ew.add(ew.mul(u1, dx1), ew.mul(u2, dx2))
    return ((r, u1, u2),
            (dr, ew.div(ew.sub(dx1, ew.mul(u1, dr)), r), ew.div(ew.sub(dx2, ew.mul(u2, dr)), r)))


_hypot_parts.__name__ = _hypot_parts.__qualname__ = "_hypot"
_lax_hypot: Any = custom_jvp(_hypot_parts)
_lax_hypot.defjvp(_hypot_jvp)


def _hypot_impl(x1: Any, x2: Any, /) -> Any:
    """sqrt(x1**2 + x2**2) without intermediate overflow or underflow."""
    a, b = promote_args_inexact("hypot", x1, x2)
    if _is_complex(a):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                         "convert to real values first, such as by using abs(x)")
    a, b = _broadcast_arrays(a, b)
    return _lax_hypot(a, b)[0]


hypot = _named_jit("hypot", _hypot_impl)


@_inline_jit
def deg2rad(x: Any, /) -> Any:
    (a,) = promote_args_inexact("deg2rad", x)
    return ew.mul(a, _const(a, np.pi / 180))


@_inline_jit
def rad2deg(x: Any, /) -> Any:
    (a,) = promote_args_inexact("rad2deg", x)
    return ew.mul(a, _const(a, 180 / np.pi))


@_inline_jit
def degrees(x: Any, /) -> Any:
    return rad2deg(x)


@_inline_jit
def radians(x: Any, /) -> Any:
    return deg2rad(x)


# ============================================================ complex parts


@_inline_jit
def real(val: Any, /) -> Any:
    check_arraylike("real", val)
    return ew.real(val) if _is_complex(val) else _as_array(val)


@_inline_jit
def imag(val: Any, /) -> Any:
    check_arraylike("imag", val)
    return ew.imag(val) if _is_complex(val) else _full_like(val, 0)


@_inline_jit
def conjugate(x: Any, /) -> Any:
    check_arraylike("conjugate", x)
    return ew.conj(x) if _is_complex(x) else _as_array(x)


@_inline_jit
def conj(x: Any, /) -> Any:
    return conjugate(x)


def _angle_impl(z: Any, deg: bool = False) -> Any:
    check_arraylike("angle", z)
    re, im = real(z), imag(z)
    dt = _dtype(re)
    if not T.is_inexact(dt) or (T.is_float(_dtype(z)) and not _aval(z).shape):
        re = L.convert_element_type(re, T.default_float())
        im = L.convert_element_type(im, T.default_float())
    result = ew.atan2(im, re)
    return degrees(result) if deg else result


_angle = _named_jit("angle", _angle_impl, static_argnames=("deg",))


def angle(z: Any, deg: bool = False) -> Any:
    """The complex argument of ``z`` (radians, or degrees with ``deg``)."""
    return _angle(z, deg=deg)


# ============================================================ bitwise / logical


def bitwise_and(x: Any, y: Any, /) -> Any:
    return ew.bitwise_and(*promote_args("bitwise_and", x, y))


def bitwise_or(x: Any, y: Any, /) -> Any:
    return ew.bitwise_or(*promote_args("bitwise_or", x, y))


def bitwise_xor(x: Any, y: Any, /) -> Any:
    return ew.bitwise_xor(*promote_args("bitwise_xor", x, y))


def bitwise_not(x: Any, /) -> Any:
    return ew.bitwise_not(*promote_args("bitwise_not", x))


def invert(x: Any, /) -> Any:
    return ew.bitwise_not(*promote_args("invert", x))


def left_shift(x: Any, y: Any, /) -> Any:
    return ew.shift_left(*promote_args_numeric("left_shift", x, y))


def right_shift(x1: Any, x2: Any, /) -> Any:
    """Arithmetic shift for signed operands, logical for unsigned."""
    a, b = promote_args_numeric("right_shift", x1, x2)
    if T.is_unsigned_int(_dtype(a)):
        return ew.shift_right_logical(a, b)
    return ew.shift_right_arithmetic(a, b)


@_inline_jit
def logical_and(x: Any, y: Any, /) -> Any:
    return ew.bitwise_and(*map(_to_bool, promote_args("logical_and", x, y)))


@_inline_jit
def logical_or(x: Any, y: Any, /) -> Any:
    return ew.bitwise_or(*map(_to_bool, promote_args("logical_or", x, y)))


@_inline_jit
def logical_xor(x: Any, y: Any, /) -> Any:
    return ew.bitwise_xor(*map(_to_bool, promote_args("logical_xor", x, y)))


@_inline_jit
def logical_not(x: Any, /) -> Any:
    return ew.bitwise_not(*map(_to_bool, promote_args("logical_not", x)))


# ============================================================ comparisons


def _comparison(name: str, op: Fn) -> Fn:
    ordered = name not in ("equal", "not_equal")

    def fn(x: Any, y: Any, /) -> Any:
        a, b = promote_args(name, x, y)
        if ordered and _is_complex(a):
            # Complex numbers compare lexicographically: real parts, then
            # imaginary parts where the real parts tie.
            return ew.select(ew.eq(ew.real(a), ew.real(b)),
                              op(ew.imag(a), ew.imag(b)),
                              op(ew.real(a), ew.real(b)))
        return op(a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` after dtype and rank promotion; bool result."
    return _inline_jit(fn)


equal = _comparison("equal", ew.eq)
not_equal = _comparison("not_equal", ew.ne)
less = _comparison("less", ew.lt)
less_equal = _comparison("less_equal", ew.le)
greater = _comparison("greater", ew.gt)
greater_equal = _comparison("greater_equal", ew.ge)


# ============================================================ sign bits, ldexp/frexp


def _signbit_impl(x: Any) -> Any:
    (x,) = promote_args("signbit", x)
    dt = _dtype(x)
    if T.is_int(dt):
        return ew.lt(x, _const(x, 0))
    if dt == T.bool_:
        return _full_like(x, False, T.bool_)
    if not T.is_float(dt):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
    bits = dt.itemsize * 8
    if bits not in (16, 32, 64):
        raise NotImplementedError("jax.numpy.signbit only supports 16, 32, and 64-bit types.")
    as_int = L.bitcast_convert_type(x, np.dtype(f"int{bits}"))
    # The arithmetic shift smears the sign bit over the word: -1 or 0.
    smeared = ew.shift_right_arithmetic(as_int, _const(as_int, bits - 1))
    return L.convert_element_type(smeared, T.bool_)


_signbit = _named_jit("signbit", _signbit_impl)


def signbit(x: Any, /) -> Any:
    """True where the sign bit is set (-0.0 and negative nan included)."""
    check_arraylike("signbit", x)
    return _signbit(x)


def _copysign_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    if _is_complex(x1):
        raise TypeError("copysign does not support complex-valued inputs")
    negative = _signbit(x2)
    return _where(negative, ew.neg(ew.abs(x1)), ew.abs(x1))


_copysign = _named_jit("copysign", _copysign_impl)


def copysign(x1: Any, x2: Any, /) -> Any:
    """|x1| with the sign bit of x2, in a float dtype."""
    check_arraylike("copysign", x1, x2)
    return _copysign(x1, x2)


def _isposneginf(name: str, infinity: float, x: Any) -> Any:
    check_arraylike(name, x)
    dt = _dtype(x)
    if T.is_float(dt):
        if not np.isinf(np.array(np.inf, dt).astype(np.float64)):
            return _full_like(x, False, T.bool_)  # a dtype without infinity
        return ew.eq(x, _const(x, infinity))
    if T.is_complex(dt):
        raise ValueError("isposinf/isneginf are not well defined for complex types")
    return _full_like(x, False, T.bool_)


def isposinf(x: Any, /, out: None = None) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
    return _isposneginf("isposinf", np.inf, x)


def isneginf(x: Any, /, out: None = None) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
    return _isposneginf("isneginf", -np.inf, x)


# jnp.ldexp and jnp.frexp stage hijax primitives, ``Ldexp`` and ``Frexp``
# (JAX's classes), printed with their operands' types as params. Both work
# on the IEEE fields of the float's bits: a zero exponent field (zero, or a
# subnormal, read as the signed zero) gives the signed zero, an all-ones one
# (inf, nan) keeps the operand; ldexp's results that would be subnormal are
# the signed zero, too large ones the signed infinity. Reverse mode comes
# from the JVP rules (``vjp_from_jvp``): ldexp is linear in x1 and frexp's
# mantissa is ldexp(x, -e) with e locally constant.


class _FloatBits:
    """The IEEE fields of a float array: its bits ``u`` as the unsigned
    integer of the float's width, the sign bit, the biased exponent and the
    mantissa (each in place of its own field but the exponent, shifted
    down), and the masks and sizes they come from."""

    def __init__(self, x: Any) -> None:
        info = ml_dtypes.finfo(_dtype(x))  # type: ignore[no-untyped-call]
        self.nexp, self.nmant, self.bias = int(info.nexp), int(info.nmant), int(info.maxexp) - 1
        self.ut = np.dtype(f"uint{int(info.bits)}")
        self.exp_mask = (1 << self.nexp) - 1
        self.u = L.bitcast_convert_type(x, self.ut)
        self.sign = ew.bitwise_and(self.u, self.const(1 << (int(info.bits) - 1)))
        shifted = ew.shift_right_logical(self.u, self.const(self.nmant))
        self.exp = ew.bitwise_and(shifted, self.const(self.exp_mask))
        self.mant = ew.bitwise_and(self.u, self.const((1 << self.nmant) - 1))
        self.is_zero = ew.eq(self.exp, self.const(0))
        self.is_special = ew.eq(self.exp, self.const(self.exp_mask))

    def const(self, value: int) -> np.ndarray:
        return np.asarray(value, self.ut)

    def ordinary(self, bits: Any) -> Any:
        """``bits`` where the exponent field is ordinary, the signed zero
        where it is 0, the operand's bits where it is all ones."""
        return ew.select(self.is_special, self.u, ew.select(self.is_zero, self.sign, bits))

    def as_float(self, bits: Any, dtype: T.DType) -> Any:
        return L.bitcast_convert_type(bits, dtype)


def _ldexp_bits(x1: Any, x2: Any) -> Any:
    """x1 2^x2 by adding the shift, clamped to +-2^(nexp+1) (anything that
    large over- or underflows; the clamp keeps the sum from wrapping), to the
    exponent field."""
    f = _FloatBits(x1)
    nt = _dtype(x2)
    if nt.itemsize < 4:  # widened, so that the clamp bound fits
        x2 = L.convert_element_type(x2, T.int32 if T.is_signed_int(nt) else T.uint32)
        nt = _dtype(x2)
    bound = 1 << (f.nexp + 1)
    low = np.asarray(-bound if T.is_signed_int(nt) else 0, nt)
    shift = L.convert_element_type(ew.clamp(low, x2, np.asarray(bound, nt)), T.int32)
    new_exp = ew.add(L.convert_element_type(f.exp, T.int32), shift)
    inf_bits = ew.bitwise_or(f.sign, f.const(f.exp_mask << f.nmant))
    exp_bits = ew.shift_left(L.convert_element_type(new_exp, f.ut), f.const(f.nmant))
    normal = ew.bitwise_or(ew.bitwise_or(f.sign, exp_bits), f.mant)
    scaled = ew.select(ew.le(new_exp, np.int32(0)), f.sign,
                       ew.select(ew.ge(new_exp, np.int32(f.exp_mask)), inf_bits, normal))
    return f.as_float(f.ordinary(scaled), _dtype(x1))


def _frexp_bits(x: Any) -> tuple[Any, Any]:
    """The mantissa with its exponent field set to bias - 1 (|m| in [1/2,
    1)) and the exponent field less bias - 1; 0 for zeros, infinities and
    nans, which are their own mantissas."""
    f = _FloatBits(x)
    halved = ew.bitwise_or(ew.bitwise_or(f.sign, f.const((f.bias - 1) << f.nmant)), f.mant)
    e = ew.sub(L.convert_element_type(f.exp, T.int32), np.int32(f.bias - 1))
    e = ew.select(ew.bitwise_or(f.is_special, f.is_zero), L.full_like(e, 0), e)
    return f.as_float(f.ordinary(halved), _dtype(x)), e


@printed_form
class Ldexp(HiPrim):
    """``x1 * 2**x2`` for a floating ``x1`` and an integer ``x2`` of one
    shape; the params are the operand types."""

    x1_aval: T.ArrayType
    x2_aval: T.ArrayType

    def __init__(self, x1_aval: T.ArrayType, x2_aval: T.ArrayType) -> None:
        self.in_avals = (x1_aval, x2_aval)
        self.out_aval = x1_aval.update(weak_type=False)
        self.params = dict(x1_aval=x1_aval, x2_aval=x2_aval)
        super().__init__()

    @classmethod
    def from_printed(cls, params: dict[str, Any], in_avals: Any, out_avals: Any) -> Ldexp:
        """The params are the operand types (printed without weak types)."""
        return cls(*in_avals)

    def expand(self, x1: Any, x2: Any) -> Any:
        return _ldexp_bits(x1, x2)

    def jvp(self, primals: Any, tangents: Any) -> Any:
        """Linear in x1: the tangent is ldexp(dx1, x2), formed before the
        primal (as JAX's rule does)."""
        x1, x2 = primals
        t1 = tangents[0]
        t_out = (Zero(self.out_aval.tangent_type()) if isinstance(t1, Zero)
                 else ldexp(t1, x2))
        return self(x1, x2), t_out

    def transpose(self, out_ct: Any, x1_accum: Any, x2: Any) -> None:
        if isinstance(x1_accum, GradAccum) and not isinstance(out_ct, Zero):
            x1_accum.accum(ldexp(out_ct, x2))

    lin, linearized = linearize_from_jvp
    vjp_fwd, vjp_bwd_retval = vjp_from_jvp

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        """Operands of one shape: batched at one axis they bind as they are;
        otherwise both go to the front (an unbatched one broadcast)."""
        x1, x2 = args
        d1, d2 = dims
        if d1 != d2:
            x1 = bdim_at_front(x1, d1, axis_data.size)
            x2 = bdim_at_front(x2, d2, axis_data.size)
            d1 = 0
        return Ldexp(_aval(x1), _aval(x2))(x1, x2), d1


@printed_form
class Frexp(HiPrim):
    """The mantissa and the int32 exponent of a floating ``x``; the param is
    the operand type."""

    x_aval: T.ArrayType

    def __init__(self, x_aval: T.ArrayType) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = (x_aval.update(weak_type=False),
                         x_aval.update(dtype=T.int32, weak_type=False))
        self.params = dict(x_aval=x_aval)
        super().__init__()

    @classmethod
    def from_printed(cls, params: dict[str, Any], in_avals: Any, out_avals: Any) -> Frexp:
        """The param is the operand type (printed without its weak type)."""
        return cls(*in_avals)

    def expand(self, x: Any) -> Any:
        return _frexp_bits(x)

    def jvp(self, primals: Any, tangents: Any) -> Any:
        """x = m 2^e with e locally constant: dm = ldexp(dx, -e)."""
        (x,), (t,) = primals, tangents
        m, e = self(x)
        m_aval, e_aval = self.out_aval
        m_dot = Zero(m_aval.tangent_type()) if isinstance(t, Zero) else ldexp(t, ew.neg(e))
        return (m, e), (m_dot, Zero(e_aval.tangent_type()))

    lin, linearized = linearize_from_jvp
    vjp_fwd, vjp_bwd_retval = vjp_from_jvp

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        (x,), (d,) = args, dims
        return Frexp(_aval(x))(x), (d, d)


def _ldexp_impl(x1: Any, x2: Any) -> Any:
    d1, d2 = _dtype(x1), _dtype(x2)
    if T.is_complex(d1) or T.is_inexact(d2):
        raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
    (x1,) = promote_args_inexact("ldexp", x1)
    if _dtype(x2) == T.bool_:
        x2 = L.convert_element_type(x2, T.int32)
    x1, x2 = _promote_shapes("ldexp", x1, x2)
    x1, x2 = _broadcast_arrays(x1, x2)
    x1, x2 = _strong(x1), _strong(x2)
    return Ldexp(_aval(x1), _aval(x2))(x1, x2)


_ldexp = _named_jit("ldexp", _ldexp_impl)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """x1 * 2**x2 by editing the exponent field; subnormal inputs and
    underflowing results are signed zeros."""
    check_arraylike("ldexp", x1, x2)
    return _ldexp(x1, x2)


def _frexp_impl(x: Any) -> Any:
    (x,) = _promote_dtypes_inexact(x)
    if _is_complex(x):
        raise TypeError("frexp does not support complex-valued inputs")
    x = _strong(x)
    return tuple(Frexp(_aval(x))(x))


_frexp = _named_jit("frexp", _frexp_impl)


def frexp(x: Any, /) -> tuple[Any, Any]:
    """(mantissa, exponent) with |mantissa| in [1/2, 1) and x = m * 2**e."""
    check_arraylike("frexp", x)
    return _frexp(x)  # type: ignore[no-any-return]


def _strong(x: Any) -> Any:
    """``x`` with its weak type dropped (a convert_element_type only if weak)."""
    aval = _aval(x)
    if not aval.weak_type:
        return _as_array(x)
    return to_weak_or_strong(x, aval.dtype, False)


# ============================================================ log-add-exp, sinc


def _wrap_between(x: Any, bound: float) -> Any:
    """``x`` wrapped into [-bound, bound)."""
    a, two_a, zero = _lax_const(x, bound), _lax_const(x, 2 * bound), _lax_const(x, 0)
    rem = ew.rem(ew.add(x, a), two_a)
    rem = ew.select(ew.lt(rem, zero), ew.add(rem, two_a), rem)
    return ew.sub(rem, a)


def _logaddexp_body(x1: Any, x2: Any, base2: bool) -> Any:
    amax = ew.max(x1, x2)
    exp = ew.exp2 if base2 else ew.exp
    if T.is_float(_dtype(x1)):
        delta = ew.sub(x1, x2)
        # A nan delta: nan operands, or infinities of one sign (their sum).
        # (Equations in JAX's order: the select's operands left to right.)
        is_nan = ew.ne(delta, delta)
        total = ew.add(x1, x2)
        tail = ew.log1p(exp(ew.neg(ew.abs(delta))))
        if base2:
            tail = ew.mul(_lax_const(amax, 1 / np.log(2)), tail)
        return ew.select(is_nan, total, ew.add(amax, tail))
    delta = ew.sub(ew.add(x1, x2), ew.mul(amax, _lax_const(amax, 2)))
    tail = ew.log1p(exp(delta))
    if base2:
        tail = ew.mul(_lax_const(amax, 1 / np.log(2)), tail)
    out = ew.add(amax, tail)
    period = np.pi / np.log(2) if base2 else np.pi
    return ew.complex(ew.real(out), _wrap_between(ew.imag(out), period))


def _replace_inf(x: Any) -> Any:
    """``x`` with +inf (in the real part) replaced by 0: keeps the tangent
    formulas below finite where an operand or the result is +inf."""
    return ew.select(ew.eq(ew.real(x) if T.is_complex(_dtype(x)) else x, _like_real(x, np.inf)),
                     L.full_like(x, 0), x)


def _like_real(x: Any, value: float) -> Any:
    dt = _dtype(x)
    real = np.array(0, dt).real.dtype if T.is_complex(dt) else dt
    return L.full((), value, real)


def _logaddexp_tangent(exp: Callable[[Any], Any], x1: Any, x2: Any, out: Any, t1: Any,
                       t2: Any) -> Any:
    """d out / d x1 = exp(x1 - out) (in the base of ``exp``), well defined
    where the result is +inf too."""
    return ew.add(ew.mul(t1, exp(ew.sub(_replace_inf(x1), _replace_inf(out)))),
                  ew.mul(t2, exp(ew.sub(_replace_inf(x2), _replace_inf(out)))))


def _logaddexp_jvp(primals: Any, tangents: Any) -> Any:
    (x1, x2), (t1, t2) = primals, tangents
    out = _lax_logaddexp(x1, x2)
    return out, _logaddexp_tangent(ew.exp, x1, x2, out, t1, t2)


def _logaddexp2_jvp(primals: Any, tangents: Any) -> Any:
    (x1, x2), (t1, t2) = primals, tangents
    out = _lax_logaddexp2(x1, x2)
    return out, _logaddexp_tangent(ew.exp2, x1, x2, out, t1, t2)


def _logaddexp_lax(x1: Any, x2: Any) -> Any:
    return _logaddexp_body(x1, x2, base2=False)


def _logaddexp2_lax(x1: Any, x2: Any) -> Any:
    return _logaddexp_body(x1, x2, base2=True)


# The two are custom_jvp functions of already promoted operands, as in JAX
# (their derivative rules avoid the nan of inf - inf).
_logaddexp_lax.__name__ = _logaddexp_lax.__qualname__ = "logaddexp"
_logaddexp2_lax.__name__ = _logaddexp2_lax.__qualname__ = "logaddexp2"
_lax_logaddexp: Any = custom_jvp(_logaddexp_lax)
_lax_logaddexp.defjvp(_logaddexp_jvp)
_lax_logaddexp2: Any = custom_jvp(_logaddexp2_lax)
_lax_logaddexp2.defjvp(_logaddexp2_jvp)


@_inline_jit
def logaddexp(x1: Any, x2: Any, /) -> Any:
    """log(exp(x1) + exp(x2)) without overflow."""
    a, b = promote_args_inexact("logaddexp", x1, x2)
    return _lax_logaddexp(a, b)


@_inline_jit
def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """log2(2**x1 + 2**x2) without overflow."""
    a, b = promote_args_inexact("logaddexp2", x1, x2)
    return _lax_logaddexp2(a, b)


# sin(pi r) / (pi r) = 1 + t Q(t), t = r^2: Taylor coefficients of Q.
_SINC_Q32 = tuple(float.fromhex(h) for h in (
    "-0x1.a51a66p0", "0x1.9f9cb4p-1", "-0x1.86a8e4p-3", "0x1.ac6806p-6", "-0x1.33816ap-9",
    "0x1.37471ap-13"))
_SINC_Q64 = tuple(float.fromhex(h) for h in (
    "-0x1.a51a6625307d3p0", "0x1.9f9cb402bc46cp-1", "-0x1.86a8e4720db67p-3",
    "0x1.ac6805cf350a6p-6", "-0x1.33816aa4607abp-9", "0x1.374719fab3915p-13",
    "-0x1.d42498d1ce099p-18", "0x1.0fc992ff39e13p-22", "-0x1.f5f9d970ca6dfp-28",
    "0x1.79788684225eap-33", "-0x1.d7353939082fep-39"))


def _sinc_real(x: Any) -> Any:
    """sinc(x) = (-1)^n sinc(r) r / x with x = n + r, n the nearest integer:
    the reduction is exact, and sinc(r) comes from its Taylor series."""
    n = stop_gradient(ew.round(x, ew.RoundingMethod.TO_NEAREST_EVEN))
    is_inf = ew.eq(ew.abs(x), _like(x, np.inf))
    r = _where(is_inf, 0, ew.sub(x, n))
    t = ew.mul(r, r)
    q = ew.polynomial(t, _SINC_Q64 if _dtype(x) == T.float64 else _SINC_Q32)
    tq = ew.mul(t, q)
    near_zero = ew.add(_like(t, 1), tq)  # sinc(x) where n == 0
    r_sinc_r = ew.add(r, ew.mul(r, tq))
    odd = ew.ne(ew.mul(_like(n, 2), ew.round(ew.mul(_like(n, 0.5), n),
                                                  ew.RoundingMethod.TO_NEAREST_EVEN)), n)
    n_zero = ew.eq(n, _like(n, 0))
    denom = _where(odd, ew.neg(x), _where(n_zero, 1, x))
    out = ew.div(r_sinc_r, denom)
    # Integers give +0 (nan for inf) with the derivative (-1)^n / n kept.
    out = _where(ew.eq(r, _like(r, 0)), ew.sub(out, stop_gradient(out)), out)
    return _where(n_zero, near_zero, out)


def _sinc_complex(x: Any) -> Any:
    """sin(pi x) / (pi x) directly outside the unit disk of pi x, its Taylor
    series inside; both branches finite so autodiff sees no nan."""
    eq_inf = ew.bitwise_and(ew.eq(ew.abs(ew.real(x)), _lax_const(ew.real(x), np.inf)),
                            ew.is_finite(ew.imag(x)))
    safe_pi_x = _where(eq_inf, _lax_const(x, 1), ew.mul(_lax_const(x, np.pi), x))
    abs_u = ew.abs(safe_pi_x)
    use_series = ew.lt(abs_u, _lax_const(abs_u, 1.0))
    u_series = _where(use_series, safe_pi_x, _lax_const(safe_pi_x, 0))
    u_direct = _where(use_series, _lax_const(safe_pi_x, 1.0), safe_pi_x)
    eps = float(ml_dtypes.finfo(np.dtype(_dtype(x))).eps)  # type: ignore[no-untyped-call]
    coeffs: list[float] = []
    for k in range(100):
        mag = 1.0 / math.factorial(2 * k + 1)
        coeffs.append((-1) ** k * mag)
        if mag <= eps:
            break
    series = ew.polynomial(ew.square(u_series), coeffs)
    result = _where(use_series, series, ew.div(ew.sin(u_direct), u_direct))
    return _where(eq_inf, _lax_const(x, 0), result)


def _sinc_impl(x: Any) -> Any:
    check_arraylike("sinc", x)
    (x,) = _promote_dtypes_inexact(x)
    dt = _dtype(x)
    if T.is_complex(dt):
        return _sinc_complex(x)
    if dt.itemsize < 4:
        return L.convert_element_type(_sinc_real(L.convert_element_type(x, T.float32)), dt)
    return _sinc_real(x)


_sinc = _named_jit("sinc", _sinc_impl)


def sinc(x: Any, /) -> Any:
    """sin(pi x) / (pi x), 1 at 0, by JAX's exact range reduction and series."""
    return _sinc(x)


# ============================================================ closeness, nan_to_num


def _isclose_impl(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
                  equal_nan: bool = False) -> Any:
    a, b = promote_args("isclose", a, b)
    a, b = promote_args_inexact("isclose", a, b)
    dt = _real_dtype(_dtype(a))
    rtol = L.convert_element_type(rtol, dt)
    atol = L.convert_element_type(atol, dt)
    both_nan = logical_and(isnan(a), isnan(b))
    finite_b = isfinite(b)
    in_range = ew.le(ew.abs(ew.sub(a, b)), ew.add(atol, ew.mul(rtol, ew.abs(b))))
    out = logical_or(ew.eq(a, b), logical_and(finite_b, in_range))
    return logical_or(out, both_nan) if equal_nan else out


def _real_dtype(dt: T.DType) -> T.DType:
    return {T.complex64: T.float32, T.complex128: T.float64}.get(dt, dt)


_isclose = _named_jit("isclose", _isclose_impl, static_argnames=("equal_nan",))
_UNSET: Any = object()


def isclose(a: Any, b: Any, rtol: Any = _UNSET, atol: Any = _UNSET,
            equal_nan: bool = False) -> Any:
    """|a - b| <= atol + rtol |b| (or a == b), elementwise."""
    check_arraylike("isclose", a, b)
    # Only the tolerances the caller passes are arguments of JAX's jitted
    # function; defaults are constants inside it.
    kwargs = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not _UNSET}
    return _isclose(a, b, **kwargs, equal_nan=equal_nan)


def _nan_to_num_impl(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
                     neginf: Any = None) -> Any:
    check_arraylike("nan_to_num", x)
    dt = _dtype(x)
    if not T.is_inexact(dt):
        return _as_array(x)
    if T.is_complex(dt):
        return ew.complex(nan_to_num(ew.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(ew.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _where(isnan(x), asarray(nan, dtype=dt), x)
    out = _where(isposinf(out), asarray(posinf, dtype=dt), out)
    return _where(isneginf(out), asarray(neginf, dtype=dt), out)


_nan_to_num = _named_jit("nan_to_num", _nan_to_num_impl)


def nan_to_num(x: Any, copy: Any = _UNSET, nan: Any = _UNSET, posinf: Any = _UNSET,
               neginf: Any = _UNSET) -> Any:
    """nan -> ``nan``, +-inf -> ``posinf``/``neginf`` (default: the largest
    finite values of the dtype)."""
    # As for isclose: only what the caller passes is an argument of the jit.
    given = {"copy": copy, "nan": nan, "posinf": posinf, "neginf": neginf}
    return _nan_to_num(x, **{k: v for k, v in given.items() if v is not _UNSET})


# ============================================================ gcd / lcm


def _gcd_step(x1: Any, x2: Any) -> tuple[Any, Any]:
    nonzero = ew.ne(x2, _const(x2, 0))
    # JAX's lax._const: a Python 0 (keeping the weak type) for a weak rank-0
    # x2, else a strong zero of x2's dtype, which makes the where strong.
    zero = 0 if _aval(x2).weak_type and not _aval(x2).shape else _const(x2, 0)
    x1, x2 = (_where(nonzero, x2, x1), _where(nonzero, ew.rem(x1, x2), zero))
    swap = ew.lt(x1, x2)
    return _where(swap, x2, x1), _where(swap, x1, x2)


def _gcd_core(x1: Any, x2: Any) -> Any:
    """Euclid's algorithm on whole arrays, stepping until every divisor is 0
    (JAX's while loop). Traced operands run a fixed number of steps (enough
    for any operands of the dtype: Euclid needs under 1.5 steps per bit), each
    step kept only while some divisor is nonzero, so the values agree."""
    x1, x2 = absolute(x1), absolute(x2)
    if is_concrete(x1) and is_concrete(x2):
        while bool(np.asarray(lr.reduce_or(ew.ne(x2, _const(x2, 0)),
                                            tuple(range(_aval(x2).ndim))))):
            x1, x2 = _gcd_step(x1, x2)
        return x1
    for _ in range(3 * _dtype(x1).itemsize * 8 // 2 + 2):
        running = lr.reduce_or(ew.ne(x2, _const(x2, 0)), tuple(range(_aval(x2).ndim)))
        n1, n2 = _gcd_step(x1, x2)
        x1, x2 = ew.select(running, n1, x1), ew.select(running, n2, x2)
    return x1


def _gcd_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = _promote_dtypes(x1, x2)
    if not T.is_int(_dtype(x1)):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    x1, x2 = _broadcast_arrays(x1, x2)
    return _gcd_core(x1, x2)


_gcd = _named_jit("gcd", _gcd_impl)


def gcd(x1: Any, x2: Any, /) -> Any:
    """Greatest common divisor (JAX uses a while loop; spec, which has no
    while primitive yet, unrolls a bounded loop under tracing)."""
    check_arraylike("gcd", x1, x2)
    return _gcd(x1, x2)


def _lcm_impl(x1: Any, x2: Any) -> Any:
    x1, x2 = _promote_dtypes(x1, x2)
    x1, x2 = absolute(x1), absolute(x2)
    if not T.is_int(_dtype(x1)):
        raise ValueError("Arguments to jax.numpy.lcm must be integers.")
    d = _gcd(x1, x2)
    return _where(equal(d, 0), 0, multiply(x1, floor_divide(x2, d)))  # Python 0, as in JAX


_lcm = _named_jit("lcm", _lcm_impl)


def lcm(x1: Any, x2: Any, /) -> Any:
    """Least common multiple (0 where either operand is 0)."""
    check_arraylike("lcm", x1, x2)
    return _lcm(x1, x2)


@_inline_jit
def acos(x: Any, /) -> Any:
    return arccos(x)


@_inline_jit
def acosh(x: Any, /) -> Any:
    return arccosh(x)


@_inline_jit
def asin(x: Any, /) -> Any:
    return arcsin(x)


@_inline_jit
def asinh(x: Any, /) -> Any:
    return arcsinh(x)


@_inline_jit
def atan(x: Any, /) -> Any:
    return arctan(x)


@_inline_jit
def atanh(x: Any, /) -> Any:
    return arctanh(x)


@_inline_jit
def atan2(x1: Any, x2: Any, /) -> Any:
    return arctan2(x1, x2)


def _modf_fn(x: Any) -> tuple[Any, Any]:
    (x,) = _promote_inexact(x)
    whole = _where(ew.ge(x, L.full((), 0, _dtype(x))), floor(x), ceil(x))
    return x - whole, whole


_modf = _jit("modf", _modf_fn)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    arr = _ensure("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    result: tuple[Any, Any] = _modf(arr)
    return result


@_inline_jit
def spacing(x: Any, /) -> Any:
    (arr,) = promote_args_inexact("spacing", x)
    dt = _dtype(arr)
    if T.is_complex(dt):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = _lax_const(arr, np.inf)
    if dt == T.float16:  # JAX steps float16 towards +inf only
        return ew.sub(ew.nextafter(arr, L.full_like(arr, np.inf)), arr)
    res = ew.sub(ew.nextafter(arr, copysign(inf, arr)), arr)
    # A NumPy scalar, so strong-typed: JAX's result is strong even for weak x.
    tiny = np.finfo(np.dtype(dt)).smallest_subnormal
    return _where(ew.eq(res, _lax_const(res, 0)), copysign(tiny, arr), res)


# ---------------------------------------------------------------------- i0

def _i1_maclaurin_value(k: int, x: Any) -> Any:
    """The k-th derivative of I1 near zero by its two-term Maclaurin series."""
    if k % 2 == 0:
        return ew.mul(_const(x, math.comb(k + 1, (k + 1) // 2) / 2 ** (k + 1)), x)
    return L.full_like(x, math.comb(k, k // 2) / 2 ** k)


def _i1_maclaurin_jvp(k: int, primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return _i1_maclaurin(k, x), ew.mul(_i1_maclaurin(k + 1, x), t)


_i1_maclaurin_value.__name__ = _i1_maclaurin_value.__qualname__ = "_i1_maclaurin"
_i1_maclaurin: Any = custom_jvp(_i1_maclaurin_value, nondiff_argnums=(0,))
_i1_maclaurin.defjvp(_i1_maclaurin_jvp)


def _i1(x: Any) -> Any:
    return ew.mul(ew.exp(ew.abs(x)), special.bessel_i1e(x))


def i1_impl_jvp(primals: Any, tangents: Any) -> Any:
    # Differentiating exp(|x|) i1e(x) loses all digits near 0 (the cusp of
    # |x| and cancellation in i1e'); within sqrt(eps) of 0 the series is exact.
    out, t_out = jvp(_i1, primals, tangents)
    (x,), (t,) = primals, tangents
    eps = float(ml_dtypes.finfo(np.dtype(_dtype(x))).eps)  # type: ignore[no-untyped-call]
    series = ew.le(ew.abs(x), _const(x, builtins.pow(eps, 0.5)))
    return out, _where(series, ew.mul(_i1_maclaurin(1, x), t), t_out)


i1_impl: Any = custom_jvp(_i1)
i1_impl.defjvp(i1_impl_jvp)


def _i0_value(x: Any) -> Any:
    abs_x = ew.abs(x)
    return ew.mul(ew.exp(abs_x), special.bessel_i0e(abs_x))


def i0_impl_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (x_dot,) = primals, tangents
    return i0_impl(x), ew.mul(x_dot, i1_impl(x))


_i0_value.__name__ = _i0_value.__qualname__ = "i0_impl"
i0_impl: Any = custom_jvp(_i0_value)
i0_impl.defjvp(i0_impl_jvp)


def _i0(x: Any) -> Any:
    """I0(x) = e^|x| i0e(|x|), differentiated by I0' = I1 (both custom_jvp
    functions, as JAX's)."""
    (x,) = promote_args_inexact("i0", x)
    dt = _dtype(x)
    if not T.is_float(dt):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {dt.name}")
    return i0_impl(x)


i0 = _named_jit("i0", _i0)


__all__ = [
    "abs", "absolute", "add", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctan2", "arctanh", "around", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "cbrt", "ceil", "clip", "conj", "conjugate", "cos", "cosh", "deg2rad", "degrees", "divide",
    "divmod", "equal", "exp", "exp2", "expm1", "fabs", "float_power", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "greater", "greater_equal", "heaviside", "hypot", "imag", "invert",
    "isfinite", "isinf", "isnan", "left_shift", "less", "less_equal", "log", "log10", "log1p",
    "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod",
    "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "power", "rad2deg",
    "radians", "real", "reciprocal", "remainder", "right_shift", "rint", "round", "sign", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "true_divide", "trunc", "copysign",
    "frexp", "gcd", "isclose", "isneginf", "isposinf", "lcm", "ldexp", "logaddexp", "logaddexp2",
    "nan_to_num", "signbit", "sinc", "i0", "spacing", "modf", "acos", "acosh", "asin", "asinh",
    "atan", "atan2", "atanh",
]
