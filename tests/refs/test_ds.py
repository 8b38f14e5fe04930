"""``jax.ds(start, size, stride)`` indexes refs as in JAX 0.12: the same
values, jaxprs, errors and reprs (twins run live)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spec


def _outcome(lib: Any, build: Callable[[Any], Any]) -> str:
    try:
        return repr(build(lib))
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        return f"{type(e).__name__}: {e}"


def _read(*index: Any) -> Callable[[Any], Any]:
    return lambda lib: np.asarray(lib.new_ref(lib.numpy.arange(8.))[lib.ds(*index)])


def _write_and_read(lib: Any) -> Callable[..., Any]:
    jnp = lib.numpy

    def f(x: Any, i: Any) -> Any:
        r = lib.new_ref(x)
        r[lib.ds(i, 2)] = jnp.ones(2)
        return r[lib.ds(1, 2)], r[...]
    return f


CASES: dict[str, Callable[[Any], Any]] = {
    "static": _read(2, 3),
    "size only": _read(3),
    "stride": _read(1, 3, 2),
    "out of bounds": _read(6, 3),
    "negative start": _read(-2, 2),
    "repr": lambda lib: (lib.ds(2, 3), lib.ds(4)),
    "jaxpr": lambda lib: lib.make_jaxpr(_write_and_read(lib))(lib.numpy.arange(4.), 1),
    # A dynamic start is clamped into range, as XLA's dynamic slices are.
    "jit clamped": lambda lib: [np.asarray(v) for v in lib.jit(_write_and_read(lib))(
        lib.numpy.arange(4.), 3)],
    "2-d": lambda lib: lib.make_jaxpr(lambda x: lib.new_ref(x)[lib.ds(1, 2), 0])(
        lib.numpy.ones((4, 3))),
    "grad": lambda lib: np.asarray(lib.grad(
        lambda x: lib.new_ref(x)[lib.ds(1, 2)].sum())(lib.numpy.ones(4))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ds_as_jax(name: str) -> None:
    assert _outcome(spec, CASES[name]) == _outcome(jax, CASES[name])


def test_eager_dynamic_start_reads_as_jit_does() -> None:
    # (JAX 0.12 fails to evaluate this eagerly; its jit gives the value.)
    def read(lib: Any) -> Any:
        return lib.new_ref(lib.numpy.arange(8.))[lib.ds(lib.numpy.int32(6), 3)]
    np.testing.assert_array_equal(np.asarray(read(spec)), np.asarray(jax.jit(
        lambda: read(jax))()))
