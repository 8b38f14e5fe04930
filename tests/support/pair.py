"""One program run on spec and on real JAX in this process (the ref tests
and others): ``fn(lib, numpy_module)`` on each library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import spec
import spec.numpy as snp

LIBS = [(spec, snp), (jax, jnp)]


def both(fn: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    """``fn(lib, numpy_module)`` on spec, then on JAX."""
    return fn(spec, snp), fn(jax, jnp)


def same(fn: Callable[[Any, Any], Any]) -> Any:
    ours, theirs = both(fn)
    assert ours == theirs, f"\nspec:\n{ours}\njax:\n{theirs}"
    return ours


def error_of(fn: Callable[[], Any]) -> BaseException:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the error is the result)
        return e
    raise AssertionError("no error raised")


def class_and_message(fn: Callable[[], Any]) -> tuple[type, str]:
    """The class and message of what ``fn()`` raises."""
    e = error_of(fn)
    return type(e), str(e)


def errors_alike(ours: Callable[[], Any], theirs: Callable[[], Any]
                 ) -> tuple[BaseException, BaseException]:
    """What ``ours()`` (spec) raises, which must be of the class of what
    ``theirs()`` (JAX) raises, and JAX's error."""
    expected = error_of(theirs)
    return raises_as(ours, expected), expected


def raises_as(ours: Callable[[], Any], theirs: BaseException) -> BaseException:
    """What ``ours()`` (spec) raises, which must be of the class of
    ``theirs``, an error JAX has raised (for tests that run JAX once and go
    on to compare results when it does not raise)."""
    with pytest.raises(type(theirs)) as got:
        ours()
    return got.value
