"""FFI calls and host callbacks lower to ``stablehlo.custom_call`` as JAX
0.12 emits them (compared as text: the FFI targets and the Python callbacks
are registered with a runtime only when JAX itself lowers the program), and
a program whose effect has no lowering is JAX's ValueError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from jax.experimental import io_callback as jax_io_callback

import spec
from tests.lowering.xla_run import canonical, lowered

_X = np.ones((2, 3), np.float32)


def _ffi(api: Any) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        one = api.ffi.ffi_call("my_target", api.ShapeDtypeStruct(x.shape, x.dtype))(
            x, alpha=np.float32(2.0), n=np.int32(3), name="abc", flag=True,
            arr=np.arange(3, dtype=np.int32), i=5, fl=1.5)
        two = api.ffi.ffi_call(
            "t2", (api.ShapeDtypeStruct((3,), np.int32), api.ShapeDtypeStruct((), x.dtype)),
            has_side_effect=True)(x)
        return one, two
    return fn


def _callbacks(api: Any, io_callback: Any) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        y = api.pure_callback(lambda a: a * 2, api.ShapeDtypeStruct(x.shape, x.dtype), x)
        api.debug.callback(lambda a: None, x)
        return y, io_callback(lambda a: a, api.ShapeDtypeStruct(x.shape, x.dtype), x)
    return fn


def test_ffi_call_text_matches_jax() -> None:
    ours = lowered(_ffi(spec), _X)
    theirs = jax.jit(_ffi(jax)).lower(_X).as_text()
    assert canonical(ours) == canonical(theirs)


def test_callbacks_text_matches_jax() -> None:
    ours = lowered(_callbacks(spec, spec.experimental.io_callback), _X)
    theirs = jax.jit(_callbacks(jax, jax_io_callback)).lower(_X).as_text()
    assert canonical(ours) == canonical(theirs)


def test_ordered_effect_has_no_lowering() -> None:
    """An ordered io_callback threads a token; spec specifies no lowering
    for it: JAX's ValueError naming the effect."""
    def fn(x: Any) -> Any:
        return spec.experimental.io_callback(
            lambda a: a, spec.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=True)
    with pytest.raises(ValueError, match="Cannot lower jaxpr with effects: {OrderedIO}"):
        lowered(fn, _X)
