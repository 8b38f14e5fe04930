"""Tridiagonal linear systems: ``tridiagonal_solve``.

``tridiagonal_solve(dl, d, du, b)`` solves ``A x = b`` for each matrix of a
batch of tridiagonal matrices given by their diagonals, all ``[..., m]``:
``dl[i] = A[i, i-1]`` (``dl[0]`` unused), ``d[i] = A[i, i]``, ``du[i] = A[i,
i+1]`` (``du[m-1]`` unused); b is ``[..., m, k]``. Constraint numbering
(cited in error messages, see SPEC.md, section 9): C1 b has rank >= 2; C2
the three diagonals have one shape; C3 it is b's shape without its last
axis; C4 every dtype is float32, float64, complex64 or complex128.

The NumPy evaluation is LAPACK ``gtsv``'s algorithm, Gaussian elimination
with partial pivoting (rows i and i+1 swap when ``|A[i+1, i]| > |A[i, i]|``,
which fills a second superdiagonal), then back substitution, in float64
(complex128) vectorised over the batch and the right-hand sides, with the
loop over the rows; rounded once to b's dtype. A zero pivot (a singular
matrix) gives NaNs for that batch entry, as JAX's CPU lowering does when
gtsv's ``info`` is nonzero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of, from_primitive
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import Zero, add_tangents, instantiate, is_undefined_primal
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front, moveaxis
from spec._src.interpreters.spmd import Dist
from spec._src.lax import sharding_kit as SK
from spec._src.lax.linalg import _nan_where
from spec._src.lax.shaping import asarray, full_like, reshape
from spec._src.lax.slicing import concatenate
from spec._src.lowering import linalg as LL

_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)
_NAME = "tridiagonal_solve"


# ------------------------------------------------------------------- typing

def _tridiagonal_type(dl: ArrayType, d: ArrayType, du: ArrayType, b: ArrayType, *,
                      perturb_singular: bool) -> list[ArrayType]:
    require(b.ndim >= 2, _NAME, "C1",
            f"input 3 must have rank at least 2, but got shape={b.shape}")
    require(dl.shape == d.shape == du.shape, _NAME, "C2",
            "all diagonal arguments must have the same shape, got "
            f"{dl.shape}, {d.shape}, {du.shape}")
    require(tuple(d.shape) == tuple(b.shape[:-1]), _NAME, "C3",
            f"the leading ndim-1 dimensions of b {b.shape} must equal the dimensions of the "
            f"diagonal arguments {d.shape}")
    for i, a in enumerate((dl, d, du, b)):
        require(a.dtype in _LAPACK_TYPES, _NAME, "C4",
                f"does not accept dtype {a.dtype.name} at position {i}; accepted dtypes are "
                "subtypes of float32, float64, complex64, complex128")
    weak = all(a.weak_type for a in (dl, d, du, b))
    return [ArrayType(b.shape, b.dtype, weak)]


# --------------------------------------------------------------------- impl

def _eliminate(sub: np.ndarray, diag: np.ndarray, sup: np.ndarray, b: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """gtsv's forward sweep on flat batches (``[B, m]``, b ``[B, m, k]``):
    returns U's three diagonals (diag, sup, the fill ``sup2``) and the
    transformed right-hand sides, and which matrices met a zero pivot."""
    m = diag.shape[1]
    sup2 = np.zeros_like(diag)
    bad = np.zeros(diag.shape[0], bool)
    for i in range(m - 1):
        piv, low = diag[:, i], sub[:, i]
        keep = np.abs(piv) >= np.abs(low)
        bad |= keep & (piv == 0)
        fact = np.where(keep, low / np.where(piv == 0, 1, piv), piv / np.where(low == 0, 1, low))
        nxt, up = diag[:, i + 1].copy(), sup[:, i].copy()
        b_i, b_next = b[:, i].copy(), b[:, i + 1].copy()
        k = keep[:, None]
        # Without a swap row i+1 loses fact * row i; with one the rows trade places.
        diag[:, i] = np.where(keep, piv, low)
        diag[:, i + 1] = np.where(keep, nxt - fact * up, up - fact * nxt)
        sup[:, i] = np.where(keep, up, nxt)
        if i + 2 < m:
            up_next = sup[:, i + 1].copy()
            sup2[:, i] = np.where(keep, 0, up_next)
            sup[:, i + 1] = np.where(keep, up_next, -fact * up_next)
        b[:, i] = np.where(k, b_i, b_next)
        b[:, i + 1] = np.where(k, b_next - fact[:, None] * b_i, b_i - fact[:, None] * b_next)
    bad |= diag[:, m - 1] == 0
    return diag, sup, sup2, b, bad


def _back_substitute(diag: np.ndarray, sup: np.ndarray, sup2: np.ndarray, b: np.ndarray
                     ) -> np.ndarray:
    m = diag.shape[1]
    x = np.zeros_like(b)
    for i in range(m - 1, -1, -1):
        r = b[:, i]
        if i + 1 < m:
            r = r - sup[:, i, None] * x[:, i + 1]
        if i + 2 < m:
            r = r - sup2[:, i, None] * x[:, i + 2]
        x[:, i] = r / diag[:, i, None]
    return x


def _tridiagonal_impl(dl: np.ndarray, d: np.ndarray, du: np.ndarray, b: np.ndarray, *,
                      perturb_singular: bool) -> list[np.ndarray]:
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not "
                                  "implemented in spec")
    *batch, m, k = b.shape
    if m == 0 or k == 0:
        return [b.copy()]
    wide = np.complex128 if any(np.iscomplexobj(a) for a in (dl, d, du, b)) else np.float64
    n = math.prod(batch)

    def flat(a: np.ndarray) -> np.ndarray:
        return a.reshape(n, m).astype(wide)
    sub = np.concatenate([flat(dl)[:, 1:], np.zeros((n, 1), wide)], axis=1)
    with np.errstate(all="ignore"):
        diag, sup, sup2, rhs, bad = _eliminate(sub, flat(d), flat(du),
                                               b.reshape(n, m, k).astype(wide))
        x = _back_substitute(diag, sup, sup2, rhs)
    out = _nan_where(bad, x.astype(b.dtype)).reshape(b.shape)
    return [out]


# ----------------------------------------------------------------- autodiff

def _aval(x: Any) -> ArrayType:
    return canonical_aval_of(x)


def _tridiagonal_product(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """``A b`` from A's diagonals."""
    y = reshape(d, (*_aval(d).shape, 1)) * b
    y = y.at[..., 1:, :].add(dl[..., 1:, None] * b[..., :-1, :])
    return y.at[..., :-1, :].add(du[..., :-1, None] * b[..., 1:, :])


