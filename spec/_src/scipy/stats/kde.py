"""``jax.scipy.stats.gaussian_kde``: a Gaussian kernel density estimate, a pytree.

A dataset of n points in d dimensions (``(d, n)``; a 1-D one is ``(1, n)``),
weights normalised to sum 1 (equal without ``weights``), the effective count
``neff = 1 / sum(w^2)`` and a bandwidth factor (Scott's ``neff^(-1/(d+4))``,
Silverman's ``(neff (d+2) / 4)^(-1/(d+4))``, a scalar, or a callable of the
estimator) scaling the weighted data covariance (``cov`` with
``aweights``): the kernel covariance is ``cov * factor^2``.

The density at x is ``sum_i w_i N(x; x_i, covariance)``, computed in
whitened coordinates (the Cholesky factor of the inverse covariance);
``logpdf`` sums in log space (``logsumexp``). ``integrate_gaussian``,
``integrate_kde`` and ``integrate_box_1d`` integrate in closed form;
``resample(key, shape)`` picks data points by weight (``random.choice``)
and adds kernel noise (``random.multivariate_normal``), as JAX does, so the
same key gives JAX's samples. ``integrate_box`` and ``set_bandwidth`` raise
NotImplementedError, as in JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.numpy import creation
from spec._src.numpy import linalg as jlinalg
from spec._src.numpy import math as jm
from spec._src.numpy import reductions as jr
from spec._src.numpy import shape as js
from spec._src.numpy.indexing import diag
from spec._src.numpy.logic import isscalar
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.statistics import cov
from spec._src.random import keys as rkeys
from spec._src.random import samplers
from spec._src.scipy import linalg
from spec._src.scipy.special import logsumexp, ndtr


def _dtype(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


@tree_util.register_pytree_node_class
class gaussian_kde:  # noqa: N801  (SciPy's name)
    """A Gaussian kernel density estimate of ``dataset`` (see the module
    docstring)."""

    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None) -> None:
        data = js.atleast_2d(creation.asarray(dataset))
        if T.is_complex(_dtype(data)):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not data.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = data.shape
        if weights is not None:
            data, w = _promote_dtypes_inexact(data, creation.asarray(weights))
            w = js.atleast_1d(w)
            w = w / jr.sum(w)
            if w.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if w.shape[0] != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (data,) = _promote_dtypes_inexact(data)
            w = creation.full(n, 1.0 / n, dtype=_dtype(data))
        self._set("dataset", data)
        self._set("weights", w)
        neff = 1 / jr.sum(w ** 2)
        self._set("neff", neff)
        named = bw_method if isinstance(bw_method, str) else None
        if bw_method is None or named == "scott":
            factor = jm.power(neff, -1.0 / (d + 4))
        elif named == "silverman":
            factor = jm.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        data_cov = js.atleast_2d(cov(data, rowvar=True, bias=False, aweights=w))
        self._set("covariance", data_cov * factor ** 2)
        self._set("inv_cov", jlinalg.linalg.inv(data_cov) / factor ** 2)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux: Any, children: Any) -> gaussian_kde:
        kde = cls.__new__(cls)
        for name, value in zip(cls.__slots__, children):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        return int(self.dataset.shape[0])

    @property
    def n(self) -> int:
        return int(self.dataset.shape[1])

    def evaluate(self, points: Any) -> Any:
        """The density at ``points`` (``(d, m)``, or m points in 1-D)."""
        pts = self._reshape_points(points)
        return _kernel_eval(False, self.dataset.T, self.weights[:, None], pts.T,
                            self.inv_cov)[:, 0]

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        pts = self._reshape_points(x)
        return _kernel_eval(True, self.dataset.T, self.weights[:, None], pts.T,
                            self.inv_cov)[:, 0]

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """The integral of the density times ``N(mean, cov)``."""
        mean = js.atleast_1d(js.squeeze(creation.asarray(mean)))
        cov = js.atleast_2d(creation.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (jm.sqrt(2 * np.pi) ** self.d * jr.prod(diag(chol[0])))
        return _kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The probability mass between ``low`` and ``high`` (1-D only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        return _box_1d(self, low, high)

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """The integral of the product of two densities."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (jm.sqrt(2 * np.pi) ** self.d * jr.prod(diag(chol[0])))
        small, large = (self, other) if self.n < other.n else (other, self)
        result = vmap(lambda m: _kernel_convolve(chol, norm, large.dataset, large.weights, m),
                      in_axes=1)(small.dataset)
        return jr.sum(result * small.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
        """``(d, *shape)`` draws from the density."""
        return _resample(self, key, tuple(shape))

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method: Any = None) -> Any:
        raise NotImplementedError(
            "dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points: Any) -> Any:
        pts = creation.asarray(points)
        if T.is_complex(_dtype(pts)):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        pts = js.atleast_2d(pts)
        d, m = pts.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return js.reshape(pts, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return pts


def _box_1d_fn(kde: gaussian_kde, low: Any, high: Any) -> Any:
    sigma = js.squeeze(jm.sqrt(kde.covariance))
    lo = js.squeeze((low - kde.dataset) / sigma)
    hi = js.squeeze((high - kde.dataset) / sigma)
    return jr.sum(kde.weights * (ndtr(hi) - ndtr(lo)))


_box_1d = jit(_box_1d_fn)


def _resample_fn(kde: gaussian_kde, key: Any, shape: tuple[int, ...]) -> Any:
    ind_key, eps_key = rkeys.split(key)
    ind = samplers.choice(ind_key, kde.n, shape=shape, p=kde.weights)
    eps = samplers.multivariate_normal(
        eps_key, creation.zeros(kde.d, _dtype(kde.covariance)), kde.covariance, shape=shape,
        dtype=_dtype(kde.dataset)).T
    return kde.dataset[:, ind] + eps


_resample = jit(_resample_fn, static_argnames=("shape",))


def _kernel_convolve(chol: Any, norm: Any, target: Any, weights: Any, mean: Any) -> Any:
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * jr.sum(diff * alpha, axis=0)
    return norm * jr.sum(jm.exp(-arg) * weights)


def _kernel_eval_fn(in_log: bool, points: Any, values: Any, xi: Any, precision: Any) -> Any:
    points, values, xi, precision = _promote_dtypes_inexact(points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whitening = linalg.cholesky(precision, lower=True)
    points = jlinalg.dot(points, whitening)
    xi = jlinalg.dot(xi, whitening)
    log_norm = jr.sum(jm.log(diag(whitening))) - 0.5 * d * jm.log(2 * np.pi)

    def kernel(x_test: Any, x_train: Any, y_train: Any) -> Any:
        arg = log_norm - 0.5 * jr.sum(jm.square(x_train - x_test))
        return jm.log(y_train) + arg if in_log else y_train * jm.exp(arg)

    reduce: Callable[..., Any] = logsumexp if in_log else jr.sum

    def reduced(x: Any) -> Any:
        return reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values), axis=0)

    return vmap(reduced)(xi)


_kernel_eval = jit(_kernel_eval_fn, static_argnums=0)

__all__ = ["gaussian_kde"]
