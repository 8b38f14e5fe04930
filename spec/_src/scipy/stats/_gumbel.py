"""What the two Gumbel distributions share: the checks of the scale and of the quantile's
probability, each made before the value it guards (the order JAX's jaxprs show)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.stats._common import const


def scale_positive(scale: Any) -> Any:
    return lax_e.gt(scale, const(scale, 0))


def probability_open(p: Any) -> Any:
    """0 < p < 1."""
    return lax_e.bitwise_and(lax_e.gt(p, const(p, 0)), lax_e.lt(p, const(p, 1)))


def or_nan(ok: Any, value: Any) -> Any:
    """``value`` where ``ok``, NaN elsewhere."""
    return jnp.where(ok, value, np.nan)
