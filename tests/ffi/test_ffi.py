"""``spec.ffi`` against ``jax.ffi`` in this process, both running the same
compiled handlers (the FFI page's rms_norm library and tests/ffi/handlers.cc,
built by the session fixture): values, jaxpr text, the errors of bad calls
and failing handlers, vmap methods, layouts and aliases, side effects, the
forward/backward FFI pair under custom_vjp, Python targets and sharding."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import class_and_message

LIBS = [(spec, snp), (jax, jnp)]
TARGETS = {"rms_norm": ("rms_norm", "RmsNorm"), "rms_norm_fwd": ("rms_norm", "RmsNormFwd"),
           "rms_norm_bwd": ("rms_norm", "RmsNormBwd"), "AttrEcho": ("handlers", "AttrEcho"),
           "Fail": ("handlers", "Fail"), "AddOne": ("handlers", "AddOne"),
           "Count": ("handlers", "Count"), "ShapeOf": ("handlers", "ShapeOf"),
           "Aliasing": ("handlers", "Aliasing"), "DictAttrs": ("handlers", "DictAttrs")}


@pytest.fixture(scope="module")
def libs(ffi_libs: dict[str, Path]) -> dict[str, ctypes.CDLL]:
    """The handler libraries, loaded once; every target registered on both
    libraries with the page's call."""
    loaded = {name: ctypes.cdll.LoadLibrary(str(path)) for name, path in ffi_libs.items()}
    for target, (lib, symbol) in TARGETS.items():
        for lib_mod, _ in LIBS:
            lib_mod.ffi.register_ffi_target(
                target, lib_mod.ffi.pycapsule(getattr(loaded[lib], symbol)), platform="cpu")
    legacy = loaded["handlers"].LegacyAdd
    for lib_mod, _ in LIBS:
        lib_mod.ffi.register_ffi_target("legacy_add", lib_mod.ffi.pycapsule(legacy),
                                        api_version=0)
    return loaded


def both(fn: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    return fn(spec, snp), _on_jax(fn)


def _on_jax(fn: Callable[[Any, Any], Any]) -> Any:
    # JAX caches compiled calls on attributes that compare equal (np.int32(3)
    # == 3), so a call could reuse another's executable: each starts afresh.
    jax.clear_caches()
    return fn(jax, jnp)


def same_values(fn: Callable[[Any, Any], Any], rtol: float = 0.0) -> None:
    ours, theirs = both(fn)
    ours_l = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs_l = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    assert type(ours) is type(theirs) or not isinstance(ours, (list, tuple))
    assert len(ours_l) == len(theirs_l)
    for a, b in zip(ours_l, theirs_l):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol)


def same_error(fn: Callable[[Any, Any], Any]) -> tuple[type, str]:
    ours = class_and_message(lambda: fn(spec, snp))
    theirs = class_and_message(lambda: _on_jax(fn))
    assert ours[0].__name__ == theirs[0].__name__ and ours[1] == theirs[1], (ours, theirs)
    return ours


def same_text(fn: Callable[[Any, Any], Any]) -> None:
    ours, theirs = both(fn)
    assert str(ours) == str(theirs), f"\nspec:\n{ours}\njax:\n{theirs}"


X = np.linspace(-0.5, 0.5, 32, dtype=np.float32).reshape(8, 4)
EPS = np.float32(1e-5)


def rms_norm(lib: Any, x: Any, **kw: Any) -> Any:
    return lib.ffi.ffi_call("rms_norm", lib.ShapeDtypeStruct(x.shape, x.dtype), **kw)(x, eps=EPS)


