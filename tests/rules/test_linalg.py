"""The linear-algebra primitives (cholesky, triangular_solve, qr, eigh, svd)
and their public wrappers (``jax.lax.linalg``, ``jnp.linalg``), compared with
real JAX run live: values (a few ULPs: both sides call LAPACK, possibly
different builds of it), types, jaxpr text, errors, JVPs (against JAX and
against finite differences), transposes, vmap (against a loop) and sharding
(in a 4-device JAX subprocess)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.lax import linalg as R
from tests.support.pair import errors_alike, raises_as
from tests.support.twin import prefetch, run_jax, run_spec

JL = jax.lax.linalg
SL = spec.lax.linalg

RNG = np.random.default_rng(1234)


# ----------------------------------------------------------------- helpers

def _rand(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator = RNG) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype)


def _pd(batch: tuple[int, ...], n: int, dtype: Any) -> np.ndarray:
    """Well-conditioned Hermitian positive-definite matrices."""
    a = _rand((*batch, n, n), dtype)
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dtype)
    return np.asarray(h, dtype)


def _tri_system(batch: tuple[int, ...], n: int, dtype: Any) -> np.ndarray:
    """A well-conditioned matrix for triangular solves (both triangles are
    dense: each solve must ignore the triangle it does not use)."""
    a = _rand((*batch, n, n), dtype) * 0.3
    return np.asarray(a + 3 * np.eye(n, dtype=dtype), dtype)


def _eps(dtype: Any) -> float:
    return float(jjnp.finfo(np.dtype(dtype)).eps)


def _inexact(dt: Any) -> bool:
    return bool(jjnp.issubdtype(dt, jjnp.inexact))


def _close(ours: Any, theirs: Any, ulps: float = 64, scale: float | None = None) -> None:
    """Equal up to ``ulps`` units of the largest magnitude (NaNs at the same
    places); dtypes and shapes exactly."""
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0 or not _inexact(a.dtype):
        np.testing.assert_array_equal(a, b)
        return
    dt = a.dtype
    if not np.issubdtype(dt, np.complexfloating):
        a, b = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(b)
    s = scale if scale is not None else max(float(np.max(np.abs(b[ok]), initial=0.0)), 1.0)
    tol = ulps * _eps(dt) * s
    assert np.max(np.abs(a[ok] - b[ok]), initial=0.0) <= tol, \
        (np.max(np.abs(a[ok] - b[ok]), initial=0.0), tol)


def _close_tree(ours: Any, theirs: Any, ulps: float = 64) -> None:
    lo, lt = jax.tree.leaves(theirs), spec.tree_util.tree_leaves(ours)
    assert len(lo) == len(lt)
    for a, b in zip(lt, lo):
        _close(a, b, ulps)


def _phase(o: Any, t: Any, axis: int) -> np.ndarray:
    """Per-vector unit factors that turn ``o``'s vectors (along ``axis``) into
    ``t``'s: eigenvectors and singular vectors are unique only up to such a
    factor, and float32 LAPACK builds (NumPy's, JAX's) may pick different
    signs for nearly-degenerate components."""
    o, t = np.asarray(o), np.asarray(t)
    p = np.sum(np.conj(o) * t, axis=axis, keepdims=True)
    mag = np.abs(p)
    return np.where(mag > 0, p / np.where(mag > 0, mag, 1), 1).astype(o.dtype)


def _close_vectors(ours: Any, theirs: Any, axis: int, ulps: float,
                   tangents: tuple[Any, Any] | None = None) -> None:
    """Vectors equal up to their unit factors (tangents scaled by the
    primals' factors)."""
    p = _phase(ours, theirs, axis)
    _close(np.asarray(ours) * p, theirs, ulps)
    if tangents is not None:
        _close(np.asarray(tangents[0]) * p, tangents[1], ulps)


def _close_eigh(ours: Any, theirs: Any, ulps: float = 128, t_ours: Any = None,
                t_theirs: Any = None) -> None:
    """lax order (v, w)."""
    _close(ours[1], theirs[1], ulps)
    tans = None if t_ours is None else (t_ours[0], t_theirs[0])
    _close_vectors(ours[0], theirs[0], -2, ulps, tans)
    if t_ours is not None:
        _close(t_ours[1], t_theirs[1], ulps)


def _close_svd(ours: Any, theirs: Any, ulps: float = 128, t_ours: Any = None,
               t_theirs: Any = None) -> None:
    """lax order (u, s, vh): u's columns and vh's rows up to unit factors,
    and u s vh reconstructs the same matrix."""
    u, s, vh = (np.asarray(v) for v in ours)
    _close(s, theirs[1], ulps)
    _close_vectors(u, theirs[0], -2, ulps, None if t_ours is None else (t_ours[0], t_theirs[0]))
    _close_vectors(vh, theirs[2], -1, ulps, None if t_ours is None else (t_ours[2], t_theirs[2]))
    if t_ours is not None:
        _close(t_ours[1], t_theirs[1], ulps)
    k = s.shape[-1]
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    ju, js, jv = (np.asarray(v) for v in theirs)
    _close(rec, (ju[..., :, :k] * js[..., None, :]) @ jv[..., :k, :], ulps)


def _types(x: Any) -> list[tuple[str, bool]]:
    leaves = spec.tree_util.tree_leaves(x) if not isinstance(x, jax.Array) else [x]
    out = []
    for v in leaves:
        weak = v.aval.weak_type if hasattr(v, "aval") and not isinstance(v, jax.Array) \
            else v.weak_type
        out.append((str(v.dtype) + str(tuple(v.shape)), bool(weak)))
    return out


def _jax_types(x: Any) -> list[tuple[str, bool]]:
    return [(str(v.dtype) + str(tuple(v.shape)), bool(v.weak_type)) for v in jax.tree.leaves(x)]


def _same_jaxpr(f_spec: Callable[..., Any], f_jax: Callable[..., Any], *args: Any) -> None:
    assert str(spec.make_jaxpr(f_spec)(*args)) == str(jax.make_jaxpr(f_jax)(*args))


def _raises_alike(f_spec: Callable[[], Any], f_jax: Callable[[], Any]) -> type[Exception] | None:
    """Both raise the same class, or neither raises."""
    try:
        f_jax()
    except Exception as e:  # noqa: BLE001
        raises_as(f_spec, e)
        return type(e)
    f_spec()
    return None


TS_FLAGS = list(itertools.product([False, True], repeat=5))


# ------------------------------------------------------------------ values

@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("batch", [(), (2, 2)])
def test_cholesky_values(dtype: Any, batch: tuple[int, ...]) -> None:
    x = _pd(batch, 4, dtype)
    _close(SL.cholesky(x), JL.cholesky(x))
    _close(snp.linalg.cholesky(x), jjnp.linalg.cholesky(x))
    _close(snp.linalg.cholesky(x, upper=True), jjnp.linalg.cholesky(x, upper=True))
    _close(SL.cholesky(x, symmetrize_input=False), JL.cholesky(x, symmetrize_input=False))
    # The primitive itself keeps the operand's strict upper triangle.
    raw = np.asarray(x + np.triu(_rand(x.shape, dtype), 1), dtype)
    _close(R.cholesky_p.bind(raw), jax._src.lax.linalg.cholesky_p.bind(raw))


def test_cholesky_float64(x64: None) -> None:
    x = _pd((2,), 5, np.float64)
    _close(SL.cholesky(x), JL.cholesky(x))
    xc = _pd((), 3, np.complex128)
    _close(SL.cholesky(xc), JL.cholesky(xc))


def test_cholesky_failure_is_nan_per_matrix() -> None:
    good = _pd((), 3, np.float32)
    bad = np.array([[1., 2., 0.], [2., 1., 0.], [0., 0., 1.]], np.float32)
    nan = good.copy()
    nan[2, 0] = np.nan
    x = np.stack([good, bad, good, nan])
    ours, theirs = SL.cholesky(x), JL.cholesky(x)
    _close(ours, theirs)
    low = np.tril_indices(3)
    assert np.isnan(np.asarray(ours)[1][low]).all() and not np.isnan(np.asarray(ours)[0]).any()
    raw = np.stack([good, bad])
    _close(R.cholesky_p.bind(raw), jax._src.lax.linalg.cholesky_p.bind(raw))


@pytest.mark.parametrize("flags", TS_FLAGS)
def test_triangular_solve_all_flags(flags: tuple[bool, ...]) -> None:
    left, lower, trans, conj, unit = flags
    dtype = np.complex64
    a = _tri_system((2,), 4, dtype)
    b = _rand((2, 4, 3) if left else (2, 3, 4), dtype)
    kw = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=conj,
              unit_diagonal=unit)
    _close(SL.triangular_solve(a, b, **kw), JL.triangular_solve(a, b, **kw), ulps=32)
    ar = a.real.copy()
    br = b.real.copy()
    _close(SL.triangular_solve(ar, br, **kw), JL.triangular_solve(ar, br, **kw), ulps=32)


