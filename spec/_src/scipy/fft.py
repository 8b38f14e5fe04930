"""``jax.scipy.fft``: the type-2 discrete cosine transform and its inverse (``dct``, ``idct``
and their n-d forms ``dctn``, ``idctn``), computed as JAX computes them: the input
interleaved (even entries, then odd ones reversed), one complex FFT, and a twiddle by
exp(-i pi k / 2N); 'ortho' scales the first coefficient by 1/sqrt(4N) and the others by
1/sqrt(2N)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.lax import elementwise as lax_e
from spec._src.lax import shaping as lax_shaping
from spec._src.lax import slicing as lax_slicing
from spec._src.numpy import creation
from spec._src.numpy import fft as jnp_fft
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _promote_dtypes_inexact, exp
from spec._src.numpy.reductions import canonicalize_axis
from spec._src.numpy.util import _ensure, to_weak_or_strong

_NORMS = (None, "backward", "ortho")


def _promote_complex(*args: Any) -> list[Any]:
    """JAX's ``promote_dtypes_complex``: one common complex dtype, weak type kept."""
    dtype, weak = T.result_type_and_weak(*args)
    complex_dtype = dtype if T.is_complex(dtype) else (
        T.complex128 if dtype in (T.float64, T.int64, T.uint64) else T.complex64)
    return [to_weak_or_strong(a, T.canonicalize_dtype(complex_dtype), weak) for a in args]


def _twiddle(n: int, k: Any) -> Any:
    """exp(-i pi k / 2n)."""
    n_arr, k = _promote_complex(n, k)
    return exp(-0.5j * np.pi * k / n_arr)


def _other_axes(ndim: int, axis: int) -> list[int]:
    return [a for a in range(ndim) if a != axis]


def _interleave(x: Any, axis: int) -> Any:
    evens = lax_slicing.slice_in_dim(x, None, None, 2, axis)
    odds_reversed = lax_slicing.rev(lax_slicing.slice_in_dim(x, 1, None, 2, axis), (axis,))
    return lax_slicing.concatenate([evens, odds_reversed], axis)


def _deinterleave(x: Any, axis: int) -> Any:
    everything = slice(None, None, None)
    half = math.ceil(x.shape[axis] / 2)

    def along(s: slice) -> tuple[slice, ...]:
        return tuple(s if i == axis else everything for i in range(x.ndim))

    evens = x[along(slice(None, half, 1))]
    odds = lax_slicing.rev(x[along(slice(half, None, 1))], (axis,))
    out = creation.zeros(x.shape, dtype=x.dtype)
    out = out.at[along(slice(None, None, 2))].set(evens)
    return out.at[along(slice(1, None, 2))].set(odds)


def _ortho_scale(out: Any, axis: int) -> Any:
    factor = lax_slicing.concatenate([lax_shaping.full((1,), 4, out.dtype),
                                      lax_shaping.full((out.shape[axis] - 1,), 2, out.dtype)], 0)
    factor = lax_shaping.expand_dims(factor, _other_axes(out.ndim, axis))
    return out / lax_e.sqrt(factor * out.shape[axis])


def _check(name: str, type: int, norm: str | None) -> None:
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm not in _NORMS:
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _zero_pad_to(x: Any, sizes: dict[int, int]) -> Any:
    pads = [(0, sizes[a] - x.shape[a] if a in sizes else 0, 0) for a in range(x.ndim)]
    return lax_slicing.pad(x, creation.array(0, x.dtype), pads)


def _complex_by_parts(fn: Callable[..., Any], x: Any, **kw: Any) -> Any:
    """A real transform of a complex input: the transform of each part."""
    return lax_e.complex(fn(x.real, **kw), fn(x.imag, **kw))


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None) -> Any:
    x = _ensure("dct", x)
    _check("dct", type, norm)
    if T.is_complex(x.dtype):
        return _complex_by_parts(dct, x, type=type, n=n, norm=norm, axis=axis)
    axis = canonicalize_axis(axis, x.ndim)
    if n is not None:
        x = _zero_pad_to(x, {axis: n})
    size = x.shape[axis]
    spectrum = jnp_fft.fft(_interleave(x, axis), axis=axis)
    k = lax_shaping.expand_dims(creation.arange(size, dtype=spectrum.real.dtype),
                                _other_axes(x.ndim, axis))
    out = 2 * (spectrum * _twiddle(size, k)).real
    return _ortho_scale(out, axis) if norm == "ortho" else out


