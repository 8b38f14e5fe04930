"""More of ``jax.scipy.linalg``: ``polar``, ``expm_frechet``,
``eigh_tridiagonal``, ``convolution_matrix`` and ``fiedler_companion``.

- ``polar(a, side)``: ``a = u p`` (right) or ``p u`` (left), u with
  orthonormal columns, p Hermitian positive semi-definite, over the last two
  axes. ``method="qdwh"`` (the default) iterates QDWH (``qdwh``) on a
  (right, m >= n) or on its conjugate transpose (left, m < n; the other
  pairings are NotImplementedError), stopping at ``eps``; as in JAX,
  ``max_iterations`` does not reach it. ``method="svd"`` computes from
  ``a = U S V^H``: ``u = U V^H``, ``p = V S V^H`` (``U S U^H`` for left).
- ``expm_frechet(A, E)``: the Frechet derivative of ``expm`` at A in the
  direction E, the upper-right block of ``expm([[A, E], [0, A]])``
  (Mathias 1996), with ``expm(A)`` as the upper-left block.
- ``eigh_tridiagonal(d, e)``: the eigenvalues, ascending, of the real
  symmetric tridiagonal matrix with diagonal d and off-diagonal e, all
  (``select='a'``) or those with indices in ``select_range`` (``'i'``), and
  unless ``eigvals_only`` the eigenvectors as columns (``eigh`` of the
  matrix; each vector's sign is ``eigh``'s).
- ``convolution_matrix(a, n, mode)``: the Toeplitz matrix whose product
  with a length-n vector is ``convolve(a, v, mode)``.
- ``fiedler_companion(a)``: the pentadiagonal Fiedler companion matrix of
  the polynomial with coefficients a (highest degree first).
- ``qr_multiply(a, c, mode)``: ``Q @ c`` (left, c with min(m, n) rows) or
  ``c @ Q`` cut to min(m, n) columns (right), Q of ``qr(a)`` (``conj(Q)``
  with ``conjugate``), and R's first min(m, n) rows; ``pivoting`` adds the
  column permutation.
- ``solve_sylvester(A, B, C)``: X with ``A X + X B = C``, NaN where some
  eigenvalues of A and B sum to less than ``tol`` in magnitude. Method
  ``'schur'`` solves the equivalent ``(I kron A + B^T kron I) vec(X) =
  vec(C)`` (JAX's Bartels-Stewart on the Schur forms of A and B reaches
  the same X to rounding); ``'eigen'`` diagonalises A and B as JAX does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core.config import default_matmul_precision
from spec._src.lax import control_flow as lax_cf
from spec._src.lax import linalg as lax_linalg
from spec._src.numpy import creation
from spec._src.numpy import reductions as jr
from spec._src.numpy.linalg import kron
from spec._src.numpy.math import _promote_dtypes_inexact
from spec._src.numpy.vectorize import vectorize
from spec._src.numpy import math as jm
from spec._src.numpy import shape as js
from spec._src.numpy.linalg import linalg, matmul
from spec._src.scipy.linalg import expm, qr, toeplitz
from spec._src.scipy.qdwh import qdwh


def _polar_2d_fn(a: Any, side: str, method: str, eps: float | None,
                 max_iterations: int | None) -> tuple[Any, Any]:
    with default_matmul_precision("float32"):
        return _polar_2d_body(a, side, method, eps)


def _polar_2d_body(a: Any, side: str, method: str, eps: float | None) -> tuple[Any, Any]:
    m, n = a.shape
    if method == "qdwh":
        # (max_iterations is not passed on: JAX's qdwh path leaves it at
        # qdwh's own default)
        if m >= n and side == "right":
            unitary, posdef, _, _ = qdwh(a, is_hermitian=False, eps=eps)
        elif m < n and side == "left":
            unitary, posdef, _, _ = qdwh(a.T.conj(), is_hermitian=False, eps=eps)
            posdef = posdef.T.conj()
            unitary = unitary.T.conj()
        else:
            raise NotImplementedError(
                "method='qdwh' only supports mxn matrices where m < n where side='right' "
                f"and m >= n side='left', got {a.shape} with side={side!r}")
    elif method == "svd":
        u_svd, s_svd, vh_svd = lax_linalg.svd(a, full_matrices=False)
        s_svd = s_svd.astype(u_svd.dtype)
        unitary = u_svd @ vh_svd
        if side == "right":
            posdef = (vh_svd.T.conj() * s_svd[None, :]) @ vh_svd
        else:
            posdef = (u_svd * s_svd[None, :]) @ u_svd.T.conj()
    else:
        raise ValueError(f"Unknown polar decomposition method {method}.")
    return unitary, posdef


_polar_2d_fn.__name__ = "_polar_2d"
_polar_2d: Any = jit(_polar_2d_fn, static_argnames=("side", "method"))


def _polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
           max_iterations: int | None = None) -> tuple[Any, Any]:
    """The polar decomposition of a (see the module docstring)."""
    arr = creation.asarray(a)
    if arr.ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    sig = "(m,n)->(m,n),(n,n)" if side == "right" else "(m,n)->(m,n),(m,m)"
    out: tuple[Any, Any] = vectorize(
        functools.partial(_polar_2d, side=side, method=method, eps=eps,
                          max_iterations=max_iterations), signature=sig)(arr)
    return out


_polar.__name__ = "polar"
polar: Any = jit(_polar, static_argnames=("side", "method"))


def expm_frechet(A: Any, E: Any, *, method: str | None = None,  # noqa: N803
                 compute_expm: bool = True) -> Any:
    """``(expm(A), L(A, E))``, or L alone without ``compute_expm``."""
    a, e = creation.asarray(A), creation.asarray(E)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={a.shape}")
    if e.shape != a.shape:
        raise ValueError(f"expected E to be the same shape as A, got A.shape={a.shape} "
                         f"E.shape={e.shape}")
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"only method='SPS' is supported, got {method}")
    n = a.shape[-1]
    zero = creation.zeros_like(a)
    block = js.concatenate([js.concatenate([a, e], axis=-1),
                            js.concatenate([zero, a], axis=-1)], axis=-2)
    big = expm(block)
    frechet = big[..., :n, n:]
    return (big[..., :n, :n], frechet) if compute_expm else frechet


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None,
                     tol: float | None = None, key: Any = None) -> Any:
    """The eigenvalues of a symmetric tridiagonal matrix (see the module
    docstring)."""
    d, e = creation.asarray(d), creation.asarray(e)
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != d.shape[0] - 1:
        raise ValueError(f"eigh_tridiagonal takes a diagonal of length n and an off-diagonal "
                         f"of length n - 1, got shapes {d.shape} and {e.shape}")
    n = d.shape[0]
    matrix = (creation.eye(n, dtype=d.dtype) * d
              + creation.eye(n, k=1, dtype=d.dtype) * js.concatenate([e, e[-1:] * 0])[:, None]
              + creation.eye(n, k=-1, dtype=d.dtype) * js.concatenate([e[:1] * 0, e])[:, None])
    if select == "a":
        keep = slice(None)
    elif select == "i":
        if select_range is None:
            raise ValueError("select='i' needs select_range=(lo, hi)")
        lo, hi = (int(v) for v in select_range)
        keep = slice(lo, hi + 1)
    else:
        raise NotImplementedError(f"select={select!r} is not implemented")
    if eigvals_only:
        return linalg.eigvalsh(matrix)[keep]
    values, vectors = linalg.eigh(matrix)
    return values[keep], vectors[:, keep]


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The matrix A with ``A @ v == convolve(a, v, mode)`` for length-n v."""
    if n <= 0:
        raise ValueError("n must be a positive integer.")
    a = creation.asarray(a)
    if a.ndim != 1:
        raise ValueError("convolution_matrix expects a one-dimensional array as input")
    if a.shape[0] == 0:
        raise ValueError("len(a) must be at least 1.")
    if mode not in ("full", "valid", "same"):
        raise ValueError("mode argument must be one of ('full', 'valid', 'same')")
    zeros = creation.zeros(n - 1, dtype=a.dtype)
    column = js.concatenate([a, zeros])
    row = js.concatenate([a[::-1], zeros])
    size = column.shape[0]
    if mode == "full":
        return toeplitz(column, row[size - n:])
    trim = min(n, a.shape[0]) - 1
    start = trim // 2 if mode == "same" else trim
    end = trim - start if mode == "same" else trim
    return toeplitz(column[start:size - end], row[size - n - start:size - start])


