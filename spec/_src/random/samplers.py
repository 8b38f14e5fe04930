"""``spec._src.random.samplers``: JAX's ``jax.random`` distributions.

Each sampler takes a key (``spec._src.random.keys``) and draws from it. Samplers are staged
exactly as JAX stages them (the same jitted helpers, of the same names, binding the same
primitives in the same order), which is what makes their values agree bit for bit: every
primitive involved follows XLA's CPU numerics. A sampler's arguments are checked by
``SamplerArgs``, step by step, in the order in which JAX checks that sampler's.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core import dtypes as D
from spec._src.core import prng as R
from spec._src.core import types as T
from spec._src.core.array import SpecInternalError
from spec._src.core.config import numpy_rank_promotion
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import (
    JaxprTrace,
    JitTracer,
    Tracer,
    Var,
    canonical_value,
    current_trace,
    eval_jaxpr_values,
    is_concrete,
    trace_to_jaxpr,
)
from spec._src.core.sharding import AxisType, NamedSharding, P, get_abstract_mesh
from spec._src.core.types import ArrayType
from spec._src.lax import elementwise as ew
from spec._src.lax import reductions as lr
from spec._src.lax import shaping as L
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax.control_flow import while_loop
from spec._src.lax.prng import random_gamma_p, register_gamma_sampler
from spec._src.lax.reshard import auto_axes
from spec._src.lax.loops import scan
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.numpy import creation, indexing, linalg, reductions, sorting
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.linalg import linalg as jnp_linalg
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.util import check_arraylike, to_weak_or_strong
from spec._src.random.keys import check_prng_key, random_bits, split, split_key

__all__ = [
    "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare",
    "choice", "dirichlet", "double_sided_maxwell", "exponential", "f", "gamma",
    "generalized_normal", "geometric", "gumbel", "laplace", "logistic", "loggamma",
    "lognormal", "maxwell", "multinomial", "multivariate_normal", "normal", "orthogonal",
    "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh", "t",
    "triangular", "truncated_normal", "uniform", "wald", "weibull_min",
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
    aval = creation.asarray(example).aval if not hasattr(example, "aval") else example.aval
    dt = aval.dtype
    if aval.weak_type and not aval.shape:
        py = D.scalar_type_of(example)(val)
        return py if T.python_scalar_dtype(type(py)) == dt else np.array(py, dt)
    return np.array(val, dt)


def _safe_to_cast(value: Any, dtype: T.DType) -> bool:
    """JAX's ``dtypes.safe_to_cast``: casting loses nothing under promotion
    (the target counted as a strong type)."""
    if D.dtype_of(value) == dtype:
        return True
    return bool(T.result_type(value, dtype) == dtype)


def _check_all_safe_to_cast(name: str, dtype: T.DType, *args: Any) -> None:
    for arg in args:
        if not _safe_to_cast(arg, dtype):
            raise T.TypePromotionError(
                f"In arguments to {name}, cannot safely cast argument of type "
                f"{creation.asarray(arg).dtype} to {dtype}")


def _check_broadcast_shapes(name: str, shape: Any, *args: Any) -> Shape:
    """The sample shape: ``shape`` (checked against the parameters'), or
    the parameters' broadcast shape."""
    arg_shapes = [tuple(np.shape(a)) for a in args]
    if shape is None:
        return _broadcast_shapes(*arg_shapes) if arg_shapes else ()
    shp = _canonical_shape(shape)
    _check_shape(name, shp, *arg_shapes)
    return shp


# ------------------------------------------------------------------ out_sharding

def _sampler_sharding(out_sharding: Any, name: str, shape: Shape | None) -> Any:
    """``out_sharding`` (None, P or NamedSharding) as a NamedSharding over the context mesh,
    or None; moreover a scalar sample under a mesh whose axes are all Explicit is made
    replicated (``P()``), as JAX does."""
    sharding = canonicalize_out_sharding(out_sharding, name)
    mesh = get_abstract_mesh()
    all_explicit = bool(mesh.axis_types) and all(t == AxisType.Explicit
                                                  for t in mesh.axis_types)
    if all_explicit and sharding is None and not shape:
        sharding = NamedSharding(mesh, P())
    return sharding


def _maybe_auto_axes(fun: Callable[..., Any], out_sharding: Any, **static: Any
                     ) -> Callable[..., Any]:
    """``fun`` with ``static`` bound; given an output sharding, run under the
    mesh's Explicit axes switched to Auto and resharded to it on the way out."""
    bound = functools.partial(fun, **static)
    if out_sharding is None:
        return bound
    return cast(Callable[..., Any], auto_axes(bound, out_sharding=out_sharding,
                                              axes=out_sharding.mesh.explicit_axes))


# ------------------------------------------------------------------ arguments

_METHODS = ("exact", "approximate")


@dataclasses.dataclass(frozen=True)
class SamplerArgs:
    """A sampler call's key, dtype, shape and output sharding, each checked and made
    canonical by one step. JAX checks each sampler's arguments in an order of its own,
    which decides the error that a call with several bad arguments raises; so a sampler
    spells its steps out in its order, e.g.
    ``SamplerArgs("uniform").with_key(key).with_dtype(dtype).with_shape(shape)``."""

    name: str
    key: Any = None
    checked_dtype: T.DType | None = None
    shape: Shape | None = None
    sharding: NamedSharding | None = None

    @property
    def dtype(self) -> T.DType:
        if self.checked_dtype is None:
            raise SpecInternalError(f"{self.name}: the dtype is read before it is checked")
        return self.checked_dtype

    def with_key(self, key: Any) -> SamplerArgs:
        """One typed key (a raw key is wrapped); a key array is a ValueError."""
        typed, _ = check_prng_key(self.name, key)
        return dataclasses.replace(self, key=typed)

    def with_dtype(self, dtype: Any, default: Any = float) -> SamplerArgs:
        """The requested dtype (``default`` when None), canonical."""
        dt = T.to_dtype(default if dtype is None else dtype, self.name)
        return dataclasses.replace(self, checked_dtype=dt)

    def require_dtype(self, is_kind: Callable[[T.DType], bool], kind: str, *,
                      shown: str | None = None) -> SamplerArgs:
        """A ValueError unless the dtype is ``kind`` (``"a float"``, ...); the message
        names the sampler (or ``shown``)."""
        if not is_kind(self.dtype):
            raise ValueError(f"dtype argument to `{shown or self.name}` must be {kind} dtype, "
                             f"got {self.dtype}")
        return self

    def with_float_dtype(self, dtype: Any, *, shown: str | None = None) -> SamplerArgs:
        """The requested dtype (default float), which must be a float dtype."""
        return self.with_dtype(dtype).require_dtype(T.is_float, "a float", shown=shown)

    def with_shape(self, shape: Any) -> SamplerArgs:
        """The sample shape: an int or a sequence of ints."""
        return dataclasses.replace(self, shape=_canonical_shape(shape))

    def with_optional_shape(self, shape: Any) -> SamplerArgs:
        """As ``with_shape``; None (the parameters' shape, found later) stays None."""
        return self if shape is None else self.with_shape(shape)

    def with_broadcast_shape(self, shape: Any, *params: Any) -> SamplerArgs:
        """The sample shape: ``shape``, broadcast-compatible with the parameters' shapes,
        or (when None) their broadcast shape."""
        return dataclasses.replace(self, shape=_check_broadcast_shapes(self.name, shape,
                                                                       *params))

    def require_safe_cast(self, *params: Any) -> SamplerArgs:
        """A TypePromotionError unless each parameter converts to the dtype losslessly."""
        _check_all_safe_to_cast(self.name, self.dtype, *params)
        return self

    def require_known_method(self, method: str) -> SamplerArgs:
        """A ValueError unless ``method`` is ``"exact"`` or ``"approximate"``."""
        if method not in _METHODS:
            raise ValueError(f"method argument to `{self.name}` must be one of "
                             f"{{'exact', 'approximate'}}, got {method!r}")
        return self

    def require_implemented_method(self, method: str) -> SamplerArgs:
        """A NotImplementedError for ``method="approximate"``, which spec lacks."""
        if method == "approximate":
            raise NotImplementedError(f"spec: {self.name}(method='approximate') is not "
                                      "implemented")
        return self

    def with_sharding(self, out_sharding: Any) -> SamplerArgs:
        """``out_sharding`` made canonical; a scalar sample under an all-Explicit mesh is
        replicated when none is given."""
        return dataclasses.replace(self, sharding=_sampler_sharding(out_sharding, self.name,
                                                                     self.shape))

    def with_given_sharding(self, out_sharding: Any) -> SamplerArgs:
        """``out_sharding`` made canonical, and None when none is given."""
        return dataclasses.replace(self, sharding=canonicalize_out_sharding(out_sharding,
                                                                            self.name))

    def auto_axes(self, fun: Callable[..., Any], **static: Any) -> Callable[..., Any]:
        """``fun`` with ``static`` bound, run under Auto axes and resharded to the
        output sharding when there is one."""
        return _maybe_auto_axes(fun, self.sharding, **static)


# ------------------------------------------------------------------ samplers

def bits(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Uniform random unsigned integers."""
    args = (SamplerArgs("bits").with_key(key).with_dtype(dtype, T.default_uint())
            .require_dtype(T.is_unsigned_int, "an unsigned int").with_shape(shape)
            .with_sharding(out_sharding))
    return args.auto_axes(random_bits, bit_width=args.dtype.itemsize * 8,
                          shape=args.shape)(args.key)


def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.,
            maxval: Any = 1., *, out_sharding: Any = None) -> Any:
    """Uniform floats in [minval, maxval)."""
    args = (SamplerArgs("uniform").with_key(key).with_dtype(dtype).with_shape(shape)
            .with_sharding(out_sharding).require_dtype(T.is_float, "a float"))
    return args.auto_axes(_uniform, shape=args.shape, dtype=args.dtype)(args.key, minval,
                                                                        maxval)


@_jitted(static_argnums=(3, 4))
def _uniform(key: Any, minval: Any, maxval: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("uniform", shape)
    minval = L.convert_element_type(minval, dtype)
    maxval = L.convert_element_type(maxval, dtype)
    minval = L.broadcast_to_rank(minval, len(shape))
    maxval = L.broadcast_to_rank(maxval, len(shape))
    finfo = _finfo(dtype)
    nbits, nmant = int(finfo.bits), int(finfo.nmant)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypesgot {dtype}.")
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2).
    rng_bits = 8 if nmant < 8 else nbits
    raw = random_bits(key, rng_bits, shape)
    uint_dtype = R.UINT_DTYPES[nbits]
    if rng_bits != nbits:
        raw = L.convert_element_type(raw, uint_dtype)
    float_bits = ew.shift_right_logical(raw, creation.array(rng_bits - nmant, uint_dtype))
    one_bits = np.array(1.0, dtype).view(uint_dtype)
    float_bits = ew.bitwise_or(float_bits, creation.asarray(one_bits, dtype=uint_dtype))
    floats = L.bitcast_convert_type(float_bits, dtype) - creation.array(1., dtype)
    return ew.max(minval, L.reshape(floats * (maxval - minval) + minval, shape))


def normal(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Standard normal floats (or complex: independent real and imaginary
    parts of variance 1/2)."""
    args = (SamplerArgs("normal").with_key(key).with_shape(shape).with_sharding(out_sharding)
            .with_dtype(dtype).require_dtype(T.is_inexact, "a float or complex"))
    return args.auto_axes(_normal, shape=args.shape, dtype=args.dtype)(args.key)


@_jitted(static_argnums=(1, 2))
def _normal(key: Any, shape: Shape, dtype: T.DType) -> Any:
    if T.is_complex(dtype):
        sqrt2 = np.array(np.sqrt(2), dtype)
        key_re, key_im = split_key(key)
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
    return ew.mul(np.array(np.sqrt(2), dtype), ew.erf_inv(u))


def _convert_and_clip_integer(val: Any, dtype: T.DType) -> Any:
    """``val`` converted to ``dtype``, clipped to its range rather than wrapped."""
    info, vinfo = _iinfo(dtype), _iinfo(val.dtype)
    min_val = _const(val, max(int(info.min), int(vinfo.min)))
    max_val = _const(val, min(int(info.max), int(vinfo.max)))
    return jnp_math.clip(val, min_val, max_val).astype(dtype)


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None, *,
            out_sharding: Any = None) -> Any:
    """Uniform integers in [minval, maxval)."""
    args = (SamplerArgs("randint").with_key(key).with_dtype(dtype, int).with_shape(shape)
            .with_sharding(out_sharding))
    dt = args.dtype
    if not T.is_int(dt):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    info = _iinfo(dt)
    sampling = dt
    if int(info.bits) < 32:
        # Sampled in 32 bits, which keeps the modulus bias small.
        sampling = T.int32
        minval = creation.asarray(minval).astype("int32").clip(int(info.min), int(info.max))
        maxval = creation.asarray(maxval).astype("int32").clip(int(info.min), int(info.max) + 1)
    return args.auto_axes(_randint, shape=args.shape, dtype=sampling)(
        args.key, minval, maxval).astype(dt)


@_jitted(static_argnums=(3, 4))
def _randint(key: Any, minval: Any, maxval: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    if not T.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    minval = creation.asarray(minval)
    maxval = creation.asarray(maxval)
    if not T.is_int(minval.dtype):
        minval = minval.astype(int)
    if not T.is_int(maxval.dtype):
        maxval = maxval.astype(int)
    # Where maxval exceeds the dtype's range the span must be one larger.
    top = _convert_and_clip_integer(creation.array(_iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = ew.gt(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval = L.broadcast_to_rank(minval, len(shape))
    maxval = L.broadcast_to_rank(maxval, len(shape))
    nbits = int(_iinfo(dtype).bits)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    # Twice the bits of the dtype, reduced modulo the span (biased when the
    # span is not a power of two; the bias shrinks with the extra bits).
    k1, k2 = split_key(key)
    higher_bits = random_bits(k1, nbits, shape)
    lower_bits = random_bits(k2, nbits, shape)
    unsigned = R.UINT_DTYPES[nbits]
    span = L.convert_element_type(maxval - minval, unsigned)
    span = ew.select(maxval <= minval, L.full_like(span, 1), span)
    span = ew.select(maxval_out_of_range & (maxval > minval),
                      ew.add(span, _const(span, 1)), span)
    multiplier = ew.rem(_const(span, 2 ** (nbits // 2)), span)
    multiplier = ew.rem(ew.mul(multiplier, multiplier), span)
    offset = ew.add(ew.mul(ew.rem(higher_bits, span), multiplier),
                     ew.rem(lower_bits, span))
    offset = ew.rem(offset, span)
    return ew.add(minval, L.convert_element_type(offset, dtype))


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low", *,
              out_sharding: Any = None) -> Any:
    """Booleans that are True with probability ``p``."""
    args = SamplerArgs("bernoulli").with_optional_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    args = args.with_key(key).with_given_sharding(out_sharding)
    dt = T.dtype_of_value(p)
    if not T.is_float(dt):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = L.convert_element_type(p, dt)
    return args.auto_axes(_bernoulli, shape=args.shape, mode=mode)(args.key, p)


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


def rademacher(key: Any, shape: Any = (), dtype: Any = None, *,
               out_sharding: Any = None) -> Any:
    """-1 or +1 with equal probability."""
    args = (SamplerArgs("rademacher").with_key(key).with_dtype(dtype, int).with_shape(shape)
            .with_sharding(out_sharding))
    return _rademacher(args.key, args.shape, args.dtype, args.sharding)


@_jitted(static_argnums=(1, 2, 3))
def _rademacher(key: Any, shape: Shape, dtype: T.DType, out_sharding: Any) -> Any:
    samples = bernoulli(key=key, p=0.5, shape=shape, out_sharding=out_sharding).astype(dtype)
    return (2 * samples - 1).astype(dtype)


def _float_sampler(name: str, fun: Callable[..., Any], key: Any, shape: Any, dtype: Any,
                   out_sharding: Any) -> Any:
    """A sampler of one key, a shape and a float dtype."""
    args = (SamplerArgs(name).with_key(key).with_float_dtype(dtype).with_shape(shape)
            .with_sharding(out_sharding))
    return args.auto_axes(fun, shape=args.shape, dtype=args.dtype)(args.key)


def exponential(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Exponential(1) floats."""
    return _float_sampler("exponential", _exponential, key, shape, dtype, out_sharding)


@_jitted(static_argnums=(1, 2))
def _exponential(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("exponential", shape)
    u = uniform(key, shape, dtype)
    return ew.neg(ew.log1p(ew.neg(u)))


def laplace(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Laplace(0, 1) floats."""
    return _float_sampler("laplace", _laplace, key, shape, dtype, out_sharding)


@_jitted(static_argnums=(1, 2))
def _laplace(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("laplace", shape)
    u = uniform(key, shape, dtype, minval=-1. + _finfo(dtype).epsneg, maxval=1.)
    return ew.mul(ew.sign(u), ew.log1p(ew.neg(ew.abs(u))))


def logistic(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Logistic(0, 1) floats."""
    return _float_sampler("logistic", _logistic, key, shape, dtype, out_sharding)


@_jitted(static_argnums=(1, 2))
def _logistic(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("logistic", shape)
    x = uniform(key, shape, dtype, minval=_finfo(dtype).tiny, maxval=1.)
    return ew.sub(ew.log(x), ew.log1p(ew.neg(x)))


def cauchy(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Standard Cauchy floats."""
    return _float_sampler("cauchy", _cauchy, key, shape, dtype, out_sharding)


@_jitted(static_argnums=(1, 2))
def _cauchy(key: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("cauchy", shape)
    u = uniform(key, shape, dtype, minval=_finfo(dtype).eps, maxval=1.)
    pi = _const(u, np.pi)
    return ew.tan(ew.mul(pi, ew.sub(u, _const(u, 0.5))))


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None, *,
           out_sharding: Any = None) -> Any:
    """Standard Gumbel floats (``mode="high"``: more bits near the tails)."""
    args = (SamplerArgs("gumbel").with_key(key).with_float_dtype(dtype).with_shape(shape)
            .with_sharding(out_sharding))
    if mode is None:
        mode = "low"
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    if mode == "highest" and args.dtype == T.float32:
        raise NotImplementedError("spec: gumbel mode='highest' for float32 is not implemented")
    return args.auto_axes(_gumbel, shape=args.shape, dtype=args.dtype, mode=mode)(args.key)


@_jitted(static_argnums=(1, 2, 3))
def _gumbel(key: Any, shape: Shape, dtype: T.DType, mode: str) -> Any:
    _check_shape("gumbel", shape)
    info = _finfo(dtype)
    if mode in ("high", "highest"):
        high, low = _uniform(key, minval=0., maxval=1., shape=(2, *shape), dtype=dtype)
        nmant = int(info.nmant)
        x = jnp_math._where(high >= 0.5, high,
                            high + 2 ** -nmant * low + max(2 ** -(2 * nmant + 1), float(info.tiny)))
        return -jnp_math.log(-jnp_math.log1p(-x))
    return -jnp_math.log(-jnp_math.log(_uniform(key, minval=info.tiny, maxval=1., shape=shape,
                                       dtype=dtype)))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None,
                     dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Standard normal floats conditioned on [lower, upper]."""
    args = (SamplerArgs("truncated_normal").with_optional_shape(shape).with_key(key)
            .with_given_sharding(out_sharding).with_float_dtype(dtype))
    return args.auto_axes(_truncated_normal, shape=args.shape, dtype=args.dtype)(
        args.key, lower, upper)


@_jitted(static_argnums=(3, 4))
def _truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None,
                      dtype: T.DType) -> Any:
    if shape is None:
        shape = _broadcast_shapes(np.shape(lower), np.shape(upper))
    else:
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = L.convert_element_type(lower, dtype)
    upper = L.convert_element_type(upper, dtype)
    a = ew.erf(lower / sqrt2)
    b = ew.erf(upper / sqrt2)
    u = uniform(key, shape, dtype, minval=a, maxval=b)
    out = sqrt2 * ew.erf_inv(u)
    return jnp_math.clip(out,
                    ew.nextafter(stop_gradient(lower), np.array(np.inf, dtype=dtype)),
                    ew.nextafter(stop_gradient(upper), np.array(-np.inf, dtype=dtype)))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False, *,
                out_sharding: Any = None) -> Any:
    """A random permutation of ``arange(x)`` or of ``x`` along ``axis``."""
    args = SamplerArgs("permutation").with_key(key)
    check_arraylike("permutation", x)
    ndim = int(np.ndim(x))
    axis = _canonical_axis(axis, ndim or 1)
    args = args.with_given_sharding(out_sharding)
    if not ndim:
        if not T.is_int(T.dtype_of_value(x)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(x)
        return args.auto_axes(lambda k: _shuffle(k, creation.arange(r), axis))(args.key)
    return args.auto_axes(_permutation, axis=axis, independent=independent)(args.key, x)


def _permutation(key: Any, x: Any, axis: int, independent: bool) -> Any:
    ndim = int(np.ndim(x))
    if independent or ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, creation.arange(x.shape[axis]), 0)
    return indexing.take(x, ind, axis, unique_indices=True)


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
        key, subkey = split_key(key)
        sort_keys = random_bits(subkey, 32, x.shape)
        _, x = lr.sort_key_val(sort_keys, x, axis)
    return x


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True,
           p: Any = None, axis: int = 0, mode: str | None = None) -> Any:
    """Samples of ``a`` (or ``arange(a)``), uniformly or with weights ``p``."""
    key = SamplerArgs("choice").with_key(key).key
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    check_arraylike("choice", a)
    arr = creation.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = _canonical_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return creation.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        check_arraylike("choice", p)
        p_arr = creation.asarray(p)
        if not T.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(T.default_float())
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = reductions.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
            ind = sorting.searchsorted(p_cuml, r).astype(int)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp_math.log(p_arr)
            ind = lr.top_k(g, k=n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
    return result.reshape(tuple(shape) if arr.ndim == 0 else
                          arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None,
                replace: bool = True, mode: str | None = None, *,
                out_sharding: Any = None) -> Any:
    """Category indices drawn with probabilities ``softmax(logits)`` (the
    Gumbel-max trick)."""
    args = SamplerArgs("categorical").with_key(key)
    check_arraylike("categorical", logits)
    logits_arr = creation.asarray(logits)
    batch_shape = tuple(int(d) for d in np.delete(logits_arr.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonical_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    args = args.with_given_sharding(out_sharding)
    return args.auto_axes(_categorical, shape=shape, batch_shape=batch_shape,
                          axis=axis, replace=replace, mode=mode)(args.key, logits_arr)


def _categorical(key: Any, logits_arr: Any, shape: Shape, batch_shape: Shape, axis: int,
                 replace: bool, mode: str | None) -> Any:
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= len(logits_arr.shape)
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % len(logits_arr.shape), logits_arr.shape[axis])
        return reductions.argmax(
            gumbel(key, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode)
            + L.expand_dims(logits_arr, tuple(range(len(shape_prefix)))), axis=axis)
    logits_arr = logits_arr + gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode)
    k = math.prod(shape_prefix)
    if k > logits_arr.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits_arr.shape[axis]}).")
    _, indices = lr.top_k(jnp_shape.moveaxis(logits_arr, axis, -1), k)
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return L.reshape(indices, shape, dimensions)


# ------------------------------------------------------------------ gamma and kin

def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    """One Gamma(alpha) sample: Marsaglia and Tsang's squeeze-and-reject
    method for alpha >= 1; smaller alpha is sampled at alpha + 1 and scaled
    by U**(1/alpha) (in log space: plus log(U)/alpha, with log(U) drawn as
    -Exponential so that both spaces consume the same bits)."""
    zero, one, two, minus_one = (_const(alpha, v) for v in (0, 1, 2, -1))
    half, third, squeeze = (_const(alpha, v) for v in (0.5, 1. / 3., 0.0331))
    dtype = alpha.dtype
    boost = ew.ge(alpha, one)
    alpha_orig = alpha
    alpha = ew.select(boost, alpha, ew.add(alpha, one))
    d = ew.sub(alpha, third)
    c = ew.div(third, ew.sqrt(d))

    def rejected(state: Any) -> Any:
        # Both tests are computed (the log test only matters where the
        # cheap squeeze fails), which keeps the loop batchable.
        _, x2, v, u = state
        squeeze_fails = ew.ge(u, ew.sub(one, ew.mul(squeeze, ew.mul(x2, x2))))
        log_fails = ew.ge(ew.log(u), ew.add(ew.mul(x2, half),
                                               ew.mul(d, ew.add(ew.sub(one, v), ew.log(v)))))
        return ew.bitwise_and(squeeze_fails, log_fails)

    def propose(state: Any) -> Any:
        def next_normal(kxv: Any) -> Any:
            k, sub = split_key(kxv[0])
            x = _normal(sub, (), dtype)
            return k, x, ew.add(one, ew.mul(x, c))

        k, x_key, u_key = split_key(state[0], 3)
        # A normal x with v = 1 + c x > 0 (redrawn until it is).
        _, x, v = while_loop(lambda kxv: ew.le(kxv[2], zero), next_normal,
                                 (x_key, zero, minus_one))
        u = _uniform(u_key, 0., 1., (), dtype)
        return k, ew.mul(x, x), ew.mul(ew.mul(v, v), v), u

    key, subkey = split_key(key)
    # The initial state is one that the test rejects.
    _, _, v, _ = while_loop(rejected, propose, (key, zero, one, two))
    if log_space:
        log_u = ew.neg(_exponential(subkey, (), dtype))
        log_boost = ew.select(ew.bitwise_or(boost, ew.eq(log_u, zero)), zero,
                               ew.mul(log_u, ew.div(one, alpha_orig)))
        return ew.add(ew.add(ew.log(d), ew.log(v)), log_boost)
    u = 1 - _uniform(subkey, 0., 1., (), dtype)
    scale = ew.select(boost, one, ew.pow(u, ew.div(one, alpha_orig)))
    return ew.mul(ew.mul(d, v), scale)


_GAMMA_PROGRAMS: dict[tuple[Any, ...], Any] = {}


def gamma_values(keys: np.ndarray, a: np.ndarray, log_space: bool) -> np.ndarray:
    """``random_gamma``'s impl: each key split into one key per parameter
    under it, and ``_gamma_one`` vmapped over (key, parameter) pairs (as
    XLA runs it); the staged program is cached per shape and dtype."""
    cache_key = (keys.shape, a.shape, a.dtype, log_space)
    program = _GAMMA_PROGRAMS.get(cache_key)
    if program is None:
        program = trace_to_jaxpr(
            lambda k, x: [_gamma_batched(k, x, log_space)],
            [R.key_type(keys.shape), ArrayType(a.shape, a.dtype)])[0]
        _GAMMA_PROGRAMS[cache_key] = program
    consts = [canonical_value(c)[0] for c in program.consts]
    out: np.ndarray = eval_jaxpr_values(program, consts, [keys, a])[0]
    return out


def _gamma_batched(keys: Any, a: Any, log_space: bool) -> Any:
    per_key = math.prod(a.shape[keys.ndim:])
    flat_keys = vmap(lambda k: split_key(k, per_key))(keys.reshape(-1)).reshape(-1)
    samples = vmap(lambda k, x: _gamma_one(k, x, log_space))(flat_keys, a.reshape(-1))
    return samples.reshape(a.shape)


register_gamma_sampler(gamma_values, _gamma_batched)


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None, *, method: str = "exact",
          out_sharding: Any = None) -> Any:
    """Gamma(a, 1) floats (Marsaglia-Tsang rejection sampling)."""
    args = (SamplerArgs("gamma").with_key(key).require_known_method(method)
            .with_float_dtype(dtype).with_optional_shape(shape).with_sharding(out_sharding)
            .require_implemented_method(method))
    return args.auto_axes(_gamma, shape=args.shape, dtype=args.dtype)(args.key, a)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None, *,
             method: str = "exact", out_sharding: Any = None) -> Any:
    """log(Gamma(a, 1)) floats, accurate where the samples underflow."""
    args = (SamplerArgs("loggamma").with_key(key).require_known_method(method)
            .with_float_dtype(dtype, shown="gamma").with_optional_shape(shape)
            .with_given_sharding(out_sharding).require_implemented_method(method))
    return args.auto_axes(_gamma, shape=args.shape, dtype=args.dtype, log_space=True)(
        args.key, a)


@_jitted(static_argnames=("shape", "dtype", "log_space"))
def _gamma(key: Any, a: Any, shape: Shape | None, dtype: T.DType, log_space: bool = False
           ) -> Any:
    if shape is None:
        shape = tuple(np.shape(a))
    else:
        _check_shape("gamma", shape, np.shape(a))
    a = L.convert_element_type(a, dtype)
    if tuple(np.shape(a)) != tuple(shape):
        a = jnp_shape.broadcast_to(a, shape)
    return random_gamma_p.bind(key, a, log_space=log_space)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None, *,
         method: str = "exact", out_sharding: Any = None) -> Any:
    """Beta(a, b) floats, from two log-gamma samples."""
    args = (SamplerArgs("beta").with_key(key).require_known_method(method)
            .with_float_dtype(dtype).require_safe_cast(a, b).with_broadcast_shape(shape, a, b)
            .with_sharding(out_sharding).require_implemented_method(method))
    return args.auto_axes(_beta, method=method, shape=args.shape, dtype=args.dtype)(
        args.key, a, b)


@_jitted(static_argnums=(3, 4, 5))
def _beta(key: Any, a: Any, b: Any, method: str, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("beta", shape, np.shape(a), np.shape(b))
    a = L.convert_element_type(a, dtype)
    b = L.convert_element_type(b, dtype)
    key_a, key_b = split_key(key)
    a = jnp_shape.broadcast_to(a, shape)
    b = jnp_shape.broadcast_to(b, shape)
    log_gamma_a = loggamma(key_a, a, shape, dtype, method=method)
    log_gamma_b = loggamma(key_b, b, shape, dtype, method=method)
    # a / (a + b) of the two gammas, scaled by the larger so nothing overflows.
    log_max = ew.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = jnp_math.exp(log_gamma_a - log_max)
    gamma_b_scaled = jnp_math.exp(log_gamma_b - log_max)
    return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:
    """Dirichlet(alpha) vectors along the last axis (softmax of log-gammas)."""
    args = (SamplerArgs("dirichlet").with_key(key).with_float_dtype(dtype)
            .with_optional_shape(shape).with_sharding(out_sharding))
    return args.auto_axes(_dirichlet, shape=args.shape, dtype=args.dtype)(args.key, alpha)


@_jitted(static_argnums=(2, 3))
def _dirichlet(key: Any, alpha: Any, shape: Shape | None, dtype: T.DType) -> Any:
    if not np.ndim(alpha) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{np.ndim(alpha)}")
    if shape is None:
        shape = tuple(np.shape(alpha)[:-1])
    else:
        _check_shape("dirichlet", shape, tuple(np.shape(alpha)[:-1]))
    alpha = L.convert_element_type(alpha, dtype)
    log_gamma_samples = loggamma(key, alpha, tuple(shape) + tuple(np.shape(alpha)[-1:]), dtype)
    return _softmax(log_gamma_samples, -1)


def _softmax(x: Any, axis: int = -1) -> Any:
    """``jax.nn.softmax`` as JAX 0.12 runs it by default (spec has no ``nn``
    module yet): the maximum, held constant for differentiation, is
    subtracted before exponentiating."""
    x_max = reductions.max(x, axis, initial=-np.inf, keepdims=True)
    unnormalized = jnp_math.exp(x - stop_gradient(x_max))
    return unnormalized / reductions.sum(unnormalized, axis, keepdims=True)


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None, *,
              method: str = "exact", out_sharding: Any = None) -> Any:
    """Chi-square(df) floats: twice a Gamma(df / 2) sample."""
    args = (SamplerArgs("chisquare").with_key(key).require_known_method(method)
            .with_float_dtype(dtype).with_broadcast_shape(shape, df).require_safe_cast(df)
            .with_sharding(out_sharding).require_implemented_method(method))
    return args.auto_axes(_chisquare, method=method, shape=args.shape, dtype=args.dtype)(
        args.key, df)


@_jitted(static_argnums=(2, 3, 4))
def _chisquare(key: Any, df: Any, method: str, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("chisquare", shape, np.shape(df))
    df = L.convert_element_type(df, dtype)
    two = _const(df, 2)
    half_df = ew.div(df, two)
    log_g = loggamma(key, a=half_df, shape=shape, dtype=dtype, method=method)
    return ew.mul(jnp_math.exp(log_g), two)


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None, *,
      out_sharding: Any = None) -> Any:
    """Student's t(df) floats: a normal over the root of a scaled gamma."""
    args = (SamplerArgs("t").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, df).with_sharding(out_sharding).require_safe_cast(df))
    return args.auto_axes(_t, shape=args.shape, dtype=args.dtype)(args.key, df)


@_jitted(static_argnums=(2, 3))
def _t(key: Any, df: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("t", shape, np.shape(df))
    df = L.convert_element_type(df, dtype)
    key_n, key_g = split_key(key)
    n = normal(key_n, shape, dtype)
    half_df = ew.div(df, _const(n, 2))
    g = gamma(key_g, half_df, shape, dtype)
    return n * jnp_math.sqrt(half_df / g)


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None, *,
      out_sharding: Any = None) -> Any:
    """F(dfnum, dfden) floats: a ratio of scaled chi-squares."""
    args = (SamplerArgs("f").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, dfnum, dfden).with_sharding(out_sharding)
            .require_safe_cast(dfnum, dfden))
    return _f(args.key, dfnum, dfden, args.shape, args.dtype, args.sharding)


@_jitted(static_argnums=(3, 4, 5))
def _f(key: Any, dfnum: Any, dfden: Any, shape: Shape, dtype: T.DType,
       out_sharding: Any) -> Any:
    dfden = L.convert_element_type(dfden, dtype)
    dfnum = L.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = split_key(key)
    chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype, out_sharding=out_sharding)
    chi2_dfd = chisquare(key_dfd, dfden, shape, dtype, out_sharding=out_sharding)
    return ew.div(chi2_dfn / dfnum, chi2_dfd / dfden)


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = None, *,
                       out_sharding: Any = None) -> Any:
    """Generalized normal floats of shape parameter p (density ~ exp(-|x|**p))."""
    args = (SamplerArgs("generalized_normal").with_shape(shape).with_key(key)
            .with_dtype(dtype).with_sharding(out_sharding))
    return args.auto_axes(_generalized_normal, shape=args.shape, dtype=args.dtype)(args.key, p)


@_jitted(static_argnums=(2, 3))
def _generalized_normal(key: Any, p: Any, shape: Shape, dtype: T.DType) -> Any:
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dtype)
    r = rademacher(keys[1], shape, dtype)
    return r * g ** (1 / p)


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None, *,
           out_sharding: Any = None) -> Any:
    """Pareto(b) floats: exp(Exponential / b)."""
    args = (SamplerArgs("pareto").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, b).require_safe_cast(b).with_sharding(out_sharding))
    return args.auto_axes(_pareto, shape=args.shape, dtype=args.dtype)(args.key, b)


@_jitted(static_argnums=(2, 3))
def _pareto(key: Any, b: Any, shape: Shape, dtype: T.DType) -> Any:
    _check_shape("pareto", shape, np.shape(b))
    b = L.convert_element_type(b, dtype)
    e = exponential(key, shape, dtype)
    return ew.exp(e / b)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (),
                dtype: Any = None) -> Any:
    """Weibull floats: the inverse CDF at a uniform sample."""
    args = SamplerArgs("weibull_min").with_key(key).with_float_dtype(dtype).with_shape(shape)
    return _weibull_min(args.key, scale, concentration, args.shape, args.dtype)


@_jitted(static_argnums=(3, 4))
def _weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape,
                 dtype: T.DType) -> Any:
    u = uniform(key=key, shape=shape, minval=0, maxval=1, dtype=dtype)
    return jnp_math.power(-jnp_math.log1p(-u), 1.0 / concentration) * scale


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:
    """Geometric(p) integers >= 1: the number of trials to the first success."""
    args = (SamplerArgs("geometric").with_key(key).with_dtype(dtype, int)
            .require_dtype(T.is_int, "an int").with_broadcast_shape(shape, p)
            .with_sharding(out_sharding))
    return _geometric(args.key, p, args.shape, args.dtype, args.sharding)


@_jitted(static_argnums=(2, 3, 4))
def _geometric(key: Any, p: Any, shape: Shape, dtype: T.DType, out_sharding: Any) -> Any:
    check_arraylike("geometric", p)
    _check_shape("geometric", shape, np.shape(p))
    # p promoted to an inexact dtype, keeping its weak type.
    dt, weak = T.result_type_and_weak(p)
    if not T.is_inexact(dt):
        dt = T.promote_types(dt, T.default_float())
    p = to_weak_or_strong(p, dt, weak)
    u = uniform(key, shape, p.dtype, out_sharding=out_sharding)
    # u = 0 is mapped to 1, keeping log(u) finite (JAX's choice, kept for its bits).
    u = jnp_math._where(u == 0, 1, u)
    log_u = ew.log(u)
    log_one_minus_p = ew.log1p(-p)
    if out_sharding is not None and not np.ndim(log_one_minus_p):
        # (spec.numpy's broadcast_to does not take out_sharding yet; a
        # scalar broadcast is one broadcast_in_dim either way.)
        log_one_minus_p = L.broadcast_in_dim(log_one_minus_p, shape, (),
                                               out_sharding=out_sharding)
    else:
        log_one_minus_p = jnp_shape.broadcast_to(log_one_minus_p, shape, out_sharding=out_sharding)
    g = ew.floor(ew.div(log_u, log_one_minus_p)) + 1
    return g.astype(dtype)



# ------------------------------------------------------------------ more samplers

def _staged_args(*args: Any) -> tuple[Any, ...]:
    """JAX stages some samplers' helpers as jits inlined at trace time: their
    array arguments are tracers of the enclosing trace (closed-over arrays
    become its constants, once each, in argument order). Staged here, the
    arguments are made such tracers first; Python scalars stay literals."""
    trace = current_trace()
    if not isinstance(trace, JaxprTrace):
        return args
    out = []
    for x in args:
        atom = trace.to_atom(x)
        out.append(JitTracer(trace, atom) if isinstance(atom, Var) else x)
    return tuple(out)


def maxwell(key: Any, shape: Any = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """One-sided Maxwell floats: the length of a standard normal 3-vector."""
    args = (SamplerArgs("maxwell").with_key(key).with_float_dtype(dtype).with_shape(shape)
            .with_sharding(out_sharding))
    return _maxwell(args.key, args.shape, args.dtype, args.sharding)


def _norm_impl(x: Any) -> Any:
    # ``jnp.linalg.norm(x, axis=-1)`` of a real array, as JAX stages it
    # (spec has no ``jnp.linalg`` yet): a jit named ``norm``.
    return jnp_math.sqrt(reductions.sum(x * x, axis=-1))


_norm_impl.__name__ = _norm_impl.__qualname__ = "norm"
_norm = jit(_norm_impl)


@_jitted(static_argnums=(1, 2, 3))
def _maxwell(key: Any, shape: Shape, dtype: T.DType, out_sharding: Any) -> Any:
    shape = (*shape, 3)
    if out_sharding is not None:
        # The three components of a sample live together: the new axis is unsharded.
        out_sharding = NamedSharding(out_sharding.mesh, P(*out_sharding.spec, None))
    norm_rvs = normal(key=key, shape=shape, dtype=dtype, out_sharding=out_sharding)
    return _norm(norm_rvs)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell floats: a Maxwell sample of random sign,
    scaled by ``scale`` and shifted by ``loc``."""
    args = (SamplerArgs("double_sided_maxwell").with_key(key).with_float_dtype(dtype)
            .with_shape(shape))
    return _double_sided_maxwell(args.key, loc, scale, args.shape, args.dtype)


@_jitted(static_argnums=(3, 4))
def _double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape, dtype: T.DType
                          ) -> Any:
    params_shapes = _broadcast_shapes(np.shape(loc), np.shape(scale))
    if not shape:
        shape = params_shapes
    # (JAX appends the parameters' shape even when it was just taken as
    # the sample shape, so that a default shape doubles it; kept.)
    shape = shape + params_shapes
    maxwell_key, rademacher_key = split_key(key)
    maxwell_rvs = maxwell(maxwell_key, shape=shape, dtype=dtype)
    random_sign = rademacher(rademacher_key, shape=shape, dtype=dtype)
    return random_sign * maxwell_rvs * scale + loc


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None, *,
             out_sharding: Any = None) -> Any:
    """Rayleigh(scale) floats: ``scale * sqrt(-2 log U)``."""
    args = (SamplerArgs("rayleigh").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, scale).with_sharding(out_sharding)
            .require_safe_cast(scale))
    return args.auto_axes(_rayleigh, shape=args.shape, dtype=args.dtype)(args.key, scale)


@_jitted(static_argnums=(2, 3))
def _rayleigh(key: Any, scale: Any, shape: Shape, dtype: T.DType) -> Any:
    u = uniform(key, shape, dtype)
    scale = creation.asarray(scale).astype(dtype)
    scale = jnp_shape.broadcast_to(scale, shape)
    log_u = ew.log(u)
    sqrt_u = ew.sqrt(ew.mul(log_u, _const(scale, -2)))
    return ew.mul(scale, sqrt_u)


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None, *,
         out_sharding: Any = None) -> Any:
    """Wald (inverse Gaussian, unit shape) floats of mean ``mean``, by
    Michael, Schucany and Haas's transformation of a normal sample."""
    args = (SamplerArgs("wald").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, mean).with_given_sharding(out_sharding)
            .require_safe_cast(mean))
    return args.auto_axes(_wald, shape=args.shape, dtype=args.dtype)(args.key, mean)


@_jitted(static_argnums=(2, 3))
def _wald(key: Any, mean: Any, shape: Shape, dtype: T.DType) -> Any:
    k1, k2 = split_key(key, 2)
    mean = creation.asarray(mean).astype(dtype)
    mean = jnp_shape.broadcast_to(mean, shape)
    v = normal(k1, shape, dtype)
    z = uniform(k2, shape, dtype)
    y = ew.integer_pow(v, 2)
    y_sq = ew.integer_pow(y, 2)
    mean_sq = ew.integer_pow(mean, 2)
    sqrt_term = ew.sqrt(4 * mean * y + mean_sq * y_sq)
    # The smaller root x of the quadratic; the larger, mean**2 / x, is
    # taken with probability x / (mean + x).
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return ew.select(ew.le(z, mean / (mean + x)), x, mean_sq / x)


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None,
               dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Triangular floats on [left, right] peaking at ``mode`` (inverse CDF)."""
    args = (SamplerArgs("triangular").with_key(key).with_float_dtype(dtype)
            .with_broadcast_shape(shape, left, mode, right).with_sharding(out_sharding)
            .require_safe_cast(left, mode, right))
    return args.auto_axes(_triangular, shape=args.shape, dtype=args.dtype)(
        args.key, left, mode, right)


# (JAX stages this inline, at trace time: a plain function here.)
def _triangular(key: Any, left: Any, mode: Any, right: Any, shape: Shape,
                dtype: T.DType) -> Any:
    key, left, mode, right = _staged_args(key, left, mode, right)
    left = jnp_shape.broadcast_to(L.convert_element_type(left, dtype), shape)
    right = jnp_shape.broadcast_to(L.convert_element_type(right, dtype), shape)
    mode = jnp_shape.broadcast_to(L.convert_element_type(mode, dtype), shape)
    # The CDF at the mode splits the uniform between the two branches.
    fc = (mode - left) / (right - left)
    u = uniform(key, shape, dtype)
    out1 = left + ew.sqrt(u * (right - left) * (mode - left))
    out2 = right - ew.sqrt((1 - u) * (right - left) * (right - mode))
    return ew.select(u < fc, out1, out2)


_SIGMA_ONE = np.float32(1)  # lognormal's default sigma (a float32 scalar, as JAX's)


def lognormal(key: Any, sigma: Any = _SIGMA_ONE, shape: Any = None, dtype: Any = None, *,
              out_sharding: Any = None) -> Any:
    """Log-normal floats: ``exp(sigma * N(0, 1))`` (complex dtypes allowed)."""
    args = (SamplerArgs("lognormal").with_key(key).with_dtype(dtype)
            .require_dtype(T.is_inexact, "a float or complex")
            .with_broadcast_shape(shape, sigma).with_given_sharding(out_sharding)
            .require_safe_cast(sigma))
    return args.auto_axes(_lognormal, shape=args.shape, dtype=args.dtype)(args.key, sigma)


# (JAX stages this inline, at trace time: a plain function here.)
def _lognormal(key: Any, sigma: Any, shape: Shape, dtype: T.DType) -> Any:
    key, sigma = _staged_args(key, sigma)
    sigma = L.convert_element_type(sigma, dtype)
    return ew.exp(normal(key, shape, dtype) * sigma)


def ball(key: Any, d: Any, p: Any = 2, shape: Any = (), dtype: Any = None, *,
         out_sharding: Any = None) -> Any:
    """Uniform points of the unit Lp ball in ``d`` dimensions (Barthe et
    al.: generalized normals over an Lp norm inflated by an exponential)."""
    check_arraylike("ball", p)
    args = SamplerArgs("ball").with_shape(shape).with_key(key).with_dtype(dtype)
    if isinstance(d, Tracer) and not is_concrete(d):
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {d}\n"
            "The error occurred in jax.random.ball()")
    dim = operator.index(d)
    args = args.with_given_sharding(out_sharding)
    return args.auto_axes(_ball, d=dim, shape=args.shape, dtype=args.dtype)(args.key, p)


@_jitted(static_argnums=(2, 3, 4))
def _ball(key: Any, p: Any, d: int, shape: Shape, dtype: T.DType) -> Any:
    k1, k2 = split(key)
    g = generalized_normal(k1, p, (*shape, d), dtype)
    e = exponential(k2, shape, dtype)
    return g / (((jnp_math.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# --- poisson

def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None, *,
            method: str = "exact", out_sharding: Any = None) -> Any:
    """Poisson(lam) integers: Knuth's multiplication method below a mean
    of 10, Hormann's transformed rejection (PTRS) from 10 up."""
    args = (SamplerArgs("poisson").with_key(key).require_known_method(method)
            .with_dtype(dtype, int).with_shape(np.shape(lam) if shape is None else shape)
            .with_sharding(out_sharding).require_implemented_method(method))
    lam = jnp_shape.broadcast_to(lam, args.shape)
    impl = args.key.dtype.impl
    if impl is not R.THREEFRY:
        raise NotImplementedError("`poisson` with method='exact' is only implemented for the "
                                  f"threefry2x32 RNG, not {impl}")
    lam = L.convert_element_type(lam, np.float32)
    return args.auto_axes(_poisson, shape=args.shape, dtype=args.dtype)(args.key, lam)


@_jitted(static_argnums=(2, 3, 4))
def _poisson_knuth(key: Any, lam: Any, shape: Shape, dtype: T.DType, max_iters: Any) -> Any:
    # Multiply uniforms until the product drops under exp(-lam) (in logs);
    # the count of factors, less one, is the sample.
    def body_fn(carry: Any) -> Any:
        i, k, rng, log_prod = carry
        rng, subkey = split_key(rng)
        k = ew.select(log_prod > -lam, k + 1, k)
        u = uniform(subkey, shape, np.float32)
        return i + 1, k, rng, log_prod + jnp_math.log(u)

    def cond_fn(carry: Any) -> Any:
        i, log_prod = carry[0], carry[3]
        return (log_prod > -lam).any() & (i < max_iters)

    k_init = L.full_like(lam, 0, dtype, shape)
    log_rate_init = L.full_like(lam, 0, np.float32, shape)
    k = while_loop(cond_fn, body_fn, (0, k_init, key, log_rate_init))[1]
    return (k - 1).astype(dtype)


@_jitted(static_argnums=(2, 3, 4))
def _poisson_rejection(key: Any, lam: Any, shape: Shape, dtype: T.DType, max_iters: Any
                       ) -> Any:
    # Hormann (1993), "The transformed rejection method for generating
    # Poisson random variables": a hat over the squeezed region, with the
    # constants of the paper.
    log_lam = ew.log(lam)
    b = 0.931 + 2.53 * ew.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body_fn(carry: Any) -> Any:
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = split_key(key, 3)
        u = uniform(subkey_0, shape, lam.dtype) - 0.5
        v = uniform(subkey_1, shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = ew.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = ew.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - ew.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        k_out = ew.select(accept, k, k_out)
        accepted |= accept
        return i + 1, k_out, accepted, key

    def cond_fn(carry: Any) -> Any:
        i, _, accepted, _ = carry
        return (~accepted).any() & (i < max_iters)

    k_init = L.full_like(lam, -1, lam.dtype, shape)
    accepted = L.full_like(lam, False, np.dtype("bool"), shape)
    k = while_loop(cond_fn, body_fn, (0, k_init, accepted, key))[1]
    return k.astype(dtype)


@_jitted(static_argnums=(2, 3))
def _poisson(key: Any, lam: Any, shape: Shape, dtype: T.DType) -> Any:
    # Both samplers run on every element (each on a harmless rate where the
    # other is used), and a select picks, as in TensorFlow and NumPy.
    use_knuth = ew.ne(lam, lam) | (lam < 10)
    lam_knuth = ew.select(use_knuth, lam, L.full_like(lam, 0.0))
    lam_rejection = ew.select(use_knuth, L.full_like(lam, 1e5), lam)
    max_iters = dtype.type(_iinfo(dtype).max)
    result = ew.select(use_knuth,
                        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
    return ew.select(lam == 0, creation.zeros_like(result), result)


# --- binomial

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    """log(k!) less its Stirling approximation: tabulated for k <= 9, from
    the asymptotic series above."""
    tail_vals = creation.array(_STIRLING_TAIL, dtype=k.dtype)
    use_tail_values = k <= 9
    k = ew.clamp(_const(k, 0.0), k, _const(k, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp_math.floor(k)
    return ew.select(use_tail_values, tail_vals[creation.asarray(k, dtype="int32")], approx)


# (JAX stages this inline, at trace time: a plain function here.)
def _binomial_inversion(key: Any, count: Any, prob: Any, shape: Shape, dtype: T.DType,
                        max_iters: Any) -> Any:
    # Sum geometric waiting times until they pass ``count``: the number of
    # successes is the number of whole waits that fit.
    log1minusprob = jnp_math.log1p(-prob)

    def body_fn(carry: Any) -> Any:
        i, num_geom, geom_sum, key = carry
        subkey, key = split(key)
        num_geom_out = ew.select(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(subkey, shape, prob.dtype)
        geom = jnp_math.ceil(jnp_math.log(u) / log1minusprob)
        geom_sum = geom_sum + geom
        return i + 1, num_geom_out, geom_sum, key

    def cond_fn(carry: Any) -> Any:
        i, geom_sum = carry[0], carry[2]
        return (geom_sum <= count).any() & (i < max_iters)

    num_geom_init = L.full_like(prob, 0, prob.dtype, shape)
    geom_sum_init = L.full_like(prob, 0, prob.dtype, shape)
    k = while_loop(cond_fn, body_fn, (0, num_geom_init, geom_sum_init, key))[1]
    return (k - 1).astype(dtype)


# (JAX stages this inline, at trace time: a plain function here.)
def _btrs(key: Any, count: Any, prob: Any, shape: Shape, dtype: T.DType, max_iters: Any
          ) -> Any:
    # Hormann (1993), "The generation of binomial random variates": the
    # BTRS transformed rejection with squeeze, and its constants.
    stddev = jnp_math.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp_math.floor((count + 1) * prob)

    def body_fn(carry: Any) -> Any:
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = split(key, 3)
        u = uniform(subkey_0, shape, prob.dtype)
        v = uniform(subkey_1, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp_math.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp_math.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp_math.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp_math.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp_math.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp_math.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m)
              + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k)
              - _stirling_approx_tail(count - k))
        accept2 = v <= ub
        accept = accept1 | (~reject & accept2)
        k_out = ew.select(accept, k, k_out)
        accepted |= accept
        return i + 1, k_out, accepted, key

    def cond_fn(carry: Any) -> Any:
        i, accepted = carry[0], carry[2]
        return (~accepted).any() & (i < max_iters)

    k_init = L.full_like(prob, -1, prob.dtype, shape)
    carry = (0, k_init, creation.full(shape, False, bool), key)
    return while_loop(cond_fn, body_fn, carry)[1].astype(dtype)


# (JAX stages this inline, at trace time: a plain function here.)
def _binomial(key: Any, count: Any, prob: Any, shape: Shape | None, dtype: T.DType) -> Any:
    key, count, prob = _staged_args(key, count, prob)
    if shape is None:
        shape = jnp_shape.broadcast_shapes(np.shape(count), np.shape(prob))
    else:
        _check_shape("binomial", shape, np.shape(count), np.shape(prob))
    (prob,) = _promote_dtypes_inexact(prob)
    count = L.convert_element_type(count, prob.dtype)
    count = jnp_shape.broadcast_to(count, shape)
    prob = jnp_shape.broadcast_to(prob, shape)
    # Sampled for q = min(p, 1 - p) (then reflected), by inversion when
    # n q <= 10, else by BTRS; both run everywhere and a select picks.
    p_lt_half = prob < 0.5
    q = ew.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = ew.ne(count, count) | (count < 0.0)
    count_inf = jnp_math.isinf(count)
    q_is_nan = ew.ne(q, q)
    q_l_0 = q < 0.0
    q = ew.select(q_is_nan | q_l_0, L.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    # A fractional count is rounded down, as NumPy does.
    count = jnp_math.floor(count)
    count_inv = ew.select(use_inversion, count, L.full_like(count, 0.0))
    count_btrs = ew.select(use_inversion, L.full_like(count, 1e4), count)
    q_btrs = ew.select(use_inversion, L.full_like(q, 0.5), q)
    max_iters = dtype.type(_finfo(dtype).max)
    samples = ew.select(use_inversion,
                         _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                         _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
    # NaN for a NaN or negative p or n; inf for an infinite n.
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = ew.select(invalid, creation.full_like(samples, np.nan, dtype), samples)
    samples = ew.select(count_inf & (~invalid), creation.full_like(samples, np.inf, dtype),
                         samples)
    return ew.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf,
                      samples, count.astype(dtype) - samples)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Binomial(n, p) counts, as floats of ``dtype``."""
    args = SamplerArgs("binomial").with_key(key)
    check_arraylike("binomial", n, p)
    args = args.with_float_dtype(dtype).with_optional_shape(shape)
    return _binomial(args.key, n, p, args.shape, args.dtype)


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None,
                unroll: int | bool = 1) -> Any:
    """Multinomial(n, p) counts along the last axis: one binomial draw per
    category, of the trials left, at the category's share of what is left."""
    args = SamplerArgs("multinomial").with_key(key)
    check_arraylike("multinomial", n, p)
    n, p = _promote_dtypes_inexact(n, p)
    if shape is None:
        shp = tuple(p.shape[:-1])
    else:
        shp = _canonical_shape(shape)
        _check_shape("multinomial", shp, np.shape(n), tuple(p.shape[:-1]))
    n = jnp_shape.broadcast_to(n, shp)
    p = jnp_shape.broadcast_to(p, (*shp, p.shape[-1]))

    def f(remainder: Any, ratio_key: Any) -> Any:
        ratio, k = ratio_key
        count = binomial(k, remainder, ratio.clip(0, 1), dtype=remainder.dtype)
        return remainder - count, count

    p = jnp_shape.moveaxis(p, -1, 0)
    remaining_probs = lr.cumsum(p, 0, reverse=True)
    ratios = p / jnp_math._where(remaining_probs == 0, 1, remaining_probs)
    keys = split(args.key, ratios.shape[0])
    _, counts = scan(f, n, (ratios, keys), unroll=unroll)
    return jnp_shape.moveaxis(counts, 0, -1).astype(dtype)


# ------------------------------------------------------------------ linear algebra

def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None,
                        method: str = "cholesky", *, out_sharding: Any = None) -> Any:
    """N(mean, cov) vectors along the last axis: ``mean + factor @ z`` for
    standard normal ``z``, where ``factor factor^T = cov`` comes from a
    Cholesky factorisation (default), or ``v sqrt(w)`` from ``eigh``, or
    ``u sqrt(s)`` from ``svd`` (these two accept singular covariances)."""
    args = SamplerArgs("multivariate_normal").with_key(key)
    check_arraylike("multivariate_normal", mean, cov)
    mean, cov = _promote_dtypes_inexact(mean, cov)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    args = (args.with_dtype(dtype, mean.dtype).require_dtype(T.is_float, "a float")
            .with_optional_shape(shape).with_sharding(out_sharding))
    return args.auto_axes(_multivariate_normal, shape=args.shape, dtype=args.dtype)(
        args.key, mean, cov, method=method)


@_jitted(static_argnums=(3, 4, 5))
def _multivariate_normal(key: Any, mean: Any, cov: Any, shape: Shape | None, dtype: T.DType,
                         method: str) -> Any:
    if not np.ndim(mean) >= 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{np.ndim(mean)}")
    if not np.ndim(cov) >= 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{np.ndim(cov)}")
    n = mean.shape[-1]
    if tuple(np.shape(cov)[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {tuple(np.shape(cov))}.")
    if shape is None:
        shape = _broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    else:
        _check_shape("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if method == "svd":
        u, s, _ = jnp_linalg.svd(cov)
        factor = u * jnp_math.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp_linalg.eigh(cov)
        factor = v * jnp_math.sqrt(w[..., None, :])
    else:
        factor = jnp_linalg.cholesky(cov)
    normal_samples = normal(key, tuple(shape) + tuple(mean.shape[-1:]), dtype)
    with numpy_rank_promotion("allow"):
        return mean + linalg.einsum("...ij,...j->...i", factor, normal_samples)


def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None, *,
               out_sharding: Any = None) -> Any:
    """A Haar-random orthogonal (unitary, for complex dtypes) n x m matrix:
    the Q of a QR factorisation of a Gaussian matrix, its columns' signs
    fixed by R's diagonal (Mezzadri 2007); semi-orthogonal when n != m."""
    cols = n if m is None else m
    args = SamplerArgs("orthogonal").with_shape(shape).with_key(key).with_dtype(dtype)
    rows, cols = operator.index(n), operator.index(cols)
    args = args.with_sharding(out_sharding)
    return args.auto_axes(_orthogonal, n=rows, _m=cols, shape=args.shape, dtype=args.dtype)(
        args.key)


@_jitted(static_argnums=(1, 2, 3, 4))
def _orthogonal(key: Any, n: int, _m: int, shape: Shape, dtype: T.DType) -> Any:
    z = normal(key, (*shape, max(n, _m), min(n, _m)), dtype)
    q, r = jnp_linalg.qr(z)
    d = jnp_linalg.diagonal(r)
    x = q * jnp_shape.expand_dims(jnp_math.sign(d), -2)
    return x.mT if n < _m else x