@pytest.mark.parametrize("left", [False, True])
def test_triangular_solve_vector_and_narrow(left: bool) -> None:
    a = _tri_system((), 5, np.float32)
    b = _rand((5,), np.float32)
    _close(SL.triangular_solve(a, b, left_side=left, lower=True),
           JL.triangular_solve(a, b, left_side=left, lower=True))
    for dt in [np.float16, jjnp.bfloat16]:
        a16, b16 = a.astype(dt), _rand((5, 2), np.float32).astype(dt)
        _close(SL.triangular_solve(a16, b16, left_side=True),
               JL.triangular_solve(a16, b16, left_side=True), ulps=8)


def test_triangular_solve_float64(x64: None) -> None:
    a = _tri_system((3,), 6, np.float64)
    b = _rand((3, 6, 2), np.float64)
    kw = dict(left_side=True, lower=False, transpose_a=True)
    _close(SL.triangular_solve(a, b, **kw), JL.triangular_solve(a, b, **kw), ulps=32)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3), (0, 3), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_qr_values(shape: tuple[int, ...], dtype: Any) -> None:
    x = _rand(shape, dtype)
    for full in (False, True):
        _close_tree(SL.qr(x, full_matrices=full), JL.qr(x, full_matrices=full))
    for mode in ("reduced", "complete", "r"):
        _close_tree(snp.linalg.qr(x, mode=mode), jjnp.linalg.qr(x, mode=mode))


