"""LU decomposition with partial pivoting: ``lu`` and ``lu_pivots_to_permutation``.

``lu(x)`` factors each matrix of a ``[..., m, n]`` batch as ``P x = L U`` and
returns ``(lu, pivots, permutation)``: ``lu`` holds L's strict lower triangle
(its unit diagonal is implied) and U's upper triangle; ``pivots[..., i]`` is
the row swapped with row ``i`` at step ``i`` (LAPACK's ``ipiv``, from 0);
``permutation`` is the same sequence of swaps applied to ``0 .. m-1``
(``x[permutation] == L @ U``). ``lu_pivots_to_permutation(pivots, m)`` turns
the swaps into the permutation. Constraint numbering (cited in error
messages, see SPEC.md, section 9):

- lu: C1 the operand has rank >= 2; C2 its dtype is float32, float64,
  complex64 or complex128.
- lu_pivots_to_permutation: C1 the operand has rank >= 1; C2 its dtype is
  int32; C3 ``permutation_size`` is at least the number of pivots.

The NumPy evaluation is an unblocked right-looking Doolittle elimination in
float64 (complex128), vectorised over the batch, with the loop over the
pivot columns only; each result is rounded once to the operand's dtype. The
pivot of a column is its first entry of largest magnitude (``|re| + |im|``
for complex entries, LAPACK's ``i?amax``); a NaN entry is never chosen
unless it is the column's first candidate, which LAPACK keeps. A zero (or
NaN) pivot leaves the column below it unscaled and the elimination goes on
(LAPACK reports the matrix singular in ``info``; the results are not
replaced by NaNs). On XLA's CPU backend
the factorisation is LAPACK's blocked ``getrf``, whose sums run in another
order: the two agree to rounding for matrices that are not ill-conditioned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import Zero, instantiate, zero_jvp
from spec._src.interpreters.batching import AxisData, BatchDim, batch_flat, bdim_at_front, \
    match_axis
from spec._src.interpreters.spmd import Dist
from spec._src.lax import sharding_kit as SK
from spec._src.lax.dot import Precision, dot
from spec._src.lax.linalg import (
    _batch_split_only,
    _eye,
    _leading_batch,
    _matrix_parts,
    triangular_solve,
    tril,
    triu,
)
from spec._src.lax.loops import fori_loop
from spec._src.lax.shaping import asarray, broadcasted_iota
from spec._src.lax.slicing import pad
from spec._src.lowering import linalg as LL
from spec._src.lowering.emitter import LoweringContext
from spec._src.lowering.transcendental import lower_fun

_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)


# ------------------------------------------------------------------- typing

def _lu_type(x: ArrayType) -> list[ArrayType]:
    require(x.ndim >= 2, "lu", "C1",
            f"input 0 must have rank at least 2, but got shape={x.shape}")
    require(x.dtype in _LAPACK_TYPES, "lu", "C2",
            f"does not accept dtype {x.dtype.name} at position 0; accepted dtypes are "
            "subtypes of float32, float64, complex64, complex128")
    *batch, m, n = x.shape
    w = x.weak_type
    return [ArrayType(x.shape, x.dtype, w), ArrayType((*batch, min(m, n)), T.int32, w),
            ArrayType((*batch, m), T.int32, w)]


def _pivots_type(pivots: ArrayType, *, permutation_size: int) -> list[ArrayType]:
    name = "lu_pivots_to_permutation"
    require(pivots.ndim >= 1, name, "C1",
            f"input 0 must have rank at least 1, but got shape={pivots.shape}")
    require(pivots.dtype == T.int32, name, "C2",
            f"does not accept dtype {pivots.dtype.name} at position 0; accepted dtypes are "
            "subtypes of int32")
    k = pivots.shape[-1]
    require(permutation_size >= k, name, "C3",
            f"output permutation size {permutation_size} has to exceed the trailing "
            f"dimension of the pivots. Got pivots size {k}", ValueError)
    return [ArrayType((*pivots.shape[:-1], permutation_size), T.int32, pivots.weak_type)]


# --------------------------------------------------------------------- impl

def _swap_permutation(swaps: np.ndarray, size: int) -> np.ndarray:
    """The swaps applied in order to ``0 .. size-1``, each batch entry at
    once. As the lowering's gathers and scatters: a negative index counts
    from the end, a read clamps into range and an out-of-range write is
    dropped."""
    batch = swaps.shape[:-1]
    flat = swaps.reshape(math.prod(batch), swaps.shape[-1]).astype(np.int64)
    rows = np.arange(flat.shape[0])
    perm = np.broadcast_to(np.arange(size, dtype=np.int32), (flat.shape[0], size)).copy()
    for i in range(flat.shape[1]):
        j = np.where(flat[:, i] < 0, flat[:, i] + size, flat[:, i])
        at_i = perm[:, i].copy()
        perm[:, i] = perm[rows, np.clip(j, 0, size - 1)]
        keep = (j >= 0) & (j < size)
        perm[rows[keep], j[keep]] = at_i[keep]
    return perm.reshape(*batch, size)


def _pivots_impl(pivots: np.ndarray, *, permutation_size: int) -> list[np.ndarray]:
    return [_swap_permutation(pivots, permutation_size)]


def _magnitude(col: np.ndarray) -> np.ndarray:
    """LAPACK's pivot magnitude: ``|x|``, or ``|re| + |im|`` for complex x."""
    if np.iscomplexobj(col):
        return np.abs(col.real) + np.abs(col.imag)
    return np.abs(col)


