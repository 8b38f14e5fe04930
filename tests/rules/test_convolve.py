"""jnp.convolve / jnp.correlate against JAX: values, dtypes, jaxpr text, errors."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp

CASES = [
    (np.array([1, 2, 3], np.int32), np.array([0, 1, 2], np.int32)),
    (np.array([1.0, 2, 3, 4], np.float32), np.array([0, 1, 0.5], np.float32)),
    (np.array([1.0, 2], np.float32), np.array([0, 1, 0.5, 3], np.float32)),
    (np.array([1.0, 2, 3, 4], np.float32), np.array([0, 1, 0.5j], np.complex64)),
]


@pytest.mark.parametrize("op", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_types(op: str, mode: str, case: int) -> None:
    a, v = CASES[case]
    want = getattr(jnp, op)(jnp.asarray(a), jnp.asarray(v), mode=mode)
    got = getattr(snp, op)(snp.asarray(a), snp.asarray(v), mode=mode)
    assert str(spec.typeof(got)) == str(jax.typeof(want))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("op", ["convolve", "correlate"])
def test_jaxpr_text(op: str) -> None:
    def prog(j: Any, n: Any) -> str:
        return str(j.make_jaxpr(lambda a, v: getattr(n, op)(a, v, mode="same"))(
            np.ones(5, np.float32), np.ones(3, np.float32)))
    assert prog(spec, snp) == prog(jax, jnp)


@pytest.mark.parametrize("args", [(np.ones((2, 2)), np.ones(2)), (np.ones(0), np.ones(2))])
def test_bad_input_raises_like_jax(args: Any) -> None:
    with pytest.raises(ValueError):
        jnp.convolve(*args)
    with pytest.raises(ValueError):
        snp.convolve(*args)
