"""The dot algorithms' numerics as named (spec_dot_algorithms="as_named",
the default), against mathematics: a re-implementation of each algorithm's
rounding steps in exact rational arithmetic on small cases, bit for bit, and
the error against the exact product within each preset's bound (SPEC.md 9.4,
"Dot algorithms") as property tests."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spec.numpy as sjnp
from spec import lax as slax

# Significand bits (with the implicit one) of the types the algorithms round to.
BITS = {"bfloat16": 8, "float16": 11, "tf32": 11, "float32": 24, "float64": 53}
# name: (operand storage, accumulation, number of component terms, kept pairs)
X3 = ((0, 0), (0, 1), (1, 0))
X6 = X3 + ((0, 2), (1, 1), (2, 0))
X9 = tuple((i, j) for i in range(3) for j in range(3))
RECIPES = {
    "F16_F16_F16": ("float16", "float16", 1, ((0, 0),)),
    "F16_F16_F32": ("float16", "float32", 1, ((0, 0),)),
    "BF16_BF16_BF16": ("bfloat16", "bfloat16", 1, ((0, 0),)),
    "BF16_BF16_F32": ("bfloat16", "float32", 1, ((0, 0),)),
    "BF16_BF16_F32_X3": ("bfloat16", "float32", 2, X3),
    "BF16_BF16_F32_X6": ("bfloat16", "float32", 3, X6),
    "BF16_BF16_F32_X9": ("bfloat16", "float32", 3, X9),
    "TF32_TF32_F32": ("tf32", "float32", 1, ((0, 0),)),
    "TF32_TF32_F32_X3": ("tf32", "float32", 2, X3),
    "F32_F32_F32": ("float32", "float32", 1, ((0, 0),)),
    "F64_F64_F64": ("float64", "float64", 1, ((0, 0),)),
}


def round_bits(q: Fraction, bits: int) -> Fraction:
    """``q`` rounded to ``bits`` significant bits, to nearest, ties to even
    (values in the normal range of every type used here)."""
    if q == 0:
        return Fraction(0)
    e = math.floor(math.log2(abs(q)))
    while abs(q) >= Fraction(2) ** (e + 1):
        e += 1
    while abs(q) < Fraction(2) ** e:
        e -= 1
    scale = Fraction(2) ** (bits - 1 - e)
    return Fraction(round(q * scale)) / scale  # round() of a Fraction: ties to even


def components(x: float, storage: str, count: int) -> list[Fraction]:
    rest, terms = Fraction(x), []
    for _ in range(count):
        t = round_bits(rest, BITS[storage])
        terms.append(t)
        rest -= t
    return terms


def expected(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """The algorithm's result for float32 operands, element by element."""
    storage, acc, count, kept = RECIPES[name]
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), np.float64)
    ta = [[components(float(a[i, p]), storage, count) for p in range(k)] for i in range(m)]
    tb = [[components(float(b[p, j]), storage, count) for j in range(n)] for p in range(k)]
    for i in range(m):
        for j in range(n):
            s = sum((ta[i][p][u] * tb[p][j][v] for p in range(k) for u, v in kept),
                    Fraction(0))
            if acc in ("float16", "bfloat16"):  # through float64, as specified
                s = round_bits(round_bits(s, 53), BITS[acc])
            out[i, j] = float(round_bits(s, BITS[acc]))
    return out.astype(np.float32)


def _small(seed: int, shape: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(np.float32)


@pytest.mark.parametrize("name", list(RECIPES))
@pytest.mark.parametrize("seed", [0, 1])
def test_rounding_steps_bit_for_bit(name: str, seed: int) -> None:
    a, b = _small(seed, (3, 7)), _small(seed + 10, (7, 2))
    got = np.asarray(slax.dot(a, b, precision=name))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected(a, b, name))


def test_preset_equals_explicit_algorithm() -> None:
    a, b = _small(3, (3, 5)), _small(4, (5, 4))
    explicit = slax.DotAlgorithm(ml_dtypes.bfloat16, ml_dtypes.bfloat16, np.float32,
                                 num_primitive_operations=6)
    np.testing.assert_array_equal(np.asarray(slax.dot(a, b, precision=explicit)),
                                  np.asarray(slax.dot(a, b, precision="BF16_BF16_F32_X6")))


