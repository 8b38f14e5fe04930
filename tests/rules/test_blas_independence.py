"""The numerical contract of dot_general and conv_general_dilated (SPEC.md 9.4): every float
element is the exact sum of the exact products rounded once to the accumulation type.

Three oracles, none of them spec's own output:

- bit identity across BLAS kernels and thread counts: tests/support/blas_cases.py runs the same
  contractions in subprocesses under OPENBLAS_CORETYPE in {unset, Haswell, SkylakeX, Zen,
  Sandybridge, Prescott} with two threads, and unset with one; every run must print the same
  hashes;
- exact arithmetic: small random and adversarial cases (cancellation, magnitude mixes, ties,
  overflow, subnormals, inf and nan) against Fractions, rounded to nearest-even by hand;
- real JAX, within the stated bound |spec - jax| <= gamma_k * sum |a_i b_i| + 1 ulp.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import ml_dtypes
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax

ROOT = Path(__file__).resolve().parents[2]
CASES_SCRIPT = ROOT / "tests" / "support" / "blas_cases.py"
CORE_TYPES = [None, "Haswell", "SkylakeX", "Zen", "Sandybridge", "Prescott"]
REFERENCE = (None, 1)
# Every kernel with two threads (a kernel and a thread count that could change the bits),
# against the reference of the default kernel on one thread.
ENVIRONMENTS = [REFERENCE] + [(core, 2) for core in CORE_TYPES]
# NumPy itself under a kernel: a small GEMM of each type, which OpenBLAS runs with that kernel.
NUMPY_PROBE = ("import numpy as np\n"
               "for t in (np.float32, np.float64):\n"
               "    a = np.ones((64, 64), t)\n"
               "    assert (a @ a)[0, 0] == 64\n")
SUBPROCESS_TIMEOUT_S = 120


# ------------------------------------------------------------ bit identity across BLAS kernels

def _env(core: str | None, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    if core is not None:
        env["OPENBLAS_CORETYPE"] = core
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(core: str | None, threads: int, code: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(CASES_SCRIPT)] if code is None else [sys.executable, "-c", code]
    try:
        return subprocess.run(args, cwd=ROOT, env=_env(core, threads), capture_output=True,
                              text=True, timeout=SUBPROCESS_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, -9, str(e.stdout or ""),
                                           f"timed out after {SUBPROCESS_TIMEOUT_S} s")


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str | None, int], subprocess.CompletedProcess[str]]:
    """All environments' runs, two at a time (one per core of a small machine)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {env: pool.submit(_run, *env) for env in ENVIRONMENTS}
        return {env: f.result() for env, f in futures.items()}


def _hashes(run: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.rsplit(" ", 1) for line in run.stdout.splitlines() if line.strip())


def _label(env: tuple[str | None, int]) -> str:
    return f"{env[0] or 'unset'}-threads{env[1]}"


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[_label(e) for e in ENVIRONMENTS])
def test_same_bits_under_every_blas_kernel(
        runs: dict[tuple[str | None, int], subprocess.CompletedProcess[str]],
        env: tuple[str | None, int]) -> None:
    reference = runs[REFERENCE]
    assert reference.returncode == 0, reference.stderr[-3000:]
    run = runs[env]
    if run.returncode != 0:
        probe = _run(*env, code=NUMPY_PROBE)
        if probe.returncode != 0:
            # Not spec's doing: NumPy's own small GEMMs fail with this kernel on this CPU
            # (a kernel for instructions the CPU lacks, say).
            pytest.skip(f"NumPy's OpenBLAS cannot run kernel {env[0]} here "
                        f"(probe exit status {probe.returncode})")
        pytest.fail(f"spec's run failed under {_label(env)} (exit status {run.returncode}), "
                    f"although NumPy's small GEMMs work:\n{run.stderr[-3000:]}")
    expected, got = _hashes(reference), _hashes(run)
    assert len(expected) >= 30
    differ = [name for name in expected if got.get(name) != expected[name]]
    assert got.keys() == expected.keys() and not differ, (
        f"different bits under {_label(env)}: {differ}")


