"""``jax.scipy.stats.chi2``: the chi-squared distribution with df degrees of freedom."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammainc, gammaincc, xlogy
from spec._src.scipy.stats._common import const, exp_of, log_of, promote, standardize


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    one, two = const(x, 1), const(x, 2)
    y = standardize(x, loc, scale)
    half_df = lax_e.div(df, two)
    kernel = lax_e.sub(xlogy(lax_e.sub(half_df, one), y), lax_e.div(y, two))
    log_normalizer = lax_e.neg(lax_e.add(lax_e.lgamma(half_df),
                                         lax_e.div(lax_e.mul(lax_e.log(two), df), two)))
    log_probs = lax_e.add(lax_e.sub(log_normalizer, lax_e.log(scale)), kernel)
    return jnp.where(lax_e.lt(x, loc), -np.inf, log_probs)


def _half_df_and_point(name: str, x: Any, df: Any, loc: Any, scale: Any) -> tuple[Any, Any]:
    """(df / 2, (x - loc) / (2 scale) clamped to [0, inf]): the incomplete gamma's arguments."""
    x, df, loc, scale = promote(name, x, df, loc, scale)
    two = const(scale, 2)
    half_df = lax_e.div(df, two)
    point = lax_e.clamp(const(x, 0), lax_e.div(lax_e.sub(x, loc), lax_e.mul(scale, two)),
                        const(x, np.inf))
    return half_df, point


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gammainc(*_half_df_and_point("chi2.cdf", x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return gammaincc(*_half_df_and_point("chi2.sf", x, df, loc, scale))


pdf = exp_of("pdf", logpdf)
logcdf = log_of("logcdf", cdf)
logsf = log_of("logsf", sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
