"""``jax.scipy.stats.betabinom``: the beta-binomial distribution (n trials, Beta(a, b) success
probability)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.numpy.math import logical_and
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import betaln
from spec._src.scipy.stats._common import const, exp_of, promote, staged


@staged("logpmf")
def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = lax_e.sub(lax_e.floor(k), loc)
    one, zero = const(y, 1), const(y, 0)
    log_comb = lax_e.neg(lax_e.add(lax_e.log1p(n),
                                   betaln(lax_e.add(lax_e.sub(n, y), one), lax_e.add(y, one))))
    beta_terms = lax_e.sub(betaln(lax_e.add(y, a), lax_e.add(lax_e.sub(n, y), b)), betaln(a, b))
    log_probs = lax_e.add(log_comb, beta_terms)
    log_probs = jnp.where(logical_and(lax_e.eq(y, zero), lax_e.eq(n, zero)), 0.0, log_probs)
    outside = jnp.logical_or(jnp.logical_or(lax_e.lt(y, lax_e.neg(loc)), lax_e.gt(y, n)),
                             lax_e.le(lax_e.add(y, a), zero))
    log_probs = jnp.where(outside, -np.inf, log_probs)
    bad_params = jnp.logical_or(jnp.logical_or(lax_e.lt(n, zero), lax_e.le(a, zero)),
                                lax_e.le(b, zero))
    return jnp.where(bad_params, np.nan, log_probs)


pmf = exp_of("pmf", logpmf)

__all__ = ["logpmf", "pmf"]
