"""``jax.scipy.stats.gennorm``: the generalized normal distribution of shape beta."""

from __future__ import annotations

from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.lax import special as lax_special
from spec._src.scipy.stats._common import exp_of, promote


def logpdf(x: Any, beta: Any) -> Any:
    x, beta = promote("gennorm.logpdf", x, beta)
    return lax_e.log(0.5 * beta) - lax_e.lgamma(1 / beta) - lax_e.abs(x) ** beta


def cdf(x: Any, beta: Any) -> Any:
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + lax_e.sign(x) * lax_special.igamma(1 / beta, lax_e.abs(x) ** beta))


pdf = exp_of("pdf", logpdf)

__all__ = ["cdf", "logpdf", "pdf"]
