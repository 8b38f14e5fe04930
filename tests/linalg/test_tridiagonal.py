"""``lax.linalg.tridiagonal_solve`` against JAX run live (values within a
tolerance from the conditioning, with and without row interchanges), the
residual in float64, NaN for a singular system, the JVP against finite
differences, vmap against a loop, the errors, and the gtsv lowering (JAX's
text, run by XLA bit for bit as JAX)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.support.pair import errors_alike

_rng = np.random.default_rng(24)


def _system(batch: tuple[int, ...], m: int, k: int, dtype: Any) -> list[np.ndarray]:
    def draw(shape: tuple[int, ...]) -> np.ndarray:
        x = _rng.normal(size=shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * _rng.normal(size=shape)
        return x.astype(dtype)
    dl, d, du = (draw((*batch, m)) for _ in range(3))
    return [dl, d, du, draw((*batch, m, k))]


def _dense(dl: np.ndarray, d: np.ndarray, du: np.ndarray) -> np.ndarray:
    m = d.shape[-1]
    return (d[..., :, None] * np.eye(m) + dl[..., :, None] * np.eye(m, k=-1)
            + du[..., :, None] * np.eye(m, k=1))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_matches_jax(dtype: Any) -> None:
    # Unscaled normal diagonals: many steps need gtsv's row interchange.
    args = _system((3,), 6, 2, dtype)
    ours = np.asarray(slax.linalg.tridiagonal_solve(*args))
    theirs = np.asarray(jax.lax.linalg.tridiagonal_solve(*args))
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    cond = np.linalg.cond(_dense(*args[:3]).astype(np.complex128)).max()
    scale = np.abs(theirs).max()
    np.testing.assert_allclose(ours, theirs, atol=20 * cond * np.finfo(dtype).eps * scale)


def test_residual_and_singular(x64: None) -> None:
    args = _system((2,), 7, 3, np.float64)
    x = np.asarray(slax.linalg.tridiagonal_solve(*args))
    np.testing.assert_allclose(_dense(*args[:3]) @ x, args[3], atol=1e-12)
    z = np.zeros(3)
    singular = [np.stack([z, z + 1]), np.stack([z, z + 1]), np.stack([z, z]),
                np.ones((2, 3, 1))]
    ours = np.asarray(slax.linalg.tridiagonal_solve(*singular))
    theirs = np.asarray(jax.lax.linalg.tridiagonal_solve(*singular))
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(ours[0]).all() and not np.isnan(ours[1]).any()


def test_jvp_matches_finite_differences(x64: None) -> None:
    primals = _system((2,), 5, 2, np.float64)
    tangents = _system((2,), 5, 2, np.float64)
    _, got = spec.jvp(slax.linalg.tridiagonal_solve, primals, tangents)
    eps = 1e-6
    hi = slax.linalg.tridiagonal_solve(*(p + eps * t for p, t in zip(primals, tangents)))
    lo = slax.linalg.tridiagonal_solve(*(p - eps * t for p, t in zip(primals, tangents)))
    fd = (np.asarray(hi) - np.asarray(lo)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(got), fd, atol=1e-6)


def test_vmap_matches_loop() -> None:
    dl, d, du, b = _system((3,), 4, 2, np.float32)
    only_b = spec.vmap(lambda y: slax.linalg.tridiagonal_solve(dl[0], d[0], du[0], y),
                       in_axes=2, out_axes=0)(b[0][..., None].repeat(3, -1))
    every = spec.vmap(slax.linalg.tridiagonal_solve, in_axes=(0, 0, 0, 1))(
        dl, d, du, np.moveaxis(b, 0, 1))
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(only_b)[i], np.asarray(
            slax.linalg.tridiagonal_solve(dl[0], d[0], du[0], b[0])))
        np.testing.assert_array_equal(np.asarray(every)[i], np.asarray(
            slax.linalg.tridiagonal_solve(dl[i], d[i], du[i], b[i])))


@pytest.mark.parametrize("args", [
    [np.zeros(3), np.zeros(3), np.zeros(2), np.zeros((3, 2))],
    [np.zeros(3), np.zeros(3), np.zeros(3), np.zeros((2, 2))],
    [np.zeros(3, np.int32), np.zeros(3), np.zeros(3), np.zeros((3, 2))],
    [np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)],
    [np.zeros(3, np.float16)] * 3 + [np.zeros((3, 2), np.float16)],
])
def test_errors_match_jax_class(args: list[np.ndarray]) -> None:
    args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
    errors_alike(lambda: slax.linalg.tridiagonal_solve(*args),
                 lambda: jax.lax.linalg.tridiagonal_solve(*args))


def test_gtsv_lowering_is_jaxs() -> None:
    args = _system((2,), 5, 3, np.float32)
    fn = lambda lax: lambda *a: lax.linalg.tridiagonal_solve(*a)  # noqa: E731
    _, compiled, text = spec_and_compiled(fn(slax), *args)
    assert "lapack_sgtsv_ffi" in text
    assert_bitwise(compiled, [np.asarray(jax.jit(fn(jax.lax))(*args))])
    theirs = jax.jit(fn(jax.lax)).lower(*args).as_text()
    assert canonical(lower_jaxpr(spec.make_jaxpr(fn(slax))(*args), "f")) == canonical(theirs)