# --------------------------------------------------------------------- the exact oracle

def _tiny(dt: np.dtype[Any]) -> float:
    return float(ml_dtypes.finfo(dt).tiny)  # type: ignore[no-untyped-call]


def _flush(x: np.ndarray) -> np.ndarray:
    """XLA CPU's denormals-are-zero for float32/float64 operands."""
    if x.dtype not in (np.float32, np.float64):
        return x
    return np.where(np.abs(x) < _tiny(x.dtype), np.copysign(np.zeros((), x.dtype), x), x)


def _sign(v: Fraction) -> float:
    return -1.0 if v < 0 else 1.0


def _round_f64(v: Fraction) -> float:
    try:
        r = float(v)  # int / int: correctly rounded, ties to even
    except OverflowError:
        return _sign(v) * math.inf
    return _sign(v) * 0.0 if r == 0.0 else r


F32_OVERFLOW = Fraction(2**128 - 2**103)  # halfway between the largest float32 and 2**128


def _round_f32(v: Fraction) -> float:
    """Nearest float32, ties to even: the best of float32(float(v)) and its neighbours,
    judged exactly."""
    if abs(v) >= F32_OVERFLOW:
        return _sign(v) * math.inf
    with np.errstate(over="ignore"):
        c = np.float32(float(v))
        if not np.isfinite(c):
            c = np.float32(_sign(v) * float(np.finfo(np.float32).max))
        options = [c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))]
    options = [o for o in options if np.isfinite(o)]

    def key(o: np.float32) -> tuple[Fraction, int]:
        return abs(Fraction(float(o)) - v), int(np.array(o).view(np.uint32)) & 1

    best = float(min(options, key=key))
    return _sign(v) * 0.0 if best == 0.0 else best


def _product_sum(xs: list[float], ys: list[float]) -> float | Fraction:
    """The sum of the products: exact (a Fraction) for finite factors, else the IEEE sum of
    the special products."""
    if all(map(math.isfinite, xs + ys)):
        return sum((Fraction(a) * Fraction(b) for a, b in zip(xs, ys)), Fraction(0))
    special = []
    for a, b in zip(xs, ys):
        if not (math.isfinite(a) and math.isfinite(b)):
            special.append(math.nan if (a == 0 or b == 0 or math.isnan(a) or math.isnan(b))
                           else math.copysign(math.inf, a) * math.copysign(1.0, b))
    if any(math.isnan(p) for p in special) or (math.inf in special and -math.inf in special):
        return math.nan
    return special[0]


def _oracle_real(a: np.ndarray, b: np.ndarray, acc: np.dtype[Any]) -> np.ndarray:
    """(m, k) @ (k, n), already flushed, each element rounded once to ``acc``."""
    k = a.shape[1]
    rnd = _round_f32 if acc == np.float32 else _round_f64
    out = np.empty((a.shape[0], b.shape[1]), acc)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            xs, ys = a[i].astype(np.float64).tolist(), b[:, j].astype(np.float64).tolist()
            total = _product_sum(xs, ys)
            if isinstance(total, float):
                out[i, j] = total
            elif k == 1:
                # One product is no sum: it keeps the IEEE sign of a zero product.
                r = rnd(total)
                out[i, j] = math.copysign(r, xs[0]) * math.copysign(1.0, ys[0]) if r == 0 else r
            else:
                out[i, j] = rnd(total) if total != 0 else 0.0
    return out


