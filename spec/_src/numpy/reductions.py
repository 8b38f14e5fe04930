"""jnp reductions, cumulative reductions and sorting.

Each function emits the primitive sequence JAX 0.12 emits: dtype handling
(integer promotion of sums, float16 upcasting, bool casts) is done with
explicit ``convert_element_type`` equations, keepdims with
``broadcast_in_dim``, and some functions are staged as named ``jit``
sub-programs exactly where JAX stages them (cumsum, sort, var, ...).
Primitives owned by other families (div, sub, reshape, rev, iota, where...)
are looked up in ``spec.lax`` / ``spec.numpy`` at call time.
"""

from __future__ import annotations

import ml_dtypes

import builtins
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core.array import Array, host_value
from spec._src.core.canonical import (
    canonical_axis, optional_axes, reduced_size, reduction_axes, static_hashable)
from spec._src.core.interpreter import Tracer, canonical_aval_of, canonical_value
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax.reduce import reduce as lax_reduce
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.shaping import _convert_element_type
from spec._src.numpy import creation
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _named_jit
from spec._src.numpy.util import (
    _inline_jit,
    Fn,
    _dtype,
    _ensure,
    _index,
    _jit,
    _ndim,
    _promote,
    _promote_inexact,
    _shape,
    check_arraylike,
)

__all__ = [
    "sum", "prod", "max", "amax", "min", "amin", "all", "any", "mean", "var", "std", "argmax",
    "argmin", "cumsum", "cumprod", "sort", "argsort", "count_nonzero", "nansum", "nanprod",
    "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin", "nancumsum",
    "nancumprod", "trace", "trapezoid", "gradient", "unwrap", "cumulative_prod", "cumulative_sum",
    "diff", "ediff1d", "minmax",
]

Axis = int | Sequence[int] | None
_builtin_all = all


# ------------------------------------------------------------------ helpers

def _operand(fun_name: str, a: Any) -> Any:
    check_arraylike(fun_name, a)
    return a


def convert(x: Any, dtype: T.DType, weak: bool = False) -> Any:
    """``x`` as (dtype, weak). Python scalars and NumPy values are converted
    eagerly (JAX constant-folds them: they become literals, not equations);
    arrays and tracers get a ``convert_element_type`` unless already right."""
    if isinstance(x, (Array, Tracer)):
        return _convert_element_type(x, dtype, weak)
    value, aval = canonical_value(x)
    if aval.dtype == dtype and aval.weak_type == weak:
        return host_value(value, aval, "convert")
    if T.is_complex(value.dtype) and not T.is_complex(dtype):
        value = value.real
    with np.errstate(all="ignore"):
        arr = np.asarray(value).astype(dtype)
    return host_value(arr, T.ArrayType(arr.shape, dtype, weak), "convert")


def canonicalize_axis(axis: Any, ndim: int) -> int:
    return canonical_axis(axis, ndim)


def reduction_dims(ndim: int, axis: Axis) -> tuple[int, ...]:
    return reduction_axes(axis, ndim)


def expand_dims(x: Any, dims: Sequence[int]) -> Any:
    """Re-insert size-1 axes at ``dims`` of the result (keepdims)."""
    aval = canonical_aval_of(x)
    ndim = aval.ndim + len(dims)
    kept = [i for i in range(ndim) if i not in dims]
    shape = [1] * ndim
    for i, d in zip(kept, aval.shape):
        shape[i] = d
    return L.broadcast_in_dim(x, tuple(shape), tuple(kept))


def promote_integer_dtype(dt: T.DType) -> T.DType:
    """Sums and products of small ints/bools accumulate in the default int."""
    if dt == T.bool_:
        return T.default_int()
    if T.is_unsigned_int(dt):
        du = T.default_uint()
        return du if T.iinfo_bits(dt) < T.iinfo_bits(du) else dt
    if T.is_signed_int(dt):
        di = T.default_int()
        return di if T.iinfo_bits(dt) < T.iinfo_bits(di) else dt
    return dt


def _upcast_f16(dt: T.DType) -> T.DType:
    return T.float32 if dt in (T.float16, T.bfloat16) else dt


def _to_inexact(dt: T.DType) -> T.DType:
    """Ints of up to 32 bits and bools become float32 (even under x64); 64-bit
    ints float64."""
    if T.is_inexact(dt):
        return dt
    return T.float64 if T.is_int(dt) and T.iinfo_bits(dt) == 64 else T.float32


def _cast_to_numeric(x: Any) -> Any:
    """Bools become int32 (in either x64 mode) before a numeric reduction."""
    aval = canonical_aval_of(x)
    return convert(x, T.int32, aval.weak_type) if aval.dtype == T.bool_ else x


def _cast_to_bool(x: Any) -> Any:
    if T.is_complex(canonical_aval_of(x).dtype):
        x = ew.real(x)
    return convert(x, T.bool_)


def _init_value(dt: T.DType, init: Any) -> np.ndarray:
    """The reduction's identity as a strong scalar of ``dt`` (inf clamps to
    the integer range)."""
    if dt == T.bool_:
        return np.array(init > 0, dtype=dt)
    if T.is_int(dt) and not (isinstance(init, (int, bool)) or np.isfinite(init)):
        info = np.iinfo(dt)
        return np.array(info.min if init < 0 else info.max, dtype=dt)
    return np.array(init, dtype=dt)


