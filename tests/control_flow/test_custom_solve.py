"""lax.custom_linear_solve and lax.custom_root: values, jaxpr text, jvp, grad and vmap
against real JAX run live; the transpose by the dot-product test; derivatives against
finite differences in float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec.test_util import check_grads
from tests.lowering.xla_run import canonical, compile_and_run

SPEC = (spec, snp)
JAX = (jax, jnp)
Maker = Callable[[Any, Any], Callable[..., Any]]

A = np.array([[3.0, 1.0], [0.5, 2.0]])
B = np.array([1.0, 2.0])


def _close(a: Any, b: Any, rtol: float = 1e-12) -> None:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-12)


def _inv2(n: Any, a: Any, y: Any) -> Any:
    """``a^-1 y`` for a 2x2 ``a`` by the adjugate (no solver to differentiate)."""
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    return n.stack([y[0] * a[1, 1] - a[0, 1] * y[1], a[0, 0] * y[1] - a[1, 0] * y[0]]) / det


def solve_f(j: Any, n: Any) -> Callable[..., Any]:
    def f(a: Any, b: Any) -> Any:
        return j.lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: _inv2(n, a, y),
                                         lambda vm, y: _inv2(n, a.T, y))
    return f


def symmetric_f(j: Any, n: Any) -> Callable[..., Any]:
    def f(a: Any, b: Any) -> Any:
        s = a + a.T
        return j.lax.custom_linear_solve(lambda x: s @ x, b, lambda mv, y: _inv2(n, s, y),
                                         symmetric=True)
    return f


def jitted_f(j: Any, n: Any) -> Callable[..., Any]:
    """Solves that call a jitted function (shared sub-jaxprs print once, as JAX's)."""
    inner = j.jit(lambda a, y: _inv2(n, a, y))

    def f(a: Any, b: Any) -> Any:
        return j.lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: inner(a, y),
                                         lambda vm, y: inner(a.T, y))
    return f


def restart_f(j: Any, n: Any) -> Callable[..., Any]:
    """Solves that first apply the map (or its transpose) to a start value they close over:
    the transpose solve's operands put the matrix first, as the transposed map's own."""
    def f(a: Any, b: Any) -> Any:
        x0 = 0.5 * b

        def from_x0(inverse_of: Callable[[], Any]) -> Callable[..., Any]:
            def solve(apply: Callable[[Any], Any], y: Any) -> Any:
                r = y - apply(x0)  # before the solve reads the matrix
                return x0 + _inv2(n, inverse_of(), r)
            return solve
        return j.lax.custom_linear_solve(lambda x: n.dot(a, x), b, from_x0(lambda: a),
                                         from_x0(lambda: a.T))
    return f


def aux_f(j: Any, n: Any) -> Callable[..., Any]:
    def f(a: Any, b: Any) -> Any:
        return j.lax.custom_linear_solve(lambda x: a @ x, b,
                                         lambda mv, y: (_inv2(n, a, y), y.sum()),
                                         lambda vm, y: (_inv2(n, a.T, y), y.sum()),
                                         has_aux=True)
    return f


def newton(j: Any) -> Callable[..., Any]:
    def run(fn: Any, x0: Any) -> Any:
        return j.lax.fori_loop(0, 30, lambda _, x: x - fn(x) / (2.0 * x), x0)
    return run


def root_f(j: Any, n: Any) -> Callable[..., Any]:
    def f(c: Any) -> Any:
        return j.lax.custom_root(lambda x: x * x - c, n.ones_like(c), newton(j),
                                 lambda g, y: y / g(n.ones_like(c)))
    return f


SOLVES = [solve_f, symmetric_f, aux_f, jitted_f, restart_f]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("mk", SOLVES)
def test_solve_values_and_jaxpr_match_jax(mk: Maker) -> None:
    _close(mk(*SPEC)(A, B), mk(*JAX)(A, B))
    assert str(spec.make_jaxpr(mk(*SPEC))(A, B)) == str(jax.make_jaxpr(mk(*JAX))(A, B))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("mk", [solve_f, symmetric_f])
def test_solve_derivatives_match_jax(mk: Maker) -> None:
    tangents = (np.ones((2, 2)), np.array([0.5, -1.0]))
    _close(spec.jvp(mk(*SPEC), (A, B), tangents), jax.jvp(mk(*JAX), (A, B), tangents))

    def loss(m: Maker, j: Any) -> Callable[..., Any]:
        return lambda a, b: (m(*j)(a, b) ** 2).sum()
    _close(spec.grad(loss(mk, SPEC), argnums=(0, 1))(A, B),
           jax.grad(loss(mk, JAX), argnums=(0, 1))(A, B))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("mk", [solve_f, jitted_f, restart_f])
