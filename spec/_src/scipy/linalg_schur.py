"""The Schur-based functions of ``jax.scipy.linalg``: ``schur``,
``hessenberg``, ``rsf2csf``, ``sqrtm`` and ``funm``, built as JAX builds them.

- ``schur(a, output)``: ``lax.linalg.schur`` of a (cast to the complex dtype
  of its precision for ``output='complex'``), ``(T, Z)`` with ``a = Z T Z^H``.
- ``hessenberg(a, calc_q)``: ``H``, the upper triangle and first subdiagonal
  of ``lax.linalg.hessenberg(a)``, and with ``calc_q`` ``Q = [[1, 0], [0,
  householder_product(reflectors, taus)]]``.
- ``rsf2csf(T, Z)``: from the last row up, each 2x2 block of the real Schur
  form with a non-negligible subdiagonal (``|t[m, m-1]| > eps (|t[m-1,
  m-1]| + |t[m, m]|)``) is made triangular by the Givens rotation built from
  its eigenvalue ``mu[0]`` (the first ``eigvals`` returns) relative to
  ``t[m, m]``, applied to T's two rows and columns and to Z's two columns;
  every subdiagonal entry is then zero.
- ``sqrtm(A)``: the complex Schur form ``A = Z T Z^H``, then Björck and
  Hammarling's recurrence for ``U`` upper triangular with ``U^2 = T``
  (``u_ii = sqrt(t_ii)``, ``u_ij = (t_ij - sum_k u_ik u_kj) / (u_ii + u_jj)``,
  column by column from the diagonal up; zero where the numerator is zero),
  ``Z U Z^H``.
- ``funm(A, func)``: the real Schur form turned complex by ``rsf2csf``,
  ``F = diag(func(diag(T)))``, then Parlett's recurrence (Golub and Van
  Loan's algorithm 11.1.1) for the superdiagonals of the upper triangular
  ``F`` that commutes with T, ``Z F Z^H``; with ``disp=False`` also JAX's
  error estimate ``min(1, max(tol, tol / minden ||triu(T, 1)||_1))`` (inf if
  F has an inf), minden the smallest difference of diagonal entries met.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import control_flow as lax_cf
from spec._src.lax import linalg_householder as lax_householder
from spec._src.lax import linalg_schur as lax_schur
from spec._src.lax import loops as lax_loops
from spec._src.lax import slicing as lax_slicing
from spec._src.lax.dot import Precision
from spec._src.numpy import creation
from spec._src.numpy import indexing as jnp_indexing
from spec._src.numpy import math as jm
from spec._src.numpy import reductions as jr
from spec._src.numpy import shape as js
from spec._src.numpy.linalg import matmul
from spec._src.numpy.linalg_solve import eigvals, norm
from spec._src.numpy.util import check_arraylike
from spec._src.numpy.vectorize import vectorize

__all__ = ["funm", "hessenberg", "rsf2csf", "schur", "sqrtm"]


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(canonical_aval_of(x).shape)


def _dtype(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


def _complex_dtype(dtype: T.DType) -> T.DType:
    """The complex dtype of a dtype's precision (complex64 below float64)."""
    if dtype in (T.complex64, T.complex128):
        return dtype
    return T.complex128 if dtype == T.float64 else T.complex64


def _h(x: Any) -> Any:
    return jm.conj(js.swapaxes(x, -1, -2))


# ------------------------------------------------------------------- schur

def _schur_fn(a: Any, output: str) -> list[Any]:
    if output == "complex":
        a = a.astype(_complex_dtype(_dtype(a)))
    return lax_schur.schur(a)


_schur_fn.__name__ = _schur_fn.__qualname__ = "_schur"
_schur = jit(_schur_fn, static_argnames=("output",))