def rms_norm_reference(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


# ------------------------------------------------------------------ basics


def test_struct_layouts_match_the_headers(libs: dict[str, ctypes.CDLL]) -> None:
    from spec._src.lax import ffi_frame as F
    size = libs["handlers"].StructSize
    size.restype = ctypes.c_int64
    ours = [F.CALL_FRAME_SIZE, F.API_SIZE, F.struct_size(F.Buffer, "dims"),
            F.struct_size(F.Args, "args"), F.struct_size(F.Attrs, "attrs"), F.METADATA_SIZE,
            F.METADATA_EXTENSION_SIZE, F.struct_size(F.ErrorCreateArgs, "errc"),
            ctypes.sizeof(F.Scalar), ctypes.sizeof(F.FfiArray)]
    assert ours == [size(i) for i in range(len(ours))]


def test_rms_norm_values_eager_and_jit(libs: dict[str, ctypes.CDLL]) -> None:
    same_values(lambda lib, _: rms_norm(lib, X))
    same_values(lambda lib, _: lib.jit(lambda x: rms_norm(lib, x))(X))
    np.testing.assert_allclose(np.asarray(rms_norm(spec, X)), rms_norm_reference(X), rtol=1e-5)


def test_jaxpr_text(libs: dict[str, ctypes.CDLL]) -> None:
    same_text(lambda lib, _: lib.make_jaxpr(lambda x: rms_norm(lib, x))(X))

    def many(lib: Any, np_: Any) -> Any:
        def f(x: Any) -> Any:
            call = lib.ffi.ffi_call(
                "AddOne", (lib.ShapeDtypeStruct(x.shape, x.dtype),
                           lib.ShapeDtypeStruct((2,), np.int32)),
                has_side_effect=True, vmap_method="expand_dims",
                input_output_aliases={0: 0}, input_layouts=[(0, 1)], output_layouts=[(0, 1), None])
            return call(x, s="text", d={"a": 1, "b": np.float32(2)}, arr=np.arange(3), i=3, f=0.5)
        return lib.make_jaxpr(f)(X)
    same_text(many)


def test_results_single_tuple_list(libs: dict[str, ctypes.CDLL]) -> None:
    def shapes(lib: Any, np_: Any) -> Any:
        s = lib.ShapeDtypeStruct(X.shape, X.dtype)
        one = lib.ffi.ffi_call("AddOne", s)(X)
        tup = lib.ffi.ffi_call("AddOne", (s,))(X)
        lst = lib.ffi.ffi_call("AddOne", [s])(X)
        return isinstance(one, (tuple, list)), type(tup), type(lst), len(tup), len(lst)
    ours, theirs = both(shapes)
    assert ours == theirs


def test_api_surface() -> None:
    assert spec.ffi.include_dir() == jax.ffi.include_dir()
    assert type(spec.ffi.pycapsule(ctypes.cast(ctypes.pythonapi.Py_IncRef,
                                                ctypes.c_void_p).value)).__name__ == "PyCapsule"
    same_error(lambda lib, _: lib.ffi.register_ffi_type_id("t", None))


# ------------------------------------------------------------- attributes


ATTRS = dict(i=3, f=2.5, s="hello", arr=np.array([1, 2, 3]), d={"a": 7}, b=True)


def echo(lib: Any, **changes: Any) -> Any:
    out = lib.ShapeDtypeStruct((6,), np.float64)
    return lib.ffi.ffi_call("AttrEcho", out)(**dict(ATTRS, **changes))


def test_attribute_encoding(libs: dict[str, ctypes.CDLL]) -> None:
    same_values(lambda lib, _: echo(lib))
    same_values(lambda lib, _: echo(lib, b=np.bool_(False), s=b"bytes", f=np.float64(-1.5)))
    same_values(lambda lib, _: echo(lib, arr=np.array([[1, 2], [3, 4]])))
    same_values(lambda lib, _: echo(lib, d={"a": np.int64(-2), "z": "extra"}))


@pytest.mark.parametrize("changes", [
    dict(i=np.int32(3)), dict(f=np.float32(2.5)), dict(arr=(1, 2, 3)), dict(arr=[1, 2]),
    dict(arr=np.array([1, 2], np.int32)), dict(s=None), dict(s=object()), dict(d={"a": 7.0}),
    dict(d={"a": [1]}), dict(extra=1), dict(b=1)])
def test_attributes_of_the_wrong_type(libs: dict[str, ctypes.CDLL], changes: dict[str, Any]
                                      ) -> None:
    same_error(lambda lib, _: np.asarray(echo(lib, **changes)))


def test_missing_attribute(libs: dict[str, ctypes.CDLL]) -> None:
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "rms_norm", lib.ShapeDtypeStruct(X.shape, X.dtype))(X)))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "rms_norm", lib.ShapeDtypeStruct(X.shape, X.dtype))(X, eps=1e-5)))


