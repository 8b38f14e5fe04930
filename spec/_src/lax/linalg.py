"""Linear-algebra decompositions: cholesky, triangular_solve, qr, eigh, svd.

All five act on the last two axes of their operands and map over every
leading (batch) axis, as JAX's ``jax.lax.linalg`` primitives do. Constraint
numbering (cited in error messages, see SPEC.md, section 9):

- every primitive: C1 each operand has rank >= 2 (the matrix axes). The
  shape constraints below are checked before the dtype ones, as JAX does.
- cholesky: C2 the matrix is square; C3 the dtype is float32, float64,
  complex64 or complex128.
- triangular_solve: C2 a and b have the same number of batch axes; C3 a is
  square; C4 a's size equals b's solved axis (b.shape[-2] when left_side,
  b.shape[-1] otherwise); C5 both dtypes are inexact; C6 a and b have one
  dtype; C7 a and b have equal batch axes (JAX only notices this when
  compiling).
- qr: C2 the dtype is float32, float64, complex64 or complex128.
- eigh: C2 the matrix is square; C3 dtype as qr's C2.
- svd: C2 ``full_matrices`` and a partial ``subset_by_index`` are exclusive;
  C3 dtype as qr's C2.

Impls call NumPy's LAPACK-backed ``numpy.linalg`` routines on whole batches
(the same LAPACK drivers XLA's CPU backend calls: potrf, syevd/heevd, geqrf +
orgqr, gesdd); triangular_solve is a substitution vectorised over the batch
and the right-hand sides. As on XLA's CPU backend, a matrix whose
factorisation fails (cholesky of a matrix that is not positive definite,
eigh/svd of a matrix with non-finite entries) yields NaNs in its outputs.

Autodiff rules are JAX's formulas, computed with ``spec.lax`` so that they
record the same equations; triangular_solve is linear in ``b``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.interpreters.ad_util import Zero, defjvp2, is_undefined_primal
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front, moveaxis
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of, not_applicable
from spec._src.lax import sharding_kit as SK
from spec._src.lax.dot import dot_general
from spec._src.lax.elementwise_kit import compute_dtype
from spec._src.lax.shaping import _convert_element_type, expand_dims, transpose
from spec._src.lowering import linalg as LL
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist
from spec._src.lax.shaping import asarray
from spec._src.lax.dot import Precision, batch_matmul, dot, staged_matmul
from spec._src.lax.elementwise import (
    add,
    complex,
    conj,
    eq,
    ge,
    imag,
    integer_pow,
    neg,
    real,
    select,
)
from spec._src.lax.shaping import (
    broadcast,
    broadcasted_iota,
    convert_element_type,
    full,
    full_like,
    iota,
    reshape,
)
from spec._src.lax.slicing import concatenate
from spec._src.core.config import x64_enabled
from spec._src.core.registry import REGISTRY
from spec._src.interpreters.ad_util import instantiate


class EighImplementation(enum.Enum):
    """The eigh algorithm hint (only the default QR-based one exists on CPU)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class SvdAlgorithm(enum.Enum):
    """The svd algorithm hint (CPU: DEFAULT and DIVIDE_AND_CONQUER are gesdd)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


# ------------------------------------------------------------------- typing

_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)


def _lapack_dtype(dt: T.DType) -> bool:
    return dt in _LAPACK_TYPES


def _check_ranks(name: str, avals: Sequence[ArrayType]) -> T.Shape:
    """C1 (rank >= 2) and, for two operands, C2 (same number of batch axes);
    returns the first operand's batch shape."""
    for i, a in enumerate(avals):
        require(a.ndim >= 2, name, "C1", f"input {i} must have rank at least 2, but got "
                f"shape={a.shape}")
    nb = [a.ndim - 2 for a in avals]
    require(all(n == nb[0] for n in nb), name, "C2",
            f"all inputs must have the same number of batch dimensions, but got {nb} batch "
            "dimensions for the inputs")
    return avals[0].shape[:-2]


def _check_dtype(name: str, c: str, x: ArrayType, i: int = 0, lapack_only: bool = True
                 ) -> None:
    ok = _lapack_dtype(x.dtype) if lapack_only else T.is_inexact(x.dtype)
    accepted = "float32, float64, complex64, complex128" if lapack_only \
        else "floating, complexfloating"
    require(ok, name, c, f"does not accept dtype {x.dtype.name} at position {i}; accepted "
            f"dtypes are subtypes of {accepted}")


