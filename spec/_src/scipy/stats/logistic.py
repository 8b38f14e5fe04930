"""``jax.scipy.stats.logistic``: the logistic distribution."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import expit, logit
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    x = lax_e.div(lax_e.sub(x, loc), scale)
    two = const(x, 2)
    half_x = lax_e.div(x, two)
    return lax_e.sub(lax_e.mul(lax_e.neg(two), jnp.logaddexp(half_x, lax_e.neg(half_x))),
                     lax_e.log(scale))


pdf = exp_of("pdf", logpdf)


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return lax_e.add(lax_e.mul(logit(x), scale), loc)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return expit(lax_e.neg(lax_e.div(lax_e.sub(x, loc), scale)))


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return lax_e.add(lax_e.mul(lax_e.neg(logit(x)), scale), loc)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return expit(lax_e.div(lax_e.sub(x, loc), scale))


__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]
