"""``jax.scipy.stats.vonmises``: the von Mises distribution on the circle, concentration kappa."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.lax import special_functions as lax_sf
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import const, exp_of, promote


def logpdf(x: Any, kappa: Any) -> Any:
    x, kappa = promote("vonmises.logpdf", x, kappa)
    concentrated = lax_e.ge(kappa, const(kappa, 0))
    # exp(kappa cos x) / (2 pi I0(kappa)), with I0 scaled by exp(-kappa) to stay finite.
    log_pdf = (kappa * (jnp.cos(x) - lax_e.sign(kappa)) - float(np.log(2 * np.pi))
               - jnp.log(lax_sf.bessel_i0e(kappa)))
    return jnp.where(concentrated, log_pdf, np.nan)


pdf = exp_of("pdf", logpdf)

__all__ = ["logpdf", "pdf"]