def test_qr_nan_and_pivoting_type() -> None:
    x = np.array([[1., 2.], [np.nan, 4.]], np.float32)
    _close_tree(SL.qr(x), JL.qr(x))
    piv = lambda lib: lib.make_jaxpr(lambda v: lib.lax.linalg.qr(v, pivoting=True))  # noqa: E731
    assert str(piv(spec)(_rand((4, 3), np.float32))) == str(piv(jax)(_rand((4, 3), np.float32)))
    with pytest.raises(NotImplementedError):
        SL.qr(_rand((4, 3), np.float32), pivoting=True)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_eigh_values(dtype: Any, batch: tuple[int, ...]) -> None:
    x = _rand((*batch, 5, 5), dtype)  # not Hermitian: lower/upper pick different halves
    for lower in (True, False):
        for sym in (True, False):
            _close_eigh(SL.eigh(x, lower=lower, symmetrize_input=sym),
                        JL.eigh(x, lower=lower, symmetrize_input=sym))
    _close_eigh(snp.linalg.eigh(x, UPLO="U")[::-1], jjnp.linalg.eigh(x, UPLO="U")[::-1])
    _close(snp.linalg.eigvalsh(x), jjnp.linalg.eigvalsh(x), ulps=128)
    w = np.asarray(snp.linalg.eigvalsh(x))
    assert (np.diff(w, axis=-1) >= 0).all()  # ascending


def test_eigh_nonfinite_and_errors() -> None:
    x = np.array([[[1., 2.], [np.nan, 4.]], [[2., 1.], [1., 2.]]], np.float32)
    bind = lambda P, lower: P.bind(x, lower=lower, sort_eigenvalues=True,  # noqa: E731
                                   subset_by_index=None, algorithm=None)
    for lower in (True, False):
        _close_tree(bind(R.eigh_p, lower), bind(jax._src.lax.linalg.eigh_p, lower))
    with pytest.raises(NotImplementedError):
        SL.eigh(x, subset_by_index=(0, 1))
    with pytest.raises(ValueError):
        snp.linalg.eigh(x, UPLO="X")


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 2), (0, 3), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd_values(shape: tuple[int, ...], dtype: Any) -> None:
    x = _rand(shape, dtype)
    for full in (False, True):
        _close_svd(SL.svd(x, full_matrices=full), JL.svd(x, full_matrices=full))
        _close_svd(snp.linalg.svd(x, full_matrices=full),
                   jjnp.linalg.svd(x, full_matrices=full))
    _close(SL.svd(x, compute_uv=False), JL.svd(x, compute_uv=False), ulps=128)
    _close(snp.linalg.svdvals(x), jjnp.linalg.svdvals(x), ulps=128)


