"""``jax.scipy.stats.t``: Student's t distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    two = const(x, 2)
    scaled = lax_e.div(lax_e.sub(x, loc), scale)
    df_half = lax_e.div(df, two)
    df_plus_one_half = lax_e.add(df_half, const(x, 0.5))
    normalize_const = lax_e.mul(lax_e.mul(scale, scale), const(x, np.pi))
    normalize_tmp = lax_e.div(lax_e.log(lax_e.mul(normalize_const, df)), two)
    normalize = lax_e.sub(lax_e.add(lax_e.lgamma(df_half), normalize_tmp),
                          lax_e.lgamma(df_plus_one_half))
    quadratic = lax_e.div(lax_e.mul(scaled, scaled), df)
    return lax_e.neg(lax_e.add(normalize, lax_e.mul(df_plus_one_half, lax_e.log1p(quadratic))))


pdf = exp_of("pdf", logpdf)


__all__ = ["logpdf", "pdf"]
