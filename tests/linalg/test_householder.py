"""``lax.linalg.householder_product`` against JAX run live on reflectors
from LAPACK's ``geqrf`` (through SciPy): Q within rounding, its orthonormal columns, vmap
against a loop, the errors, and the orgqr lowering (JAX's text, run by XLA
bit for bit as JAX)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
import scipy.linalg

import spec
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.support.pair import errors_alike

_rng = np.random.default_rng(25)


def _reflectors(shape: tuple[int, ...], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    x = _rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.normal(size=shape)
    # LAPACK's geqrf through SciPy, one matrix at a time.
    flat = x.astype(dtype).reshape(-1, *shape[-2:])
    raw = [scipy.linalg.qr(m, mode="raw")[0] for m in flat]
    a = np.stack([r[0] for r in raw]).reshape(shape).astype(dtype)
    taus = np.stack([r[1] for r in raw]).reshape(*shape[:-2], -1).astype(dtype)
    return a, taus


@pytest.mark.parametrize("shape,dtype", [((2, 5, 3), np.float32), ((4, 4), np.complex64)])
def test_matches_jax_and_is_orthonormal(shape: tuple[int, ...], dtype: Any) -> None:
    a, taus = _reflectors(shape, dtype)
    for t in (taus, taus[..., :2]):
        ours = np.asarray(slax.linalg.householder_product(a, t))
        theirs = np.asarray(jax.lax.linalg.householder_product(a, t))
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
        np.testing.assert_allclose(ours, theirs, atol=2e-6)
    n = shape[-1]
    q = np.asarray(slax.linalg.householder_product(a, taus))
    gram = np.conj(np.swapaxes(q, -1, -2)) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(n), gram.shape), atol=2e-6)


def test_vmap_matches_loop() -> None:
    a, taus = _reflectors((3, 4, 3), np.float32)
    mapped = spec.vmap(slax.linalg.householder_product, in_axes=(0, 0), out_axes=2)(a, taus)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(mapped)[:, :, i], np.asarray(
            slax.linalg.householder_product(a[i], taus[i])))


@pytest.mark.parametrize("args", [
    (np.zeros((3, 4), np.float32), np.zeros(2, np.float32)),
    (np.zeros((4, 3), np.float32), np.zeros(4, np.float32)),
    (np.zeros((4, 3), np.float32), np.zeros((2, 2), np.float32)),
    (np.zeros((4, 3), np.int32), np.zeros(2, np.int32)),
    (np.zeros((4, 3), np.float32), np.zeros(2, np.complex64)),
])
def test_errors_match_jax_class(args: tuple[np.ndarray, np.ndarray]) -> None:
    errors_alike(lambda: slax.linalg.householder_product(*args),
                 lambda: jax.lax.linalg.householder_product(*args))
    with pytest.raises(NotImplementedError):
        spec.jvp(lambda x: slax.linalg.householder_product(x, np.zeros(2, np.float32)),
                 (np.zeros((4, 3), np.float32),), (np.zeros((4, 3), np.float32),))


def test_orgqr_lowering_is_jaxs() -> None:
    args = (*_reflectors((2, 4, 3), np.float32), *_reflectors((3, 3), np.complex64))
    fn = lambda lax: lambda a, t, c, u: (lax.linalg.householder_product(a, t),  # noqa: E731
                                         lax.linalg.householder_product(c, u))
    _, compiled, text = spec_and_compiled(fn(slax), *args)
    assert "lapack_sorgqr_ffi" in text and "lapack_cungqr_ffi" in text
    assert_bitwise(compiled, [np.asarray(t) for t in jax.jit(fn(jax.lax))(*args)])
    theirs = jax.jit(fn(jax.lax)).lower(*args).as_text()
    assert canonical(lower_jaxpr(spec.make_jaxpr(fn(slax))(*args), "f")) == canonical(theirs)
