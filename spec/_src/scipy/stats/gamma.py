"""``jax.scipy.stats.gamma``: the gamma distribution of shape a."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammainc, gammaincc, gammaln, xlogy
from spec._src.scipy.stats._common import const, exp_of, log_of, promote


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = lax_e.ge(x, loc)
    one = const(x, 1)
    y = jnp.where(ok, lax_e.div(lax_e.sub(x, loc), scale), one)
    log_linear = lax_e.sub(xlogy(lax_e.sub(a, one), y), y)
    shape_terms = lax_e.add(gammaln(a), lax_e.log(scale))
    return jnp.where(ok, lax_e.sub(log_linear, shape_terms), -np.inf)


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    y = lax_e.clamp(const(x, 0), lax_e.div(lax_e.sub(x, loc), scale), const(x, np.inf))
    return gammainc(a, y)


logcdf = log_of("logcdf", cdf)


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = lax_e.div(lax_e.sub(x, loc), scale)
    return jnp.where(lax_e.lt(y, const(y, 0)), 1, gammaincc(a, y))


logsf = log_of("logsf", sf)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
