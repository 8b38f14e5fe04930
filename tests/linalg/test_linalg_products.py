"""``lax.linalg.tridiagonal``, ``symmetric_product``, ``cholesky_update``, ``ormqr`` and
``qdwh`` against JAX run live: values (JAX's within rounding where LAPACK computes them, and
the identities that define them), dtypes, jaxpr text, errors, vmap against a loop, and the
lowerings (JAX's text, run by XLA)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.linalg.matrices import conj_t, random_matrices
from tests.support.pair import errors_alike

_rng = np.random.default_rng(47)


def _matrices(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return random_matrices(_rng, shape, dtype)


def _assert_like(ours: Any, theirs: Any, atol: float) -> None:
    ours, theirs = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        np.testing.assert_allclose(o, t, atol=atol)


def _errors_match(cases: list[tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...],
                                    dict[str, Any]]]) -> None:
    for ours, theirs, args, kw in cases:
        errors_alike(lambda: ours(*args, **kw), lambda: theirs(*args, **kw))


# ------------------------------------------------------------------- tridiagonal

def _tridiagonal_q(arr: np.ndarray, taus: np.ndarray, lower: bool) -> np.ndarray:
    """Q from the reflectors sytrd leaves in arr (one matrix, float64)."""
    n = arr.shape[-1]
    q = np.eye(n, dtype=np.complex128)
    for j in range(n - 1):
        v = np.zeros(n, np.complex128)
        if lower:
            v[j + 1], v[j + 2:] = 1, arr[j + 2:, j]
        else:
            v[j], v[:j] = 1, arr[:j, j + 1]
        h = np.eye(n) - taus[j] * np.outer(v, np.conj(v))
        q = q @ h if lower else h @ q
    return q


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_jax_and_reduces(dtype: Any, lower: bool) -> None:
    a = _matrices((2, 5, 5), dtype)
    ours = slax.linalg.tridiagonal(a, lower=lower)
    _assert_like(ours, jax.lax.linalg.tridiagonal(a, lower=lower), 2e-5)
    arr, d, e, taus = (np.asarray(x) for x in ours)
    # The other triangle is the operand's; Q^H A Q is the tridiagonal (d, e).
    other = np.triu if lower else np.tril
    np.testing.assert_array_equal(other(arr[0], 1 if lower else -1),
                                  other(a[0], 1 if lower else -1))
    tri = np.tril(a[0], -1) if lower else np.triu(a[0], 1)
    full = tri + conj_t(tri) + np.diag(np.diagonal(a[0]).real)
    q = _tridiagonal_q(arr[0].astype(np.complex128), taus[0], lower)
    t = np.diag(d[0]) + np.diag(e[0], -1) + np.diag(e[0], 1)
    np.testing.assert_allclose(conj_t(q) @ full @ q, t, atol=1e-5)


def test_tridiagonal_jaxpr_vmap_and_errors() -> None:
    a = _matrices((3, 4, 4), np.float32)
    fn = lambda lax: lambda x: lax.linalg.tridiagonal(x, lower=False)  # noqa: E731
    assert str(spec.make_jaxpr(fn(slax))(a)) == str(jax.make_jaxpr(fn(jax.lax))(a))
    mapped = spec.vmap(fn(slax), in_axes=2)(np.moveaxis(a, 0, 2))
    for i in range(3):
        for m, one in zip(mapped, fn(slax)(a[i])):
            np.testing.assert_array_equal(np.asarray(m)[i], np.asarray(one))
    one = slax.linalg.tridiagonal(np.ones((1, 1), np.float32))
    assert [np.asarray(x).shape for x in one] == [(1, 1), (1,), (0,), (0,)]
    z = np.zeros
    _errors_match([(slax.linalg.tridiagonal, jax.lax.linalg.tridiagonal, (x,), {})
                   for x in (z((3, 2), np.float32), z((0, 0), np.float32), z(3, np.float32),
                             z((3, 3), np.int32), z((3, 3), np.float16), z((3, 2), np.int32))])
    with pytest.raises(NotImplementedError):
        spec.jvp(lambda m: slax.linalg.tridiagonal(m)[1], (a[0],), (a[0],))


# --------------------------------------------------- symmetric_product, cholesky_update

@pytest.mark.parametrize("kw", [{"alpha": 2.0, "beta": 0.5}, {"symmetrize_output": True}])
def test_symmetric_product_matches_jax(kw: dict[str, Any]) -> None:
    a, c = _matrices((2, 4, 3), np.float32), _matrices((2, 4, 4), np.float32)
    fn = lambda lax: lambda a, c: lax.linalg.symmetric_product(a, c, **kw)  # noqa: E731
    _assert_like(fn(slax)(a, c), jax.jit(fn(jax.lax))(a, c), 2e-6)
    assert str(spec.make_jaxpr(fn(slax))(a, c)) == str(jax.make_jaxpr(fn(jax.lax))(a, c))
    mapped = spec.vmap(fn(slax), in_axes=(2, None))(np.moveaxis(a, 0, 2), c[0])
    for i in range(2):
        np.testing.assert_array_equal(np.asarray(mapped)[i], np.asarray(fn(slax)(a[i], c[0])))


def test_cholesky_update_is_the_updated_factor() -> None:
    x = _rng.normal(size=(5, 5))
    r = np.linalg.cholesky(x @ x.T + np.eye(5)).T.astype(np.float32)
    w = _rng.normal(size=5).astype(np.float32)
    ours = slax.linalg.cholesky_update(r, w)
    _assert_like(ours, jax.lax.linalg.cholesky_update(r, w), 2e-6)
    new = np.asarray(ours).astype(np.float64)
    wide = r.astype(np.float64)
    np.testing.assert_allclose(new.T @ new, wide.T @ wide + np.outer(w, w), atol=2e-5)
    np.testing.assert_allclose(np.tril(new, -1), 0, atol=1e-6)
    fn = lambda lax: lax.linalg.cholesky_update  # noqa: E731
    assert str(spec.make_jaxpr(fn(slax))(r, w)) == str(jax.make_jaxpr(fn(jax.lax))(r, w))
    with pytest.raises(NotImplementedError, match="Batching rule for 'cholesky_update'"):
        spec.vmap(slax.linalg.cholesky_update)(r[None], w[None])


# ------------------------------------------------------------------------- ormqr

def _qr_raw(shape: tuple[int, ...], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    h, taus = jax.numpy.linalg.qr(_matrices(shape, dtype), mode="raw")
    return np.asarray(h.mT), np.asarray(taus)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_ormqr_is_the_product_with_q(dtype: Any) -> None:
    a, taus = _qr_raw((2, 5, 3), dtype)
    q = np.asarray(slax.linalg.householder_product(
        np.pad(a, ((0, 0), (0, 0), (0, 2))), np.pad(taus, ((0, 0), (0, 2)))))
    for left in (True, False):
        c = _matrices((2, 5, 2) if left else (2, 2, 5), dtype)
        for transpose in (False, True):
            qq = conj_t(q) if transpose else q
            ours = slax.linalg.ormqr(a, taus, c, left=left, transpose=transpose)
            _assert_like(ours, jax.lax.linalg.ormqr(a, taus, c, left=left, transpose=transpose),
                         2e-6)
            np.testing.assert_allclose(np.asarray(ours), qq @ c if left else c @ qq, atol=2e-6)
    fn = lambda lax: lambda a, t, c: lax.linalg.ormqr(a, t, c, left=False)  # noqa: E731
    c = _matrices((2, 2, 5), dtype)
    assert (str(spec.make_jaxpr(fn(slax))(a, taus, c))
            == str(jax.make_jaxpr(fn(jax.lax))(a, taus, c)))
    mapped = spec.vmap(fn(slax), in_axes=(0, 0, 2), out_axes=1)(a, taus, np.moveaxis(c, 0, 2))
    for i in range(2):
        one = fn(slax)(a[i], taus[i], c[i])
        np.testing.assert_array_equal(np.asarray(mapped)[:, i], np.asarray(one))


def test_product_errors_match_jax() -> None:
    z, f32 = np.zeros, np.float32
    L, J = slax.linalg, jax.lax.linalg
    cases: list[tuple[Any, ...]] = [
        (L.symmetric_product, J.symmetric_product, (z((3, 2), f32), z((2, 2), f32)), {}),
        (L.symmetric_product, J.symmetric_product,
         (z((3, 2), np.complex64), z((3, 3), np.complex64)), {}),
        (L.symmetric_product, J.symmetric_product, (z((3, 2), np.int32), z((3, 3), np.int32)), {}),
        (L.symmetric_product, J.symmetric_product, (z((2, 3, 2), f32), z((3, 3), f32)), {}),
        (L.cholesky_update, J.cholesky_update, (z((3, 3), f32), z(2, f32)), {}),
        (L.cholesky_update, J.cholesky_update, (z((2, 3, 3), f32), z((2, 3), f32)), {}),
        (L.cholesky_update, J.cholesky_update, (z((3, 3), np.complex64), z(3, np.complex64)), {}),
        (L.ormqr, J.ormqr, (z((4, 3), f32), z(3, f32), z((3, 3), f32)), {}),
        (L.ormqr, J.ormqr, (z((4, 3), f32), z(3, f32), z((3, 3), f32)), {"left": False}),
        (L.ormqr, J.ormqr, (z((4, 3), np.int32), z(3, np.int32), z((4, 3), np.int32)), {}),
        (L.ormqr, J.ormqr, (z((4, 3), f32), z(3, np.complex64), z((4, 3), f32)), {}),
        (L.qdwh, J.qdwh, (z((3, 4), f32),), {}),
        (L.qdwh, J.qdwh, (z((2, 4, 3), f32),), {}),
    ]
    _errors_match(cases)
    for fn, args in ((L.symmetric_product, (z((3, 2), f32), z((3, 3), f32))),
                     (L.cholesky_update, (np.eye(3, dtype=f32), z(3, f32))),
                     (L.ormqr, (z((4, 3), f32), z(3, f32), z((4, 3), f32)))):
        with pytest.raises(NotImplementedError, match="Differentiation rule"):
            spec.jvp(lambda x, fn=fn, args=args: fn(x, *args[1:]), (args[0],), (args[0],))


# -------------------------------------------------------------------------- qdwh

def test_qdwh_is_jaxs_program_and_a_polar_decomposition() -> None:
    x = _matrices((5, 3), np.float32)
    assert str(spec.make_jaxpr(slax.linalg.qdwh)(x)) == str(jax.make_jaxpr(jax.lax.linalg.qdwh)(x))
    u, h, iters, ok = slax.linalg.qdwh(x, max_iterations=6)
    _assert_like((u, h, iters, ok), jax.jit(lambda x: jax.lax.linalg.qdwh(x, max_iterations=6))(x),
                 2e-5)
    u, h = np.asarray(u, np.float64), np.asarray(h, np.float64)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-5)
    np.testing.assert_allclose(u @ h, x, atol=1e-5)
    assert (np.linalg.eigvalsh(h) > 0).all()
    padded = np.pad(x, ((0, 2), (0, 1)))
    pu, ph, _, _ = slax.linalg.qdwh(padded, dynamic_shape=(5, 3))
    np.testing.assert_allclose(np.asarray(pu)[:5, :3], u, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ph)[:3, :3], h, atol=1e-5)


# --------------------------------------------------------------------- lowerings

def test_lowerings_are_jaxs() -> None:
    """sytrd/hetrd and ormqr/unmqr calls, symmetric_product's and cholesky_update's
    decompositions: JAX's text; XLA runs spec's text to JAX's bits."""
    x, y = _matrices((2, 3, 3), np.float32), _matrices((3, 3), np.complex64)
    a, taus = _qr_raw((4, 3), np.complex64)
    c = _matrices((2, 4), np.complex64)
    b, s = _matrices((2, 3, 2), np.float32), _matrices((2, 3, 3), np.float32)
    r = np.triu(_matrices((3, 3), np.float32)) + 4 * np.eye(3, dtype=np.float32)
    w = _matrices((3,), np.float32)

    def fn(lax: Any) -> Any:
        return lambda x, y, a, t, c, b, s, r, w: (
            lax.linalg.tridiagonal(x), lax.linalg.tridiagonal(y, lower=False),
            lax.linalg.ormqr(a, t, c, left=False, transpose=True),
            lax.linalg.symmetric_product(b, s, alpha=2.0, beta=0.5),
            lax.linalg.cholesky_update(r, w))
    args = (x, y, a, taus, c, b, s, r, w)
    _, compiled, text = spec_and_compiled(fn(slax), *args)
    assert "lapack_ssytrd_ffi" in text and "lapack_chetrd_ffi" in text and "cunmqr" in text
    assert_bitwise(compiled, [np.asarray(t) for t in jax.tree.leaves(jax.jit(fn(jax.lax))(*args))])
    theirs = jax.jit(fn(jax.lax)).lower(*args).as_text()
    assert canonical(lower_jaxpr(spec.make_jaxpr(fn(slax))(*args), "f")) == canonical(theirs)
