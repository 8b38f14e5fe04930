"""The diagonal and triangle builders (eye, identity, tri, tril, triu,
diag) stage JAX's program with and without ``jax_enable_x64`` (their index
arithmetic is in the default integer type's width, int64 under x64), jaxpr
text and values compared with JAX run in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

CASES: dict[str, Callable[[Any], Any]] = {
    "eye k": lambda np_: np_.eye(3, k=1),
    "eye bool": lambda np_: np_.eye(3, dtype=bool),
    "eye huge k": lambda np_: np_.eye(3, k=2**40),
    "identity": lambda np_: np_.identity(2),
    "tri": lambda np_: np_.tri(3, k=-1),
    "tril": lambda np_: np_.tril(np.ones((3, 3), np.float32)),
    "triu": lambda np_: np_.triu(np.ones((3, 4), np.float32), 1),
    "diag": lambda np_: np_.diag(np.ones(3, np.float32)),
}


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request: pytest.FixtureRequest) -> Iterator[bool]:
    before = (spec.config.jax_enable_x64, jax.config.jax_enable_x64)
    spec.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        spec.config.update("jax_enable_x64", before[0])
        jax.config.update("jax_enable_x64", before[1])


@pytest.mark.parametrize("name", list(CASES))
def test_staged_as_jax(x64: bool, name: str) -> None:
    f = CASES[name]
    assert str(spec.make_jaxpr(lambda: f(snp))()) == str(jax.make_jaxpr(lambda: f(jnp))())
    ours, theirs = np.asarray(f(snp)), np.asarray(f(jnp))
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