def test_svd_nonfinite(x64: None) -> None:
    x = np.stack([_rand((3, 2), np.float64), np.full((3, 2), np.inf)])
    _close_tree(SL.svd(x), JL.svd(x), ulps=128)
    _close(SL.svd(x, compute_uv=False), JL.svd(x, compute_uv=False), ulps=128)
    with pytest.raises(NotImplementedError):
        SL.svd(x, full_matrices=False, subset_by_index=(0, 1))


# ----------------------------------------------------------- types, jaxprs

def _prims(lib: Any) -> dict[str, Callable[[Any], Any]]:
    L = lib.lax.linalg
    return {
        "cholesky": L.cholesky,
        "eigh": L.eigh,
        "qr": L.qr,
        "qr_reduced": lambda v: L.qr(v, full_matrices=False),
        "svd": L.svd,
        "svd_s": lambda v: L.svd(v, compute_uv=False),
        "svd_reduced": lambda v: L.svd(v, full_matrices=False),
        "tri": lambda v: L.triangular_solve(v, v, left_side=True, lower=True),
        "tri_vec": lambda v: L.triangular_solve(v, v[..., 0], transpose_a=True,
                                                conjugate_a=True),
        "jnp_chol": lambda v: lib.numpy.linalg.cholesky(v, upper=True),
        "jnp_eigh": lib.numpy.linalg.eigh,
        "jnp_eigvalsh": lib.numpy.linalg.eigvalsh,
        "jnp_qr": lib.numpy.linalg.qr,
        "jnp_qr_r": lambda v: lib.numpy.linalg.qr(v, "r"),
        "jnp_svd": lib.numpy.linalg.svd,
        "jnp_svd_s": lambda v: lib.numpy.linalg.svd(v, compute_uv=False),
    }


@pytest.mark.parametrize("name", list(_prims(jax)))
def test_jaxpr_text_and_types(name: str) -> None:
    f_s, f_j = _prims(spec)[name], _prims(jax)[name]
    for x in [_pd((), 3, np.float32), _pd((2,), 3, np.complex64)]:
        _same_jaxpr(f_s, f_j, x)
        assert _types(f_s(x)) == _jax_types(f_j(x))
    # A weak-typed operand gives weak outputs (the lax-level functions).
    if not name.startswith("jnp"):
        w_s = f_s(spec.lax.full((3, 3), 1.0) + spec.numpy.eye(3) * 2.0)
        w_j = f_j(jax.lax.full((3, 3), 1.0) + jjnp.eye(3) * 2.0)
        assert _types(w_s) == _jax_types(w_j)
    # jnp's functions promote integers to floats.
    if name.startswith("jnp"):
        xi = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.int32)
        _close_tree(f_s(xi), f_j(xi), ulps=128)


_BIND = {
    "cholesky": lambda P, *a: P.bind(*a),
    "eigh": lambda P, *a: P.bind(*a, lower=True, sort_eigenvalues=True, subset_by_index=None,
                                 algorithm=None),
    "eigh_subset": lambda P, *a: P.bind(*a, lower=True, sort_eigenvalues=True,
                                        subset_by_index=(0, 2), algorithm=None),
    "qr": lambda P, *a: P.bind(*a, pivoting=False, full_matrices=True, use_magma=None),
    "qr_piv": lambda P, *a: P.bind(*a, pivoting=True, full_matrices=False, use_magma=None),
    "svd": lambda P, *a: P.bind(*a, full_matrices=True, compute_uv=True, subset_by_index=None,
                                algorithm=None),
    "svd_subset": lambda P, *a: P.bind(*a, full_matrices=True, compute_uv=True,
                                       subset_by_index=(0, 1), algorithm=None),
    "svd_subset_thin": lambda P, *a: P.bind(*a, full_matrices=False, compute_uv=False,
                                            subset_by_index=(0, 1), algorithm=None),
    "triangular_solve": lambda P, *a: P.bind(*a, left_side=True, lower=True, transpose_a=False,
                                             conjugate_a=False, unit_diagonal=False),
    "triangular_solve_r": lambda P, *a: P.bind(*a, left_side=False, lower=True,
                                               transpose_a=True, conjugate_a=False,
                                               unit_diagonal=True),
}

