"""``jax.scipy.stats.binom``: the binomial distribution of n trials with success probability p."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.numpy.math import logical_and
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaln, xlog1py, xlogy
from spec._src.scipy.stats._common import const, exp_of, promote


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = lax_e.sub(k, loc)
    zero = const(y, 0)
    comb_term = lax_e.sub(gammaln(n + 1), lax_e.add(gammaln(y + 1), gammaln(n - y + 1)))
    log_linear_term = lax_e.add(xlogy(y, p), xlog1py(lax_e.sub(n, y), lax_e.neg(p)))
    log_probs = lax_e.add(comb_term, log_linear_term)
    # 0 successes of 0 trials, and a certain outcome, have probability exactly 1.
    certain = jnp.logical_or(logical_and(lax_e.eq(y, zero), lax_e.eq(n, zero)),
                             lax_e.eq(log_linear_term, zero))
    log_probs = jnp.where(certain, 0.0, log_probs)
    return jnp.where(lax_e.ge(k, loc) & lax_e.lt(k, loc + n + 1), log_probs, -np.inf)


pmf = exp_of("pmf", logpmf)

__all__ = ["logpmf", "pmf"]