_REDUCERS: dict[str, Callable[[Any, tuple[int, ...]], Any]] = {
    "add": lr.reduce_sum, "mul": lr.reduce_prod, "max": lr.reduce_max, "min": lr.reduce_min,
    "and": lr.reduce_and, "or": lr.reduce_or, "xor": lr.reduce_xor,
}
_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "add": ew.add, "mul": ew.mul, "max": ew.max, "min": ew.min, "and": ew.bitwise_and,
    "or": ew.bitwise_or, "xor": ew.bitwise_xor,
}


def _reduction(a: Any, name: str, op: str, init: Any, *, has_identity: bool = True,
               preproc: Callable[[Any], Any] | None = None, bool_op: str | None = None,
               upcast_f16: bool = False, axis: Axis = None, dtype: Any = None,
               out: None = None, keepdims: bool = False, initial: Any = None,
               where: Any = None, promote_integers: bool = False) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = _operand(name, a)
    if where is not None and canonical_aval_of(where).dtype != T.bool_:
        raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                         f"where.dtype={canonical_aval_of(where).dtype}.")
    if initial is None and not has_identity and where is not None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    a = preproc(a) if preproc else a
    aval = canonical_aval_of(a)
    dims = reduction_axes(axis, aval.ndim, named=op in ("add", "max", "min"))
    if initial is None and not has_identity and not _builtin_all(aval.shape[d] >= 1
                                                                 for d in dims):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if dtype is None:
        result_dtype = promote_integer_dtype(aval.dtype) if promote_integers else aval.dtype
    else:
        result_dtype = T.to_dtype(dtype, name)
    comp = _upcast_f16(result_dtype) if upcast_f16 and T.is_inexact(result_dtype) \
        else result_dtype
    a = convert(a, comp)
    if comp == T.bool_ and bool_op is not None:
        op = bool_op
    init_val = _init_value(comp, init)
    if where is not None:
        a = jnp_math._where(where, a, init_val)
    result = _REDUCERS[op](a, dims)
    if initial is not None:
        init_arr = convert(initial, comp)
        if canonical_aval_of(init_arr).shape != ():
            raise ValueError("initial value must be a scalar. Got array of shape "
                             f"{canonical_aval_of(init_arr).shape}")
        result = _COMBINE[op](init_arr, result)
    if keepdims:
        result = expand_dims(result, dims)
    return convert(result, result_dtype)


# --------------------------------------------------------------- reductions

@_inline_jit
def sum(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
        keepdims: bool = False, initial: Any = None, where: Any = None,
        promote_integers: bool = True) -> Any:
    """Sum over ``axis``; bools and narrow ints accumulate in the default int."""
    return _reduction(a, "sum", "add", 0, preproc=_cast_to_numeric, bool_op="or",
                      upcast_f16=dtype is None, axis=axis, dtype=dtype, out=out,
                      keepdims=keepdims, initial=initial, where=where,
                      promote_integers=promote_integers)


@_inline_jit
def prod(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, initial: Any = None, where: Any = None,
         promote_integers: bool = True) -> Any:
    return _reduction(a, "prod", "mul", 1, preproc=_cast_to_numeric, bool_op="and",
                      upcast_f16=dtype is None, axis=axis, dtype=dtype, out=out,
                      keepdims=keepdims, initial=initial, where=where,
                      promote_integers=promote_integers)