_DTYPES = [np.float32, np.complex64, np.float16, jjnp.bfloat16, np.int32, np.bool_]


def _prim_of(lib: Any, name: str) -> Any:
    base = name.split("_")[0] if not name.startswith("triangular") else "triangular_solve"
    if lib is jax:
        return getattr(jax._src.lax.linalg, base + "_p")
    return getattr(R, base + "_p")


def _abstract_types(lib: Any, name: str, avals: list[tuple[tuple[int, ...], Any]]) -> Any:
    """The output types of binding the primitive under make_jaxpr (so that
    JAX's lowering-time errors, which spec's impls raise, do not count)."""
    prim = _prim_of(lib, name)

    def f(*xs: Any) -> Any:
        return _BIND[name](prim, *xs)
    args = [lib.ShapeDtypeStruct(s, d) for s, d in avals]
    jaxpr = lib.make_jaxpr(f)(*args)
    return [str(v.aval) for v in jaxpr.jaxpr.outvars]


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(_BIND)),
       shapes=st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=4), min_size=2,
                       max_size=2),
       dtypes=st.lists(st.sampled_from(_DTYPES), min_size=2, max_size=2))
def test_typing_rules_match_jax(name: str, shapes: list[list[int]], dtypes: list[Any]) -> None:
    """Random shapes and dtypes: spec's result types equal JAX's, and spec
    raises (the same class) exactly when JAX does."""
    n_in = 2 if name.startswith("triangular") else 1
    avals = [(tuple(s), d) for s, d in zip(shapes[:n_in], dtypes[:n_in])]
    try:
        theirs = _abstract_types(jax, name, avals)
    except Exception as e:  # noqa: BLE001
        if "Batching dimension" in str(e):  # JAX's late batch-size check (spec's C7)
            with pytest.raises(ValueError):
                _abstract_types(spec, name, avals)
            return
        raises_as(lambda: _abstract_types(spec, name, avals), e)
        return
    if name.startswith("triangular") and avals[0][0][:-2] != avals[1][0][:-2]:
        with pytest.raises(ValueError, match="C7"):  # JAX finds out when compiling
            _abstract_types(spec, name, avals)
        return
    assert _abstract_types(spec, name, avals) == theirs


@pytest.mark.parametrize("case", [
    ("cholesky", [((3,), np.float32)]), ("cholesky", [((2, 3), np.float32)]),
    ("cholesky", [((3, 3), np.int32)]), ("cholesky", [((3, 3), np.float16)]),
    ("eigh", [((2, 3), np.float32)]), ("svd_subset", [((3, 3), np.float32)]),
    ("qr", [((3,), np.complex64)]),
    ("triangular_solve", [((3, 3), np.float32), ((2, 3), np.float32)]),
    ("triangular_solve", [((3, 3), np.float32), ((3, 2), np.float16)]),
    ("triangular_solve", [((3, 3), np.float32), ((1, 3, 2), np.float32)]),
    ("triangular_solve", [((2, 3), np.float32), ((2, 2), np.float32)]),
    ("triangular_solve_r", [((3, 3), np.float32), ((3, 2), np.float32)]),
])
def test_typing_errors_name_constraint(case: tuple[str, list[Any]]) -> None:
    name, avals = case
    ours, _ = errors_alike(lambda: _abstract_types(spec, name, avals),
                           lambda: _abstract_types(jax, name, avals))
    assert re.search(r"C\d", str(ours)), str(ours)


