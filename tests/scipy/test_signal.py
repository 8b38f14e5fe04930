"""spec.scipy.signal against jax.scipy.signal run live: convolve / correlate (direct and FFT,
1-d and n-d, every mode, real and complex), convolve2d / correlate2d, fftconvolve over chosen
axes: values, dtypes and jaxpr text; and the errors for bad modes and shapes."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.signal as J
import numpy as np
import pytest

import spec
import spec.scipy.signal as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(7)
_A1 = _rng.normal(size=9).astype(np.float32)
_B1 = _rng.normal(size=4).astype(np.float32)
_A2 = _rng.normal(size=(5, 6)).astype(np.float32)
_B2 = _rng.normal(size=(3, 2)).astype(np.float32)
_C2 = (_rng.normal(size=(4, 3)) + 1j * _rng.normal(size=(4, 3))).astype(np.complex64)
_MODES = ("full", "same", "valid")

_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = (
    [("convolve", (_A1, _B1), {"mode": m}) for m in _MODES]
    + [("correlate", (_B1, _A1), {"mode": "same"})]
    + [("convolve", (_B1, _A1), {"mode": "full", "method": "fft"})]
    + [("correlate", (_A2, _B2), {"mode": "same", "method": "fft"})]
    + [(fn, (_A2, _B2), {"mode": m}) for fn in ("convolve2d", "correlate2d") for m in _MODES]
    + [("correlate2d", (_B2, _A2), {"mode": m}) for m in ("full", "valid")]
    + [("correlate2d", (_C2, _A2[:3, :3]), {"mode": "full"}),
       ("correlate2d", (_A2[:3, :2], _C2), {"mode": "full"})]
    + [("fftconvolve", (_A2, _B2), {"mode": m}) for m in _MODES]
    + [("fftconvolve", (_C2, _A2[:2, :3]), {}),
       ("fftconvolve", (_A2[:, :3], _B2[:, :1].repeat(3, 1)), {"axes": 0}),
       ("fftconvolve", (_A1[:, None], _B1[None, :]), {})]
    + [("convolve", (np.arange(5), np.ones(3, np.int32)), {})]
)


@pytest.mark.parametrize("fn, args, kwargs", _CALLS,
                         ids=[f"{f}{i}" for i, (f, _, _) in enumerate(_CALLS)])
def test_matches_jax(fn: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours = getattr(S, fn)(*args, **kwargs)
    # (JAX's side under one jit: a single compilation instead of one per eager operation.)
    theirs = jax.jit(lambda *a: getattr(J, fn)(*a, **kwargs))(*args)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-5, atol=2e-5)
    if "axes" in kwargs:
        # (vmap of jnp.fft's nested jit: spec's batched jaxpr inlines the inner jit JAX keeps.)
        return
    ours_jaxpr = spec.make_jaxpr(lambda *a: getattr(S, fn)(*a, **kwargs))(*args)
    theirs_jaxpr = jax.make_jaxpr(lambda *a: getattr(J, fn)(*a, **kwargs))(*args)
    assert str(ours_jaxpr) == str(theirs_jaxpr)


@pytest.mark.parametrize("fn, args, kwargs", [
    ("convolve", (_A1, _B1), {"mode": "middle"}), ("convolve", (_A1, _B1), {"method": "slow"}),
    ("convolve", (_A2, _B1), {}), ("convolve", (_A2, np.ones((7, 2), np.float32)), {}),
    ("convolve2d", (_A1, _B1), {}), ("correlate2d", (_A2, _B2), {"boundary": "wrap"}),
    ("fftconvolve", (_A2, _B2), {"mode": "middle"}), ("fftconvolve", (_A2, _B1), {}),
    ("fftconvolve", (_A2, _B2), {"axes": 0}),
    ("fftconvolve", (_A2[:2], _B2), {"mode": "valid"}),
])
def test_errors_match_jax(fn: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours, theirs = errors_alike(lambda: getattr(S, fn)(*args, **kwargs),
                                lambda: getattr(J, fn)(*args, **kwargs))
    assert str(ours) == str(theirs)
