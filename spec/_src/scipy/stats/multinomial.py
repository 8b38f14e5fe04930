"""``jax.scipy.stats.multinomial``: counts x (last axis) of n draws with probabilities p."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.numpy.math import _promote_dtypes_inexact, _promote_dtypes_numeric, equal
from spec._src.numpy.util import check_arraylike
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaln, xlogy
from spec._src.scipy.stats._common import exp_of


def logpmf(x: Any, n: Any, p: Any) -> Any:
    check_arraylike("multinomial.logpmf", x, n, p)
    (p,) = _promote_dtypes_inexact(p)
    x, n = _promote_dtypes_numeric(x, n)
    if not T.is_int(x.dtype):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype}")
    in_support = equal(jnp.sum(x, axis=-1, dtype=x.dtype), n)
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(in_support, log_probs, -np.inf)


pmf = exp_of("pmf", logpmf)

__all__ = ["logpmf", "pmf"]
