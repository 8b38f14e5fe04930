"""``lax.linalg.eig`` and ``jnp.linalg.eig``/``eigvals`` against JAX run live
(eigenvalues within rounding; eigenvectors in float32 up to a unit factor
each, whose choice differs between LAPACK builds, and equal in float64),
the eigen-equations, the JVPs against finite differences in float64, vmap
against a loop, and the geev lowering (JAX's text, run by XLA bit for bit
as JAX)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.support.pair import errors_alike

_rng = np.random.default_rng(23)
X = _rng.normal(size=(2, 4, 4))
XC = X + 1j * _rng.normal(size=X.shape)


def _same_up_to_phase(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    """Columns equal up to a unit complex factor each."""
    inner = np.sum(np.conj(a) * b, axis=-2)
    np.testing.assert_allclose(np.abs(inner), 1, atol=tol)
    np.testing.assert_allclose(a * inner[..., None, :], b, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eig_matches_jax(dtype: Any) -> None:
    x = (XC if np.dtype(dtype).kind == "c" else X).astype(dtype)
    ours = [np.asarray(o) for o in slax.linalg.eig(x)]
    theirs = [np.asarray(o) for o in jax.lax.linalg.eig(x)]
    for a, b in zip(ours, theirs):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
    np.testing.assert_allclose(ours[0], theirs[0], atol=1e-5)
    # NumPy's and jaxlib's LAPACK builds may pick other signs in float32.
    _same_up_to_phase(ours[1], theirs[1], 1e-4)
    _same_up_to_phase(ours[2], theirs[2], 1e-4)
    w, vl, vr = ours
    np.testing.assert_allclose(x @ vr, vr * w[..., None, :], atol=1e-5)
    np.testing.assert_allclose(np.conj(np.swapaxes(vl, -1, -2)) @ x,
                               np.conj(np.swapaxes(vl, -1, -2)) * w[..., :, None], atol=1e-5)


def test_jnp_eig_and_eigvals(x64: None) -> None:
    w, v = snp.linalg.eig(X)
    wj, vj = jnp.linalg.eig(X)
    np.testing.assert_allclose(np.asarray(w), np.asarray(wj), atol=1e-12)
    np.testing.assert_allclose(np.asarray(v), np.asarray(vj), atol=1e-12)
    np.testing.assert_allclose(np.asarray(snp.linalg.eigvals(X)), np.asarray(w), atol=1e-12)
    assert str(spec.make_jaxpr(snp.linalg.eigvals)(X)) == str(
        jax.make_jaxpr(jnp.linalg.eigvals)(X))
    assert np.isnan(np.asarray(snp.linalg.eigvals(np.full((2, 2), np.nan)))).all()


def _directional(f: Any, x: np.ndarray, t: np.ndarray) -> list[np.ndarray]:
    eps = 1e-6
    return [(np.asarray(p) - np.asarray(q)) / (2 * eps)
            for p, q in zip(f(x + eps * t), f(x - eps * t))]


def test_jvps_match_finite_differences(x64: None) -> None:
    t = _rng.normal(size=X.shape)

    def values(a: Any) -> Any:
        return slax.linalg.eig(a, compute_left_eigenvectors=False,
                               compute_right_eigenvectors=False)

    def vectors(a: Any) -> Any:
        return slax.linalg.eig(a, enable_eigvec_derivs=True)
    for f in (values, vectors):
        _, tangents = spec.jvp(f, (X,), (t,))
        for got, want in zip(tangents, _directional(f, X, t)):
            np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)
    with pytest.raises(NotImplementedError):
        spec.jvp(slax.linalg.eig, (X,), (t,))


def test_vmap_matches_loop() -> None:
    x = X.astype(np.float32).transpose(1, 2, 0)
    mapped = spec.vmap(slax.linalg.eig, in_axes=2, out_axes=1)(x)
    for j in range(2):
        for got, want in zip(mapped, slax.linalg.eig(x[:, :, j])):
            np.testing.assert_array_equal(np.asarray(got)[:, j], np.asarray(want))


def test_errors_match_jax_class() -> None:
    for arg in (np.ones(3), np.ones((2, 3)), np.ones((3, 3), np.int32)):
        errors_alike(lambda: slax.linalg.eig(arg), lambda: jax.lax.linalg.eig(arg))


def test_geev_lowering_is_jaxs() -> None:
    x = XC.astype(np.complex64)
    fn = lambda lax: lambda a, b: (lax.linalg.eig(a), lax.linalg.eig(  # noqa: E731
        b, compute_left_eigenvectors=False))
    args = (x, X.astype(np.float32))
    ours, compiled, text = spec_and_compiled(fn(slax), *args)
    assert "lapack_cgeev_ffi" in text and "lapack_sgeev_ffi" in text
    assert_bitwise(compiled, [np.asarray(t) for t in jax.tree_util.tree_leaves(
        jax.jit(fn(jax.lax))(*args))])
    theirs = jax.jit(fn(jax.lax)).lower(*args).as_text()
    assert canonical(lower_jaxpr(spec.make_jaxpr(fn(slax))(*args), "f")) == canonical(theirs)
