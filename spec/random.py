"""``spec.random``: JAX's ``jax.random`` on Threefry-2x32 keys.

Keys are either typed (``key(seed)``: dtype ``key<fry>``, shape ``()``) or
raw (``PRNGKey(seed)``: ``uint32[2]``); raw keys are wrapped on entry
(``random_wrap``) and the key functions unwrap their results again, so a
raw key in gives a raw key out. Samplers are staged exactly as JAX stages
them (the same jitted helpers, of the same names, binding the same
primitives in the same order), which is what makes their values agree bit
for bit: every primitive involved follows XLA's CPU numerics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from spec import _prng as R
from spec import dtypes as D
from spec import lax
from spec import numpy as jnp
from spec import types as T
from spec._api import jit
from spec.array import Array
from spec.interpreter import Tracer
from spec.rules.prng import (
    random_bits_p,
    random_clone_p,
    random_fold_in_p,
    random_seed_p,
    random_split_p,
    random_unwrap_p,
    random_wrap_p,
)

__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "cauchy", "choice", "clone",
    "exponential", "fold_in", "gumbel", "key", "key_data", "key_impl", "laplace", "logistic",
    "normal", "permutation", "rademacher", "randint", "split", "truncated_normal", "uniform",
    "wrap_key_data",
]

Shape = tuple[int, ...]
# ml_dtypes' finfo/iinfo are untyped.
_finfo: Any = D.finfo
_iinfo: Any = D.iinfo


def _jitted(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@_jitted(...)`` for the samplers' staged helpers (named as JAX's)."""
    def wrap(fun: Callable[..., Any]) -> Callable[..., Any]:
        return cast(Callable[..., Any], jit(fun, **options))
    return wrap


# ------------------------------------------------------------------ utilities

def _is_key(x: Any) -> bool:
    return R.is_key_dtype(getattr(x, "dtype", None))


def _arraylike(x: Any) -> bool:
    return (isinstance(x, (np.ndarray, np.generic, Array, Tracer)) or bool(np.isscalar(x))
            or hasattr(x, "__jax_array__"))


def _canonical_shape(shape: Any) -> Shape:
    """JAX's ``canonicalize_shape``: an int or a sequence of ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape}.") from None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape}.")
    return tuple(int(d) for d in dims)


def _user_dtype(dtype: Any, name: str) -> T.DType:
    return T.to_dtype(dtype, name)


def _broadcast_shapes(*shapes: Any) -> Shape:
    """NumPy-style broadcasting of shapes (ranks padded on the left)."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting: shapes="
                         f"{[tuple(s) for s in shapes]}") from None


def _check_shape(name: str, shape: Shape, *param_shapes: Shape) -> None:
    if param_shapes:
        got = _broadcast_shapes(shape, *param_shapes)
        if tuple(shape) != tuple(got):
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                "and the result of broadcasting the shapes must equal the shape argument, "
                f"but got result {got} for shape argument {shape}.")


def _const(example: Any, val: Any) -> Any:
    """A constant of ``example``'s dtype, as lax makes one: a Python scalar
    for a weak rank-0 example (so it stays weak), else a NumPy scalar array
    (a literal when staged)."""
    aval = jnp.asarray(example).aval if not hasattr(example, "aval") else example.aval
    dt = aval.dtype
    if aval.weak_type and not aval.shape:
        py = D.scalar_type_of(example)(val)
        return py if T.python_scalar_dtype(type(py)) == dt else np.array(py, dt)
    return np.array(val, dt)


# ------------------------------------------------------------------ keys

def _check_key_data(impl: R.PRNGImpl, data: Any) -> None:
    """JAX's checks of raw key data (shape ending with the key shape, uint32)."""
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data}")
    n = len(impl.key_shape)
    if data.ndim < 1:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={data.ndim}")
    if tuple(data.shape[-n:]) != impl.key_shape:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with {impl.key_shape}; got shape={tuple(data.shape)} for "
                        f"impl={impl!r}")
    if data.dtype != np.uint32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype}")


def _random_wrap(data: Any, impl: R.PRNGImpl) -> Any:
    _check_key_data(impl, data)
    return random_wrap_p.bind(data, impl=impl)


