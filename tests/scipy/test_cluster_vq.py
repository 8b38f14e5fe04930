"""spec.scipy.cluster.vq.vq against jax.scipy.cluster.vq.vq run live (codes, distances,
dtypes, the staged program, errors) and against a brute-force NumPy nearest-code search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.cluster.vq as J
import numpy as np
import pytest

import spec
import spec.scipy.cluster.vq as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(0)
_OBS = _rng.normal(size=(6, 3)).astype(np.float32)
_BOOK = _rng.normal(size=(4, 3)).astype(np.float32)


def _nearest(obs: np.ndarray, book: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distance in float64, then the closest code (first on ties, as argmin)."""
    d = np.linalg.norm(obs[:, None, :].astype(np.float64) - book[None], axis=-1)
    return d.argmin(axis=1), d.min(axis=1)


@pytest.mark.parametrize("obs, book", [
    (_OBS, _BOOK),
    (_OBS[:, 0], _BOOK[:, 0]),  # 1-D: each entry a length-1 vector
    (np.arange(5), np.array([0, 3])),  # integers promote to float32
    (_OBS.astype(np.float16), _BOOK),  # mixed precision promotes to float32
], ids=["2d", "1d", "int", "mixed"])
def test_codes_and_distances_match_jax(obs: np.ndarray, book: np.ndarray) -> None:
    code, dist = S.vq(obs, book)
    code_jax, dist_jax = jax.jit(J.vq)(obs, book)
    for ours, theirs in ((code, code_jax), (dist, dist_jax)):
        assert (np.asarray(ours).dtype, np.shape(ours)) == (theirs.dtype, theirs.shape)
    np.testing.assert_array_equal(np.asarray(code), np.asarray(code_jax))
    # (float32 norms of differences of O(1) values: a few ulps apart.)
    np.testing.assert_allclose(np.asarray(dist), np.asarray(dist_jax), rtol=1e-6)
    o, b = np.asarray(obs, np.float64), np.asarray(book, np.float64)
    want_code, want_dist = _nearest(o.reshape(len(o), -1), b.reshape(len(b), -1))
    np.testing.assert_array_equal(np.asarray(code), want_code)
    np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-6)


def test_float64_and_check_finite_ignored(x64: None) -> None:
    obs, book = _OBS.astype(np.float64), _BOOK.astype(np.float64)
    code, dist = S.vq(obs, book, check_finite=False)
    assert (np.asarray(code).dtype, np.asarray(dist).dtype) == (np.int64, np.float64)
    want_code, want_dist = _nearest(obs, book)
    np.testing.assert_array_equal(np.asarray(code), want_code)
    np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-14)


def test_jaxpr_text_is_jaxs() -> None:
    assert str(spec.make_jaxpr(S.vq)(_OBS, _BOOK)) == str(jax.make_jaxpr(J.vq)(_OBS, _BOOK))


def test_vmap_over_batches_of_observations_matches_a_loop() -> None:
    batches = np.stack([_OBS, _OBS[::-1], 2.0 * _OBS])
    codes, dists = spec.vmap(S.vq, in_axes=(0, None))(batches, _BOOK)
    for i, obs in enumerate(batches):
        code, dist = S.vq(obs, _BOOK)
        np.testing.assert_array_equal(np.asarray(codes[i]), np.asarray(code))
        np.testing.assert_allclose(np.asarray(dists[i]), np.asarray(dist), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m: m.vq(_OBS, _BOOK[:, 0]),  # ranks differ
    lambda m: m.vq(_OBS[None], _BOOK[None]),  # rank 3
    lambda m: m.vq(_OBS.tolist(), _BOOK),  # a list is not an array
], ids=["rank", "ndim", "list"])
def test_bad_arguments_raise_as_jax(call: Callable[[Any], Any]) -> None:
    ours, theirs = errors_alike(lambda: call(S), lambda: call(J))
    assert str(ours) == str(theirs)
