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

__all__ = [
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_p",
    "eigh",
    "eigh_p",
    "qr",
    "qr_p",
    "svd",
    "svd_p",
    "triangular_solve",
    "triangular_solve_p",
]
