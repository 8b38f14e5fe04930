"""``jax.scipy.stats.mode``, ``rankdata`` and ``sem``: sample statistics, each staged
under ``jit`` with its options static, as JAX stages them."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.lax import control_flow as lax_cf
from spec._src.lax import reductions as lax_red
from spec._src.numpy import creation
from spec._src.numpy import reductions as jnp_red
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.indexing import nonzero
from spec._src.numpy.math import isnan, sqrt
from spec._src.numpy.reductions import canonicalize_axis
from spec._src.numpy.sets import unique
from spec._src.numpy.util import check_arraylike
from spec._src.scipy.stats._common import promote

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{name}` function.")


def _mode_of_column(x: Any) -> tuple[Any, Any]:
    if x.size == 0:
        return (creation.array(np.nan, dtype=T.default_float()),
                creation.array(0, dtype=T.default_float()))
    values, counts = unique(x, return_counts=True, size=x.size)
    return values[jnp_red.argmax(counts)], counts.max()


def _mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
          keepdims: bool = False) -> ModeResult:
    check_arraylike("mode", a)
    x = jnp_shape.atleast_1d(a)
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        axis = canonicalize_axis(axis, x.ndim)
    shape = x.shape
    if axis is None:
        out_shape: tuple[int, ...] = tuple(1 for _ in shape) if keepdims else ()
        axis, x = 0, x.ravel()
    elif keepdims:
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(shape))
    else:
        out_shape = tuple(s for i, s in enumerate(shape) if i != axis)
    x = jnp_shape.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    values, counts = vmap(_mode_of_column, in_axes=1)(x)
    return ModeResult(values.reshape(out_shape), counts.reshape(out_shape))


def _inverse_permutation(i: Any) -> Any:
    return creation.empty_like(i).at[i].set(creation.arange(i.size, dtype=i.dtype))


def _ranks(a: Any, method: str) -> Any:
    """The ranks of a 1-D array without NaNs (ties resolved by ``method``)."""
    out_dtype = T.default_float()
    ordered, sorter = lax_red.sort_key_val(a, creation.arange(a.size))
    inverse = _inverse_permutation(sorter)
    if method == "ordinal":
        return (inverse + 1).astype(out_dtype)
    starts = jnp_shape.concatenate([creation.array([True]), ordered[1:] != ordered[:-1]])
    dense = starts.cumsum()[inverse]
    if method == "dense":
        return dense.astype(out_dtype)
    # count[j]: how many values are below the j-th distinct value (then n at the end).
    count = nonzero(starts, size=ordered.size + 1,
                    fill_value=starts.size)[0].astype(out_dtype)
    if method == "max":
        return count[dense]
    if method == "min":
        return count[dense - 1] + 1
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def _rank_all(a: Any, method: str) -> Any:
    a = jnp_shape.ravel(a)
    return lax_cf.cond(jnp_red.any(isnan(a)),
                       lambda a: creation.full_like(a, np.nan, T.default_float()),
                       lambda a: _ranks(a, method), a)


def _rankdata(a: Any, method: str = "average", *, axis: int | None = None,
              nan_policy: str = "propagate") -> Any:
    check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is None:
        return _rank_all(a, method)
    # Each 1-D slice along ``axis`` ranked on its own (``apply_along_axis``).
    x = creation.asarray(a)
    axis = canonicalize_axis(axis, x.ndim)
    fun: Any = lambda v: _rank_all(v, method)  # noqa: E731
    for _ in range(x.ndim - 1):
        fun = vmap(fun)
    return jnp_shape.moveaxis(fun(jnp_shape.moveaxis(x, axis, -1)), -1, axis)


def _sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
         keepdims: bool = False) -> Any:
    (b,) = promote("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return (b.std(axis, ddof=ddof, keepdims=keepdims)
                / sqrt(size).astype(b.dtype))
    if nan_policy == "omit":
        count = (~isnan(b)).sum(axis, keepdims=keepdims)
        return (jnp_red.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
                / sqrt(count).astype(b.dtype))
    raise ValueError(f"{nan_policy} is not supported")


_mode.__name__ = _mode.__qualname__ = "mode"
_rankdata.__name__ = _rankdata.__qualname__ = "rankdata"
_sem.__name__ = _sem.__qualname__ = "sem"
mode: Any = jit(_mode, static_argnames=("axis", "nan_policy", "keepdims"))
rankdata: Any = jit(_rankdata, static_argnames=("method", "axis", "nan_policy"))
sem: Any = jit(_sem, static_argnames=("axis", "nan_policy", "keepdims"))

__all__ = ["ModeResult", "mode", "rankdata", "sem"]
