"""``lax.linalg.hessenberg`` and ``lax.linalg.schur`` against JAX run live (LAPACK gehrd and
gees) and against their defining properties; the ``jax.scipy.linalg`` functions built on them
(schur, hessenberg, rsf2csf, sqrtm, funm) against JAX and SciPy.

The Schur form is not unique: the tests check Q unitary, T (quasi) upper triangular in
LAPACK's standard form and ``Q T Q^H = A``, T's eigenvalues against JAX's, and (spec
follows LAPACK's QR iteration) T's diagonal in gees's order and, for complex matrices and
real ones with a real spectrum, T and Q up to a unit factor per column of Q."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl

import spec
import spec.scipy.linalg as ssl
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.linalg.matrices import conj_t, random_matrices
from tests.support.pair import errors_alike

_rng = np.random.default_rng(31)


def _matrices(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return random_matrices(_rng, shape, dtype)


def _assert_schur_form(a: np.ndarray, t: np.ndarray, q: np.ndarray, tol: float) -> None:
    """Q unitary, ``Q T Q^H = a``, T upper triangular (complex) or quasi upper triangular
    with 2x2 blocks ``[[p, b], [c, p]]``, ``b c < 0`` (real), all within ``tol`` relative."""
    n = a.shape[-1]
    scale = np.abs(a).max()
    np.testing.assert_allclose(conj_t(q) @ q, np.broadcast_to(np.eye(n), q.shape), atol=tol)
    np.testing.assert_allclose(q @ t @ conj_t(q), a, atol=tol * scale)
    if np.iscomplexobj(a):
        assert (np.tril(t, -1) == 0).all()
        return
    assert (np.tril(t, -2) == 0).all()
    sub = np.diagonal(t, offset=-1, axis1=-2, axis2=-1)
    assert not (sub[..., 1:] != 0)[sub[..., :-1] != 0].any()  # no two nonzero in a row
    rows, cols = np.nonzero(sub.reshape(-1, n - 1))
    blocks = t.reshape(-1, n, n)[rows]
    assert (blocks[np.arange(len(rows)), cols, cols]
            == blocks[np.arange(len(rows)), cols + 1, cols + 1]).all()
    assert (blocks[np.arange(len(rows)), cols, cols + 1] * sub.reshape(-1, n - 1)[rows, cols]
            < 0).all()


def _eigenvalues(t: np.ndarray) -> np.ndarray:
    return np.linalg.eigvals(t.astype(np.complex128))


def _assert_same_spectrum(ours: np.ndarray, theirs: np.ndarray, tol: float) -> None:
    """Each eigenvalue of each of our matrices is within tol of one of theirs."""
    dist = np.abs(ours[..., :, None] - theirs[..., None, :]).min(axis=-1)
    assert dist.max() <= tol * max(1.0, np.abs(theirs).max()), dist.max()


def test_hessenberg_matches_jax() -> None:
    """gehrd's reflectors and taus, JAX's within rounding; ``jax.scipy.linalg.hessenberg``'s
    H and Q against SciPy and its jaxpr against JAX's."""
    for dtype in (np.float32, np.complex64):
        a = _matrices((2, 6, 6), dtype)
        ours = [np.asarray(x) for x in slax.linalg.hessenberg(a)]
        theirs = [np.asarray(x) for x in jax.lax.linalg.hessenberg(a)]
        for o, t in zip(ours, theirs):
            assert (o.dtype, o.shape) == (t.dtype, t.shape)
            np.testing.assert_allclose(o, t, atol=2e-5)
        h, q = (np.asarray(x) for x in ssl.hessenberg(a[0], calc_q=True))
        assert (np.tril(h, -2) == 0).all()
        np.testing.assert_allclose(q @ h @ conj_t(q), a[0], atol=2e-5)
        wide = a[0].astype(np.complex128 if np.iscomplexobj(a) else np.float64)
        for o, e in zip((h, q), sl.hessenberg(wide, calc_q=True)):
            np.testing.assert_allclose(o, e, atol=2e-5)
    fn = lambda m: lambda x: m.hessenberg(x, calc_q=True)  # noqa: E731
    assert str(spec.make_jaxpr(fn(ssl))(a)) == str(jax.make_jaxpr(fn(jsl))(a))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_schur_is_a_schur_form_of_jaxs_spectrum(dtype: Any, x64: None) -> None:
    a = _matrices((3, 7, 7), dtype)
    t, q = (np.asarray(x) for x in slax.linalg.schur(a))
    jt, _ = jax.lax.linalg.schur(a)
    assert (t.dtype, q.dtype, t.shape) == (a.dtype, a.dtype, a.shape)
    wide = np.dtype(dtype) in (np.float64, np.complex128)
    _assert_schur_form(a, t, q, 1e-12 if wide else 2e-6)
    _assert_same_spectrum(_eigenvalues(t), _eigenvalues(np.asarray(jt)), 1e-9 if wide else 1e-4)


