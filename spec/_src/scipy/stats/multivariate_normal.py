"""``jax.scipy.stats.multivariate_normal``: the normal distribution N(mean, cov) on the last
axis (cov a matrix, or a scalar times the identity)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.lax import linalg as lax_linalg
from spec._src.numpy.linalg import einsum
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.vectorize import vectorize
from spec._src.scipy import numpy_names as jnp


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = _promote_dtypes_inexact(x, mean, cov)
    if not mean.shape:
        return (-1 / 2 * jnp.square(x - mean) / cov
                - 1 / 2 * (jnp.log(2 * np.pi) + jnp.log(cov)))
    n = mean.shape[-1]
    if not np.shape(cov):
        y = x - mean
        return (-1 / 2 * einsum("...i,...i->...", y, y) / cov
                - n / 2 * (jnp.log(2 * np.pi) + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    # With cov = L L^T, the quadratic form is |L^{-1} (x - mean)|^2.
    chol = lax_linalg.cholesky(cov)
    whiten = vectorize(functools.partial(lax_linalg.triangular_solve, lower=True,
                                         transpose_a=True), signature="(n,n),(n)->(n)")
    y = whiten(chol, x - mean)
    return (-1 / 2 * einsum("...i,...i->...", y, y) - n / 2 * jnp.log(2 * np.pi)
            - jnp.log(chol.diagonal(axis1=-1, axis2=-2)).sum(-1))


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    return lax_e.exp(logpdf(x, mean, cov))


__all__ = ["logpdf", "pdf"]
