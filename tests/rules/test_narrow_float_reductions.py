"""Cumulative reductions, reductions, arg-reductions, sorts and windowed
max/min on the narrow floats (float8 variants, bfloat16, float16, float4),
against JAX run live: bit for bit. On the float8 types without infinities
the identity of max and min is the largest finite magnitude (as JAX's), not
+-inf, which would round to NaN there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

from spec import lax as slax

# The kinds XLA CPU compiles (not the float6 types): without infinities
# (float8_e4m3fn; the fnuz types, without -0 either; float4, without NaN)
# and with them (float8_e5m2 standing for the IEEE-like float8s).
# float8_e8m0fnu (no zero, no sign, no infinity: JAX's +-inf identities
# cast to its NaN) makes every max/min reduction NaN and every argmax/argmin 0.
NARROW = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz,
          ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16, np.float16,
          ml_dtypes.float8_e8m0fnu]

# 40 elements along the scanned axis: more than one of XLA's 16-element blocks.
# Signed zeros side by side: max prefers +0 and min -0, in either order.
_X = np.random.default_rng(7).normal(size=(2, 40)) * 2
_X[:, 20:24] = [[-0.0, 0.0, -0.0, -0.0], [0.0, -0.0, 0.0, 0.0]]


def _window(kind: str) -> Callable[[Any, Any], Any]:
    def run(lax: Any, x: Any) -> Any:
        info = ml_dtypes.finfo(x.dtype)  # type: ignore[no-untyped-call]
        init = np.asarray(info.min if kind == "max" else info.max, x.dtype)
        return lax.reduce_window(x, init, getattr(lax, kind), (1, 3), (1, 1), "SAME")
    return run


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "cummax": lambda lax, x: lax.cummax(x, 1),
    "cummin": lambda lax, x: lax.cummin(x, 1),
    "cummax_reverse": lambda lax, x: lax.cummax(x, 1, reverse=True),
    "cummin_reverse": lambda lax, x: lax.cummin(x, 1, reverse=True),
    "cumsum": lambda lax, x: lax.cumsum(x, 1),
    "cumprod": lambda lax, x: lax.cumprod(x[:, :12] / 2, 1),
    "cumlogsumexp": lambda lax, x: lax.cumlogsumexp(x, 1),
    "cumlogsumexp_reverse": lambda lax, x: lax.cumlogsumexp(x, 1, reverse=True),
    "reduce_max": lambda lax, x: lax.reduce_max(x, (1,)),
    "reduce_min": lambda lax, x: lax.reduce_min(x, (1,)),
    "argmax": lambda lax, x: lax.argmax(x, 1, np.int32),
    "argmin": lambda lax, x: lax.argmin(x, 1, np.int32),
    "sort": lambda lax, x: lax.sort(x, 1),
    "window_max": _window("max"),
    "window_min": _window("min"),
}


def _bits(a: Any) -> tuple[str, bytes]:
    arr = np.ascontiguousarray(np.asarray(a))
    return arr.dtype.name, arr.tobytes()


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_matches_jax_bit_for_bit(dtype: Any) -> None:
    x = _X.astype(dtype)
    jitted = jax.jit(lambda v: {name: op(jlax, v) for name, op in OPS.items()})(x)
    for name, op in OPS.items():
        assert _bits(op(slax, x)) == _bits(jitted[name]), name


def test_empty_max_min_start_from_jax_identity() -> None:
    """Over an empty axis max and min are their identity: the largest finite
    magnitude on float8_e4m3fn (its infinity would round to NaN)."""
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu):
        x = np.zeros((0, 3), dtype)
        for name in ("reduce_max", "reduce_min"):
            ours = getattr(slax, name)(x, (0,))
            assert _bits(ours) == _bits(jax.jit(getattr(jlax, name), static_argnums=1)(x, (0,)))
