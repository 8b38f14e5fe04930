"""``lax.linalg.lu`` and ``lu_pivots_to_permutation`` against JAX run live:
factors within a tolerance from the matrices' conditioning (JAX's LAPACK
``getrf`` sums in another order), identical pivots and permutations, the
errors, the JVP (JAX's jaxpr, and finite differences in float64), vmap
against a loop, and the getrf lowering run by XLA, bit for bit JAX's."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec import lax as slax
from tests.lowering.xla_run import assert_bitwise, spec_and_compiled
from tests.linalg.matrices import random_matrices
from tests.support.pair import errors_alike

_rng = np.random.default_rng(20)


def _matrices(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return random_matrices(_rng, shape, dtype)


def _tolerance(x: np.ndarray) -> float:
    """Rounding of an LU of ``x``: eps times its size and condition number."""
    eps = np.finfo(x.dtype).eps
    n = max(x.shape[-2:])
    sq = x[..., :min(x.shape[-2:]), :min(x.shape[-2:])].astype(np.complex128)
    cond = np.linalg.cond(sq).max() if sq.size else 1.0
    return float(50 * n * eps * max(cond, 1.0))


@pytest.mark.parametrize("shape,dtype", [
    ((4, 4), np.float32), ((2, 3, 5, 3), np.float32), ((3, 5), np.complex64),
    ((0, 0), np.float32), ((2, 0, 3), np.float32), ((3, 1), np.float32),
])
def test_lu_matches_jax(shape: tuple[int, ...], dtype: Any) -> None:
    x = _matrices(shape, dtype)
    ours = [np.asarray(o) for o in slax.linalg.lu(x)]
    theirs = [np.asarray(o) for o in jax.lax.linalg.lu(x)]
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])
    np.testing.assert_allclose(ours[0], theirs[0], atol=_tolerance(x), rtol=0)


def test_lu_reconstructs_in_float64(x64: None) -> None:
    x = _matrices((3, 6, 4), np.float64)
    lu, _, perm = (np.asarray(o) for o in slax.linalg.lu(x))
    k = 4
    low = np.tril(lu[..., :, :k], -1) + np.eye(6, k)
    up = np.triu(lu[..., :k, :])
    permuted = np.take_along_axis(x, perm[..., None], axis=-2)
    np.testing.assert_allclose(low @ up, permuted, atol=1e-14)


def test_lu_singular_and_nan_like_lapack() -> None:
    cases = [np.zeros((3, 3), np.float32), np.array([[1., 2], [1, 2]], np.float32),
             np.array([[1., np.nan], [2, 3]], np.float32),
             np.array([[np.nan, 1.], [2, 3]], np.float32)]
    for x in cases:
        ours = [np.asarray(o) for o in slax.linalg.lu(x)]
        theirs = [np.asarray(o) for o in jax.lax.linalg.lu(x)]
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)


def test_pivots_to_permutation_matches_jax() -> None:
    pivots = np.array([[2, 2, 3], [1, 1, 2], [-1, 0, 2]], np.int32)
    for size in (3, 5):
        ours = slax.linalg.lu_pivots_to_permutation(pivots, size)
        theirs = jax.lax.linalg.lu_pivots_to_permutation(pivots, size)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    f = lambda lax: lambda p: lax.linalg.lu_pivots_to_permutation(p, 5)  # noqa: E731
    assert str(spec.make_jaxpr(f(slax))(pivots)) == str(jax.make_jaxpr(f(jax.lax))(pivots))


@pytest.mark.parametrize("fn,arg", [
    (lambda la: la.lu, np.ones(3, np.float32)),
    (lambda la: la.lu, np.ones((3, 3), np.int32)),
    (lambda la: la.lu, np.ones((3, 3), np.float16)),
    (lambda la: lambda p: la.lu_pivots_to_permutation(p, 2), np.zeros(3, np.int32)),
    (lambda la: lambda p: la.lu_pivots_to_permutation(p, 4), np.zeros((), np.int32)),
    (lambda la: lambda p: la.lu_pivots_to_permutation(p, 4), np.zeros(3, np.uint8)),
])
def test_errors_match_jax_class(fn: Any, arg: np.ndarray) -> None:
    ours, _ = errors_alike(lambda: fn(slax.linalg)(arg), lambda: fn(jax.lax.linalg)(arg))
    assert " C" in str(ours)


def test_jvp_jaxpr_is_jaxs_and_matches_finite_differences(x64: None) -> None:
    x, t = _matrices((2, 3, 3), np.float64), _matrices((2, 3, 3), np.float64)
    ours = spec.make_jaxpr(lambda a, b: spec.jvp(slax.linalg.lu, (a,), (b,)))(x, t)
    theirs = jax.make_jaxpr(lambda a, b: jax.jvp(jax.lax.linalg.lu, (a,), (b,)))(x, t)
    assert str(ours) == str(theirs)
    for shape in [(4, 4), (5, 3), (3, 5)]:
        x, t = _matrices(shape, np.float64), _matrices(shape, np.float64)
        f = lambda a: slax.linalg.lu(a)[0]  # noqa: E731
        _, tangent = spec.jvp(f, (x,), (t,))
        eps = 1e-6
        fd = (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(tangent), fd, atol=1e-7)


def test_vmap_matches_loop() -> None:
    x = _matrices((3, 4, 2, 2), np.float32)
    mapped = spec.vmap(slax.linalg.lu, in_axes=1, out_axes=1)(x)
    for i in range(4):
        for got, want in zip(mapped, slax.linalg.lu(x[:, i])):
            np.testing.assert_array_equal(np.asarray(got)[:, i], np.asarray(want))
    p = np.array([[2, 1], [1, 1], [0, 2]], np.int32)
    perm = spec.vmap(lambda v: slax.linalg.lu_pivots_to_permutation(v, 3))(p)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(perm)[i], np.asarray(
            slax.linalg.lu_pivots_to_permutation(p[i], 3)))


def test_getrf_lowering_runs_bitwise_as_jax() -> None:
    x = _matrices((2, 4, 3), np.float32)
    fn = lambda lax: lambda a: lax.linalg.lu(a)  # noqa: E731
    ours, compiled, text = spec_and_compiled(fn(slax), x)
    assert "lapack_sgetrf_ffi" in text and "stablehlo.while" in text
    assert_bitwise(compiled, [np.asarray(t) for t in jax.jit(fn(jax.lax))(x)])
    np.testing.assert_array_equal(ours[1], compiled[1])
    np.testing.assert_allclose(ours[0], compiled[0], atol=_tolerance(x))
