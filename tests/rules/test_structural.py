"""Structural primitives, their lax wrappers and the jnp creation/shape functions,
checked live against real JAX: values, dtypes, weak types, jaxpr text, error classes."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax as jlax

import spec
import spec.numpy as sjnp
from spec import lax as slax
from tests.support.pair import error_of, errors_alike, raises_as

Fn = Callable[..., Any]
RNG = np.random.default_rng(0)
F32 = RNG.standard_normal((2, 3)).astype(np.float32)
F32_3D = RNG.standard_normal((2, 1, 3)).astype(np.float32)
I32 = np.arange(6, dtype=np.int32).reshape(2, 3)


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _same_values(a: Any, b: Any) -> None:
    assert len(_leaves(a)) == len(_leaves(b))
    for x, y in zip(_leaves(a), _leaves(b)):
        xa, ya = np.asarray(x), np.asarray(y)
        assert xa.dtype == ya.dtype, (xa.dtype, ya.dtype)
        assert xa.shape == ya.shape, (xa.shape, ya.shape)
        if spec._src.core.types.is_float(xa.dtype):  # NaN-aware compare needs a NumPy float
            xa, ya = xa.astype(np.float64), ya.astype(np.float64)
        np.testing.assert_array_equal(xa, ya)
        assert bool(getattr(x, "weak_type", False)) == bool(getattr(y, "weak_type", False))
        assert str(spec.typeof(x)) == str(jax.typeof(y))


def check(fn: Fn, *args: Any, jaxpr: bool = True) -> None:
    """``fn(jnp, lax, *args)`` under spec and under JAX: same values and types,
    and the same jaxpr text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Eager operands are each library's arrays (JAX converts raw NumPy
        # operands with NumPy's own casts, which is not the primitive's semantics).
        expected = fn(jjnp, jlax, *[jjnp.asarray(a) for a in args])
        got = fn(sjnp, slax, *[sjnp.asarray(a) for a in args])
        _same_values(got, expected)
        if jaxpr:
            want = str(jax.make_jaxpr(lambda *a: fn(jjnp, jlax, *a))(*args))
            have = str(spec.make_jaxpr(lambda *a: fn(sjnp, slax, *a))(*args))
            assert have == want, f"\nspec:\n{have}\njax:\n{want}"