def test_solve_jaxpr_of_grad_matches_jax(mk: Maker) -> None:
    def g(j: Any, n: Any) -> Callable[..., Any]:
        return j.grad(lambda a, b: mk(j, n)(a, b).sum(), argnums=(0, 1))
    assert str(spec.make_jaxpr(g(*SPEC))(A, B)) == str(jax.make_jaxpr(g(*JAX))(A, B))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)])
def test_solve_vmap_matches_jax_and_a_loop(in_axes: tuple[Any, Any]) -> None:
    args = _batch_args(in_axes)
    got = spec.vmap(solve_f(*SPEC), in_axes=in_axes)(*args)
    _close(got, jax.vmap(solve_f(*JAX), in_axes=in_axes)(*args))
    loop = [solve_f(*SPEC)(*(x[k] if d == 0 else x for x, d in zip(args, in_axes)))
            for k in range(3)]
    _close(got, spec.numpy.stack(loop))


def _batch_args(in_axes: tuple[Any, Any]) -> tuple[Any, Any]:
    a_s = np.stack([A, A + 1.0, A.T])
    b_s = np.stack([B, 2 * B + 1.0, -B])
    return (a_s if in_axes[0] == 0 else A, b_s if in_axes[1] == 0 else B)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("mk", [solve_f, symmetric_f, aux_f, restart_f])
@pytest.mark.parametrize("in_axes", [(None, 0), (0, None)])
def test_solve_jaxpr_of_vmap_matches_jax(mk: Maker, in_axes: tuple[Any, Any]) -> None:
    args = _batch_args(in_axes)
    assert (str(spec.make_jaxpr(spec.vmap(mk(*SPEC), in_axes=in_axes))(*args))
            == str(jax.make_jaxpr(jax.vmap(mk(*JAX), in_axes=in_axes))(*args)))


@pytest.mark.usefixtures("x64")
def test_solve_jaxpr_of_jvp_matches_jax() -> None:
    def g(j: Any, n: Any) -> Callable[..., Any]:
        return lambda a, b: j.jvp(solve_f(j, n), (a, b), (a, b))
    assert str(spec.make_jaxpr(g(*SPEC))(A, B)) == str(jax.make_jaxpr(g(*JAX))(A, B))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("mk", [solve_f, symmetric_f])
def test_solve_composed_transforms_match_jax(mk: Maker) -> None:
    a_s, b_s = _batch_args((0, 0))

    def per_example_grad(j: Any, n: Any) -> Any:
        def loss(a: Any, b: Any) -> Any:
            return (mk(j, n)(a, b) ** 2).sum()
        return j.vmap(j.grad(loss, argnums=(0, 1)))(a_s, b_s)

    def grad_of_vmap(j: Any, n: Any) -> Any:
        return j.grad(lambda a, b: j.vmap(mk(j, n))(a, b).sum(), argnums=(0, 1))(a_s, b_s)

    def hessian(j: Any, n: Any) -> Any:
        return j.hessian(lambda a, b: (mk(j, n)(a, b) ** 2).sum())(A, B)

    for run in (per_example_grad, grad_of_vmap, hessian):
        _close(run(*SPEC), run(*JAX))


@pytest.mark.usefixtures("x64")
def test_solve_lowers_as_jax_and_runs() -> None:
    """The solve's body lowered in place: JAX's module text, and XLA running it gives
    spec's values."""
    text = spec.jit(solve_f(*SPEC)).lower(A, B).as_text()
    assert canonical(text) == canonical(jax.jit(solve_f(*JAX)).lower(A, B).as_text())
    (out,) = compile_and_run(text, [A, B])
    np.testing.assert_allclose(out, np.asarray(solve_f(*SPEC)(A, B)), rtol=1e-14)


@pytest.mark.usefixtures("x64")
def test_solve_transpose_passes_the_dot_product_test() -> None:
    """The solve is linear in b: <u, S b> == <S^T u, b> for its VJP."""
    rng = np.random.default_rng(0)
    b, u = rng.standard_normal(2), rng.standard_normal(2)
    sb, vjp = spec.vjp(lambda b: solve_f(*SPEC)(A, b), b)
    (stu,) = vjp(u)
    np.testing.assert_allclose(np.dot(u, np.asarray(sb)), np.dot(np.asarray(stu), b),
                               rtol=1e-12)


