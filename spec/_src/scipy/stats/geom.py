"""``jax.scipy.stats.geom``: the geometric distribution (trials up to the first success)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import xlog1py
from spec._src.scipy.stats._common import const, exp_of, promote


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = lax_e.sub(k, loc)
    log_probs = xlog1py(lax_e.sub(x, const(k, 1)), -p) + lax_e.log(p)
    return jnp.where(lax_e.le(x, const(k, 0)), -np.inf, log_probs)


pmf = exp_of("pmf", logpmf)

__all__ = ["logpmf", "pmf"]
