"""``spec._src.lax.linalg_api`` (``jax.lax.linalg``): the decompositions, with JAX's
signatures. Each wrapper binds the primitive of ``spec._src.lax.linalg`` with
the same preprocessing JAX applies (symmetrising, masking a triangle)."""

from __future__ import annotations

from typing import Any

from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.structural_api import asarray
from spec._src.lax.linalg import (
    EighImplementation,
    SvdAlgorithm,
    cholesky_p,
    eigh_p,
    qr_p,
    svd_p,
    symmetrize,
    triangular_solve,
    triangular_solve_p,
    tril,
)

__all__ = ["EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p", "eigh", "eigh_p",
           "qr", "qr_p", "svd", "svd_p", "triangular_solve", "triangular_solve_p"]


def _check_square(fun: str, x: Any) -> None:
    shape = canonical_aval_of(x).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"The input to linalg.{fun} must have shape [..., n, n], got shape "
                         f"{shape}")


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor L (x = L L^H); NaNs where x is not positive
    definite. Without ``symmetrize_input`` only x's lower triangle is read."""
    x = asarray(x)
    _check_square("cholesky", x)
    if symmetrize_input:
        x = symmetrize(x)
    return tril(cholesky_p.bind(x))


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
    """``(v, w)``: eigenvectors (columns of v) and ascending eigenvalues of a
    Hermitian matrix."""
    x = asarray(x)
    _check_square("eigh", x)
    if symmetrize_input:
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                       subset_by_index=subset_by_index, algorithm=implementation)
    return v, w


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> Any:
    """``(q, r)`` (``(q, r, p)`` when pivoting) with q unitary and r upper
    triangular."""
    q, r, *p = qr_p.bind(asarray(x), pivoting=pivoting, full_matrices=full_matrices,
                         use_magma=use_magma)
    if pivoting:
        return q, r, p[0]
    return q, r


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
    """``(u, s, vh)``, or only ``s`` (descending) without ``compute_uv``."""
    result = svd_p.bind(asarray(x), full_matrices=full_matrices, compute_uv=compute_uv,
                        subset_by_index=subset_by_index, algorithm=algorithm)
    if compute_uv:
        s, u, v = result
        return u, s, v
    (s,) = result
    return s
