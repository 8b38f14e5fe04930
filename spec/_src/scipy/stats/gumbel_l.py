"""``jax.scipy.stats.gumbel_l``: the left-skewed Gumbel (minimum extreme value) distribution."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.scipy.special import xlog1py, xlogy
from spec._src.scipy.stats._common import exp_of, promote, standardize
from spec._src.scipy.stats._gumbel import or_nan, probability_open, scale_positive


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    ok = scale_positive(scale)
    z = standardize(x, loc, scale)
    log_pdf = lax_e.add(xlogy(-1, scale), lax_e.sub(z, lax_e.exp(z)))
    return or_nan(ok, log_pdf)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
    ok = scale_positive(scale)
    z = standardize(x, loc, scale)
    log_cdf = lax_e.log(-lax_e.expm1(lax_e.neg(lax_e.exp(z))))
    return or_nan(ok, log_cdf)


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    ok = probability_open(p)
    quantile = lax_e.add(loc, lax_e.mul(scale, lax_e.log(xlog1py(-1, lax_e.neg(p)))))
    return or_nan(ok, quantile)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    ok = scale_positive(scale)
    z = standardize(x, loc, scale)
    return or_nan(ok, lax_e.neg(lax_e.exp(z)))


pdf = exp_of("pdf", logpdf)
cdf = exp_of("cdf", logcdf)
sf = exp_of("sf", logsf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