def oracle(a: np.ndarray, b: np.ndarray, out: np.dtype[Any], flush: bool = True) -> np.ndarray:
    """``a @ b`` under the contract, by exact arithmetic: float32 accumulation for float32 and
    narrower results, float64 for float64; complex as four real products (XLA's structure)."""
    if flush:
        a, b = _flush(a), _flush(b)
    if np.dtype(out).kind == "c":
        part = np.dtype(np.float32 if out == np.complex64 else np.float64)
        rr, ii = _oracle_real(a.real, b.real, part), _oracle_real(a.imag, b.imag, part)
        ri, ir = _oracle_real(a.real, b.imag, part), _oracle_real(a.imag, b.real, part)
        with np.errstate(all="ignore"):
            res = (rr - ii) + 1j * (ri + ir)
        return np.asarray(res.astype(out))
    acc = np.dtype(np.float64 if out == np.float64 else np.float32)
    res = _oracle_real(a, b, acc)
    with np.errstate(all="ignore"):
        res = res.astype(out)
    return _flush(res) if flush else res


def assert_same_bits(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), want.astype(
        np.complex128 if want.dtype.kind == "c" else np.float64)
    for part in ((np.real, np.imag) if got.dtype.kind == "c" else (lambda v: v,)):
        gp, wp = part(g), part(w)
        nan = np.isnan(wp)
        assert np.array_equal(np.isnan(gp), nan), (gp, wp)
        same = (gp == wp) & (np.signbit(gp) == np.signbit(wp))
        assert same[~nan].all(), f"got {gp[~nan & ~same][:5]}, exact {wp[~nan & ~same][:5]}"


def _spec_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no floating-point warning may escape
        return np.asarray(slax.dot_general(a, b, (((1,), (0,)), ((), ()))))


