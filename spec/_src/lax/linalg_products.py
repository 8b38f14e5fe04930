"""Products and updates of factored matrices: ``symmetric_product``,
``cholesky_update``, ``ormqr``.

- ``symmetric_product(a, c, alpha, beta)`` is ``alpha a a^T + beta c`` for
  a ``[..., m, n]`` and c ``[..., m, m]`` (BLAS syrk; on CPU the whole
  matrix is computed, so both triangles hold the product).
- ``cholesky_update(r, w)`` is the upper Cholesky factor of ``r^T r + w
  w^T`` for an upper triangular ``r`` ``[n, n]`` and ``w`` ``[n]``: for
  each row k a Givens rotation of (row k of r, w) that zeroes ``w[k]``.
- ``ormqr(a, taus, c, left, transpose)`` is ``Q c``, ``Q^H c``, ``c Q`` or
  ``c Q^H`` with ``Q = H_0 ... H_{k-1}`` (m x m), ``H_i = I - taus[i] v_i
  v_i^H``, ``v_i`` zero above row i, one at row i and ``a[i+1:, i]`` below
  (geqrf's reflectors): LAPACK's ormqr / unmqr.

Constraint numbering (cited in error messages, see SPEC.md, section 9):
C1 the operands' ranks (at least 2 for matrices, 1 for vectors;
cholesky_update exactly 2 and 1: it has no batch axes); C2 equal numbers of
batch axes; C3 the shapes (symmetric_product: c is ``[m, m]``;
cholesky_update: r square, w of its size; ormqr: c's rows (left) or
columns (right) are a's m); C4 dtypes (float32 or float64 for
symmetric_product and cholesky_update; also complex64 and complex128 for
ormqr); C5 one dtype; C6 (ormqr) ``k <= min(m, n)`` (LAPACK reads k
columns of a) and equal batch axes.

The NumPy evaluations: symmetric_product and ormqr in float64
(complex128) vectorised over the batch, rounded once (ormqr loops over the
k reflectors); cholesky_update in r's dtype, operation by operation as JAX's
formulation (so in the same roundings). JAX defines no derivative rule for
any of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.lax import sharding_kit as SK
from spec._src.lax.control_flow import cond
from spec._src.lax.dot import Precision, batch_matmul
from spec._src.lax.elementwise import abs as lax_abs
from spec._src.lax.elementwise import add, div, eq, gt, integer_pow, mul, neg, select, sqrt, sub
from spec._src.lax.indexing import ScatterDimensionNumbers, scatter
from spec._src.lax.linalg import _batch_split_only, _leading_batch, _matrix_parts, tril
from spec._src.lax.shaping import asarray, broadcast, full_like, squeeze, transpose
from spec._src.lax.slicing import slice as lax_slice
from spec._src.lowering import linalg as LL
from spec._src.lowering.transcendental import lower_fun

_REAL = (T.float32, T.float64)
_LAPACK = (T.float32, T.float64, T.complex64, T.complex128)


def _check_operands(name: str, avals: tuple[ArrayType, ...], ranks: tuple[int, ...],
                    batching: bool) -> tuple[int, ...]:
    """C1 and C2; returns the batch shape."""
    for i, (a, rank) in enumerate(zip(avals, ranks)):
        require(a.ndim >= rank, name, "C1",
                f"Input {i} to {name} must have rank at least {rank}, but got shape={a.shape}")
        require(batching or a.ndim == rank, name, "C1",
                f"Input {i} to {name} must have a rank of exactly {rank}, but got "
                f"shape={a.shape}")
    nb = [a.ndim - r for a, r in zip(avals, ranks)]
    require(all(n == nb[0] for n in nb), name, "C2",
            f"All inputs to {name} must have the same number of batch dimensions, but got "
            f"{nb} batch dimensions for the inputs.")
    return tuple(avals[0].shape[:nb[0]])


def _check_dtypes(name: str, avals: tuple[ArrayType, ...], accepted: tuple[T.DType, ...]
                  ) -> None:
    names = ", ".join(np.dtype(d).name for d in accepted)
    for i, a in enumerate(avals):
        require(a.dtype in accepted, name, "C4",
                f"{name} does not accept dtype {a.dtype.name} at position {i}. Accepted "
                f"dtypes at position {i} are subtypes of {names}.")
    require(all(a.dtype == avals[0].dtype for a in avals), name, "C5",
            f"lax.{name} requires arguments to have the same dtypes, got "
            f"{', '.join(a.dtype.name for a in avals)}.")


def _result(like: ArrayType, avals: tuple[ArrayType, ...]) -> list[ArrayType]:
    return [ArrayType(like.shape, avals[0].dtype, all(a.weak_type for a in avals))]


# ------------------------------------------------------------ symmetric_product

def _symmetric_product_type(a: ArrayType, c: ArrayType, *, alpha: float, beta: float
                            ) -> list[ArrayType]:
    name = "symmetric_product"
    _check_operands(name, (a, c), (2, 2), True)
    require(a.shape[-2] == c.shape[-1] and c.shape[-2] == c.shape[-1], name, "C3",
            "symmetric_update expects a rectangular matrix of shape (m, n) and a square "
            f"matrix of shape (n, n). Got shapes {a.shape[-2:]} and {c.shape[-2:]}.",
            ValueError)
    _check_dtypes(name, (a, c), _REAL)
    return _result(c, (a, c))


def _symmetric_product_impl(a: np.ndarray, c: np.ndarray, *, alpha: float, beta: float
                            ) -> list[np.ndarray]:
    wide = a.astype(np.float64)
    product = np.matmul(wide, np.swapaxes(wide, -1, -2)).astype(c.dtype)
    return [(c.dtype.type(alpha) * product + c.dtype.type(beta) * c).astype(c.dtype)]


def _symmetric_product_lowered(a: Any, c: Any, *, alpha: float, beta: float) -> Any:
    """JAX's CPU lowering: the product at HIGHEST precision, scaled and added."""
    nd = len(a.shape)
    a_t = transpose(a, (*range(nd - 2), nd - 1, nd - 2))
    dtype = np.dtype(c.dtype)
    return add(mul(np.asarray(alpha, dtype), batch_matmul(a, a_t, Precision.HIGHEST)),
               mul(np.asarray(beta, dtype), c))