def fiedler_companion(a: Any) -> Any:
    """The Fiedler companion matrix of the polynomial a (see the module
    docstring): its eigenvalues are the polynomial's roots."""
    a = creation.asarray(a)
    if a.ndim != 1:
        raise ValueError("Input 'a' must be a 1-D array.")
    if a.shape[0] < 2:
        return creation.zeros((0, 0), dtype=jm.divide(a, a).dtype)
    c = a / a[0]
    n = c.shape[0] - 1
    if n == 1:
        return js.reshape(-c[-1], (1, 1))
    m = creation.zeros((n, n), dtype=c.dtype)
    # The pentadiagonal pattern: ones on the second super- and sub-diagonals at
    # alternating rows, the coefficients on the first ones.
    m = m.at[np.arange(3, n, 2), np.arange(1, n - 2, 2)].set(1)
    m = m.at[np.arange(2, n, 2), np.arange(1, n - 1, 2)].set(-c[3::2])
    m = m.at[np.arange(0, n - 2, 2), np.arange(2, n, 2)].set(1)
    m = m.at[np.arange(0, n - 1, 2), np.arange(1, n, 2)].set(-c[2::2])
    m = m.at[0, 0].set(-c[1])
    return m.at[1, 0].set(1)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Any, ...]:
    """``(Q @ c or c @ Q, R)`` (see the module docstring)."""
    a, c = _promote_dtypes_inexact(creation.asarray(a), creation.asarray(c))
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} "
                         f"rows (expected {k}).")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} "
                         f"columns (expected {m}).")
    factors = qr(a, mode="economic", pivoting=pivoting)
    q, r = factors[0], factors[1]
    if conjugate:
        q = jm.conj(q)
    product = matmul(q, c) if mode == "left" else matmul(c, q)
    if onedim:
        product = js.ravel(product)
    r = js.triu(r[..., :k, :])
    return (product, r, factors[2]) if pivoting else (product, r)


