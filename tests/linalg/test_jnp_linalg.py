"""``jnp.linalg``'s LU- and SVD-based functions against JAX run live: values
within a tolerance from the operands' conditioning, derivatives against
JAX's and against finite differences in float64, vmap of solve against a
loop, and the errors JAX raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import errors_alike

_rng = np.random.default_rng(21)
A = _rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
B = _rng.normal(size=(2, 4, 3))
V = _rng.normal(size=4)
C = (_rng.normal(size=(3, 4)) + 1j * _rng.normal(size=(3, 4)))

CASES: dict[str, Callable[[Any], Any]] = {
    "solve": lambda m: m.linalg.solve(A, B),
    "solve_vector": lambda m: m.linalg.solve(A, V),
    "solve_broadcast": lambda m: m.linalg.solve(A[0], B),
    "inv": lambda m: m.linalg.inv(A),
    "det": lambda m: m.linalg.det(A),
    "det_complex": lambda m: m.linalg.det(C[:, :3]),
    "slogdet": lambda m: tuple(m.linalg.slogdet(A)),
    "slogdet_singular": lambda m: tuple(m.linalg.slogdet(np.ones((3, 3)))),
    "matrix_power": lambda m: m.linalg.matrix_power(A, 5),
    "matrix_power_negative": lambda m: m.linalg.matrix_power(A, -2),
    "matrix_power_zero": lambda m: m.linalg.matrix_power(A, 0),
    "matrix_rank": lambda m: m.linalg.matrix_rank(np.ones((2, 3, 3)) + np.eye(3) * [[[1]], [[0]]]),
    "pinv": lambda m: m.linalg.pinv(B),
    "pinv_wide_complex": lambda m: m.linalg.pinv(C),
    "lstsq": lambda m: tuple(m.linalg.lstsq(B[0], V)),
    "norm_flat": lambda m: m.linalg.norm(B),
    "norm_vectors": lambda m: [m.linalg.norm(B, ord=o, axis=1) for o in (None, 0, 1, 3, np.inf)],
    "norm_matrices": lambda m: [m.linalg.norm(A, ord=o, axis=(1, 2), keepdims=True)
                                for o in (None, 1, -1, 2, -2, np.inf, "fro", "nuc")],
    "matrix_norm": lambda m: m.linalg.matrix_norm(C, ord="nuc"),
    "vector_norm": lambda m: m.linalg.vector_norm(B, ord=1, keepdims=True),
    "cond": lambda m: [m.linalg.cond(A), m.linalg.cond(A, 1), m.linalg.cond(A, "fro")],
    "tensorinv": lambda m: m.linalg.tensorinv(A[0].reshape(4, 2, 2), ind=1),
    "tensorsolve": lambda m: m.linalg.tensorsolve(A[0].reshape(2, 2, 4), V.reshape(2, 2)),
    "multi_dot": lambda m: m.linalg.multi_dot([V, A[0], A[1], B[0]]),
    "trace": lambda m: m.linalg.trace(A, offset=1),
    "matrix_transpose": lambda m: m.linalg.matrix_transpose(B),
    "cross": lambda m: m.linalg.cross(B[..., :3], B[..., :3] + 1),
    "vecdot": lambda m: m.linalg.vecdot(B, B, axis=1),
}


def test_values_match_numpy_and_types_match_jax(x64: None) -> None:
    """Values against NumPy's LAPACK-backed ``numpy.linalg`` (the operands'
    condition numbers are below 100: 1e-11 covers rounding); result types
    against JAX's abstract evaluation (which compiles nothing)."""
    for name, case in CASES.items():
        ours = jax.tree_util.tree_leaves(case(snp))
        types = jax.tree_util.tree_leaves(jax.eval_shape(lambda c=case: c(jnp)))
        want = jax.tree_util.tree_leaves(case(np))
        assert len(ours) == len(types) == len(want), name
        for a, t, b in zip(ours, types, want):
            a = np.asarray(a)
            assert (a.dtype, a.shape) == (t.dtype, t.shape), (name, a.dtype, t.dtype)
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11, err_msg=name)


