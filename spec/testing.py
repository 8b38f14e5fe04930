"""Hypothesis strategies and checkers for property-testing typing rules.

Anyone can use these against their own implementation: draw dtypes, shapes
and arrays the way spec's own tests do, and check that a primitive's impl
produces exactly what its typing rule promises.

hypothesis is a test-time dependency; importing this module requires it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from spec import types as T
from spec.interpreter import Primitive, canonical_value
from spec.types import ArrayType

__all__ = [
    "array_types", "arrays", "broadcastable_shapes", "check_impl_matches_typing", "dtypes",
    "shapes", "values_of",
]

# 64-bit types only exist under x64; the default strategies avoid them.
X32_DTYPES: list[T.DType] = [
    T.bool_, T.int8, T.int16, T.int32, T.uint8, T.uint16, T.uint32, T.float16, T.bfloat16,
    T.float32, T.complex64]


def dtypes(include: Sequence[T.DType] | None = None) -> st.SearchStrategy[T.DType]:
    return st.sampled_from(list(include) if include is not None else X32_DTYPES)


def shapes(max_rank: int = 4, max_side: int = 5, min_rank: int = 0) -> st.SearchStrategy[T.Shape]:
    return st.lists(st.integers(0, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def broadcastable_shapes(max_rank: int = 4, max_side: int = 4
                         ) -> st.SearchStrategy[tuple[T.Shape, T.Shape]]:
    """Pairs of shapes that lax's elementwise rule accepts: equal rank with
    size-1 stretching, or one side rank 0."""

    @st.composite
    def pair(draw: Any) -> tuple[T.Shape, T.Shape]:
        base = draw(shapes(max_rank, max_side, min_rank=1))
        if draw(st.booleans()):
            return base, ()
        other = tuple(d if draw(st.booleans()) else 1 for d in base)
        return (base, other) if draw(st.booleans()) else (other, base)

    return pair()


def array_types(dtype_strategy: st.SearchStrategy[T.DType] | None = None,
                shape_strategy: st.SearchStrategy[T.Shape] | None = None
                ) -> st.SearchStrategy[ArrayType]:
    return st.builds(lambda s, d, w: ArrayType(s, d, w and d != T.bool_),
                     shapes() if shape_strategy is None else shape_strategy,
                     dtypes() if dtype_strategy is None else dtype_strategy, st.booleans())


def values_of(aval: ArrayType, seed: int) -> np.ndarray:
    """Deterministic values of a type, including edge values for floats."""
    rng = np.random.default_rng(seed)
    dt = aval.dtype
    if dt == T.bool_:
        return rng.integers(0, 2, aval.shape).astype(bool)
    if T.is_int(dt):
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -100), min(int(info.max), 100)
        return rng.integers(lo, hi + 1, aval.shape).astype(dt)
    real = rng.standard_normal(aval.shape) * 3
    if T.is_complex(dt):
        return (real + 1j * rng.standard_normal(aval.shape)).astype(dt)
    return real.astype(dt)


def arrays(aval_strategy: st.SearchStrategy[ArrayType] | None = None
           ) -> st.SearchStrategy[np.ndarray]:
    return st.builds(values_of, array_types() if aval_strategy is None else aval_strategy,
                     st.integers(0, 2**31 - 1))


def check_impl_matches_typing(prim: Primitive, *operands: Any, **params: Any) -> list[ArrayType]:
    """Run typing and impl on concrete operands; raise AssertionError unless
    every output has exactly the shape and dtype the typing rule gives."""
    values, avals = zip(*(canonical_value(x) for x in operands)) if operands else ((), ())
    out_types = list(prim.typing(*avals, **params))
    outs = prim.impl(*values, **params)
    assert len(outs) == len(out_types), f"{prim}: {len(outs)} outputs, typed {len(out_types)}"
    for out, ty in zip(outs, out_types):
        arr = np.asarray(out)
        assert arr.shape == ty.shape and arr.dtype == ty.dtype, (
            f"{prim}: impl gave {arr.dtype}{list(arr.shape)}, typing says {ty}")
    return out_types
