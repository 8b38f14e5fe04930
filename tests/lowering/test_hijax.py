"""A hijax primitive lowers through its ``expand``, as in JAX: the compiled
module computes spec's and JAX's values, and its text is JAX's."""

from __future__ import annotations

from typing import Any

import jax
import jax.experimental.hijax as jax_hijax
import jax.numpy as jnp
import numpy as np

import spec
import spec.experimental.hijax as spec_hijax
import spec.numpy as snp
from tests.lowering.xla_run import bits, canonical, spec_and_compiled


def _prim(hijax: Any, numpy: Any) -> Any:
    class ScaleShift(hijax.HiPrim):  # type: ignore[misc, name-defined]
        def __init__(self, a: Any) -> None:
            self.in_avals = (a, a)
            self.out_aval = a
            self.params = {}
            super().__init__()

        def expand(self, x: Any, y: Any) -> Any:
            return numpy.maximum(x * 3.0, numpy.abs(y))  # (no multiply-add to fuse)

    return ScaleShift


def test_hijax_lowers_its_expansion() -> None:
    x = np.linspace(-2, 2, 6, dtype=np.float32)
    y = x[::-1].copy()
    sp, jp = _prim(spec_hijax, snp), _prim(jax_hijax, jnp)

    def ours_fn(a: Any, b: Any) -> Any:
        return sp(spec.typeof(a))(a, b) + 1.0

    def theirs_fn(a: Any, b: Any) -> Any:
        return jp(jax.typeof(a))(a, b) + 1.0
    ours, compiled, text = spec_and_compiled(ours_fn, x, y)
    assert bits(ours[0]) == bits(compiled[0]) == bits(np.asarray(jax.jit(theirs_fn)(x, y)))
    theirs_text = jax.jit(theirs_fn).lower(x, y).as_text()
    assert canonical(text).count("stablehlo.abs") == canonical(theirs_text).count(
        "stablehlo.abs") == 1