def test_fast_accumulation_adds_block_sums_in_float32() -> None:
    k = 70  # three blocks of 32, 32 and 6 products
    rng = np.random.default_rng(5)
    f8 = np.dtype(ml_dtypes.float8_e4m3fn)
    a = rng.uniform(-8, 8, (2, k)).astype(f8)
    b = rng.uniform(-8, 8, (k, 3)).astype(f8)
    got = np.asarray(slax.dot(a, b, precision="ANY_F8_ANY_F8_F32_FAST_ACCUM",
                              preferred_element_type=np.float32))
    want = np.empty((2, 3), np.float32)
    for i in range(2):
        for j in range(3):
            total = Fraction(0)
            for start in range(0, k, 32):
                block = sum((Fraction(float(a[i, p])) * Fraction(float(b[p, j]))
                             for p in range(start, min(start + 32, k))), Fraction(0))
                total = round_bits(total + round_bits(block, 24), 24)
            want[i, j] = float(total)
    np.testing.assert_array_equal(got, want)
    exact = np.asarray(slax.dot(a, b, precision="ANY_F8_ANY_F8_F32",
                                preferred_element_type=np.float32))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(exact, (a64 @ b64).astype(np.float32))


def test_float8_presets_need_float8_operands() -> None:
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="requires both inputs to have float8 dtypes"):
        slax.dot(a, a, precision="ANY_F8_ANY_F8_ANY")


def test_narrow_inputs_output_dtype_and_preferred_type() -> None:
    x16 = np.full((4, 4), 0.1, np.float16)
    r = sjnp.dot(x16, x16, precision="F16_F16_F32")
    rf = sjnp.dot(x16, x16, precision="F16_F16_F32", preferred_element_type=np.float32)
    assert (r.dtype, rf.dtype) == (np.float16, np.float32)
    exact = 4 * Fraction(float(np.float16(0.1))) ** 2
    assert float(rf[0, 0]) == float(round_bits(exact, 24))
    assert float(r[0, 0]) == float(round_bits(round_bits(exact, 24), 11))


def test_batched_and_complex_layouts_match_the_matrix_case() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5, 2)).astype(np.float32)
    dims = (((2,), (1,)), ((0,), (0,)))
    got = np.asarray(slax.dot_general(a, b, dims, precision="BF16_BF16_F32_X3"))
    for i in range(3):
        np.testing.assert_array_equal(got[i], expected(a[i], b[i], "BF16_BF16_F32_X3"))
    z = (a[0] + 1j * a[1]).astype(np.complex64)
    w = (b[0] - 1j * b[1]).astype(np.complex64)
    gz = np.asarray(slax.dot(z, w, precision="BF16_BF16_F32"))
    def part(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return expected(x, y, "BF16_BF16_F32").astype(np.float32)
    want_re = (part(z.real, w.real) - part(z.imag, w.imag)).astype(np.float32)
    want_im = (part(z.real, w.imag) + part(z.imag, w.real)).astype(np.float32)
    np.testing.assert_array_equal(gz.real, want_re)
    np.testing.assert_array_equal(gz.imag, want_im)


# --------------------------------------------------- error bounds, properties

U = {n: 2.0 ** -b for n, b in BITS.items()}  # unit roundoff of each type
# Error bound per preset: (relative to |exact|, relative to sum |a_i b_i|).
BOUNDS = {
    "F32_F32_F32": (U["float32"], 0.0),
    "F64_F64_F64": (U["float32"] * 1.01, 0.0),
    "BF16_BF16_F32_X9": (U["float32"], 0.0),
    "BF16_BF16_F32_X6": (U["float32"], 3.1 * 2.0 ** -24),
    "BF16_BF16_F32_X3": (U["float32"], 3.1 * 2.0 ** -16),
    "TF32_TF32_F32_X3": (U["float32"], 3.1 * 2.0 ** -22),
    "BF16_BF16_F32": (U["float32"], 2.1 * U["bfloat16"]),
    "TF32_TF32_F32": (U["float32"], 2.1 * U["tf32"]),
    "F16_F16_F32": (U["float32"], 2.1 * U["float16"]),
    "F16_F16_F16": (U["float16"] * 1.01, 2.1 * U["float16"] * 1.01),
    "BF16_BF16_BF16": (U["bfloat16"] * 1.01, 2.1 * U["bfloat16"] * 1.01),
}

# Elements in float16's normal range (and zeros), small enough that no sum overflows it.
_element = st.one_of(st.just(0.0), st.floats(2.0 ** -6, 16.0).flatmap(
    lambda v: st.sampled_from([v, -v])))


@st.composite
def _operands(draw: Any) -> tuple[np.ndarray, np.ndarray]:
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 24)), draw(st.integers(1, 4))
    a = draw(hnp.arrays(np.float32, (m, k), elements=_element))
    b = draw(hnp.arrays(np.float32, (k, n), elements=_element))
    return a, b


