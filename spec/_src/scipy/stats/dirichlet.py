"""``jax.scipy.stats.dirichlet``: the Dirichlet distribution on the simplex (axis 0 of x)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax import elementwise as lax_e
from spec._src.lax import shaping as lax_shaping
from spec._src.numpy import reductions as jnp_red
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.scipy import numpy_names as jnp
from spec._src.scipy.special import gammaln, xlogy
from spec._src.scipy.stats._common import const, exp_of


def _on_simplex(x: Any) -> Any:
    """Positive entries summing to 1 (within 1e-6) along axis 0."""
    total = jnp.sum(x, axis=0)
    return jnp_red.all(x > 0, axis=0) & (abs(total - 1) < 1e-6)


def logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = _promote_dtypes_inexact(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    one = const(x, 1)
    if x.shape[0] != alpha.shape[0]:
        # The last coordinate is implied: one minus the sum of the others.
        x = jnp_shape.concatenate([x, lax_e.sub(one, x.sum(0, keepdims=True))], axis=0)
    log_normalizer = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    if x.ndim > 1:
        alpha = lax_shaping.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    log_probs = lax_e.sub(jnp.sum(xlogy(lax_e.sub(alpha, one), x), axis=0), log_normalizer)
    return jnp.where(_on_simplex(x), log_probs, -np.inf)


pdf = exp_of("pdf", logpdf)

__all__ = ["logpdf", "pdf"]