@_inline_jit
def max(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    return _reduction(a, "max", "max", -np.inf, has_identity=False, axis=axis, out=out,
                      keepdims=keepdims, initial=initial, where=where)


@_inline_jit
def min(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    return _reduction(a, "min", "min", np.inf, has_identity=False, axis=axis, out=out,
                      keepdims=keepdims, initial=initial, where=where)


amax = max
amin = min


# The reductions behind the ufuncs' ``reduce`` methods (``jnp.maximum.reduce``,
# ``jnp.bitwise_and.reduce``, ``jnp.logaddexp.reduce``, ...), as JAX defines them.

@_inline_jit
def _reduce_max(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return _reduction(a, "max", "max", -np.inf, has_identity=False, axis=axis, dtype=dtype,
                      out=out, keepdims=keepdims, initial=initial, where=where)


@_inline_jit
def _reduce_min(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return _reduction(a, "min", "min", np.inf, has_identity=False, axis=axis, dtype=dtype,
                      out=out, keepdims=keepdims, initial=initial, where=where)


def _require_integer(x: Any) -> Any:
    dt = canonical_aval_of(x).dtype
    if not (dt == T.bool_ or T.is_int(dt)):
        raise ValueError(f"integer argument required; got dtype={dt}")
    return x


def _axes(axis: Any) -> Any:
    """JAX's ``_ensure_optional_axes``: the axis in a hashable form."""
    return optional_axes(axis)


def _bitwise_reduction(name: str, op: str, identity: int) -> Callable[..., Any]:
    def reduction(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                  keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        a = _ensure(name, a)
        dt = T.to_dtype(dtype, name) if dtype is not None else canonical_aval_of(a).dtype
        init = np.array(identity).astype(dt)
        return _reduction(a, name, op, init, preproc=_require_integer, axis=_axes(axis),
                          dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    reduction.__name__ = reduction.__qualname__ = f"_{name}"
    return _inline_jit(reduction)


def _logical_reduction(name: str, op: str, identity: bool) -> Callable[..., Any]:
    def reduction(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                  keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        return _reduction(a, name, op, identity, preproc=_cast_to_bool, axis=_axes(axis),
                          dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                          where=where)
    reduction.__name__ = reduction.__qualname__ = f"_{name}"
    return _inline_jit(reduction)


_reduce_bitwise_and = _bitwise_reduction("reduce_bitwise_and", "and", -1)
_reduce_bitwise_or = _bitwise_reduction("reduce_bitwise_or", "or", 0)
_reduce_bitwise_xor = _bitwise_reduction("reduce_bitwise_xor", "xor", 0)
_reduce_logical_and = _logical_reduction("reduce_logical_and", "and", True)
_reduce_logical_or = _logical_reduction("reduce_logical_or", "or", False)
_reduce_logical_xor = _logical_reduction("reduce_logical_xor", "xor", False)


def _logsumexp(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """log(sum(exp(a))) shifted by the (gradient-stopped) finite maximum;
    ``dtype`` is checked and then unused, as in JAX."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.logaddexp.reduce is not supported.")
    if dtype is not None:
        T.to_dtype(dtype, "jnp.logaddexp.reduce")
    a = _ensure("logsumexp", a)
    if where is not None:
        where = _ensure("logsumexp", where)
    (a_arr,) = _promote_inexact(a)
    dims = reduction_axes(axis, canonical_aval_of(a_arr).ndim)
    amax = max(jnp_math.real(a_arr), axis=dims, keepdims=keepdims, where=where,
               initial=-np.inf)
    amax = stop_gradient(ew.select(ew.is_finite(amax), amax, L.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else L.expand_dims(amax, dims)
    exp_a = ew.exp(ew.sub(a_arr, amax_with_dims.astype(canonical_aval_of(a_arr).dtype)))
    sumexp = sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    result = ew.add(ew.log(sumexp), amax.astype(canonical_aval_of(sumexp).dtype))
    return result if initial is None else jnp_math.logaddexp(initial, result)


def _logsumexp2(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """log2(sum(2**a)) through ``_logsumexp`` on ``a ln 2``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.logaddexp2.reduce is not "
                                  "supported.")
    if dtype is not None:
        T.to_dtype(dtype, "jnp.logaddexp2.reduce")
    a = _ensure("logsumexp2", a)
    if where is not None:
        where = _ensure("logsumexp2", where)
    ln2 = float(np.log(2))
    if initial is not None:
        initial = initial * ln2
    return _logsumexp(a * ln2, axis=axis, dtype=dtype, keepdims=keepdims, where=where,
                      initial=initial) / ln2


def _minmax_op(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    return ew.min(a[0], b[0]), ew.max(a[1], b[1])


def _with_initial(result: Any, initial: Any, dtype: T.DType, combine: Callable[..., Any]
                  ) -> Any:
    init_arr = _convert_element_type(L.asarray(initial), dtype)
    if canonical_aval_of(init_arr).shape != ():
        raise ValueError("initial value must be a scalar. Got array of shape "
                         f"{canonical_aval_of(init_arr).shape}")
    return combine(init_arr, result)


@_inline_jit
def _reduce_minmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
                   init_min: Any = None, init_max: Any = None, where: Any = None
                   ) -> tuple[Any, Any]:
    """Both extrema in one variadic ``lax.reduce`` (one pass, as JAX's)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.minmax is not supported.")
    a = _ensure("minmax", a)
    if where is not None:
        where = _ensure("minmax", where)
        if canonical_aval_of(where).dtype != T.bool_:
            raise ValueError("jnp.minmax: where must be None or a boolean array; got "
                             f"where.dtype={canonical_aval_of(where).dtype}.")
    if (init_min is None or init_max is None) and where is not None:
        raise ValueError("reduction operation minmax does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    aval = canonical_aval_of(a)
    dims = reduction_axes(axis, aval.ndim)
    if (init_min is None or init_max is None) and not _builtin_all(aval.shape[d] >= 1
                                                                   for d in dims):
        raise ValueError("zero-size array to reduction operation minmax which has no identity")
    a = _convert_element_type(a, aval.dtype)
    lo, hi = _init_value(aval.dtype, np.inf), _init_value(aval.dtype, -np.inf)
    a_min = a_max = a
    if where is not None:
        a_min, a_max = jnp_math._where(where, a, lo), jnp_math._where(where, a, hi)
    result_min, result_max = lax_reduce((a_min, a_max), (lo, hi), _minmax_op, dims)
    if init_min is not None:
        result_min = _with_initial(result_min, init_min, aval.dtype, ew.min)
    if init_max is not None:
        result_max = _with_initial(result_max, init_max, aval.dtype, ew.max)
    if keepdims:
        result_min, result_max = expand_dims(result_min, dims), expand_dims(result_max, dims)
    return (_convert_element_type(result_min, aval.dtype),
            _convert_element_type(result_max, aval.dtype))


def minmax(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> tuple[Any, Any]:
    """``(min, max)`` over ``axis``; ``initial`` is one bound for both or a
    pair ``(bound for the minimum, bound for the maximum)``."""
    init_min, init_max = initial if isinstance(initial, tuple) else (initial, initial)
    return _reduce_minmax(a, axis=optional_axes(axis), out=out, keepdims=keepdims,
                          init_min=init_min, init_max=init_max, where=where)


@_inline_jit
def all(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    return _reduction(a, "all", "and", True, preproc=_cast_to_bool, axis=axis, out=out,
                      keepdims=keepdims, where=where)


@_inline_jit
def any(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    return _reduction(a, "any", "or", False, preproc=_cast_to_bool, axis=axis, out=out,
                      keepdims=keepdims, where=where)


def _count(a: Any, axis: Axis, keepdims: bool, where: Any, dtype: T.DType) -> Any:
    aval = canonical_aval_of(a)
    if where is None:
        return convert(reduced_size(aval.shape, axis), dtype)
    mask = where
    if canonical_aval_of(where).shape != aval.shape:
        mask = jnp_shape.broadcast_to(where, aval.shape)
    return sum(mask, axis, dtype=dtype, keepdims=keepdims)


@_inline_jit
def mean(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
    """Arithmetic mean; ints and bools give the default float, float16 is
    accumulated in float32."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.mean is not supported.")
    a = _operand("mean", a)
    aval = canonical_aval_of(a)
    result_dtype = _to_inexact(aval.dtype) if dtype is None else T.to_dtype(dtype, "mean")
    comp = _upcast_f16(result_dtype) if dtype is None and T.is_inexact(result_dtype) \
        else result_dtype
    normalizer = _count(a, axis, keepdims, where, comp)
    total = sum(a, axis, dtype=comp, keepdims=keepdims, where=where)
    return convert(ew.div(total, normalizer), result_dtype)


def _var_promote_types(a_dtype: T.DType, dtype: T.DType | None) -> tuple[T.DType, T.DType]:
    if dtype is not None:
        if not T.is_complex(dtype) and T.is_complex(a_dtype):
            raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                             "computing the variance of an array of complex values.")
        comp, out = dtype, dtype
    elif not T.is_inexact(a_dtype):
        comp = out = _to_inexact(a_dtype)
    else:
        out = np.dtype(np.zeros((), a_dtype).real.dtype)
        comp = a_dtype
    return _upcast_f16(comp), out


def _var_fn(a: Any, axis: Axis = None, dtype: Any = None, correction: Any = 0,
            keepdims: bool = False, where: Any = None, a_mean: Any = None) -> Any:
    comp, out_dtype = _var_promote_types(canonical_aval_of(a).dtype,
                                         None if dtype is None else T.to_dtype(dtype, "var"))
    a = convert(a, comp)
    if a_mean is None:
        a_mean = mean(a, axis, dtype=comp, keepdims=True, where=where)
    else:
        a_mean = convert(a_mean, comp)
    centered = ew.sub(a, a_mean)
    if T.is_complex(comp):
        centered = ew.real(ew.mul(centered, ew.conj(centered)))
        comp = canonical_aval_of(centered).dtype
    else:
        centered = ew.square(centered)
    normalizer = _count(a, axis, keepdims, where, comp)
    normalizer = ew.sub(normalizer, convert(correction, comp))
    result = sum(centered, axis, dtype=comp, keepdims=keepdims, where=where)
    result = convert(ew.div(result, normalizer), out_dtype)
    return jnp_math._where(normalizer > 0, result, np.nan)


_var_fn.__name__ = "_var"
_var = jit(_var_fn, static_argnames=("axis", "dtype", "keepdims"))


def _axes_arg(axis: Any) -> Any:
    """A hashable spelling of ``axis`` for the static argument of a jit."""
    return optional_axes(axis)


def _correction(name: str, ddof: Any, correction: Any, out: Any) -> Any:
    """The degrees-of-freedom correction of var/std (``ddof`` is its old name)."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def var(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    correction = _correction("var", ddof, correction, out)
    a = _operand("var", a)
    return _var(a, axis=_axes_arg(axis), dtype=dtype, correction=correction,
                keepdims=keepdims, where=where, a_mean=mean)


def _std_fn(a: Any, axis: Axis = None, dtype: Any = None, correction: Any = 0,
            keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    if dtype is not None and not T.is_inexact(T.to_dtype(dtype, "std")):
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
    return ew.sqrt(var(a, axis=axis, dtype=dtype, correction=correction,
                            keepdims=keepdims, where=where, mean=mean))


_std_fn.__name__ = "_std"
_std = jit(_std_fn, static_argnames=("axis", "dtype", "keepdims"))


def std(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    correction = _correction("std", ddof, correction, out)
    a = _operand("std", a)
    return _std(a, axis=_axes_arg(axis), dtype=dtype, correction=correction,
                keepdims=keepdims, where=where, mean=mean)


# ------------------------------------------------------------ arg-reductions

def _ravel(a: Any) -> Any:
    aval = canonical_aval_of(a)
    if aval.ndim == 1 and isinstance(a, (Array, Tracer)):
        return a
    return L.reshape(a, (aval.size,))


def _arg_reduction(name: str, a: Any, axis: Any, keepdims: Any, out: None) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = _operand(name, a)
    ndim = canonical_aval_of(a).ndim
    if axis is None:
        dims = list(range(ndim))
        a, ax = _ravel(a), 0
    else:
        # JAX indexes the shape with the axis unchecked: out of range is an IndexError.
        ax = canonical_axis(axis, ndim, out_of_range=IndexError)
        dims = [ax]
    if canonical_aval_of(a).shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    fn = lr.argmax if name == "argmax" else lr.argmin
    result = fn(a, ax, int)
    return expand_dims(result, dims) if keepdims else result


@_inline_jit
def argmax(a: Any, axis: int | None = None, out: None = None,
           keepdims: bool | None = None) -> Any:
    """Index of the maximum (the first NaN if any; ties give the first index)."""
    return _arg_reduction("argmax", a, axis, keepdims, out)


@_inline_jit
def argmin(a: Any, axis: int | None = None, out: None = None,
           keepdims: bool | None = None) -> Any:
    return _arg_reduction("argmin", a, axis, keepdims, out)


# -------------------------------------------------------------- cumulative

def _cumulative(name: str, reduction: Callable[[Any, int], Any], a: Any, axis: int | None,
                dtype: Any, fill_nan: Any = None) -> Any:
    a = _operand(name, a)
    aval = canonical_aval_of(a)
    if axis is None or aval.ndim == 0:
        a = L.reshape(a, (aval.size,))
        aval = canonical_aval_of(a)
    ax = L.canonicalize_axis(0 if axis is None else axis, aval.ndim)
    if fill_nan is not None:  # nancumsum/nancumprod: NaNs become the identity
        a = jnp_math._where(_isnan(a), np.array(fill_nan, aval.dtype), a)
    if dtype is None:
        result_dtype = promote_integer_dtype(aval.dtype) if aval.dtype == T.bool_ \
            else aval.dtype
        comp = result_dtype
    elif np.dtype(dtype) == T.bool_:
        # Accumulate in an integer type, on the truth values of the input.
        result_dtype = T.bool_
        if aval.dtype != T.bool_:
            a = jnp_math.not_equal(a, 0)
        comp = promote_integer_dtype(T.bool_)
    else:
        result_dtype = comp = T.to_dtype(dtype, name)
    a = convert(a, comp)
    return convert(reduction(a, ax), result_dtype)


def _cumsum_fn(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return _cumulative("cumsum", lr.cumsum, a, axis, dtype)


def _cumprod_fn(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return _cumulative("cumprod", lr.cumprod, a, axis, dtype)


_cumsum_fn.__name__ = "cumsum"
_cumprod_fn.__name__ = "cumprod"
cumsum: Callable[..., Any] = jit(_cumsum_fn, static_argnames=("axis", "dtype"))
cumprod: Callable[..., Any] = jit(_cumprod_fn, static_argnames=("axis", "dtype"))


def _nancumsum_fn(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return _cumulative("nancumsum", lr.cumsum, a, axis, dtype, fill_nan=0)


def _nancumprod_fn(a: Any, axis: int | None = None, dtype: Any = None, out: None = None
                   ) -> Any:
    return _cumulative("nancumprod", lr.cumprod, a, axis, dtype, fill_nan=1)


_nancumsum_fn.__name__ = "nancumsum"
_nancumprod_fn.__name__ = "nancumprod"
nancumsum: Callable[..., Any] = jit(_nancumsum_fn, static_argnames=("axis", "dtype"))
nancumprod: Callable[..., Any] = jit(_nancumprod_fn, static_argnames=("axis", "dtype"))


# ------------------------------------------------------------- nan-reductions
# Each is a visible jit named after the function (JAX's @jit), whose body
# replaces NaNs by the reduction's identity with a ``_where`` and reduces;
# integer and bool inputs (which hold no NaN) go straight to the reduction.

def _isnan(x: Any) -> Any:
    return ew.ne(x, x)


def _nan_init(dt: T.DType, init: float) -> np.ndarray:
    """The identity as a strong scalar of ``dt``; infinities clamp to the
    largest finite value for float types without inf."""
    if np.isinf(init) and T.is_float(dt) and not np.isinf(np.array(init).astype(dt)):
        info = ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
        return np.array(info.min if init < 0 else info.max, dtype=dt)
    return np.array(init, dtype=dt)


def _nan_reduction(a: Any, name: str, reduction: Callable[..., Any], init: float,
                   nan_if_all_nan: bool, axis: Axis, keepdims: bool, where: Any,
                   **kwargs: Any) -> Any:
    a = _operand(name, a)
    dt = canonical_aval_of(a).dtype
    if not T.is_inexact(dt):
        return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    filled = jnp_math._where(_isnan(a), _nan_init(dt, init), a)
    out = reduction(filled, axis=axis, keepdims=keepdims, where=where, **kwargs)
    if not nan_if_all_nan:
        return out
    all_nan = all(_isnan(a), axis=axis, keepdims=keepdims)
    return jnp_math._where(all_nan, np.array(np.nan, dt), out)


def _user_dtype(dtype: Any, name: str) -> T.DType | None:
    return None if dtype is None else T.to_dtype(dtype, name)


def _nanmin_fn(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
    return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis, keepdims, where,
                          out=out, initial=initial)


def _nanmax_fn(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
    return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis, keepdims, where,
                          out=out, initial=initial)


def _nansum_fn(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return _nan_reduction(a, "nansum", sum, 0, False, axis, keepdims, where,
                          dtype=_user_dtype(dtype, "nanprod"), out=out, initial=initial)


def _nanprod_fn(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return _nan_reduction(a, "nanprod", prod, 1, False, axis, keepdims, where,
                          dtype=_user_dtype(dtype, "nanprod"), out=out, initial=initial)


def _nanmean_fn(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
                keepdims: bool = False, where: Any = None) -> Any:
    a = _operand("nanmean", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
    dt = canonical_aval_of(a).dtype
    if not T.is_inexact(dt):
        return mean(a, axis, dtype, out, keepdims, where=where)
    # Unlike mean, float16 is not accumulated in float32 here.
    comp = dt if dtype is None else T.to_dtype(dtype, "mean")
    not_nan = ew.bitwise_not(_isnan(a))
    normalizer = sum(not_nan, axis=axis, dtype=comp, keepdims=keepdims, where=where)
    total = nansum(a, axis, dtype=comp, keepdims=keepdims, where=where)
    return ew.div(total, normalizer)


def _nanvar_fn(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
               ddof: int = 0, keepdims: bool = False, where: Any = None,
               mean: Any = None) -> Any:
    a = _operand("nanvar", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
    comp, out_dtype = _var_promote_types(canonical_aval_of(a).dtype,
                                         _user_dtype(dtype, "nanvar"))
    a = convert(a, comp)
    a_mean = nanmean(a, axis, dtype=comp, keepdims=True, where=where) if mean is None \
        else convert(mean, comp)
    centered = jnp_math._where(_isnan(a), 0, ew.sub(a, a_mean))
    if T.is_complex(comp):
        centered = ew.real(ew.mul(centered, ew.conj(centered)))
    else:
        centered = ew.square(centered)
    normalizer = sum(ew.bitwise_not(_isnan(a)), axis=axis, keepdims=keepdims,
                     where=where)
    normalizer = normalizer - ddof
    empty = ew.le(normalizer, convert(0, canonical_aval_of(normalizer).dtype))
    result = sum(centered, axis, keepdims=keepdims, where=where)
    result = jnp_math._where(empty, np.nan, result)
    divisor = jnp_math._where(empty, 1, normalizer)
    result_dt = canonical_aval_of(result).dtype
    result = ew.div(result, convert(divisor, result_dt))
    return convert(result, out_dtype)


def _nanstd_fn(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
               ddof: int = 0, keepdims: bool = False, where: Any = None,
               mean: Any = None) -> Any:
    a = _operand("nanstd", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanstd is not supported.")
    return ew.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                               where=where, mean=mean))


def _nanarg_fn(name: str, fill: float) -> Callable[..., Any]:
    def fn(a: Any, axis: int | None = None, keepdims: bool = False) -> Any:
        arg = argmax if name == "nanargmax" else argmin
        if not T.is_inexact(canonical_aval_of(a).dtype):
            return arg(a, axis=axis, keepdims=keepdims)
        nan_mask = _isnan(a)
        res = arg(jnp_math._where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
        return jnp_math._where(all(nan_mask, axis=axis, keepdims=keepdims), -1, res)
    fn.__name__ = "_" + name
    return fn


def _named(name: str, fn: Callable[..., Any], statics: tuple[str, ...]) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    jitted: Callable[..., Any] = jit(fn, static_argnames=statics)
    return jitted


nanmin = _named("nanmin", _nanmin_fn, ("axis", "keepdims"))
nanmax = _named("nanmax", _nanmax_fn, ("axis", "keepdims"))
nansum = _named("nansum", _nansum_fn, ("axis", "dtype", "keepdims"))
nanprod = _named("nanprod", _nanprod_fn, ("axis", "dtype", "keepdims"))
nanmean = _named("nanmean", _nanmean_fn, ("axis", "dtype", "keepdims"))
nanvar = _named("nanvar", _nanvar_fn, ("axis", "dtype", "keepdims"))
nanstd = _named("nanstd", _nanstd_fn, ("axis", "dtype", "keepdims"))
_nanargmax = _named("_nanargmax", _nanarg_fn("nanargmax", -np.inf), ("axis", "keepdims"))
_nanargmin = _named("_nanargmin", _nanarg_fn("nanargmin", np.inf), ("axis", "keepdims"))


def _nanarg(name: str, jitted: Callable[..., Any], a: Any, axis: int | None, out: None,
            keepdims: bool | None) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = _operand(name, a)
    ax = None if axis is None else operator.index(axis)
    return jitted(a, ax, keepdims=bool(keepdims))


def nanargmax(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
    """Index of the maximum ignoring NaNs; -1 where a slice is all NaN."""
    return _nanarg("nanargmax", _nanargmax, a, axis, out, keepdims)


def nanargmin(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
    return _nanarg("nanargmin", _nanargmin, a, axis, out, keepdims)


# -------------------------------------------------------------------- trace

def _trace_fn(a: Any, offset: Any = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: None = None) -> Any:
    a = _operand("trace", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    shape = canonical_aval_of(a).shape
    nd = len(shape)
    if L.canonicalize_axis(axis1, nd) == L.canonicalize_axis(axis2, nd):
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    dt = _user_dtype(dtype, "trace")
    a = jnp_shape.moveaxis(a, (axis1, axis2), (-2, -1))
    mask = creation.eye(shape[axis1], shape[axis2], k=offset, dtype=bool)
    a = jnp_math._where(mask, a, creation.zeros_like(a))
    return sum(a, axis=(-2, -1), dtype=dt)


trace = _named("trace", _trace_fn, ("axis1", "axis2", "dtype"))


# ------------------------------------------------------------------ sorting

def _sort_fn(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
             stable: bool = True, descending: bool = False) -> Any:
    if kind is not None:
        raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    a = _operand("sort", a)
    if axis is None:
        a, axis = _ravel(a), 0
    dim = L.canonicalize_axis(axis, canonical_aval_of(a).ndim)
    result = lr.sort(a, dimension=dim, is_stable=stable)
    return slicing.rev(result, (dim,)) if descending else result


def _argsort_fn(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
                stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    if kind is not None:
        raise TypeError("'kind' argument to argsort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to argsort is not supported.")
    a = _operand("argsort", a)
    if axis is None:
        a, axis = _ravel(a), 0
    aval = canonical_aval_of(a)
    dim = L.canonicalize_axis(axis, aval.ndim)
    if dtype is not None:
        idx_dtype = T.to_dtype(dtype, "argsort")
    else:
        idx_dtype = T.int64 if aval.shape[dim] > np.iinfo(np.int32).max else T.default_int()
    iota = L.broadcasted_iota(idx_dtype, aval.shape, dim)
    if descending and stable:
        a = slicing.rev(a, (dim,))
        iota = slicing.rev(iota, (dim,))
    _, indices = lr.sort_key_val(a, iota, dimension=dim, is_stable=stable)
    return slicing.rev(indices, (dim,)) if descending else indices


_sort_fn.__name__ = "sort"
_argsort_fn.__name__ = "argsort"
sort: Callable[..., Any] = jit(_sort_fn, static_argnames=("axis", "kind", "order", "stable",
                                                          "descending"))
argsort: Callable[..., Any] = jit(_argsort_fn, static_argnames=(
    "axis", "kind", "order", "stable", "descending", "dtype"))


def _count_nonzero_fn(a: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    a = _operand("count_nonzero", a)
    zero = convert(0, canonical_aval_of(a).dtype)
    return sum(ew.ne(a, zero), axis=axis, dtype=T.default_int(), keepdims=keepdims)


_count_nonzero_fn.__name__ = "count_nonzero"
count_nonzero: Callable[..., Any] = jit(_count_nonzero_fn, static_argnames=("axis", "keepdims"))


def _array_api_cumulative(name: str, fn: Fn, x: Any, axis: int | None, dtype: Any,
                          include_initial: bool, initial: int, promote: bool) -> Any:
    arr = _ensure(name, x)
    nd = _ndim(arr)
    if nd == 0:
        raise ValueError(f"{name}: the input must be non-scalar, but a scalar value or scalar "
                         "array was given.")
    if axis is None:
        if nd > 1:
            raise ValueError(f"{name}: the input array has rank {nd}, but axis was not set to "
                             "an explicit value; axis is only optional for one-dimensional "
                             "arrays.")
        axis = 0
    ax = L.canonicalize_axis(axis, nd)
    if dtype is None and promote and T.is_int(_dtype(arr)):
        # cumulative_sum widens small integers as sum does; cumulative_prod does not.
        dtype = promote_integer_dtype(_dtype(arr))
    out = fn(arr, axis=ax, dtype=dtype)
    if include_initial:
        edge = list(_shape(arr))
        edge[ax] = 1
        out = slicing.concatenate([L.full(tuple(edge), initial, _dtype(out)), out], ax)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    return _array_api_cumulative("cumulative_sum", cumsum, x, axis, dtype, include_initial, 0,
                                 True)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    # The reduction unjitted, as JAX calls it here.
    def reduce(a: Any, axis: int, dtype: Any) -> Any:
        return _cumulative("cumulative_prod", lr.cumprod, a, axis, dtype)
    return _array_api_cumulative("cumulative_prod", reduce, x, axis, dtype, include_initial, 1,
                                 False)


def _diff_fn(a: Any, n: int = 1, axis: int = -1, prepend: Any = None,
             append: Any = None) -> Any:
    arr = a
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    nd = _ndim(arr)
    if nd == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    ax = L.canonicalize_axis(axis, nd)
    parts: list[Any] = []
    for extra, before in ((prepend, True), (append, False)):
        if extra is None:
            continue
        extra = _ensure("diff", extra)
        if _ndim(extra) == 0:
            edge = list(_shape(arr))
            edge[ax] = 1
            extra = jnp_shape.broadcast_to(extra, tuple(edge))
        parts.append((before, extra))
    combined = [p for b, p in parts if b] + [arr] + [p for b, p in parts if not b]
    if len(combined) > 1:
        arr = jnp_shape.concatenate(combined, ax)
    hi = tuple(slice(1, None) if i == ax else slice(None) for i in range(nd))
    lo = tuple(slice(None, -1) if i == ax else slice(None) for i in range(nd))
    # Booleans have no subtraction: NumPy (and JAX) take "changed" instead.
    op = jnp_math.not_equal if _dtype(arr) == T.bool_ else jnp_math.subtract
    for _ in range(n):
        arr = op(arr[hi], arr[lo])
    return arr


_diff = _jit("diff", _diff_fn, ("n", "axis"))


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    arr = _ensure("diff", a)
    n = _index(static_hashable(n, "n"), "'n' argument of jnp.diff")
    axis = _index(static_hashable(axis, "axis"), "'axis' argument of jnp.diff")
    return _diff(arr, n=n, axis=axis, prepend=prepend, append=append)


def _ediff1d_fn(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    arr = jnp_shape.ravel(ary)
    out = ew.sub(arr[1:], arr[:-1])
    if to_begin is not None:
        out = jnp_shape.concatenate((jnp_shape.ravel(jnp_shape.astype(to_begin, _dtype(arr))), out))
    if to_end is not None:
        out = jnp_shape.concatenate((out, jnp_shape.ravel(jnp_shape.astype(to_end, _dtype(arr)))))
    return out


_ediff1d = _jit("ediff1d", _ediff1d_fn)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    arr = _ensure("ediff1d", ary)
    if _dtype(arr) == T.bool_:
        raise TypeError("ediff1d does not accept boolean input (sub of bool is undefined)")
    for extra in (to_end, to_begin):
        if extra is not None:
            check_arraylike("ediff1d", extra)
    return _ediff1d(arr, to_end, to_begin)


def _gradient_fn(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None
                 ) -> Any:
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not "
                                  "supported.")
    a, *spacing = _promote_inexact(f, *varargs)
    nd = _ndim(a)
    axes = tuple(range(nd)) if axis is None else tuple(
        L.canonicalize_axis(i, nd) for i in ((axis,) if isinstance(axis, int) else axis))
    if not axes:
        return []
    if builtins.min(_shape(a)[i] for i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least 2 elements are required.")
    if not spacing:
        steps: list[Any] = [1.0] * len(axes)
    elif len(spacing) == 1:
        steps = spacing * len(axes)
    elif len(spacing) == len(axes):
        steps = list(spacing)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, steps)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_along(a: Any, h: Any, axis: int) -> Any:
    def sl(x: Any, start: int | None, stop: int | None) -> Any:
        return slicing.slice_in_dim(x, start, stop, axis=axis)
    upper = sl(a, 1, 2) - sl(a, 0, 1)
    lower = sl(a, -1, None) - sl(a, -2, -1)
    if np.ndim(h) == 0:
        inner = (sl(a, 2, None) - sl(a, None, -2)) * 0.5 / h
        lower = lower / h
        upper = upper / h
    elif np.ndim(h) == 1:
        if _shape(h)[0] != _shape(a)[axis]:
            raise ValueError("Spacing arrays must have the same length as the dimension along "
                             "which the gradient is calculated.")
        hs = [1] * _ndim(a)
        hs[axis] = _shape(h)[0]
        h = jnp_shape.reshape(h, tuple(hs))
        upper = upper / (sl(h, 1, 2) - sl(h, 0, 1))
        lower = lower / (sl(h, -1, None) - sl(h, -2, -1))
        dx1 = sl(h, 1, -1) - sl(h, 0, -2)
        dx2 = sl(h, 2, None) - sl(h, 1, -1)
        c0 = -dx2 / (dx1 * (dx1 + dx2))
        c1 = (dx2 - dx1) / (dx1 * dx2)
        c2 = dx1 / (dx2 * (dx1 + dx2))
        inner = c0 * sl(a, 0, -2) + c1 * sl(a, 1, -1) + c2 * sl(a, 2, None)
    else:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return jnp_shape.concatenate((upper, inner, lower), axis=axis)


_gradient = _jit("gradient", _gradient_fn, ("axis", "edge_order"))


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None) -> Any:
    check_arraylike("gradient", f, *varargs)
    return _gradient(f, *varargs, axis=static_hashable(axis, 'axis'), edge_order=edge_order)


def _unwrap_fn(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    p, period = _promote(p, period)
    if T.is_complex(_dtype(p)):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if _shape(p)[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period // 2 if T.is_int(_dtype(p)) else period / 2
    dd = diff(p, axis=axis)
    ddmod = jnp_math.mod(dd + interval, period) - interval
    ddmod = jnp_math._where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = jnp_math._where(jnp_math.abs(dd) < discont, 0, ddmod - dd)
    ax = L.canonicalize_axis(axis, _ndim(p))
    head = slicing.slice_in_dim(p, 0, 1, axis=ax)
    tail = slicing.slice_in_dim(p, 1, None, axis=ax) + cumsum(correction, axis=ax)
    return jnp_shape.concatenate((head, tail), axis=ax)


_unwrap = _jit("unwrap", _unwrap_fn, ("axis",))


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    arr = _ensure("unwrap", p)
    return _unwrap(arr, discont, axis=operator.index(axis), period=period)


def _trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    if x is None:
        y = _ensure("trapezoid", y)
        (ya,) = _promote_inexact(y)
        dxa = L.asarray(dx)
        if _ndim(dxa) > 0:
            dxa = L.expand_dims(dxa, tuple(range(_ndim(ya) - _ndim(dxa))))
            dxa = jnp_shape.moveaxis(dxa, axis, -1)
    else:
        y, x = _ensure("trapezoid", y, x)
        ya, xa = _promote_inexact(y, x)
        dxa = diff(xa) if _ndim(xa) == 1 else jnp_shape.moveaxis(diff(xa, axis=axis), axis, -1)
    ya = jnp_shape.moveaxis(ya, axis, -1)
    if _ndim(dxa) == 0 or _shape(dxa)[-1] == 1:
        # Uniform spacing: dx * (sum - half the two end points).
        d = dxa if _ndim(dxa) == 0 else dxa[..., 0]
        return d * (sum(ya, -1) - 0.5 * (ya[..., 0] + ya[..., -1]))
    return 0.5 * sum(dxa * (ya[..., 1:] + ya[..., :-1]), -1)


_trapezoid_jit = _named_jit("trapezoid", _trapezoid, static_argnames=("axis",))


_UNIT_DX = 1.0


def trapezoid(y: Any, x: Any = None, dx: Any = _UNIT_DX, axis: int = -1) -> Any:
    # An omitted dx is the jitted function's own default, a constant of its
    # body, as in JAX; a dx that is passed (even 1.0) is an argument.
    if dx is _UNIT_DX:
        return _trapezoid_jit(y, x, axis=axis)
    return _trapezoid_jit(y, x, dx, axis=axis)
