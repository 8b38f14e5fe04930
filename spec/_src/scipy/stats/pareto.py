"""``jax.scipy.stats.pareto``: the Pareto distribution of shape b on [loc + scale, inf)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import const, exp_of, promote, standardize


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    one = const(x, 1)
    y = standardize(x, loc, scale)
    log_normalizer = lax_e.log(lax_e.div(scale, b))
    log_probs = lax_e.neg(lax_e.add(log_normalizer, lax_e.mul(lax_e.add(b, one), lax_e.log(y))))
    return jnp.where(lax_e.lt(y, one), -np.inf, log_probs)


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
    one = const(x, 1)
    y = standardize(x, loc, scale)
    probs = lax_e.sub(one, lax_e.pow(y, lax_e.neg(b)))
    return jnp.where(lax_e.lt(y, one), const(x, 0), probs)


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    log_probs = lax_e.log1p(lax_e.neg(lax_e.pow(y, lax_e.neg(b))))
    return jnp.where(lax_e.lt(y, const(x, 1)), -np.inf, log_probs)


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    zero, one = const(x, 0), const(x, 1)
    y = standardize(x, loc, scale)
    log_probs = lax_e.neg(lax_e.mul(b, lax_e.log(y)))
    return jnp.where(lax_e.lt(y, one), zero, log_probs)


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    one = const(q, 1)
    quantile = lax_e.add(loc, lax_e.mul(scale, lax_e.pow(lax_e.sub(one, q),
                                                         lax_e.neg(lax_e.div(one, b)))))
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, quantile)


pdf = exp_of("pdf", logpdf)
sf = exp_of("sf", logsf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