def _real_of(dt: T.DType) -> T.DType:
    if dt == T.complex64:
        return T.float32
    if dt == T.complex128:
        return T.float64
    return dt


def _cholesky_type(x: ArrayType) -> list[ArrayType]:
    _check_ranks("cholesky", [x])
    require(x.shape[-1] == x.shape[-2], "cholesky", "C2",
            f"the input must be a square matrix, got shape {x.shape}", ValueError)
    _check_dtype("cholesky", "C3", x)
    return [ArrayType(x.shape, x.dtype, x.weak_type)]


def _triangular_solve_type(a: ArrayType, b: ArrayType, *, left_side: bool, lower: bool,
                           transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                           ) -> list[ArrayType]:
    name = "triangular_solve"
    _check_ranks(name, [a, b])
    require(a.shape[-1] == a.shape[-2], name, "C3",
            f"the first input must be a square matrix, got shape {a.shape}", ValueError)
    common = -2 if left_side else -1
    require(a.shape[-1] == b.shape[common], name, "C4",
            f"incompatible shapes for arguments: {a.shape} and {b.shape} (left_side="
            f"{left_side})", ValueError)
    _check_dtype(name, "C5", a, 0, lapack_only=False)
    _check_dtype(name, "C5", b, 1, lapack_only=False)
    require(a.dtype == b.dtype, name, "C6", f"requires arguments to have the same dtypes, "
            f"got {a.dtype.name}, {b.dtype.name}")
    require(a.shape[:-2] == b.shape[:-2], name, "C7",
            f"batch dimensions must be equal, got {a.shape[:-2]} and {b.shape[:-2]}",
            ValueError)
    return [ArrayType(b.shape, b.dtype, a.weak_type and b.weak_type)]


def _qr_type(x: ArrayType, *, pivoting: bool, full_matrices: bool, use_magma: Any
             ) -> list[ArrayType]:
    batch = _check_ranks("qr", [x])
    _check_dtype("qr", "C2", x)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    w = x.weak_type
    outs = [ArrayType((*batch, m, k), x.dtype, w), ArrayType((*batch, k, n), x.dtype, w)]
    if pivoting:
        outs.append(ArrayType((*batch, n), T.int32, w))
    return outs


def _eigh_type(x: ArrayType, *, lower: bool, sort_eigenvalues: bool,
               subset_by_index: tuple[int, int] | None, algorithm: Any) -> list[ArrayType]:
    batch = _check_ranks("eigh", [x])
    require(x.shape[-1] == x.shape[-2], "eigh", "C2",
            f"the argument to symmetric eigendecomposition must have shape [..., n, n], got "
            f"shape {x.shape}", ValueError)
    _check_dtype("eigh", "C3", x)
    n = x.shape[-1]
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    w = x.weak_type
    return [ArrayType((*batch, n, d), x.dtype, w), ArrayType((*batch, d), _real_of(x.dtype), w)]


def _svd_type(x: ArrayType, *, full_matrices: bool, compute_uv: bool,
              subset_by_index: tuple[int, int] | None, algorithm: Any) -> list[ArrayType]:
    batch = _check_ranks("svd", [x])
    m, n = x.shape[-2:]
    rank = min(m, n)
    if subset_by_index is not None:
        require(not full_matrices or tuple(subset_by_index) == (0, rank), "svd", "C2",
                "full_matrices and subset_by_index cannot both be set", ValueError)
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    _check_dtype("svd", "C3", x)
    w = x.weak_type
    s = ArrayType((*batch, rank), _real_of(x.dtype), w)
    if not compute_uv:
        return [s]
    return [s, ArrayType((*batch, m, m if full_matrices else rank), x.dtype, w),
            ArrayType((*batch, n if full_matrices else rank, n), x.dtype, w)]


# --------------------------------------------------------------------- impl

