"""``jax.scipy.stats.truncnorm``: the normal distribution truncated to standardised [a, b]."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.numpy import shape as jnp_shape
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import log_ndtr, logsumexp, ndtr
from spec._src.scipy.stats import norm
from spec._src.scipy.stats._common import exp_of, promote, staged, standardize


def _log_diff(x: Any, y: Any) -> Any:
    """log(exp(x) - exp(y)) as a signed logsumexp."""
    return logsumexp(jnp.array([x, y]), b=jnp.array([jnp.ones_like(x), -jnp.ones_like(y)]),
                     axis=0)


def _log_gauss_mass(a: Any, b: Any) -> Any:
    """log P(a < Z < b) for a standard normal Z, from the tail nearer the interval."""
    a, b = jnp_shape.broadcast_arrays(jnp.array(a), jnp.array(b))
    left, right = b <= 0, a > 0
    central = ~(left | right)
    a_tail = jnp.where(right, -b, a)
    b_tail = jnp.where(right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = jnp.log1p(-ndtr(a) - ndtr(-b))
    return jnp.where(central, mass_central, mass_tail)


@staged("logpdf")
def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    val = lax_e.sub(norm.logpdf(x, loc, scale), _log_gauss_mass(a, b))
    z = standardize(x, loc, scale)
    val = jnp.where((z < a) | (z > b), -np.inf, val)
    return jnp.where(a < b, val, np.nan)


@staged("logcdf")
def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = jnp_shape.broadcast_arrays(x, a, b)
    x = standardize(x, loc, scale)
    log_mass = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, x) - log_mass
    log_sf = _log_gauss_mass(x, b) - log_mass
    # Near 1 the cdf is more accurate as one minus the survival function.
    log_cdf = jnp.select([x >= b, x <= a, log_cdf > -0.1, x > a],
                         [0, -np.inf, jnp.log1p(-jnp.exp(log_sf)), log_cdf], np.nan)
    return jnp.where(a < b, log_cdf, np.nan)


@staged("logsf")
def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


pdf = exp_of("pdf", logpdf)
cdf = staged("cdf")(exp_of("cdf", logcdf))
sf = staged("sf")(exp_of("sf", logsf))

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