@pytest.mark.usefixtures("x64")
def test_solve_derivatives_match_finite_differences() -> None:
    check_grads(solve_f(*SPEC), (A, B), order=1, modes=("fwd", "rev"))


def test_grad_without_transpose_solve_raises_as_jax() -> None:
    def f(j: Any, n: Any) -> Callable[..., Any]:
        return j.grad(lambda b: j.lax.custom_linear_solve(
            lambda x: 2.0 * x, b, lambda mv, y: y / 2.0).sum())
    with pytest.raises(TypeError, match="transpose_solve required"):
        jax.block_until_ready(f(*JAX)(B.astype(np.float32)))
    with pytest.raises(TypeError, match="transpose_solve required"):
        f(*SPEC)(B.astype(np.float32))


def test_matvec_shape_mismatch_raises_as_jax() -> None:
    for j in (spec, jax):
        with pytest.raises(ValueError, match="matvec\\(\\) output shapes must match b"):
            j.lax.custom_linear_solve(lambda x: x[:1], B, lambda mv, y: y)


@pytest.mark.usefixtures("x64")
def test_root_values_and_derivatives_match_jax() -> None:
    c = np.array([2.0, 5.0])
    _close(root_f(*SPEC)(c), root_f(*JAX)(c))
    _close(spec.jacobian(root_f(*SPEC))(c), jax.jacobian(root_f(*JAX))(c))
    _close(spec.jvp(root_f(*SPEC), (c,), (np.array([1.0, -2.0]),)),
           jax.jvp(root_f(*JAX), (c,), (np.array([1.0, -2.0]),)))
    cs = np.array([[2.0, 3.0], [4.0, 7.0]])
    _close(spec.vmap(root_f(*SPEC))(cs), jax.vmap(root_f(*JAX))(cs))


@pytest.mark.usefixtures("x64")
def test_root_derivatives_match_finite_differences() -> None:
    check_grads(root_f(*SPEC), (np.array([2.0, 5.0]),), order=2, modes=("fwd", "rev"))


@pytest.mark.usefixtures("x64")
def test_root_with_aux_matches_jax() -> None:
    def f(j: Any, n: Any) -> Callable[..., Any]:
        def g(c: Any) -> Any:
            return j.lax.custom_root(lambda x: x * x - c, 1.0,
                                     lambda fn, x0: (newton(j)(fn, x0), x0 * 2.0),
                                     lambda g, y: y / g(1.0), has_aux=True)
        return g
    _close(f(*SPEC)(2.0), f(*JAX)(2.0))
    _close(spec.grad(lambda c: f(*SPEC)(c)[0])(2.0), jax.grad(lambda c: f(*JAX)(c)[0])(2.0))


@pytest.mark.usefixtures("x64")
def test_solve_per_device_in_shard_map_solves_each_block() -> None:
    """Each device solves its own block of right-hand sides (NumPy's solve the oracle)."""
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        mesh = spec.make_mesh((2,), ("x",), axis_types=(spec.sharding.AxisType.Auto,))
        per_block = spec.shard_map(lambda b: solve_f(*SPEC)(A, b[0])[None], mesh=mesh,
                                   in_specs=spec.P("x"), out_specs=spec.P("x"))
        bs = np.array([[1.0, 2.0], [3.0, -1.0]])
        out = spec.jit(per_block)(bs)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    np.testing.assert_allclose(np.asarray(out), np.linalg.solve(A, bs.T).T, rtol=1e-12)


def _message(fn: Callable[[], Any], exc: type[Exception]) -> str:
    with pytest.raises(exc) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize(("call", "exc"), [
    (lambda j: j.lax.custom_linear_solve(lambda x: (x, x), B, lambda mv, y: y), ValueError),
    (lambda j: j.lax.custom_linear_solve(lambda x: x, B, lambda mv, y: [y]), TypeError),
    (lambda j: j.lax.custom_linear_solve(lambda x: x, B, lambda mv, y: ([y], 1.0),
                                         has_aux=True), TypeError),
    (lambda j: j.lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y),
     TypeError),
    (lambda j: j.lax.custom_root(lambda x: x, 1.0, lambda f, x: x, lambda g, y: y,
                                 has_aux=True), ValueError),
])
def test_bad_structures_raise_as_jax(call: Callable[[Any], Any], exc: type[Exception]) -> None:
    assert _message(lambda: call(spec), exc) == _message(lambda: call(jax), exc)