# ----------------------------------------------------------------- errors


def test_unregistered_target_fails_when_called_not_when_traced(libs: dict[str, ctypes.CDLL]
                                                                ) -> None:
    def call(lib: Any) -> Any:
        return lib.ffi.ffi_call("no_such_target", lib.ShapeDtypeStruct(X.shape, X.dtype))
    same_error(lambda lib, _: np.asarray(call(lib)(X)))
    same_error(lambda lib, _: np.asarray(lib.jit(call(lib))(X)))
    same_text(lambda lib, _: lib.make_jaxpr(call(lib))(X))


def test_handler_errors_surface_as_jax_does(libs: dict[str, ctypes.CDLL]) -> None:
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "Fail", lib.ShapeDtypeStruct(X.shape, X.dtype))(X, message="it broke")))
    # The handler's own check, the binding's decoding of a wrong result dtype,
    # and wrong numbers of operands and results.
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "AttrEcho", lib.ShapeDtypeStruct((5,), np.float64))(**ATTRS)))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "AttrEcho", lib.ShapeDtypeStruct((6,), np.float32))(**ATTRS)))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype))(X, X)))
    s = lambda lib: lib.ShapeDtypeStruct(X.shape, X.dtype)  # noqa: E731
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call("AddOne", (s(lib), s(lib)))(X)[0]))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "rms_norm", lib.ShapeDtypeStruct((), np.float32))(np.float32(1), eps=EPS)))


@pytest.mark.parametrize("case", [
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 vmap_method="bogus"),
    lambda lib: lib.ffi.ffi_call("AddOne", 3),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 legacy_backend_config="x"),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 input_output_aliases={0: 1})(X),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 input_output_aliases={1: 0})(X),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct((4, 8), X.dtype),
                                 input_output_aliases={0: 0})(X),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 input_output_aliases={0: 0}, input_layouts=[(1, 0)])(X),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                 input_layouts=[None, None])(X),
    lambda lib: lib.ffi.ffi_call("AddOne", (lib.ShapeDtypeStruct(X.shape, X.dtype),),
                                 output_layouts=[None, None])(X),
    lambda lib: lib.ffi.ffi_call("AddOne", lib.ShapeDtypeStruct(X.shape, X.dtype))(X, a=[1]),
])
def test_bad_calls(libs: dict[str, ctypes.CDLL], case: Callable[[Any], Any]) -> None:
    same_error(lambda lib, _: case(lib))


def test_registration_errors(libs: dict[str, ctypes.CDLL]) -> None:
    h = libs["handlers"]
    same_error(lambda lib, _: lib.ffi.register_ffi_target(
        "AddOne", lib.ffi.pycapsule(h.Fail), platform="cpu"))
    same_error(lambda lib, _: lib.ffi.register_ffi_target(
        "no_execute", {"exec": lib.ffi.pycapsule(h.AddOne)}))
    same_error(lambda lib, _: lib.ffi.register_ffi_target("not_a_capsule", 3))
    same_error(lambda lib, _: lib.ffi.register_ffi_target(
        "v2", lib.ffi.pycapsule(h.AddOne), api_version=2))
    for lib, _ in LIBS:  # the same handler again is accepted; a bundle dict too
        lib.ffi.register_ffi_target("AddOne", lib.ffi.pycapsule(h.AddOne), platform="CPU")
        lib.ffi.register_ffi_target("AddOneBundle", {"execute": lib.ffi.pycapsule(h.AddOne)})
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "AddOneBundle", lib.ShapeDtypeStruct(X.shape, X.dtype))(X))
    # A target registered for another platform is not found on the host.
    for lib, _ in LIBS:
        lib.ffi.register_ffi_target("cuda_only", lib.ffi.pycapsule(h.AddOne), platform="CUDA")
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "cuda_only", lib.ShapeDtypeStruct(X.shape, X.dtype))(X)))


