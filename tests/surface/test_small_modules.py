"""jax.typing and jax.flatten_util against real JAX run live."""

from __future__ import annotations

import jax
import jax.flatten_util
import numpy as np

import spec
import spec.flatten_util
import spec.typing


def _tree(lib: object) -> object:
    jnp = lib.numpy  # type: ignore[attr-defined]
    return {"w": jnp.arange(6.0).reshape(2, 3), "b": (jnp.arange(3, dtype=jnp.int32),
                                                     jnp.float32(2.5))}


def test_typing_names() -> None:
    assert {"ArrayLike", "DTypeLike"} <= set(dir(spec.typing))


def test_ravel_pytree_matches_jax() -> None:
    flat_s, unravel_s = spec.flatten_util.ravel_pytree(_tree(spec))
    flat_j, unravel_j = jax.flatten_util.ravel_pytree(_tree(jax))
    assert flat_s.dtype == flat_j.dtype
    np.testing.assert_array_equal(np.asarray(flat_s), np.asarray(flat_j))
    back_s = spec.tree_util.tree_leaves(unravel_s(flat_s * 2))
    back_j = jax.tree_util.tree_leaves(unravel_j(flat_j * 2))
    for a, b in zip(back_s, back_j, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
