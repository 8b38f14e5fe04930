"""jax.custom_derivatives.linear_call against real JAX run live in this process: values,
jaxprs (the transpose is the user's function, and its transpose the original), gradients,
linear_transpose, jit, and errors; plus the dot-product test of a call and its transpose."""

from __future__ import annotations

from typing import Any

import jax
import jax.custom_derivatives  # noqa: F401 (the module the programs reach as j.custom_derivatives)
import numpy as np

import spec
import spec.custom_derivatives
from tests.support.pair import both, error_of, same


def _lc(j: Any) -> Any:
    return j.custom_derivatives.linear_call


def _div_add(j: Any) -> Any:
    def f(r: Any, x: Any) -> Any:
        return x / r

    def t(r: Any, ct: Any) -> Any:
        return ct / r

    return lambda x, denom: x + _lc(j)(f, t, denom, x)


def _custom_id(j: Any) -> Any:
    """A call whose given transpose is deliberately not its true one (7 everywhere)."""
    def f(_: Any, x: Any) -> Any:
        return x

    def t(_: Any, ct: Any) -> Any:
        return 7.

    return lambda x: _lc(j)(f, t, (), x)


def test_values_jaxprs_and_gradients() -> None:
    def prog(j: Any, n: Any) -> Any:
        div_add, custom_id = _div_add(j), _custom_id(j)
        x = n.arange(1.0, 4.0)
        c = n.arange(3.0)

        def closes(x: Any) -> Any:  # a constant of the callee becomes its leading operand
            return _lc(j)(lambda r, x: {"a": x * c}, lambda r, ct: ct["a"] * c, (), x)

        def two_res(x: Any) -> Any:
            return _lc(j)(lambda r, x: x * r[0] + x * r[1], lambda r, ct: ct * (r[0] + r[1]),
                          (2., 5.), x)
        transposed = j.linear_transpose(lambda y: _lc(j)(
            lambda r, x: x / r, lambda r, ct: ct / r, 3.0, y), x)
        return (np.asarray(div_add(x, 2.0)).tolist(), str(j.make_jaxpr(div_add)(x, 2.0)),
                np.asarray(j.grad(lambda x: div_add(x, 2.0).sum())(x)).tolist(),
                float(custom_id(1.)), float(j.grad(custom_id)(1.)),
                str(j.make_jaxpr(j.grad(custom_id))(1.)),
                str(j.make_jaxpr(lambda x: transposed(x))(x)),
                np.asarray(transposed(x)[0]).tolist(),
                np.asarray(j.jit(div_add)(x, 2.0)).tolist(), str(j.make_jaxpr(closes)(x)),
                np.asarray(closes(x)["a"]).tolist(), float(j.jit(j.grad(two_res))(1.)),
                [float(v) for v in j.jvp(custom_id, (1.,), (2.,))])
    same(prog)


def test_errors() -> None:
    def batched(j: Any, n: Any) -> Any:
        return j.vmap(_div_add(j))(n.ones((2, 3)), n.ones(2))

    def wrong_transpose_tree(j: Any, n: Any) -> Any:
        return j.grad(lambda x: _lc(j)(lambda r, x: x / r, lambda r, ct: (ct, ct), 2., x))(1.)

    for prog in (batched, wrong_transpose_tree):
        ours, theirs = both(lambda j, n: error_of(lambda: prog(j, n)))
        assert type(ours) is type(theirs), (ours, theirs)
        assert str(ours) == str(theirs)


def test_dot_product_identity_of_a_call_and_its_transpose() -> None:
    """<A x, y> = <x, A^T y> for a matrix product given with its true transpose, in
    float64."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3))
    x, y = rng.standard_normal(3), rng.standard_normal(4)
    with spec.enable_x64(True):
        def apply(v: Any) -> Any:
            return spec.custom_derivatives.linear_call(
                lambda m, v: m @ v, lambda m, ct: m.T @ ct, spec.numpy.asarray(a), v)
        ax = np.asarray(apply(spec.numpy.asarray(x)))
        (aty,) = spec.linear_transpose(apply, spec.numpy.asarray(x))(spec.numpy.asarray(y))
        np.testing.assert_allclose(ax @ y, x @ np.asarray(aty), rtol=1e-12)
