"""``jax.scipy.cluster.vq.vq``: the nearest code of a code book for each observation, by
Euclidean distance, as JAX stages it (a vmapped norm over the code book, an argmin, and a
vmapped pick of the winning distance)."""

from __future__ import annotations

import operator
from typing import Any

from spec._src.api.vmap import vmap
from spec._src.numpy.linalg_solve import norm
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.reductions import argmin
from spec._src.numpy.util import check_arraylike


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """``(code, dist)``: for each row of ``obs`` (M, N) the index of the closest row of
    ``code_book`` (K, N) and the distance to it; 1-D inputs are length-1 vectors.
    ``check_finite`` is accepted and ignored, as in JAX."""
    del check_finite
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs_arr, book = _promote_dtypes_inexact(obs, code_book)
    if obs_arr.ndim != book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs_arr.ndim == 1:
        obs_arr, book = obs_arr[..., None], book[..., None]
    if obs_arr.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = vmap(lambda ob: norm(ob[None] - book, axis=-1))(obs_arr)
    code = argmin(dist, axis=-1)
    return code, vmap(operator.getitem)(dist, code)


__all__ = ["vq"]
