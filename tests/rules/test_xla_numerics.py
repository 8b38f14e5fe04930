"""Numerics that spec specifies after XLA's CPU backend, checked bit-exactly
against JAX: flush-to-zero of subnormals, and the blocked cumulative scans."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec._src.core import denormals as _denormals

SUBNORMALS = np.array([1e-40, -1e-40, 2e-39, 0.0, -0.0, 1.5, -3.0, 1e-38], np.float32)

PROGRAMS = {
    "mul": lambda n, x: x * 1.0,
    "add": lambda n, x: x + 0.0,
    "div": lambda n, x: x / 3.0,
    "sub": lambda n, x: x - x[::-1],
    "compare": lambda n, x: x == 0,
    "max": lambda n, x: n.maximum(x, -1.0),
    "sqrt": lambda n, x: n.sqrt(n.abs(x)),
    "neg": lambda n, x: -x,
    "abs": lambda n, x: n.abs(x),
    "select": lambda n, x: n.where(x > -10, x, 0.0),
    "sum": lambda n, x: n.sum(x[:3]),
    "max_reduce": lambda n, x: n.max(x[:3]),
    "cumsum": lambda n, x: n.cumsum(x),
    "argmax": lambda n, x: n.argmax(x[:3]),
    "sort": lambda n, x: n.sort(x),
    "to_f64": lambda n, x: x.astype(n.float64),
    "to_bool": lambda n, x: x.astype(bool),
    "to_bf16": lambda n, x: x.astype(n.bfloat16),
    "dot": lambda n, x: n.dot(x[:2], n.ones(2, n.float32)),
    "bf16_mul": lambda n, x: x.astype(n.bfloat16) * 1,
}


def _bits(x: Any) -> bytes:
    return np.asarray(x).tobytes()


@pytest.mark.parametrize("hardware", [True, False])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_subnormals_follow_xla(name: str, hardware: bool, x64: None) -> None:
    if hardware and not _denormals.hardware_available():
        pytest.skip("no hardware FTZ mode on this platform")
    fn = PROGRAMS[name]
    want = fn(jnp, jnp.asarray(SUBNORMALS))
    _denormals.use_hardware(hardware)
    try:
        got = fn(snp, snp.asarray(SUBNORMALS))
    finally:
        _denormals.use_hardware(True)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert _bits(got) == _bits(want), (np.asarray(got), np.asarray(want))


def test_ieee_mode_keeps_subnormals() -> None:
    spec.config.update("spec_denormals", "ieee")
    try:
        got = np.asarray(snp.asarray(SUBNORMALS) * 1.0)
    finally:
        spec.config.update("spec_denormals", "flush")
    assert _bits(got) == _bits(SUBNORMALS * np.float32(1.0))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16])
# Lengths around XLA's blocking (a power of two and one past it) and a long row.
@pytest.mark.parametrize("n", [1, 16, 17, 33, 300])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cumlogsumexp"])
def test_cumulative_scans_are_bit_exact(dtype: Any, n: int, reverse: bool, op: str) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) * (0.1 if op == "cumprod" else 1.0)
         + (1.0 if op == "cumprod" else 0.0)).astype(dtype)
    want = getattr(jax.lax, op)(jnp.asarray(x), axis=1, reverse=reverse)
    got = getattr(spec.lax, op)(snp.asarray(x), axis=1, reverse=reverse)
    if op == "cumlogsumexp":  # a transcendental: XLA's log/exp differ by ULPs
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=1e-2 if dtype != np.float32 else 1e-5)
    else:
        assert _bits(got) == _bits(want)


def test_cumsum_starts_from_the_identity() -> None:
    x = np.array([-0.0, -0.0], np.float32)
    assert _bits(snp.cumsum(snp.asarray(x))) == _bits(jnp.cumsum(jnp.asarray(x)))


def test_scatter_arithmetic_and_ref_addupdate_flush_subnormals_as_jax() -> None:
    """A scatter that adds or multiplies is arithmetic: XLA CPU flushes its
    subnormal operands and results (found by the refs discharge property
    test); a ref's in-place add is the same addition."""
    import jax
    import jax.numpy as jnp

    import spec
    import spec.numpy as snp

    def run(lib: object, np_: object) -> list[object]:
        x = np_.zeros(3, np_.float32)  # type: ignore[attr-defined]
        v = np.float32(1.9742697882087342e-39)
        r = lib.new_ref(x)  # type: ignore[attr-defined]
        r[1] += v
        r2 = lib.new_ref(x)  # type: ignore[attr-defined]
        lib.ref.addupdate(r2, 1, v)  # type: ignore[attr-defined]
        return [np.asarray(x.at[1].add(v)).tolist(), np.asarray(x.at[1].mul(v)).tolist(),
                np.asarray((x + 1).at[1].add(-1 + v)).tolist(),
                np.asarray(lib.freeze(r)).tolist(),  # type: ignore[attr-defined]
                np.asarray(lib.freeze(r2)).tolist()]  # type: ignore[attr-defined]

    assert run(spec, snp) == run(jax, jnp)


