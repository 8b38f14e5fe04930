"""``jax.scipy.signal``'s spectral analysis: ``detrend``, ``stft``,
``istft``, ``csd`` and ``welch``, computed as JAX computes them.

- ``detrend(data, axis, type, bp)``: ``'constant'`` subtracts the mean;
  ``'linear'`` subtracts, between consecutive breakpoints (0, ``bp``..., n),
  the least-squares line ``a + b * k / m`` (k = 1..m, m the piece's length).
- The windowed FFT shared by the others: segments of ``nperseg`` samples
  every ``nperseg - noverlap`` (no ragged last segment), each detrended,
  multiplied by the window and transformed (``rfft`` of the real part for a
  one-sided spectrum, ``fft`` for a two-sided one) with ``nfft`` points.
  ``stft`` extends the signal at its ends by ``nperseg // 2`` samples
  (``boundary``: zeros, even, odd, constant) and pads it to whole segments,
  scaled by ``1 / sum(window)``; ``csd`` is the mean (or bias-corrected
  median) over segments of ``conj(X) Y``, scaled by ``1 / (fs sum(w^2))``
  (density) or ``1 / sum(w)^2`` (spectrum), the one-sided bins other than
  0 and Nyquist doubled; ``welch`` is its real part for ``y = x``.
- ``istft``: the inverse FFT of each segment, weighted by the window and
  overlap-added, divided by the overlap-added squared window where that
  exceeds 1e-10, the boundary extension cut.

Windows: ``'hann'`` (the periodic Hann window, ``sin(pi k / n)^2``) or an
array; another name or a tuple is built by SciPy's ``get_window`` when SciPy
is installed, as JAX does.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import slicing as lax_slicing
from spec._src.lax.dot import Precision
from spec._src.numpy import creation
from spec._src.numpy import fft as jfft
from spec._src.numpy import math as jm
from spec._src.numpy import padding
from spec._src.numpy import reductions as jr
from spec._src.numpy import shape as js
from spec._src.numpy import statistics as jstat
from spec._src.numpy import tiling
from spec._src.numpy.dtypes import iscomplexobj
from spec._src.numpy.indexing import where
from spec._src.numpy.linalg import matmul
from spec._src.numpy.linalg_solve import lstsq
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.reductions import canonicalize_axis


def _complex_of(dt: T.DType) -> T.DType:
    if T.is_complex(dt):
        return dt
    return T.canonicalize_dtype(T.complex128 if dt == T.float64 else T.complex64)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(canonical_aval_of(x).shape)


def _dtype(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


# ------------------------------------------------------------------ detrend

def detrend(data: Any, axis: int = -1, type: str = "linear",
            bp: int | Sequence[int] | np.ndarray = 0, overwrite_data: None = None) -> Any:
    """``data`` less its mean or its piecewise least-squares line (see the
    module docstring)."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (x,) = _promote_dtypes_inexact(creation.asarray(data))
    if type == "constant":
        return x - jr.mean(x, axis, keepdims=True)
    n = _shape(x)[axis]
    # The breakpoints are static: NumPy, not traced values.
    cuts = np.sort(np.unique(np.r_[0, bp, n]))
    if cuts[0] < 0 or cuts[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    moved = js.moveaxis(x, axis, 0)
    shape = _shape(moved)
    flat = js.reshape(moved, (n, -1))
    dt = _dtype(flat)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        m = int(hi - lo)
        design = js.vstack([creation.ones(m, dtype=dt),
                            creation.arange(1, m + 1, dtype=dt) / np.asarray(m).astype(dt)]).T
        piece = slice(int(lo), int(hi))
        coef = lstsq(design, flat[piece])[0]
        flat = flat.at[piece].add(-matmul(design, coef, precision=Precision.HIGHEST))
    return js.moveaxis(js.reshape(flat, shape), 0, axis)


# ----------------------------------------------------------------- windows

def _hann(n: int) -> Any:
    if n == 1:
        return creation.array([1.0])
    return jm.sin(creation.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window: Any, n: int) -> Any:
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:
        # Optional dependency: other named windows are SciPy's, as in JAX.
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return creation.array(get_window(window, n))


def _window_and_length(window: Any, nperseg: int | None, input_length: int, dtype: Any
                       ) -> tuple[Any, int]:
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                          f"nperseg={input_length}", stacklevel=3)
            n = input_length
        return creation.asarray(_named_window(window, n), dtype=dtype), n
    win = creation.asarray(window, dtype=dtype)
    n = _shape(win)[0] if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < _shape(win)[0]:
        raise ValueError("window is longer than input signal")
    if n != _shape(win)[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


# ------------------------------------------------------------ windowed FFT

def _segments_fft(x: Any, win: Any, detrend_func: Callable[[Any], Any], nperseg: int,
                  noverlap: int, nfft: int, sides: str) -> Any:
    if _dtype(x).kind == "i":
        x = x.astype(_dtype(win))
    *batch, length = _shape(x)
    if nperseg == 1 and noverlap == 0:
        segs = x[..., None]
    else:
        starts = creation.arange(0, length - nperseg + 1, nperseg - noverlap)
        segs = vmap(lambda s: lax_slicing.dynamic_slice_in_dim(x, s, nperseg, axis=-1),
                    out_axes=-2)(starts)
    segs = detrend_func(segs)
    if iscomplexobj(win):
        segs = segs.astype(_complex_of(_dtype(segs)))
    segs = js.reshape(win, (1,) * len(batch) + (1, nperseg)) * segs
    if sides == "twosided":
        return jfft.fft(segs, n=nfft)
    return jfft.rfft(jm.real(segs), n=nfft)


def _odd_ext(x: Any, n: int, axis: int = -1) -> Any:
    if n < 1:
        return x
    size = _shape(x)[axis]
    if n > size - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {size - 1}.")
    first = lax_slicing.slice_in_dim(x, 0, 1, axis=axis)
    last = lax_slicing.slice_in_dim(x, size - 1, size, axis=axis)
    left = js.flip(lax_slicing.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
    right = js.flip(lax_slicing.slice_in_dim(x, size - n - 1, size - 1, axis=axis), axis=axis)
    return js.concatenate((2 * first - left, x, 2 * last - right), axis=axis)


def _padder(mode: str, **kwargs: Any) -> Callable[..., Any]:
    def pad(x: Any, n: int, axis: int = -1) -> Any:
        width = [(0, 0)] * x.ndim
        width[axis] = (n, n)
        return padding.pad(x, width, mode, **kwargs)
    return pad


_BOUNDARIES: dict[str | None, Callable[..., Any]] = {
    "even": _padder("reflect"), "odd": _odd_ext, "constant": _padder("edge"),
    "zeros": _padder("constant", constant_values=0.0), None: lambda x, *a, **k: x,
}


def _zero_pad_to(x: Any, length: int) -> Any:
    extra = length - _shape(x)[-1]
    if extra <= 0:
        return x
    return js.concatenate((x, creation.zeros((*_shape(x)[:-1], extra), dtype=_dtype(x))), -1)


def _detrender(detrend_type: Any) -> Callable[[Any], Any]:
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    if callable(detrend_type):
        return detrend_type  # type: ignore[no-any-return]
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _spectral(x: Any, y: Any, fs: Any, window: Any, nperseg: int | None,
              noverlap: int | None, nfft: int | None, detrend_type: Any,
              return_onesided: bool, scaling: str, axis: int, mode: str,
              boundary: str | None = None, padded: bool = False) -> tuple[Any, Any, Any]:
    """(frequencies, segment times, per-segment spectra) as SciPy's
    ``_spectral_helper``; ``y is None`` asks for the auto-spectrum."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    x = creation.asarray(x)
    axis = canonicalize_axis(operator.index(axis), x.ndim)
    if y is None:
        (x,) = _promote_dtypes_inexact(x)
        yy = x
        outer = _shape(x)[:axis] + _shape(x)[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, yy = _promote_dtypes_inexact(x, creation.asarray(y))
        if x.ndim != yy.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {yy.ndim}).")
        try:
            outer = js.broadcast_shapes(_shape(x)[:axis] + _shape(x)[axis + 1:],
                                        _shape(yy)[:axis] + _shape(yy)[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = _complex_of(_dtype(x))
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None and int(nperseg) < 1:
        raise ValueError("nperseg must be a positive integer")
    win, nper = _window_and_length(window, None if nperseg is None else int(nperseg),
                                   _shape(x)[axis], _dtype(x))
    nover = nper // 2 if noverlap is None else int(noverlap)
    n_fft = nper if nfft is None else int(nfft)
    if math.prod(_shape(x)) == 0 or math.prod(_shape(yy)) == 0:
        size = min(_shape(x)[axis], _shape(yy)[axis])
        shape = _shape(x) if y is None else (*outer[:axis], size, *outer[axis:])
        return (creation.zeros(shape, freq_dtype), creation.zeros(shape, freq_dtype),
                creation.zeros(shape, result_dtype))
    x = js.moveaxis(x, axis, -1)
    if y is not None and yy.ndim > 1:
        yy = js.moveaxis(yy, axis, -1)
    if y is not None:
        longest = max(_shape(x)[-1], _shape(yy)[-1])
        x, yy = _zero_pad_to(x, longest), _zero_pad_to(yy, longest)
    if n_fft < nper:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if nover >= nper:
        raise ValueError("noverlap must be less than nperseg.")
    step = nper - nover
    if boundary is not None:
        x = _BOUNDARIES[boundary](x, nper // 2, axis=-1)
        if y is not None:
            yy = _BOUNDARIES[boundary](yy, nper // 2, axis=-1)
    if padded:
        extra = (-(_shape(x)[-1] - nper) % step) % nper
        x = _zero_pad_to(x, _shape(x)[-1] + extra)
        if y is not None:
            yy = _zero_pad_to(yy, _shape(yy)[-1] + extra)
    detrend_func = _detrender(detrend_type)
    if scaling == "density":
        scale = 1.0 / (fs * jr.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jr.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jm.sqrt(scale)
    scale = creation.asarray(scale).astype(_complex_of(_dtype(scale)))
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and (iscomplexobj(x) or (y is not None and iscomplexobj(yy))):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    freqs = (jfft.fftfreq(n_fft, 1 / fs, dtype=freq_dtype) if sides == "twosided"
             else jfft.rfftfreq(n_fft, 1 / fs, dtype=freq_dtype))
    result = _segments_fft(x, win, detrend_func, nper, nover, n_fft, sides)
    if y is not None:
        result = jm.conjugate(result) * _segments_fft(yy, win, detrend_func, nper, nover,
                                                      n_fft, sides)
    elif mode == "psd":
        result = jm.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        end = None if n_fft % 2 else -1
        result = result.at[..., 1:end].mul(2)
    time = creation.arange(nper / 2, _shape(x)[-1] - nper / 2 + 1, nper - nover,
                           dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nper / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = jm.real(result)
    return freqs, time, js.moveaxis(result, -1, axis)


# ------------------------------------------------------------- public API

def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """(frequencies, segment times, STFT) of ``x`` (see the module docstring)."""
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def _median_bias(n: int) -> Any:
    even = creation.arange(2.0, n, 2)
    return 1 + jr.sum(1.0 / (even + 1) - 1.0 / even)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """(frequencies, cross spectral density of x and y) by Welch's method;
    ``y=None`` is ``x`` itself."""
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and math.prod(_shape(pxy)) > 0:
        if _shape(pxy)[-1] > 1:
            if average == "median":
                bias = _median_bias(_shape(pxy)[-1]).astype(_dtype(pxy))
                if iscomplexobj(pxy):
                    pxy = (jstat.median(jm.real(pxy), axis=-1)
                           + 1j * jstat.median(jm.imag(pxy), axis=-1))
                else:
                    pxy = jstat.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = jr.mean(pxy, axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = js.reshape(pxy, _shape(pxy)[:-1])
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """(frequencies, power spectral density of x) by Welch's method."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, jm.real(pxx)


def _overlap_and_add(x: Any, step: int) -> Any:
    """Frames ``[..., n, length]`` placed every ``step`` samples and summed."""
    if x.ndim < 2:
        raise ValueError("Input must have (..., frames, frame_length) shape.")
    *batch, frames, length = _shape(x)
    b = math.prod(batch)
    x = js.reshape(x, (b, frames, length))
    out_size = step * (frames - 1) + length
    per_segment = 1 + (length - 1) // step
    x = padding.pad(x, ((0, 0), (0, 0), (0, per_segment * step - length)))
    x = js.reshape(x, (b, frames, per_segment, step))
    # Row k of the (segment part, frame) grid, read with one row fewer, is the
    # frame shifted by k steps: summing over k overlaps the frames.
    x = js.transpose(x, (0, 2, 1, 3))
    x = padding.pad(x, ((0, 0), (0, 0), (0, frames), (0, 0)))
    shrunk = _shape(x)[2] - 1
    x = js.reshape(x, (b, -1))[:, :per_segment * shrunk * step]
    x = js.reshape(x, (b, per_segment, shrunk * step))
    x = jr.sum(x, axis=1)[:, :out_size]
    return js.reshape(x, (*batch, -1))


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann",  # noqa: N803
          nperseg: int | None = None, noverlap: int | None = None, nfft: int | None = None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Any, Any]:
    """(times, signal) whose STFT is ``Zxx`` (see the module docstring)."""
    z = creation.asarray(Zxx)
    if z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonicalize_axis(freq_axis, z.ndim)
    time_axis = canonicalize_axis(time_axis, z.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    z = z.astype(_complex_of(_dtype(z)))
    n_default = 2 * (_shape(z)[freq_axis] - 1) if input_onesided else _shape(z)[freq_axis]
    nper = int(nperseg or n_default)
    if nper < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        # An odd segment length is a one-sided spectrum of one bin more, unpadded.
        n_fft = n_default + 1 if input_onesided and nper == n_default + 1 else n_default
    else:
        n_fft = int(nfft)
    if n_fft < nper:
        raise ValueError(f"FFT length ({n_fft}) must be longer than nperseg ({nper}).")
    nover = int(noverlap or nper // 2)
    if nover >= nper:
        raise ValueError("noverlap must be less than nperseg.")
    step = nper - nover
    if time_axis != z.ndim - 1 or freq_axis != z.ndim - 2:
        outer = tuple(i for i in range(z.ndim) if i not in {time_axis, freq_axis})
        z = js.transpose(z, (*outer, freq_axis, time_axis))
    inverse = jfft.irfft if input_onesided else jfft.ifft
    subs = inverse(z, axis=-2, n=nfft)[..., :nper, :]
    if isinstance(window, (str, tuple)):
        win = creation.asarray(_named_window(window, nper), dtype=_dtype(subs))
    else:
        win = creation.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if _shape(win)[0] != nper:
            raise ValueError(f"window must have length of {nper}")
    subs = subs * jr.sum(win)
    win = js.expand_dims(win, (*range(subs.ndim - 2), -1))
    x = _overlap_and_add(js.swapaxes(subs * win, -2, -1), step)
    squared = tiling.repeat(win * win, _shape(subs)[-1], axis=-1)
    norm = _overlap_and_add(js.swapaxes(squared, -2, -1), step)
    if boundary:
        x = x[..., nper // 2:-(nper // 2)]
        norm = norm[..., nper // 2:-(nper // 2)]
    x = x / where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != z.ndim - 1:
        x = js.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = creation.arange(_shape(x)[0], dtype=np.finfo(_dtype(x)).dtype) / fs
    return time, x


__all__ = ["csd", "detrend", "istft", "stft", "welch"]
