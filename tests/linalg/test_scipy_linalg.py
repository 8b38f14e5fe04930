"""``spec.scipy.linalg`` against SciPy's ``scipy.linalg`` for values (in
float64) and JAX's abstract evaluation of ``jax.scipy.linalg`` for result
types; derivatives of the solves against finite differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl

import spec
import spec.scipy.linalg as ssl
from tests.support.pair import errors_alike

_rng = np.random.default_rng(22)
A = _rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
S = A @ A.transpose(0, 2, 1) + 4 * np.eye(4)
B = _rng.normal(size=(2, 4, 3))
V = _rng.normal(size=4)


def _batched(fn: Callable[..., Any], *xs: np.ndarray) -> Any:
    """SciPy's routines take one matrix: a loop over the leading axis."""
    outs = [fn(*(x[i] for x in xs)) for i in range(len(xs[0]))]
    return jax.tree_util.tree_map(lambda *ys: np.stack(ys), *outs)


# name: (spec/JAX call, SciPy oracle)
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[], Any]]] = {
    "cholesky": (lambda m: m.cholesky(S), lambda: _batched(sl.cholesky, S)),
    "cholesky_lower": (lambda m: m.cholesky(S, lower=True),
                       lambda: _batched(lambda s: sl.cholesky(s, lower=True), S)),
    "cho_solve": (lambda m: m.cho_solve(m.cho_factor(S), B),
                  lambda: _batched(lambda s, b: sl.cho_solve(sl.cho_factor(s), b), S, B)),
    "cho_solve_vector": (lambda m: m.cho_solve(m.cho_factor(S[0], lower=True), V),
                         lambda: sl.cho_solve(sl.cho_factor(S[0], lower=True), V)),
    "lu_factor": (lambda m: m.lu_factor(A), lambda: _batched(sl.lu_factor, A)),
    "lu_solve": (lambda m: m.lu_solve(m.lu_factor(A), B),
                 lambda: _batched(lambda a, b: sl.lu_solve(sl.lu_factor(a), b), A, B)),
    "lu_solve_trans": (lambda m: m.lu_solve(m.lu_factor(A[0]), V, trans=1),
                       lambda: sl.lu_solve(sl.lu_factor(A[0]), V, trans=1)),
    "lu": (lambda m: m.lu(A), lambda: _batched(sl.lu, A)),
    "lu_permute_l_wide": (lambda m: m.lu(A[0, :3], permute_l=True),
                          lambda: sl.lu(A[0, :3], permute_l=True)),
    "solve": (lambda m: m.solve(A, B), lambda: _batched(sl.solve, A, B)),
    "solve_pos": (lambda m: m.solve(S, B, assume_a="pos"),
                  lambda: _batched(lambda s, b: sl.solve(s, b, assume_a="pos"), S, B)),
    "solve_triangular": (lambda m: m.solve_triangular(np.triu(A), B),
                         lambda: _batched(sl.solve_triangular, np.triu(A), B)),
    "solve_triangular_t": (
        lambda m: m.solve_triangular(A[0], V, trans="T", lower=True, unit_diagonal=True),
        lambda: sl.solve_triangular(A[0], V, trans="T", lower=True, unit_diagonal=True)),
    "inv": (lambda m: m.inv(A), lambda: _batched(sl.inv, A)),
    "det": (lambda m: m.det(A), lambda: _batched(sl.det, A)),
    "qr_economic": (lambda m: m.qr(A[0, :, :3], mode="economic"),
                    lambda: sl.qr(A[0, :, :3], mode="economic")),
    "qr_r": (lambda m: m.qr(A[0], mode="r"), lambda: sl.qr(A[0], mode="r")),
    "svd_values": (lambda m: m.svd(A, compute_uv=False),
                   lambda: _batched(lambda a: sl.svd(a, compute_uv=False), A)),
    "eigh_values": (lambda m: m.eigh(S, eigvals_only=True),
                    lambda: _batched(lambda s: sl.eigh(s, eigvals_only=True), S)),
    "expm": (lambda m: m.expm(A - 3 * np.eye(4)), lambda: _batched(sl.expm, A - 3 * np.eye(4))),
    "expm_small": (lambda m: m.expm(A[0] * 0.01), lambda: sl.expm(A[0] * 0.01)),
    "expm_upper": (lambda m: m.expm(np.triu(A[0]) / 4, upper_triangular=True),
                   lambda: sl.expm(np.triu(A[0]) / 4)),
    "block_diag": (lambda m: m.block_diag(A[0], V, np.ones((2, 1))),
                   lambda: sl.block_diag(A[0], V, np.ones((2, 1)))),
    "toeplitz": (lambda m: m.toeplitz(V + 1j * V), lambda: sl.toeplitz(V + 1j * V)),
    "toeplitz_rows": (lambda m: m.toeplitz(V, V[:3] + 1), lambda: sl.toeplitz(V, V[:3] + 1)),
    "hankel": (lambda m: m.hankel(V, V[:2]), lambda: sl.hankel(V, V[:2])),
    "circulant": (lambda m: m.circulant(V), lambda: sl.circulant(V)),
    "companion": (lambda m: m.companion(V), lambda: sl.companion(V)),
    "leslie": (lambda m: m.leslie(V, V[:3]), lambda: sl.leslie(V, V[:3])),
    "hilbert": (lambda m: m.hilbert(4), lambda: sl.hilbert(4)),
    "pascal": (lambda m: [m.pascal(5), m.pascal(5, "lower"), m.pascal(5, "upper")],
               lambda: [sl.pascal(5), sl.pascal(5, "lower"), sl.pascal(5, "upper")]),
    "helmert": (lambda m: [m.helmert(4), m.helmert(4, full=True)],
                lambda: [sl.helmert(4), sl.helmert(4, full=True)]),
    "hadamard": (lambda m: m.hadamard(8), lambda: sl.hadamard(8)),
    "invhilbert": (lambda m: m.invhilbert(5), lambda: sl.invhilbert(5)),
    "invpascal": (lambda m: [m.invpascal(5), m.invpascal(5, "lower"), m.invpascal(4, "upper")],
                  lambda: [sl.invpascal(5), sl.invpascal(5, "lower"), sl.invpascal(4, "upper")]),
    "fiedler": (lambda m: m.fiedler(B[..., 0]), lambda: _batched(sl.fiedler, B[..., 0])),
    "dft": (lambda m: [m.dft(4), m.dft(4, "n"), m.dft(3, "sqrtn")],
            lambda: [sl.dft(4), sl.dft(4, "n"), sl.dft(3, "sqrtn")]),
}