def test_wrapper_errors_match_jax() -> None:
    cases: list[Callable[[Any], Any]] = [
        lambda lib: lib.lax.linalg.cholesky(np.ones((2, 3), np.float32)),
        lambda lib: lib.lax.linalg.eigh(np.ones((3,), np.float32)),
        lambda lib: lib.numpy.linalg.cholesky(np.ones((3, 2))),
        lambda lib: lib.numpy.linalg.eigh(np.ones((3, 2))),
        lambda lib: lib.numpy.linalg.qr(np.ones((3, 2)), mode="bad"),
        lambda lib: lib.numpy.linalg.cholesky([[1.0]]),
    ]
    for c in cases:
        assert _raises_alike(lambda: c(spec), lambda: c(jax)) is not None


# ------------------------------------------------------------------ autodiff

def _jvp_both(f_name: str, x: np.ndarray, t: np.ndarray) -> tuple[Any, Any]:
    fs, fj = _prims(spec)[f_name], _prims(jax)[f_name]
    return spec.jvp(fs, (x,), (t,)), jax.jvp(fj, (x,), (t,))


@pytest.mark.parametrize("name", ["cholesky", "eigh", "qr_reduced", "svd_reduced", "svd_s",
                                  "tri", "tri_vec", "jnp_chol", "jnp_qr"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_jvp_matches_jax(name: str, dtype: Any) -> None:
    x = _pd((2,), 3, dtype) + _rand((2, 3, 3), dtype) * 0.1
    if name.startswith("tri"):
        x = _tri_system((2,), 3, dtype)
    t = _rand(x.shape, dtype)
    _jvp_close(name, x, t)


def _jvp_close(name: str, x: np.ndarray, t: np.ndarray) -> None:
    (po, to), (pt, tt) = _jvp_both(name, x, t)
    if name == "eigh":
        _close_eigh(po, pt, 512, to, tt)
    elif name == "svd_reduced":
        _close_svd(po, pt, 512, to, tt)
    else:
        _close_tree((po, to), (pt, tt), ulps=512)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_qr_svd_jvp_rectangular(shape: tuple[int, int]) -> None:
    x, t = _rand(shape, np.float32), _rand(shape, np.float32)
    for name in ["qr_reduced", "svd_reduced", "svd_s"]:
        _jvp_close(name, x, t)
    if shape[0] < shape[1]:
        _jvp_close("qr", x, t)


def test_jvp_finite_differences(x64: None) -> None:
    """Central differences in float64 agree with the JVP rules."""
    h = 1e-6
    x = _pd((), 4, np.float64) + _rand((4, 4), np.float64) * 0.2
    t = _rand((4, 4), np.float64)
    b = _rand((4, 2), np.float64)
    funs: list[Callable[[Any], Any]] = [
        SL.cholesky,
        lambda v: SL.eigh(v)[1],
        lambda v: SL.qr(v, full_matrices=False),
        lambda v: SL.svd(v, compute_uv=False),
        lambda v: SL.triangular_solve(v, b, left_side=True, lower=True),
        lambda v: SL.triangular_solve(v + 3 * np.eye(4), v[..., :2].T, lower=False,
                                      transpose_a=True, unit_diagonal=True),
    ]
    for f in funs:
        _, tan = spec.jvp(f, (x,), (t,))
        fd = jax.tree.map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * h),
                          f(x + h * t), f(x - h * t))
        for a, e in zip(spec.tree_util.tree_leaves(tan), jax.tree.leaves(fd)):
            np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5, atol=1e-6)


def test_jvp_jaxprs_match_jax() -> None:
    x = _pd((), 3, np.float32)
    b = _rand((3, 2), np.float32)
    for name in ["cholesky", "tri", "tri_vec", "eigh"]:
        fs, fj = _prims(spec)[name], _prims(jax)[name]
        _same_jaxpr(lambda v, t: spec.jvp(fs, (v,), (t,)),
                    lambda v, t: jax.jvp(fj, (v,), (t,)), x, x)
    kw = dict(left_side=True, lower=True, transpose_a=True)
    _same_jaxpr(lambda a, v: spec.jvp(lambda y: SL.triangular_solve(a, y, **kw), (v,), (v,)),
                lambda a, v: jax.jvp(lambda y: JL.triangular_solve(a, y, **kw), (v,), (v,)),
                x, b)


