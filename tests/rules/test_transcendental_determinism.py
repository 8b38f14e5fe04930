"""The determinism contract of spec's real transcendental kernels (SPEC.md 8):
results depend on the operands alone, never on the CPU features NumPy or
glibc dispatch on.

Oracles:
- bit identity across machines: tests/support/transcendental_cases.py runs in
  subprocesses with NumPy's SIMD targets switched off one level at a time
  (only those this CPU has) and with glibc's FMA/AVX2 libm variants off;
  every run must print the same hashes;
- a wider reference: float32 results against np.longdouble evaluations
  rounded to float32 (within an ULP), float64 ones within the stated ULPs
  (where long double is wider than float64);
- real JAX: special values exactly (nan, inf, signed zeros), dense samples
  within a few ULPs.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpy._core import _multiarray_umath as umath

import spec
from spec import lax as slax
from spec._src.lax import elementwise_math as M

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def exact_kernels() -> Any:
    """Every test here but the last runs spec's own kernels."""
    spec.config.update("spec_transcendentals", "exact")
    yield
    spec.config.update("spec_transcendentals", "numpy")
CASES_SCRIPT = ROOT / "tests" / "support" / "transcendental_cases.py"


def _dispatch_variants() -> list[str]:
    """NPY_DISABLE_CPU_FEATURES values: none, then the SIMD targets this CPU
    has switched off from the highest down."""
    present = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return [" ".join(present[i:]) for i in range(len(present), -1, -1)]


def _run(disable: str, tunables: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPY_DISABLE_CPU_FEATURES": disable,
           "GLIBC_TUNABLES": tunables, "SPEC_TRANSCENDENTALS": "exact"}
    done = subprocess.run([sys.executable, str(CASES_SCRIPT)], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return done.stdout


def test_bits_equal_across_cpu_dispatch() -> None:
    # The widest SIMD level, the next one down, and the baseline with glibc's
    # FMA/AVX2 libm variants off as well.
    levels = _dispatch_variants()
    runs = [(d, "") for d in dict.fromkeys(levels[:2])]
    runs.append((levels[-1], "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F"))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(lambda r: _run(*r), runs))
    assert outputs[0].count("\n") == 46
    for (disable, tunables), out in zip(runs, outputs):
        assert out == outputs[0], (disable, tunables)


# ----------------------------------------------------- accuracy vs long double

_RNG = np.random.default_rng(3)
_N = 6000


def _log_uniform(lo: float, hi: float, signed: bool = True) -> np.ndarray:
    mag = 10.0 ** _RNG.uniform(lo, hi, _N)
    return mag * _RNG.choice([-1.0, 1.0], _N) if signed else mag


def _trig() -> np.ndarray:
    return np.concatenate([_RNG.uniform(-10, 10, _N), _log_uniform(0, 300)])


# name -> (reference ufunc, operand generator, float64 ULP bound)
ACCURACY: dict[str, tuple[Any, Any, float]] = {
    "exp": (np.exp, lambda: _RNG.uniform(-745, 709, _N), 1),
    "expm1": (np.expm1, lambda: np.concatenate([_RNG.uniform(-40, 710, _N),
                                                 _log_uniform(-20, 0)]), 1),
    "log": (np.log, lambda: _log_uniform(-307, 308, signed=False), 1),
    "log1p": (np.log1p, lambda: np.concatenate([_RNG.uniform(-1, 10, _N),
                                                 _log_uniform(-20, 0)]), 1),
    "log2": (np.log2, lambda: _log_uniform(-307, 308, signed=False), 1),
    "log10": (np.log10, lambda: _log_uniform(-307, 308, signed=False), 1.5),
    "sin": (np.sin, _trig, 1),
    "cos": (np.cos, _trig, 1),
    "tan": (np.tan, _trig, 2.5),
    "arctan": (np.arctan, lambda: _log_uniform(-10, 10), 1),
    "arcsin": (np.arcsin, lambda: _RNG.uniform(-1, 1, _N), 2.5),
    "arccos": (np.arccos, lambda: _RNG.uniform(-1, 1, _N), 2.5),
    "tanh": (np.tanh, lambda: _log_uniform(-10, 2), 2.5),
    "arcsinh": (np.arcsinh, lambda: _log_uniform(-10, 30), 2.5),
    "arccosh": (np.arccosh, lambda: 1 + _log_uniform(-15, 30, signed=False), 2.5),
    "arctanh": (np.arctanh, lambda: _RNG.uniform(-1, 1, _N), 3),
    "cbrt": (np.cbrt, lambda: _log_uniform(-300, 300), 1),
}

LONG_DOUBLE_IS_WIDER = np.finfo(np.longdouble).nmant > 52
needs_long_double = pytest.mark.skipif(not LONG_DOUBLE_IS_WIDER,
                                       reason="long double is float64 here")


def _ulps(got: np.ndarray, ref: np.ndarray, dt: Any) -> np.ndarray:
    """|got - ref| in ULPs of dt at ref (ref is wider than dt)."""
    spacing = np.spacing(np.abs(ref).astype(dt)).astype(np.longdouble)
    return np.asarray(np.abs(got.astype(np.longdouble) - ref) / spacing)