def _sylvester_kron(a: Any, b: Any, c: Any) -> Any:
    m, n = c.shape
    system = kron(creation.eye(n, dtype=a.dtype), a) + kron(b.T, creation.eye(m, dtype=a.dtype))
    vec = js.reshape(c.T, (m * n,))
    return js.reshape(linalg.solve(system, vec), (n, m)).T


def _sylvester_eigen(a: Any, b: Any, c: Any) -> Any:
    ra, ua = linalg.eig(a)
    rb, ub = linalg.eig(b)
    f = linalg.solve(ua, matmul(c.astype(ra.dtype), ub))
    y = f / (ra[:, None] + rb[None, :])
    return matmul(matmul(ua, y), linalg.inv(ub))


def _sylvester_2d(a: Any, b: Any, c: Any, *, method: str, tol: float) -> Any:
    if method == "schur":
        x = _sylvester_kron(a, b, c)
    elif method == "eigen":
        x = _sylvester_eigen(a, b, c)
    else:
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         '"schur" or "eigen".')
    if not T.is_complex(c.dtype):
        x = jm.real(x)
    near = jr.any(jm.abs(linalg.eigvals(a)[:, None] + linalg.eigvals(b)[None, :]) < tol)
    return lax_cf.cond(near, lambda: creation.zeros_like(x) * np.nan, lambda: x)


def _solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",  # noqa: N803
                     tol: float = 1e-8) -> Any:
    a, b, c = _promote_dtypes_inexact(creation.asarray(A), creation.asarray(B),
                                      creation.asarray(C))
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\n"
                         f"B: {b.shape}\nC: {c.shape}")
    return vectorize(lambda x, y, z: _sylvester_2d(x, y, z, method=method, tol=tol),
                     signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, c)


solve_sylvester = jit(_solve_sylvester, static_argnames=("method",))

__all__ = ["convolution_matrix", "eigh_tridiagonal", "expm_frechet", "fiedler_companion",
           "polar", "qr_multiply", "solve_sylvester"]
