"""``jax.scipy.stats.poisson``: the Poisson distribution (pmf and cdf)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaincc, gammaln, xlogy
from spec._src.scipy.stats._common import const, promote


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = lax_e.sub(k, loc)
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    off = jnp.logical_or(lax_e.lt(x, const(k, 0)), lax_e.ne(jnp.round(x), x))
    return jnp.where(off, -np.inf, log_probs)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    zero = const(k, 0)
    x = lax_e.sub(k, loc)
    return jnp.where(lax_e.lt(x, zero), zero, gammaincc(jnp.floor(1 + x), mu))


__all__ = ["cdf", "logpmf", "pmf"]
