"""The dot-product test for the transposes of the hijax primitives: for a
linear map L through a user primitive, <ct, L t> equals <L^T ct, t>.

- "hijax": a primitive linear in its input, transposed by its own
  ``transpose`` rule (``linear_transpose``);
- "hijax_linearized": the tangent map of a primitive's reverse-mode rules,
  transposed to its ``vjp_bwd`` (``vjp`` of a linear use);
- "hi_transpose", "hi_select_n", "hi_broadcast", "hi_sum": the reordering
  of a hi value's mapped axes, the per-example choice between hi values,
  the broadcast along one more mapped axis and its transpose, the sum over
  one (by the type's vspace_add), on a pair type whose tangent type is a
  pair again (so the tangent map keeps the hi primitives), under ``vjp``.

The same primitives under vmap of vmap of grad (loops over both batches),
and grad through a vmap that batches a hi carry (finite differences).
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


def _elem(a: Any, b: Any, drop: int) -> Any:
    """The element type of the pair (a, b) without its ``drop`` leading axes."""
    ta, tb = spec.typeof(a), spec.typeof(b)
    return PairTy(ta.update(shape=ta.shape[drop:]), tb.update(shape=tb.shape[drop:]))


def _mapped_axes_program(name: str) -> Any:
    """A pair (a: f32[3,2,4], b: f32[3,2]) through one hi-axis primitive,
    read back as arrays."""
    which = np.array([1, 0, 1], np.int32)

    def f(a: Any, b: Any) -> Any:
        p = make_pair(a, b)
        if name == "hi_transpose":
            q = HA.reorder(p, _elem(a, b, 2), [(2, Front()), (3, Front())], (1, 0))
        elif name == "hi_select_n":
            q = HA.select(which, [p, make_pair(a * 2, b * 3)], _elem(a, b, 1), (3, Front()))
        elif name == "hi_broadcast":
            q = HA.broadcast(p, _elem(a, b, 0), (2, Front()))
        else:
            q = HA.mapped_sum(p, _elem(a, b, 1), (3, Front()), "primal")
        return get(q, 0), get(q, 1)
    return f


MAPPED_AXIS_PRIMITIVES = ["hi_transpose", "hi_select_n", "hi_broadcast", "hi_sum"]


@pytest.mark.parametrize("name", MAPPED_AXIS_PRIMITIVES)
def test_dot_product_of_the_mapped_axis_primitives(name: str) -> None:
    # (hi_broadcast transposes to hi_sum, the type's vspace_add over the
    # broadcast axis, and back)
    rng = np.random.default_rng(1)
    a = snp.asarray(rng.standard_normal((3, 2, 4)).astype(np.float32))
    b = snp.asarray(rng.standard_normal((3, 2)).astype(np.float32))
    f = _mapped_axes_program(name)
    linear = spec.vjp(f, a, b)[1]._backward.jaxpr
    assert f"= {name}[" in str(linear)
    lhs, rhs = dot_product_sides(f, (a, b), "vjp")
    assert lhs == pytest.approx(rhs, rel=2e-4, abs=2e-4)


@pytest.mark.parametrize("name", MAPPED_AXIS_PRIMITIVES)
def test_nested_vmap_of_the_mapped_axis_primitives_on_hi_tangents_is_a_loop(name: str) -> None:
    # vmap of vmap of grad: the primitives on the primal, tangent and
    # cotangent pairs, batched twice (two outer mapped axes), eagerly and
    # jitted, against the loop over both batches.
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 2, 3, 2, 4)).astype(np.float32)
    b = rng.standard_normal((2, 2, 3, 2)).astype(np.float32)
    f = _mapped_axes_program(name)

    def loss(a: Any, b: Any) -> Any:
        x, y = f(a, b)
        return snp.sum(snp.sin(x)) + snp.sum(y ** 2)

    grad = spec.grad(loss, argnums=(0, 1))
    twice = spec.vmap(spec.vmap(grad))
    assert "view=ct" in str(spec.make_jaxpr(twice)(a, b))
    loop = [[grad(a[i, j], b[i, j]) for j in range(2)] for i in range(2)]
    for run in (twice, spec.jit(twice)):
        ga, gb = run(a, b)
        for i in range(2):
            for j in range(2):
                np.testing.assert_allclose(np.asarray(ga)[i, j], np.asarray(loop[i][j][0]),
                                           rtol=1e-6)
                np.testing.assert_allclose(np.asarray(gb)[i, j], np.asarray(loop[i][j][1]),
                                           rtol=1e-6)


def test_vmap_of_vmap_of_a_cond_selecting_pairs_is_a_loop() -> None:
    # The inner vmap selects per example (hi_select_n), the outer batches
    # the selection: its selector batched too, or its cases made batched.
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 2, 4)).astype(np.float32)
    ps = rng.standard_normal((3, 2)) > 0

    def f(p: Any, a: Any) -> Any:
        return spec.lax.cond(p, lambda a: make_pair(a * 2, snp.sum(a)),
                             lambda a: make_pair(-a, snp.max(a)), a)

    for a_axes, args, a_i in (((0, 1), (ps, a), lambda i, j: a[j, i]),
                              ((None, None), (ps, a[0, 0]), lambda i, j: a[0, 0])):
        twice = spec.vmap(spec.vmap(f, in_axes=(0, a_axes[0]), out_axes=Front()),
                          in_axes=(1, a_axes[1]), out_axes=Front())
        for run in (twice, spec.jit(twice)):
            q = run(*args)
            for i in range(2):
                for j in range(3):
                    want = f(ps[j, i], a_i(i, j))
                    np.testing.assert_array_equal(np.asarray(q.a)[i, j], np.asarray(want.a))
                    np.testing.assert_array_equal(np.asarray(q.b)[i, j], np.asarray(want.b))


def test_grad_through_a_vmap_that_batches_a_hi_carry_is_the_finite_difference() -> None:
    # An unbatched pair carry that a vmapped scan batches is broadcast
    # (hi_broadcast); its cotangent is summed over the batch (hi_sum):
    # float64 central differences, eagerly and jitted.
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(3), rng.standard_normal(())
    steps = rng.standard_normal((4, 2, 3)) * 0.5

    def step(c: Any, r: Any) -> Any:
        return make_pair(get(c, 0) * snp.cos(r), get(c, 1) + snp.sum(get(c, 0) * r)), None

    def loss(a: Any, b: Any) -> Any:
        q = spec.vmap(lambda s: spec.lax.scan(step, make_pair(a, b), s)[0],
                      out_axes=Front())(steps)
        return snp.sum(snp.sin(get(q, 0))) + snp.sum(get(q, 1) ** 2)

    eps = 1e-6
    with spec.enable_x64(True):
        grad = spec.grad(loss, argnums=(0, 1))
        assert "hi_sum[" in str(spec.make_jaxpr(grad)(a, b))
        want_a = [(float(loss(a + eps * e, b)) - float(loss(a - eps * e, b))) / (2 * eps)
                  for e in np.eye(3)]
        want_b = (float(loss(a, b + eps)) - float(loss(a, b - eps))) / (2 * eps)
        for run in (grad, spec.jit(grad)):
            ga, gb = run(a, b)
            np.testing.assert_allclose(np.asarray(ga), want_a, rtol=1e-7)
            np.testing.assert_allclose(float(gb), want_b, rtol=1e-7)
