"""``jax.scipy.stats.laplace``: the Laplace distribution."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    linear = lax_e.div(lax_e.abs(lax_e.sub(x, loc)), scale)
    return lax_e.neg(lax_e.add(linear, lax_e.log(lax_e.mul(const(x, 2), scale))))


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    diff = lax_e.div(lax_e.sub(x, loc), scale)
    half_exp = lax_e.mul(const(x, 0.5), lax_e.exp(lax_e.neg(lax_e.abs(diff))))
    return lax_e.select(diff < 0, half_exp, lax_e.sub(const(x, 1), half_exp))


__all__ = ["cdf", "logpdf", "pdf"]