def _dct2(x: Any, axes: Sequence[int], norm: str | None) -> Any:
    """The 2-d DCT of two axes from one 2-d FFT (the second axis's twiddle split into the
    spectrum and its reflection)."""
    axis1, axis2 = (canonicalize_axis(a, x.ndim) for a in axes)
    n1, n2 = x.shape[axis1], x.shape[axis2]
    spectrum = jnp_fft.fftn(_interleave(_interleave(x, axis1), axis2), axes=axes)
    k1 = lax_shaping.expand_dims(creation.arange(n1, dtype=spectrum.dtype),
                                 _other_axes(x.ndim, axis1))
    k2 = lax_shaping.expand_dims(creation.arange(n2, dtype=spectrum.dtype),
                                 _other_axes(x.ndim, axis2))
    out = _twiddle(n1, k1) * (
        _twiddle(n2, k2) * spectrum
        + _twiddle(n2, -k2) * jnp_shape.roll(jnp_shape.flip(spectrum, axis=axis2), shift=1,
                                             axis=axis2))
    out = 2 * out.real
    if norm == "ortho":
        return _ortho_scale(_ortho_scale(out, axis1), axis2)
    return out


def _sizes_and_axes(x: Any, s: Any, axes: Sequence[int] | None
                    ) -> tuple[list[int] | None, tuple[int, ...]]:
    sizes: list[int] | None = None
    if s is not None:
        sizes = list(s) if isinstance(s, Sequence) else [operator.index(s)]
        if len(sizes) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(sizes)}")
    if axes is None:
        first = x.ndim - len(sizes) if sizes is not None else 0
        return sizes, tuple(range(first, x.ndim))
    canonical = tuple(canonicalize_axis(a, x.ndim) for a in axes)
    if len(set(canonical)) != len(canonical):
        raise ValueError(f"repeated axis: {canonical}")
    return sizes, canonical


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    x = _ensure("dctn", x)
    _check("dctn", type, norm)
    if T.is_complex(x.dtype):
        return _complex_by_parts(dctn, x, type=type, s=s, norm=norm, axes=axes)
    sizes, axes = _sizes_and_axes(x, s, axes)
    if len(axes) == 1:
        return dct(x, n=sizes[0] if sizes is not None else None, axis=axes[0], norm=norm)
    if sizes is not None:
        x = _zero_pad_to(x, dict(zip(axes, sizes)))
    if len(axes) == 2:
        return _dct2(x, axes=axes, norm=norm)
    for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
        x = dctn(x, axes=block, norm=norm)
    return x


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None) -> Any:
    x = _ensure("idct", x)
    _check("idct", type, norm)
    if T.is_complex(x.dtype):
        return _complex_by_parts(idct, x, type=type, n=n, norm=norm, axis=axis)
    axis = canonicalize_axis(axis, x.ndim)
    if n is not None:
        x = _zero_pad_to(x, {axis: n})
    size = x.shape[axis]
    (x,) = _promote_dtypes_inexact(x)
    if norm is None or norm == "backward":
        x = _ortho_scale(x, axis)
    x = _ortho_scale(x, axis)
    k = lax_shaping.expand_dims(creation.arange(size, dtype=x.dtype), _other_axes(x.ndim, axis))
    twiddle = _twiddle(size, k)
    x = x.astype(twiddle.dtype)
    x = x / _twiddle(size, k)
    x = x * 2 * size
    return _deinterleave(jnp_fft.ifft(x, axis=axis).real, axis)


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    x = _ensure("idctn", x)
    _check("idctn", type, norm)
    if T.is_complex(x.dtype):
        return _complex_by_parts(idctn, x, type=type, s=s, norm=norm, axes=axes)
    sizes, axes = _sizes_and_axes(x, s, axes)
    if len(axes) == 1:
        return idct(x, n=sizes[0] if sizes is not None else None, axis=axes[0], norm=norm)
    if sizes is not None:
        x = _zero_pad_to(x, dict(zip(axes, sizes)))
    for axis in axes:
        x = idct(x, axis=axis, norm=norm)
    return x


__all__ = ["dct", "dctn", "idct", "idctn"]