def test_schur_has_lapacks_order(x64: None) -> None:
    """gees's eigenvalue order along T's diagonal; complex matrices' T and Q (and real ones'
    with a real spectrum) are gees's up to a unit factor per column of Q."""
    a = _matrices((6, 6, 6), np.float64)
    s = _matrices((2, 5, 5), np.float64)
    real_spectrum = s @ np.diag([3.0, -2.0, 1.5, 0.5, -1.0]) @ np.linalg.inv(s)
    c = _matrices((4, 8, 8), np.complex128)
    for x in (a, c, real_spectrum):
        t, q = (np.asarray(v) for v in slax.linalg.schur(x))
        jt, jq = (np.asarray(v) for v in jax.lax.linalg.schur(x))
        np.testing.assert_allclose(np.diagonal(t, axis1=1, axis2=2),
                                   np.diagonal(jt, axis1=1, axis2=2), atol=1e-9)
        if x is not a:
            np.testing.assert_allclose(np.abs(t), np.abs(jt), atol=1e-9)
            np.testing.assert_allclose(np.abs(q), np.abs(jq), atol=1e-9)


def test_two_by_two_and_triangular_forms_are_lapacks() -> None:
    """Where the Schur form is determined: a real 2x2 block (dlanv2's standard form, no QR
    sweep) and an upper triangular matrix (T = A, Q = I)."""
    a = _matrices((5, 2, 2), np.float32)
    for o, t in zip(slax.linalg.schur(a), jax.lax.linalg.schur(a)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), atol=2e-6)
    u = np.triu(_matrices((2, 4, 4), np.complex64))
    ours = [np.asarray(x) for x in slax.linalg.schur(u)]
    for o, t in zip(ours, jax.lax.linalg.schur(u)):
        np.testing.assert_array_equal(o, np.asarray(t))
    np.testing.assert_array_equal(ours[0], u)


def test_vmap_and_jit_match_the_batch() -> None:
    a = _matrices((3, 4, 4), np.float32)
    t, q = (np.asarray(x) for x in slax.linalg.schur(a))
    mapped = spec.vmap(lambda x: slax.linalg.schur(x), in_axes=2, out_axes=0)(
        np.moveaxis(a, 0, 2))
    np.testing.assert_array_equal(np.asarray(mapped[0]), t)
    jitted = spec.jit(lambda x: slax.linalg.hessenberg(x))(a)
    for o, e in zip(jitted, slax.linalg.hessenberg(a)):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(e))
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(slax.linalg.schur(a[i])[1]), q[i])
    only_t = slax.linalg.schur(a, compute_schur_vectors=False)
    assert len(only_t) == 1
    np.testing.assert_array_equal(np.asarray(only_t[0]), t)


@pytest.mark.parametrize("x", [np.zeros((3, 4), np.float32), np.zeros(3, np.float32),
                               np.zeros((3, 3), np.int32), np.zeros((3, 3), np.float16)])
def test_errors_match_jax(x: np.ndarray) -> None:
    for ours, theirs in ((slax.linalg.schur, jax.lax.linalg.schur),
                         (slax.linalg.hessenberg, jax.lax.linalg.hessenberg)):
        errors_alike(lambda: ours(x), lambda: theirs(x))
    with pytest.raises(NotImplementedError, match="sort feature"):
        slax.linalg.schur(np.eye(3, dtype=np.float32), sort_eig_vals=True)
    with pytest.raises(NotImplementedError):
        spec.jvp(lambda m: slax.linalg.schur(m)[0], (np.eye(3, dtype=np.float32),),
                 (np.eye(3, dtype=np.float32),))