def _nan_where(bad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x`` with every matrix (or vector) of a failed batch entry set to NaN."""
    if not bad.any():
        return x
    mask = bad.reshape(bad.shape + (1,) * (x.ndim - bad.ndim))
    fill = complex(np.nan, np.nan) if np.iscomplexobj(x) else np.nan
    return np.where(mask, np.array(fill, x.dtype), x)


def _identity_where(bad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Failed batch entries replaced by identities, so that the batched LAPACK
    call (which raises for the whole batch) succeeds for the others."""
    if not bad.any():
        return x
    eye = np.eye(x.shape[-2], x.shape[-1], dtype=x.dtype)
    return np.where(bad[..., None, None], eye, x)


def _not_positive_definite(x: np.ndarray) -> np.ndarray:
    """Which matrices of the batch potrf refuses: an unblocked Cholesky of the
    lower triangle, vectorised over the batch. A pivot <= 0 fails; a NaN
    pivot does not (LAPACK's test is ``ajj <= 0``: NaNs run through to the
    factor). Only used after LAPACK has refused some of the matrices."""
    n = x.shape[-1]
    work = np.tril(x).astype(np.complex128 if T.is_complex(x.dtype) else np.float64)
    ok = np.ones(x.shape[:-2], bool)
    for j in range(n):
        col = work[..., j:, j] - np.einsum("...ik,...k->...i", work[..., j:, :j],
                                           np.conj(work[..., j, :j]))
        d = col[..., 0].real
        ok &= ~(d <= 0)
        root = np.sqrt(np.where(d > 0, d, 1.0))
        work[..., j:, j] = col / root[..., None]
    return np.asarray(~ok)


def _cholesky_impl(x: np.ndarray) -> list[np.ndarray]:
    """potrf reads and overwrites the lower triangle only: the result keeps
    the operand's strict upper triangle (the lax wrapper masks it)."""
    if x.shape[-1] == 0:
        return [x.copy()]
    with np.errstate(all="ignore"):
        try:
            factor = np.linalg.cholesky(x)
            bad = np.zeros(x.shape[:-2], bool)
        except np.linalg.LinAlgError:
            bad = _not_positive_definite(x)
            try:
                factor = np.linalg.cholesky(_identity_where(bad, x))
            except np.linalg.LinAlgError:  # a borderline pivot judged otherwise
                bad = np.ones(x.shape[:-2], bool)
                factor = np.zeros_like(x)
    n = x.shape[-1]
    lower = np.tri(n, n, dtype=bool)
    out = np.where(lower, factor, x).astype(x.dtype, copy=False)
    return [_nan_where(bad, out)]


def _forward_substitution(m: np.ndarray, b: np.ndarray, unit: bool) -> np.ndarray:
    """Solve ``m @ x = b`` for lower-triangular ``m`` (only its lower triangle
    is read), column-oriented as the reference trsm: each solved row is
    scaled by its pivot, then eliminated from the rows below. Vectorised over
    the batch and the right-hand sides; the loop runs over the matrix size."""
    x = b.copy()
    n = m.shape[-1]
    for k in range(n):
        if not unit:
            x[..., k, :] = x[..., k, :] / m[..., k, k, None]
        if k + 1 < n:
            x[..., k + 1:, :] -= m[..., k + 1:, k, None] * x[..., k, None, :]
    return x


def _triangular_solve_impl(a: np.ndarray, b: np.ndarray, *, left_side: bool, lower: bool,
                           transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                           ) -> list[np.ndarray]:
    """Reduce every case to a left-side lower-triangular solve: op(a) is
    lower iff ``lower`` differs from ``transpose_a``; a right-side solve
    ``x op(a) = b`` is the left-side ``op(a)^T x^T = b^T``; an upper-triangular
    system becomes lower by reversing its rows and columns."""
    cd = compute_dtype(a.dtype)
    m = a.astype(cd, copy=False)
    rhs = b.astype(cd, copy=False)
    if conjugate_a and T.is_complex(cd):
        m = np.conj(m)
    low = lower != transpose_a
    if transpose_a:
        m = np.swapaxes(m, -1, -2)
    if not left_side:
        m, rhs, low = np.swapaxes(m, -1, -2), np.swapaxes(rhs, -1, -2), not low
    if not low:
        m, rhs = m[..., ::-1, ::-1], rhs[..., ::-1, :]
    with np.errstate(all="ignore"):
        x = _forward_substitution(m, rhs, unit_diagonal)
    if not low:
        x = x[..., ::-1, :]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return [np.ascontiguousarray(x).astype(b.dtype, copy=False)]


def _qr_impl(x: np.ndarray, *, pivoting: bool, full_matrices: bool, use_magma: Any
             ) -> list[np.ndarray]:
    if pivoting:
        raise NotImplementedError("qr: column pivoting (geqp3) is not implemented in spec")
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    if m == 0 or n == 0:
        q = np.broadcast_to(np.eye(m, k, dtype=x.dtype), (*batch, m, k)).copy()
        return [q, np.zeros((*batch, k, n), x.dtype)]
    with np.errstate(all="ignore"):
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [np.asarray(q, x.dtype), np.asarray(r, x.dtype)]


def _eigh_impl(x: np.ndarray, *, lower: bool, sort_eigenvalues: bool,
               subset_by_index: tuple[int, int] | None, algorithm: Any) -> list[np.ndarray]:
    n = x.shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")
    if algorithm == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if algorithm == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    # syevd reads one triangle; a non-finite entry there makes it fail (NaNs).
    used = np.tril(x) if lower else np.triu(x)
    bad = ~np.isfinite(used).all(axis=(-2, -1))
    with np.errstate(all="ignore"):
        w, v = np.linalg.eigh(_identity_where(bad, x), UPLO="L" if lower else "U")
    return [_nan_where(bad, np.asarray(v, x.dtype)),
            _nan_where(bad, np.asarray(w, _real_of(x.dtype)))]


def _svd_impl(x: np.ndarray, *, full_matrices: bool, compute_uv: bool,
              subset_by_index: tuple[int, int] | None, algorithm: Any) -> list[np.ndarray]:
    *batch, m, n = x.shape
    rank = min(m, n)
    if not (subset_by_index is None or tuple(subset_by_index) == (0, rank)):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    real = _real_of(x.dtype)
    if rank == 0:
        return _empty_svd(x, full_matrices, compute_uv)
    if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented "
                                  "on CPU.")
    if algorithm == SvdAlgorithm.QR:
        raise NotImplementedError("svd: the QR algorithm (gesvd) is not implemented in spec")
    bad = ~np.isfinite(x).all(axis=(-2, -1))
    clean = np.where(bad[..., None, None], np.zeros((), x.dtype), x) if bad.any() else x
    with np.errstate(all="ignore"):
        if not compute_uv:
            s = np.linalg.svd(clean, compute_uv=False)
            return [_nan_where(bad, np.asarray(s, real))]
        u, s, vt = np.linalg.svd(clean, full_matrices=full_matrices)
    return [_nan_where(bad, np.asarray(s, real)), _nan_where(bad, np.asarray(u, x.dtype)),
            _nan_where(bad, np.asarray(vt, x.dtype))]