def _flushed_by_definition(x: np.ndarray) -> np.ndarray:
    """Every float32/float64 subnormal (of each complex part) a zero of its sign."""
    if np.iscomplexobj(x):
        out = np.empty_like(x)
        out.real, out.imag = _flushed_by_definition(x.real), _flushed_by_definition(x.imag)
        return out
    tiny = np.finfo(x.dtype).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_large_arrays_flush_as_the_definition(dtype: Any) -> None:
    """Arrays large enough for the blockwise subnormal check: random data with a
    few subnormals, zeros, nan and inf placed anywhere (the last, partial block
    included), in C, Fortran and strided layouts, flush exactly as the
    element-by-element definition; without subnormals the array itself comes
    back."""
    rng = np.random.default_rng(7)
    real = np.dtype(dtype).type(0).real.dtype
    tiny = np.finfo(real).tiny
    n = 2 * (1 << 16) + 123
    for trial in range(6):
        x = rng.standard_normal(n).astype(real)
        if trial % 2:
            x[rng.integers(0, n, 40)] = 0.0
            x[rng.integers(0, n, 3)] = [np.nan, np.inf, -0.0]
        subnormal_at = rng.integers(0, n, trial // 2)  # none in trials 0 and 1
        x[subnormal_at] = (rng.uniform(-1, 1, subnormal_at.size) * tiny).astype(real)
        if np.iscomplexobj(np.empty(0, dtype)):
            pair = np.empty(n, dtype)
            pair.real, pair.imag = x, rng.permutation(x)
            x = pair
        grid = x[:n - 123].reshape(1 << 9, 1 << 8)
        for layout in (x, grid, np.asfortranarray(grid), grid[:, ::2]):
            got = _denormals.flush(layout)
            assert _bits(got) == _bits(_flushed_by_definition(layout))
            if trial < 2:
                assert got is layout


@pytest.mark.parametrize("hardware", [True, False])
def test_dot_reads_subnormal_operands_as_zero(hardware: bool) -> None:
    """float32 contractions on every path of the exact product (scratch memory,
    plain float64 copies, few terms, depth 1) and with a transposed operand,
    operands strewn with subnormals: the result is that of the operands
    flushed by definition, on the hardware path and the explicit one."""
    if hardware and not _denormals.hardware_available():
        pytest.skip("no hardware FTZ mode on this platform")
    rng = np.random.default_rng(11)
    tiny = np.finfo(np.float32).tiny
    cases = [((256, 300), (300, 256), (((1,), (0,)), ((), ()))),
             ((300, 256), (300, 256), (((0,), (0,)), ((), ()))),  # lhs read transposed
             ((64, 128), (128, 64), (((1,), (0,)), ((), ()))),
             ((4, 5), (5, 3), (((1,), (0,)), ((), ()))),
             ((40, 1), (1, 30), (((1,), (0,)), ((), ())))]
    _denormals.use_hardware(hardware)
    try:
        for sa, sb, dims in cases:
            # Large normals, so that a row (column) of subnormals times them gives
            # products that matter unless the subnormals read as zero.
            a = (rng.standard_normal(sa) * 2.0 ** 60).astype(np.float32)
            b = (rng.standard_normal(sb) * 2.0 ** 60).astype(np.float32)
            for x, contracted in ((a, dims[0][0][0]), (b, dims[0][1][0])):
                free = 1 - contracted
                lines = rng.integers(0, x.shape[free], max(1, x.shape[free] // 8))
                index = (slice(None), lines) if free == 1 else (lines, slice(None))
                x[index] = (rng.uniform(-1, 1, x[index].shape) * tiny).astype(np.float32)
            got = spec.lax.dot_general(snp.asarray(a), snp.asarray(b), dims)
            want = spec.lax.dot_general(snp.asarray(_flushed_by_definition(a)),
                                        snp.asarray(_flushed_by_definition(b)), dims)
            assert _bits(got) == _bits(want), (sa, sb)
    finally:
        _denormals.use_hardware(True)


def test_large_dot_flushes_operands_and_results() -> None:
    """A contraction whose operands and result take the blockwise check: one
    subnormal in each operand reads as zero, and a subnormal sum of normal
    products is written as zero (the IEEE result flushed by definition)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 256)).astype(np.float32)
    a[17, 5], b[5, 9] = 3e-39, -2e-40
    fa, fb = _flushed_by_definition(a), _flushed_by_definition(b)
    want = snp.matmul(snp.asarray(fa), snp.asarray(fb))
    assert _bits(snp.matmul(snp.asarray(a), snp.asarray(b))) == _bits(want)
    a[17], b[:, 9] = 0.0, 0.0
    a[17, 5], b[5, 9] = 1e-20, -1e-19  # out[17, 9] = -1e-39, a subnormal
    spec.config.update("spec_denormals", "ieee")
    try:
        ieee = np.asarray(snp.matmul(snp.asarray(a), snp.asarray(b)))
    finally:
        spec.config.update("spec_denormals", "flush")
    assert 0 < -ieee[17, 9] < np.finfo(np.float32).tiny
    got = np.asarray(snp.matmul(snp.asarray(a), snp.asarray(b)))
    assert _bits(got) == _bits(_flushed_by_definition(ieee))
    assert _bits(got[17, 9]) == _bits(np.float32(-0.0))