def test_lowerings_are_jaxs() -> None:
    """gees and gehrd: JAX's text; XLA runs spec's text to JAX's bits."""
    x, y = _matrices((2, 3, 3), np.float32), _matrices((3, 3), np.complex64)

    def fn(lax: Any) -> Any:
        return lambda x, y: (lax.linalg.schur(x), lax.linalg.schur(y, compute_schur_vectors=False),
                             lax.linalg.hessenberg(x), lax.linalg.hessenberg(y))
    _, compiled, text = spec_and_compiled(fn(slax), x, y)
    assert "lapack_sgees_ffi" in text and "lapack_cgehrd_ffi" in text
    assert_bitwise(compiled, [np.asarray(t) for t in jax.tree.leaves(jax.jit(fn(jax.lax))(x, y))])
    theirs = jax.jit(fn(jax.lax)).lower(x, y).as_text()
    assert canonical(lower_jaxpr(spec.make_jaxpr(fn(slax))(x, y), "f")) == canonical(theirs)


# ---------------------------------------------------------------- jax.scipy.linalg

def test_scipy_schur_and_rsf2csf() -> None:
    a = _matrices((2, 5, 5), np.float32)
    t, z = (np.asarray(v) for v in ssl.schur(a, output="complex"))
    assert t.dtype == z.dtype == np.complex64
    _assert_schur_form(a.astype(np.complex64), t, z, 2e-6)
    assert str(spec.make_jaxpr(ssl.schur)(a)) == str(jax.make_jaxpr(jsl.schur)(a))
    with pytest.raises(ValueError, match="'real' or 'complex'"):
        ssl.schur(a, output="x")
    with pytest.raises(TypeError):
        ssl.schur([[1.0]])
    # rsf2csf of LAPACK's real Schur form (through JAX): SciPy's result on the same input.
    jt, jz = (np.asarray(v) for v in jax.lax.linalg.schur(a))
    ours = [np.asarray(v) for v in ssl.rsf2csf(jt, jz)]
    for o, e in zip(ours, jax.eval_shape(jsl.rsf2csf, jt, jz)):
        assert (o.dtype, o.shape) == (e.dtype, e.shape)
    for i in range(2):
        for o, e in zip(ours, sl.rsf2csf(jt[i].astype(np.float64), jz[i].astype(np.float64))):
            np.testing.assert_allclose(o[i], e, atol=2e-5)
    with pytest.raises(ValueError, match="must match"):
        ssl.rsf2csf(jt, jz[:, :4, :4])


def test_sqrtm_and_funm_match_scipy() -> None:
    """Values against SciPy, result types against JAX's abstract evaluation, and funm's error
    estimate where the Schur form is determined (a triangular matrix is its own)."""
    # A spectrum off the negative real axis: the principal square root is away from its cut.
    a = (_matrices((4, 4), np.float32) + 4 * np.eye(4)).astype(np.float32)
    root = np.asarray(ssl.sqrtm(a))
    assert root.dtype == jax.eval_shape(jsl.sqrtm, a).dtype
    np.testing.assert_allclose(root, sl.sqrtm(a.astype(np.float64)), atol=2e-5)
    with pytest.raises(NotImplementedError):
        ssl.sqrtm(a, blocksize=2)
    f = np.asarray(ssl.funm(a, spec.numpy.sin))
    assert f.dtype == jax.eval_shape(lambda x: jsl.funm(x, jax.numpy.sin), a).dtype
    np.testing.assert_allclose(f, sl.funm(a.astype(np.float64), np.sin), atol=2e-5)
    u = np.triu(a) - np.diag(np.diag(a)) + np.diag([0.5, 1.0, 1.5, 2.0]).astype(np.float32)
    f2, err = ssl.funm(u, spec.numpy.exp, disp=False)
    np.testing.assert_allclose(np.asarray(f2), sl.expm(u.astype(np.float64)), rtol=2e-5)
    d = np.diag(u).astype(np.float64)
    minden = min(abs(d[0]), np.abs(d[None, :] - d[:, None])[np.triu_indices(4, 1)].min())
    tol = np.finfo(np.float32).eps
    expected = min(1, max(tol, tol / minden * np.abs(np.triu(u, 1)).sum(axis=0).max()))
    assert np.asarray(err).dtype == jax.eval_shape(
        lambda x: jsl.funm(x, jax.numpy.exp, disp=False), u)[1].dtype
    np.testing.assert_allclose(np.asarray(err), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="square"):
        ssl.funm(a[:3], spec.numpy.sin)