@pytest.mark.parametrize("left", [False, True])
def test_triangular_solve_grad_and_transpose(left: bool) -> None:
    a = _tri_system((), 4, np.float32)
    b = _rand((4, 2) if left else (2, 4), np.float32)
    kw = dict(left_side=left, lower=not left, transpose_a=left, unit_diagonal=left)

    def loss(lib: Any) -> Callable[[Any, Any], Any]:
        return lambda a_, b_: (lib.lax.linalg.triangular_solve(a_, b_, **kw) ** 2).sum()
    _close_tree(spec.grad(loss(spec), (0, 1))(a, b), jax.grad(loss(jax), (0, 1))(a, b),
                ulps=256)
    _same_jaxpr(spec.grad(loss(spec), (0, 1)), jax.grad(loss(jax), (0, 1)), a, b)
    lt_s = spec.linear_transpose(lambda y: SL.triangular_solve(a, y, **kw), b)
    lt_j = jax.linear_transpose(lambda y: JL.triangular_solve(a, y, **kw), b)
    _close_tree(lt_s(b), lt_j(b))
    # <ct, solve(b)> == <transpose(ct), b>: the dot-product identity.
    ct = _rand(b.shape, np.float32)
    lhs = float(np.sum(ct * np.asarray(SL.triangular_solve(a, b, **kw))))
    rhs = float(np.sum(np.asarray(lt_s(ct)[0]) * b))
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))


def test_grad_of_decompositions() -> None:
    x = _pd((), 3, np.float32)

    def losses(lib: Any) -> list[Callable[[Any], Any]]:
        L = lib.lax.linalg
        # (Sign-invariant functions of eigenvectors: their signs are arbitrary.)
        return [lambda v: L.cholesky(v).sum(), lambda v: (L.eigh(v)[0] ** 2 * v).sum(),
                lambda v: L.svd(v, compute_uv=False).sum(),
                lambda v: L.qr(v, full_matrices=False)[1].sum()]
    for fs, fj in zip(losses(spec), losses(jax)):
        _close(spec.grad(fs)(x), jax.grad(fj)(x), ulps=512)


# -------------------------------------------------------------------- vmap

@pytest.mark.parametrize("name", ["cholesky", "eigh", "qr", "svd", "svd_s", "tri", "tri_vec"])
def test_vmap_matches_loop_and_jax(name: str) -> None:
    f = _prims(spec)[name]
    x = _pd((2, 3), 3, np.float32)  # vmapped over axis 1 below
    out = spec.vmap(f, in_axes=1)(x)
    loop = [f(x[:, i]) for i in range(3)]
    stacked = jax.tree.map(lambda *ys: np.stack([np.asarray(y) for y in ys]),
                           *[tuple(spec.tree_util.tree_leaves(r)) for r in loop])
    for a, e in zip(spec.tree_util.tree_leaves(out), stacked):
        np.testing.assert_array_equal(np.asarray(a), e)
    theirs = jax.vmap(_prims(jax)[name], in_axes=1)(x)
    if name == "eigh":
        _close_eigh(out, theirs)
    elif name == "svd":
        _close_svd(out, theirs)
    else:
        _close_tree(out, theirs, ulps=128)
    _same_jaxpr(spec.vmap(f, in_axes=1), jax.vmap(_prims(jax)[name], in_axes=1), x)


@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("axes", [(None, 0), (None, 2), (0, None), (1, 1)])
def test_vmap_triangular_solve_operands(left: bool, axes: tuple[Any, Any]) -> None:
    a = _tri_system((3,), 3, np.float32)
    a = a[0] if axes[0] is None else np.moveaxis(a, 0, axes[0])
    b = _rand((3, 3, 2) if left else (3, 2, 3), np.float32)
    b = b[0] if axes[1] is None else np.moveaxis(b, 0, axes[1])
    kw = dict(left_side=left, lower=True, transpose_a=not left)

    def fs(p: Any, q: Any) -> Any:
        return SL.triangular_solve(p, q, **kw)

    def fj(p: Any, q: Any) -> Any:
        return JL.triangular_solve(p, q, **kw)
    _close(spec.vmap(fs, in_axes=axes)(a, b), jax.vmap(fj, in_axes=axes)(a, b), ulps=32)
    _same_jaxpr(spec.vmap(fs, in_axes=axes), jax.vmap(fj, in_axes=axes), a, b)