def _pivot_rows(col: np.ndarray) -> np.ndarray:
    """Per matrix, the offset in ``col`` (the candidates of one column) of
    its first entry of largest magnitude, NaNs losing every comparison."""
    mag = _magnitude(col)
    nan = np.isnan(mag)
    best = np.argmax(np.where(nan, -np.inf, mag), axis=-1)
    return np.where(nan[:, 0], 0, best)


def _lu_impl(x: np.ndarray) -> list[np.ndarray]:
    *batch, m, n = x.shape
    k = min(m, n)
    wide = np.complex128 if T.is_complex(x.dtype) else np.float64
    a: np.ndarray[Any, Any] = x.reshape(math.prod(batch), m, n).astype(wide)
    rows = np.arange(a.shape[0])
    pivots = np.zeros((a.shape[0], k), np.int32)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + _pivot_rows(a[:, j:, j])
            pivots[:, j] = p
            a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
            pivot = a[:, j, j]
            # A zero or NaN pivot scales nothing (the test LAPACK applies).
            nonzero = (pivot != 0) & ~np.isnan(pivot)
            below = a[:, j + 1:, j]
            a[:, j + 1:, j] = np.where(nonzero[:, None],
                                       below / np.where(nonzero, pivot, 1)[:, None], below)
            a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    pivots = pivots.reshape(*batch, k)
    return [a.reshape(x.shape).astype(x.dtype), pivots, _swap_permutation(pivots, m)]


# ----------------------------------------------------------------- autodiff

def _vmap(fn: Callable[..., Sequence[Any]], dims: Sequence[BatchDim]
          ) -> Callable[..., list[Any]]:
    """``fn`` mapped over one axis of its arguments (``dims``; None for an
    unmapped one), every result batched at 0: JAX's ``api.vmap`` of a rule's
    per-matrix helper."""
    def mapped(*args: Any) -> list[Any]:
        size = next(canonical_aval_of(a).shape[d] for a, d in zip(args, dims) if d is not None)
        axis = AxisData(size)
        outs, out_dims = batch_flat(lambda *xs: list(fn(*xs)), axis, args, dims)
        return [match_axis(axis, o, d, 0) for o, d in zip(outs, out_dims)]
    return mapped


