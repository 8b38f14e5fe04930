"""The dot-product test for the transposes of the hijax primitives: for a
linear map L through a user primitive, <ct, L t> equals <L^T ct, t>.

- "hijax": a primitive linear in its input, transposed by its own
  ``transpose`` rule (``linear_transpose``);
- "hijax_linearized": the tangent map of a primitive's reverse-mode rules,
  transposed to its ``vjp_bwd`` (``vjp`` of a linear use);
- "hi_transpose", "hi_select_n": the reordering of a hi value's mapped axes
  and the per-example choice between hi values, on a pair type whose
  tangent type is a pair again (so the tangent map keeps the hi
  primitives), under ``vjp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.lax import hi_axes as HA
from spec.experimental.hijax import VJPHiPrimitive
from tests.hijax.pair_type import Front, PairTy, get, make_pair
from tests.autodiff.test_transpose_rules import dot_product_sides


class ScaleRows(VJPHiPrimitive):
    """x * w[:, None] for a static weight vector: linear in x."""

    def __init__(self, x_aval: Any, w: tuple[float, ...]) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = x_aval
        self.params = dict(w=w)
        super().__init__()

    def _weights(self) -> Any:
        return snp.asarray(np.asarray(self.w, np.float32))[:, None]

    def expand(self, x: Any) -> Any:
        return x * self._weights()

    def transpose(self, out_ct: Any, x_acc: Any) -> None:
        x_acc.accum(out_ct * self._weights())

    def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
        return self(x), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return (g * self._weights(),)


def _case(draw: Any) -> tuple[Any, Any, Any]:
    rows = draw(st.integers(1, 4))
    cols = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 100)))
    w = tuple(float(v) for v in rng.standard_normal(rows))
    x = snp.asarray(rng.standard_normal((rows, cols)).astype(np.float32))
    return w, x, rng


@pytest.mark.parametrize("name", ["hijax", "hijax_linearized"])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_dot_product(name: str, data: Any) -> None:
    w, x, _ = _case(data.draw)

    def f(t: Any) -> Any:
        return 2.0 * ScaleRows(spec.typeof(t), w)(t)

    mode = "lt" if name == "hijax" else "vjp"
    lhs, rhs = dot_product_sides(f, (x,), mode)
    assert lhs == pytest.approx(rhs, rel=2e-4, abs=2e-4)


def test_each_case_exercises_its_primitive() -> None:
    """The transposed equation is the one named: the user primitive itself
    under linear_transpose, its linearized map under vjp."""
    x = snp.ones((2, 3))

    def f(t: Any) -> Any:
        return ScaleRows(spec.typeof(t), (1.0, 2.0))(t)

    assert "= ScaleRows[w=(1.0, 2.0)]" in str(spec.make_jaxpr(f)(x))
    _, f_vjp = spec.vjp(f, x)
    linear = f_vjp._backward.jaxpr  # the linear map that vjp transposes
    assert "= ScaleRows.linearized[nz_in_flat=(True,) nz_out_flat=(True,)]" in str(linear)


@pytest.mark.parametrize("name", ["hi_transpose", "hi_select_n"])
def test_dot_product_of_the_mapped_axis_primitives(name: str) -> None:
    rng = np.random.default_rng(1)
    a = snp.asarray(rng.standard_normal((3, 2, 4)).astype(np.float32))
    b = snp.asarray(rng.standard_normal((3, 2)).astype(np.float32))
    elem = PairTy(spec.typeof(a).update(shape=(4,)), spec.typeof(b).update(shape=()))
    which = snp.asarray(np.array([1, 0, 1], np.int32))

    def f(a: Any, b: Any) -> Any:
        p = make_pair(a, b)
        if name == "hi_transpose":
            q = HA.reorder(p, elem, [(2, Front()), (3, Front())], (1, 0))
        else:
            q = HA.select(which, [p, make_pair(a * 2, b * 3)], PairTy(*(
                t.update(shape=t.shape[1:]) for t in (spec.typeof(a), spec.typeof(b)))),
                (3, Front()))
        return get(q, 0), get(q, 1)

    linear = spec.vjp(f, a, b)[1]._backward.jaxpr
    assert f"= {name}[" in str(linear)
    lhs, rhs = dot_product_sides(f, (a, b), "vjp")
    assert lhs == pytest.approx(rhs, rel=2e-4, abs=2e-4)
