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
from dataclasses import dataclass

from spec._src.lax import hi_axes as HA
from spec.experimental.hijax import HiType, MappingSpec, VJPHiPrimitive, register_hitype
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


@dataclass(frozen=True)
class Two:
    a: Any
    b: Any


@dataclass(frozen=True)
class TwoTy(HiType):
    """Two arrays mapped together along their leading axes; the tangent
    type is the pair of the tangent types."""
    a: Any
    b: Any

    def lo_ty(self) -> list[Any]:
        return [self.a, self.b]

    def lower_val(self, p: Any) -> list[Any]:
        return [p.a, p.b]

    def raise_val(self, a: Any, b: Any) -> Any:
        return Two(a, b)

    def to_tangent_aval(self) -> Any:
        return self

    def vspace_zero(self) -> Any:
        return two(snp.zeros(self.a.shape, self.a.dtype), snp.zeros(self.b.shape, self.b.dtype))

    def vspace_add(self, x: Any, y: Any) -> Any:
        return two(part(x, 0) + part(y, 0), part(x, 1) + part(y, 1))

    def inc_rank(self, size: int, spec_: Any) -> Any:
        return TwoTy(*(t.update(shape=(size, *t.shape)) for t in (self.a, self.b)))

    def dec_rank(self, size: int, spec_: Any) -> Any:
        return TwoTy(*(t.update(shape=t.shape[1:]) for t in (self.a, self.b)))


@dataclass(frozen=True)
class Front(MappingSpec):
    pass


register_hitype(Two, lambda p: TwoTy(spec.typeof(p.a), spec.typeof(p.b)))


class MakeTwo(VJPHiPrimitive):
    def __init__(self, a: Any, b: Any) -> None:
        self.in_avals = (a, b)
        self.out_aval = TwoTy(a, b)
        self.params = {}
        super().__init__()

    def expand(self, a: Any, b: Any) -> Any:
        return Two(a, b)

    def vjp_fwd(self, nzs_in: Any, a: Any, b: Any) -> Any:
        return self(a, b), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return (part(g, 0), part(g, 1))


class Part(VJPHiPrimitive):
    def __init__(self, p: Any, idx: int) -> None:
        self.in_avals = (p,)
        self.out_aval = (p.a, p.b)[idx]
        self.params = {"idx": idx}
        super().__init__()

    def expand(self, p: Any) -> Any:
        return (p.a, p.b)[self.idx]

    def vjp_fwd(self, nzs_in: Any, p: Any) -> Any:
        return self(p), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        ty = self.in_avals[0]
        other = snp.zeros((ty.b, ty.a)[self.idx].shape, np.float32)
        return (two(g, other) if self.idx == 0 else two(other, g),)


def two(a: Any, b: Any) -> Any:
    return MakeTwo(spec.typeof(a), spec.typeof(b))(a, b)


def part(p: Any, idx: int) -> Any:
    return Part(spec.typeof(p), idx)(p)


@pytest.mark.parametrize("name", ["hi_transpose", "hi_select_n"])
def test_dot_product_of_the_mapped_axis_primitives(name: str) -> None:
    rng = np.random.default_rng(1)
    a = snp.asarray(rng.standard_normal((3, 2, 4)).astype(np.float32))
    b = snp.asarray(rng.standard_normal((3, 2)).astype(np.float32))
    elem = TwoTy(spec.typeof(a).update(shape=(4,)), spec.typeof(b).update(shape=()))
    which = snp.asarray(np.array([1, 0, 1], np.int32))

    def f(a: Any, b: Any) -> Any:
        p = two(a, b)
        if name == "hi_transpose":
            q = HA.reorder(p, elem, [(2, Front()), (3, Front())], (1, 0))
        else:
            q = HA.select(which, [p, two(a * 2, b * 3)], TwoTy(*(
                t.update(shape=t.shape[1:]) for t in (spec.typeof(a), spec.typeof(b)))),
                (3, Front()))
        return part(q, 0), part(q, 1)

    linear = spec.vjp(f, a, b)[1]._backward.jaxpr
    assert f"= {name}[" in str(linear)
    lhs, rhs = dot_product_sides(f, (a, b), "vjp")
    assert lhs == pytest.approx(rhs, rel=2e-4, abs=2e-4)
