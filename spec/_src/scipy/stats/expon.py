"""``jax.scipy.stats.expon``: the exponential distribution from loc, mean scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.nn.functions import log1mexp
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import exp_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    log_scale = lax_e.log(scale)
    linear = lax_e.div(lax_e.sub(x, loc), scale)
    log_probs = lax_e.neg(lax_e.add(linear, log_scale))
    return jnp.where(lax_e.lt(x, loc), -np.inf, log_probs)


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    neg_scaled = lax_e.div(lax_e.sub(loc, x), scale)
    return jnp.where(lax_e.lt(x, loc), jnp.zeros_like(neg_scaled),
                     lax_e.neg(lax_e.expm1(neg_scaled)))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.logcdf", x, loc, scale)
    scaled = lax_e.div(lax_e.sub(x, loc), scale)
    below = lax_e.lt(x, loc)
    return jnp.where(below, -np.inf, log1mexp(jnp.where(below, 1, scaled)))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("expon.sf", x, loc, scale)
    neg_scaled = lax_e.div(lax_e.sub(loc, x), scale)
    return jnp.where(lax_e.lt(x, loc), jnp.zeros_like(neg_scaled), neg_scaled)


sf = exp_of("sf", logsf)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan,
                     lax_e.sub(loc, lax_e.mul(scale, lax_e.log1p(lax_e.neg(q)))))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