def test_legacy_custom_call(libs: dict[str, ctypes.CDLL]) -> None:
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    for version in (1, 2, 3):
        same_values(lambda lib, _: lib.ffi.ffi_call(
            "legacy_add", lib.ShapeDtypeStruct((4,), np.float32),
            custom_call_api_version=version)(a, b))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "legacy_add", lib.ShapeDtypeStruct((4,), np.float32),
        custom_call_api_version=1)(a, b, z=1)))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "no_legacy", lib.ShapeDtypeStruct((4,), np.float32), custom_call_api_version=1)(a, b)))


def test_all_attributes_as_one_dictionary(libs: dict[str, ctypes.CDLL]) -> None:
    out = lambda lib: lib.ShapeDtypeStruct((2,), np.int64)  # noqa: E731
    same_values(lambda lib, _: lib.ffi.ffi_call("DictAttrs", out(lib))(secret=5, a="x", b=1.0))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call("DictAttrs", out(lib))(a=1)))


def test_stateful_handler(libs: dict[str, ctypes.CDLL]) -> None:
    """Instantiation creates the state (a registered type), execution reads
    it; spec deletes it with the type's deleter when the call ends."""
    h = libs["handlers"]
    h.CounterStateTypeId.restype = ctypes.c_void_p
    h.CounterStateTypeInfo.restype = ctypes.c_void_p
    h.StatesDeleted.restype = ctypes.c_int64
    for lib, _ in [(jax, jnp), (spec, snp)]:  # JAX picks the id, spec keeps it
        lib.ffi.register_ffi_type("counter_state", {
            "type_id": lib.ffi.pycapsule(h.CounterStateTypeId()),
            "type_info": lib.ffi.pycapsule(h.CounterStateTypeInfo())})
        lib.ffi.register_ffi_target("stateful", {
            "instantiate": lib.ffi.pycapsule(h.StatefulInstantiate),
            "execute": lib.ffi.pycapsule(h.StatefulExecute)})
    deleted = h.StatesDeleted()
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "stateful", lib.ShapeDtypeStruct((1,), np.int64))(start=41))
    assert h.StatesDeleted() > deleted


# ------------------------------------------------------ layouts, aliases


