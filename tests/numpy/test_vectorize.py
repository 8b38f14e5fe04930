"""jnp.vectorize against JAX's run live: values, shapes and jaxpr text of scalar and
gufunc-signature functions broadcast over leading axes (including size-1 axes, which JAX
keeps out of the vmap), excluded arguments, and the errors for bad signatures and shapes."""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as sjnp
from tests.support.pair import errors_alike

_A = np.arange(24, dtype=np.float32).reshape(2, 1, 3, 4) / 10
_B = np.arange(12, dtype=np.float32).reshape(3, 4) / 7


def _cases(jnp: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    outer_sum = jnp.vectorize(lambda u, v: (u[:, None] + v, u.sum()),
                              signature="(n),(m)->(n,m),()")
    scaled = jnp.vectorize(lambda x, k: x * k, excluded={1})
    return [(dot, (_A, _B)), (dot, (_B[0], _A)), (outer_sum, (_A, _B[:, :2])),
            (scaled, (_A, 3.0)), (jnp.vectorize(jnp.sin), (_B,))]


@pytest.mark.parametrize("index", range(5))
def test_values_and_jaxprs_match_jax(index: int) -> None:
    ours_fn, args = _cases(sjnp)[index]
    theirs_fn, _ = _cases(jjnp)[index]
    ours, theirs = ours_fn(*args), theirs_fn(*args)
    for o, t in zip(spec.tree.leaves(ours), jax.tree.leaves(theirs)):
        assert o.shape == t.shape and o.dtype == t.dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
    if index != 3:  # (the excluded scalar is a Python float captured as a literal)
        assert str(spec.make_jaxpr(ours_fn)(*args)) == str(jax.make_jaxpr(theirs_fn)(*args))


@pytest.mark.parametrize("signature, args", [
    ("(n)->", (_B,)), ("(n,m),(m)->()", (_B[0], _B[0])), ("(n),(n)->()", (_A, _B[:, :3])),
    ("(n),(n)->()", (_A[:, :, :2], _B)),
    ("(n)->(n,n)", (_B,)),
])
def test_errors_match_jax(signature: str, args: tuple[Any, ...]) -> None:
    def first_row(*xs: Any) -> Any:
        return xs[0]
    ours, theirs = errors_alike(
        lambda: sjnp.vectorize(first_row, signature=signature)(*args),
        lambda: jjnp.vectorize(first_row, signature=signature)(*args))
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("signature, shapes", [
    ("(n),(n)->(n)", [(3,), (5, 3)]),        # loop ranks 0 and 1
    (None, [(4,), (2, 4)]),                  # elementwise: ranks 1 and 2
    ("(n),(n)->()", [(), (5, 3)]),           # a rank-0 operand is exempt
    ("(n),(n)->()", [(2, 3), (5, 1, 3)]),
])
@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_rank_promotion_check_matches_jax(signature: str | None, shapes: list[tuple[int, ...]],
                                          mode: str) -> None:
    args = [np.ones(s, np.float32) for s in shapes]

    def outcome(lib: Any, jnp: Any) -> tuple[str, list[str]]:
        fn = jnp.vectorize(lambda x, y: x + y, signature=signature)
        with lib.numpy_rank_promotion(mode), warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                fn(*args)
            except ValueError as e:
                return "raised", [str(e)]
        return "ran", [str(w.message) for w in record if "vectorize" in str(w.message)]

    assert outcome(spec, sjnp) == outcome(jax, jjnp)
