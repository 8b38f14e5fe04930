"""``jax.scipy.stats.norm``: the normal distribution N(loc, scale^2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy import special
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    scale_sq = lax_e.square(scale)
    log_normalizer = lax_e.log(lax_e.mul(const(x, 2 * np.pi), scale_sq))
    quadratic = lax_e.div(lax_e.square(lax_e.sub(x, loc)), scale_sq)
    return lax_e.div(lax_e.add(log_normalizer, quadratic), const(x, -2))


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr(lax_e.div(lax_e.sub(x, loc), scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax_e.div(lax_e.sub(x, loc), scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.asarray(special.ndtri(q) * scale + loc, float)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return -ppf(q, -loc, scale)


__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
