"""``jax.nn.initializers``: functions ``init(key, shape, dtype)`` that draw
weights, built from spec.random's samplers exactly as JAX builds them, so
that the same key gives JAX's bits."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from spec._src.nn import numpy_names as jnp
from spec._src.random import keys
from spec._src.random import samplers as random
from spec._src.core import types as T
from spec._src.lax import elementwise as lax_e


class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype=..., out_sharding=None)``."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None,
                 out_sharding: Any = None) -> Any: ...


def _float_or(dtype: Any) -> Any:
    return T.default_float() if dtype is None else dtype


def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    return jnp.zeros(shape, _float_or(dtype), out_sharding=out_sharding)


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    return jnp.ones(shape, _float_or(dtype), out_sharding=out_sharding)


def constant(value: Any, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        return jnp.full(shape, value, dtype=_float_or(dtype), device=out_sharding)
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Uniform in [0, scale)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _float_or(dtype)
        return random.uniform(key, shape, dtype, out_sharding=out_sharding) * \
            jnp.array(scale, dtype)
    return init


def _scaled_normal(key: Any, shape: Sequence[int], dtype: Any, scale: Any,
                   out_sharding: Any = None) -> Any:
    """Normal of standard deviation ``scale``; for real floats through the
    inverse error function of a uniform draw on (-1, 1)."""
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.floating):
        lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt), dtype=dt)
        u = random.uniform(key, shape, dt, lo, np.array(1.0, dt), out_sharding=out_sharding)
        return (jnp.array(np.sqrt(2), dt) * scale) * lax_e.erf_inv(u)
    return random.normal(key, shape, dt, out_sharding=out_sharding) * scale


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _float_or(dtype)
        return _scaled_normal(key, shape, dtype, jnp.array(stddev, dtype), out_sharding)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """A standard normal truncated to [lower, upper], times ``stddev`` (no
    variance correction)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _float_or(dtype)
        return random.truncated_normal(key, lower, upper, shape, dtype,
                                       out_sharding=out_sharding) * jnp.array(stddev, dtype)
    return init


def _size(shape: Sequence[int], axes: int | Sequence[int]) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2,
                  out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    """(fan in, fan out): the input and output sizes times the receptive
    field (the axes in none of the three groups)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional"
                         " weights tensor with default in_axis. Must be at least 2D or specify"
                         " in_axis explicitly.")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    denominator = in_size * out_size * _size(shape, batch_axis)
    receptive = math.prod(shape) / denominator if denominator != 0 else 0
    return in_size * receptive, out_size * receptive


def _complex_dtype(dtype: Any) -> tuple[np.dtype[Any], np.dtype[Any]]:
    real = np.array(0, dtype).real.dtype
    return real, np.dtype(np.complex128 if real == np.float64 else np.complex64)


def _complex_uniform(key: Any, shape: Sequence[int], dtype: Any) -> Any:
    """Uniform on the disk, of mean 0 and variance 1."""
    key_r, key_theta = keys.split(key)
    real, cplx = _complex_dtype(dtype)
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(cplx)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cplx)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: Any, shape: Sequence[int], dtype: Any) -> Any:
    """A complex normal of variance 1 whose modulus is truncated at ``upper``."""
    key_r, key_theta = keys.split(key)
    real, cplx = _complex_dtype(dtype)
    t = (1 - jnp.exp(jnp.array(-(upper ** 2), cplx))) * \
        random.uniform(key_r, shape, real).astype(cplx)
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cplx)
    return r * jnp.exp(1j * theta)


Mode = Literal["fan_in", "fan_out", "fan_avg", "fan_geo_avg"]
Distribution = Literal["truncated_normal", "normal", "uniform"]

# The standard deviation of a unit normal truncated at +-2 (real), and of
# the modulus-truncated complex normal: dividing by it restores variance 1.
_TRUNCATED_STD_REAL = .87962566103423978
_TRUNCATED_STD_COMPLEX = .95311164380491208


def variance_scaling(scale: Any, mode: Mode, distribution: Distribution,
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Weights of variance ``scale / n``, n the fan chosen by ``mode``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        shape = tuple(int(d) for d in shape)
        dtype = _float_or(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominators = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                        "fan_geo_avg": (fan_in * fan_out) ** 0.5}
        if mode not in denominators:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        denominator = denominators[mode]
        variance = jnp.array(scale / denominator if denominator != 0 else 0, dtype=dtype)
        real = np.issubdtype(np.dtype(dtype), np.floating)
        if distribution == "truncated_normal":
            if real:
                stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STD_REAL, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype,
                                               out_sharding=out_sharding) * stddev
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STD_COMPLEX, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return _scaled_normal(key, shape, dtype, jnp.sqrt(variance), out_sharding)
        if distribution == "uniform":
            if real:
                return random.uniform(key, shape, dtype, -1, out_sharding=out_sharding) * \
                    jnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")
    return init


def _preset(scale: float, mode: Mode, distribution: Distribution
            ) -> Callable[..., Initializer]:
    def make(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
             batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                                batch_axis=batch_axis, dtype=dtype)
    return make


glorot_uniform = xavier_uniform = _preset(1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _preset(1.0, "fan_avg", "truncated_normal")
lecun_uniform = _preset(1.0, "fan_in", "uniform")
lecun_normal = _preset(1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _preset(2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _preset(2.0, "fan_in", "truncated_normal")


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Weights whose columns along ``column_axis`` (or rows, whichever are
    fewer) are orthonormal, times ``scale``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        if out_sharding is not None:
            raise NotImplementedError("orthogonal initializer with out_sharding")
        dtype = _float_or(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        q = jnp.reshape(q, tuple(np.delete(np.asarray(shape), column_axis)) + (n_cols,))
        return jnp.array(scale, dtype) * jnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Convolution kernels (3-d to 5-d) that are zero but at the spatial
    centre, where they hold an orthogonal matrix."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        if out_sharding is not None:
            raise NotImplementedError("delta_orthogonal initializer with out_sharding")
        dtype = _float_or(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype=dtype).at[(*centre, ...)].set(matrix)
    return init


__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]
