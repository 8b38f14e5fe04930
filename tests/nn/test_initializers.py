"""spec.nn.initializers against jax.nn.initializers, run live: the same key
gives the same values (within a few float32 ULPs where erf_inv or sqrt
round differently from XLA's kernels), dtypes and shapes, and the same errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spec

# name -> (initializer factory of the nn.initializers module, shape)
CASES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "zeros": (lambda I: I.zeros, (2, 3)),
    "ones": (lambda I: I.ones, (3,)),
    "constant": (lambda I: I.constant(-7), (2, 2)),
    "uniform": (lambda I: I.uniform(10.0), (3, 4)),
    "normal": (lambda I: I.normal(5.0), (3, 4)),
    "truncated_normal": (lambda I: I.truncated_normal(5.0), (3, 4)),
    "glorot_uniform": (lambda I: I.glorot_uniform(), (4, 5)),
    "glorot_normal": (lambda I: I.glorot_normal(), (4, 5)),
    "lecun_uniform": (lambda I: I.lecun_uniform(), (4, 5)),
    "lecun_normal": (lambda I: I.lecun_normal(), (4, 5)),
    "he_uniform": (lambda I: I.he_uniform(), (3, 3, 4, 5)),
    "he_normal": (lambda I: I.he_normal(), (3, 3, 4, 5)),
    "variance_normal": (lambda I: I.variance_scaling(2.0, "fan_geo_avg", "normal"), (4, 6)),
    "variance_batch": (lambda I: I.variance_scaling(1.0, "fan_out", "uniform", in_axis=1,
                                                    out_axis=2, batch_axis=0), (2, 3, 4)),
    "orthogonal": (lambda I: I.orthogonal(), (3, 5)),
    "orthogonal_axis0": (lambda I: I.orthogonal(2.0, column_axis=0), (4, 2, 3)),
    "delta_orthogonal": (lambda I: I.delta_orthogonal(), (3, 3, 3)),
}


def _draw(lib: Any, name: str, dtype: Any = None) -> np.ndarray:
    make, shape = CASES[name]
    init = make(lib.nn.initializers)
    out = init(lib.random.key(42), shape) if dtype is None else \
        init(lib.random.key(42), shape, dtype)
    return np.asarray(out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_key_same_values_as_jax(name: str) -> None:
    ours, theirs = _draw(spec, name), _draw(jax, name)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if name.startswith("orthogonal") or name == "delta_orthogonal":
        # A QR factorisation: LAPACK's and spec's agree to rounding.
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    elif "truncated" in name or name.endswith("_normal") and name != "variance_normal":
        # The inverse error function near the truncation points amplifies
        # its kernel's last-bit differences (a few float32 ULPs).
        np.testing.assert_allclose(ours, theirs, rtol=4e-6, atol=1e-7)
    else:
        np.testing.assert_array_max_ulp(ours, theirs, maxulp=2)


@pytest.mark.parametrize("name", ["normal", "glorot_uniform", "he_normal"])
def test_complex_and_float16_dtypes_as_jax(name: str) -> None:
    for dtype in (np.float16, np.complex64):
        ours, theirs = _draw(spec, name, dtype), _draw(jax, name, dtype)
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("bad", [
    lambda I: I.glorot_uniform()(KEY[0], (3,)),
    lambda I: I.orthogonal()(KEY[0], (3,)),
    lambda I: I.delta_orthogonal()(KEY[0], (3, 3)),
    lambda I: I.delta_orthogonal()(KEY[0], (3, 5, 4)),
    lambda I: I.variance_scaling(1.0, "fan_bogus", "normal")(KEY[0], (2, 2)),
    lambda I: I.variance_scaling(1.0, "fan_in", "bogus")(KEY[0], (2, 2)),
], ids=["rank1", "orthogonal_rank1", "delta_rank2", "delta_fans", "mode", "distribution"])
def test_errors_as_jax(bad: Callable[[Any], Any]) -> None:
    messages = []
    for lib in (jax, spec):
        KEY[0] = lib.random.key(0)
        with pytest.raises(ValueError) as info:
            bad(lib.nn.initializers)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


KEY: list[Any] = [None]