# ------------------------------------------------------------- cholesky_update

def _cholesky_update_type(r: ArrayType, w: ArrayType) -> list[ArrayType]:
    name = "cholesky_update"
    _check_operands(name, (r, w), (2, 1), False)
    require(r.shape[0] == r.shape[1] and w.shape[0] == r.shape[1], name, "C3",
            "Rank-1 update to Cholesky decomposition takes a square matrix and a vector of "
            f"the same size as input. Got shapes {r.shape} and {w.shape} instead", ValueError)
    _check_dtypes(name, (r, w), _REAL)
    return _result(r, (r, w))


def _cholesky_update_impl(r: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    r, z = r.copy(), w.astype(r.dtype)
    one, zero = r.dtype.type(1), r.dtype.type(0)
    with np.errstate(all="ignore"):
        for k in range(r.shape[0]):
            x, y = r[k, k], z[k]
            if y == 0:
                c, s = one, zero
            else:
                denominator = abs(x) if abs(x) > abs(y) else abs(y)
                x, y = x / denominator, y / denominator
                rh = one / np.sqrt(x * x + y * y)
                c, s = x * rh, -y * rh
            row = r[k, :].copy()
            r[k, :] = c * row - s * z
            z = c * z + s * row
    return [r]


def _givens(x: Any, y: Any) -> tuple[Any, Any]:
    """The rotation's (c, s) for a nonzero y, without overflow."""
    ax, ay = lax_abs(x), lax_abs(y)
    denominator = select(gt(ax, ay), ax, ay)
    x, y = div(x, denominator), div(y, denominator)
    rh = div(full_like(x, 1), sqrt(add(integer_pow(x, 2), integer_pow(y, 2))))
    return mul(x, rh), mul(neg(y), rh)


def _cholesky_update_lowered(r: Any, z: Any) -> Any:
    """JAX's lowering: the rotations row by row, each chosen by a cond."""
    n = z.shape[0]
    rows = ScatterDimensionNumbers(update_window_dims=(0,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
    for k in range(n):
        x = squeeze(lax_slice(r, (k, k), (k + 1, k + 1)), (0, 1))
        y = squeeze(lax_slice(z, (k,), (k + 1,)), (0,))
        c, s = cond(eq(y, full_like(y, 0)),
                    lambda x, y: (full_like(x, 1), full_like(x, 0)), _givens, x, y)
        row = squeeze(lax_slice(r, (k, 0), (k + 1, n)), (0,))
        new_row, z = sub(mul(c, row), mul(s, z)), add(mul(c, z), mul(s, row))
        index = broadcast(np.int32(k), (1,))
        r = scatter(r, index, new_row, rows, indices_are_sorted=True, unique_indices=True,
                    mode="fill")
    return r


# ----------------------------------------------------------------------- ormqr

def _ormqr_type(a: ArrayType, taus: ArrayType, c: ArrayType, *, left: bool, transpose: bool
                ) -> list[ArrayType]:
    name = "ormqr"
    batch = _check_operands(name, (a, taus, c), (2, 1, 2), True)
    m, n = a.shape[-2:]
    if left:
        require(c.shape[-2] == m, name, "C3",
                "ormqr with left=True expects c to have the same number of rows as the "
                f"Householder matrix a. Got a shape {a.shape[-2:]} and c shape "
                f"{c.shape[-2:]}.", ValueError)
    else:
        require(c.shape[-1] == m, name, "C3",
                "ormqr with left=False expects c to have the same number of columns as the "
                f"Householder matrix a has rows. Got a shape {a.shape[-2:]} and c shape "
                f"{c.shape[-2:]}.", ValueError)
    _check_dtypes(name, (a, taus, c), _LAPACK)
    require(taus.shape[-1] <= min(m, n), name, "C6",
            f"ormqr needs at most min(m, n) reflectors, got {taus.shape[-1]} for a of shape "
            f"{a.shape[-2:]}", ValueError)
    require(taus.shape[:-1] == batch and c.shape[:-2] == batch, name, "C6",
            f"batch dimensions must be equal, got {batch}, {taus.shape[:-1]} and "
            f"{c.shape[:-2]}", ValueError)
    return _result(c, (a, taus, c))


def _ormqr_impl(a: np.ndarray, taus: np.ndarray, c: np.ndarray, *, left: bool,
                transpose: bool) -> list[np.ndarray]:
    *batch, m, _ = a.shape
    k = taus.shape[-1]
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    b = math.prod(batch)
    refl = np.tril(a.reshape(b, m, -1)[:, :, :k].astype(wide), -1)
    refl[:, np.arange(k), np.arange(k)] = 1
    t = taus.reshape(b, k).astype(wide)
    if transpose:
        t = np.conj(t)
    out = c.reshape(b, *c.shape[-2:]).astype(wide)
    # Q c and c Q^H apply the last reflector first; Q^H c and c Q the first.
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = refl[:, :, i]
        if left:  # c - tau v (v^H c)
            out -= t[:, i, None, None] * v[:, :, None] * np.einsum("bm,bmn->bn", np.conj(v),
                                                                   out)[:, None, :]
        else:  # c - tau (c v) v^H
            out -= (t[:, i, None, None] * np.einsum("brm,bm->br", out, v)[:, :, None]
                    * np.conj(v)[:, None, :])
    return [out.reshape(c.shape).astype(c.dtype)]


# ---------------------------------------------------------------- declarations

symmetric_product_p = declare(
    "symmetric_product", lowering=lower_fun(_symmetric_product_lowered),
    typing=_symmetric_product_type, impl=_symmetric_product_impl,
    jvp=not_applicable("JAX defines no derivative rule for symmetric_product"),
    transpose=not_applicable("alpha a a^T + beta c is not linear in a"),
    batch=_leading_batch("symmetric_product"),
    sharding=SK.section("symmetric_product", _matrix_parts("symmetric_product")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

cholesky_update_p = declare(
    "cholesky_update", lowering=lower_fun(_cholesky_update_lowered),
    typing=_cholesky_update_type, impl=_cholesky_update_impl,
    jvp=not_applicable("JAX defines no derivative rule for cholesky_update"),
    transpose=not_applicable("a Cholesky factor is not linear in the matrix"),
    batch=not_applicable("JAX defines no batching rule for cholesky_update (its operands "
                         "have no batch axes)"),
    sharding=SK.section("cholesky_update", _matrix_parts("cholesky_update")),
    per_device=from_primitive(S.gathered))

ormqr_p = declare(
    "ormqr", lowering=LL.ormqr, typing=_ormqr_type, impl=_ormqr_impl,
    jvp=not_applicable("JAX defines no derivative rule for ormqr"),
    transpose=not_applicable("a product with reflectors is not linear in them"),
    batch=_leading_batch("ormqr"), sharding=SK.section("ormqr", _matrix_parts("ormqr")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))


# ---------------------------------------------------------------- lax wrappers

def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """``alpha a a^T + beta c``; with ``symmetrize_output`` the upper triangle
    is the lower one's transpose (JAX's masks)."""
    out = symmetric_product_p.bind(asarray(a_matrix), asarray(c_matrix), alpha=alpha,
                                   beta=beta)
    if symmetrize_output:
        nd = len(out.shape)
        upper = transpose(tril(out, -1), (*range(nd - 2), nd - 1, nd - 2))
        out = add(tril(out, 0), upper)
    return out


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """The upper Cholesky factor of ``r^T r + w w^T``."""
    return cholesky_update_p.bind(asarray(r_matrix), asarray(w_vector))


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """``Q c`` (``Q^H c`` with ``transpose``; ``c Q``, ``c Q^H`` for
    ``left=False``), Q the product of the reflectors in a and taus."""
    return ormqr_p.bind(asarray(a), asarray(taus), asarray(c), left=left, transpose=transpose)


__all__ = ["cholesky_update", "cholesky_update_p", "ormqr", "ormqr_p", "symmetric_product",
           "symmetric_product_p"]
