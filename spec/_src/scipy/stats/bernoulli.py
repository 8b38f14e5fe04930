"""``jax.scipy.stats.bernoulli``: the Bernoulli distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import xlog1py, xlogy
from spec._src.scipy.stats._common import const, exp_of, promote


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    one = const(k, 1)
    x = lax_e.sub(k, loc)
    log_probs = xlogy(x, p) + xlog1py(lax_e.sub(one, x), -p)
    return jnp.where(jnp.logical_or(lax_e.lt(x, const(k, 0)), lax_e.gt(x, one)), -np.inf,
                     log_probs)


pmf = exp_of("pmf", logpmf)


def cdf(k: Any, p: Any) -> Any:
    k, p = promote("bernoulli.cdf", k, p)
    zero, one = const(k, 0), const(k, 1)
    conds = [jnp.isnan(k) | jnp.isnan(p) | (p < zero) | (p > one), lax_e.lt(k, zero),
             (lax_e.ge(k, zero) & lax_e.lt(k, one)), lax_e.ge(k, one)]
    return jnp.select(conds, [np.nan, zero, one - p, one])


def ppf(q: Any, p: Any) -> Any:
    q, p = promote("bernoulli.ppf", q, p)
    zero, one = const(q, 0), const(q, 1)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return jnp.where(bad, np.nan, jnp.where(lax_e.le(q, one - p), zero, one))


__all__ = ["cdf", "logpmf", "pmf", "ppf"]
