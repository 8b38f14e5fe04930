"""Printed forms: ``str(jax.typeof(x))``, ``repr(x)``, ``str(x)`` and basic array attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.cases._util import DTYPES, data
from conformance.registry import case, register_case

SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 0), (2, 3), (1, 2, 2))


def _describe(jax: Any, x: Any) -> list[Any]:
    return [str(jax.typeof(x)), repr(x), str(x), x.shape, x.ndim, x.size, x.dtype]


def _by_dtype(dtype: str) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        return [_describe(jax, jnp.asarray(data(s, dtype, seed=3))) for s in SHAPES]

    return fn


for _dt in DTYPES:
    register_case(f"dtype_{_dt}", _by_dtype(_dt), module=__name__, tags=("printing",))
for _dt in ("int64", "uint64", "float64", "complex128"):
    register_case(f"dtype_{_dt}_x64", _by_dtype(_dt), module=__name__, tags=("printing",),
                  x64=True)


@case(tags=("printing", "weak_type"))
def weak_scalars(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    i = jnp.asarray(np.arange(3, dtype=np.int8))
    values = [
        jnp.asarray(2.0),
        jnp.asarray(2),
        jnp.asarray(True),
        jnp.asarray(1 + 2j),
        jnp.asarray(2.0) * 2,
        jnp.asarray(3) + 4,
        x * 2,
        2 * x,
        jnp.asarray(2.0) * x,
        i + 1,
        i * 2.5,
        jnp.float32(2),
        jnp.int8(3),
        jnp.asarray(np.float32(2.0)),
        jnp.asarray(2.0, dtype=jnp.float32),
        jnp.array(7),
        -jnp.asarray(2.5),
        jnp.sqrt(jnp.asarray(4.0)),
    ]
    return [_describe(jax, v) for v in values]


@case(tags=("printing", "weak_type"), x64=True)
def weak_scalars_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        _describe(jax, v)
        for v in (jnp.asarray(2.0), jnp.asarray(2), jnp.asarray(1j), jnp.asarray(2.0) * 3)
    ]


@case(tags=("printing",))
def python_values(jax: Any, jnp: Any, lax: Any) -> Any:
    # typeof of non-array inputs: Python scalars are weak, NumPy values are not.
    vals = [2.0, 3, True, 1j, np.float32(1.0), np.int16(2), np.arange(3), np.zeros((2, 2))]
    return [str(jax.typeof(v)) for v in vals]


@case(tags=("printing",))
def large_reprs(jax: Any, jnp: Any, lax: Any) -> Any:
    a = jnp.arange(30.0).reshape(5, 6)
    b = jnp.linspace(0, 1, 7)
    c = jnp.arange(2000)
    d = jnp.asarray(np.array([1e-8, 1.0, 1e8], np.float32))
    e = jnp.asarray(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32))
    f = jnp.asarray(np.array([[True, False], [False, True]]))
    return [repr(v) for v in (a, b, c, d, e, f)] + [str(v) for v in (a, c, e)]


@case(tags=("printing",))
def typeof_attributes(jax: Any, jnp: Any, lax: Any) -> Any:
    t = jax.typeof(jnp.zeros((2, 3), jnp.int16))
    return [t.shape, t.dtype, t.ndim, t.size, str(t), str(t.dtype)]