def schur(a: Any, output: str = "real") -> list[Any]:
    """``[T, Z]`` with ``a = Z T Z^H``: T quasi upper triangular (``'real'``)
    or upper triangular (``'complex'``)."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    check_arraylike("scipy.schur", a)
    out: list[Any] = _schur(creation.asarray(a), output)
    return out


# -------------------------------------------------------------- hessenberg

def _hessenberg_fn(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
                   check_finite: bool = True) -> Any:
    n = _shape(a)[-1]
    if n == 0:
        return (creation.zeros_like(a), creation.zeros_like(a)) if calc_q else \
            creation.zeros_like(a)
    a_out, taus = lax_schur.hessenberg(a)
    h = js.triu(a_out, -1)
    if not calc_q:
        return h
    q = lax_householder.householder_product(a_out[..., 1:, :-1], taus)
    batch = _shape(a_out)[:-2]
    dt = _dtype(a_out)
    q = js.block([[creation.ones((*batch, 1, 1), dtype=dt),
                   creation.zeros((*batch, 1, n - 1), dtype=dt)],
                  [creation.zeros((*batch, n - 1, 1), dtype=dt), q]])
    return h, q


_hessenberg_fn.__name__ = _hessenberg_fn.__qualname__ = "hessenberg"
hessenberg = jit(_hessenberg_fn, static_argnames=("calc_q", "check_finite", "overwrite_a"))


# ----------------------------------------------------------------- rsf2csf

def _rotate_block(m: Any, t: Any, z: Any) -> tuple[Any, Any]:
    """T and Z with the 2x2 block at ``[m-1, m]`` triangularised."""
    n = _shape(t)[0]
    dt = _dtype(t)
    mu = eigvals(lax_slicing.dynamic_slice(t, (m - 1, m - 1), (2, 2))) - t[m, m]
    r = norm(creation.array([mu[0], t[m, m - 1]])).astype(dt)
    c = mu[0] / r
    s = t[m, m - 1] / r
    g = creation.array([[c.conj(), s], [-s, c]], dtype=dt)

    rows = lax_slicing.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
    col_mask = creation.arange(n) >= m - 1
    rotated_rows = matmul(g, jnp_indexing.where(col_mask, rows, 0))
    t = lax_slicing.dynamic_update_slice_in_dim(
        t, jnp_indexing.where(~col_mask, rows, rotated_rows), m - 1, axis=0)

    cols = lax_slicing.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
    row_mask = creation.arange(n)[:, np.newaxis] < m + 1
    rotated_cols = matmul(jnp_indexing.where(row_mask, cols, 0), g.conj().T)
    t = lax_slicing.dynamic_update_slice_in_dim(
        t, jnp_indexing.where(~row_mask, cols, rotated_cols), m - 1, axis=1)

    z_cols = lax_slicing.dynamic_slice_in_dim(z, m - 1, 2, axis=1)
    z = lax_slicing.dynamic_update_slice_in_dim(z, matmul(z_cols, g.conj().T), m - 1,
                                                axis=1)
    return t, z


def _rsf2csf_2d_fn(t: Any, z: Any) -> tuple[Any, Any]:
    dt = _complex_dtype(T.result_type(_dtype(t), _dtype(z)))
    t, z = t.astype(dt), z.astype(dt)
    eps = np.finfo(np.dtype(dt)).eps
    n = _shape(t)[0]
    if n == 1:
        return t, z

    def step(i: Any, tz: tuple[Any, Any]) -> tuple[Any, Any]:
        m = n - i
        t, z = tz
        big = jm.abs(t[m, m - 1]) > eps * (jm.abs(t[m - 1, m - 1]) + jm.abs(t[m, m]))
        t, z = lax_cf.cond(big, _rotate_block, lambda m, t, z: (t, z), m, t, z)
        return t.at[m, m - 1].set(0.0), z
    out: tuple[Any, Any] = lax_loops.fori_loop(1, n, step, (t, z))
    return out


_rsf2csf_2d_fn.__name__ = _rsf2csf_2d_fn.__qualname__ = "_rsf2csf_2d"
_rsf2csf_2d = jit(_rsf2csf_2d_fn)


def _rsf2csf_fn(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:  # noqa: N803
    t, z = creation.asarray(T), creation.asarray(Z)
    ts, zs = _shape(t), _shape(z)
    if len(ts) < 2 or ts[-1] != ts[-2]:
        raise ValueError("Input 'T' must be square.")
    if len(zs) < 2 or zs[-1] != zs[-2]:
        raise ValueError("Input 'Z' must be square.")
    if ts[-1] != zs[-1]:
        raise ValueError(f"Input array shapes must match: Z: {zs} vs. T: {ts}")
    out: tuple[Any, Any] = vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)
    return out


_rsf2csf_fn.__name__ = _rsf2csf_fn.__qualname__ = "rsf2csf"
rsf2csf = jit(_rsf2csf_fn, static_argnames=("check_finite",))


# ------------------------------------------------------------------- sqrtm

def _sqrtm_triu_fn(t: Any) -> Any:
    diag = jm.sqrt(jnp_indexing.diag(t))
    n = _shape(diag)[0]
    u = jnp_indexing.diag(diag)

    def i_loop(l: Any, data: tuple[Any, Any]) -> tuple[Any, Any]:  # noqa: E741
        j, u = data
        i = j - 1 - l
        s = lax_loops.fori_loop(i + 1, j, lambda k, val: val + u[i, k] * u[k, j], 0.0)
        value = jnp_indexing.where(t[i, j] == s, 0.0, (t[i, j] - s) / (diag[i] + diag[j]))
        return j, u.at[i, j].set(value)

    def j_loop(j: Any, u: Any) -> Any:
        _, u = lax_loops.fori_loop(0, j, i_loop, (j, u))
        return u
    return lax_loops.fori_loop(0, n, j_loop, u)


_sqrtm_triu_fn.__name__ = _sqrtm_triu_fn.__qualname__ = "_sqrtm_triu"
_sqrtm_triu = jit(_sqrtm_triu_fn)


def _sqrtm_fn(a: Any) -> Any:
    t, z = schur(a, output="complex")
    root = _sqrtm_triu(t)
    return matmul(matmul(z, root, precision=Precision.HIGHEST), jm.conj(z.T),
                  precision=Precision.HIGHEST)


_sqrtm_fn.__name__ = _sqrtm_fn.__qualname__ = "_sqrtm"
_sqrtm = jit(_sqrtm_fn)


def sqrtm(A: Any, blocksize: int = 1) -> Any:  # noqa: N803
    """The principal square root of a square matrix, by its complex Schur form."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    check_arraylike("scipy.sqrtm", A)
    return _sqrtm(creation.asarray(A))