def _tridiagonal_jvp(primals: list[Any], tangents: list[Any], *, perturb_singular: bool
                     ) -> tuple[list[Any], list[Any]]:
    """d x = A^-1 (db - dA x): one more solve with the same diagonals."""
    *diags, _ = primals
    *diags_dot, b_dot = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    if all(type(t) is Zero for t in diags_dot):
        rhs = b_dot
    else:
        dl_dot, d_dot, du_dot = (instantiate(t) for t in diags_dot)
        matvec_dot = _tridiagonal_product(dl_dot, d_dot, du_dot, ans)
        rhs = add_tangents(b_dot, -matvec_dot)
    if type(rhs) is Zero:
        return [ans], [Zero(_aval(ans).tangent_type())]
    return [ans], [tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)]


def _tridiagonal_transpose(ct: Any, dl: Any, d: Any, du: Any, b: Any, *,
                           perturb_singular: bool) -> list[Any]:
    """Linear in b: its cotangent solves A^T, whose sub- and superdiagonals
    are A's super- and subdiagonals shifted by one."""
    if any(is_undefined_primal(x) for x in (dl, d, du)) or not is_undefined_primal(b):
        raise TypeError("tridiagonal_solve: can only be transposed with respect to b (it is "
                        "not linear in the diagonals)")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval.ct_type())]
    nd = _aval(du).ndim
    dl_t = concatenate((full_like(du[..., -1:], 0), du[..., :-1]), nd - 1)
    du_t = concatenate((dl[..., 1:], full_like(dl[..., :1], 0)), nd - 1)
    return [None, None, None, tridiagonal_solve(dl_t, d, du_t, ct,
                                                perturb_singular=perturb_singular)]