def raises_like(fn: Fn, *args: Any) -> type[BaseException]:
    """Both raise, with the same exception class; returns it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = error_of(lambda: fn(jjnp, jlax, *args))
        ours = error_of(lambda: fn(sjnp, slax, *args))
    assert type(ours) is type(theirs), (ours, theirs)
    return type(ours)


# ======================================================== primitives via lax

LAX_CASES: dict[str, Fn] = {
    "convert_f32_i32": lambda n, l, x: l.convert_element_type(x, np.int32),
    "convert_f32_bool": lambda n, l, x: l.convert_element_type(x, np.bool_),
    "convert_f32_bf16": lambda n, l, x: l.convert_element_type(x, n.bfloat16),
    "convert_same": lambda n, l, x: l.convert_element_type(x, np.float32),
    "convert_pyscalar": lambda n, l, x: l.convert_element_type(3.7, np.int32),
    "bitcast_same": lambda n, l, x: l.bitcast_convert_type(x, np.int32),
    "bitcast_smaller": lambda n, l, x: l.bitcast_convert_type(x, np.uint8),
    "bitcast_f16": lambda n, l, x: l.bitcast_convert_type(x, np.float16),
    "bitcast_larger": lambda n, l, x: l.bitcast_convert_type(
        l.bitcast_convert_type(x, np.uint16), np.float32),
    "iota": lambda n, l, x: l.iota(np.int32, 5),
    "iota_f": lambda n, l, x: l.iota(np.float32, 4),
    "broadcasted_iota": lambda n, l, x: l.broadcasted_iota(np.int8, (2, 3), 1),
    "broadcast": lambda n, l, x: l.broadcast(x, (4,)),
    "broadcast_empty": lambda n, l, x: l.broadcast(x, ()),
    "broadcast_in_dim": lambda n, l, x: l.broadcast_in_dim(x, (2, 4, 3), (0, 2)),
    "broadcast_in_dim_perm": lambda n, l, x: l.broadcast_in_dim(x, (3, 2), (1, 0)),
    "broadcast_to_rank": lambda n, l, x: l.broadcast_to_rank(x, 4),
    "reshape": lambda n, l, x: l.reshape(x, (3, 2)),
    "reshape_dims": lambda n, l, x: l.reshape(x, (3, 2), (1, 0)),
    "reshape_same": lambda n, l, x: l.reshape(x, (2, 3)),
    "reshape_identity_dims": lambda n, l, x: l.reshape(x, (6,), (0, 1)),
    "transpose": lambda n, l, x: l.transpose(x, (1, 0)),
    "transpose_id": lambda n, l, x: l.transpose(x, (0, 1)),
    "squeeze": lambda n, l, x: l.squeeze(l.expand_dims(x, (0,)), (-3,)),
    "squeeze_none": lambda n, l, x: l.squeeze(x, ()),
    "expand_dims": lambda n, l, x: l.expand_dims(x, (0, -1)),
    "rev": lambda n, l, x: l.rev(x, (0, 1)),
    "rev_empty": lambda n, l, x: l.rev(x, ()),
    "slice": lambda n, l, x: l.slice(x, (0, 1), (2, 3)),
    "slice_strided": lambda n, l, x: l.slice(x, (0, 0), (2, 3), (1, 2)),
    "slice_in_dim": lambda n, l, x: l.slice_in_dim(x, -2, None, 1, 1),
    "index_in_dim": lambda n, l, x: l.index_in_dim(x, -1, 0, False),
    "index_in_dim_keep": lambda n, l, x: l.index_in_dim(x, 1, 1, True),
    "dynamic_slice": lambda n, l, x: l.dynamic_slice(x, (1, 1), (1, 2)),
    "dynamic_slice_neg": lambda n, l, x: l.dynamic_slice(x, (-1, 0), (1, 2)),
    "dynamic_slice_clamped": lambda n, l, x: l.dynamic_slice(x, (5, 2), (2, 2)),
    "dynamic_slice_in_dim": lambda n, l, x: l.dynamic_slice_in_dim(x, 1, 2, 1),
    "dynamic_update_slice": lambda n, l, x: l.dynamic_update_slice(
        x, l.slice(x, (0, 0), (2, 1)), (0, 1)),
    "dynamic_update_slice_clamped": lambda n, l, x: l.dynamic_update_slice(
        x, l.slice(x, (0, 0), (1, 2)), (7, 9)),
    "dynamic_update_slice_in_dim": lambda n, l, x: l.dynamic_update_slice_in_dim(
        x, l.slice(x, (0, 0), (1, 3)), 1, 0),
    "concatenate": lambda n, l, x: l.concatenate([x, x, x], 1),
    "concatenate_one": lambda n, l, x: l.concatenate([x], 0),
    "pad": lambda n, l, x: l.pad(x, np.float32(0), ((1, 1, 0), (0, -1, 1))),
    "pad_negative": lambda n, l, x: l.pad(x, np.float32(-1), ((-1, 2, 1), (-2, -1, 2))),
    "pad_weak_value": lambda n, l, x: l.pad(x, 1.5, ((0, 0, 0), (1, 1, 1))),
    "collapse": lambda n, l, x: l.collapse(x, 0, 2),
    "full": lambda n, l, x: l.full((2,), 3.0),
    "full_dtype": lambda n, l, x: l.full((2, 2), 3.0, np.int32),
    "full_like": lambda n, l, x: l.full_like(x, 3),
    "full_like_dtype": lambda n, l, x: l.full_like(x, 3, np.int8, (4,)),
    "copy": lambda n, l, x: n.array(x, copy=True),
}


@pytest.mark.parametrize("name", sorted(LAX_CASES))
def test_lax_matches_jax(name: str) -> None:
    check(LAX_CASES[name], F32)


def test_lax_int_operand() -> None:
    check(lambda n, l, x: l.pad(x, np.int32(7), ((1, 0, 1), (0, 1, 0))), I32)
    check(lambda n, l, x: l.rev(l.transpose(x, (1, 0)), (1,)), I32)


def test_copy_prints_as_copy() -> None:
    from spec._src.lax.slicing import copy_p
    assert copy_p.name == "copy"
    check(lambda n, l, x: n.array(x), F32)


def test_unstack_and_iteration() -> None:
    check(lambda n, l, x: l.unstack(x), F32)
    check(lambda n, l, x: l.unstack(x, axis=-1), F32)
    # Iterating a traced array: JAX stages ``unstack``; values are compared here.
    check(lambda n, l, x: list(n.asarray(x)), F32, jaxpr=False)


def test_dynamic_index_in_dim_jitted() -> None:
    check(lambda n, l, x: l.dynamic_index_in_dim(x, 1, 1, False), F32)
    check(lambda n, l, x: l.dynamic_update_index_in_dim(x, x[0], 1, 0), F32)


# ======================================================= conversion semantics

SPECIAL = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -1.5, 2.7, 255.5, 256.0, -0.5, 1e20,
                    65535.9, 127.9, -128.9, -129.0, 0.0, -0.0], np.float32)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8", "uint32", "int16", "uint16",
                                   "bool", "float16", "bfloat16", "float8_e4m3fn",
                                   "float8_e5m2", "int4", "uint4"])
def test_convert_float_special_values(dtype: str) -> None:
    check(lambda n, l, x: l.convert_element_type(x, n.dtype(dtype)), SPECIAL)


@pytest.mark.parametrize("src,dst", [("int32", "uint8"), ("int32", "int4"), ("uint32", "int32"),
                                     ("int32", "bool"), ("bool", "float32"), ("int8", "uint16"),
                                     ("uint8", "float16"), ("int32", "bfloat16")])
def test_convert_int_values(src: str, dst: str) -> None:
    vals = np.array([-1, 256, 300, -129, 8, 7, 0, 2**31 - 1, -2**31], np.int64)
    x = vals.astype(np.dtype(src)) if src != "bool" else vals.astype(bool)
    check(lambda n, l, x: l.convert_element_type(x, n.dtype(dst)), x)


def test_convert_complex() -> None:
    z = np.array([1 + 2j, 0 + 1j, np.nan, -2.5 - 1j, 0], np.complex64)
    for dst in ("float32", "int32", "bool", "complex64"):
        check(lambda n, l, x: l.convert_element_type(x, n.dtype(dst)), z)


def test_convert_x64() -> None:
    vals = np.array([np.nan, np.inf, -np.inf, 1e19, -1e19, 2.0**63, -2.0**63, 1.5], np.float64)
    spec.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
    try:
        for dst in ("int64", "uint64", "int32", "float32"):
            check(lambda n, l, x: l.convert_element_type(x, n.dtype(dst)), vals)
        check(lambda n, l, x: l.iota(np.int64, 3), vals)
        check(lambda n, l, x: n.arange(4), vals)
        check(lambda n, l, x: n.array([1, 2.5]), vals)
        check(lambda n, l, x: n.zeros(2), vals)
        check(lambda n, l, x: l.dynamic_slice(x, (np.int64(-3),), (2,)), vals)
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)  # type: ignore[no-untyped-call]


# ================================================================ jnp creation

CREATION: dict[str, Fn] = {
    "array_list": lambda n, l, x: n.array([[1, 2], [3, 4]]),
    "array_mixed": lambda n, l, x: n.array([1, 2.5]),
    "array_scalar": lambda n, l, x: n.array(1.0),
    "array_bool": lambda n, l, x: n.array([True, False]),
    "array_dtype": lambda n, l, x: n.array([1, 2], dtype=np.float32),
    "array_numpy": lambda n, l, x: n.array(np.ones(3)),
    "array_of_array": lambda n, l, x: n.array(x),
    "array_of_array_dtype": lambda n, l, x: n.array(x, dtype=np.int32),
    "array_tracers": lambda n, l, x: n.array([x, x]),
    "array_ndmin": lambda n, l, x: n.array(x, ndmin=4),
    "array_empty": lambda n, l, x: n.array([]),
    "asarray": lambda n, l, x: n.asarray(x),
    "asarray_dtype": lambda n, l, x: n.asarray(x, dtype=np.int16),
    "zeros": lambda n, l, x: n.zeros((2, 3)),
    "zeros_int": lambda n, l, x: n.zeros(3, int),
    "ones": lambda n, l, x: n.ones((2,), np.uint8),
    "full": lambda n, l, x: n.full((2,), 2),
    "full_float": lambda n, l, x: n.full((2, 2), 2.5, np.float16),
    "full_array_fill": lambda n, l, x: n.full((4, 3), n.asarray(x)[0]),
    "empty": lambda n, l, x: n.empty((2,)).shape,
    "empty_jaxpr": lambda n, l, x: n.zeros_like(n.empty((2, 2), np.int32)),
    "arange": lambda n, l, x: n.arange(5),
    "arange_float": lambda n, l, x: n.arange(5.0),
    "arange_dtype": lambda n, l, x: n.arange(3, dtype=np.float32),
    "zeros_like": lambda n, l, x: n.zeros_like(x),
    "ones_like": lambda n, l, x: n.ones_like(x, dtype=int),
    "full_like": lambda n, l, x: n.full_like(x, 2),
    "full_like_shape": lambda n, l, x: n.full_like(x, 2, shape=(3,)),
    "empty_like_shape": lambda n, l, x: n.zeros_like(n.empty_like(x)),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_matches_jax(name: str) -> None:
    check(CREATION[name], F32)


def test_creation_weak_types() -> None:
    assert sjnp.array(2).weak_type and jjnp.array(2).weak_type
    assert not sjnp.array([2]).weak_type and not jjnp.array([2]).weak_type
    check(lambda n, l, x: n.full_like(2.0, 3), F32)


def test_creation_needing_elementwise() -> None:
    for fn in (lambda n, l, x: n.eye(3), lambda n, l, x: n.eye(3, 4, k=1, dtype=int),
               lambda n, l, x: n.identity(2), lambda n, l, x: n.tri(3),
               lambda n, l, x: n.arange(1, 7, 2), lambda n, l, x: n.arange(0.0, 1.0, 0.25),
               lambda n, l, x: n.arange(2, 5),
               lambda n, l, x: n.linspace(0, 1, 5, retstep=True),
               lambda n, l, x: n.linspace(0.0, 2.0, 4, endpoint=False, retstep=True),
               lambda n, l, x: n.linspace(x[0], x[1], 3, axis=-1, retstep=True)):
        check(fn, F32)
    # Without retstep the step is computed and unused: JAX prints its variable,
    # the core printer prints ``_``; values are compared.
    check(lambda n, l, x: n.linspace(0, 10, 7, dtype=np.int32), F32, jaxpr=False)
    check(lambda n, l, x: n.linspace(0, 1, 0), F32, jaxpr=False)
    check(lambda n, l, x: n.linspace(1, 2, 1, retstep=True), F32, jaxpr=False)


# =================================================================== jnp shape

SHAPE: dict[str, Fn] = {
    "reshape_neg": lambda n, l, x: n.reshape(x, (-1,)),
    "reshape_same": lambda n, l, x: n.reshape(x, (2, 3)),
    "reshape_F": lambda n, l, x: n.reshape(x, (3, 2), order="F"),
    "ravel": lambda n, l, x: n.ravel(x),
    "transpose": lambda n, l, x: n.transpose(x),
    "transpose_axes": lambda n, l, x: n.transpose(x, (1, 0)),
    "swapaxes": lambda n, l, x: n.swapaxes(x, 0, 1),
    "moveaxis": lambda n, l, x: n.moveaxis(n.expand_dims(x, 1), 0, -1),
    "squeeze": lambda n, l, x: n.squeeze(n.expand_dims(x, 1)),
    "squeeze_none": lambda n, l, x: n.squeeze(x),
    "expand_dims": lambda n, l, x: n.expand_dims(x, (0, -1)),
    "concatenate": lambda n, l, x: n.concatenate([x, x], axis=1),
    "concatenate_promote": lambda n, l, x: n.concatenate([x, x.astype(np.int32)], axis=1),
    "concatenate_none": lambda n, l, x: n.concatenate([x, x], axis=None),
    "concatenate_one": lambda n, l, x: n.concatenate([x]),
    "stack": lambda n, l, x: n.stack([x, x], axis=1),
    "stack_neg": lambda n, l, x: n.stack([x, x, x], axis=-1),
    "hstack": lambda n, l, x: n.hstack([x, x]),
    "hstack_1d": lambda n, l, x: n.hstack([x[0], x[1]]),
    "vstack": lambda n, l, x: n.vstack([x[0], x[0]]),
    "split": lambda n, l, x: n.split(x, 3, axis=1),
    "split_indices": lambda n, l, x: n.split(x, [1, -1], axis=1),
    "array_split": lambda n, l, x: n.array_split(x, 2, axis=1),
    "tile": lambda n, l, x: n.tile(x, (2, 1)),
    "tile_int": lambda n, l, x: n.tile(x, 2),
    "tile_grow": lambda n, l, x: n.tile(x, (2, 1, 1)),
    "repeat": lambda n, l, x: n.repeat(x, 2, axis=1),
    "repeat_none": lambda n, l, x: n.repeat(x, 3),
    "broadcast_to": lambda n, l, x: n.broadcast_to(x, (4, 2, 3)),
    "broadcast_to_same": lambda n, l, x: n.broadcast_to(x, (2, 3)),
    "broadcast_arrays": lambda n, l, x: n.broadcast_arrays(x, x[0], 1.0),
    "flip": lambda n, l, x: n.flip(x),
    "flip_axis": lambda n, l, x: n.flip(x, 1),
    "atleast_1d": lambda n, l, x: n.atleast_1d(x[0, 0], x),
    "atleast_2d": lambda n, l, x: n.atleast_2d(x[0]),
    "atleast_3d": lambda n, l, x: n.atleast_3d(x[0]),
    "atleast_3d_2d": lambda n, l, x: n.atleast_3d(x),
    "method_T": lambda n, l, x: x.T,
    "method_mT": lambda n, l, x: x.mT,
    "method_reshape_args": lambda n, l, x: x.reshape(3, 2),
    "method_reshape_tuple": lambda n, l, x: x.reshape((1, 6)),
    "method_transpose": lambda n, l, x: x.transpose(),
    "method_transpose_args": lambda n, l, x: x.transpose(1, 0),
    "method_swapaxes": lambda n, l, x: x.swapaxes(0, 1),
    "method_squeeze": lambda n, l, x: x.reshape(2, 1, 3).squeeze(1),
    "method_ravel": lambda n, l, x: x.ravel(),
    "method_flatten": lambda n, l, x: x.flatten(),
    "method_astype": lambda n, l, x: x.astype(np.int32),
    "method_astype_same": lambda n, l, x: x.astype(np.float32),
    "method_repeat": lambda n, l, x: x.repeat(2, axis=0),
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_matches_jax(name: str) -> None:
    # The methods need an array operand; in JAX eagerly that is a jax.Array.
    fn = SHAPE[name]
    check(lambda n, l, x: fn(n, l, n.asarray(x)), F32)


def test_shape_queries() -> None:
    x = sjnp.asarray(F32)
    assert sjnp.shape(x) == jjnp.shape(F32) == (2, 3)
    assert sjnp.ndim(x) == 2 and sjnp.size(x) == 6 and sjnp.size(x, 1) == 3
    assert sjnp.size(3.0) == jjnp.size(3.0)


# ================================================================== errors

ERRORS: dict[str, Fn] = {
    "bitcast_shape": lambda n, l: l.bitcast_convert_type(n.array([1, 2, 3], np.uint8),
                                                         np.float32),
    "bitcast_bool": lambda n, l: l.bitcast_convert_type(n.array([1.0]), np.bool_),
    "iota_bool": lambda n, l: l.iota(np.bool_, 3),
    "iota_dim": lambda n, l: l.broadcasted_iota(np.int32, (3,), 1),
    "reshape_neg": lambda n, l: l.reshape(n.ones(6), (-1,)),
    "reshape_dims": lambda n, l: l.reshape(n.ones(6), (2, 3), (1,)),
    "transpose_dup": lambda n, l: l.transpose(n.ones((2, 3)), (0, 0)),
    "transpose_short": lambda n, l: l.transpose(n.ones((2, 3)), (0,)),
    "squeeze_size": lambda n, l: l.squeeze(n.ones((2, 3)), (0,)),
    "squeeze_axis": lambda n, l: l.squeeze(n.ones((2, 3)), (5,)),
    "rev_axis": lambda n, l: l.rev(n.ones(3), (1,)),
    "slice_limit": lambda n, l: l.slice(n.ones(3), (0,), (4,)),
    "slice_start": lambda n, l: l.slice(n.ones(3), (2,), (1,)),
    "slice_stride0": lambda n, l: l.slice(n.ones(3), (0,), (2,), (0,)),
    "pad_negative": lambda n, l: l.pad(n.ones(3), 0.0, ((-2, -2, 0),)),
    "pad_dtype": lambda n, l: l.pad(n.ones(3), np.int32(0), ((0, 0, 0),)),
    "pad_interior": lambda n, l: l.pad(n.ones(3), 0.0, ((0, 0, -1),)),
    "pad_rank": lambda n, l: l.pad(n.ones(3), 0.0, ((0, 0, 0), (0, 0, 0))),
    "concat_dtype": lambda n, l: l.concatenate([n.ones(3), n.ones(2, np.int32)], 0),
    "concat_empty": lambda n, l: l.concatenate([], 0),
    "concat_shape": lambda n, l: l.concatenate([n.ones((2, 3)), n.ones((3, 3))], 1),
    "concat_dim": lambda n, l: l.concatenate([n.ones(3), n.ones(3)], 1),
    "dslice_size": lambda n, l: l.dynamic_slice(n.ones(3), (0,), (4,)),
    "dslice_rank": lambda n, l: l.dynamic_slice(n.ones(3), (0, 0), (1,)),
    "dus_dtype": lambda n, l: l.dynamic_update_slice(n.ones(3), n.ones(3, np.int32), (0,)),
    "dus_shape": lambda n, l: l.dynamic_update_slice(n.ones(3), n.ones(4), (0,)),
    "bid_dup": lambda n, l: l.broadcast_in_dim(n.ones(3), (3, 3), (0, 0)),
    "bid_size": lambda n, l: l.broadcast_in_dim(n.ones(3), (4,), (0,)),
    "bid_rank": lambda n, l: l.broadcast_in_dim(n.ones(3), (3, 3), ()),
    "index_in_dim": lambda n, l: l.index_in_dim(n.ones(3), 3),
    "expand_dims_axis": lambda n, l: l.expand_dims(n.ones(3), (3,)),
    "expand_dims_dup": lambda n, l: l.expand_dims(n.ones(3), (0, 0)),
    "full_fill": lambda n, l: l.full((2,), n.ones(2)),
    "collapse": lambda n, l: l.collapse(n.ones((2, 3)), 1, 0),
    "jnp_reshape": lambda n, l: n.reshape(n.ones(6), (4, -1)),
    "jnp_reshape_two_neg": lambda n, l: n.reshape(n.ones(6), (-1, -1)),
    "jnp_reshape_size": lambda n, l: n.ones(6).reshape(4),
    "jnp_split": lambda n, l: n.split(n.ones(5), 2),
    "jnp_concat_0d": lambda n, l: n.concatenate([n.ones(()), n.ones(())]),
    "jnp_concat_list": lambda n, l: n.concatenate([]),
    "jnp_stack_shape": lambda n, l: n.stack([n.ones(2), n.ones(3)]),
    "jnp_broadcast_to": lambda n, l: n.broadcast_to(n.ones(3), (2, 4)),
    "jnp_broadcast_to_rank": lambda n, l: n.broadcast_to(n.ones((2, 3)), (3,)),
    "jnp_zeros_forgot_tuple": lambda n, l: n.zeros(2, 3),
    "jnp_array_none": lambda n, l: n.array([1, None]),
    "jnp_transpose_axes": lambda n, l: n.transpose(n.ones((2, 3)), (0, 2)),
    "jnp_moveaxis": lambda n, l: n.moveaxis(n.ones((2, 3)), (0, 1), 0),
    "jnp_squeeze": lambda n, l: n.squeeze(n.ones((2, 3)), 0),
    "jnp_expand_dims_list": lambda n, l: n.expand_dims([1, 2], 0),
    "jnp_eye_negative": lambda n, l: n.eye(-1),
    "jnp_mT_1d": lambda n, l: n.ones(3).mT,
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_jax(name: str) -> None:
    raises_like(ERRORS[name])


# jnp's joining functions check their operands with JAX's messages (the lax
# typing rules cite their constraints instead).
JOIN_ERRORS: dict[str, Callable[[Any], Any]] = {
    "concatenate_ranks": lambda n: n.concatenate([np.ones(3), np.ones((2, 3))]),
    "concatenate_scalar_second": lambda n: n.concatenate([np.ones(3), np.float32(1)]),
    "concatenate_sizes": lambda n: n.concatenate([np.ones((2, 3)), np.ones((3, 4))], axis=1),
    "concat_ranks": lambda n: n.concat([np.ones(3), np.ones((2, 3))]),
    "append_ranks": lambda n: n.append(np.ones((2, 3)), np.ones(3), axis=0),
    "stack_ranks": lambda n: n.stack([np.ones(3), np.ones((2, 3))]),
    "stack_shapes": lambda n: n.stack([np.ones((2, 3)), np.ones((2, 4), np.int32)]),
    "hstack_ranks": lambda n: n.hstack([np.ones(3), np.ones((2, 3))]),
    "hstack_sizes": lambda n: n.hstack([np.ones((2, 3)), np.ones((3, 3))]),
    "vstack_ranks": lambda n: n.vstack([np.ones(3), np.ones((2, 2, 3))]),
    "vstack_sizes": lambda n: n.vstack([np.ones(3), np.ones(4)]),
    "dstack_sizes": lambda n: n.dstack([np.ones(3), np.ones(4)]),
    "column_stack_sizes": lambda n: n.column_stack([np.ones(3), np.ones(4)]),
    "unstack_scalar": lambda n: n.unstack(np.float32(1)),
    "jit_concatenate_ranks": lambda n: jit_of(n)(lambda a, b: n.concatenate([a, b]))(
        np.ones(3), np.ones((1, 3))),
}


def jit_of(n: Any) -> Any:
    return jax.jit if n is jjnp else spec.jit


@pytest.mark.parametrize("name", sorted(JOIN_ERRORS))
def test_join_error_messages_match_jax(name: str) -> None:
    ours, theirs = errors_alike(lambda: JOIN_ERRORS[name](sjnp), lambda: JOIN_ERRORS[name](jjnp))
    assert str(ours) == str(theirs)


def test_slice_rank_error_is_type_error() -> None:
    # Eager JAX fails earlier in dispatch with a ValueError; its typing rule (used
    # by eval_shape/jit) raises TypeError, which is what the spec states.
    with pytest.raises(TypeError):
        jax.eval_shape(lambda a: jlax.slice(a, (0, 0), (1, 1)), np.ones(3))
    with pytest.raises(TypeError, match="slice C2"):
        slax.slice(sjnp.ones(3), (0, 0), (1, 1))


def test_error_messages_cite_constraints() -> None:
    with pytest.raises(TypeError, match=r"transpose C2"):
        slax.transpose(sjnp.ones((2, 3)), (0, 0))
    with pytest.raises(ValueError, match=r"pad C5"):
        slax.pad(sjnp.ones(3), 0.0, ((-2, -2, 0),))
    with pytest.raises(TypeError, match=r"concatenate C5"):
        slax.concatenate([sjnp.ones(3), sjnp.ones(2, np.int32)], 0)
    with pytest.raises(ValueError, match=r"reshape C3"):
        slax.reshape(sjnp.ones(6), (4,))


def test_typing_rules_in_check_jaxpr() -> None:
    jaxpr = spec.make_jaxpr(lambda x: sjnp.concatenate([x.T, x.T]).reshape(-1))(F32)
    spec._src.core.interpreter.check_jaxpr(jaxpr)


# ================================================================ properties

def _spec_type(fn: Fn, x: np.ndarray) -> Any:
    return spec.typeof(fn(slax, sjnp.asarray(x)))


def _jax_type(fn: Fn, x: np.ndarray) -> Any:
    return jax.typeof(jax.eval_shape(lambda a: fn(jlax, a), x))


def _compare(fn: Fn, x: np.ndarray) -> None:
    """spec's result type equals JAX's; spec raises iff JAX raises, same class."""
    try:
        want = str(_jax_type(fn, x))
    except Exception as err:  # noqa: BLE001 - any JAX error class is compared
        raises_as(lambda: _spec_type(fn, x), err)
        return
    assert str(_spec_type(fn, x)) == want


shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)
small_int = st.integers(-2, 4)


@settings(max_examples=40, deadline=None)
@given(shapes, st.data())
def test_reshape_transpose_property(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = np.zeros(shape, np.float32)
    perm = data.draw(st.permutations(range(len(shape))) | st.lists(small_int, max_size=3))
    _compare(lambda l, a: l.transpose(a, tuple(perm)), x)
    new = data.draw(st.permutations(list(shape) + [1]))
    _compare(lambda l, a: l.reshape(a, tuple(new), tuple(perm)
                                    if sorted(perm) == list(range(len(shape))) else None), x)


@settings(max_examples=40, deadline=None)
@given(shapes, st.data())
def test_slice_pad_property(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = np.zeros(shape, np.float32)
    n = len(shape) + data.draw(st.sampled_from([0, 0, 0, 1]))
    start = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    limit = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    strides = data.draw(st.none() | st.lists(st.integers(1, 3), min_size=n, max_size=n))
    _compare(lambda l, a: l.slice(a, start, limit, strides), x)
    config = data.draw(st.lists(st.tuples(small_int, small_int, st.integers(-1, 2)),
                                min_size=n, max_size=n))
    _compare(lambda l, a: l.pad(a, np.float32(0), config), x)


@settings(max_examples=40, deadline=None)
@given(st.lists(shapes, min_size=1, max_size=3), st.integers(-1, 3))
def test_concatenate_property(shape_list: list[tuple[int, ...]], dim: int) -> None:
    def spec_fn() -> Any:
        return spec.typeof(slax.concatenate([sjnp.zeros(s) for s in shape_list], dim))

    try:
        want = str(jax.typeof(jax.eval_shape(
            lambda: jlax.concatenate([jjnp.zeros(s) for s in shape_list], dim))))
    except Exception as err:  # noqa: BLE001
        raises_as(spec_fn, err)
        return
    assert str(spec_fn()) == want


@settings(max_examples=30, deadline=None)
@given(shapes, st.data())
def test_dynamic_slice_values_property(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    sizes = [data.draw(st.integers(0, d)) for d in shape]
    starts = [data.draw(st.integers(-5, 5)) for _ in shape]
    got = slax.dynamic_slice(sjnp.asarray(x), starts, sizes)
    want = jlax.dynamic_slice(x, starts, sizes)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    upd = np.full(sizes, -1, np.int32)
    got = slax.dynamic_update_slice(sjnp.asarray(x), upd, starts)
    want = jlax.dynamic_update_slice(x, upd, starts)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
