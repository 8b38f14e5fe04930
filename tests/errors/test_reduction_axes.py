"""Bad axes of the lax reductions raise exactly JAX's exception classes
(not a subclass of both, as NumPy's AxisError is): ValueError for the
arithmetic reductions, IndexError for an out-of-range axis of a logical one."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import spec
from tests.support.pair import error_of

OPS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min",
       "reduce_and", "reduce_or", "reduce_xor"]


def _error(lib: Any, op: str, axes: tuple[int, ...]) -> type[BaseException]:
    dtype = np.bool_ if op in ("reduce_and", "reduce_or") else np.int32
    x = lib.numpy.ones((2, 3), dtype)
    return type(error_of(lambda: getattr(lib.lax, op)(x, axes)))


@pytest.mark.parametrize("axes", [(2,), (-1,), (0, 0)], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_bad_axes_raise_jax_class(op: str, axes: tuple[int, ...]) -> None:
    assert _error(spec, op, axes) is _error(jax, op, axes)