@pytest.mark.parametrize("name", list(BOUNDS))
@settings(max_examples=12, deadline=None)
@given(ops=_operands())
def test_error_within_the_preset_bound(name: str, ops: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ops
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64  # a float64 approximation; its own error is ~2**-53 of magnitude
    magnitude = np.abs(a64) @ np.abs(b64)
    got = np.asarray(slax.dot(a, b, precision=name)).astype(np.float64)
    rel_exact, rel_mag = BOUNDS[name]
    bound = rel_exact * np.abs(exact) + (rel_mag + 2.0 ** -50) * magnitude
    assert np.all(np.abs(got - exact) <= bound)


@settings(max_examples=12, deadline=None)
@given(ops=_operands())
def test_nine_bfloat16_products_are_the_float32_product(
        ops: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ops
    np.testing.assert_array_equal(np.asarray(slax.dot(a, b, precision="BF16_BF16_F32_X9")),
                                  np.asarray(slax.dot(a, b, precision="F32_F32_F32")))


def test_explicit_algorithm_parameters_are_checked() -> None:
    a = np.ones((2, 2), np.float32)
    bad = slax.DotAlgorithm(np.float32, np.float32, np.float32, num_primitive_operations=5)
    with pytest.raises(ValueError, match="num_primitive_operations must be 1, 3, 6 or 9.*got 5"):
        slax.dot(a, a, precision=bad)
    bad_acc = slax.DotAlgorithm(np.float32, np.float32, np.int32)
    with pytest.raises(ValueError, match="accumulation_type must be .* got int32"):
        slax.dot(a, a, precision=bad_acc)


def test_any_accumulation_follows_the_preferred_type() -> None:
    rng = np.random.default_rng(9)
    f8 = np.dtype(ml_dtypes.float8_e5m2)
    a = rng.uniform(-4, 4, (3, 9)).astype(f8)
    b = rng.uniform(-4, 4, (9, 2)).astype(f8)
    got = np.asarray(slax.dot(a, b, precision="ANY_F8_ANY_F8_ANY",
                              preferred_element_type=np.float16))
    assert got.dtype == np.float16
    for i in range(3):
        for j in range(2):
            s = sum((Fraction(float(a[i, p])) * Fraction(float(b[p, j])) for p in range(9)),
                    Fraction(0))
            assert float(got[i, j]) == float(round_bits(round_bits(s, 53), 11))


@settings(max_examples=12, deadline=None)
@given(ops=_operands(), depth=st.integers(33, 100))
def test_fast_accumulation_within_its_bound(ops: tuple[np.ndarray, np.ndarray],
                                            depth: int) -> None:
    a, b = ops
    f8 = np.dtype(ml_dtypes.float8_e4m3fn)
    a8 = np.resize(a, (a.shape[0], depth)).astype(f8)
    b8 = np.resize(b, (depth, b.shape[1])).astype(f8)
    a64, b64 = a8.astype(np.float64), b8.astype(np.float64)
    got = np.asarray(slax.dot(a8, b8, precision="ANY_F8_ANY_F8_F32_FAST_ACCUM",
                              preferred_element_type=np.float32)).astype(np.float64)
    blocks = -(-depth // 32)
    bound = (blocks + 1) * U["float32"] * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(got - a64 @ b64) <= bound)
