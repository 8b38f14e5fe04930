"""``device_put`` of another library's array (an object with ``__array__``
that is no NumPy value; a real JAX array is one to spec), against JAX run
live with small classes of that kind: JAX's TypeError without a dtype, its
InvalidInputException (a TypeError) with one, eagerly and under jit."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spec


class Bare:
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.arange(3)


class Typed(Bare):
    dtype = np.dtype("int32")
    shape = (3,)


CASES: dict[str, Callable[[Any], Any]] = {
    "bare": lambda jx: jx.device_put(Bare()),
    "with dtype": lambda jx: jx.device_put(Typed()),
    "in a list": lambda jx: jx.device_put([np.float32(1), Bare()]),
    "on a device": lambda jx: jx.device_put(Bare(), jx.devices()[0]),
    "under jit": lambda jx: jx.jit(lambda x: jx.device_put(Bare()))(1),
}


def _outcome(jx: Any, case: str) -> Any:
    try:
        r = CASES[case](jx)
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        return (type(e).__name__, isinstance(e, TypeError),
                re.sub(r" at 0x[0-9a-f]+", " at 0x", str(e)))
    return np.asarray(r).tolist()


@pytest.mark.parametrize("case", list(CASES))
def test_foreign_array_device_put_as_jax(case: str) -> None:
    expected = _outcome(jax, case)
    assert isinstance(expected, tuple) and expected[1]
    assert _outcome(spec, case) == expected


def test_real_jax_array_is_foreign_to_spec() -> None:
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        spec.device_put(jax.numpy.arange(3))
    assert spec.device_put(np.arange(3)).tolist() == [0, 1, 2]