# ----------------------------------------------------------------- batching

def _tridiagonal_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                       perturb_singular: bool) -> tuple[list[Any], list[BatchDim]]:
    """As JAX: with only b batched, the batch axis joins b's right-hand
    sides (one solve); otherwise every batch axis goes to the front."""
    dl, d, du, b = args
    if all(x is None for x in dims[:3]):
        bb = dims[3]
        assert bb is not None
        b = moveaxis(b, bb, -2)
        s = _aval(b).shape
        flat = reshape(b, (*s[:-3], s[-3], s[-2] * s[-1]))
        out = tridiagonal_solve_p.bind(dl, d, du, flat, perturb_singular=perturb_singular)
        return [reshape(out, s)], [len(s) - 2]
    moved = [bdim_at_front(x, dim, axis.size, axis.explicit_mesh_axis)
             for x, dim in zip(args, dims)]
    return [tridiagonal_solve_p.bind(*moved, perturb_singular=perturb_singular)], [0]


# ----------------------------------------------------------------- sharding

def _tridiagonal_parts(mesh: AbstractMesh, dl: ArrayType, d: ArrayType, du: ArrayType,
                       b: ArrayType, *, perturb_singular: bool) -> list[SK.Parts]:
    """The solve runs along the diagonals' axis and b's rows: those whole;
    batch axes alike; b's right-hand-side axis passes through."""
    specs = [SK.parts(a) for a in (dl, d, du)]
    bp = SK.parts(b)
    if any(p[-1] is not None for p in specs) or bp[-2] is not None:
        raise ShardingTypeError("tridiagonal_solve must be unsharded along the system's "
                                f"rows, got {specs} and {bp}")
    batches = [p[:-1] for p in specs] + [bp[:-2]]
    if any(x != batches[0] for x in batches[1:]):
        raise ShardingTypeError(f"All inputs to tridiagonal_solve must have the same batch "
                                f"sharding, but got {batches}.")
    return [bp]


def _batch_split_only(args: list[Dist], out_avals: list[ArrayType], **params: Any) -> bool:
    """Each device holds whole systems: only the batch axes are split."""
    n_batch = args[3].aval.ndim - 2
    batch = tuple(S.parts_of(args[3].aval)[:n_batch])
    for aval in [*(a.aval for a in args), *out_avals]:
        parts = tuple(S.parts_of(aval))
        if parts[:n_batch] != batch or any(parts[n_batch:]) or S.unreduced_of(aval):
            return False
    return True


# ------------------------------------------------------------- declarations

tridiagonal_solve_p = declare(
    _NAME, lowering=LL.tridiagonal_solve, typing=_tridiagonal_type, impl=_tridiagonal_impl,
    jvp=_tridiagonal_jvp, transpose=_tridiagonal_transpose, batch=_tridiagonal_batch,
    sharding=SK.section(_NAME, _tridiagonal_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False
                      ) -> Any:
    """``x`` with ``A x = b``, A tridiagonal with diagonals dl, d, du."""
    return tridiagonal_solve_p.bind(asarray(dl), asarray(d), asarray(du), asarray(b),
                                    perturb_singular=perturb_singular)


__all__ = ["tridiagonal_solve", "tridiagonal_solve_p"]
