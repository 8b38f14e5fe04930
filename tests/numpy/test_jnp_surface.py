"""The wider jnp surface of ``spec/_src/numpy/``, checked live against JAX 0.12:
array-API aliases, shape helpers, creation, statistics, searching and sorting,
set operations, selection, index tricks, interpolation and integration,
windows, polynomials, histograms and the other functions below.

Each case runs the same call through ``spec.numpy`` and ``jax.numpy`` on the
same inputs (NumPy arrays become each library's array) and compares values,
dtypes, weak types and shapes; ``jit`` cases run both under their ``jit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import errors_alike

RNG = np.random.default_rng(0)


def _to(lib: Any, x: Any) -> Any:
    """NumPy arrays inside ``x`` (also in lists/tuples) as ``lib`` arrays."""
    if isinstance(x, np.ndarray):
        return lib.asarray(x)
    if isinstance(x, list):
        return [_to(lib, v) for v in x]
    if isinstance(x, tuple):
        return tuple(_to(lib, v) for v in x)
    return x


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _same(got: Any, want: Any, rtol: float, atol: float) -> None:
    assert isinstance(got, (list, tuple)) == isinstance(want, (list, tuple)), (got, want)
    if isinstance(want, tuple) and type(want) is not tuple:  # a named result tuple
        assert type(got).__name__ == type(want).__name__
        assert got._fields == want._fields
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), (got, want)
    for a, b in zip(g, w):
        if not hasattr(b, "dtype") or isinstance(b, np.ndarray):
            assert type(a) is type(b) and np.array_equal(a, b, equal_nan=True), (a, b)
            continue
        assert np.dtype(a.dtype) == np.dtype(b.dtype), (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert bool(a.aval.weak_type) == bool(b.weak_type), ("weak", a.aval.weak_type,
                                                             b.weak_type)
        av, bv = np.asarray(a), np.asarray(b)
        if np.issubdtype(bv.dtype, np.inexact) and (rtol or atol):
            np.testing.assert_allclose(av.astype(np.complex128 if np.iscomplexobj(bv)
                                                 else np.float64),
                                       bv.astype(np.complex128 if np.iscomplexobj(bv)
                                                 else np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(av, bv)


def check(name: str, *args: Any, rtol: float = 1e-6, atol: float = 1e-6, jit: bool = False,
          static: tuple[int, ...] = (), **kw: Any) -> None:
    """spec.numpy.<name>(*args, **kw) equals jax.numpy.<name>(*args, **kw)."""
    sf: Callable[..., Any] = getattr(snp, name)
    jf: Callable[..., Any] = getattr(jnp, name)
    sargs, jargs = _to(snp, args), _to(jnp, args)
    skw, jkw = _to(snp, kw), _to(jnp, kw)
    if jit:
        want = jax.jit(lambda *a: jf(*a, **jkw), static_argnums=static)(*jargs)
        got = spec.jit(lambda *a: sf(*a, **skw), static_argnums=static)(*sargs)
    else:
        want = jf(*jargs, **jkw)
        got = sf(*sargs, **skw)
    _same(got, want, rtol, atol)


def raises_like(name: str, *args: Any, **kw: Any) -> None:
    """spec raises the class JAX raises."""
    errors_alike(lambda: getattr(snp, name)(*_to(snp, args), **_to(snp, kw)),
                 lambda: getattr(jnp, name)(*_to(jnp, args), **_to(jnp, kw)))


def arr(shape: tuple[int, ...], dtype: Any = np.float32, low: int = -5,
        high: int = 6) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.unsignedinteger):
        low = 0
    if np.issubdtype(dtype, np.complexfloating):
        return (RNG.uniform(low, high, shape) + 1j * RNG.uniform(low, high, shape)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        return RNG.uniform(low, high, shape).astype(dtype)
    return RNG.integers(low, high, shape).astype(dtype)


# ================================================================ constants

def test_constants() -> None:
    for name in ["pi", "e", "inf", "nan", "euler_gamma", "newaxis"]:
        a, b = getattr(snp, name), getattr(jnp, name)
        assert type(a) is type(b)
        assert a is b or a == b or (np.isnan(a) and np.isnan(b))
    assert snp.index_exp[1:2] == jnp.index_exp[1:2]
    assert snp.s_[::2, 1] == jnp.s_[::2, 1]


# ======================================================== array-API aliases

@pytest.mark.parametrize("name,low,high", [("acos", -1, 1), ("asin", -1, 1), ("atan", -5, 5),
                                           ("acosh", 1, 5), ("asinh", -5, 5),
                                           ("atanh", -1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_trig_aliases(name: str, low: int, high: int, dtype: Any) -> None:
    x = RNG.uniform(low, high, (5,)).astype(dtype)
    check(name, x, rtol=2e-3 if dtype == np.float16 else 1e-6)
    check(name, 0.5 if low < 1 else 1.5)


def test_binary_aliases() -> None:
    x, y = arr((4,)), arr((3, 1))
    check("atan2", x, y)
    check("atan2", 1, x)
    i, j = arr((5,), np.int32, 0, 5), arr((5,), np.int8, 0, 5)
    check("bitwise_left_shift", i, j)
    check("bitwise_right_shift", i, 2)
    check("bitwise_invert", j)
    check("bitwise_invert", arr((3,), bool))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint16, np.bool_])
def test_bitwise_count(dtype: Any) -> None:
    check("bitwise_count", arr((6,), dtype, -100, 100))
    check("bitwise_count", arr((2, 3), dtype, -100, 100), jit=True)
    raises_like("bitwise_count", arr((3,)))


def test_bitwise_count_x64(x64: None) -> None:
    check("bitwise_count", np.array([-(2 ** 40), 7, -1], np.int64))
    check("bitwise_count", 7)


def test_concat() -> None:
    check("concat", [arr((2, 3)), arr((1, 3), np.int32)])
    check("concat", [arr((2, 3)), arr((2, 1))], axis=1)
    check("concat", [arr((2, 3)), arr((3,))], axis=None)
    raises_like("concat", [arr((2, 3)), arr((2, 1))])


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.uint32])
def test_cumulative(name: str, dtype: Any) -> None:
    check(name, arr((5,), dtype, -2, 3))
    check(name, arr((3, 4), dtype, -2, 3), axis=1, include_initial=True)
    check(name, arr((3, 4), dtype, -2, 3), axis=0, dtype=np.float32)
    check(name, arr((3, 4), dtype, -2, 3), axis=-1, include_initial=True, jit=True)
    raises_like(name, arr((3, 4), dtype))
    raises_like(name, np.float32(1))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_vecdot_matvec_vecmat(dtype: Any) -> None:
    check("vecdot", arr((2, 3, 4), dtype), arr((3, 4), dtype), rtol=1e-5)
    check("vecdot", arr((3, 4), dtype), arr((3, 1), dtype), axis=0, rtol=1e-5)
    check("matvec", arr((2, 3, 4), dtype), arr((5, 1, 4), dtype), rtol=1e-5)
    check("matvec", arr((3, 4), dtype), arr((4,), np.float32), rtol=1e-5)
    check("vecmat", arr((2, 3), dtype), arr((4, 1, 3, 5), dtype), rtol=1e-5)
    check("vecmat", arr((3,), dtype), arr((3, 5), dtype), rtol=1e-5, jit=True)
    raises_like("vecdot", arr((3, 4), dtype), arr((3, 5), dtype))
    raises_like("matvec", arr((3, 4), dtype), arr((3,), dtype))


def test_unstack_isscalar_iterable() -> None:
    check("unstack", arr((3, 2)))
    check("unstack", arr((3, 2, 4)), axis=-1)
    check("unstack", arr((3, 2)), axis=1, jit=True)
    raises_like("unstack", np.float32(3))
    for v in [1, 1.5, np.float32(2), np.ones(()), np.ones(3), [1], "s", None]:
        assert snp.isscalar(v) == jnp.isscalar(v), v
        assert snp.iterable(v) == jnp.iterable(v), v
    assert snp.isscalar(snp.ones(())) and not snp.isscalar(snp.ones(2))
    assert spec.jit(lambda x: x * snp.isscalar(x))(snp.ones(())) == 1


# ============================================================ shape helpers

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_append_diff_ediff1d(dtype: Any) -> None:
    x = arr((3, 4), dtype)
    check("append", x, arr((2, 4), np.int32))
    check("append", x, arr((2, 4), dtype), axis=0)
    check("append", x, 2.5)
    check("diff", x)
    check("diff", x, n=2, axis=0)
    check("diff", x, prepend=arr((3, 1), dtype), append=1)
    check("diff", arr((6,), dtype), n=3, jit=True)
    check("diff", x, n=0)
    raises_like("diff", x, n=-1)
    raises_like("diff", np.float32(1))
    if dtype != np.bool_:
        check("ediff1d", x)
        check("ediff1d", x, to_begin=np.array([1.5, 2]), to_end=7)
        check("ediff1d", arr((5,), dtype), jit=True)


def test_flips_rot90_rollaxis() -> None:
    x = arr((2, 3, 4))
    check("fliplr", x)
    check("flipud", x)
    raises_like("fliplr", arr((3,)))
    for k in range(-1, 5):
        check("rot90", x, k=k)
        check("rot90", x, k=k, axes=(2, 0))
    raises_like("rot90", arr((3,)))
    raises_like("rot90", x, axes=(1, 1))
    for axis in range(-3, 3):
        for start in range(-3, 4):
            check("rollaxis", x, axis, start)
    raises_like("rollaxis", x, 0, 5)


def test_stacking_and_splitting() -> None:
    a, b = arr((3,)), arr((3,), np.int32)
    check("column_stack", [a, b])
    check("column_stack", [arr((3, 2)), a])
    check("column_stack", arr((4, 3)))
    check("column_stack", arr((4,)))
    check("column_stack", arr((2, 3, 4)))
    check("dstack", [a, b])
    check("dstack", [arr((3, 2)), arr((3, 2), np.int8)])
    check("dstack", arr((2, 3)))
    check("dstack", [a, a], dtype=np.int32)
    x = arr((4, 6, 2))
    check("hsplit", x, 3)
    check("hsplit", arr((6,)), [1, 4])
    check("vsplit", x, 2)
    check("dsplit", x, [1])
    raises_like("vsplit", x, 3)
    raises_like("dsplit", arr((4, 4)), 2)


def test_block() -> None:
    a, b = arr((2, 2)), arr((2, 3), np.int32)
    check("block", [[a, b], [arr((1, 2)), arr((1, 3))]])
    check("block", [arr((3,)), 1.0, arr((2,))])
    check("block", arr((2,)))
    check("block", [[1, 2], [3, 4]])
    raises_like("block", [[a], a])
    raises_like("block", [])
    raises_like("block", (a, a))


def test_broadcast_shapes() -> None:
    for shapes in [((2, 3), (3,)), ((1,), (4, 1, 2), (5, 1)), (3, (2, 1)), ((),), ()]:
        assert snp.broadcast_shapes(*shapes) == jnp.broadcast_shapes(*shapes)
    raises_like("broadcast_shapes", (2, 3), (4, 3))


def test_resize_trim_zeros() -> None:
    x = arr((2, 3), np.int32)
    for shape in [(3, 4), 7, (0,), (2, 0, 1), (1,)]:
        check("resize", x, shape)
    check("resize", np.zeros((0,), np.float32), (2, 2))
    raises_like("resize", x, (-1, 2))
    z = np.array([0, 0, 1, 2, 0, 3, 0, 0], np.float32)
    for trim in ["fb", "f", "b", "", "FB"]:
        check("trim_zeros", z, trim)
    m = np.zeros((4, 5), np.int32)
    m[1:3, 2] = 1
    check("trim_zeros", m)
    check("trim_zeros", m, axis=1)
    check("trim_zeros", np.zeros(3, np.int32))
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jnp.trim_zeros)(jnp.asarray(z))
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(snp.trim_zeros)(snp.asarray(z))


def test_delete_insert() -> None:
    x = arr((4, 5))
    check("delete", x, 2)
    check("delete", x, slice(1, None, 2), axis=1)
    raises_like("delete", x, [0, 2, 2])
    check("delete", x, np.array([True, False, True, False]), axis=0)
    check("delete", x, np.array([1, -1]), axis=1, assume_unique_indices=True)
    raises_like("delete", x, np.array([1.0]), axis=1)
    raises_like("delete", x, np.array([True]), axis=1)
    check("insert", x, 1, 5.0)
    check("insert", x, 2, arr((4,)), axis=1)
    check("insert", x, np.array([1, 3]), arr((2, 5)), axis=0)
    check("insert", x, slice(0, 4, 2), np.array([7, 8]), axis=1)
    check("insert", arr((5,), np.int32), np.array([5, 0]), 9.7)
    raises_like("insert", x, [1], 0.0)
    raises_like("insert", x, np.array([[1]]), 0.0)
    raises_like("insert", x, np.array([1.0]), 0.0)


# ================================================================= creation

def test_meshgrid_indices() -> None:
    a, b, c = arr((3,)), arr((4,), np.int32), arr((2,))
    for indexing in ["xy", "ij"]:
        for sparse in [False, True]:
            check("meshgrid", a, b, c, indexing=indexing, sparse=sparse)
            check("meshgrid", a, b, indexing=indexing, sparse=sparse)
    check("meshgrid", a)
    check("meshgrid")
    raises_like("meshgrid", arr((2, 2)))
    raises_like("meshgrid", a, indexing="xx")
    check("indices", (2, 3))
    check("indices", (2, 3, 1), dtype=np.int8, sparse=True)
    check("indices", ())


def test_log_geomspace() -> None:
    check("logspace", 0, 2, 5)
    check("logspace", 0.5, np.array([1.0, 3.0], np.float32), 4, endpoint=False, base=2.0)
    check("logspace", 1, 3, 4, dtype=np.int32, axis=0)
    check("logspace", np.int8(0), 2, 3, rtol=1e-5)
    check("geomspace", 1, 1000, 4, rtol=1e-5)
    check("geomspace", -1.0, -16.0, 5, rtol=1e-5)
    check("geomspace", np.array([1.0, 2.0]), np.array([10.0, 20.0]), 3, axis=1, rtol=1e-5)
    check("geomspace", 2, 64, 6, dtype=np.int32, endpoint=False)


def test_log_geomspace_x64(x64: None) -> None:
    check("logspace", 0, 2, 5, rtol=1e-12)
    check("geomspace", 1, 1000, 4, rtol=1e-12)
    check("logspace", np.float32(0), 2, 3)


def test_tri_diag_indices() -> None:
    for n, k, m in [(4, 1, 5), (5, -2, 2), (3, 7, 3)]:
        check("tril_indices", n, k, m)
        check("triu_indices", n, k, m)
    x = arr((3, 5))
    check("tril_indices_from", x, 1)
    check("triu_indices_from", x, -1)
    raises_like("triu_indices_from", arr((3,)))
    check("diag_indices", 4)
    check("diag_indices", 3, ndim=3)
    check("diag_indices", 0)
    raises_like("diag_indices", -1)
    check("diag_indices_from", arr((3, 3, 3)))
    raises_like("diag_indices_from", arr((3, 4)))
    raises_like("diag_indices_from", arr((3,)))


def test_diagflat_vander_ix_mask_indices() -> None:
    for k in [0, 2, -1]:
        check("diagflat", arr((2, 2), np.int32), k)
    check("diagflat", 3.0)
    for dtype in [np.float32, np.int32]:
        x = arr((4,), dtype, -3, 4)
        check("vander", x)
        check("vander", x, 3, increasing=True)
        check("vander", x, 0)
        check("vander", x, jit=True)
    raises_like("vander", arr((2, 2)))
    raises_like("vander", arr((2,)), -1)
    check("ix_", np.array([0, 2]), np.array([1, 2, 3], np.int8))
    check("ix_", np.array([], np.int32), np.array([1]))
    raises_like("ix_", np.array([[0]]))
    raises_like("ix_", np.array([True]))
    assert all(np.array_equal(a, b) for a, b in zip(
        snp.mask_indices(4, snp.triu, 1), jnp.mask_indices(4, jnp.triu, 1)))


# =============================================================== statistics

@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_average_ptp(dtype: Any) -> None:
    x = arr((3, 4), dtype)
    tol = 1e-2 if dtype == np.float16 else 1e-5
    check("average", x, rtol=tol)
    check("average", x, axis=1, keepdims=True, rtol=tol)
    check("average", x, axis=0, weights=arr((3,), np.float32, 1, 4), returned=True, rtol=tol)
    check("average", x, weights=arr((3, 4), dtype, 1, 4), rtol=tol)
    check("average", x, axis=(1, 0), weights=arr((4, 3), np.float32, 1, 4), rtol=tol)
    raises_like("average", x, weights=arr((4,)))
    raises_like("average", x, axis=0, weights=arr((4,)))
    check("ptp", x)
    check("ptp", x, axis=0, keepdims=True)
    check("average", 3)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("method", ["linear", "midpoint", "nearest"])
def test_quantile(name: str, method: str) -> None:
    x = arr((3, 5, 4))
    x[0, 1, 2] = np.nan
    x[1, :, 0] = np.nan
    q1 = np.array([0.0, 0.3, 0.5, 1.0], np.float32)
    check(name, x, 0.25, method=method, rtol=1e-5)
    check(name, x, q1, axis=1, method=method, rtol=1e-5)
    check(name, x, np.float32(0.7), axis=(0, 2), keepdims=True, method=method, rtol=1e-5)
    check(name, x, q1, keepdims=True, method=method, rtol=1e-5)
    check(name, arr((6,), np.int32), 0.4, method=method, rtol=1e-5)
    check(name, arr((6,), np.float16), q1, method=method, rtol=1e-3)
    check(name, x, q1, axis=-1, method=method, rtol=1e-5, jit=True)


def test_quantile_misc() -> None:
    x = arr((4, 5))
    check("percentile", x, 30, rtol=1e-5)
    check("percentile", x, np.array([10, 90]), axis=0, rtol=1e-5)
    check("nanpercentile", x, 50.0, axis=1, method="lower")
    check("median", x)
    check("quantile", x, 0.3, axis=0, method="higher")
    check("median", x, axis=(0, 1), keepdims=True)
    check("median", arr((5,), np.int8))
    check("nanmedian", x, axis=0)
    check("nanquantile", np.zeros((0, 3), np.float32), 0.5, axis=0)
    raises_like("median", np.zeros((0, 3), np.float32), axis=0)
    raises_like("quantile", x, 0.5, method="bad")
    raises_like("quantile", x.astype(np.complex64), 0.5)
    raises_like("quantile", x, np.ones((2, 2)) / 2)
    raises_like("quantile", x, 0.5, overwrite_input=True)


def test_quantile_x64(x64: None) -> None:
    x = arr((5, 3), np.float64)
    check("quantile", x, 0.3, axis=0, rtol=1e-12)
    check("median", arr((7,), np.int64))
    check("nanpercentile", x, np.array([5.0, 50.0]), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int32, np.complex64])
def test_cov_corrcoef(dtype: Any) -> None:
    x = arr((3, 6), dtype)
    check("cov", x, rtol=1e-4, atol=1e-4)
    check("cov", x, rowvar=False, rtol=1e-4, atol=1e-4)
    check("cov", x[0], arr((6,), dtype), rtol=1e-4, atol=1e-4)
    check("cov", x, bias=True, fweights=arr((6,), np.int32, 1, 4),
          aweights=arr((6,), np.float32, 1, 3), rtol=1e-4, atol=1e-4)
    check("cov", x, ddof=0, aweights=arr((6,), np.float32, 1, 3), rtol=1e-4, atol=1e-4)
    check("cov", x, fweights=arr((6,), np.int32, 1, 4), rtol=1e-4, atol=1e-4)
    check("cov", x, dtype=np.complex64, rtol=1e-4, atol=1e-4)
    check("cov", x[0], rtol=1e-4, atol=1e-4)
    check("cov", np.zeros((2, 0), np.float32))
    check("corrcoef", x, rtol=1e-4, atol=1e-4)
    check("corrcoef", x[0], x[1], rtol=1e-4, atol=1e-4)
    check("corrcoef", x[0], rtol=1e-4, atol=1e-4)
    raises_like("cov", arr((2, 2, 2)))
    raises_like("cov", x, dtype=np.int32)
    raises_like("cov", x, fweights=arr((6,)))
    raises_like("cov", x, aweights=arr((5,)))


def test_histogram_bincount_digitize() -> None:
    x = arr((20,), np.float32)
    for bins in [10, np.array([-5.0, 0.0, 1.0, 6.0])]:
        check("histogram_bin_edges", x, bins, rtol=1e-6)
        check("histogram", x, bins, rtol=1e-6)
        check("histogram", x, bins, density=True, rtol=1e-5)
    check("histogram", x, 4, range=(0, 3), weights=arr((20,)), rtol=1e-5)
    check("histogram", arr((3, 4), np.int32), 5)
    check("histogram", np.full(4, 2.0, np.float32), 2)
    check("histogram_bin_edges", np.zeros(0, np.float32), 4)
    raises_like("histogram", x, 3, weights=arr((3,)))
    i = arr((12,), np.int32, 0, 7)
    check("bincount", i)
    check("bincount", i, minlength=10)
    check("bincount", i, weights=arr((12,)), rtol=1e-6)
    check("bincount", i, length=4, jit=True)
    check("bincount", np.array([-1, 2, 3], np.int32))
    check("bincount", arr((5,), bool))
    raises_like("bincount", arr((4,)))
    raises_like("bincount", arr((2, 2), np.int32))
    raises_like("bincount", i, weights=arr((3,)))
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jnp.bincount)(jnp.asarray(i))
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(snp.bincount)(snp.asarray(i))
    b = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
    v = np.array([-1, 0, 1, 2, 2.5, 3, 4, 5, np.nan], np.float32)
    check("digitize", v, b)
    check("digitize", v, b[::-1].copy(), right=True)
    check("digitize", v, b, True, jit=True, static=(2,))
    check("digitize", v, np.zeros(0, np.float32))
    raises_like("digitize", v, np.ones((2, 2)))


# ===================================================== searching / sorting

@pytest.mark.parametrize("method", ["scan", "compare_all", "sort"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_searchsorted(method: str, dtype: Any) -> None:
    a = np.sort(arr((9,), dtype))
    v = arr((3, 4), dtype)
    if dtype == np.float32:
        a[-1] = np.nan
        v[0, 0], v[0, 1], v[1, 1] = np.nan, -0.0, a[2]
    for side in ["left", "right"]:
        check("searchsorted", a, v, side=side, method=method)
        check("searchsorted", a, v[0, 0], side=side, method=method)
        check("searchsorted", a, v, side=side, method=method, jit=True)
    check("searchsorted", a, 3)
    check("searchsorted", np.zeros(0, dtype), v)
    perm = RNG.permutation(9)
    check("searchsorted", a[np.argsort(perm)], v, sorter=np.argsort(np.argsort(perm)))
    raises_like("searchsorted", np.ones((2, 2)), v)
    raises_like("searchsorted", a, v, method="magic")


def test_lexsort_partition() -> None:
    k1, k2 = arr((3, 8), np.int32, 0, 3), arr((3, 8), np.float32, 0, 3).round()
    check("lexsort", [k1, k2])
    check("lexsort", (k1, k2), axis=0)
    check("lexsort", np.stack([k1, k1[::-1]]))
    check("lexsort", [k1[0]])
    check("lexsort", np.arange(3))
    check("lexsort", [k1, k2], jit=True)
    raises_like("lexsort", [k1, k2[:, :3]])
    raises_like("lexsort", [])
    for dtype in [np.float32, np.uint8, np.bool_]:
        x = arr((3, 7), dtype, -4, 4)
        for kth in [0, -1]:
            check("partition", x, kth)
            check("argpartition", x, kth)
            check("partition", x, kth % 3, axis=0)
            check("argpartition", x, kth % 3, axis=0)
    raises_like("partition", arr((3,), np.complex64), 1)
    raises_like("partition", arr((3,)), 5)
    check("sort_complex", arr((5,), np.float32))
    check("sort_complex", arr((2, 5), np.complex64))
    check("sort_complex", arr((5,), np.int32))


# ================================================================== set ops

@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.complex64])
def test_unique(dtype: Any) -> None:
    x = arr((4, 5), dtype, -2, 3)
    if dtype == np.float32:
        x[0, 0] = x[1, 1] = np.nan
    check("unique", x)
    check("unique", x, True, True, True)
    check("unique", x, return_inverse=True, axis=0)
    check("unique", x, return_counts=True, axis=1, return_index=True)
    check("unique", x, equal_nan=False)
    check("unique", x, size=8, fill_value=1)
    check("unique", x, True, True, True, size=3)
    check("unique", x, return_counts=True, size=8)
    check("unique", x, size=6, jit=True)
    for name in ["unique_values", "unique_counts", "unique_inverse", "unique_all"]:
        check(name, x)
        check(name, x, size=7, fill_value=0)
    check("unique", np.zeros((0,), dtype), True, True, True)
    check("unique", np.zeros((3, 0), dtype), axis=0, return_counts=True)
    raises_like("unique", np.zeros((0,), dtype), size=2)
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(snp.unique)(snp.asarray(x))


def test_isin_and_set_functions() -> None:
    a, b = arr((3, 4), np.int32, 0, 6), arr((5,), np.int32, 0, 6)
    for method in ["auto", "sort", "binary_search"]:
        check("isin", a, b, invert=method == "sort", method=method)
    check("union1d", arr((6,)).round(), arr((4,), np.int32))
    check("intersect1d", arr((6,)).round(), arr((4,), np.int32), return_indices=True)
    check("isin", a, np.zeros(0, np.int32))
    check("isin", a, 2.0)
    raises_like("isin", a, b, method="hash")
    e = np.zeros(0, np.int32)
    check("setxor1d", e, b)
    check("setdiff1d", e, b, size=2)
    check("intersect1d", e, b, size=4, fill_value=9)
    for x, y in [(a, b)]:
        check("union1d", x, y)
        check("setdiff1d", x, y)
        check("setxor1d", x, y)
        check("intersect1d", x, y)
        check("intersect1d", x, y, return_indices=True)
        check("union1d", x, y, size=12)
        check("setdiff1d", x, y, size=5)
        check("setdiff1d", x, y, size=5, fill_value=-1)
        check("intersect1d", x, y, size=4)
        check("intersect1d", x, y, size=4, fill_value=9)
    u1, u2 = np.array([1, 4, 2], np.int32), np.array([4, 7, 1, 9], np.int32)
    check("intersect1d", u1, u2, assume_unique=True, return_indices=True)
    check("setdiff1d", u1, u2, assume_unique=True)
    check("setxor1d", u1, u2, assume_unique=True)
    check("intersect1d", u1, u2, assume_unique=True, size=3)
    check("setdiff1d", a, b, size=5, jit=True)


# ======================================================= selection / choice

def test_select_choose() -> None:
    x = arr((3, 4))
    check("select", [x < 0, x > 3], [x, arr((4,), np.int32)])
    check("select", [x < 0], [1], default=2.5)
    check("select", [x < 0, x > 1], [x, 2 * x], jit=True)
    raises_like("select", [x < 0], [x, x])
    raises_like("select", [], [])
    i = arr((3, 4), np.int32, 0, 3)
    ch = [arr((3, 4)), arr((4,), np.int32), 7]
    check("choose", i, ch)
    check("choose", i + 2, ch, mode="wrap")
    check("choose", i - 1, ch, mode="clip")
    check("choose", i, ch, mode="clip", jit=True)
    raises_like("choose", i + 3, ch)
    raises_like("choose", i, ch, mode="bogus")
    raises_like("choose", x, ch)


def test_compress_extract_put_along_axis() -> None:
    x = arr((4, 5), np.int32)
    c = np.array([True, False, True, True, False])
    check("compress", c, x, axis=1)
    check("compress", c[:4], x, axis=0)
    check("compress", c, x)
    check("compress", c, x, axis=1, size=2)
    check("compress", c, x, axis=1, size=4, fill_value=-9)
    check("compress", np.array([1, 0, 2]), x)
    raises_like("compress", np.array([1, 0, 0, 0, 0, 1]), x, axis=0)
    raises_like("compress", c, x, axis=1, size=7)
    raises_like("compress", np.ones((2, 2)), x)
    check("extract", x > 0, x)
    check("extract", x > 0, x, size=6, fill_value=-1)
    idx = arr((4, 2), np.int32, 0, 5)
    check("put_along_axis", x, idx, 99, axis=1, inplace=False)
    check("put_along_axis", x, np.array([[0, 3, 1, 2, 4]], np.int32), arr((1, 5), np.int32),
          axis=0, inplace=False)
    check("put_along_axis", x, np.array([3, 19], np.int32), 5, axis=None, inplace=False)
    raises_like("put_along_axis", x, idx, 1, axis=1)
    raises_like("put_along_axis", x, idx[0], 1, axis=1, inplace=False)


def test_kron_cross() -> None:
    check("kron", arr((2, 3)), arr((3, 2), np.int32))
    check("kron", arr((2,), np.int32), arr((2, 3, 2)))
    check("kron", 2, arr((3,)))
    a, b = arr((4, 3)), arr((3,), np.int32)
    check("cross", a, b, rtol=1e-5, atol=1e-5)
    check("cross", a.T.copy(), a.T.copy()[::-1], axis=0, rtol=1e-5, atol=1e-5)
    check("cross", a, a[::-1], axisc=0, rtol=1e-5, atol=1e-5)
    raises_like("cross", arr((2,)), arr((3,)))


# ====================================================================== misc

def test_gradient() -> None:
    x = arr((4, 5))
    check("gradient", x, rtol=1e-5)
    check("gradient", x, 2.0, rtol=1e-5)
    check("gradient", x, 2.0, 0.5, rtol=1e-5)
    check("gradient", x, axis=1, rtol=1e-5)
    check("gradient", x, np.array([0.0, 1.0, 3.0, 3.5]), axis=0, rtol=1e-5)
    check("gradient", arr((6,), np.int32), rtol=1e-5)
    check("gradient", x, axis=(), rtol=1e-5)
    raises_like("gradient", arr((1, 3)))
    raises_like("gradient", x, 1.0, 2.0, 3.0)
    raises_like("gradient", x, np.ones(3), axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_modf_unwrap_isreal(dtype: Any) -> None:
    x = arr((7,), dtype) * (1 if dtype == np.int32 else 1.3)
    check("modf", x)
    check("modf", 2.5)
    check("unwrap", np.cumsum(arr((8,), dtype, 0, 5)).astype(dtype), rtol=1e-3)
    check("isreal", x)
    check("iscomplex", x)
    check("isreal", np.array([1 + 0j, 1j], np.complex64))
    check("iscomplex", np.array([1 + 0j, 1j], np.complex64))


def test_unwrap() -> None:
    p = np.cumsum(arr((3, 9), np.float32, 0, 5), axis=1)
    check("unwrap", p, rtol=1e-5)
    check("unwrap", p, axis=0, discont=4.0, rtol=1e-5)
    check("unwrap", p, period=5.0, rtol=1e-5)
    check("unwrap", np.cumsum(arr((9,), np.int32, 0, 9)), period=6)
    raises_like("unwrap", arr((3,), np.complex64))


def test_ravel_unravel_index() -> None:
    for shape in [(3, 4), 7, (2, 3, 4)]:
        check("unravel_index", np.array([0, 5, 11, 30, -1, -40], np.int32), shape)
    check("unravel_index", np.int32(5), (3, 4))
    check("unravel_index", np.array([3, 300], np.uint16), (3, 4))
    raises_like("unravel_index", 5, [(3,), 4])
    i, j = np.array([0, 2, 1], np.int32), np.array([3, 0, 1], np.int32)
    check("ravel_multi_index", (i, j), (3, 4))
    check("ravel_multi_index", (i, j), (3, 4), order="F")
    check("ravel_multi_index", (i + 2, j), (3, 4), mode="clip")
    check("ravel_multi_index", (i + 2, j - 1), (3, 4), mode="wrap", dtype=np.int16)
    raises_like("ravel_multi_index", (i + 2, j), (3, 4))
    raises_like("ravel_multi_index", (i, j), (3, 4), mode="bogus")
    raises_like("ravel_multi_index", (i, j), (3, 4), order="X")
    raises_like("ravel_multi_index", (i, j), (300, 400), dtype=np.int8)
    raises_like("ravel_multi_index", (i, j), (3, 4), dtype=np.float32)


def test_packbits() -> None:
    b = arr((3, 11), bool)
    for order in ["big", "little"]:
        check("packbits", b, bitorder=order)
        check("packbits", b, axis=1, bitorder=order)
        check("packbits", b.astype(np.int32) * 3, axis=0, bitorder=order)
        packed = np.packbits(b, axis=1)
        check("unpackbits", packed, axis=1, bitorder=order)
        check("unpackbits", packed, bitorder=order)
        check("unpackbits", packed, axis=1, count=5, bitorder=order)
        check("unpackbits", packed, axis=1, count=20, bitorder=order)
    raises_like("packbits", arr((3,)))
    raises_like("packbits", b, bitorder="middle")
    raises_like("unpackbits", arr((3,), np.int32))


def test_array_equiv_printing() -> None:
    for x, y in [(arr((3,)), arr((3,))), (np.ones((2, 3)), np.ones(3)),
                 (np.ones(2, np.int32), 1)]:
        check("array_equiv", x, y)
    raises_like("array_equiv", np.ones(2), np.ones(3))
    assert snp.get_printoptions() == jnp.get_printoptions()
    with snp.printoptions(precision=2):
        assert snp.get_printoptions() == jnp.get_printoptions()
        assert np.get_printoptions()["precision"] == 2
    x = np.arange(5, dtype=np.float32)
    assert snp.array_str(snp.asarray(x)) == jnp.array_str(jnp.asarray(x))


def test_unravel_index_weak_scalar() -> None:
    check("unravel_index", 5, (3, 4))


# ============ top_k, index tricks, interpolation, windows, polynomials, histograms

RNG1 = np.random.default_rng(1)  # the direct draws below (``arr`` draws from RNG)


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
    xp = np.sort(RNG1.uniform(-3, 3, 7)).astype(dtype)
    fp = arr((7,), dtype)
    x = RNG1.uniform(-5, 5, (2, 5)).astype(dtype)
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
    x = RNG1.uniform(-20, 20, (40,)).astype(dtype)
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
    w = RNG1.uniform(0, 1, 50).astype(np.float32)
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
    x = RNG1.uniform(0, 1, 4).astype(np.float32)
    check("interp", x, xp, fp, jit=True)
    check("trapezoid", arr((4, 3)), jit=True)
    check("spacing", arr((4,)), jit=True, rtol=0, atol=0)
    check("polyval", arr((3,)), x, jit=True, rtol=1e-6)
    _ = jax  # the oracle module is used through `check`
