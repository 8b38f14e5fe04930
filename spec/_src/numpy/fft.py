"""``jnp.fft``: NumPy's discrete Fourier transforms on the ``fft`` primitive,
and ``lax.fft`` (the primitive bound inside a ``jit`` named ``fft``).

As JAX: the transformed axes are moved last, cropped or zero-padded to the
requested lengths (an inverse real transform's last axis to n // 2 + 1),
transformed by one ``fft`` equation (transforms over more than three axes
are split into ones over at most three), scaled for ``norm`` and moved
back.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.fft import FftType, fft_bind
from spec._src.numpy.creation import arange, array, asarray
from spec._src.numpy.math import _promote_dtypes_inexact, conj, sqrt
from spec._src.numpy.padding import pad
from spec._src.numpy.reductions import prod
from spec._src.numpy.shape import moveaxis, roll
from spec._src.numpy.util import _ensure

Shape = Sequence[int]


def _lax_fft(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Any:
    return fft_bind(x, fft_type, fft_lengths)


_lax_fft.__name__ = _lax_fft.__qualname__ = "fft"
_jitted_fft = jit(_lax_fft, static_argnums=(1, 2))


def lax_fft(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Any:
    """``lax.fft``: the ``fft`` primitive (FftType or its name) over the
    last ``len(fft_lengths)`` axes, staged as a ``jit`` named ``fft``."""
    return _jitted_fft(x, fft_type, tuple(fft_lengths))


def _shape(x: Any) -> tuple[int, ...]:
    return canonical_aval_of(x).shape


def _fft_norm(s: Any, func_name: str, norm: str) -> Any:
    if norm == "backward":
        return array(1)
    (s,) = _promote_dtypes_inexact(s)
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return sqrt(prod(s)) if inverse else 1 / sqrt(prod(s))
    if norm == "forward":
        return prod(s) if inverse else 1 / prod(s)
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _fft_core(func_name: str, fft_type: FftType, a: Any, s: Shape | None,
              axes: Sequence[int] | None, norm: str | None) -> Any:
    full_name = f"jax.numpy.fft.{func_name}"
    arr = _ensure(full_name, a)
    ndim = len(_shape(arr))
    if s is not None:
        s = tuple(map(operator.index, s))
        if np.any(np.less_equal(s, 0)):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    if len(axes) != len(set(axes)):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        axes = tuple(range(ndim - len(axes), ndim))
        arr = moveaxis(arr, tuple(orig_axes), axes)
    lengths: list[int]
    if s is not None:
        in_s = list(_shape(arr))
        for axis, n in zip(axes, s):
            in_s[axis] = n
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(n) for n in in_s)]
        arr = pad(arr, [(0, n - m) for n, m in zip(in_s, _shape(arr))])
        lengths = list(s)
    elif fft_type == FftType.IRFFT:
        lengths = [_shape(arr)[axis] for axis in axes[:-1]]
        if axes:
            lengths += [max(0, 2 * (_shape(arr)[axes[-1]] - 1))]
    else:
        lengths = [_shape(arr)[axis] for axis in axes]
    transformed = _fft_core_nd(arr, fft_type, lengths)
    if norm is not None:
        dtype = canonical_aval_of(transformed).dtype
        transformed = transformed * _fft_norm(array(lengths, dtype=dtype), func_name, norm)
    if orig_axes is not None:
        transformed = moveaxis(transformed, tuple(axes), tuple(orig_axes))
    return transformed


def _fft_core_nd(arr: Any, fft_type: FftType, s: Sequence[int]) -> Any:
    """XLA transforms at most three axes at once: more are done as the
    minor two or three, then the rest."""
    if len(s) <= 3:
        return lax_fft(arr, fft_type, tuple(s))
    n = 2 if len(s) == 4 else 3
    ndim = len(_shape(arr))
    src = tuple(range(ndim - len(s), ndim - n))
    dst = tuple(range(ndim - len(s) + n, ndim))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax_fft(arr, fft_type, tuple(s)[-n:])
        arr = moveaxis(arr, src, dst)
        arr = _fft_core_nd(arr, FftType.FFT, s[:-n])
        return moveaxis(arr, dst, src)
    arr = moveaxis(arr, src, dst)
    arr = _fft_core_nd(arr, FftType.IFFT, s[:-n])
    arr = moveaxis(arr, dst, src)
    return lax_fft(arr, fft_type, tuple(s)[-n:])


def fftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def _axis_check_1d(func_name: str, axis: Any) -> None:
    full_name = f"jax.numpy.fft.{func_name}"
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name: str, fft_type: FftType, a: Any, n: int | None, axis: int | None,
                 norm: str | None) -> Any:
    _axis_check_1d(func_name, axis)
    axes = None if axis is None else [axis]
    s = None if n is None else [n]
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The FFT of a Hermitian-symmetric signal given by its half: irfft of
    the conjugate, times the output length."""
    conj_a = conj(a)
    _axis_check_1d("hfft", axis)
    nn = (_shape(conj_a)[axis] - 1) * 2 if n is None else n
    return _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    _axis_check_1d("ihfft", axis)
    arr = asarray(a)
    nn = _shape(arr)[axis] if n is None else n
    output = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return conj(output) * (1 / nn)


def _fft_core_2d(func_name: str, fft_type: FftType, a: Any, s: Shape | None,
                 axes: Sequence[int], norm: str | None) -> Any:
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _check_freq_args(name: str, n: Any, d: Any) -> None:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies [0, 1, ..., -2, -1] / (d n)."""
    out_dtype = T.default_float() if dtype is None else dtype
    _check_freq_args("fftfreq", n, d)
    work = np.dtype(out_dtype)
    work = work if work.kind in "fc" else np.dtype(T.default_float())
    real = np.finfo(work).dtype
    i = arange(n, dtype=real)
    k = (i + n // 2) % n - n // 2
    result = k.astype(real) / array(d * n, dtype=real)
    return result.astype(out_dtype)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The non-negative sample frequencies [0, 1, ..., n // 2] / (d n)."""
    dtype = T.default_float() if dtype is None else dtype
    _check_freq_args("rfftfreq", n, d)
    k = arange(0, n // 2 + 1 if n % 2 == 0 else (n - 1) // 2 + 1, dtype=dtype)
    return k / array(d * n, dtype=dtype)


def _shifts(x: Any, axes: None | int | Sequence[int], sign: int) -> tuple[Any, Any]:
    shape = _shape(x)
    if axes is None:
        return [sign * (dim // 2) for dim in shape], tuple(range(len(shape)))
    if isinstance(axes, int):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], axes


def fftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """The zero frequency moved to the centre (a roll by half of each axis)."""
    x = _ensure("fftshift", x)
    shift, axes = _shifts(x, axes, 1)
    return roll(x, shift, axes)


def ifftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """The inverse of fftshift."""
    x = _ensure("ifftshift", x)
    shift, axes = _shifts(x, axes, -1)
    return roll(x, shift, axes)


__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]