def _adversarial(dt: Any) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Named (lhs, rhs) pairs of ``dt`` that stress the rounding."""
    r = np.random.default_rng(7)
    big = 60 if dt == np.float32 else 500
    for k in (2, 3, 7, 33, 300):
        a, b = r.standard_normal((3, k)).astype(dt), r.standard_normal((k, 2)).astype(dt)
        yield f"random k={k}", a, b
        yield f"cancel to zero k={k}", np.concatenate([a, a], 1), np.concatenate([b, -b], 0)
        near = np.concatenate([b, -b], 0)
        near[0] = near[0] * (1 + np.finfo(dt).eps)
        yield f"near cancel k={k}", np.concatenate([a, a], 1), near
        scale = np.ldexp(1.0, r.integers(-big, big, k)).astype(dt)
        yield f"magnitude mix k={k}", a * scale, b
        yield f"scaled factors k={k}", a * scale, b / scale[:, None]
        yield f"integers k={k}", np.round(a * 8), np.round(b * 8)
    p = 24 if dt == np.float32 else 53
    top, tiny_bit = float(2**p), 2.0 ** -(p + 7)
    ones = np.ones((3, 1), dt)
    yield "tie rounds up", np.array([[top, 1.0, tiny_bit]], dt), ones
    yield "tie rounds down", np.array([[top, 1.0, -tiny_bit]], dt), ones
    yield "exact tie to even", np.array([[top, 1.0]], dt), np.ones((2, 1), dt)
    yield "exact tie to even (odd)", np.array([[top + 2, 1.0]], dt), np.ones((2, 1), dt)
    fmax = float(np.finfo(dt).max)
    yield "overflow", np.array([[fmax, fmax * 0.5]], dt), np.ones((2, 1), dt)
    yield "overflow cancelled", np.array([[fmax, fmax, -fmax]], dt), ones
    huge = 1e200 if dt == np.float64 else 1e30
    yield "products past the range", np.array([[huge, huge, 3.0]], dt), np.array(
        [[huge], [-huge], [1.0]], dt)
    tiny = float(np.finfo(dt).tiny)
    yield "subnormal result", np.array([[tiny, tiny]], dt), np.array([[0.75], [-0.5]], dt)
    yield "underflow to -0", np.array([[tiny, tiny]], dt), np.array([[1e-30], [-2e-30]], dt)
    yield "subnormal operands", np.array([[tiny / 4, 1.0]], dt), np.array([[3.0], [tiny]], dt)
    if dt == np.float64:  # rows and columns wider than the exponent range
        for k in (10, 42):
            wide = np.zeros((2, k), dt)
            wide[:, 0], wide[:, 1] = 2.0**1000, 2.0**-80
            pick = np.zeros((k, 3), dt)
            pick[1] = 1.0
            yield f"lost to scaling k={k}", wide, pick
            yield f"lost to scaling, columns k={k}", pick.T.copy(), wide.T.copy()
    if dt == np.float64:  # products beyond TwoProduct's range: summed in integers
        huge = 2.0**1010
        yield "integer sums, cancelling", np.array([[huge * (1 + 2.0**-52), huge, 3.0]], dt), (
            np.array([[2.0**-5], [-(2.0**-5)], [0.0]], dt))
        yield "integer sums, to zero", np.array([[huge, huge] * 20], dt), np.array(
            [[2.0**-5], [-(2.0**-5)]] * 20, dt)
        yield "integer sums, rounding", np.array([[huge, 3.0] * 20], dt), np.array(
            [[2.0**-5], [1.0]] * 20, dt)
    yield "zeros", np.zeros((2, 3), dt), -np.ones((3, 2), dt)
    yield "negative zeros", -np.zeros((2, 3), dt), np.ones((3, 2), dt)
    yield "one product keeps -0.0", np.array([[-0.0], [2.0]], dt), np.array([[1.0, -0.0]], dt)
    for v in (np.inf, -np.inf, np.nan):
        a = r.standard_normal((3, 4)).astype(dt)
        b = r.standard_normal((4, 3)).astype(dt)
        a[1, 2], b[2, 0] = v, 0.0
        yield f"{v} with zeros", a, b
        b[1, 1] = -np.inf
        yield f"{v} with -inf", a, b


ADVERSARIAL = [(np.dtype(dt).name, *c) for dt in (np.float32, np.float64)
               for c in _adversarial(dt)]


@pytest.mark.parametrize("mode", ["flush", "ieee"])
@pytest.mark.parametrize("dtype,name,a,b", ADVERSARIAL,
                         ids=[f"{d}-{n}" for d, n, _, _ in ADVERSARIAL])
def test_exact_against_fractions(dtype: str, name: str, a: np.ndarray, b: np.ndarray,
                                 mode: str) -> None:
    spec.config.update("spec_denormals", mode)
    try:
        with spec.enable_x64(dtype == "float64"):
            got = _spec_matmul(a, b)
    finally:
        spec.config.update("spec_denormals", "flush")
    assert_same_bits(got, oracle(a, b, a.dtype, flush=mode == "flush"))


@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, np.float16])
def test_narrow_floats_round_once_in_float32(dt: Any) -> None:
    r = np.random.default_rng(3)
    a, b = r.standard_normal((4, 300)).astype(dt), r.standard_normal((300, 3)).astype(dt)
    assert_same_bits(_spec_matmul(a, b), oracle(a, b, np.dtype(dt)))
    got = slax.dot(a, b, preferred_element_type=np.float32)
    assert_same_bits(got, oracle(a, b, np.dtype(np.float32)))


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_is_four_real_products(dt: Any) -> None:
    r = np.random.default_rng(4)
    a = (r.standard_normal((3, 40)) + 1j * r.standard_normal((3, 40))).astype(dt)
    b = (r.standard_normal((40, 2)) + 1j * r.standard_normal((40, 2))).astype(dt)
    with spec.enable_x64(dt == np.complex128):
        got = _spec_matmul(a, b)
    assert_same_bits(got, oracle(a, b, np.dtype(dt)))


def test_sampled_elements_of_large_products() -> None:
    """A 64x300x64 and a 512x512x512 product: sampled elements against Fractions."""
    r = np.random.default_rng(5)
    for (m, k, n), dt in (((64, 300, 64), np.float64), ((512, 512, 512), np.float32)):
        a, b = r.standard_normal((m, k)).astype(dt), r.standard_normal((k, n)).astype(dt)
        with spec.enable_x64(dt == np.float64):
            got = np.asarray(snp.matmul(a, b))
        for i, j in zip(r.integers(0, m, 12), r.integers(0, n, 12)):
            want = oracle(a[i:i + 1], b[:, j:j + 1], np.dtype(dt))
            assert_same_bits(got[i:i + 1, j:j + 1], want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_every_element_refined_against_fractions(dt: Any) -> None:
    """Factors scaled along the contraction (products of moderate size from factors that are
    not) leave every element to the per-element sums; all against Fractions."""
    r = np.random.default_rng(12)
    spread = 60 if dt == np.float32 else 400
    scale = np.ldexp(1.0, r.integers(-spread, spread, 200))
    a = (r.standard_normal((12, 200)) * scale).astype(dt)
    b = (r.standard_normal((200, 12)) / scale[:, None]).astype(dt)
    with spec.enable_x64(dt == np.float64):
        got = _spec_matmul(a, b)
    assert_same_bits(got, oracle(a, b, np.dtype(dt)))


def test_float32_ties_decided_by_far_smaller_terms() -> None:
    """Rows whose sums lie just off a float32 tie, by a term 2**-124 of the largest: more
    than the refined sums resolve, so exact ones decide."""
    r = np.random.default_rng(13)
    tiny = r.choice([-1.0, 1.0], 40) * 2.0**-100
    a = np.stack([np.full(40, 2.0**24), np.ones(40), tiny], axis=1).astype(np.float32)
    b = np.ones((3, 4), np.float32)
    assert_same_bits(_spec_matmul(a, b), oracle(a, b, np.dtype(np.float32)))


def _hard_float32(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 (m, k) and (k, n) operands that leave most elements to the per-element sums:
    pairs of products that nearly cancel (sums far below the common bound), rows whose sums a
    term 2**-100 of the largest keeps just off a float32 tie, a subnormal factor, a zero row,
    and a row of a and a column of b scaled far apart (open sums of very different sizes)."""
    r = np.random.default_rng(seed)
    m, n, k = int(r.integers(8, 12)), int(r.integers(6, 10)), int(r.choice([70, 200]))
    half = k // 2
    c, d = r.standard_normal((m, half)), r.standard_normal((half, n))
    a, b = np.concatenate([c, c], 1), np.concatenate([d, -d], 0)
    b[half + r.integers(0, half, 4)] *= 1 + 2.0 ** -23  # exact in float32: tiny, nonzero sums
    ties = r.choice(m, 6, replace=False)
    a[ties] = 0.0
    a[ties, 0], a[ties, 1] = 2.0 ** 24, 1.0
    a[ties, 2] = r.choice([-1.0, 1.0], 6) * 2.0 ** -100
    b[:3], b[half:half + 3] = 1.0, -1.0  # the ties' terms; the other rows still cancel
    a[ties[0], 3] = 1e-40  # subnormal: read as zero or not, per mode
    others = np.setdiff1d(np.arange(m), ties)
    a[others[0]] = 0.0
    a[others[1]] *= 2.0 ** 60
    b[:, -1] *= 2.0 ** -60
    return a.astype(np.float32), b.astype(np.float32)