def _empty_svd(x: np.ndarray, full_matrices: bool, compute_uv: bool) -> list[np.ndarray]:
    """An SVD of a matrix with a zero-sized side, as JAX builds it: no
    singular values; with full matrices the non-empty side's vectors are an
    identity."""
    *batch, m, n = x.shape
    s = np.zeros((*batch, 0), _real_of(x.dtype))
    if not compute_uv:
        return [s]
    if full_matrices:
        size = max(m, n)
        u = np.broadcast_to(np.eye(size, dtype=x.dtype), (*batch, size, size)).copy()
    else:
        u = np.zeros((*batch, m, n), x.dtype)
    v = np.zeros((*batch, 0, 0), x.dtype)
    if m < n:
        u, v = v, u
    return [s, u, v]


# ------------------------------------------------------ lax-level helpers
# Written as JAX's helpers, so that the rules below record its equations.



def _aval(x: Any) -> ArrayType:
    return canonical_aval_of(x)


def _T(x: Any) -> Any:
    nd = _aval(x).ndim
    return transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _conj(x: Any) -> Any:
    """jnp's conj: a no-op (no equation) for real arrays."""
    return conj(x) if T.is_complex(_aval(x).dtype) else x


def _H(x: Any) -> Any:
    return _conj(_T(x))


def symmetrize(x: Any) -> Any:
    return (x + _H(x)) / 2


def _tri(n: int, m: int, k: int) -> Any:
    """Boolean (n, m) mask of the entries on or below the k-th diagonal. As
    JAX's, the indices are int64 when the offset (a Python int, so int64
    under x64) or the shape does not fit int32."""
    big = x64_enabled() or max(n, m) > np.iinfo(np.int32).max
    dt = np.dtype(np.int64 if big else np.int32)
    rows = add(broadcasted_iota(dt, (n, m), 0), np.array(k, dt))
    return ge(rows, broadcasted_iota(dt, (n, m), 1))


def tril(x: Any, k: int = 0) -> Any:
    *batch, n, m = _aval(x).shape
    mask = broadcast(_tri(n, m, k), tuple(batch))
    return select(mask, x, full_like(x, 0))


def triu(x: Any, k: int = 0) -> Any:
    *batch, n, m = _aval(x).shape
    mask = broadcast(_tri(n, m, k - 1), tuple(batch))
    return select(mask, full_like(x, 0), x)


def _eye(dtype: T.DType, n: int, m: int) -> Any:
    rows = add(broadcasted_iota(np.int32, (n, m), 0), np.int32(0))
    eye = eq(rows, broadcasted_iota(np.int32, (n, m), 1))
    return convert_element_type(eye, dtype)


