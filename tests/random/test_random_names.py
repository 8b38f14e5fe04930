"""``jax.random.key_dtype``, ``Key`` and ``random_gamma_p`` against JAX run live."""

from __future__ import annotations

import jax
import numpy as np

import spec
import spec.random as srandom
from tests.support.pair import errors_alike


def test_key_dtype_and_key_type() -> None:
    for impl in (None, "threefry2x32"):
        assert str(srandom.key_dtype(impl)) == str(jax.random.key_dtype(impl))
    assert srandom.key_dtype() == srandom.key(0).dtype
    for bad in ("nope", 3):
        errors_alike(lambda: srandom.key_dtype(bad), lambda: jax.random.key_dtype(bad))
    assert srandom.Key.__name__ == jax.random.Key.__name__ == "Key"
    assert srandom.Key.__supertype__ is spec.Array


def test_random_gamma_p_is_jaxs_primitive() -> None:
    a = np.array([0.5, 2.0, 7.0], np.float32)
    fn = lambda r: lambda k, a: r.random_gamma_p.bind(k, a, log_space=False)  # noqa: E731
    ours = spec.make_jaxpr(fn(srandom))(srandom.split(srandom.key(0), 3), a)
    theirs = jax.make_jaxpr(fn(jax.random))(jax.random.split(jax.random.key(0), 3), a)
    assert str(ours) == str(theirs)
    assert srandom.random_gamma_p.name == jax.random.random_gamma_p.name
    ours_v = fn(srandom)(srandom.split(srandom.key(1), 3), a)
    theirs_v = jax.jit(fn(jax.random))(jax.random.split(jax.random.key(1), 3), a)
    np.testing.assert_allclose(np.asarray(ours_v), np.asarray(theirs_v), rtol=1e-5)
