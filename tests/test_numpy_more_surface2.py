"""Second batch of the wider jnp surface (``spec/numpy/_more.py``), live against JAX 0.12.

Each case runs the same call through ``spec.numpy`` and ``jax.numpy`` and
compares values, dtypes, weak types and shapes (helpers shared with
``test_numpy_more_surface``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec.numpy as snp
from tests.test_numpy_more_surface import _same, arr, check, raises_like

RNG = np.random.default_rng(1)


def test_complex_warning() -> None:
    assert snp.ComplexWarning is jnp.ComplexWarning


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("mode", ["largest", "smallest"])
def test_top_k(dtype: Any, mode: str) -> None:
    x = arr((3, 6), dtype, -50, 50)
    check("top_k", x, 3, mode=mode)
    check("top_k", x, 2, axis=0, mode=mode)
    check("top_k", x, 2, mode=mode, jit=True, static=(1,))


def test_top_k_errors() -> None:
    raises_like("top_k", arr((4,), np.complex64), 2)
    raises_like("top_k", arr((4,)), 2, mode="middle")


def _both(fn: Any) -> None:
    """fn(lib) gives the same result for spec.numpy and jax.numpy."""
    _same(fn(snp), fn(jnp), 1e-6, 1e-6)


def test_index_tricks() -> None:
    a, b = np.arange(3, dtype=np.int32), np.ones((2, 3), np.float32)
    for fn in [
        lambda L: L.r_[1, 2, 3],
        lambda L: L.r_[L.asarray(a), 0, 1:4, -1:1:5j],
        lambda L: L.r_[L.asarray(b), L.asarray(b)],
        lambda L: L.r_["-1", L.asarray(b), L.asarray(b)],
        lambda L: L.r_["0,2", L.asarray(a), L.asarray(a)],
        lambda L: L.r_["0,2,0", L.asarray(a), L.asarray(a)],
        lambda L: L.r_["r", L.asarray(a), 4],
        lambda L: L.r_["c", L.asarray(a), 4],
        lambda L: L.c_[L.asarray(a), L.asarray(a)],
        lambda L: L.c_[L.asarray(b.T), 1:4],
        lambda L: L.c_[1.5, 2],
        lambda L: L.mgrid[0:4],
        lambda L: L.mgrid[0:4, 1:3],
        lambda L: L.mgrid[0:1:3j, 0:5:2],
        lambda L: L.mgrid[0.5:2, 0:3],
        lambda L: L.ogrid[0:4],
        lambda L: L.ogrid[0:4, 1:3:4j],
        lambda L: L.mgrid[()],
    ]:
        _both(fn)
    assert len(snp.r_) == len(jnp.r_) == 0
    with pytest.raises(ValueError):
        snp.r_["x,y", 1]
    with pytest.raises(ValueError):
        snp.r_[1, "r"]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_interp(dtype: Any) -> None:
    xp = np.sort(RNG.uniform(-3, 3, 7)).astype(dtype)
    fp = arr((7,), dtype)
    x = RNG.uniform(-5, 5, (2, 5)).astype(dtype)
    tol = 2e-3 if dtype == np.float16 else 1e-5
    check("interp", x, xp, fp, rtol=tol, atol=tol)
    check("interp", x, xp, fp, left=-100.0, right=100, rtol=tol, atol=tol)
    check("interp", x, xp, fp, left="extrapolate", right="extrapolate", rtol=tol, atol=tol)
    check("interp", x, xp, fp, period=2.5, rtol=tol, atol=tol)
    check("interp", 0.3, xp, fp, rtol=tol, atol=tol)
    check("interp", 1.0, np.array([0, 1, 1, 2.0]), np.array([0.0, 1.0, 5.0, 6.0]))  # coincident xp
    raises_like("interp", x, xp, fp[:3])
    raises_like("interp", x, xp, fp, left="nope")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_trapezoid(dtype: Any) -> None:
    y = arr((3, 5), dtype)
    tol = 3e-3 if dtype == np.float16 else 1e-5
    check("trapezoid", y, rtol=tol, atol=tol)
    check("trapezoid", y, dx=0.5, axis=0, rtol=tol, atol=tol)
    check("trapezoid", y, x=np.sort(arr((5,), np.float32)), rtol=tol, atol=tol)
    check("trapezoid", y, x=np.sort(arr((3, 5), np.float32), axis=0), axis=0, rtol=tol,
          atol=tol)
    check("trapezoid", y, dx=np.array([0.5, 1.0, 2.0, 1.5], np.float32), rtol=tol, atol=tol)
    check("trapezoid", np.array([1, 2, 3]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_spacing(dtype: Any) -> None:
    x = np.concatenate([arr((6,), dtype), np.zeros(1, dtype)])
    if np.issubdtype(dtype, np.floating):
        x = np.concatenate([x, -x, np.array([np.inf, -np.inf, np.nan], dtype),
                            np.array([np.finfo(dtype).max], dtype)])
    check("spacing", x, rtol=0, atol=0)
    check("spacing", 2.0, rtol=0, atol=0)
    raises_like("spacing", arr((2,), np.complex64))


def test_fill_diagonal() -> None:
    a = arr((4, 5), np.int32)
    check("fill_diagonal", a, 7, inplace=False)
    check("fill_diagonal", a, np.array([1, 2], np.int32), inplace=False)
    check("fill_diagonal", arr((3, 3, 3), np.float32), np.float32(2.5), inplace=False)
    check("fill_diagonal", arr((5, 3), np.float32), np.array([[1, 2], [3, 4]], np.float32),
          inplace=False)
    raises_like("fill_diagonal", a, 7)
    raises_like("fill_diagonal", a, 7, wrap=True, inplace=False)
    raises_like("fill_diagonal", a, np.zeros(0, np.int32), inplace=False)
    raises_like("fill_diagonal", arr((3,), np.int32), 7, inplace=False)
    raises_like("fill_diagonal", arr((3, 3, 4), np.int32), 7, inplace=False)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 16])
def test_windows(name: str, m: int) -> None:
    check(name, m, rtol=1e-6, atol=2e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_i0(dtype: Any) -> None:
    x = RNG.uniform(-20, 20, (40,)).astype(dtype)
    x = np.concatenate([x, np.array([0, 1, -8, 8, 9], dtype)])
    check("i0", x, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=0)
    check("i0", 3.5, rtol=1e-6, atol=0)
    check("i0", x, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=0, jit=True)
    raises_like("i0", arr((2,), np.complex64))


@pytest.mark.parametrize("m", [0, 1, 2, 9])
def test_kaiser(m: int) -> None:
    check("kaiser", m, 3.0, rtol=1e-5, atol=1e-7)
    check("kaiser", m, 14, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_polynomials(dtype: Any) -> None:
    p, q = arr((4,), dtype), arr((2,), dtype)
    x = arr((3, 2), dtype, -2, 3)
    tol = 1e-5
    check("polyval", p, x, rtol=tol, atol=tol)
    check("polyval", p, 2, rtol=tol, atol=tol)
    check("polyval", p, 2.5, rtol=tol, atol=tol)
    check("polyval", np.zeros((0,), dtype), x)
    check("polyval", arr((3, 2), dtype), arr((2,), dtype), rtol=tol, atol=tol)
    check("polyadd", p, q)
    check("polyadd", q, p)
    check("polysub", q, p)
    check("polysub", p, np.ones(1, dtype))
    raises_like("polysub", p, 1)
    check("polymul", p, q, rtol=tol, atol=tol)
    check("polymul", np.r_[np.zeros(2, dtype), q], p, trim_leading_zeros=True, rtol=tol,
          atol=tol)
    for m in [0, 1, 2, 5]:
        check("polyder", p, m, rtol=tol, atol=tol)
        check("polyint", p, m, rtol=tol, atol=tol)
    check("polyint", p, 2, k=3, rtol=tol, atol=tol)
    check("polyint", p, 2, k=np.array([1, 2], dtype), rtol=tol, atol=tol)
    check("poly", q, rtol=tol, atol=tol)
    check("poly", arr((5,), dtype), rtol=tol, atol=tol)
    check("poly", 2.0)
    check("poly", np.zeros((0,), dtype))
    raises_like("polyder", p, -1)
    raises_like("polyint", p, -1)
    raises_like("polyint", p, 2, k=np.ones(3, dtype))


def test_histogram2d_dd() -> None:
    s = arr((50, 3), np.float32)
    w = RNG.uniform(0, 1, 50).astype(np.float32)
    check("histogramdd", s)
    check("histogramdd", s, bins=4, weights=w, rtol=1e-5)
    check("histogramdd", s, bins=[2, 3, 4], range=[(-5, 5), None, (0, 1)])
    check("histogramdd", s, bins=3, density=True, rtol=1e-5)
    check("histogramdd", s[:, :2], bins=[np.array([-5, 0, 6], np.float32), 3])
    x, y = arr((30,), np.float32), arr((30,), np.int32)
    check("histogram2d", x, y)
    check("histogram2d", x, y, bins=[3, 5], density=True, rtol=1e-5)
    check("histogram2d", x, y, bins=4, range=[(-5, 5), (-5, 5)], weights=w[:30], rtol=1e-5)
    raises_like("histogramdd", s, bins=[2, 3])


def test_frombuffer_fromstring() -> None:
    buf = np.arange(6, dtype=np.int16).tobytes()
    check("frombuffer", buf, dtype=np.int16)
    check("frombuffer", buf, dtype=np.uint8, count=4, offset=2)
    check("frombuffer", b"\x00\x00\x80?", dtype=np.float32)
    check("fromstring", "1 2 3.5", sep=" ")
    check("fromstring", "1,2,3", dtype=np.int32, sep=",")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_minmax(dtype: Any) -> None:
    x = arr((3, 4), dtype)
    check("minmax", x)
    check("minmax", x, axis=1, keepdims=True)
    m = arr((3, 4), np.bool_)
    check("minmax", x, axis=0, where=m, initial=(np.array(0, dtype), np.array(1, dtype)))
    raises_like("minmax", np.zeros((0,), dtype))


def test_jit_staged() -> None:
    """The functions trace under jit too (values match JAX's jitted ones)."""
    xp, fp = np.linspace(0, 1, 5).astype(np.float32), arr((5,))
    x = RNG.uniform(0, 1, 4).astype(np.float32)
    check("interp", x, xp, fp, jit=True)
    check("trapezoid", arr((4, 3)), jit=True)
    check("spacing", arr((4,)), jit=True, rtol=0, atol=0)
    check("polyval", arr((3,)), x, jit=True, rtol=1e-6)
    _ = jax  # the oracle module is used through `check`
