"""``jax.scipy.stats.beta``: the beta distribution on [loc, loc + scale]."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import betainc, betaln, xlog1py, xlogy
from spec._src.scipy.stats._common import const, exp_of, log_of, promote


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    one = const(x, 1)
    zero = const(a, 0)
    shape_term = lax_e.neg(betaln(a, b))
    y = lax_e.div(lax_e.sub(x, loc), scale)
    log_linear = lax_e.add(xlogy(lax_e.sub(a, one), y), xlog1py(lax_e.sub(b, one), lax_e.neg(y)))
    log_probs = lax_e.sub(lax_e.add(shape_term, log_linear), lax_e.log(scale))
    outside = jnp.logical_or(lax_e.gt(x, lax_e.add(loc, scale)), lax_e.lt(x, loc))
    result = jnp.where(outside, -np.inf, log_probs)
    bad = jnp.logical_or(jnp.logical_or(lax_e.le(a, zero), lax_e.le(b, zero)),
                         lax_e.le(scale, zero))
    return jnp.where(bad, np.nan, result)


pdf = exp_of("pdf", logpdf)


def _unit(x: Any, loc: Any, scale: Any) -> Any:
    return lax_e.clamp(const(x, 0), lax_e.div(lax_e.sub(x, loc), scale), const(x, 1))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, _unit(x, loc, scale))


logcdf = log_of("logcdf", cdf)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - _unit(x, loc, scale))


logsf = log_of("logsf", sf)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
