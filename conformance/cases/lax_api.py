"""Values of jax.lax operations: structural ops, conversions, sort, dot_general, reductions."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.cases._util import data
from conformance.registry import case, contraction, register_case


def _m(jnp: Any, dtype: str = "float32", seed: int = 0) -> Any:
    return jnp.asarray(data((3, 4), dtype, seed))


@case(tags=("lax",))
def select_n(jax: Any, jnp: Any, lax: Any) -> Any:
    a, b, c = _m(jnp, seed=1), _m(jnp, seed=2), _m(jnp, seed=3)
    p = a > 0
    w = jnp.asarray(np.array([[0, 1, 2, 0]] * 3, np.int32))
    return [lax.select_n(p, a, b), lax.select_n(w, a, b, c), lax.select_n(True, a, b),
            lax.select_n(jnp.asarray(np.int32(2)), a, b, c), lax.select(p, a, b),
            lax.select_n(p, a)]


@case(tags=("lax",))
def clamp(jax: Any, jnp: Any, lax: Any) -> Any:
    x = _m(jnp, seed=4)
    i = _m(jnp, "int32", seed=5)
    nan = jnp.asarray(np.array([np.nan, -1.0, 5.0], np.float32))
    return [lax.clamp(-1.0, x, 1.0), lax.clamp(jnp.float32(0), x, x + 1), lax.clamp(-5, i, 5),
            lax.clamp(0.0, nan, 1.0), lax.clamp(jnp.zeros((3, 4)), x, jnp.ones((3, 4))),
            jnp.clip(x, -0.5, 0.5), jnp.clip(i, max=3)]


CONVERSIONS = ("bool", "int8", "uint8", "int32", "uint32", "float16", "bfloat16", "float32",
               "complex64", "float8_e4m3fn", "float8_e5m2")


def _convert_from(src: str) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        if src.startswith(("float", "bfloat")):
            vals = np.array([0.0, -0.0, 0.4, 0.5, 1.5, 2.5, -2.5, -1.7, 127.9, 255.5, 300.0,
                             -129.0, 65504.0, 70000.0, 3e38, np.inf, -np.inf, np.nan, 1e-40,
                             2**31, -(2**31) - 1e3, 2**32, 1.0000001, 448.0, 57344.0])
            x = vals.astype(src)
        else:
            x = np.asarray(data((12,), src, 9))
            if src in ("int32", "uint32", "int8", "uint8"):
                ii = np.iinfo(np.dtype(src))
                x = np.concatenate([x, np.array([ii.min, ii.max, 0, 1], src)])
        arr = jnp.asarray(x)
        return [lax.convert_element_type(arr, np.dtype(d)) for d in CONVERSIONS]

    return fn


for _src in ("float32", "float16", "bfloat16", "int32", "uint8", "int8", "bool"):
    register_case(f"convert_from_{_src}", _convert_from(_src), module=__name__,
                  tags=("lax", "conversion"))


@case(tags=("lax", "conversion"))
def convert_complex_and_weak(jax: Any, jnp: Any, lax: Any) -> Any:
    z = jnp.asarray(np.array([1.5 - 2j, -0.5 + 1j], np.complex64))
    w = jnp.asarray(2.0)
    x = _m(jnp, seed=6)
    return [lax.convert_element_type(z, np.dtype("complex64")), lax.real(z), lax.imag(z),
            lax.convert_element_type(w, np.dtype("float32")), lax.convert_element_type(w, int),
            x.astype(jnp.int8), x.astype(jnp.uint32), x.astype(jnp.complex64),
            jnp.real(z).astype(jnp.int32)]


@case(tags=("lax", "conversion"), x64=True)
def convert_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([1e300, -1.5, np.nan, 2.0**63, 3.0], np.float64))
    i = jnp.asarray(np.array([2**62, -(2**63), 7], np.int64))
    targets = ("int64", "uint64", "int32", "float32", "float16", "float64", "complex128")
    return [lax.convert_element_type(x, np.dtype(d)) for d in targets] + [
        lax.convert_element_type(i, np.dtype(d)) for d in targets
    ]


@case(tags=("lax", "conversion"))
def bitcast_convert_type(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jnp.asarray(np.array([1.0, -0.0, np.inf, 3.5], np.float32))
    u8 = jnp.asarray(np.arange(8, dtype=np.uint8).reshape(2, 4))
    h = jnp.asarray(np.array([1.0, -2.0], np.float16))
    return [lax.bitcast_convert_type(f, jnp.int32), lax.bitcast_convert_type(f, jnp.uint32),
            lax.bitcast_convert_type(f, jnp.uint8), lax.bitcast_convert_type(u8, jnp.float32),
            lax.bitcast_convert_type(u8, jnp.int8), lax.bitcast_convert_type(h, jnp.bfloat16),
            lax.bitcast_convert_type(h, jnp.int16), lax.bitcast_convert_type(f, jnp.float16)]


@case(tags=("lax",))
def iota(jax: Any, jnp: Any, lax: Any) -> Any:
    return [lax.iota(np.int32, 5), lax.iota(np.float32, 4), lax.iota(np.uint8, 3),
            lax.broadcasted_iota(np.int32, (2, 3), 1), lax.broadcasted_iota(np.float16, (3, 2), 0),
            lax.iota(np.int32, 0)]


@case(tags=("lax", "shape"))
def structural(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    v = jnp.asarray(np.arange(3, dtype=np.float32))
    return [
        lax.broadcast_in_dim(v, (2, 3), (1,)), lax.broadcast_in_dim(v, (3, 4), (0,)),
        lax.broadcast_in_dim(jnp.asarray(1.0), (2,), ()), lax.broadcast(v, (2,)),
        lax.reshape(x, (6, 4)), lax.reshape(x, (4, 6), dimensions=(2, 1, 0)),
        lax.transpose(x, (2, 0, 1)), lax.squeeze(x[:1], (0,)), lax.expand_dims(v, (0, 2)),
        lax.rev(x, (0, 2)), lax.rev(x, ()), lax.collapse(x, 1), lax.index_in_dim(x, 1, 2),
        lax.concatenate([x, x], 1), lax.concatenate([v, v, v], 0),
    ]


@case(tags=("lax", "shape"))
def slicing(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(30, dtype=np.float32).reshape(5, 6))
    i = jnp.asarray(np.int32(3))
    return [
        lax.slice(x, (1, 0), (4, 6)), lax.slice(x, (0, 1), (5, 6), (2, 2)),
        lax.slice(x, (2, 2), (2, 4)), lax.slice_in_dim(x, 1, 5, 2, axis=1),
        lax.dynamic_slice(x, (1, 2), (2, 3)), lax.dynamic_slice(x, (i, i), (3, 3)),
        # Start indices are clamped so the slice fits; negative ones count from the end.
        lax.dynamic_slice(x, (4, 5), (2, 3)), lax.dynamic_slice(x, (-1, -10), (2, 2)),
        lax.dynamic_slice_in_dim(x, 3, 2, axis=1),
        lax.dynamic_update_slice(x, jnp.ones((2, 2)), (1, 1)),
        lax.dynamic_update_slice(x, jnp.ones((2, 3)), (4, 5)),
        lax.dynamic_update_slice(x, jnp.zeros((1, 6)), (jnp.asarray(-1), jnp.asarray(0))),
    ]


@case(tags=("lax", "shape"))
def pad(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(1, 13, dtype=np.int32).reshape(3, 4))
    v = jnp.asarray(np.arange(1, 6, dtype=np.float32))
    return [
        lax.pad(v, np.float32(0), ((1, 2, 0),)), lax.pad(v, np.float32(-1), ((0, 0, 1),)),
        lax.pad(v, np.float32(0), ((-1, -2, 0),)), lax.pad(v, np.float32(9), ((-2, 1, 2),)),
        lax.pad(x, np.int32(0), ((1, 0, 1), (0, -1, 0))), lax.pad(x, np.int32(7), ((0, 0, 0),
                                                                                  (2, 2, 2))),
        lax.pad(v, np.float32(0), ((-5, 0, 0),)), jnp.pad(x, 1), jnp.pad(x, ((0, 1), (2, 0))),
        jnp.pad(v, 2, mode="edge"), jnp.pad(v, (1, 2), constant_values=-3.0),
    ]


@case(tags=("lax", "sort"))
def sort(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jnp.asarray(np.array([3.0, -0.0, np.nan, 0.0, -np.inf, 1.0, np.nan, -2.0, 1.0],
                             np.float32))
    i = jnp.asarray(np.array([[3, 1, 2, 1], [0, -5, 7, 7]], np.int32))
    k = jnp.asarray(np.array([2, 1, 2, 1, 0], np.int32))
    v = jnp.asarray(np.arange(5, dtype=np.float32))
    w = jnp.asarray(np.array([9, 8, 7, 6, 5], np.int32))
    return [
        lax.sort(f), lax.sort(i), lax.sort(i, dimension=0), lax.sort((k, v)),
        lax.sort((k, w, v), num_keys=2), lax.sort((k, v), num_keys=1, is_stable=True),
        lax.sort_key_val(k, v), jnp.sort(f), jnp.argsort(k), jnp.argsort(f),
        jnp.sort(i, axis=None), jnp.sort(i, axis=0), jnp.argsort(i, axis=1, descending=True),
        lax.top_k(v, 2), jnp.sort(jnp.asarray(np.array([True, False, True]))),
    ]


@case(tags=("lax", "linalg"))
def dot_general(jax: Any, jnp: Any, lax: Any) -> Any:
    def iv(shape: tuple[int, ...], dtype: str, seed: int) -> Any:
        return jnp.asarray((np.asarray(data(shape, "int8", seed, kind="small")) - 3).astype(dtype))

    a, b = iv((2, 3, 4), "float32", 1), iv((2, 4, 5), "float32", 2)
    i8a, i8b = iv((3, 4), "int8", 3), iv((4, 2), "int8", 4)
    h = iv((3, 4), "float16", 5)
    bf = iv((4, 2), "bfloat16", 6)
    return [
        lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        lax.dot_general(a, b, (((2,), (1,)), ((), ()))),
        lax.dot_general(a, a, (((1, 2), (1, 2)), ((0,), (0,)))),
        lax.dot_general(i8a, i8b, (((1,), (0,)), ((), ()))),
        lax.dot_general(i8a, i8b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32),
        lax.dot_general(h, h, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32),
        lax.dot_general(bf, bf, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float32),
        lax.dot_general(a, b, (((), ()), ((0,), (0,)))),
        lax.dot(a[0], b[0]), lax.dot(i8a, i8b, preferred_element_type=jnp.int16),
    ]


@case(tags=("lax", "reduction"))
def reductions(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((2, 3, 4), "int32", 7))
    f = jnp.asarray(np.array([[1.0, np.nan, -0.0], [0.0, -np.inf, 2.0]], np.float32))
    b = x > 0
    u = jnp.asarray(data((2, 3, 4), "uint8", 8))
    return [
        lax.reduce_max(x, (0,)), lax.reduce_min(x, (1, 2)), lax.reduce_sum(x, (0, 1, 2)),
        lax.reduce_prod(jnp.sign(x), (2,)), lax.reduce_and(b, (1,)), lax.reduce_or(b, (0, 2)),
        lax.reduce_xor(b, (2,)), lax.reduce_max(f, (0,)), lax.reduce_min(f, (1,)),
        lax.reduce_max(x, ()), lax.argmax(x, 1, np.int32), lax.argmin(f, 1, np.int32),
        lax.argmax(u, 2, np.uint8), lax.reduce_sum(u, (1,)), lax.reduce_and(u, (0,)),
    ]


@case(tags=("lax",))
def rounding(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, np.nan, -0.0], np.float32))
    return [lax.round(x), lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), jnp.round(x),
            jnp.round(x * 10, 1), jnp.round(jnp.asarray(np.array([1234, -1251], np.int32))),
            lax.floor(x), lax.ceil(x), jnp.rint(x), jnp.trunc(x)]


@case(tags=("lax",))
def nextafter_and_bits(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([0.0, -0.0, 1.0, np.inf, 3.4028235e38, np.nan], np.float32))
    y = jnp.asarray(np.array([1.0, -1.0, 0.0, 0.0, np.inf, 1.0], np.float32))
    i = jnp.asarray(np.array([0, 1, -1, 2**31 - 1, -(2**31)], np.int32))
    return [lax.nextafter(x, y), lax.nextafter(y, x), lax.population_count(i), lax.clz(i),
            lax.shift_left(i, 3), lax.shift_right_logical(i, 31), lax.bitwise_not(i),
            lax.shift_right_arithmetic(i, jnp.asarray(np.array([0, 1, 31, 32, -1], np.int32))),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10)]


@case(tags=("lax",))
def lax_arith_no_promotion(jax: Any, jnp: Any, lax: Any) -> Any:
    x = _m(jnp, seed=11)
    i = _m(jnp, "int32", seed=12)
    return [lax.add(x, x), lax.sub(i, i), lax.mul(x, 2.0), lax.div(i, 3),
            lax.rem(i, 3), lax.neg(i), lax.abs(x), lax.max(i, 0), lax.sign(x),
            lax.square(x), lax.exp2(jnp.asarray(np.array([0.0, 1.0, -1.0, 10.0], np.float32))),
            lax.ne(i, 0), lax.lt(x, 0.0), lax.eq(x, x), lax.is_finite(x)]


# XLA rewrites division by a constant into multiplication by its reciprocal:
# up to one ULP from the correctly rounded quotient that spec specifies.
@case(tags=("lax",), ulp=1)
def lax_div_by_constant(jax: Any, jnp: Any, lax: Any) -> Any:
    return [lax.div(_m(jnp, seed=11), 3.0)]


@case(tags=("lax",), x64=True)
def lax_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jnp.asarray(data((6,), "float64", 21))
    i = jnp.asarray(data((6,), "int64", 22))
    return [lax.iota(np.int64, 4), lax.sort(f), lax.reduce_sum(i, (0,)),
            lax.convert_element_type(i, np.dtype("float64")), lax.dynamic_slice(f, (i[0],), (2,)),
            lax.population_count(i), lax.clz(i), lax.div(i, 7),
            contraction(lax.dot(f, f), np.abs(np.asarray(f)) @ np.abs(np.asarray(f)), 6)]


@case(tags=("lax", "reduce"))
def variadic_reduce_top_k_barrier_mulhi(jax: Any, jnp: Any, lax: Any) -> Any:
    x = _m(jnp, seed=31)
    idx = lax.broadcasted_iota(np.int32, x.shape, 1)

    def pick(a: Any, b: Any) -> Any:
        take = a[0] >= b[0]
        return lax.select(take, a[0], b[0]), lax.select(take, a[1], b[1])

    i = _m(jnp, "int32", seed=32)
    return [lax.reduce((x, idx), (-np.inf, np.int32(0)), pick, (1,)),
            lax.reduce(i, np.int32(0), lax.add, (0,)), lax.approx_max_k(x, 2),
            lax.approx_min_k(x, 2, reduction_dimension=0), lax.optimization_barrier((x, i)),
            lax.mulhi(i * 7919, i * 104729)]
