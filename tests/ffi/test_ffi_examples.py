"""The Python side of JAX's examples/ffi package (jax_ffi_example.rms_norm and
cpu_examples) on spec and on JAX in this process, both calling the same compiled
handlers (tests/ffi/examples.cc, built by the session fixture): the values its tests
check, the errors of its bad calls, and rms_norm against a NumPy reference."""

from __future__ import annotations

import ctypes
from functools import partial
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import spec
from tests.support.pair import class_and_message

LIBS = (spec, jax)
# The example's target names, prefixed: test_ffi.py registers its own "rms_norm".
TARGETS = {"example_rms_norm": "RmsNorm", "example_rms_norm_fwd": "RmsNormFwd",
           "example_rms_norm_bwd": "RmsNormBwd", "example_array_attr": "ArrayAttr",
           "example_dictionary_attr": "DictionaryAttr", "example_counter": "Counter",
           "example_aliasing": "Aliasing"}


@pytest.fixture(scope="module")
def registered(ffi_libs: dict[str, Path]) -> None:
    library = ctypes.cdll.LoadLibrary(str(ffi_libs["examples"]))
    for name, symbol in TARGETS.items():
        for lib in LIBS:
            lib.ffi.register_ffi_target(name, lib.ffi.pycapsule(getattr(library, symbol)),
                                        platform="cpu")


def rms_norm_module(lib: Any) -> Any:
    """jax_ffi_example.rms_norm, on ``lib``."""
    @partial(lib.custom_vjp, nondiff_argnums=(1,))
    def rms_norm(x: Any, eps: float = 1e-5) -> Any:
        return lib.ffi.ffi_call("example_rms_norm", lib.ShapeDtypeStruct.like(x),
                                vmap_method="broadcast_all")(x, eps=np.float32(eps))

    def rms_norm_fwd(x: Any, eps: float = 1e-5) -> Any:
        y, res = lib.ffi.ffi_call(
            "example_rms_norm_fwd",
            (lib.ShapeDtypeStruct.like(x), lib.ShapeDtypeStruct(x.shape[:-1], x.dtype)),
            vmap_method="broadcast_all")(x, eps=np.float32(eps))
        return y, (res, x)

    def rms_norm_bwd(eps: float, res: Any, ct: Any) -> Any:
        res, x = res
        assert res.shape == ct.shape[:-1] and x.shape == ct.shape
        return (lib.ffi.ffi_call("example_rms_norm_bwd", lib.ShapeDtypeStruct.like(ct),
                                 vmap_method="broadcast_all")(res, x, ct),)

    rms_norm.defvjp(rms_norm_fwd, rms_norm_bwd)
    return rms_norm


def array_attr(lib: Any, num: int) -> Any:
    return lib.ffi.ffi_call("example_array_attr", lib.ShapeDtypeStruct((), np.int32))(
        array=np.arange(num, dtype=np.int32))


def dictionary_attr(lib: Any, **kwargs: Any) -> Any:
    return lib.ffi.ffi_call("example_dictionary_attr",
                            (lib.ShapeDtypeStruct((), np.int32),
                             lib.ShapeDtypeStruct((), np.int32)))(**kwargs)


def counter(lib: Any, index: Any) -> Any:
    return lib.ffi.ffi_call("example_counter", lib.ShapeDtypeStruct((), np.int32))(
        index=int(index))


def aliasing(lib: Any, x: Any) -> Any:
    return lib.ffi.ffi_call("example_aliasing", lib.ShapeDtypeStruct.like(x),
                            input_output_aliases={0: 0})(x)


def rms_norm_reference(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    return wide / np.sqrt(np.mean(wide * wide, axis=-1, keepdims=True) + eps)


def _on_both(fn: Any) -> list[Any]:
    outs = []
    for lib in LIBS:
        jax.clear_caches()  # (JAX would reuse executables across attributes that compare equal)
        outs.append(jax.tree.map(np.asarray, fn(lib)))
    return outs


def assert_same(fn: Any, rtol: float = 0.0) -> Any:
    ours, theirs = _on_both(fn)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol)
    return ours