# -------------------------------------------------------------------- funm

def _parlett_fn(f: Any, t: Any) -> tuple[Any, Any]:
    """Golub and Van Loan's algorithm 11.1.1: F's superdiagonals, one
    diagonal p at a time, and the smallest diagonal difference divided by."""
    n = _shape(t)[0]
    minden = jm.abs(t[0, 0])

    def inner(i: Any, p_f_minden: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        p, f, minden = p_f_minden
        j = i + p
        s = t[i - 1, j - 1] * (f[j - 1, j - 1] - f[i - 1, i - 1])
        ind = (creation.arange(n) >= i) & (creation.arange(n) < j - 1)
        val = (matmul(jnp_indexing.where(ind, t[i - 1], 0), jnp_indexing.where(ind, f[:, j - 1], 0))
               - matmul(jnp_indexing.where(ind, f[i - 1], 0),
                        jnp_indexing.where(ind, t[:, j - 1], 0)))
        s = s + val
        den = t[j - 1, j - 1] - t[i - 1, i - 1]
        s = jnp_indexing.where(den != 0, s / den, s)
        return p, f.at[i - 1, j - 1].set(s), jm.minimum(minden, jm.abs(den))

    def outer(p: Any, f_minden: tuple[Any, Any]) -> tuple[Any, Any]:
        _, f, minden = lax_loops.fori_loop(1, n - p + 1, inner, (p, *f_minden))
        return f, minden
    out: tuple[Any, Any] = lax_loops.fori_loop(1, n, outer, (f, minden))
    return out


_parlett_fn.__name__ = _parlett_fn.__qualname__ = "_algorithm_11_1_1"
_parlett = jit(_parlett_fn)


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:  # noqa: N803
    """``func`` of a square matrix through its Schur form (Parlett's
    recurrence); with ``disp=False`` also an error estimate."""
    a = creation.asarray(A)
    shape = _shape(a)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError("expected square array_like input")
    t, z = schur(a)
    t, z = rsf2csf(t, z)
    dt = _dtype(t)
    f = jnp_indexing.diag(func(jnp_indexing.diag(t))).astype(dt)
    f, minden = _parlett(f, t)
    f = matmul(matmul(z, f), z.conj().T)
    if disp:
        return f
    # JAX's choice of tolerance: float32's eps for complex64, float64's otherwise.
    tol = np.finfo(np.float32 if dt == T.complex64 else np.float64).eps
    minden = jnp_indexing.where(minden == 0.0, tol, minden)
    err = jnp_indexing.where(
        jr.any(jm.isinf(f)), np.inf,
        jm.minimum(1, jm.maximum(tol, (tol / minden) * norm(js.triu(t, 1), 1))))
    return f, err
