"""FFI calls and host callbacks lower to ``stablehlo.custom_call`` as JAX
0.12 emits them (compared as text: the FFI targets and the Python callbacks
are registered with a runtime only when JAX itself lowers the program), and
a program whose effect has no lowering is JAX's ValueError."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from jax.experimental import io_callback as jax_io_callback

import spec
from spec._src.core.effects import Effect
from spec._src.core.interpreter import Jaxpr
from spec._src.lowering.emitter import lower_jaxpr
from tests.ffi.build import build_all, compiler
from tests.lowering.xla_run import bits, canonical, lowered, spec_and_compiled

_X = np.ones((2, 3), np.float32)


def _ffi(api: Any) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        one = api.ffi.ffi_call("my_target", api.ShapeDtypeStruct(x.shape, x.dtype))(
            x, alpha=np.float32(2.0), n=np.int32(3), name="abc", flag=True,
            arr=np.arange(3, dtype=np.int32), i=5, fl=1.5)
        two = api.ffi.ffi_call(
            "t2", (api.ShapeDtypeStruct((3,), np.int32), api.ShapeDtypeStruct((), x.dtype)),
            has_side_effect=True)(x)
        aliased = api.ffi.ffi_call(
            "t3", (api.ShapeDtypeStruct((3,), np.int32), api.ShapeDtypeStruct(x.shape, x.dtype)),
            input_output_aliases={0: 1})(x)
        return one, two, aliased
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


def _ordered(api: Any, io_callback: Any, with_print: bool) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        y = io_callback(lambda a: a, api.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=True)
        if with_print:
            api.debug.print("x={}", x, ordered=True)
        return y * 2.0
    return fn


def test_ordered_effect_threads_a_token_as_jax() -> None:
    """A token per ordered effect enters and leaves @main; each ordered
    callback takes its effect's token and gives the next."""
    x = _X[0]
    ours = lowered(_ordered(spec, spec.experimental.io_callback, False), x)
    theirs = jax.jit(_ordered(jax, jax_io_callback, False)).lower(x).as_text()
    assert canonical(ours) == canonical(theirs)
    # (JAX orders the tokens of several effects by set iteration: compare counts.)
    both = lowered(_ordered(spec, spec.experimental.io_callback, True), x)
    jax_both = jax.jit(_ordered(jax, jax_io_callback, True)).lower(x).as_text()
    for text in (both, jax_both):
        assert text.count("!stablehlo.token {jax.token = true}") == 4


class _Unlowerable(Effect):
    def __str__(self) -> str:
        return "Unlowerable"


def test_effect_without_lowering_is_value_error() -> None:
    """JAX's ValueError, naming the effect, before anything is emitted."""
    j = spec.make_jaxpr(lambda v: v + 1.0)(_X)
    tagged = Jaxpr(j.constvars, j.invars, j.outvars, j.eqns, frozenset({_Unlowerable()}),
                   j.consts)
    with pytest.raises(ValueError, match="Cannot lower jaxpr with effects: {Unlowerable}"):
        lower_jaxpr(tagged, "f")


@pytest.fixture(scope="module")
def rms_norm_target() -> str:
    """The FFI page's rms_norm handler, built with the machine's compiler and
    registered (under a name of its own) with spec and with XLA."""
    if compiler() is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build the FFI handler")
    lib = ctypes.cdll.LoadLibrary(str(build_all()["rms_norm"]))
    name = "lowering_rms_norm"
    for api in (spec, jax):
        api.ffi.register_ffi_target(name, api.ffi.pycapsule(lib.RmsNorm), platform="cpu")
    return name


def test_ffi_call_module_runs_the_target(rms_norm_target: str) -> None:
    """spec's custom call, compiled by jaxlib, calls the registered handler
    with its attribute: spec's evaluation and JAX's bits."""
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)

    def fn(api: Any) -> Callable[..., Any]:
        return lambda v: api.ffi.ffi_call(
            rms_norm_target, api.ShapeDtypeStruct(v.shape, v.dtype))(v, eps=np.float32(1e-5))
    ours, compiled, _ = spec_and_compiled(fn(spec), x)
    assert bits(ours[0]) == bits(compiled[0]) == bits(np.asarray(jax.jit(fn(jax))(x)))