DTYPES = [np.float32, np.complex64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_values_and_batching(registered: None, dtype: type) -> None:
    x = np.linspace(-0.5, 0.5, 15).astype(dtype)
    ours = assert_same(lambda lib: rms_norm_module(lib)(x))
    np.testing.assert_allclose(ours, rms_norm_reference(x), rtol=1e-5)
    rows = x.reshape(3, 5)
    ours = assert_same(lambda lib: lib.vmap(rms_norm_module(lib))(rows))
    np.testing.assert_allclose(ours, rms_norm_reference(rows), rtol=1e-5)


def test_rms_norm_gradient(registered: None) -> None:
    # The custom_vjp pair's reverse mode, against JAX's and central differences in float64
    # of the reference.
    x = np.linspace(-0.5, 0.5, 15, dtype=np.float32).reshape(3, 5)
    w = np.cos(np.arange(15.0)).reshape(3, 5).astype(np.float32)
    ours = assert_same(lambda lib: lib.grad(lambda v: (rms_norm_module(lib)(v) * w).sum())(x),
                       rtol=1e-6)
    assert_same(lambda lib: lib.jit(lib.grad(lambda v: rms_norm_module(lib)(v).sum()))(x),
                rtol=1e-6)
    h, x64 = 1e-6, x.astype(np.float64)
    numeric = np.zeros_like(x64)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x64)
        step[i] = h
        numeric[i] = ((rms_norm_reference(x64 + step) - rms_norm_reference(x64 - step)) * w
                      ).sum() / (2 * h)
    np.testing.assert_allclose(ours, numeric, rtol=1e-4, atol=1e-5)


def test_array_attr(registered: None) -> None:
    ours = assert_same(lambda lib: [array_attr(lib, 5), array_attr(lib, 3),
                                    lib.jit(partial(array_attr, lib), static_argnums=0)(5)])
    assert [int(v) for v in ours] == [10, 3, 10]
    with spec.disable_jit():
        assert int(array_attr(spec, 5)) == 10


def test_dictionary_attr(registered: None) -> None:
    ours = assert_same(lambda lib: [dictionary_attr(lib, secret=5),
                                    dictionary_attr(lib, secret=3, a_string="hello")])
    assert [[int(v) for v in pair] for pair in ours] == [[5, 1], [3, 2]]
    for kwargs in ({}, {"secret": "invalid"}):
        errors = [class_and_message(lambda: jax.block_until_ready(dictionary_attr(lib, **kwargs)))
                  for lib in LIBS]
        assert errors[0][0].__name__ == errors[1][0].__name__
        assert errors[0][1] == errors[1][1]


def test_counter_keeps_state_between_calls(registered: None) -> None:
    # The handler's counts live in the shared library, so each side counts its own indices.
    def run(lib: Any, base: int) -> list[int]:
        seen = [int(counter(lib, base + i)) for i in (0, 0, 0, 1, 0)]

        @lib.jit
        def counter_fun(x: Any) -> Any:
            return x, counter(lib, base + 2)

        seen += [int(counter_fun(0)[1]), int(counter_fun(0)[1]), int(counter_fun(1)[1])]
        counter_fun.clear_cache()
        return seen + [int(counter_fun(0)[1])]
    ours, theirs = run(spec, 100), run(jax, 200)
    assert ours == theirs == [0, 1, 2, 0, 3, 0, 1, 2, 3]


def test_aliasing(registered: None) -> None:
    x = np.linspace(0, 0.5, 10, dtype=np.float32)
    ours = assert_same(lambda lib: [aliasing(lib, x), aliasing(lib, np.int32(6))])
    np.testing.assert_array_equal(ours[0], x)
    assert int(ours[1]) == 6