def _check_prng_key(name: str, key: Any, *, allow_batched: bool = False) -> tuple[Any, bool]:
    """A typed key (raw keys wrapped: the flag says so), single unless batched."""
    if _is_key(key):
        typed, wrapped = key, False
    elif _arraylike(key):
        typed, wrapped = _random_wrap(key, R.THREEFRY), True
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and typed.ndim:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{np.shape(key)} != (). Use jax.vmap for batching.")
    return typed, wrapped


def _return_keys(wrapped: bool, keys: Any) -> Any:
    return random_unwrap_p.bind(keys) if wrapped else keys


def _resolve_impl(spec: Any) -> R.PRNGImpl:
    if spec is None:
        return R.THREEFRY
    if isinstance(spec, R.PRNGImpl):
        return spec
    if isinstance(spec, R.KeyTy):
        return spec.impl
    if type(spec) is str:
        if spec in R.PRNGS:
            return R.PRNGS[spec]
        if spec in R.UNSUPPORTED_PRNGS:
            raise NotImplementedError(f"spec implements the threefry2x32 PRNG only, not {spec}")
        names = ", ".join(f'"{s}"' for s in (*R.PRNGS, *R.UNSUPPORTED_PRNGS))
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                         f"{names}?")
    raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


def _key(ctor_name: str, seed: Any, impl_spec: Any) -> Any:
    impl = _resolve_impl(impl_spec)
    if _is_key(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    # A Python int goes through int64 first, so that large ints (hashes)
    # wrap instead of overflowing under x64-off, as in JAX.
    seeds = jnp.asarray(np.int64(seed)) if isinstance(seed, int) else jnp.asarray(seed)
    return random_seed_p.bind(seeds, impl=impl)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """A typed key (``key<fry>[]``) from an integer seed."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "jax.random.key")
        impl = dtype
    return _key("key", seed, impl)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802  (JAX's name)
    """A raw key (``uint32[2]``) from an integer seed."""
    return random_unwrap_p.bind(_key("PRNGKey", seed, impl))


def key_data(keys: Any) -> Any:
    """The uint32 words under a (possibly batched) key array."""
    typed, _ = _check_prng_key("key_data", keys, allow_batched=True)
    return random_unwrap_p.bind(typed)


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """Key words (uint32, trailing shape ``(2,)``) as a typed key array."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "jax.random.wrap_key_data")
        impl = dtype
    return _random_wrap(key_bits_array, _resolve_impl(impl))


def key_impl(keys: Any) -> str:
    typed, _ = _check_prng_key("key_impl", keys, allow_batched=True)
    return str(typed.dtype.impl.name)


def key_dtype(impl: Any = None) -> Any:
    return R.KeyTy(_resolve_impl(impl))


def _split(key: Any, num: Any = 2) -> Any:
    if key.ndim:
        raise TypeError("split accepts a single key, but was given a key array of shape "
                        f"{key.shape} != (). Use jax.vmap for batching.")
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    return random_split_p.bind(key, shape=shape)


def split(key: Any, num: Any = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``)."""
    typed, wrapped = _check_prng_key("split", key)
    return _return_keys(wrapped, _split(typed, num))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and a 32-bit integer."""
    typed, wrapped = _check_prng_key("fold_in", key)
    if np.ndim(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of"
                        f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
    return _return_keys(wrapped, random_fold_in_p.bind(typed, jnp.asarray(data, dtype="uint32")))


def clone(key: Any) -> Any:
    """The key itself (JAX's key-reuse checker treats the clone as fresh)."""
    return random_clone_p.bind(key)


def _random_bits(key: Any, bit_width: int, shape: Shape) -> Any:
    return random_bits_p.bind(key, bit_width=bit_width, shape=tuple(shape))


# ------------------------------------------------------------------ samplers

def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform random unsigned integers."""
    key, _ = _check_prng_key("bits", key)
    dt = T.default_uint() if dtype is None else _user_dtype(dtype, "bits")
    if not T.is_unsigned_int(dt):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _random_bits(key, dt.itemsize * 8, _canonical_shape(shape))


def _float_dtype(name: str, dtype: Any, *, complex_ok: bool = False) -> T.DType:
    dt = _user_dtype(float if dtype is None else dtype, name)
    if complex_ok:
        if not T.is_inexact(dt):
            raise ValueError(f"dtype argument to `{name}` must be a float or complex dtype, "
                             f"got {dt}")
    elif not T.is_float(dt):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.,
            maxval: Any = 1.) -> Any:
    """Uniform floats in [minval, maxval)."""
    key, _ = _check_prng_key("uniform", key)
    dt = _user_dtype(float if dtype is None else dtype, "uniform")
    shape = _canonical_shape(shape)
    if not T.is_float(dt):
        raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dt}")
    return _uniform(key, minval, maxval, shape, dt)


@_jitted(static_argnums=(3, 4))
def _uniform(key: Any, minval: Any, maxval: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("uniform", shape)
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    minval = lax.broadcast_to_rank(minval, len(shape))
    maxval = lax.broadcast_to_rank(maxval, len(shape))
    finfo = _finfo(dtype)
    nbits, nmant = int(finfo.bits), int(finfo.nmant)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypesgot {dtype}.")
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2).
    rng_bits = 8 if nmant < 8 else nbits
    raw = _random_bits(key, rng_bits, shape)
    uint_dtype = R.UINT_DTYPES[nbits]
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint_dtype)
    float_bits = lax.shift_right_logical(raw, jnp.array(rng_bits - nmant, uint_dtype))
    one_bits = np.array(1.0, dtype).view(uint_dtype)
    float_bits = lax.bitwise_or(float_bits, jnp.asarray(one_bits, dtype=uint_dtype))
    floats = lax.bitcast_convert_type(float_bits, dtype) - jnp.array(1., dtype)
    return lax.max(minval, lax.reshape(floats * (maxval - minval) + minval, shape))


def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal floats (or complex: independent real and imaginary
    parts of variance 1/2)."""
    key, _ = _check_prng_key("normal", key)
    shape = _canonical_shape(shape)
    dt = _float_dtype("normal", dtype, complex_ok=True)
    return _normal(key, shape, dt)


@_jitted(static_argnums=(1, 2))
def _normal(key: Any, shape: Shape, dtype: T.DType) -> Any:
    if T.is_complex(dtype):
        sqrt2 = np.array(np.sqrt(2), dtype)
        key_re, key_im = _split(key)
        real_dtype = np.array(0, dtype).real.dtype
        re = _normal_real(key_re, shape, real_dtype).astype(dtype)
        im = _normal_real(key_im, shape, real_dtype).astype(dtype)
        return (re + 1j * im) / sqrt2
    return _normal_real(key, shape, dtype)


@_jitted(static_argnums=(1, 2))
def _normal_real(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("normal", shape)
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    hi = np.array(1., dtype)
    u = uniform(key, shape, dtype, lo, hi)
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def _convert_and_clip_integer(val: Any, dtype: T.DType) -> Any:
    """``val`` converted to ``dtype``, clipped to its range rather than wrapped."""
    info, vinfo = _iinfo(dtype), _iinfo(val.dtype)
    min_val = _const(val, max(int(info.min), int(vinfo.min)))
    max_val = _const(val, min(int(info.max), int(vinfo.max)))
    return jnp.clip(val, min_val, max_val).astype(dtype)


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Uniform integers in [minval, maxval)."""
    key, _ = _check_prng_key("randint", key)
    dt = _user_dtype(int if dtype is None else dtype, "randint")
    shape = _canonical_shape(shape)
    if not T.is_int(dt):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    info = _iinfo(dt)
    sampling = dt
    if int(info.bits) < 32:
        # Sampled in 32 bits, which keeps the modulus bias small.
        sampling = T.int32
        minval = jnp.asarray(minval).astype("int32").clip(int(info.min), int(info.max))
        maxval = jnp.asarray(maxval).astype("int32").clip(int(info.min), int(info.max) + 1)
    return _randint(key, minval, maxval, shape, sampling).astype(dt)


@_jitted(static_argnums=(3, 4))
def _randint(key: Any, minval: Any, maxval: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    if not T.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not T.is_int(minval.dtype):
        minval = minval.astype(int)
    if not T.is_int(maxval.dtype):
        maxval = maxval.astype(int)
    # Where maxval exceeds the dtype's range the span must be one larger.
    top = _convert_and_clip_integer(jnp.array(_iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval = lax.broadcast_to_rank(minval, len(shape))
    maxval = lax.broadcast_to_rank(maxval, len(shape))
    nbits = int(_iinfo(dtype).bits)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    # Twice the bits of the dtype, reduced modulo the span (biased when the
    # span is not a power of two; the bias shrinks with the extra bits).
    k1, k2 = _split(key)
    higher_bits = _random_bits(k1, nbits, shape)
    lower_bits = _random_bits(k2, nbits, shape)
    unsigned = R.UINT_DTYPES[nbits]
    span = lax.convert_element_type(maxval - minval, unsigned)
    span = lax.select(maxval <= minval, lax.full_like(span, 1), span)
    span = lax.select(maxval_out_of_range & (maxval > minval),
                      lax.add(span, _const(span, 1)), span)
    multiplier = lax.rem(_const(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                     lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p``."""
    if shape is not None:
        shape = _canonical_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    key, _ = _check_prng_key("bernoulli", key)
    dt = T.dtype_of_value(p)
    if not T.is_float(dt):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = lax.convert_element_type(p, dt)
    return _bernoulli(key, p, shape=shape, mode=mode)


@_jitted(static_argnames=("shape", "mode"))
def _bernoulli(key: Any, p: Any, shape: Shape | None, mode: str) -> Any:
    if shape is None:
        shape = tuple(np.shape(p))
    else:
        _check_shape("bernoulli", shape, np.shape(p))
    dtype = p.dtype
    if mode == "high":
        u1, u2 = uniform(key, (2, *shape), dtype)
        u2 = u2 * 2 ** -int(_finfo(dtype).nmant)
        return u2 < p - u1
    return uniform(key, shape, dtype) < p


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability."""
    key, _ = _check_prng_key("rademacher", key)
    dt = _user_dtype(int if dtype is None else dtype, "rademacher")
    return _rademacher(key, _canonical_shape(shape), dt, None)


@_jitted(static_argnums=(1, 2, 3))
def _rademacher(key: Any, shape: Shape, dtype: T.DType, out_sharding: Any) -> Any:
    samples = bernoulli(key=key, p=0.5, shape=shape).astype(dtype)
    return (2 * samples - 1).astype(dtype)


def _float_sampler(name: str, key: Any, shape: Any, dtype: Any) -> tuple[Any, Shape, T.DType]:
    key, _ = _check_prng_key(name, key)
    dt = _float_dtype(name, dtype)
    return key, _canonical_shape(shape), dt


def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Exponential(1) floats."""
    return _exponential(*_float_sampler("exponential", key, shape, dtype))


@_jitted(static_argnums=(1, 2))
def _exponential(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("exponential", shape)
    u = uniform(key, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Laplace(0, 1) floats."""
    return _laplace(*_float_sampler("laplace", key, shape, dtype))


@_jitted(static_argnums=(1, 2))
def _laplace(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("laplace", shape)
    u = uniform(key, shape, dtype, minval=-1. + float(_finfo(dtype).epsneg), maxval=1.)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Logistic(0, 1) floats."""
    return _logistic(*_float_sampler("logistic", key, shape, dtype))


@_jitted(static_argnums=(1, 2))
def _logistic(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("logistic", shape)
    x = uniform(key, shape, dtype, minval=_finfo(dtype).tiny, maxval=1.)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def cauchy(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Cauchy floats."""
    return _cauchy(*_float_sampler("cauchy", key, shape, dtype))


@_jitted(static_argnums=(1, 2))
def _cauchy(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("cauchy", shape)
    u = uniform(key, shape, dtype, minval=_finfo(dtype).eps, maxval=1.)
    pi = _const(u, np.pi)
    return lax.tan(lax.mul(pi, lax.sub(u, _const(u, 0.5))))


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel floats (``mode="high"``: more bits near the tails)."""
    key, _ = _check_prng_key("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    shape = _canonical_shape(shape)
    if mode is None:
        mode = "low"
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    if mode == "highest" and dt == T.float32:
        raise NotImplementedError("spec: gumbel mode='highest' for float32 is not implemented")
    return _gumbel(key, shape, dt, mode)


@_jitted(static_argnums=(1, 2, 3))
def _gumbel(key: Any, shape: Shape, dtype: T.DType, mode: str) -> Any:
    _check_shape("gumbel", shape)
    info = _finfo(dtype)
    if mode in ("high", "highest"):
        high, low = _uniform(key, minval=0., maxval=1., shape=(2, *shape), dtype=dtype)
        nmant = int(info.nmant)
        x = jnp.where(high >= 0.5, high,
                      high + 2 ** -nmant * low + max(2 ** -(2 * nmant + 1), float(info.tiny)))
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(key, minval=info.tiny, maxval=1., shape=shape,
                                       dtype=dtype)))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None,
                     dtype: Any = None) -> Any:
    """Standard normal floats conditioned on [lower, upper]."""
    if shape is not None:
        shape = _canonical_shape(shape)
    key, _ = _check_prng_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    return _truncated_normal(key, lower, upper, shape, dt)


@_jitted(static_argnums=(3, 4))
def _truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None,
                      dtype: T.DType) -> Any:
    if shape is None:
        shape = _broadcast_shapes(np.shape(lower), np.shape(upper))
    else:
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = uniform(key, shape, dtype, minval=a, maxval=b)
    out = sqrt2 * lax.erf_inv(u)
    return jnp.clip(out,
                    lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype=dtype)),
                    lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype=dtype)))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` or of ``x`` along ``axis``."""
    key, _ = _check_prng_key("permutation", key)
    jnp_util_check("permutation", x)
    ndim = int(np.ndim(x))
    axis = _canonical_axis(axis, ndim or 1)
    if not ndim:
        if not T.is_int(T.dtype_of_value(x)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(x)
        return _shuffle(key, jnp.arange(r), axis)
    if independent or ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis, unique_indices=True)


def jnp_util_check(name: str, *args: Any) -> None:
    from spec.numpy._util import check_arraylike
    check_arraylike(name, *args)


def _canonical_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


@_jitted(static_argnums=(2,))
def _shuffle(key: Any, x: Any, axis: int) -> Any:
    # Sorting by random 32-bit keys, repeated so that ties (which would
    # bias the order) are unlikely: the number of rounds grows with log(n).
    exponent = 3
    uint32max = int(np.iinfo(np.uint32).max)
    num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        key, subkey = _split(key)
        sort_keys = _random_bits(subkey, 32, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True,
           p: Any = None, axis: int = 0, mode: str | None = None) -> Any:
    """Samples of ``a`` (or ``arange(a)``), uniformly or with weights ``p``."""
    key, _ = _check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    jnp_util_check("choice", a)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = _canonical_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        jnp_util_check("choice", p)
        p_arr = jnp.asarray(p)
        if not T.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(T.default_float())
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
            ind = jnp.searchsorted(p_cuml, r).astype(int)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = lax.top_k(g, k=n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    return result.reshape(tuple(shape) if arr.ndim == 0 else
                          arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Category indices drawn with probabilities ``softmax(logits)`` (the
    Gumbel-max trick)."""
    key, _ = _check_prng_key("categorical", key)
    jnp_util_check("categorical", logits)
    logits_arr = jnp.asarray(logits)
    batch_shape = tuple(int(d) for d in np.delete(logits_arr.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonical_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    return _categorical(key, logits_arr, shape, batch_shape, axis, replace, mode)


def _categorical(key: Any, logits_arr: Any, shape: Shape, batch_shape: Shape, axis: int,
                 replace: bool, mode: str | None) -> Any:
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= len(logits_arr.shape)
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % len(logits_arr.shape), logits_arr.shape[axis])
        return jnp.argmax(
            gumbel(key, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode)
            + lax.expand_dims(logits_arr, tuple(range(len(shape_prefix)))), axis=axis)
    logits_arr = logits_arr + gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode)
    k = math.prod(shape_prefix)
    if k > logits_arr.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits_arr.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits_arr, axis, -1), k)
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dimensions)
