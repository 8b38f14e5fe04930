"""jax.scipy.stats.gaussian_kde: densities and integrals against SciPy's
gaussian_kde (float64, so only rounding differs), resampling as the composition of
spec's samplers (each twinned with JAX), the pytree round trip and JAX's errors."""

from __future__ import annotations

from typing import Any

import jax.scipy.stats as jstats
import numpy as np
import pytest
import scipy.stats as sstats

import spec
import spec.scipy.stats as ostats

_rng = np.random.default_rng(5)
DATA = _rng.normal(size=(2, 30))
WEIGHTS = _rng.uniform(size=30)
POINTS = _rng.normal(size=(2, 6))
KWARGS: list[dict[str, Any]] = [{}, {"bw_method": "silverman", "weights": WEIGHTS},
                                {"bw_method": 0.4}]


@pytest.mark.parametrize("kw", KWARGS, ids=["scott", "silverman_weighted", "scalar"])
def test_values_match_scipy(kw: dict[str, Any], x64: None) -> None:
    ours, theirs = ostats.gaussian_kde(DATA, **kw), sstats.gaussian_kde(DATA, **kw)
    for a, e in [(ours(POINTS), theirs(POINTS)), (ours.logpdf(POINTS), theirs.logpdf(POINTS)),
                 (ours.integrate_gaussian(np.zeros(2), np.eye(2)),
                  theirs.integrate_gaussian(np.zeros(2), np.eye(2))),
                 (ours.integrate_kde(ostats.gaussian_kde(POINTS)),
                  theirs.integrate_kde(sstats.gaussian_kde(POINTS))),
                 (ours.covariance, theirs.covariance), (ours.neff, theirs.neff)]:
        np.testing.assert_allclose(np.asarray(a), e, rtol=1e-9)


def test_one_dimensional_box_and_points(x64: None) -> None:
    ours, theirs = ostats.gaussian_kde(DATA[0]), sstats.gaussian_kde(DATA[0])
    np.testing.assert_allclose(np.asarray(ours.integrate_box_1d(-0.5, 1.0)),
                               theirs.integrate_box_1d(-0.5, 1.0), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(ours.pdf(POINTS[0])), theirs.pdf(POINTS[0]),
                               rtol=1e-9)


def _kdes() -> tuple[Any, Any]:
    """spec's estimator of DATA and JAX's rebuilt from its fields (JAX's
    construction, op by op, costs seconds)."""
    ours = ostats.gaussian_kde(DATA.astype(np.float32))
    leaves = spec.tree_util.tree_leaves(ours)
    return ours, jstats.gaussian_kde.tree_unflatten(None, [np.asarray(x) for x in leaves])


def test_resample_is_choice_plus_kernel_noise_and_tree_round_trips() -> None:
    """resample's draws are the weighted choice of data points plus
    multivariate-normal noise from the split key (JAX's composition, each
    sampler twinned with JAX in tests/random), bit for bit."""
    kde, _ = _kdes()
    key = spec.random.key(0)
    k_ind, k_eps = spec.random.split(key)
    ind = spec.random.choice(k_ind, kde.n, shape=(3,), p=kde.weights)
    eps = spec.random.multivariate_normal(k_eps, np.zeros(2, np.float32), kde.covariance,
                                          shape=(3,), dtype=np.float32).T
    want = np.asarray(kde.dataset)[:, np.asarray(ind)] + np.asarray(eps)
    assert np.array_equal(np.asarray(kde.resample(key, (3,))), want)
    leaves, tree = spec.tree_util.tree_flatten(kde)
    back = spec.tree_util.tree_unflatten(tree, leaves)
    assert np.array_equal(np.asarray(back(POINTS)), np.asarray(kde(POINTS)))


def test_errors_match_jax() -> None:
    for m in (ostats, jstats):
        with pytest.raises(ValueError):
            m.gaussian_kde(np.ones(1))
    for kde in _kdes():
        with pytest.raises(NotImplementedError):
            kde.integrate_box(0, 1)
        with pytest.raises(ValueError):
            kde.integrate_box_1d(0, 1)
        with pytest.raises(ValueError):
            kde(np.ones((3, 2)))