# ---------------------------------------------------------------- sharding

PROGRAM = r'''
import json
import numpy as np
jax, jnp = IMPL
L = jax.lax.linalg
mesh = jax.make_mesh((2, 2), ("X", "Y"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)
NS = lambda *s: jax.NamedSharding(mesh, jax.P(*s))
out = {}

def record(name, fn):
    try:
        r = fn()
        rs = r if isinstance(r, (list, tuple)) else [r]
        out[name] = [str(jax.typeof(v)) for v in rs]
    except Exception as e:
        out[name] = "raises " + type(e).__name__

rng = np.random.default_rng(0)
a = rng.standard_normal((4, 4, 4)).astype(np.float32)
spd = a @ a.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
b = rng.standard_normal((4, 4, 4)).astype(np.float32)
for s in [("X",), (("X", "Y"),), (None, "X"), (None, None, "Y"), ("X", "Y")]:
    xs = jax.device_put(spd, NS(*s))
    # (The primitive: spec's select_n sharding rule still refuses the
    # unsharded zeros that lax.linalg.cholesky's masking selects with.)
    record(f"cholesky {s}", lambda: jax.jit(L.cholesky_p.bind)(xs))
    record(f"eigh {s}", lambda: jax.jit(L.eigh)(xs))
    record(f"qr {s}", lambda: jax.jit(L.qr)(xs))
    record(f"svd {s}", lambda: jax.jit(L.svd)(xs))
for sa, sb in [(("X",), ("X",)), (("X",), ("Y",)), (("X", "Y"), ("X",)),
               (("X", None, "Y"), ("X",)), (("X",), ("X", None, "Y")),
               (("X",), ("X", "Y"))]:
    xa, xb = jax.device_put(spd, NS(*sa)), jax.device_put(b, NS(*sb))
    for left in [True, False]:
        for ta in [False, True]:
            bb = xb if left else xb.mT
            record(f"tri {sa} {sb} {left} {ta}", lambda: jax.jit(
                lambda p, q: L.triangular_solve(p, q, left_side=left, transpose_a=ta))(xa, bb))
print(json.dumps(out))
'''


def test_sharding_rules_match_jax(four_devices: None) -> None:
    theirs = run_jax(PROGRAM)
    ours = run_spec(PROGRAM)
    assert sorted(ours) == sorted(theirs)
    assert any("raises ShardingTypeError" == v for v in theirs.values())
    assert any("@X" in str(v) for v in theirs.values())
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ


prefetch(PROGRAM)


# ---------------------------------------------------------------- registry

def test_sections_all_written() -> None:
    from spec.rules import missing_sections
    names = {"cholesky", "triangular_solve", "qr", "eigh", "svd"}
    assert not [m for m in missing_sections() if m[0] in names]
    for n in names:
        assert hasattr(spec.lax, n + "_p")


def test_batch_sharded_decompositions_run_per_device(four_devices: None) -> None:
    """Split over the batch only, each device factors its own matrices; with
    a matrix dimension split, the conservative gathered program runs. Both
    give the unsharded values."""
    a = _rand((4, 4, 4), np.float32)
    spd = a @ a.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
    mesh = spec.make_mesh((2, 2), ("X", "Y"),
                          axis_types=(spec.sharding.AxisType.Explicit,) * 2)
    rhs = _rand((4, 4, 2), np.float32)
    for layout in [("X",), (("X", "Y"),), (None, "Y")]:
        x = spec.device_put(spd, spec.NamedSharding(mesh, spec.P(*layout)))
        r = spec.device_put(rhs, spec.NamedSharding(mesh, spec.P(layout[0])))

        def solve(v: Any, r: Any = r) -> Any:
            return SL.triangular_solve(v, r if isinstance(v, spec.Array) else rhs,
                                       left_side=True, lower=True)
        fns = [solve] if layout[0] is None else [  # (only the solve takes split matrices)
            solve, SL.cholesky_p.bind, lambda v: SL.qr(v)[1], lambda v: SL.eigh(v)[1]]
        for fn in fns:
            np.testing.assert_allclose(np.asarray(spec.jit(fn)(x)), np.asarray(fn(spd)),
                                       rtol=1e-5, atol=1e-5)