def test_values_match_scipy_and_types_match_jax(x64: None) -> None:
    for name, (call, oracle) in CASES.items():
        ours = jax.tree_util.tree_leaves(call(ssl))
        types = jax.tree_util.tree_leaves(jax.eval_shape(lambda c=call: c(jsl)))
        want = jax.tree_util.tree_leaves(oracle())
        assert len(ours) == len(types) == len(want), name
        for a, t, b in zip(ours, types, want):
            a = np.asarray(a)
            assert (a.dtype, a.shape) == (t.dtype, t.shape), (name, a.dtype, t.dtype)
            # Condition numbers are below 1e3 (pascal's entries are exact).
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-11, err_msg=name)


def test_solve_derivatives_match_finite_differences(x64: None) -> None:
    def f(a: Any, s: Any) -> Any:
        return ((ssl.solve(s, B, assume_a="pos") ** 2).sum() + ssl.lu_solve(
            ssl.lu_factor(a), B).sum() + ssl.solve_triangular(a, B, lower=True).sum()
            + ssl.expm(a / 8).sum())
    ta, ts = _rng.normal(size=A.shape), _rng.normal(size=S.shape)
    ts = ts + ts.transpose(0, 2, 1)
    ga, gs = spec.grad(f, argnums=(0, 1))(A, S)
    eps = 1e-6
    fd = (float(f(A + eps * ta, S + eps * ts)) - float(f(A - eps * ta, S - eps * ts))) / (2 * eps)
    np.testing.assert_allclose(float((np.asarray(ga) * ta).sum() + (np.asarray(gs) * ts).sum()),
                               fd, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m: m.solve(np.eye(3), np.ones(3), assume_a="bad"),
    lambda m: m.solve(np.eye(3), np.ones(2), assume_a="pos"),
    lambda m: m.solve_triangular(np.eye(3), np.ones(3), trans=3),
    lambda m: m.qr(np.eye(3), mode="raw"),
    lambda m: m.expm(np.ones((2, 3))),
    lambda m: m.companion(np.ones(1)),
    lambda m: m.hadamard(6),
    lambda m: m.pascal(3, "bad"),
    lambda m: m.block_diag(np.ones((1, 1, 1))),
])
def test_errors_match_jax_class(call: Callable[[Any], Any]) -> None:
    errors_alike(lambda: call(ssl), lambda: call(jsl))
