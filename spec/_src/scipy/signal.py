"""``jax.scipy.signal``'s convolutions: ``convolve`` / ``correlate`` (n-d) and their 2-d forms
as one ``conv_general_dilated`` of the flipped kernel, and ``fftconvolve`` as a product of
(real or complex) n-d FFTs sliced to the mode's window, as JAX computes them."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from spec._src.api.vmap import vmap
from spec._src.lax import conv as lax_conv
from spec._src.lax import slicing as lax_slicing
from spec._src.numpy import fft as jnp_fft
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.dtypes import iscomplexobj
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.reductions import canonicalize_axis
from spec._src.numpy.util import check_arraylike

ModeString = Literal["full", "same", "valid"]
_MODES = ("full", "same", "valid")


def _index_tuple(axes: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(axes, Sequence):
        return tuple(operator.index(a) for a in axes)
    return (operator.index(axes),)


def _one_contains_other(s1: Sequence[int], s2: Sequence[int]) -> tuple[bool, bool]:
    """(in1 at least as large in every axis, in2 at least as large in every axis)."""
    return (all(a >= b for a, b in zip(s1, s2)), all(a <= b for a, b in zip(s1, s2)))


def _fftconvolve_unbatched(in1: Any, in2: Any, mode: str) -> Any:
    full_shape = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap, swap = _one_contains_other(in1.shape, in2.shape)
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, One input must be at least as large as the other "
                             "in every dimension.")
        if swap:
            in1, in2 = in2, in1
    if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
        conv = in1 * in2  # an outer product: no FFT needed
    else:
        fft, ifft = ((jnp_fft.fftn, jnp_fft.ifftn) if iscomplexobj(in1)
                     else (jnp_fft.rfftn, jnp_fft.irfftn))
        conv = ifft(fft(in1, full_shape) * fft(in2, full_shape), full_shape)
    if mode == "full":
        out_shape = full_shape
    elif mode == "same":
        out_shape = tuple(in1.shape)
    else:
        out_shape = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape))
    start = tuple((full - out) // 2 for full, out in zip(full_shape, out_shape))
    return lax_slicing.dynamic_slice(conv, start, out_shape)


def fftconvolve(in1: Any, in2: Any, mode: ModeString = "full",
                axes: Sequence[int] | None = None) -> Any:
    check_arraylike("fftconvolve", in1, in2)
    in1, in2 = _promote_dtypes_inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    conv: Any = functools.partial(_fftconvolve_unbatched, mode=mode)
    if axes is None:
        return conv(in1, in2)
    conv_axes = tuple(canonicalize_axis(ax, in1.ndim) for ax in _index_tuple(axes))
    mapped = set(range(in1.ndim)) - set(conv_axes)
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape!r} "
                         f"in2.shape={in2.shape!r} axes={conv_axes!r}")
    for ax in sorted(mapped):
        conv = vmap(conv, in_axes=ax, out_axes=ax)
    return conv(in1, in2)


def _convolve_nd(in1: Any, in2: Any, mode: str, *, precision: Any) -> Any:
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    in1, in2 = _promote_dtypes_inexact(in1, in2)
    no_swap, swap = _one_contains_other(in1.shape, in2.shape)
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = jnp_shape.flip(in2)
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2)
                   for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    strides = tuple(1 for _ in shape)
    result = lax_conv.conv_general_dilated(in1[None, None], in2[None, None], strides, padding,
                                           precision=precision)
    return result[0, 0]


def convolve(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
             precision: Any = None) -> Any:
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd(in1, in2, mode, precision=precision)
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: float) -> None:
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Any:
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision=precision)


def correlate(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
              precision: Any = None) -> Any:
    return convolve(in1, jnp_shape.flip(in2.conj()), mode, precision=precision, method=method)


def correlate2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Any:
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = all(a == b for a, b in zip(in1.shape, in2.shape))
    # Correlation is convolution with the flipped kernel; which operand is flipped (and
    # whether the result is flipped back) follows the roles convolve gives the larger one.
    if mode == "same" or (mode == "valid" and not (swap and not same_shape)) or \
            (mode == "full" and not swap):
        result = _convolve_nd(jnp_shape.flip(in1), in2.conj(), mode, precision=precision)
        return jnp_shape.flip(result)
    result = _convolve_nd(jnp_shape.flip(in2), in1.conj(), mode, precision=precision)
    return result if mode == "valid" else result.conj()


__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]
