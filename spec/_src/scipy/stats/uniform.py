"""``jax.scipy.stats.uniform``: the uniform distribution on [loc, loc + scale]."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import exp_of, promote


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    z = lax_e.div(lax_e.sub(x, loc), scale)
    log_probs = lax_e.neg(lax_e.log(scale))
    return jnp.select([(z < 0) | (z > 1), (z >= 0) & (z <= 1)], [-np.inf, log_probs], np.nan)


pdf = exp_of("pdf", logpdf)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    return jnp.clip(lax_e.div(lax_e.sub(x, loc), scale), 0, 1)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan,
                     lax_e.add(loc, lax_e.mul(scale, q)))


__all__ = ["cdf", "logpdf", "pdf", "ppf"]
