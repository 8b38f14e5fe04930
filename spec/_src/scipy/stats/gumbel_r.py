"""``jax.scipy.stats.gumbel_r``: the right-skewed Gumbel (maximum extreme value) distribution."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.nn.functions import log1mexp
from spec._src.scipy.special import xlogy
from spec._src.scipy.stats._common import const, exp_of, promote, standardize
from spec._src.scipy.stats._gumbel import or_nan, probability_open, scale_positive


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    ok = scale_positive(scale)
    z = standardize(x, loc, scale)
    log_pdf = lax_e.add(xlogy(-1, scale), lax_e.neg(lax_e.add(z, lax_e.exp(lax_e.neg(z)))))
    return or_nan(ok, log_pdf)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    ok = scale_positive(scale)
    z = standardize(x, loc, scale)
    return or_nan(ok, lax_e.neg(lax_e.exp(lax_e.neg(z))))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    ok = probability_open(p)
    return or_nan(ok, lax_e.sub(loc, lax_e.mul(scale, lax_e.log(xlogy(-1, p)))))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
    ok = scale_positive(scale)
    neg_z = standardize(loc, x, scale)
    probs = lax_e.sub(const(x, 1), lax_e.exp(lax_e.neg(lax_e.exp(neg_z))))
    return or_nan(ok, probs)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
    ok = scale_positive(scale)
    neg_z = standardize(loc, x, scale)
    return or_nan(ok, log1mexp(lax_e.exp(neg_z)))


pdf = exp_of("pdf", logpdf)
cdf = exp_of("cdf", logcdf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