def _lu_jvp_matrix(lu: Any, a_dot: Any, permutation: Any) -> list[Any]:
    """One matrix's tangent (De Hoog, Anderssen and Lukas): with L, U the
    factors padded to square, X = L^-1 P dA U^-1 gives dL = L tril(X, -1)
    and dU = triu(X) U, stored together as the tangent of ``lu``."""
    m, n = canonical_aval_of(a_dot).shape
    dtype = canonical_aval_of(a_dot).dtype
    k = min(m, n)
    zero = np.zeros((), dtype)
    l = pad(tril(lu[:, :k], -1), zero, [(0, 0, 0), (0, m - k, 0)]) + _eye(dtype, m, m)
    u_eye = pad(_eye(dtype, n - k, n - k), zero, [(k, 0, 0), (k, 0, 0)])
    u = pad(triu(lu[:k, :]), zero, [(0, n - k, 0), (0, 0, 0)]) + u_eye
    la = triangular_solve(l, a_dot[permutation], left_side=True, transpose_a=False,
                          lower=True, unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
    # ``@`` under the highest matmul precision, as JAX's rule writes it.
    l_dot = dot(l, tril(lau, -1), precision=Precision.HIGHEST, preferred_element_type=dtype)
    u_dot = dot(triu(lau), u, precision=Precision.HIGHEST, preferred_element_type=dtype)
    return [l_dot + u_dot]


def _lu_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    (a,), (a_dot,) = primals, tangents
    a_dot = instantiate(a_dot)
    lu, pivots, permutation = lu_p.bind(a)
    fn: Callable[..., Sequence[Any]] = _lu_jvp_matrix
    for _ in canonical_aval_of(a).shape[:-2]:
        fn = _vmap(fn, (0, 0, 0))
    (lu_dot,) = fn(lu, a_dot, permutation)
    return ([lu, pivots, permutation],
            [lu_dot, Zero(canonical_aval_of(pivots).tangent_type()),
             Zero(canonical_aval_of(permutation).tangent_type())])


# ----------------------------------------------------------------- batching

def _pivots_batch(axis: AxisData, args: list[Any], dims: list[BatchDim],
                  *, permutation_size: int) -> tuple[list[Any], list[BatchDim]]:
    (pivots,), (d,) = args, dims
    moved = bdim_at_front(pivots, d, axis.size, axis.explicit_mesh_axis)
    return [lu_pivots_to_permutation_p.bind(moved, permutation_size=permutation_size)], [0]


# ----------------------------------------------------------------- sharding

def _pivots_parts(mesh: AbstractMesh, pivots: ArrayType, *, permutation_size: int
                  ) -> list[SK.Parts]:
    """The swaps of one matrix are read in order: their axis must be whole."""
    ps = SK.parts(pivots)
    if ps[-1] is not None:
        raise ShardingTypeError("The last dim of swaps should be unsharded but got: "
                                f"{ps[-1]} for type {pivots}")
    return [ps[:-1] + (None,)]


def _vector_split_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Each device holds whole pivot vectors: only batch axes are split."""
    n_batch = args[0].aval.ndim - 1
    batch = tuple(S.parts_of(args[0].aval)[:n_batch])
    for aval in [args[0].aval, *out_avals]:
        parts = tuple(S.parts_of(aval))
        if parts[:n_batch] != batch or any(parts[n_batch:]) or S.unreduced_of(aval):
            return False
    return True


# ----------------------------------------------------------------- lowering

def _generic_pivots_to_permutation(swaps: Any, *, permutation_size: int) -> Any:
    """JAX's lowering of the swaps: a loop over them, each step exchanging
    two entries of the permutation, mapped over the batch axes."""
    aval = canonical_aval_of(swaps)
    batch, k = aval.shape[:-1], aval.shape[-1]
    m = permutation_size
    permutation = broadcasted_iota(np.int32, (*batch, m), len(batch))
    if m == 0 or k == 0:
        return permutation

    def swap(i: Any, perm: Any, sw: Any) -> list[Any]:
        j = sw[i]
        x, y = perm[i], perm[j]
        return [perm.at[i].set(y).at[j].set(x)]

    step: Callable[..., Sequence[Any]] = swap
    for _ in batch:
        step = _vmap(step, (None, 0, 0))

    def body(i: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
        perm, sw = carry
        (perm,) = step(i, perm, sw)
        return perm, sw

    result, _ = fori_loop(np.array(0, np.int32), np.array(k, np.int32), body,
                          (permutation, swaps))
    return result


_pivots_lowering = lower_fun(_generic_pivots_to_permutation)


def _lu_lowering(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                 out_avals: Sequence[ArrayType]) -> list[str]:
    """``getrf`` (LU and 0-based pivots), then the permutation from the
    pivots as ``lu_pivots_to_permutation`` is lowered."""
    lu, pivots = LL.lu(ctx, operands, in_avals, out_avals)
    m = in_avals[0].shape[-2]
    (perm,) = lower_fun(lu_pivots_to_permutation)(ctx, [pivots], [out_avals[1]],
                                                   [out_avals[2]], permutation_size=m)
    return [lu, pivots, perm]


# ------------------------------------------------------------- declarations

lu_p = declare(
    "lu", lowering=_lu_lowering, typing=_lu_type, impl=_lu_impl, multiple_results=True,
    jvp=_lu_jvp, transpose=not_applicable("a matrix decomposition is not linear"),
    batch=_leading_batch("lu"), sharding=SK.section("lu", _matrix_parts("lu")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

lu_pivots_to_permutation_p = declare(
    "lu_pivots_to_permutation", lowering=_pivots_lowering, typing=_pivots_type,
    impl=_pivots_impl, jvp=zero_jvp(),
    transpose=not_applicable("an integer permutation is not linear"), batch=_pivots_batch,
    sharding=SK.section("lu_pivots_to_permutation", _pivots_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _vector_split_only, PD.local(p))))


# ------------------------------------------------------------ lax wrappers

def lu(x: Any) -> tuple[Any, Any, Any]:
    """``(lu, pivots, permutation)`` with ``x[..., permutation, :] = L U``."""
    out, pivots, perm = lu_p.bind(asarray(x))
    return out, pivots, perm


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The row swaps ``pivots`` (of shape ``[..., k]``) applied in order to
    ``0 .. permutation_size-1``."""
    return lu_pivots_to_permutation_p.bind(asarray(pivots),
                                           permutation_size=permutation_size)


__all__ = ["lu", "lu_p", "lu_pivots_to_permutation", "lu_pivots_to_permutation_p"]