def test_layouts_and_aliases(libs: dict[str, ctypes.CDLL]) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    shape_of = lambda lib, layout: lib.ffi.ffi_call(  # noqa: E731
        "ShapeOf", lib.ShapeDtypeStruct((5,), np.int64), input_layouts=[layout])(x)
    same_values(lambda lib, _: shape_of(lib, None))
    same_values(lambda lib, _: shape_of(lib, (1, 0)))
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "AddOne", lib.ShapeDtypeStruct(x.shape, x.dtype), input_layouts=[(1, 0)],
        output_layouts=(1, 0))(x))
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "AddOne", lib.ShapeDtypeStruct(x.shape, x.dtype), input_layouts=[(1, 0)])(x))
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "AddOne", lib.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(x))
    np.testing.assert_array_equal(x, np.arange(6).reshape(2, 3))  # operands are not written
    same_values(lambda lib, _: lib.ffi.ffi_call(
        "Aliasing", lib.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(x))
    same_error(lambda lib, _: np.asarray(lib.ffi.ffi_call(
        "Aliasing", lib.ShapeDtypeStruct(x.shape, x.dtype))(x)))


def test_side_effects_keep_the_call(libs: dict[str, ctypes.CDLL]) -> None:
    count = libs["handlers"].CallCount
    count.restype = ctypes.c_int64
    for lib, _ in LIBS:
        call = lib.ffi.ffi_call("Count", lib.ShapeDtypeStruct((1,), np.int64),
                                has_side_effect=True)
        before = count()
        lib.jit(lambda: (call(), 1)[1])()
        assert count() == before + 1, lib.__name__


# ------------------------------------------------------------------- vmap


VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized"]


@pytest.mark.parametrize("method", VMAP_METHODS)
def test_vmap_methods(libs: dict[str, ctypes.CDLL], method: str) -> None:
    xs = np.linspace(-0.5, 0.5, 96, dtype=np.float32).reshape(3, 8, 4)
    same_values(lambda lib, _: lib.vmap(lambda x: rms_norm(lib, x, vmap_method=method))(xs))
    same_values(lambda lib, _: lib.vmap(lambda x: rms_norm(lib, x, vmap_method=method),
                                        in_axes=2)(np.transpose(xs, (1, 2, 0))))
    # What the handler is called with: the shapes it sees (a vectorised call
    # fills the first row only: the rest of JAX's result is uninitialised).
    shape_of = lambda lib, x: lib.ffi.ffi_call(  # noqa: E731
        "ShapeOf", lib.ShapeDtypeStruct((5,), np.int64), vmap_method=method)(x)
    rows = slice(None) if method.startswith("sequential") else slice(0, 1)
    same_values(lambda lib, _: np.asarray(lib.vmap(lambda x: shape_of(lib, x))(xs))[rows])

    # An unbatched operand next to batched ones.
    def bwd(lib: Any, np_: Any) -> Any:
        res = np.full((8,), 2.0, np.float32)
        call = lib.ffi.ffi_call("rms_norm_bwd", lib.ShapeDtypeStruct((8, 4), np.float32),
                                vmap_method=method)
        return lib.vmap(call, in_axes=(None, 0, 0))(res, xs, xs)
    if method not in ("expand_dims", "legacy_vectorized"):
        # These pass res with fewer rows than x has (its leading axis of size 1,
        # or none): this handler would read past it.
        same_values(bwd, rtol=1e-6)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all", "legacy_vectorized"])
def test_vmap_jaxprs(libs: dict[str, ctypes.CDLL], method: str) -> None:
    xs = np.zeros((3, 8, 4), np.float32)
    same_text(lambda lib, _: lib.make_jaxpr(lib.vmap(
        lambda x, y: lib.ffi.ffi_call("rms_norm_bwd", lib.ShapeDtypeStruct((8, 4), np.float32),
                                      vmap_method=method)(y, x, x),
        in_axes=(0, None)))(xs, np.zeros(8, np.float32)))


def test_vmap_without_a_method(libs: dict[str, ctypes.CDLL]) -> None:
    same_error(lambda lib, _: lib.vmap(lambda x: rms_norm(lib, x))(X[None]))


# ---------------------------------------------------------------- autodiff


def test_not_differentiable(libs: dict[str, ctypes.CDLL]) -> None:
    same_error(lambda lib, np_: lib.grad(lambda x: rms_norm(lib, x).sum())(X))
    same_error(lambda lib, np_: lib.jvp(lambda x: rms_norm(lib, x), (X,), (X,)))
    same_error(lambda lib, np_: lib.linear_transpose(lambda x: rms_norm(lib, x), X)(X))


def custom_vjp_rms_norm(lib: Any) -> Any:
    """The page's forward/backward FFI pair as a custom_vjp."""
    @lib.custom_vjp
    def f(x: Any) -> Any:
        return rms_norm(lib, x)

    def fwd(x: Any) -> Any:
        y, res = lib.ffi.ffi_call("rms_norm_fwd", (
            lib.ShapeDtypeStruct(x.shape, x.dtype),
            lib.ShapeDtypeStruct(x.shape[:-1], x.dtype)))(x, eps=EPS)
        return y, (res, x)

    def bwd(res: Any, ct: Any) -> Any:
        r, x = res
        return (lib.ffi.ffi_call("rms_norm_bwd", lib.ShapeDtypeStruct(x.shape, x.dtype),
                                 vmap_method="broadcast_all")(r, x, ct),)

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_pair(libs: dict[str, ctypes.CDLL]) -> None:
    same_values(lambda lib, np_: lib.grad(lambda x: (custom_vjp_rms_norm(lib)(x) * x).sum())(X),
                rtol=1e-6)
    same_values(lambda lib, np_: lib.jit(lib.grad(
        lambda x: custom_vjp_rms_norm(lib)(x).sum()))(X), rtol=1e-6)
    same_values(lambda lib, np_: lib.vjp(custom_vjp_rms_norm(lib), X)[1](np.ones_like(X)),
                rtol=1e-6)


# ---------------------------------------------------------- Python targets


def test_python_callable_targets() -> None:
    seen: list[dict[str, Any]] = []

    def scale(x: np.ndarray, *, factor: float) -> np.ndarray:
        seen.append({"writeable": x.flags.writeable, "factor": factor})
        return (x * factor).astype(x.dtype)

    spec.ffi.register_ffi_target("py_scale", scale)
    call = spec.ffi.ffi_call("py_scale", spec.ShapeDtypeStruct(X.shape, X.dtype),
                             vmap_method="sequential")
    np.testing.assert_array_equal(np.asarray(call(X, factor=3.0)), X * 3)
    np.testing.assert_array_equal(np.asarray(spec.jit(lambda x: call(x, factor=2.0))(X)), X * 2)
    stacked = np.stack([X, X + 1])
    np.testing.assert_array_equal(
        np.asarray(spec.vmap(lambda x: call(x, factor=2.0))(stacked)), stacked * 2)
    assert seen[0] == {"writeable": False, "factor": 3.0}

    spec.ffi.register_ffi_target("py_wrong", lambda x: x.astype(np.float64))
    with pytest.raises(spec.errors.JaxRuntimeError,
                       match="INVALID_ARGUMENT: FFI target py_wrong returned result 0 of shape "
                             r"\(8, 4\) and dtype float64; the call declares shape \(8, 4\) "
                             "and dtype float32"):
        spec.ffi.ffi_call("py_wrong", spec.ShapeDtypeStruct(X.shape, X.dtype))(X)
    with pytest.raises(spec.errors.JaxRuntimeError, match="returned 1 results; the call "
                                                          "declares 2"):
        spec.ffi.ffi_call("py_wrong", [spec.ShapeDtypeStruct(X.shape, np.float64)] * 2)(X)

    def broken(x: np.ndarray) -> np.ndarray:
        raise KeyError("missing")
    spec.ffi.register_ffi_target("py_broken", broken)
    with pytest.raises(spec.errors.JaxRuntimeError,
                       match="INTERNAL: FFI target py_broken raised KeyError: 'missing'"):
        spec.ffi.ffi_call("py_broken", spec.ShapeDtypeStruct(X.shape, X.dtype))(X)


def test_runtime_keeps_no_errors_or_contexts(libs: dict[str, ctypes.CDLL]) -> None:
    """Errors handlers return are consumed; every call's context is released."""
    from spec._src.lax import ffi_frame as F
    with pytest.raises(spec.errors.JaxRuntimeError):
        spec.ffi.ffi_call("Fail", spec.ShapeDtypeStruct(X.shape, X.dtype))(X, message="x")
    assert not F._RT.errors and not F._RT.contexts
    target = F.lookup("rms_norm")
    assert isinstance(target, F.CTarget) and target.api_version == (F.API_MAJOR, F.API_MINOR)


def test_lowering_rule_runs_the_target(libs: dict[str, ctypes.CDLL]) -> None:
    from spec._src.api.ffi import LoweringRuleContext
    aval = spec.typeof(X)
    rule = spec.ffi.ffi_lowering("rms_norm")
    out, = rule(LoweringRuleContext([aval], [aval]), X, eps=EPS)
    np.testing.assert_allclose(out, np.asarray(rms_norm(spec, X)))


# ---------------------------------------------------------------- sharding


def test_sharded_operand_runs_gathered(libs: dict[str, ctypes.CDLL], four_devices: None
                                        ) -> None:
    """A bare ffi_call on a sharded operand: every device runs the handler
    on the whole array (gathered first, as XLA does around a custom call),
    the result replicated; inside shard_map each device runs it on its block."""
    with spec.set_mesh(spec.make_mesh((4,), ("x",))):
        xs = spec.device_put(X, spec.P("x"))
        with spec.collectives_log() as log:
            out = spec.jit(lambda x: rms_norm(spec, x))(xs)
        assert str(spec.typeof(out)) == "float32[8,4]"
        assert log.count() > 0
        np.testing.assert_allclose(np.asarray(out), rms_norm_reference(X), rtol=1e-5)

        body = lambda x: spec.ffi.ffi_call("ShapeOf", spec.ShapeDtypeStruct(  # noqa: E731
            (1, 5), np.int64))(x)
        with spec.collectives_log() as log:
            shapes = spec.shard_map(body, out_specs=spec.P("x"))(xs)
        assert log.count() == 0
        np.testing.assert_array_equal(np.asarray(shapes), [[2, 2, 4, -1, -1]] * 4)
