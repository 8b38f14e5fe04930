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
_F = np.float32

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
    + [("binom", f, (_K, _F(5), _F(0.3))) for f in ("logpmf", "pmf")]
    + [("chi2", f, (_X, _F(3.0), *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + [("geom", f, (_K, _F(0.3))) for f in ("logpmf", "pmf")]
    + [("nbinom", f, (_K, _F(3), _F(0.4))) for f in ("logpmf", "pmf")]
    + [("pareto", f, (_Q if f == "ppf" else np.abs(_X) + 0.5, _F(2.5), *_LOC_SCALE))
       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")]
    + [(d, f, (_Q if f == "ppf" else _X, *_LOC_SCALE)) for d in ("gumbel_r", "gumbel_l")
       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")]
    + [("vonmises", f, (_X, _F(2.0))) for f in ("logpdf", "pdf")]
    + [("wrapcauchy", f, (_X, _F(0.4))) for f in ("logpdf", "pdf")]
    + [("gennorm", f, (_X, _F(1.5))) for f in ("logpdf", "pdf", "cdf")]
    + [("truncnorm", "logcdf", (_X, _F(-1.0), _F(2.0), *_LOC_SCALE))]
    + [("dirichlet", f, (np.array([[0.2, 0.3], [0.5, 0.1], [0.3, 0.6]], np.float32),
                         np.array([1.5, 2.0, 3.0], np.float32))) for f in ("logpdf", "pdf")]
    + [("dirichlet", "logpdf", (np.array([[0.2, 0.3], [0.5, 0.1]], np.float32),
                                np.array([1.5, 2.0, 3.0], np.float32)))]
    + [("multinomial", f, (np.array([[1, 2, 3], [0, 0, 6], [1, 1, 1]]), 6,
                           np.array([0.2, 0.3, 0.5], np.float32))) for f in ("logpmf", "pmf")]
    + [("multivariate_normal", f, (_rng.normal(size=(4, 3)).astype(np.float32),
                                   np.array([0.1, -0.2, 0.3], np.float32), cov))
       for f in ("logpdf", "pdf")
       for cov in (np.array([[2, .5, 0], [.5, 1, .2], [0, .2, 1.5]], np.float32), _F(2.0))]
    + [("multivariate_normal", "logpdf", (_X[:4], _F(0.5), _F(2.0)))]
)
_LOOSE = {"gamma", "beta", "poisson", "chi2", "betabinom", "gennorm", "truncnorm"}


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


# (The rest take x of other shapes, or call special functions with their own jaxpr tests.
# Functions JAX jits (betabinom, truncnorm) compile for seconds each: their values are
# checked for truncnorm.logcdf, the most intricate, and the rest by their jaxprs.)
_JAXPR_DISTRIBUTIONS = {"norm", "expon", "logistic", "gamma", "beta", "t", "binom", "betabinom",
                        "chi2", "geom", "nbinom", "pareto", "gumbel_r", "gumbel_l", "vonmises",
                        "wrapcauchy", "gennorm", "truncnorm"}


_DERIVED_JAXPRS = [
    *[("betabinom", f, (_F(5), _F(2.0), _F(3.0))) for f in ("logpmf", "pmf")],
    *[("truncnorm", f, (_F(-1.0), _F(2.0), *_LOC_SCALE))
      for f in ("logpdf", "pdf", "cdf", "sf", "logsf")],
    ("poisson", "entropy", ()), ("poisson", "entropy", (np.zeros((2, 1), np.float32),)),
]


def test_jaxprs_dtypes_and_weak_types_match_jax() -> None:
    x = np.full((3,), 0.5, np.float32)
    for dist, fn, args in _CALLS:
        # (norm.ppf and isf bind spec's own ndtri composite.)
        if dist in _JAXPR_DISTRIBUTIONS and fn not in ("ppf", "isf"):
            ours = spec.make_jaxpr(getattr(getattr(S, dist), fn))(x, *args[1:])
            theirs = jax.make_jaxpr(getattr(getattr(J, dist), fn))(x, *args[1:])
            assert str(ours) == str(theirs), f"{dist}.{fn}"
    for dist, fn, args in _DERIVED_JAXPRS:
        ours = spec.make_jaxpr(getattr(getattr(S, dist), fn))(x, *args)
        theirs = jax.make_jaxpr(getattr(getattr(J, dist), fn))(x, *args)
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


_SAMPLE = np.array([[3, 1, 2, 2], [5, 5, 1, 0], [1, 1, 2, 7]], np.float32)
_WITH_NAN = np.where(np.arange(12).reshape(3, 4) == 6, np.nan, _SAMPLE).astype(np.float32)
_STATISTICS = [
    ("rankdata", (_SAMPLE,), {"axis": 1}), ("rankdata", (_WITH_NAN, "min"), {"axis": 1}),
    ("rankdata", (_SAMPLE, "dense"), {}), ("mode", (_SAMPLE,), {"axis": 1, "keepdims": True}),
    ("mode", (_SAMPLE,), {"axis": None}), ("sem", (_WITH_NAN,), {"nan_policy": "omit"}),
    ("sem", (np.arange(5),), {}),
]


@pytest.mark.parametrize("fn, args, kwargs", _STATISTICS,
                         ids=[f"{f}{i}" for i, (f, _, _) in enumerate(_STATISTICS)])
def test_sample_statistics_match_jax(fn: str, args: tuple[Any, ...],
                                     kwargs: dict[str, Any]) -> None:
    ours, theirs = getattr(S, fn)(*args, **kwargs), getattr(J, fn)(*args, **kwargs)
    assert isinstance(ours, tuple) == isinstance(theirs, tuple)
    if isinstance(theirs, tuple):
        assert type(ours).__name__ == type(theirs).__name__ == "ModeResult"
        assert ours._fields == theirs._fields
    for o, t in zip(spec.tree.leaves(ours), jax.tree.leaves(theirs)):
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)


@pytest.mark.parametrize("dist, fn, args", [
    ("chi2", "logpdf", (2.3, 3.0, 0.1, 1.5)), ("gumbel_r", "logsf", (0.3, 0.1, 2.0)),
    ("nbinom", "logpmf", (3.0, 2.5, 0.4)),
])
def test_gradients_match_jax(dist: str, fn: str, args: tuple[float, ...]) -> None:
    argnums = tuple(range(len(args)))
    ours = spec.grad(getattr(getattr(S, dist), fn), argnums=argnums)(*args)
    theirs = jax.grad(getattr(getattr(J, dist), fn), argnums=argnums)(*args)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5)