def _layouts(v: np.ndarray) -> Iterator[np.ndarray]:
    """``v`` as stored, as a transposed view of its transpose, and as a strided view."""
    yield v
    yield np.ascontiguousarray(v.T).T
    wide = np.zeros((v.shape[0], 2 * v.shape[1]), v.dtype)
    wide[:, ::2] = v
    yield wide[:, ::2]


@pytest.mark.parametrize("seed", [0, 1])
def test_float32_settlement_in_every_layout_against_fractions(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The elements the common bound leaves open, decided by one ExtractVector pass, two, or
    an exact sum, for operands in any memory order (widened as stored); every path taken."""
    from spec._src.lax import exact_matmul as em
    taken: list[str] = []

    def spy(name: str, path: str, when: Any = lambda *args: True) -> None:
        real = getattr(em, name)

        def wrapped(*args: Any) -> Any:
            if when(*args):
                taken.append(path)
            return real(*args)
        monkeypatch.setattr(em, name, wrapped)

    spy("_extracted_once_f32", "one pass")
    spy("_exact_f32", "two passes", lambda xr, yr, products: not em._few_short_rows(xr))
    spy("_fsum_products_f32", "exact sum")
    a, b = _hard_float32(seed)
    for daz in (False, True):
        want = oracle(a, b, np.dtype(np.float32), flush=daz)
        for la in _layouts(a):
            for lb in _layouts(b):
                assert_same_bits(_flush(em.matmul(la, lb, daz)) if daz else em.matmul(la, lb),
                                 want)
    # dot_general's own transposes: the contraction over the leading axes of both.
    got = slax.dot_general(np.ascontiguousarray(a.T), b, (((0,), (0,)), ((), ())))
    assert_same_bits(got, oracle(a, b, np.dtype(np.float32)))
    assert set(taken) == {"one pass", "two passes", "exact sum"}


def test_float64_rows_settled_by_their_own_bound() -> None:
    """Integer rows and columns have no remainder, so their sums that cancel to zero are
    exact, though another row's remainder widens the common bound."""
    r = np.random.default_rng(14)
    a = r.integers(-9, 9, (6, 40)).astype(np.float64)
    a[0] = r.standard_normal(40)
    b = r.integers(-9, 9, (40, 5)).astype(np.float64)
    a2, b2 = np.concatenate([a, a], 1), np.concatenate([b, -b], 0)
    a2[0, 40:] = 0.0  # row 0's sums do not cancel
    with spec.enable_x64():
        got = _spec_matmul(a2, b2)
    assert_same_bits(got, oracle(a2, b2, np.dtype(np.float64)))


def test_kernel_rejects_mismatched_operands() -> None:
    from spec._src.lax import exact_matmul as _exact_matmul
    with pytest.raises(TypeError):
        _exact_matmul.matmul(np.ones((2, 2), np.float32), np.ones((2, 2)))
    with pytest.raises(ValueError):
        _exact_matmul.matmul(np.ones((2, 3)), np.ones((2, 2)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_exact_results_of_large_products(dt: Any) -> None:
    """Mathematics where the exact result is known: identity products, sums that cancel
    to +0.0, and integer data (exact in any order)."""
    r = np.random.default_rng(6)
    x = r.standard_normal((300, 70)).astype(dt)
    with spec.enable_x64(dt == np.float64):
        assert_same_bits(snp.matmul(np.eye(300, dtype=dt), x), x)
        c = r.standard_normal((40, 200)).astype(dt)
        zero = snp.matmul(np.concatenate([c, c], 1), np.concatenate([c.T, -c.T], 0))
        assert_same_bits(zero, np.zeros((40, 40), dt))
        ia, ib = r.integers(-50, 50, (30, 400)), r.integers(-50, 50, (400, 20))
        assert_same_bits(snp.matmul(ia.astype(dt), ib.astype(dt)), (ia @ ib).astype(dt))


def test_conv_contracts_under_the_contract() -> None:
    r = np.random.default_rng(8)
    x = r.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = r.standard_normal((2, 3, 3, 3)).astype(np.float32)
    got = np.asarray(slax.conv_general_dilated(x, w, (1, 1), "VALID"))
    # Each output is the window's dot product with the kernel: 27 products.
    windows = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(1, 2))
    lhs = windows.transpose(1, 2, 0, 3, 4).reshape(9, 27)
    want = oracle(lhs, w.reshape(2, 27).T, np.dtype(np.float32))
    assert_same_bits(got[0].transpose(1, 2, 0).reshape(9, 2), want)


def test_integer_and_bool_results_stay_exact() -> None:
    r = np.random.default_rng(9)
    a, b = r.integers(-100, 100, (5, 300)).astype(np.int32), r.integers(-9, 9, (300, 4))
    got = slax.dot(a, b.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(got), (a.astype(np.int64) @ b).astype(np.int32))
    p, q = r.random((4, 7)) < 0.3, r.random((7, 3)) < 0.3
    np.testing.assert_array_equal(np.asarray(slax.dot(p, q)), (p.astype(int) @ q) > 0)


# ------------------------------------------------------------------- against real JAX

def _gamma(k: int, dt: np.dtype[Any]) -> float:
    u = 2.0 ** -53 if np.dtype(dt) in (np.float64, np.complex128) else 2.0 ** -24
    return k * u / (1 - k * u)


def _ulp(v: np.ndarray, dt: Any) -> np.ndarray:
    info = ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
    e = np.frexp(np.abs(v))[1] - 1
    return np.asarray(np.ldexp(1.0, np.maximum(e, int(info.minexp)) - int(info.nmant)))


def assert_within_bound(got: Any, ref: Any, magnitude: np.ndarray, k: int) -> None:
    """|spec - jax| <= gamma_k * sum |a_i b_i| + 1 ulp of the result type (the contract's
    bound: XLA's sum is within gamma_k * sum |a_i b_i| of the exact one, spec's within half
    an ulp)."""
    g, j = np.asarray(got), np.asarray(ref)
    assert g.dtype == j.dtype and g.shape == j.shape
    bound = _gamma(k, g.dtype) * magnitude + _ulp(j.astype(np.float64), g.dtype)
    diff = np.abs(g.astype(np.float64) - j.astype(np.float64))
    assert (diff <= bound).all(), f"max excess {np.max(diff - bound)}"


@pytest.fixture(scope="module")
def cpu_jax() -> Any:
    jax.config.update("jax_platforms", "cpu")  # type: ignore[no-untyped-call]
    return jax


@pytest.mark.parametrize("dt", [np.float32, ml_dtypes.bfloat16, np.float16, np.float64])
def test_matmul_against_jax(cpu_jax: Any, dt: Any) -> None:
    r = np.random.default_rng(10)
    a, b = r.standard_normal((3, 20, 300)).astype(dt), r.standard_normal((3, 300, 9)).astype(dt)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    x64 = dt == np.float64
    with spec.enable_x64(x64):
        got = snp.matmul(a, b)
        got_einsum = snp.einsum("bij,bjk->bik", a, b)
    previous = cpu_jax.config.jax_enable_x64
    cpu_jax.config.update("jax_enable_x64", x64)
    try:
        ref = cpu_jax.numpy.matmul(a, b)
    finally:
        cpu_jax.config.update("jax_enable_x64", previous)
    assert_within_bound(got, ref, mag, 300)
    assert_within_bound(got_einsum, ref, mag, 300)


def test_conv_against_jax(cpu_jax: Any) -> None:
    r = np.random.default_rng(11)
    x = r.standard_normal((2, 8, 12, 12)).astype(np.float32)
    w = r.standard_normal((4, 8, 5, 5)).astype(np.float32)
    got = slax.conv_general_dilated(x, w, (1, 1), "VALID")
    ref = cpu_jax.lax.conv_general_dilated(x, w, (1, 1), "VALID")
    windows = np.lib.stride_tricks.sliding_window_view(np.abs(x.astype(np.float64)), (5, 5),
                                                       axis=(2, 3))
    mag = np.einsum("ncijkl,ockl->noij", windows, np.abs(w.astype(np.float64)))
    assert_within_bound(got, ref, mag, 8 * 25)
