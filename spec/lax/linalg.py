"""``jax.lax.linalg``: decompositions and triangular solves."""

from spec._src.lax.linalg import (
    EighImplementation,
    SvdAlgorithm,
    cholesky,
    cholesky_p,
    eigh,
    eigh_p,
    qr,
    qr_p,
    svd,
    svd_p,
    triangular_solve,
    triangular_solve_p,
)
from spec._src.lax.linalg_eig import EigImplementation, eig, eig_p
from spec._src.lax.linalg_tridiagonal import tridiagonal_solve, tridiagonal_solve_p
from spec._src.lax.linalg_householder import householder_product, householder_product_p
from spec._src.lax.linalg_schur import (
    hessenberg,
    hessenberg_p,
    schur,
    schur_p,
    tridiagonal,
    tridiagonal_p,
)
from spec._src.lax.linalg_products import (
    cholesky_update,
    cholesky_update_p,
    ormqr,
    ormqr_p,
    symmetric_product,
    symmetric_product_p,
)
from spec._src.scipy.qdwh import qdwh
from spec._src.lax.linalg_lu import lu, lu_p, lu_pivots_to_permutation, lu_pivots_to_permutation_p

__all__ = [
    "EigImplementation",
    "eig",
    "eig_p",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_p",
    "cholesky_update",
    "cholesky_update_p",
    "eigh",
    "eigh_p",
    "hessenberg",
    "hessenberg_p",
    "householder_product",
    "householder_product_p",
    "lu",
    "lu_p",
    "lu_pivots_to_permutation",
    "lu_pivots_to_permutation_p",
    "ormqr",
    "ormqr_p",
    "qdwh",
    "qr",
    "qr_p",
    "schur",
    "schur_p",
    "svd",
    "svd_p",
    "symmetric_product",
    "symmetric_product_p",
    "triangular_solve",
    "triangular_solve_p",
    "tridiagonal",
    "tridiagonal_p",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
]