def _loss(a: Any) -> Any:
    m = snp
    return (m.linalg.det(a).sum() + m.linalg.slogdet(a)[1].sum()
            + (m.linalg.solve(a, B) ** 2).sum() + m.linalg.pinv(a)[..., 1, 0].sum()
            + m.linalg.inv(a)[..., 0, 1].sum())


def _directional(f: Callable[[Any], Any], x: np.ndarray, t: np.ndarray) -> Any:
    eps = 1e-6
    hi, lo = jax.tree_util.tree_leaves(f(x + eps * t)), jax.tree_util.tree_leaves(f(x - eps * t))
    return [(np.asarray(p) - np.asarray(q)) / (2 * eps) for p, q in zip(hi, lo)]


def test_gradient_matches_finite_differences(x64: None) -> None:
    t = _rng.normal(size=A.shape)
    grad = np.asarray(spec.grad(_loss)(A))
    (fd,) = _directional(_loss, A, t)
    np.testing.assert_allclose((grad * t).sum(), fd, rtol=1e-6)


def test_complex_slogdet_and_det_jvps_match_finite_differences(x64: None) -> None:
    a, t = C[:, :3], C[:, 1:]

    def f(x: Any) -> Any:
        return (*snp.linalg.slogdet(x), snp.linalg.det(x))
    _, tangents = spec.jvp(f, (a,), (t,))
    for got, want in zip(tangents, _directional(f, a, t)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shapes", [((4, 4), (4,)), ((2, 4, 4), (4,)), ((4, 4), (2, 4, 3)),
                                    ((2, 4, 4), (2, 4, 3))])
def test_solve_jaxprs_match_jax(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """solve's jaxpr and its gradient's are JAX's: broadcast batch axes
    vectorized as jnp.vectorize does, vecmat the transpose of matvec."""
    a = np.broadcast_to(A[0].astype(np.float32), shapes[0])
    b = np.ones(shapes[1], np.float32)

    def texts(lib: Any, np_: Any) -> list[str]:
        return [str(lib.make_jaxpr(f)(a, b)) for f in (
            np_.linalg.solve, lib.grad(lambda x, y: np_.linalg.solve(x, y).sum(), (0, 1)))]
    assert texts(spec, snp) == texts(jax, jnp)


@pytest.mark.parametrize("shapes", [((2, 1, 3, 3), (4, 3)), ((3, 4), (3,)), ((3, 3), ())])
def test_solve_shape_errors_are_jaxs(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = (np.ones(s, np.float32) for s in shapes)
    with pytest.raises(ValueError) as theirs:
        jnp.linalg.solve(a, b)
    with pytest.raises(ValueError) as ours:
        snp.linalg.solve(a, b)
    assert str(ours.value) == str(theirs.value)


def test_vmap_solve_matches_loop() -> None:
    a, b = A.astype(np.float32), B.astype(np.float32)
    mapped = np.asarray(spec.vmap(snp.linalg.solve, in_axes=(None, 1), out_axes=1)(a[0], b[0]))
    for k in range(3):
        np.testing.assert_array_equal(mapped[:, k], np.asarray(snp.linalg.solve(a[0], b[0, :, k])))


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.solve(np.ones(3), np.ones(3)),
    lambda m: m.linalg.solve(np.ones((2, 3, 3)), np.ones((2, 3))[None].repeat(3, 0)[..., :2]),
    lambda m: m.linalg.inv(np.ones((2, 3))),
    lambda m: m.linalg.det(np.ones((2, 3))),
    lambda m: m.linalg.slogdet(np.ones(3)),
    lambda m: m.linalg.matrix_power(np.ones((2, 3)), 2),
    lambda m: m.linalg.matrix_power(np.ones((3, 3)), 1.5),
    lambda m: m.linalg.norm(np.ones((2, 2)), ord="bad"),
    lambda m: m.linalg.tensorinv(np.ones((2, 3)), ind=1),
    lambda m: m.linalg.multi_dot([np.ones(2)]),
    lambda m: m.linalg.cond(np.ones(3)),
])
def test_errors_match_jax_class(call: Callable[[Any], Any]) -> None:
    errors_alike(lambda: call(snp), lambda: call(jnp))
