"""jax.scipy.linalg's polar, expm_frechet, eigh_tridiagonal, convolution_matrix,
fiedler_companion, qr_multiply and solve_sylvester: values against SciPy (the definitions jax.scipy
follows) and defining identities, dtypes and errors twinned with JAX run live
on the cheapest calls (JAX compiles each function eagerly)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.linalg as jla
import numpy as np
import pytest
import scipy.linalg as scl

import spec
import spec.scipy.linalg as sla
from tests.support.pair import errors_alike

_rng = np.random.default_rng(3)
TALL = _rng.normal(size=(4, 3)).astype(np.float32)
SQUARE = (_rng.normal(size=(3, 3)) * 0.5).astype(np.float32)
DIRECTION = _rng.normal(size=(3, 3)).astype(np.float32)
DIAG = _rng.normal(size=5).astype(np.float32)
OFF = _rng.normal(size=4).astype(np.float32)

# (name, spec's call, SciPy's call, atol)
ROWS: list[tuple[str, Callable[[], Any], Callable[[], Any], float]] = [
    ("polar_right", lambda: sla.polar(TALL), lambda: scl.polar(TALL), 1e-5),
    ("polar_left", lambda: sla.polar(TALL.T, "left"), lambda: scl.polar(TALL.T, "left"), 1e-5),
    ("expm_frechet", lambda: sla.expm_frechet(SQUARE, DIRECTION),
     lambda: scl.expm_frechet(SQUARE, DIRECTION), 1e-5),
    ("eigvals", lambda: sla.eigh_tridiagonal(DIAG, OFF, eigvals_only=True),
     lambda: scl.eigh_tridiagonal(DIAG, OFF, eigvals_only=True), 1e-5),
    ("eigvals_i", lambda: sla.eigh_tridiagonal(DIAG, OFF, eigvals_only=True, select="i",
                                               select_range=(1, 3)),
     lambda: scl.eigh_tridiagonal(DIAG, OFF, eigvals_only=True, select="i",
                                  select_range=(1, 3)), 1e-5),
    ("qr_multiply_left", lambda: sla.qr_multiply(TALL, SQUARE, "left"),
     lambda: scl.qr_multiply(TALL, SQUARE, "left"), 1e-5),
    ("qr_multiply_right_vector", lambda: sla.qr_multiply(TALL, DIAG[:4]),
     lambda: scl.qr_multiply(TALL, DIAG[:4]), 1e-5),
    ("solve_sylvester", lambda: sla.solve_sylvester(SQUARE, SQUARE.T @ SQUARE, DIRECTION),
     lambda: scl.solve_sylvester(SQUARE, SQUARE.T @ SQUARE, DIRECTION), 1e-4),
    ("solve_sylvester_eigen", lambda: sla.solve_sylvester(SQUARE, SQUARE.T @ SQUARE,
                                                          DIRECTION, method="eigen"),
     lambda: scl.solve_sylvester(SQUARE, SQUARE.T @ SQUARE, DIRECTION), 1e-4),
    *[(f"convolution_matrix_{mode}_{n}",
       (lambda mode, n: lambda: sla.convolution_matrix(np.arange(1.0, 4.0), n, mode))(mode, n),
       (lambda mode, n: lambda: scl.convolution_matrix(np.arange(1.0, 4.0), n, mode))(mode, n),
       0.0) for mode, n in (("full", 2), ("same", 5), ("valid", 2))],
    *[(f"fiedler_companion_{len(p)}",
       (lambda p: lambda: sla.fiedler_companion(np.array(p)))(p),
       (lambda p: lambda: scl.fiedler_companion(np.array(p)))(p), 1e-6)
      for p in ([1.0, 2.0], [2.0, 3, -1, 5, 7, 1])],
]


@pytest.mark.parametrize("name,ours,reference,atol", ROWS, ids=[r[0] for r in ROWS])
def test_values_match_scipy(name: str, ours: Callable[[], Any], reference: Callable[[], Any],
                            atol: float) -> None:
    a, e = ours(), reference()
    if not isinstance(e, tuple):
        a, e = (a,), (e,)
    for x, y in zip(a, e, strict=True):
        np.testing.assert_allclose(np.asarray(x, np.float64), y, rtol=0, atol=atol)


def test_eigh_tridiagonal_vectors_are_eigenvectors() -> None:
    w, v = (np.asarray(x, np.float64) for x in sla.eigh_tridiagonal(DIAG, OFF))
    t = np.diag(DIAG) + np.diag(OFF, 1) + np.diag(OFF, -1)
    np.testing.assert_allclose(t @ v, v * w, atol=1e-5)
    np.testing.assert_allclose(v.T @ v, np.eye(5), atol=1e-5)


def test_dtypes_and_errors_match_jax() -> None:
    for ours, theirs in [(sla.convolution_matrix(np.arange(3.0), 2),
                          jla.convolution_matrix(np.arange(3.0), 2))]:
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        assert ours.shape == theirs.shape
    for m in (sla, jla):
        with pytest.raises(ValueError):
            m.convolution_matrix(np.ones(3), 0)
        with pytest.raises(ValueError):
            m.convolution_matrix(np.ones(3), 2, "bad")
        with pytest.raises(ValueError):
            m.expm_frechet(SQUARE, TALL)
        with pytest.raises(ValueError):
            m.qr_multiply(TALL, SQUARE, "middle")


WIDE_BATCH = _rng.normal(size=(2, 3, 5)).astype(np.float32)
POLAR_CALLS: dict[str, tuple[dict[str, Any], np.ndarray]] = {
    "qdwh": ({}, TALL),
    "qdwh left, batched": ({"side": "left"}, WIDE_BATCH),
    "qdwh max_iterations": ({"max_iterations": 2}, TALL),
    "svd": ({"method": "svd"}, TALL),
    "svd left": ({"side": "left", "method": "svd"}, TALL),
}


@pytest.mark.parametrize("case", list(POLAR_CALLS))
def test_polar_is_jaxs_program_with_jaxs_values(case: str) -> None:
    """JAX's method choice (QDWH unless method="svd"; max_iterations does
    not reach QDWH in JAX either): the same jaxpr text, and its values."""
    kwargs, a = POLAR_CALLS[case]
    assert (str(spec.make_jaxpr(lambda x: sla.polar(x, **kwargs))(a))
            == str(jax.make_jaxpr(lambda x: jla.polar(x, **kwargs))(a)))
    theirs = jax.jit(lambda x: jla.polar(x, **kwargs))
    if case in ("qdwh", "qdwh left, batched", "svd left"):
        for ours, want in zip(sla.polar(a, **kwargs), theirs(a)):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(want), atol=2e-6)


def test_polar_errors_match_jax() -> None:
    calls: list[Callable[[Any], Any]] = [
        lambda m: m.polar(TALL, "left"), lambda m: m.polar(TALL.T),
        lambda m: m.polar(TALL, method="qr"), lambda m: m.polar(TALL, "up"),
        lambda m: m.polar(np.ones(3))]
    for call in calls:
        ours, theirs = errors_alike(lambda: call(sla), lambda: call(jla))
        assert str(ours) == str(theirs)
