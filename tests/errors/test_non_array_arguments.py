"""A jitted function called with an argument that is no array: JAX's
TypeError, naming the function (its repr) and the argument's path (the
parameter, then the path inside it; ``arys[0]`` for a ``*arys`` parameter),
compared with JAX's message run live (function addresses aside)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import class_and_message


def _two(x: Any, y: Any) -> Any:
    return x


CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "first argument": lambda lib, np_: lib.jit(_two)("a", 1),
    "inside a dict": lambda lib, np_: lib.jit(_two)(1, {"k": ["a"]}),
    "with an unhashable static": lambda lib, np_: lib.jit(_two, static_argnums=1)("a", [1]),
    "hstack of strings": lambda lib, np_: np_.hstack(["a", "b"]),
    "atleast_1d": lambda lib, np_: np_.atleast_1d("a"),
    "vstack": lambda lib, np_: np_.vstack(["a"]),
}


def _message(call: Callable[[Any, Any], Any], lib: Any, np_: Any) -> tuple[type, str]:
    kind, message = class_and_message(lambda: call(lib, np_))
    return kind, re.sub(r" at 0x[0-9a-f]+>", ">", message)


@pytest.mark.parametrize("name", list(CALLS))
def test_non_array_argument_named_as_jax(name: str) -> None:
    assert _message(CALLS[name], spec, snp) == _message(CALLS[name], jax, jjnp)
