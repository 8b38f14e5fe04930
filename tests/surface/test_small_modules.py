"""jax.typing, jax.flatten_util and jax.profiler against real JAX run live."""

from __future__ import annotations

import jax
import jax.flatten_util
import jax.profiler
import numpy as np
import pytest

import spec
import spec.flatten_util
import spec.profiler
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


def test_profiler_context_managers_and_errors_match_jax(tmp_path: object) -> None:
    for lib in (jax.profiler, spec.profiler):
        with lib.TraceAnnotation("region", extra=1), lib.StepTraceAnnotation("s", step_num=3):
            pass
        assert lib.annotate_function(lambda x: x + 1, name="inc")(2) == 3
        with pytest.raises(RuntimeError, match="No profile started"):
            lib.stop_trace()
    spec.profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already been started"):
        spec.profiler.start_trace(str(tmp_path))
    spec.profiler.stop_trace()
    with spec.profiler.trace(str(tmp_path)):
        pass
