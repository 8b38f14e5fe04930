"""jax.scipy.signal's detrend, stft, istft, csd and welch: values against
SciPy's (the definitions JAX follows; float64 inputs so that only rounding
differs), dtypes and shapes twinned with JAX (one program traced by jax.eval_shape),
and istft inverting stft."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.signal as jsig
import numpy as np
import pytest
import scipy.signal as ssig

import spec
import spec.scipy.signal as ours_sig

_rng = np.random.default_rng(11)
X = _rng.normal(size=(2, 40))
Y = _rng.normal(size=(2, 40))

# (name, module -> result): spec.scipy.signal and scipy.signal run the same call.
ROWS: list[tuple[str, Callable[[Any], Any]]] = [
    ("detrend_linear", lambda m: m.detrend(X)),
    ("detrend_breakpoints", lambda m: m.detrend(X, bp=[10, 25])),
    ("detrend_constant_axis0", lambda m: m.detrend(X, axis=0, type="constant")),
    ("stft", lambda m: m.stft(X, nperseg=8)),
    ("stft_odd_boundary", lambda m: m.stft(X, nperseg=7, noverlap=3, boundary="odd")),
    ("stft_even_unpadded", lambda m: m.stft(X, nperseg=8, boundary="even", padded=False,
                                            nfft=10)),
    ("welch", lambda m: m.welch(X, nperseg=16)),
    ("welch_median_spectrum", lambda m: m.welch(X, nperseg=8, average="median",
                                                scaling="spectrum", detrend="linear")),
    ("welch_hamming_axis0", lambda m: m.welch(X.T, window="hamming", nperseg=8, axis=0)),
    ("csd", lambda m: m.csd(X, Y, nperseg=8)),
    ("csd_twosided", lambda m: m.csd(X, Y[:, :30], nperseg=8, return_onesided=False)),
    ("istft", lambda m: m.istft(ssig.stft(X, nperseg=8)[2])),
    ("istft_axes", lambda m: m.istft(np.moveaxis(ssig.stft(X, nperseg=8)[2], 0, -1),
                                     time_axis=1, freq_axis=0)),
]


@pytest.mark.parametrize("name,call", ROWS, ids=[r[0] for r in ROWS])
def test_values_match_scipy(name: str, call: Callable[[Any], Any], x64: None) -> None:
    ours, theirs = call(ours_sig), call(ssig)
    if not isinstance(theirs, tuple):
        ours, theirs = (ours,), (theirs,)
    for a, e in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(a), e, rtol=1e-10, atol=1e-12)


def test_istft_inverts_stft() -> None:
    x = X.astype(np.float32)
    _, _, z = ours_sig.stft(x, nperseg=8)
    _, back = ours_sig.istft(z)
    np.testing.assert_allclose(np.asarray(back), x, atol=1e-5)


def _program(m: Any) -> Callable[[Any, Any], Any]:
    def run(x: Any, y: Any) -> Any:
        return m.csd(x, y, nperseg=8), m.istft(m.stft(x, nperseg=8)[2])
    return run


def test_dtypes_and_shapes_match_jax() -> None:
    x, y = X.astype(np.float32), Y.astype(np.float32)
    # JAX's side traced only (compiling it costs seconds); values are SciPy's above.
    ours = spec.tree_util.tree_leaves(_program(ours_sig)(x, y))
    theirs = jax.tree_util.tree_leaves(jax.eval_shape(_program(jsig), x, y))
    assert [(np.asarray(a).dtype, np.shape(a)) for a in ours] == \
        [(e.dtype, e.shape) for e in theirs]


@pytest.mark.parametrize("call,exc", [
    (lambda m: m.detrend(X, type="quadratic"), ValueError),
    (lambda m: m.stft(X, nperseg=8, noverlap=8), ValueError),
    (lambda m: m.welch(X, nperseg=8, average="mode"), ValueError),
    (lambda m: m.istft(np.ones(4)), ValueError),
], ids=["trend_type", "noverlap", "average", "istft_rank"])
def test_errors_match_scipy(call: Callable[[Any], Any], exc: type[Exception]) -> None:
    for m in (ours_sig, ssig):
        with pytest.raises(exc):
            call(m)
