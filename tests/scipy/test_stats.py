"""spec.scipy.stats against jax.scipy.stats run live: every function of
each distribution spec has, its values (float32; relative tolerances as
for the special functions they use), dtypes, weak types and jaxprs."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.stats as J
import numpy as np
import pytest

import spec
import spec.scipy.stats as S

_rng = np.random.default_rng(5)
_X = np.concatenate([_rng.uniform(-4, 6, 24), [0.0, 1.0, -1.0, np.inf]]).astype(np.float32)
_Q = np.concatenate([_rng.uniform(0.001, 0.999, 24), [0.0, 1.0, 0.5, 1.5]]).astype(np.float32)
_K = np.concatenate([np.arange(24) % 7, [-1, 0.5, 1, 2]]).astype(np.float32)
_LOC_SCALE = (np.float32(0.5), np.float32(1.5))

# (distribution, function, operands)
_CALLS: list[tuple[str, str, tuple[Any, ...]]] = (
    [("norm", f, (_Q if f in ("ppf", "isf") else _X, *_LOC_SCALE))
     for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")]
    + [("expon", f, (_Q if f == "ppf" else _X, *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")]
    + [("laplace", f, (_X, *_LOC_SCALE)) for f in ("logpdf", "pdf", "cdf")]
    + [("logistic", f, (_Q if f in ("ppf", "isf") else _X, *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "sf", "ppf", "isf")]
    + [("uniform", f, (_Q if f == "ppf" else _X, *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "ppf")]
    + [("cauchy", f, (_Q if f in ("ppf", "isf") else _X, *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")]
    + [("poisson", f, (_K, np.float32(2.5))) for f in ("logpmf", "pmf", "cdf")]
    + [("bernoulli", f, (_K, np.float32(0.3))) for f in ("logpmf", "pmf", "cdf")]
    + [("bernoulli", "ppf", (_Q, np.float32(0.3)))]
    + [("gamma", f, (_X, np.float32(2.5), *_LOC_SCALE))
       for f in ("logpdf", "cdf", "sf")]
    + [("beta", f, (np.abs(_Q) * 0.9, np.float32(2.0), np.float32(3.5)))
       for f in ("logpdf", "pdf", "cdf", "sf")]
    + [("t", f, (_X, np.float32(3.0), *_LOC_SCALE)) for f in ("logpdf", "pdf")]
)
_LOOSE = {"gamma", "beta", "poisson"}  # igamma / betainc inside


@pytest.mark.parametrize("dist, fn, args", _CALLS, ids=[f"{d}.{f}" for d, f, _ in _CALLS])
def test_matches_jax(dist: str, fn: str, args: tuple[Any, ...]) -> None:
    ours = np.asarray(getattr(getattr(S, dist), fn)(*args))
    theirs = np.asarray(getattr(getattr(J, dist), fn)(*args))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite], theirs[~finite])
    # (atol: log of a probability near 1 keeps the probability's absolute error.)
    np.testing.assert_allclose(ours[finite], theirs[finite], atol=1e-7,
                               rtol=1e-4 if dist in _LOOSE else 5e-6)


def test_jaxprs_dtypes_and_weak_types_match_jax() -> None:
    x = np.full((3,), 0.5, np.float32)
    for dist, fn, args in _CALLS:
        # (norm.ppf and isf bind spec's own ndtri composite.)
        if dist in ("norm", "expon", "logistic", "gamma", "beta", "t") and \
                fn not in ("ppf", "isf"):
            ours = spec.make_jaxpr(getattr(getattr(S, dist), fn))(x, *args[1:])
            theirs = jax.make_jaxpr(getattr(getattr(J, dist), fn))(x, *args[1:])
            assert str(ours) == str(theirs), f"{dist}.{fn}"
    for dist in ("norm", "cauchy", "laplace"):
        ours = spec.eval_shape(getattr(S, dist).logpdf, 1.0)
        theirs = jax.eval_shape(getattr(J, dist).logpdf, 1.0)
        assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)


def test_norm_logpdf_grad_matches_jax() -> None:
    for fn in ("logpdf", "logcdf"):
        ours = spec.grad(getattr(S.norm, fn), argnums=(0, 1, 2))(0.3, 0.1, 2.0)
        theirs = jax.grad(getattr(J.norm, fn), argnums=(0, 1, 2))(0.3, 0.1, 2.0)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
