"""``jax.scipy.stats.nbinom``: the negative binomial distribution (failures before the n-th
success)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaln, xlogy
from spec._src.scipy.stats._common import const, exp_of, promote


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    one = const(k, 1)
    y = lax_e.sub(k, loc)
    comb_term = lax_e.sub(lax_e.sub(gammaln(lax_e.add(y, n)), gammaln(n)),
                          gammaln(lax_e.add(y, one)))
    log_linear_term = lax_e.add(xlogy(n, p), xlogy(y, lax_e.sub(one, p)))
    log_probs = lax_e.add(comb_term, log_linear_term)
    return jnp.where(lax_e.lt(k, loc), -np.inf, log_probs)


pmf = exp_of("pmf", logpmf)

__all__ = ["logpmf", "pmf"]
