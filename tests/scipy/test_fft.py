"""spec.scipy.fft against jax.scipy.fft run live: dct / idct / dctn / idctn over chosen axes
and sizes, both norms, real, integer and complex inputs: values, dtypes and jaxpr text; the
round trip idct(dct(x)) == x; and the errors for unsupported types, norms and axes."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.fft as J
import numpy as np
import pytest

import spec
import spec.scipy.fft as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(3)
_X = _rng.normal(size=(4, 6, 5)).astype(np.float32)
_C = (_X + 1j * _X[::-1]).astype(np.complex64)

_CALLS: list[tuple[str, Any, dict[str, Any]]] = [
    ("dct", _X, {}), ("dct", _X, {"axis": 1, "norm": "ortho", "n": 8}),
    ("dct", np.arange(6), {}), ("dct", _C, {"n": 3}),
    ("idct", _X, {}), ("idct", _X, {"norm": "ortho", "axis": 0}),
    ("dctn", _X, {}), ("dctn", _X, {"axes": (0, 2), "norm": "ortho"}),
    ("dctn", _X, {"s": (7, 3)}), ("dctn", _X[0], {"s": 4}),
    ("idctn", _X, {}), ("idctn", _X, {"s": [5], "norm": "ortho"}),
    ("idctn", _C, {"axes": (1, 2)}),
]


@pytest.mark.parametrize("fn, x, kwargs", _CALLS,
                         ids=[f"{f}{i}" for i, (f, _, _) in enumerate(_CALLS)])
def test_matches_jax(fn: str, x: Any, kwargs: dict[str, Any]) -> None:
    # (JAX's side under one jit: a single compilation instead of one per eager operation.)
    ours = getattr(S, fn)(x, **kwargs)
    theirs = jax.jit(lambda v: getattr(J, fn)(v, **kwargs))(x)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-5, atol=2e-5)
    ours_jaxpr = spec.make_jaxpr(lambda v: getattr(S, fn)(v, **kwargs))(x)
    theirs_jaxpr = jax.make_jaxpr(lambda v: getattr(J, fn)(v, **kwargs))(x)
    assert str(ours_jaxpr) == str(theirs_jaxpr)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_idct_inverts_dct(norm: str | None) -> None:
    x = _X.astype(np.float64)
    np.testing.assert_allclose(np.asarray(S.idctn(S.dctn(x, norm=norm), norm=norm)), x,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn, kwargs", [
    ("dct", {"type": 3}), ("idct", {"norm": "forward"}), ("dctn", {"s": (1, 2, 3, 4)}),
    ("idctn", {"axes": (0, 0)}), ("dctn", {"norm": "forward"}),
])
def test_errors_match_jax(fn: str, kwargs: dict[str, Any]) -> None:
    ours, theirs = errors_alike(lambda: getattr(S, fn)(_X, **kwargs),
                                lambda: getattr(J, fn)(_X, **kwargs))
    assert str(ours) == str(theirs)
