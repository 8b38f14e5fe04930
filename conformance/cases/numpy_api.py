"""Values of jax.numpy functions: creation, elementwise math, reductions, shape ops, linear
algebra and indexing, over several dtypes (x64 variants for float64/int64).

Elementwise cases are generated from tables: one case per (operation, dtype). Each evaluates the
operation on deterministic random data and on a grid of edge values (zeros of both signs, inf,
NaN, integer extremes, ...), since those are where implementations most often disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import ml_dtypes
import numpy as np

from conformance.cases._util import data
from conformance.registry import case, register_case

FLOATS = ("float32", "float16", "bfloat16")
INTS = ("int32", "int8", "uint8", "uint32")

# -- edge values --------------------------------------------------------------------------------

FLOAT_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5, -1.5, 3.0, 1e4]


def float_specials(dtype: str) -> Any:
    vals = np.array(FLOAT_SPECIALS, np.float64)
    # Largest finite and smallest normal of this dtype.
    finfo: Callable[[Any], Any] = ml_dtypes.finfo
    fi = finfo(np.dtype(dtype))
    extra = np.array([float(fi.max), -float(fi.max), float(fi.tiny)], np.float64)
    return np.concatenate([vals, extra]).astype(dtype)


def int_specials(dtype: str) -> Any:
    ii = np.iinfo(np.dtype(dtype))
    vals = [int(ii.min), int(ii.max), 0, 1, 2, 7, int(ii.max) - 1]
    if ii.min < 0:
        vals += [-1, -7, int(ii.min) + 1]
    return np.array(vals, dtype)


def specials(dtype: str) -> Any:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind in "iu":
        return int_specials(dtype)
    if dt.kind == "c":
        part = "float32" if dt.itemsize == 8 else "float64"
        s = float_specials(part)[:10]
        return (np.repeat(s, len(s)) + 1j * np.tile(s, len(s))).astype(dt)
    return float_specials(dtype)


def pairs(dtype: str) -> tuple[Any, Any]:
    """All ordered pairs of edge values, as two flat arrays."""
    s = specials(dtype)
    if np.dtype(dtype).kind == "c":
        s = s[::7]  # the complex grid is already a product; keep the pair grid small
    return np.repeat(s, len(s)), np.tile(s, len(s))


# -- op tables ----------------------------------------------------------------------------------

OpGetter = Callable[[Any, Any], Callable[..., Any]]


def op(path: str) -> OpGetter:
    """'jnp.exp' / 'lax.rsqrt' resolved against the implementation under test at run time."""
    mod, _, attr = path.partition(".")

    def get(jnp: Any, lax: Any) -> Callable[..., Any]:
        return getattr(jnp if mod == "jnp" else lax, attr)  # type: ignore[no-any-return]

    return get


# Per-primitive ULP bounds: XLA's approximations measured against correctly rounded float64
# results (on 4000 points per op), plus margin for the other implementation's own error.
# f16/bf16 are computed in f32 by XLA and rounded, hence small bounds there.
def tol(f32: int, half: int = 2, f64: int = 4, c64: int = 8) -> dict[str, int]:
    return {"float32": f32, "float16": half, "bfloat16": half, "float64": f64,
            "complex64": c64, "complex128": c64}  # fmt: skip


EXACT: dict[str, int] = {}
TRANSCENDENTAL = tol(4)

# name -> (op, input kind, ulp bounds)
UNARY_FLOAT: dict[str, tuple[OpGetter, str, Mapping[str, int]]] = {
    "negative": (op("jnp.negative"), "any", EXACT),
    "sign": (op("jnp.sign"), "any", EXACT),
    "floor": (op("jnp.floor"), "any", EXACT),
    "ceil": (op("jnp.ceil"), "any", EXACT),
    "round": (op("jnp.round"), "any", EXACT),
    "trunc": (op("jnp.trunc"), "any", EXACT),
    "isfinite": (op("jnp.isfinite"), "any", EXACT),
    "isnan": (op("jnp.isnan"), "any", EXACT),
    "isinf": (op("jnp.isinf"), "any", EXACT),
    "abs": (op("jnp.abs"), "any", EXACT),
    "square": (op("jnp.square"), "any", EXACT),
    "reciprocal": (op("jnp.reciprocal"), "any", EXACT),
    "sqrt": (op("jnp.sqrt"), "pos", tol(1, 1, 1)),
    "exp": (op("jnp.exp"), "any", TRANSCENDENTAL),
    "exp2": (op("jnp.exp2"), "any", tol(4, 5, 4)),
    "log": (op("jnp.log"), "pos", TRANSCENDENTAL),
    "log1p": (op("jnp.log1p"), "pos", TRANSCENDENTAL),
    "expm1": (op("jnp.expm1"), "any", TRANSCENDENTAL),
    "tanh": (op("jnp.tanh"), "any", tol(5, 2, 6)),
    "sin": (op("jnp.sin"), "any", TRANSCENDENTAL),
    "cos": (op("jnp.cos"), "any", TRANSCENDENTAL),
    "tan": (op("jnp.tan"), "any", TRANSCENDENTAL),
    "arcsin": (op("jnp.arcsin"), "unit", TRANSCENDENTAL),
    "arccos": (op("jnp.arccos"), "unit", TRANSCENDENTAL),
    "arctan": (op("jnp.arctan"), "any", tol(5, 2, 5)),
    "sinh": (op("jnp.sinh"), "any", TRANSCENDENTAL),
    "cosh": (op("jnp.cosh"), "any", TRANSCENDENTAL),
    "arcsinh": (op("jnp.arcsinh"), "any", TRANSCENDENTAL),
    "arccosh": (op("jnp.arccosh"), "ge1", tol(5, 3, 4)),
    "arctanh": (op("jnp.arctanh"), "unit", TRANSCENDENTAL),
    "cbrt": (op("jnp.cbrt"), "any", tol(4, 2, 5)),
    "rsqrt": (op("lax.rsqrt"), "pos", TRANSCENDENTAL),
    "erf": (op("lax.erf"), "any", tol(7, 2, 4)),
    "erfc": (op("lax.erfc"), "any", tol(12, 2, 14)),
    "erf_inv": (op("lax.erf_inv"), "unit", tol(5, 2, 6)),
    # lgamma/digamma have roots in (1, 2); away from them the error is bounded.
    "lgamma": (op("lax.lgamma"), "gamma", tol(4, 2, 128)),
    "digamma": (op("lax.digamma"), "gamma", tol(20, 3, 20)),
}

UNARY_INT: dict[str, OpGetter] = {
    "negative": op("jnp.negative"),
    "sign": op("jnp.sign"),
    "abs": op("jnp.abs"),
    "invert": op("jnp.invert"),
    "square": op("jnp.square"),
    "population_count": op("lax.population_count"),
    "clz": op("lax.clz"),
}

UNARY_COMPLEX: dict[str, tuple[OpGetter, Mapping[str, int]]] = {
    "negative": (op("jnp.negative"), EXACT),
    "real": (op("jnp.real"), EXACT),
    "imag": (op("jnp.imag"), EXACT),
    "conj": (op("jnp.conj"), EXACT),
    "abs": (op("jnp.abs"), tol(2, 2, 2, 2)),
    "sign": (op("jnp.sign"), tol(2, 2, 2, 2)),
    "square": (op("jnp.square"), tol(2, 2, 2, 2)),
    "exp": (op("jnp.exp"), tol(8, 8, 8, 8)),
    "log": (op("jnp.log"), tol(8, 8, 8, 8)),
    "sqrt": (op("jnp.sqrt"), tol(8, 8, 8, 8)),
    "sin": (op("jnp.sin"), tol(8, 8, 8, 8)),
    "cos": (op("jnp.cos"), tol(8, 8, 8, 8)),
    "tanh": (op("jnp.tanh"), tol(8, 8, 8, 8)),
}

BINARY_FLOAT: dict[str, tuple[OpGetter, Mapping[str, int]]] = {
    "add": (op("jnp.add"), EXACT),
    "subtract": (op("jnp.subtract"), EXACT),
    "multiply": (op("jnp.multiply"), EXACT),
    "true_divide": (op("jnp.true_divide"), EXACT),
    "floor_divide": (op("jnp.floor_divide"), EXACT),
    "remainder": (op("jnp.remainder"), EXACT),
    "fmod": (op("jnp.fmod"), EXACT),
    "lax_rem": (op("lax.rem"), EXACT),
    "power": (op("jnp.power"), TRANSCENDENTAL),
    "lax_pow": (op("lax.pow"), TRANSCENDENTAL),
    "maximum": (op("jnp.maximum"), EXACT),
    "minimum": (op("jnp.minimum"), EXACT),
    "lax_max": (op("lax.max"), EXACT),
    "arctan2": (op("jnp.arctan2"), TRANSCENDENTAL),
    "nextafter": (op("jnp.nextafter"), EXACT),
    "copysign": (op("jnp.copysign"), EXACT),
    "equal": (op("jnp.equal"), EXACT),
    "not_equal": (op("jnp.not_equal"), EXACT),
    "less": (op("jnp.less"), EXACT),
    "less_equal": (op("jnp.less_equal"), EXACT),
    "greater": (op("jnp.greater"), EXACT),
    "greater_equal": (op("jnp.greater_equal"), EXACT),
}

BINARY_INT: dict[str, OpGetter] = {
    "add": op("jnp.add"),
    "subtract": op("jnp.subtract"),
    "multiply": op("jnp.multiply"),
    "floor_divide": op("jnp.floor_divide"),
    "true_divide": op("jnp.true_divide"),
    "remainder": op("jnp.remainder"),
    "fmod": op("jnp.fmod"),
    "lax_div": op("lax.div"),
    "lax_rem": op("lax.rem"),
    "maximum": op("jnp.maximum"),
    "minimum": op("jnp.minimum"),
    "bitwise_and": op("jnp.bitwise_and"),
    "bitwise_or": op("jnp.bitwise_or"),
    "bitwise_xor": op("jnp.bitwise_xor"),
    "left_shift": op("jnp.left_shift"),
    "right_shift": op("jnp.right_shift"),
    "shift_right_logical": op("lax.shift_right_logical"),
    "shift_right_arithmetic": op("lax.shift_right_arithmetic"),
    "equal": op("jnp.equal"),
    "less": op("jnp.less"),
    "greater_equal": op("jnp.greater_equal"),
}

BINARY_BOOL: dict[str, OpGetter] = {
    "logical_and": op("jnp.logical_and"),
    "logical_or": op("jnp.logical_or"),
    "logical_xor": op("jnp.logical_xor"),
    "bitwise_and": op("jnp.bitwise_and"),
    "bitwise_xor": op("jnp.bitwise_xor"),
    "add": op("jnp.add"),
    "multiply": op("jnp.multiply"),
    "maximum": op("jnp.maximum"),
    "equal": op("jnp.equal"),
    "greater": op("jnp.greater"),
}

BINARY_COMPLEX: dict[str, tuple[OpGetter, Mapping[str, int]]] = {
    "add": (op("jnp.add"), EXACT),
    "subtract": (op("jnp.subtract"), EXACT),
    "multiply": (op("jnp.multiply"), tol(2, 2, 2, 2)),
    "true_divide": (op("jnp.true_divide"), tol(4, 4, 4, 4)),
    "equal": (op("jnp.equal"), EXACT),
    "not_equal": (op("jnp.not_equal"), EXACT),
}


def _input(dtype: str, kind: str, seed: int) -> Any:
    if kind == "ge1":
        return (np.asarray(data((12,), dtype, seed, kind="pos")) + 1).astype(dtype)
    if kind == "gamma":
        lo = np.asarray(data((6,), "float64", seed, kind="unit")) * 0.4 + 0.5  # (0.1, 0.9)
        hi = np.asarray(data((6,), "float64", seed + 1, kind="unit")) * 0.7 + 3.2  # (2.5, 3.9)
        return np.concatenate([lo, hi]).astype(dtype)
    return np.asarray(data((12,), dtype, seed, kind=kind))


# Random data and edge values go through a single call (one flat array), which keeps the number
# of distinct programs JAX has to compile - the dominant cost of the reference - low.
# Broadcasting is covered separately by `binary_broadcasting`.
def _unary(get: OpGetter, dtype: str, kind: str, seed: int) -> Callable[[Any, Any, Any], Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        x = np.concatenate([_input(dtype, kind, seed), specials(dtype)])
        return get(jnp, lax)(jnp.asarray(x))

    return fn


def _binary(get: OpGetter, dtype: str, kind: str, seed: int) -> Callable[[Any, Any, Any], Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        px, py = pairs(dtype)
        x = np.concatenate([np.asarray(data((12,), dtype, seed, kind=kind)), px])
        y = np.concatenate([np.asarray(data((12,), dtype, seed + 1, kind=kind)), py])
        return get(jnp, lax)(jnp.asarray(x), jnp.asarray(y))

    return fn


def _shift_kind(name: str) -> str:
    return "small" if "shift" in name or name == "power" else "any"


def _register_elementwise() -> None:
    m, seed = __name__, 100
    for name, (get, kind, ulp) in UNARY_FLOAT.items():
        for dt in FLOATS:
            seed += 1
            register_case(f"unary_{name}_{dt}", _unary(get, dt, kind, seed), module=m,
                          tags=("elementwise", "unary"), ulp=ulp)
        register_case(f"unary_{name}_float64", _unary(get, "float64", kind, seed), module=m,
                      tags=("elementwise", "unary"), ulp=ulp, x64=True)
    for name, iget in UNARY_INT.items():
        for dt in INTS:
            seed += 1
            register_case(f"unary_{name}_{dt}", _unary(iget, dt, "any", seed), module=m,
                          tags=("elementwise", "unary"))
        register_case(f"unary_{name}_int64", _unary(iget, "int64", "any", seed), module=m,
                      tags=("elementwise", "unary"), x64=True)
    for name, bget in (("logical_not", op("jnp.logical_not")), ("invert", op("jnp.invert"))):
        register_case(f"unary_{name}_bool", _unary(bget, "bool", "any", 7), module=m,
                      tags=("elementwise", "unary"))
    for name, (cget, ulp) in UNARY_COMPLEX.items():
        seed += 1
        register_case(f"unary_{name}_complex64", _unary(cget, "complex64", "unit", seed),
                      module=m, tags=("elementwise", "unary"), ulp=ulp)
    for name, (get2, ulp) in BINARY_FLOAT.items():
        for dt in FLOATS:
            seed += 1
            register_case(f"binary_{name}_{dt}", _binary(get2, dt, "any", seed), module=m,
                          tags=("elementwise", "binary"), ulp=ulp)
        register_case(f"binary_{name}_float64", _binary(get2, "float64", "any", seed),
                      module=m, tags=("elementwise", "binary"), ulp=ulp, x64=True)
    for name, iget in BINARY_INT.items():
        for dt in INTS:
            seed += 1
            register_case(f"binary_{name}_{dt}", _binary(iget, dt, _shift_kind(name), seed),
                          module=m, tags=("elementwise", "binary"))
        register_case(f"binary_{name}_int64", _binary(iget, "int64", _shift_kind(name), seed),
                      module=m, tags=("elementwise", "binary"), x64=True)
    for name, bget in BINARY_BOOL.items():
        seed += 1
        register_case(f"binary_{name}_bool", _binary(bget, "bool", "any", seed), module=m,
                      tags=("elementwise", "binary"))
    for name, (cget, ulp) in BINARY_COMPLEX.items():
        seed += 1
        register_case(f"binary_{name}_complex64", _binary(cget, "complex64", "unit", seed),
                      module=m, tags=("elementwise", "binary"), ulp=ulp)


_register_elementwise()


@case(tags=("elementwise", "broadcasting"))
def binary_broadcasting(jax: Any, jnp: Any, lax: Any) -> Any:
    m = jnp.asarray(data((3, 4), "float32", 1))
    r = jnp.asarray(data((4,), "float32", 2))
    c = jnp.asarray(data((3, 1), "int32", 3))
    b = jnp.asarray(data((1, 4), "bool", 4))
    s = jnp.asarray(data((), "float32", 5))
    return [m + r, m * c, c - r, m + s, jnp.maximum(c, b), jnp.where(b, m, c), c < r,
            jnp.zeros((2, 1, 3)) + jnp.ones((4, 1)), jnp.add(r, 2)]


# XLA may divide by a broadcast divisor as a multiplication by its reciprocal,
# one ULP from the correctly rounded quotient that spec specifies.
@case(tags=("elementwise", "broadcasting"), ulp=1)
def binary_broadcasting_divide(jax: Any, jnp: Any, lax: Any) -> Any:
    m = jnp.asarray(data((3, 4), "float32", 1))
    return [m[:, :1] / m[:1, :]]


@case(tags=("elementwise",))
def power_int(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([-3, -1, 0, 1, 2, 5], np.int32))
    y = jnp.asarray(np.array([0, 1, 2, 3, 5, 7], np.int32))
    return [jnp.power(x, y), x ** 3, jnp.power(x.astype(jnp.uint8), 2), x ** 0]


@case(tags=("elementwise",), ulp=tol(4))
def integer_pow(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([-2.5, -1.0, 0.0, 0.5, 3.0, np.inf], np.float32))
    i = jnp.asarray(np.array([-3, -1, 0, 1, 2, 5], np.int32))
    return [lax.integer_pow(x, y) for y in (-2, -1, 0, 1, 2, 3, 7)] + [
        lax.integer_pow(i, y) for y in (0, 1, 2, 3)
    ]


@case(tags=("elementwise",))
def lax_complex(jax: Any, jnp: Any, lax: Any) -> Any:
    re = jnp.asarray(data((5,), "float32", 1))
    im = jnp.asarray(data((5,), "float32", 2))
    return [lax.complex(re, im), lax.complex(re, 2.0), lax.complex(re[0], im)]


@case(tags=("elementwise",), x64=True)
def lax_complex_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    re = jnp.asarray(data((5,), "float64", 1))
    return [lax.complex(re, re * 2), jnp.real(lax.complex(re, re))]


@case(tags=("elementwise",))
def nan_propagation(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([np.nan, 1.0, np.nan, -0.0], np.float32))
    y = jnp.asarray(np.array([1.0, np.nan, np.nan, 0.0], np.float32))
    return [jnp.maximum(x, y), jnp.minimum(x, y), lax.max(x, y), lax.min(x, y),
            jnp.fmax(x, y), jnp.fmin(x, y), jnp.nanmax(x), jnp.max(x)]


@case(tags=("elementwise",))
def mixed_scalar_operands(jax: Any, jnp: Any, lax: Any) -> Any:
    i8 = jnp.asarray(np.array([1, -2, 100], np.int8))
    u8 = jnp.asarray(np.array([1, 2, 200], np.uint8))
    f16 = jnp.asarray(np.array([1.5, -2.0, 60000.0], np.float16))
    return [i8 + 1, i8 * 2, u8 + 100, 1.5 * i8, f16 * 2, f16 + 1e5, i8 / 2, u8 // 3,
            i8 ** 2, 2 ** u8.astype(jnp.int32), -u8, ~u8, u8 >> 1, i8 << 2]


# -- creation -----------------------------------------------------------------------------------


@case(tags=("creation",))
def creation_array(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.array([1, 2, 3]),
        jnp.array([1, 2.5]),
        jnp.array([[1, 2], [3, 4]], dtype=jnp.float16),
        jnp.array([True, False]),
        jnp.array(3),
        jnp.array(3.5),
        jnp.array(1 + 2j),
        jnp.array([1, 2j]),
        jnp.array(np.arange(4, dtype=np.int16)),
        jnp.array(np.float64(1.5)),
        jnp.array([]),
        jnp.array([[]]),
        jnp.array([jnp.asarray(1.0), 2]),
        jnp.array(np.arange(3, dtype=np.uint64)),
        jnp.array(np.arange(3, dtype=np.float64)),
    ]


@case(tags=("creation",))
def creation_asarray(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(3, dtype=np.float32))
    return [
        jnp.asarray(x),
        jnp.asarray(x, dtype=jnp.int32),
        jnp.asarray([1, 2, 3], dtype=jnp.uint8),
        jnp.asarray(2.0),
        jnp.asarray(2, dtype=jnp.float32),
        jnp.asarray([1.0, 2]),
        jnp.asarray((1, 2)),
        jnp.asarray(np.int64(5)),
        jnp.asarray(np.array([1, 2], np.int64)),
        jnp.asarray(True),
        jnp.asarray(np.arange(4, dtype=ml_dtypes.bfloat16)),
    ]


@case(tags=("creation",))
def creation_fill(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.zeros(3),
        jnp.zeros((2, 3), jnp.int8),
        jnp.zeros((), bool),
        jnp.zeros((0, 2)),
        jnp.ones((2,), jnp.complex64),
        jnp.ones(4, dtype=jnp.bfloat16),
        jnp.ones([2, 2], int),
        jnp.full((2, 2), 7),
        jnp.full((3,), 2.5, jnp.float16),
        jnp.full((2,), jnp.asarray(np.int8(3))),
        jnp.full((2, 3), jnp.asarray(np.array([1, 2, 3], np.float32))),
        jnp.full((), True),
        jnp.empty((2, 3)).shape,
        jnp.empty((2,), jnp.int32).dtype,
    ]


@case(tags=("creation",))
def creation_like(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((2, 3), "int16", 5))
    f = jnp.asarray(2.0)  # weak-typed template
    return [
        jnp.zeros_like(x),
        jnp.ones_like(x),
        jnp.full_like(x, 7),
        jnp.full_like(x, 2.9),
        jnp.zeros_like(x, dtype=jnp.float32),
        jnp.ones_like(x, shape=(4,)),
        jnp.zeros_like(f),
        jnp.ones_like(f),
        jnp.full_like(f, 3),
        jnp.empty_like(x).shape,
    ]


@case(tags=("creation",))
def creation_arange(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.arange(5),
        jnp.arange(2, 7),
        jnp.arange(10, 0, -3),
        jnp.arange(0.0, 1.0, 0.25),
        jnp.arange(5.0),
        jnp.arange(0, 1, 0.1),
        jnp.arange(3, dtype=jnp.float16),
        jnp.arange(1, 9, 2, dtype=jnp.uint8),
        jnp.arange(0),
        jnp.arange(5, 2),
        jnp.arange(np.int16(4)),
    ]


@case(tags=("creation",), ulp=tol(1))
def creation_linspace(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.linspace(0, 1, 5),
        jnp.linspace(0, 1, 7),
        jnp.linspace(-1.0, 1.0, 4, endpoint=False),
        jnp.linspace(2, 3, 1),
        jnp.linspace(0, 10, 6, dtype=jnp.int32),
        jnp.linspace(0, 1, 3, retstep=True),
        jnp.linspace(jnp.asarray([0.0, 1.0]), 2.0, 3),
        jnp.linspace(0, 1, 0),
    ]


@case(tags=("creation",))
def creation_eye(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.eye(3),
        jnp.eye(2, 4),
        jnp.eye(4, 3, k=1),
        jnp.eye(3, k=-2, dtype=jnp.int8),
        jnp.eye(0),
        jnp.identity(2, dtype=bool),
    ]


@case(tags=("creation",), x64=True)
def creation_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    return [
        jnp.arange(5),
        jnp.arange(2.0),
        jnp.zeros(2),
        jnp.ones(2, int),
        jnp.array([1, 2]),
        jnp.array(1.5),
        jnp.asarray(np.array([1, 2], np.int64)),
        jnp.full((2,), 3),
        jnp.linspace(0, 1, 3),
        jnp.eye(2),
    ]


# -- reductions ---------------------------------------------------------------------------------


REDUCTIONS = ("sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin")
CUMULATIVE = ("cumsum", "cumprod")
# Dtypes per reduction beyond float32/int32/bool/bfloat16: the narrow integer types matter where
# the accumulation dtype differs from the input dtype.
EXTRA_DTYPES: dict[str, tuple[str, ...]] = {
    "sum": ("int8", "uint8", "float16"), "prod": ("int8",), "mean": ("float16", "uint8"),
    "max": ("uint8",), "cumsum": ("int8", "uint8"),
}  # fmt: skip
RANDOM_FLOAT = ("sum", "prod", "mean", "cumsum")
X64_REDUCTIONS = ("sum", "mean", "max", "argmax", "cumsum")


def _reduction_case(name: str, dtype: str, kind: str, seed: int) -> Callable[..., Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        if kind == "intvalued":
            # Integer-valued floats make sums and products exact whatever the summation order.
            raw = np.asarray(data((3, 4), "int8", seed, kind="small")).astype(dtype)
        else:
            raw = data((3, 4), dtype, seed, kind=kind)
        x = jnp.asarray(raw)
        f = getattr(jnp, name)
        if name in CUMULATIVE:
            return [f(x), f(x, axis=0), f(x, axis=1)]
        return [f(x), f(x, axis=0), f(x, axis=1, keepdims=True)]

    return fn


def _reduction_ulp(name: str) -> int:
    # jnp.mean divides by the element count, a compile-time constant; XLA
    # rewrites x / c as x * (1 / c), which can differ from the correctly
    # rounded quotient (spec's definition) by one ULP.
    return 1 if name == "mean" else 0


def _register_reductions() -> None:
    m, seed = __name__, 5000
    for name in REDUCTIONS + CUMULATIVE:
        for dt in ("float32", "int32", "bool", "bfloat16") + EXTRA_DTYPES.get(name, ()):
            seed += 1
            is_float = dt in ("float32", "bfloat16", "float16")
            kind = "intvalued" if is_float and name in RANDOM_FLOAT else "any"
            register_case(f"reduce_{name}_{dt}", _reduction_case(name, dt, kind, seed),
                          module=m, tags=("reduction",), ulp=_reduction_ulp(name))
        if name in RANDOM_FLOAT:
            register_case(f"reduce_{name}_float32_random",
                          _reduction_case(name, "float32", "pos", seed), module=m,
                          tags=("reduction",), ulp=tol(16, 2, 16))
        if name in X64_REDUCTIONS:
            for dt, kind in (("int64", "any"), ("float64", "intvalued")):
                register_case(f"reduce_{name}_{dt}", _reduction_case(name, dt, kind, seed),
                              module=m, tags=("reduction",), x64=True,
                              ulp=_reduction_ulp(name))


_register_reductions()


@case(tags=("reduction",))
def reduce_axes(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((2, 3, 4), "int32", 7))
    return [jnp.sum(x, axis=(0, 2)), jnp.sum(x, axis=-1), jnp.max(x, axis=(1, 2), keepdims=True),
            jnp.any(x > 50, axis=(0, 1)), jnp.argmax(x, axis=-1), jnp.min(x, axis=())]


@case(tags=("reduction",), ulp=tol(16, 2, 16))
def reduce_var_std(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((3, 4), "float32", 11, kind="pos"))
    i = jnp.asarray(data((3, 4), "int32", 12))
    h = jnp.asarray(data((3, 4), "bfloat16", 13, kind="pos"))
    out = []
    for a in (x, i, h):
        out += [jnp.var(a), jnp.var(a, axis=0), jnp.std(a, axis=1), jnp.std(a, ddof=1),
                jnp.var(a, axis=1, keepdims=True)]
    return out


@case(tags=("reduction",))
def reduce_dtype_args(jax: Any, jnp: Any, lax: Any) -> Any:
    i8 = jnp.asarray(data((6,), "int8", 3))
    b = jnp.asarray(data((6,), "bool", 4))
    f = jnp.asarray(data((6,), "int8", 5, kind="small").astype(np.float32))
    return [jnp.sum(i8, dtype=jnp.int8), jnp.sum(i8, dtype=jnp.float32), jnp.sum(b),
            jnp.mean(i8), jnp.mean(b), jnp.prod(b), jnp.cumsum(b), jnp.sum(f, dtype=jnp.int32),
            jnp.max(b), jnp.sum(i8, where=i8 > 0), jnp.sum(i8, initial=5),
            jnp.max(i8, initial=50), jnp.mean(f, where=f > 1)]


@case(tags=("reduction",))
def reduce_empty(jax: Any, jnp: Any, lax: Any) -> Any:
    e = jnp.zeros((0, 3))
    ei = jnp.zeros((0, 3), jnp.int32)
    return [jnp.sum(e), jnp.sum(e, axis=0), jnp.prod(e, axis=0), jnp.all(e), jnp.any(e),
            jnp.sum(ei, axis=1), jnp.cumsum(e, axis=0), jnp.mean(e, axis=0)]


@case(tags=("reduction",))
def reduce_nan(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0]], np.float32))
    return [jnp.max(x), jnp.min(x, axis=0), jnp.argmax(x, axis=1), jnp.argmin(x),
            jnp.sum(x, axis=0), jnp.nansum(x), jnp.cumsum(x, axis=1), jnp.nanmax(x, axis=1)]


@case(tags=("reduction",))
def lax_cumulative(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((3, 4), "int32", 21))
    f = jnp.asarray(data((3, 4), "float32", 22))
    return [lax.cummax(x, axis=0), lax.cummax(f, axis=1), lax.cummin(x, axis=1),
            lax.cummax(x, axis=1, reverse=True), lax.cumsum(x, axis=0, reverse=True),
            lax.cumprod(x.astype(jnp.int8), axis=1), lax.cumlogsumexp(f, axis=1)]


# -- shape ops ----------------------------------------------------------------------------------


@case(tags=("shape",))
def shape_reshape(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(24, dtype=np.int32))
    return [x.reshape(2, 3, 4), x.reshape((4, -1)), jnp.reshape(x, (2, 12)),
            jnp.reshape(x, (-1,)), x.reshape(2, 3, 4).reshape(6, 4, order="F"),
            jnp.ravel(x.reshape(4, 6).T), x.reshape(1, 24, 1).shape, x[:1].reshape(()),
            jnp.reshape(x, 24)]


@case(tags=("shape",))
def shape_transpose(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((2, 3, 4), "float32", 31))
    return [x.T, jnp.transpose(x), jnp.transpose(x, (1, 0, 2)), x.transpose(2, 0, 1),
            jnp.swapaxes(x, 0, 2), jnp.swapaxes(x, -1, 1), jnp.moveaxis(x, 0, -1),
            jnp.moveaxis(x, (0, 1), (2, 0)), jnp.transpose(x, (-1, 0, 1)), x.mT]


@case(tags=("shape",))
def shape_squeeze_expand(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((1, 3, 1, 2), "int8", 32))
    return [jnp.squeeze(x), jnp.squeeze(x, axis=0), jnp.squeeze(x, axis=(0, 2)),
            x.squeeze(-2), jnp.expand_dims(x, 0), jnp.expand_dims(x, -1),
            jnp.expand_dims(x, (0, 3)), jnp.expand_dims(jnp.asarray(1.0), 0)]


@case(tags=("shape",))
def shape_concat_stack(jax: Any, jnp: Any, lax: Any) -> Any:
    a = jnp.asarray(data((2, 3), "float32", 33))
    b = jnp.asarray(data((2, 3), "int32", 34))
    c = jnp.asarray(data((1, 3), "float32", 35))
    return [jnp.concatenate([a, c]), jnp.concatenate([a, b], axis=1),
            jnp.concatenate([a, a], axis=-1), jnp.concatenate([a, b], axis=None),
            jnp.concatenate([a]), jnp.stack([a, b]), jnp.stack([a, a], axis=1),
            jnp.stack([a, a], axis=-1), jnp.hstack([a, b]), jnp.vstack([a, c]),
            jnp.concatenate([jnp.zeros((0, 3)), a]), jnp.concatenate([a, 1 + c.astype(int)])]


@case(tags=("shape",))
def shape_split(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    return [jnp.split(x, 2), jnp.split(x, 3, axis=1), jnp.split(x, [1, 3]),
            jnp.split(x, [2, 10], axis=1), jnp.array_split(x, 3, axis=1),
            jnp.split(x, np.array([1]), axis=0)]


@case(tags=("shape",))
def shape_where(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(data((3, 4), "float32", 36))
    y = jnp.asarray(data((4,), "int32", 37))
    c = x > 0
    return [jnp.where(c, x, y), jnp.where(c, x, 0), jnp.where(c, 1, 2), jnp.where(c, 1.5, y),
            jnp.where(True, x, y), jnp.where(c), jnp.where(y > 0, y, -y), jnp.nonzero(y > 0),
            jnp.where(c, jnp.asarray(2.0), 3)]


@case(tags=("shape",))
def shape_tile_repeat(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    return [jnp.tile(x, 2), jnp.tile(x, (2, 1)), jnp.tile(x, (2, 1, 2)), jnp.repeat(x, 2),
            jnp.repeat(x, 2, axis=0), jnp.repeat(x, np.array([1, 0, 2]), axis=1),
            jnp.repeat(x, np.array([2, 1]), axis=0), jnp.tile(jnp.asarray(1.5), 3),
            jnp.broadcast_to(x[0], (2, 2, 3)), jnp.flip(x), jnp.flip(x, 1),
            jnp.roll(x, 1), jnp.roll(x, -1, axis=1), jnp.atleast_2d(x[0])]


# -- linear algebra -----------------------------------------------------------------------------


def _intvalued(shape: tuple[int, ...], dtype: str, seed: int) -> Any:
    # Small integers keep every product and sum exact, so accumulation order cannot matter.
    return np.asarray(data(shape, "int8", seed, kind="small")).astype(dtype) - 2


def _linalg_operands(jnp: Any, dtype: str) -> dict[str, Any]:
    shapes = {"a": (2, 3), "b": (3, 4), "v": (3,), "w": (3,), "t": (5, 2, 3), "u": (5, 3, 2)}
    return {k: jnp.asarray(_intvalued(s, dtype, i)) for i, (k, s) in enumerate(shapes.items())}


@case(tags=("linalg",))
def linalg_float32(jax: Any, jnp: Any, lax: Any) -> Any:
    o = _linalg_operands(jnp, "float32")
    a, b, v, w, t, u = (o[k] for k in "abvwtu")
    return [
        jnp.dot(a, b), jnp.dot(v, w), jnp.dot(a, v), jnp.dot(v, b), jnp.dot(a, 2),
        jnp.matmul(a, b), a @ b, v @ w, t @ u, t @ b, jnp.matmul(v, u),
        jnp.einsum("ij,jk->ik", a, b), jnp.einsum("bij,bjk->bik", t, u),
        jnp.einsum("i,i->", v, w), jnp.einsum("ij->ji", a), jnp.einsum("ij->", a),
        jnp.einsum("i,j->ij", v, w), jnp.einsum("bij->bj", t), jnp.einsum("...j,j", a, v),
        jnp.outer(v, w), jnp.vdot(v, w), jnp.vdot(a, a), jnp.tensordot(a, b, axes=1),
        jnp.tensordot(t, u, axes=([1, 2], [2, 1])), jnp.tensordot(v, w, axes=0),
        jnp.inner(v, w), jnp.matmul(a, b, preferred_element_type=jnp.float32),
    ]


def _linalg_case(dtype: str) -> Callable[..., Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        o = _linalg_operands(jnp, dtype)
        a, b, v, w, t, u = (o[k] for k in "abvwtu")
        return [a @ b, jnp.dot(v, w), t @ u, jnp.einsum("bij,bjk->bik", t, u), jnp.vdot(v, w),
                jnp.outer(v, w), jnp.tensordot(a, b, axes=1)]

    return fn


for _dt in ("int32", "bfloat16", "float16", "int8", "complex64"):
    register_case(f"linalg_{_dt}", _linalg_case(_dt), module=__name__, tags=("linalg",))
register_case("linalg_float64", _linalg_case("float64"), module=__name__, tags=("linalg",),
              x64=True)


@case(tags=("linalg",), ulp=tol(8))
def linalg_random_float32(jax: Any, jnp: Any, lax: Any) -> Any:
    a = jnp.asarray(data((4, 8), "float32", 41, kind="pos"))
    b = jnp.asarray(data((8, 3), "float32", 42, kind="pos"))
    return [a @ b, jnp.einsum("ij,jk->ik", a, b), jnp.dot(a[0], b[:, 0])]


@case(tags=("linalg",))
def linalg_mixed_dtypes(jax: Any, jnp: Any, lax: Any) -> Any:
    a = jnp.asarray(_intvalued((2, 3), "int32", 1))
    b = jnp.asarray(_intvalued((3, 2), "float32", 2))
    c = jnp.asarray(_intvalued((3, 2), "bool", 3) > 0)
    d = jnp.asarray(_intvalued((3, 2), "uint8", 4) + 2)
    z = jnp.asarray(_intvalued((3,), "complex64", 5) * (1 + 1j))
    return [a @ b, a @ c, a @ d, jnp.dot(b.T, 2.5), jnp.vdot(z, z), jnp.dot(z, z),
            jnp.outer(z, a[0])]


# -- indexing -----------------------------------------------------------------------------------


def _cube(jnp: Any) -> Any:
    return jnp.asarray(np.arange(60, dtype=np.float32).reshape(3, 4, 5))


@case(tags=("indexing",))
def index_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    x = _cube(jnp)
    return [x[1], x[-1], x[1, 2], x[1, 2, 3], x[1:], x[::2], x[::-1], x[:, 1:3], x[..., 0],
            x[None], x[:, None, 1], x[1, ..., None], x[-2:, ::-2, 1:4:2], x[...],
            x[5:], x[2:1], x[:, -10:10]]


@case(tags=("indexing",))
def index_out_of_range(jax: Any, jnp: Any, lax: Any) -> Any:
    # Static integer indices past the end do not raise in JAX: they are clamped.
    x = _cube(jnp)
    return [x[3], x[-4], x[0, 9], x[1, -9, 2], x.at[7].get(), x[:, 4]]


@case(tags=("indexing",))
def index_advanced(jax: Any, jnp: Any, lax: Any) -> Any:
    x = _cube(jnp)
    i = np.array([0, 2, -1])
    j = jnp.asarray(np.array([[0, 1], [3, 2]], np.int32))
    m = np.array([True, False, True])
    return [x[i], x[jnp.asarray(i)], x[j], x[:, j], x[i, :, i], x[i, 1], x[1, j, ::2],
            x[m], x[x > 50], x[:, np.array([True, False, True, False])],
            x[jnp.asarray(2)], x[jnp.asarray(7)], x[jnp.asarray(np.int8(-1))],
            x[:, jnp.asarray(np.array([9, -9]))], x[jnp.asarray(1), :, jnp.asarray(1)],
            x[None, i], x[..., i]]


@case(tags=("indexing",))
def index_at_updates(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    dup = jnp.asarray(np.array([0, 2, 0, 1], np.int32))
    return [
        x.at[1].set(-1.0), x.at[:, 0].set(jnp.asarray(np.array([7.0, 8.0, 9.0], np.float32))),
        x.at[1, 2].add(10), x.at[dup].add(1.0), x.at[dup, dup].add(2.5),
        x.at[dup].mul(2.0), x.at[dup, 1].min(-3.0), x.at[dup, 1].max(100),
        x.at[0].get(), x.at[dup].get(), x.at[jnp.asarray(5)].get(mode="fill", fill_value=-1.0),
        x.at[jnp.asarray(np.array([5, -1, 1]))].set(0.0),
        x.at[np.array([True, False, True])].set(4.0), x.at[..., -1].set(1),
        x.at[1:, ::2].add(jnp.asarray(np.ones((2, 2), np.float32))),
        x.at[jnp.asarray(np.array([7]))].get(mode="clip"), x.at[2].divide(4.0),
        x.at[0, 0].power(2), x.at[0].apply(jnp.negative),
    ]


@case(tags=("indexing",))
def index_at_int_dtypes(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(6, dtype=np.uint8))
    b = jnp.zeros(4, bool)
    i = jnp.asarray(np.array([1, 1, 3], np.int32))
    return [x.at[i].add(200), x.at[2].set(300 % 256), x.at[i].mul(3), x.at[i].min(0),
            b.at[i].set(True), x.at[1].set(jnp.asarray(2.7)), x.at[i].get()]


@case(tags=("indexing",), x64=True)
def index_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    i = jnp.asarray(np.array([2, 0], np.int64))
    return [x[i], x[1, i], x.at[i].add(1.0), x[jnp.asarray(1)], jnp.arange(4)[i]]


# -- x64 --------------------------------------------------------------------------------------


@case(tags=("x64",), x64=True)
def x64_arithmetic(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jnp.asarray(data((5,), "float64", 61))
    i = jnp.asarray(data((5,), "int64", 62))
    big = jnp.asarray(np.array([2**40, -(2**50), 2**62], np.int64))
    return [f + i, f * 2, i + 1, i * 2.5, big * 2, big // 3, jnp.sum(big), big.astype(jnp.float32),
            f.astype(jnp.float32), jnp.asarray(1.0) + 1, i.astype(jnp.int8),
            jnp.asarray(np.uint64(2**63)) + 1, jnp.mean(i), jnp.arange(3) * 1.5]