def _astype(x: Any, dtype: T.DType) -> Any:
    return x if _aval(x).dtype == dtype else convert_element_type(x, dtype)


def _real(x: Any) -> Any:
    """jnp's ``.real``: the array itself when it is real."""
    return real(x) if T.is_complex(_aval(x).dtype) else x


def _matmul(a: Any, b: Any) -> Any:
    """``a @ b`` of two stacks of matrices, as JAX's rules write it: jnp's
    staging (``staged_matmul``) to the joint result type."""
    pet, weak = T.result_type_and_weak(a, b)
    out = staged_matmul(a, b, lambda x, y, dims: dot_general(x, y, dims,
                                                            preferred_element_type=pet))
    return _convert_element_type(out, pet, weak)


def _dot(a: Any, b: Any) -> Any:
    """JAX's rules multiply with HIGHEST precision: ``dot`` for matrices,
    ``batch_matmul`` for batches of them."""
    if _aval(a).ndim == 2:
        return dot(a, b, precision=Precision.HIGHEST)
    return batch_matmul(a, b, precision=Precision.HIGHEST)


def _extract_diagonal(s: Any) -> Any:
    *_, n, m = _aval(s).shape
    i = iota(np.int32, min(n, m))
    return s[..., i, i]


# ----------------------------------------------------------- lax wrappers

