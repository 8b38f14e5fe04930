"""``jax.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on [0, 2 pi], shape c."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, c: Any) -> Any:
    x, c = promote("wrapcauchy.logpdf", x, c)
    shape_ok = lax_e.gt(c, const(c, 0)) & lax_e.lt(c, const(c, 1))
    on_circle = lax_e.ge(x, const(x, 0)) & lax_e.le(x, const(x, np.pi * 2))
    log_pdf = (jnp.log(1 - c * c) - jnp.log(2 * np.pi)
               - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    return jnp.where(shape_ok, jnp.where(on_circle, log_pdf, -np.inf), np.nan)


pdf = exp_of("pdf", logpdf)

__all__ = ["logpdf", "pdf"]
