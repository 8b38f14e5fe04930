"""jax.random.multivariate_normal and jax.random.orthogonal against real JAX
run live: values (a few ULPs), dtypes, shapes, jaxpr text and errors; plus
mathematical properties (orthogonality; a Cholesky/eigh/svd factor F of the
covariance gives mean + F z for JAX's own normal draws z)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
from tests.support.pair import errors_alike

RNG = np.random.default_rng(99)


def _cov(batch: tuple[int, ...], n: int, dtype: Any) -> np.ndarray:
    a = RNG.standard_normal((*batch, n, n))
    return np.asarray(a @ np.swapaxes(a, -1, -2) + n * np.eye(n), dtype)


def _close(ours: Any, theirs: Any, ulps: float = 64) -> None:
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    scale = max(float(np.max(np.abs(b), initial=0.0)), 1.0)
    assert np.max(np.abs(a - b), initial=0.0) <= ulps * float(jjnp.finfo(a.dtype).eps) * scale


def _both(f: Callable[[Any], Any]) -> tuple[Any, Any]:
    return f(spec), f(jax)


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("shape,mean_shape,cov_batch", [
    (None, (3,), ()), ((4,), (3,), ()), (None, (2, 3), (2,)), ((5, 2), (1, 3), ()),
])
def test_multivariate_normal_cholesky_matches_jax(seed: int, shape: Any,
                                                  mean_shape: tuple[int, ...],
                                                  cov_batch: tuple[int, ...]) -> None:
    mean = RNG.standard_normal(mean_shape).astype(np.float32)
    cov = _cov(cov_batch, 3, np.float32)
    ours, theirs = _both(lambda lib: lib.random.multivariate_normal(
        lib.random.key(seed), mean, cov, shape))
    _close(ours, theirs)


@pytest.mark.parametrize("method", ["eigh", "svd"])
@pytest.mark.parametrize("seed", [0, 3])
def test_multivariate_normal_eigh_svd_match_jax(method: str, seed: int, x64: None) -> None:
    """float64 (NumPy's and JAX's LAPACK builds agree there to the last bits;
    in float32 they may pick eigenvectors of opposite signs, which changes
    the samples but not their distribution: see the next test)."""
    mean = np.arange(4.0)
    cov = _cov((2,), 4, np.float64)
    ours, theirs = _both(lambda lib: lib.random.multivariate_normal(
        lib.random.key(seed), mean, cov, (3, 2), method=method))
    _close(ours, theirs, ulps=256)


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_is_mean_plus_factor_z(method: str) -> None:
    """The sample is mean + F z with F F^T = cov and z JAX's normal draws."""
    mean = np.array([1.0, -2.0, 0.5], np.float32)
    cov = _cov((), 3, np.float32)
    key = 5
    ours = np.asarray(spec.random.multivariate_normal(spec.random.key(key), mean, cov, (4,),
                                                      method=method), np.float64)
    z = np.asarray(jax.random.normal(jax.random.key(key), (4, 3), np.float32), np.float64)
    # F = (x - mean) z^{-1} row-wise is not defined; instead check F F^T = cov
    # through spec's own factor and the sample formula.
    if method == "cholesky":
        f = np.asarray(spec.numpy.linalg.cholesky(cov), np.float64)
    elif method == "eigh":
        w, v = spec.numpy.linalg.eigh(cov)
        f = np.asarray(v, np.float64) * np.sqrt(np.asarray(w, np.float64))
    else:
        u, s, _ = spec.numpy.linalg.svd(cov)
        f = np.asarray(u, np.float64) * np.sqrt(np.asarray(s, np.float64))
    np.testing.assert_allclose(f @ f.T, cov, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours, mean + z @ f.T, rtol=1e-5, atol=1e-5)


def test_multivariate_normal_dtypes_and_jaxpr(x64: None) -> None:
    mean, cov = np.zeros(2, np.float32), _cov((), 2, np.float32)
    for dt in [None, np.float32, np.float64, np.float16]:
        ours, theirs = _both(lambda lib: lib.random.multivariate_normal(
            lib.random.key(0), mean, cov, dtype=dt))
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        assert np.allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64),
                           rtol=1e-2, atol=1e-2)
    mi = np.zeros(2, np.int32)  # integers promote to a float
    ours, theirs = _both(lambda lib: lib.random.multivariate_normal(lib.random.key(1), mi,
                                                                    cov))
    _close(ours, theirs)
    for method in ["cholesky", "eigh", "svd"]:
        def prog(lib: Any) -> str:
            return str(lib.make_jaxpr(lambda k: lib.random.multivariate_normal(
                k, mean, cov, (2,), method=method))(lib.random.key(0)))
        assert prog(spec) == prog(jax)


@pytest.mark.parametrize("call", [
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros(3), np.eye(3),
                                               method="qr"),
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros(()), np.eye(3)),
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros(3), np.ones(3)),
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros(3), np.eye(2)),
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros(3), np.eye(3),
                                               dtype=np.int32),
    lambda lib: lib.random.multivariate_normal(lib.random.key(0), np.zeros((2, 3)),
                                               np.eye(3), shape=(3,)),
    lambda lib: lib.random.multivariate_normal(np.zeros(3), np.zeros(3), np.eye(3)),
    lambda lib: lib.random.orthogonal(lib.random.key(0), 3, dtype=np.int32),
    lambda lib: lib.random.orthogonal(lib.random.key(0), 3, shape=(-1,)),
    lambda lib: lib.random.orthogonal(lib.random.key(0), 2.5),
])
def test_errors_match_jax(call: Callable[[Any], Any]) -> None:
    errors_alike(lambda: call(spec), lambda: call(jax))


@pytest.mark.parametrize("n,m,shape,dtype", [
    (3, None, (), np.float32), (4, 2, (2,), np.float32), (2, 5, (), np.float32),
    (3, 3, (2, 1), np.complex64), (1, 1, (), np.float32),
])
def test_orthogonal_matches_jax(n: int, m: int | None, shape: tuple[int, ...],
                                dtype: Any) -> None:
    seed = 3 * n + 10 * len(shape)  # a different key per case
    ours, theirs = _both(lambda lib: lib.random.orthogonal(lib.random.key(seed), n, shape,
                                                           dtype, m))
    _close(ours, theirs)
    q = np.asarray(ours).astype(np.complex128)
    cols = n if m is None else m
    small = min(n, cols)
    gram = np.conj(np.swapaxes(q, -1, -2)) @ q if n >= cols else q @ np.conj(
        np.swapaxes(q, -1, -2))
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-5)


def test_orthogonal_float64_and_types(x64: None) -> None:
    ours, theirs = _both(lambda lib: lib.random.orthogonal(lib.random.key(2), 4))
    _close(ours, theirs)
    assert str(spec.typeof(ours)) == str(jax.typeof(theirs))