@needs_long_double
@pytest.mark.parametrize("name", sorted(ACCURACY))
def test_accuracy_against_long_double(name: str) -> None:
    ref_fn, make, bound64 = ACCURACY[name]
    x = make()
    with np.errstate(all="ignore"):
        x32 = x.astype(np.float32)
        for xd, bound in ((x, bound64), (x32, 1.0)):
            ref = ref_fn(xd.astype(np.longdouble))
            got = getattr(M, name)(xd)
            assert got.dtype == xd.dtype
            ref_rounded = ref.astype(xd.dtype)
            # Overflow and underflow follow the rounded reference.
            assert np.array_equal(np.isfinite(got), np.isfinite(ref_rounded)), name
            fin = np.isfinite(ref_rounded) & (ref_rounded != 0)
            err = _ulps(got[fin], ref[fin], xd.dtype)
            assert err.max() <= bound, (name, xd.dtype, float(err.max()), xd[fin][err.argmax()])


@needs_long_double
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_pow_and_atan2_accuracy(dt: Any) -> None:
    x = _log_uniform(-3, 3, signed=False).astype(dt)
    y = _RNG.uniform(-60, 60, _N).astype(dt)
    bound = 1.0 if dt == np.float32 else 2.0
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.longdouble), y.astype(np.longdouble))
        fin = np.isfinite(ref.astype(dt)) & (ref.astype(dt) != 0)
        assert _ulps(M.power(x, y)[fin], ref[fin], dt).max() <= bound
        yy = y * dt(1e-3) ** _RNG.integers(0, 3, _N)
        ref2 = np.arctan2(yy.astype(np.longdouble), (x - dt(3)).astype(np.longdouble))
        assert _ulps(M.arctan2(yy, x - dt(3)), ref2, dt).max() <= bound


def test_large_argument_reduction_is_exact() -> None:
    """sin and cos at multiples-of-pi-adjacent huge arguments: the float32
    neighbours of 2^k pi/2 against long double sin (exact reduction)."""
    x = np.ldexp(np.float64(np.pi / 2), np.arange(20, 1000, 7))
    x = np.concatenate([x, np.nextafter(x, 0), np.nextafter(x, np.inf)])
    if LONG_DOUBLE_IS_WIDER:
        for fn, ref in ((M.sin, np.sin), (M.cos, np.cos)):
            err = _ulps(fn(x), ref(x.astype(np.longdouble)), np.float64)
            assert err.max() <= 1


# ----------------------------------------------------------------- vs JAX

JAX_UNARY = ["exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "atan", "asin",
             "acos", "asinh", "acosh", "atanh", "cbrt", "exp2", "logistic", "sinh", "cosh"]
# float32 ULP bounds against XLA's own (not correctly rounded) kernels.
# XLA's own float32 kernels are not one function of their input within a test
# session: on one machine, run beside other test files in one worker, atan gave
# 2.9 ULPs from the true value at 1.1486 (alone: within 2), sinh 4 and logistic
# 4 ULPs from spec where the file alone stays within 3, while spec's results
# stayed the same (and correctly rounded there). The bounds hold both.
JAX_ULPS = {"log1p": 2, "atan": 3, "tanh": 4, "logistic": 4, "sinh": 4, "cosh": 3, "exp2": 2,
            "asinh": 3, "acosh": 3, "atanh": 3, "asin": 3, "acos": 3, "tan": 3}


def _special_and_dense() -> np.ndarray:
    fi = np.finfo(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.max, -fi.max,
                        fi.tiny, -fi.tiny, 1e-30, 88.72, -103.9, 1e10, -1e30], np.float32)
    dense = (_RNG.standard_normal(4000) * np.exp2(_RNG.uniform(-20, 7, 4000)))
    return np.concatenate([special, dense.astype(np.float32)])


def _domain(name: str, x: np.ndarray) -> np.ndarray:
    if name in ("asin", "acos", "atanh"):
        return np.concatenate([x[:16], np.tanh(x[16:]).astype(np.float32)])
    if name == "acosh":
        return np.concatenate([x[:16], (1 + np.abs(x[16:])).astype(np.float32)])
    return x


@pytest.fixture(scope="module")
def operand() -> np.ndarray:
    return _special_and_dense()


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("name", JAX_UNARY)
def test_matches_jax(name: str, operand: np.ndarray) -> None:
    x = _domain(name, operand)
    expected = np.asarray(getattr(jax.lax, name)(jnp.asarray(x)))
    got = np.asarray(getattr(slax, name)(x))
    assert got.dtype == expected.dtype
    # Special values: same nan-ness, infinities and zeros with their signs.
    same_nan = np.isnan(expected) == np.isnan(got)
    assert same_nan.all(), (name, x[~same_nan][:4])
    num = ~np.isnan(expected)
    exact = num & (np.isinf(expected) | (expected == 0) | np.isinf(got) | (got == 0))
    assert np.array_equal(expected[exact].view(np.int32), got[exact].view(np.int32)), name
    finite = num & ~exact
    d = _ulp_distance(expected[finite], got[finite])
    assert d.max() <= JAX_ULPS.get(name, 1), (name, int(d.max()), x[finite][d.argmax()])


def test_default_is_numpy() -> None:
    spec.config.update("spec_transcendentals", "numpy")
    x = np.linspace(-20, 20, 1001).astype(np.float32)
    for name, ufunc in [("exp", np.exp), ("sin", np.sin), ("tanh", np.tanh)]:
        got = np.asarray(getattr(slax, name)(x))
        assert np.array_equal(got.view(np.uint8), ufunc(x).view(np.uint8)), name
