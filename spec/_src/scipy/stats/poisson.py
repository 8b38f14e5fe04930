"""``jax.scipy.stats.poisson``: the Poisson distribution (pmf, cdf and entropy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.util import check_arraylike
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaincc, gammaln, xlogy
from spec._src.scipy.stats._common import const, exp_of, promote, staged


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = lax_e.sub(k, loc)
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    off = jnp.logical_or(lax_e.lt(x, const(k, 0)), lax_e.ne(jnp.round(x), x))
    return jnp.where(off, -np.inf, log_probs)


pmf = exp_of("pmf", logpmf)


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    zero = const(k, 0)
    x = lax_e.sub(k, loc)
    return jnp.where(lax_e.lt(x, zero), zero, gammaincc(jnp.floor(1 + x), mu))


def _entropy_by_summation(mu: Any, terms: int, upper: Callable[[Any], Any]) -> Any:
    """-sum p log p over k < min(terms, upper(mu)) (the mass beyond is negligible)."""
    k = jnp.arange(terms, dtype=mu.dtype)[:, None]
    log_probs = logpmf(k, mu, 0)
    kept = k < upper(mu).astype(k.dtype)[None, :]
    return jnp.sum(jnp.where(kept, -jnp.exp(log_probs) * log_probs, 0.0), axis=0)


def _entropy_small_mu(mu: Any) -> Any:
    return _entropy_by_summation(mu, 35, lambda m: jnp_math.ceil(m + 20))


def _entropy_medium_mu(mu: Any) -> Any:
    return _entropy_by_summation(mu, 250,
                                 lambda m: jnp_math.ceil(m + 10 * jnp_math.sqrt(m) + 20))


def _entropy_large_mu(mu: Any) -> Any:
    # The asymptotic expansion, accurate to float precision from mu = 100.
    return 0.5 * jnp.log(2 * np.pi * np.e * mu) - 1.0 / (12 * mu)


@staged("entropy")
def entropy(mu: Any, loc: Any = 0) -> Any:
    """The Shannon entropy of Poisson(mu) (loc shifts the support, not the entropy)."""
    check_arraylike("poisson.entropy", mu, loc)
    mu, loc = _promote_dtypes_inexact(jnp.asarray(mu), jnp.asarray(loc))
    shape = jnp_shape.broadcast_shapes(mu.shape, loc.shape)
    flat = jnp_shape.ravel(mu)
    zero = jnp.zeros_like(flat)
    # Each branch gets a value inside its own range so that no branch makes a NaN.
    small = jnp.where((flat == 0) | (flat >= 10), 1, flat)
    medium = jnp.where((flat < 10) | (flat >= 100), 10, flat)
    large = jnp.where(flat < 100, 100, flat)
    result = jnp.where(flat == 0, zero,
                       jnp.where(flat < 10, _entropy_small_mu(small),
                                 jnp.where(flat < 100, _entropy_medium_mu(medium),
                                           _entropy_large_mu(large))))
    return jnp.broadcast_to(jnp_shape.reshape(result, mu.shape), shape)


__all__ = ["cdf", "entropy", "logpmf", "pmf"]