def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """``op(a) x = b`` (left_side) or ``x op(a) = b``; a ``b`` of one rank less
    than ``a`` is a single vector."""
    a, b = asarray(a), asarray(b)
    conjugate_a = bool(conjugate_a) and T.is_complex(_aval(a).dtype)
    singleton = _aval(b).ndim == _aval(a).ndim - 1
    if singleton:
        b = expand_dims(b, (-1 if left_side else -2,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        out = out[..., 0] if left_side else out[..., 0, :]
    return out


# ----------------------------------------------------------------- autodiff

def _cholesky_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """JAX's forward-mode rule (Murray 2016): with the tangent made
    symmetric, L_dot = L phi(L^-1 sigma_dot L^-H), phi taking the lower
    triangle with the diagonal halved. The primal output is the masked
    factor (its upper triangle zero), as in JAX."""
    (x,), (sigma_dot,) = primals, tangents
    sigma_dot = instantiate(sigma_dot)
    if T.is_complex(_aval(sigma_dot).dtype):
        r, i = real(sigma_dot), imag(sigma_dot)
        sigma_dot = complex(tril(r) + _T(tril(r, -1)), tril(i, -1) - _T(tril(i, -1)))
    else:
        sigma_dot = tril(sigma_dot) + _T(tril(sigma_dot, -1))
    factor = tril(cholesky_p.bind(x))

    def phi(m: Any) -> Any:
        low = tril(m)
        a = _aval(m)
        n = a.shape[-1]
        return low / expand_dims(np.array(1, a.dtype) + _eye(a.dtype, n, n),
                                     tuple(range(a.ndim - 2)))

    tmp = triangular_solve(factor, sigma_dot, left_side=False, transpose_a=True,
                           conjugate_a=True, lower=True)
    inner = triangular_solve(factor, tmp, left_side=True, transpose_a=False, lower=True)
    l_dot = batch_matmul(factor, phi(inner), precision=Precision.HIGHEST)
    return [factor], [l_dot]


def _triangular_solve_jvp_a(g_a: Any, ans: Any, a: Any, b: Any, *, left_side: bool,
                            lower: bool, transpose_a: bool, conjugate_a: bool,
                            unit_diagonal: bool) -> Any:
    """d(A^-1 B) = -A^-1 dA A^-1 B, with dA restricted to the triangle that
    is read (the strict one for a unit diagonal); the two products are
    ordered as JAX orders them, cheaper side first."""
    m, n = _aval(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = neg(g_a)
    g_a = _T(g_a) if transpose_a else g_a
    g_a = _conj(g_a) if conjugate_a else g_a

    def a_inverse(rhs: Any) -> Any:
        return triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                transpose_a=transpose_a, conjugate_a=conjugate_a,
                                unit_diagonal=unit_diagonal)

    if left_side:
        return a_inverse(_dot(g_a, ans)) if m > n else _dot(a_inverse(g_a), ans)
    return a_inverse(_dot(ans, g_a)) if m < n else _dot(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b: Any, ans: Any, a: Any, b: Any, **params: Any) -> Any:
    return triangular_solve(a, g_b, **params)


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
    """Linear in b (as div in its numerator): the cotangent of b solves the
    transposed system; a must be known."""
    if is_undefined_primal(a) or not is_undefined_primal(b):
        raise TypeError("triangular_solve: can only be transposed with respect to b (it "
                        "is not linear in a)")
    if type(ct) is Zero:
        return [None, Zero(b.aval.ct_type())]
    ct_b = triangular_solve(a, ct, left_side=left_side, lower=lower,
                            transpose_a=not transpose_a, conjugate_a=conjugate_a,
                            unit_diagonal=unit_diagonal)
    return [None, ct_b]


def _eigh_jvp(primals: list[Any], tangents: list[Any], *, lower: bool, sort_eigenvalues: bool,
              subset_by_index: tuple[int, int] | None, algorithm: Any
              ) -> tuple[list[Any], list[Any]]:
    """First-order perturbation theory for distinct eigenvalues:
    dw = diag(V^H dA V), dV = V (F * V^H dA V) with F_ij = 1/(w_j - w_i) off
    the diagonal and 0 on it."""
    (a,), (a_dot,) = primals, tangents
    a_dot = instantiate(a_dot)
    aval = _aval(a)
    n = aval.shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=subset_by_index, algorithm=algorithm)
    w = _astype(w_real, aval.dtype)
    eye_n = _eye(aval.dtype, n, n)
    delta_w = w[..., np.newaxis, :] - w[..., np.newaxis]
    fmat = integer_pow(delta_w + eye_n, -1) - eye_n
    vdag_adot_v = _dot(_dot(_H(v), a_dot), v)
    dv = _dot(v, fmat * vdag_adot_v)
    dw = _extract_diagonal(_real(vdag_adot_v))
    return [v, w_real], [dv, dw]


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """The QR JVP for m >= n (Townsend): with C = Q^H dX R^-1, dQ and dR come
    from splitting C into a skew-Hermitian part and an upper part."""
    dx_rinv = triangular_solve(r, dx)
    qt_dx_rinv = _matmul(_H(q), dx_rinv)
    qt_dx_rinv_lower = tril(qt_dx_rinv, -1)
    do = qt_dx_rinv_lower - _H(qt_dx_rinv_lower)
    a = _aval(qt_dx_rinv)
    n = _aval(r).shape[-1]
    eye = expand_dims(_eye(_aval(do).dtype, n, n), tuple(range(a.ndim - 2)))
    do = do + eye * (qt_dx_rinv - _astype(_real(qt_dx_rinv), a.dtype))
    dq = _matmul(q, do - qt_dx_rinv) + dx_rinv
    dr = _matmul(qt_dx_rinv - do, r)
    return dq, dr


def _qr_jvp(primals: list[Any], tangents: list[Any], *, pivoting: bool, full_matrices: bool,
            use_magma: Any) -> tuple[list[Any], list[Any]]:
    (x,), (dx,) = primals, tangents
    dx = instantiate(dx)
    if pivoting:
        raise NotImplementedError("qr: column pivoting (geqp3) is not implemented in spec")
    q, r = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    *_, m, n = _aval(x).shape
    if m < n:
        # X = Q [R1 R2]: the square part is a QR of X1; R2 = Q^H X2.
        x2, dx1, dx2 = x[..., :, m:], dx[..., :, :m], dx[..., :, m:]
        dq, dr1 = _thin_qr_jvp(q, r[..., :, :m], dx1)
        dr2 = _matmul(_H(dq), x2) + _matmul(_H(q), dx2)
        dr = concatenate((dr1, dr2), _aval(dr1).ndim - 1)
        return [q, r], [dq, dr]
    if full_matrices and m != n:
        raise NotImplementedError("qr: the JVP of a full (complete) QR of a tall matrix needs "
                                  "an LU solve, which spec does not have yet")
    dq, dr = _thin_qr_jvp(q, r, dx)
    return [q, r], [dq, dr]


def _svd_jvp(primals: list[Any], tangents: list[Any], *, full_matrices: bool, compute_uv: bool,
             subset_by_index: tuple[int, int] | None, algorithm: Any
             ) -> tuple[list[Any], list[Any]]:
    """JAX's SVD JVP (Townsend's formulas): ds = diag(Re(U^H dA V)); dU, dV
    from the off-diagonal parts scaled by 1/(s_j^2 - s_i^2), plus the
    components outside the span of U (tall) or V (wide)."""
    (a,), (da,) = primals, tangents
    da = instantiate(da)
    aval = _aval(a)
    m, n = aval.shape[-2:]
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices")
    if compute_uv and not (subset_by_index is None or tuple(subset_by_index) == (0, min(m, n))):
        raise NotImplementedError("Singular value decomposition JVP not implemented for "
                                  "subset_by_index with compute_uv=True")
    dt = aval.dtype
    ut, v = _H(u), _H(vt)
    s_dim = s[..., None, :]
    ds_mat = _matmul(_matmul(ut, da), v)
    ds = _extract_diagonal(_real(ds_mat))
    if not compute_uv:
        return [s], [ds]
    s_aval = _aval(s)
    k = s_aval.shape[-1]
    s_diffs = (s_dim + _T(s_dim)) * (s_dim - _T(s_dim))
    zeros_diag = expand_dims(_eye(s_aval.dtype, k, k), tuple(range(_aval(s_diffs).ndim - 2)))
    f = 1 / (s_diffs + zeros_diag) - zeros_diag
    dss = _astype(s_dim, dt) * ds_mat
    sds = _T(_astype(s_dim, dt)) * ds_mat
    s_zeros = _astype(s == 0, s_aval.dtype)
    s_inv = 1 / (s + s_zeros) - s_zeros
    s_inv_mat = _construct_diagonal(s_inv)
    dudv_diag = .5 * (ds_mat - _H(ds_mat)) * _astype(s_inv_mat, dt)
    du = _matmul(u, _astype(f, dt) * (dss + _H(dss)) + dudv_diag)
    dv = _matmul(v, _astype(f, dt) * (sds + _H(sds)))
    if m > n:
        dav = _matmul(da, v)
        du = du + (dav - _matmul(u, _matmul(ut, dav))) / _astype(s_dim, dt)
    if n > m:
        dahu = _matmul(_H(da), u)
        dv = dv + (dahu - _matmul(v, _matmul(vt, dahu))) / _astype(s_dim, dt)
    return [s, u, vt], [ds, du, _H(dv)]


def _construct_diagonal(s: Any) -> Any:
    a = _aval(s)
    i = iota(np.int32, a.shape[-1])
    return full((*a.shape, a.shape[-1]), 0, a.dtype).at[..., i, i].set(s)


# ----------------------------------------------------------------- batching
# The decompositions map over leading axes: the batch axis goes to the front
# (unbatched operands are broadcast there), as JAX's expand_dims batcher.

def _leading_batch(prim_name: str) -> Callable[..., tuple[list[Any], list[BatchDim]]]:
    def rule(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
             ) -> tuple[list[Any], list[BatchDim]]:
        prim = REGISTRY[prim_name]
        moved = [bdim_at_front(x, d, axis.size, axis.explicit_mesh_axis)
                 for x, d in zip(args, dims)]
        out = prim.bind(*moved, **params)
        outs = list(out) if prim.multiple_results else [out]
        return outs, [0] * len(outs)
    return rule


def _triangular_solve_batch(axis: AxisData, args: list[Any], dims: list[BatchDim],
                            **params: Any) -> tuple[list[Any], list[BatchDim]]:
    """As JAX: with only b batched, the batch axis joins b's right-hand sides
    (one solve for all of them); otherwise both batch axes go to the front."""
    a, b = args
    da, db = dims
    if da is None:
        assert db is not None
        shape = _aval(b).shape
        if params["left_side"]:
            b = moveaxis(b, db, -1)
            s = _aval(b).shape
            flat = reshape(b, (*s[:-2], s[-2] * s[-1]))
            out_dim = len(shape) - 1
        else:
            b = moveaxis(b, db, -2)
            s = _aval(b).shape
            flat = reshape(b, (*s[:-3], s[-3] * s[-2], s[-1]))
            out_dim = len(shape) - 2
        out = triangular_solve_p.bind(a, flat, **params)
        return [reshape(out, _aval(b).shape)], [out_dim]
    a = bdim_at_front(a, da, axis.size, axis.explicit_mesh_axis)
    b = bdim_at_front(b, db, axis.size, axis.explicit_mesh_axis)
    return [triangular_solve_p.bind(a, b, **params)], [0]


# ----------------------------------------------------------------- sharding
# Batch axes may be sharded (all operands alike); the matrix axes must not
# be, since each factorisation reads whole matrices. triangular_solve is
# finer: only the axes the solve runs along must be unsharded.

def _matrix_parts(name: str) -> SK.PartsRule:
    def rule(mesh: AbstractMesh, *avals: ArrayType, **params: Any) -> list[SK.Parts]:
        batch_specs = []
        for i, a in enumerate(avals):
            ps = SK.parts(a)
            if any(p is not None for p in ps[-2:]):
                shown = a.sharding.spec if a.sharding else ps
                raise ShardingTypeError(f"Input {i} to {name} must be unsharded on non-batch "
                                        f"dimensions, but got {shown}.")
            batch_specs.append(ps[:-2])
        if any(b != batch_specs[0] for b in batch_specs[1:]):
            raise ShardingTypeError(f"All inputs to {name} must have the same batch sharding, "
                                    f"but got {batch_specs}.")
        outs = REGISTRY[name].typing(*avals, **params)
        b = batch_specs[0]
        return [b + (None,) * (o.ndim - len(b)) for o in outs]
    return rule


def _triangular_solve_parts(mesh: AbstractMesh, a: ArrayType, b: ArrayType, *,
                            left_side: bool, lower: bool, transpose_a: bool,
                            conjugate_a: bool, unit_diagonal: bool) -> list[SK.Parts]:
    ap, bp = SK.parts(a), SK.parts(b)
    if ap[:-2] != bp[:-2]:
        raise ShardingTypeError("All inputs to triangular_solve must have the same batch "
                                f"sharding, but got {ap[:-2]} and {bp[:-2]}.")
    a_mat, b_mat = ap[-2:], bp[-2:]
    if a_mat[int(left_side ^ transpose_a)] is not None:
        raise ShardingTypeError("triangular solve input `a` must be unsharded on the "
                                f"contracting axis, but got {ap} with left_side={left_side} "
                                f"and transpose_a={transpose_a}.")
    if b_mat[int(not left_side)] is not None:
        raise ShardingTypeError("triangular solve input `b` must be unsharded on the "
                                f"contracting axis, but got {bp} with left_side={left_side} "
                                f"and transpose_a={transpose_a}.")
    out = ((a_mat[int(transpose_a)], b_mat[1]) if left_side
           else (b_mat[0], a_mat[int(not transpose_a)]))
    return [ap[:-2] + out]


# ------------------------------------------------------------- declarations

_NONLINEAR = "a matrix decomposition is not linear"

def _batch_split_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Decompositions: every operand and result is split alike over the
    batch dimensions (those before the first operand's two matrix
    dimensions) and not at all over the rest, so each device's blocks are
    whole matrices of its own batch entries."""
    n_batch = args[0].aval.ndim - 2
    batch = tuple(S.parts_of(args[0].aval)[:n_batch])
    for aval in [*(a.aval for a in args), *out_avals]:
        parts = tuple(S.parts_of(aval))
        if parts[:n_batch] != batch or any(parts[n_batch:]) or S.unreduced_of(aval):
            return False
    return True


cholesky_p = declare(
    "cholesky", lowering=LL.cholesky, typing=_cholesky_type, impl=_cholesky_impl, jvp=_cholesky_jvp,
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("cholesky"),
    sharding=SK.section("cholesky", _matrix_parts("cholesky")),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

triangular_solve_p = declare(
    "triangular_solve", lowering=LL.triangular_solve,
    typing=_triangular_solve_type, impl=_triangular_solve_impl,
    jvp=defjvp2(_triangular_solve_jvp_a, _triangular_solve_jvp_b),
    transpose=_triangular_solve_transpose, batch=_triangular_solve_batch,
    sharding=SK.section("triangular_solve", _triangular_solve_parts),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

qr_p = declare(
    "qr", lowering=LL.qr, typing=_qr_type, impl=_qr_impl, multiple_results=True, jvp=_qr_jvp,
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("qr"),
    sharding=SK.section("qr", _matrix_parts("qr")),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

eigh_p = declare(
    "eigh", lowering=LL.eigh, typing=_eigh_type, impl=_eigh_impl, multiple_results=True,
    jvp=_eigh_jvp,
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("eigh"),
    sharding=SK.section("eigh", _matrix_parts("eigh")),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

svd_p = declare(
    "svd", lowering=LL.svd, typing=_svd_type, impl=_svd_impl, multiple_results=True, jvp=_svd_jvp,
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("svd"),
    sharding=SK.section("svd", _matrix_parts("svd")),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

__all__ = [
    "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p", "eigh", "eigh_p", "qr", "qr_p",
    "svd", "svd_p", "symmetrize", "triangular_solve", "triangular_solve_p", "tril", "triu",
]


# ------------------------------------------------------------ lax wrappers

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
