"""``jax.scipy.stats.cauchy``: the Cauchy distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import const, exp_of, log_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    scaled = lax_e.div(lax_e.sub(x, loc), scale)
    normalize = lax_e.log(lax_e.mul(const(x, np.pi), scale))
    return lax_e.neg(lax_e.add(normalize, lax_e.log1p(lax_e.mul(scaled, scaled))))


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    scaled = lax_e.div(lax_e.sub(x, loc), scale)
    return lax_e.add(const(x, 0.5), lax_e.mul(lax_e.div(const(x, 1.0), const(x, np.pi)),
                                               jnp.arctan(scaled)))


logcdf = log_of("logcdf", cdf)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    one = const(q, 1)
    upper = q > 0.5
    arg = lax_e.mul(const(q, np.pi), jnp.where(upper, lax_e.sub(one, q), lax_e.abs(q)))
    unscaled = jnp.where(q == 0.5, const(q, 0),
                         lax_e.div(jnp.where(upper, one, -one), lax_e.tan(arg)))
    return jnp.where((q < 0) | (q > 1), np.nan, lax_e.add(lax_e.mul(unscaled, scale), loc))


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return lax_e.neg(ppf(q, lax_e.neg(loc), scale))


__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
