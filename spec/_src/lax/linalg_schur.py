"""The Hessenberg reduction and the Schur decomposition: ``hessenberg``, ``schur``.

``hessenberg(a)`` returns ``(a_out, taus)``: the upper Hessenberg matrix
``H = Q^H a Q`` in ``a_out``'s upper triangle and first subdiagonal, and
below it the Householder reflectors whose product (with ``taus``, ``[...,
n-1]``) is ``Q = H_0 ... H_{n-2}``, ``H_j = I - taus[j] v_j v_j^H``, ``v_j``
zero above row j+1, one at row j+1 and ``a_out[j+2:, j]`` below (LAPACK
``gehrd``'s output, as XLA's CPU backend returns it). Constraint numbering
(cited in error messages, see SPEC.md, section 9): C1 rank >= 2; C2 the
matrix is square; C3 the dtype is float32, float64, complex64 or complex128;
C4 (hessenberg only) ``n >= 1``.

``schur(x)`` returns ``T`` and, with ``compute_schur_vectors``, ``Q``:
``x = Q T Q^H`` with Q unitary and T upper triangular (complex dtypes) or
quasi upper triangular (real dtypes: 1x1 blocks for real eigenvalues, 2x2
blocks ``[[a, b], [c, a]]`` with ``b c < 0`` for complex pairs, LAPACK
``dlanv2``'s standard form).

The NumPy evaluation, in float64 (complex128) vectorised over the batch and
rounded once: ``hessenberg`` is ``gehd2``'s column loop with ``larfg``'s
reflectors (so the reflectors and taus are LAPACK's up to rounding).
``schur`` reduces to Hessenberg form, then follows LAPACK's small-matrix QR
iteration (dlahqr for real dtypes, zlahqr for complex ones) on each
matrix's active window ``[l, i]``, every matrix of the batch at its own
window and step: deflation by Ahues and Tisseur's test, the sweep started
below the window's top where two consecutive subdiagonal entries are small,
Francis double-shift sweeps (real) or single-shift sweeps with Wilkinson's
shift (complex), exceptional shifts every 10 sweeps without deflation, a
real trailing 2x2 block put in dlanv2's standard form. The tests for
negligible entries use the precision of the operand's dtype (LAPACK's
working precision), so the convergence, and with it the order of the
eigenvalues along T's diagonal, is gees's in the cases tested. A matrix that
has not converged after ``30 max(10, n)`` sweeps for one block, or that has
a non-finite entry, gives NaNs (as LAPACK's ``info != 0`` does through JAX's
lowering). The Schur form is not unique; SPEC.md says which parts of gees's
spec reproduces.

``tridiagonal(a, lower)`` returns ``(arr, d, e, taus)``: the Householder
reduction of a Hermitian matrix, read from its lower (or upper) triangle, to
the real tridiagonal ``T = Q^H a Q`` (LAPACK ``sytrd``/``hetrd``): d its
diagonal, e its sub- (super-) diagonal, and in arr, beside them, the
reflectors (below the subdiagonal, or above the superdiagonal) while the
other triangle keeps the operand's entries. Lower: ``Q = H_0 ... H_{n-2}``
with ``v_j`` as hessenberg's; upper: ``Q = H_{n-2} ... H_0``, ``v_j`` zero
below row j, one at row j and ``arr[:j, j+1]`` above. C5 (tridiagonal)
``n >= 1``. The evaluation is ``gehd2``'s loop above on the Hermitian
matrix the triangle defines (its diagonal's real part), which is
``sytd2``'s reduction; the upper triangle is reduced as the lower triangle
of the matrix with its rows and columns reversed (the same reflectors, in
reverse order).
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
from spec._src.lax import sharding_kit as SK
from spec._src.lax.linalg import _batch_split_only, _leading_batch, _matrix_parts, _nan_where
from spec._src.lax.shaping import asarray
from spec._src.lowering import linalg as LL

_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)
_ACCEPTED = "float32, complex128, complex64, float64"


def _check_square(name: str, x: ArrayType, message: str) -> None:
    require(x.ndim >= 2, name, "C1",
            f"Input 0 to {name} must have rank at least 2, but got shape={x.shape}")
    require(x.shape[-1] == x.shape[-2], name, "C2", message, ValueError)
    require(x.dtype in _LAPACK_TYPES, name, "C3",
            f"{name} does not accept dtype {x.dtype.name} at position 0. Accepted dtypes at "
            f"position 0 are subtypes of {_ACCEPTED}.")


# ------------------------------------------------------------------- typing

def _hessenberg_type(a: ArrayType) -> list[ArrayType]:
    _check_square("hessenberg", a, "Argument to Hessenberg reduction must have shape "
                  f"[..., n, n], got shape {a.shape[-2:]}")
    require(a.shape[-1] >= 1, "hessenberg", "C4",
            f"hessenberg needs n >= 1 (taus has n - 1 entries), got shape {a.shape}",
            ValueError)
    return [a, ArrayType((*a.shape[:-2], a.shape[-1] - 1), a.dtype, a.weak_type)]


def _tridiagonal_type(a: ArrayType, *, lower: bool) -> list[ArrayType]:
    name = "tridiagonal"
    require(a.ndim >= 2, name, "C1",
            f"Input 0 to {name} must have rank at least 2, but got shape={a.shape}")
    require(a.shape[-1] == a.shape[-2] and a.shape[-1] >= 1, name, "C5",
            f"The input to tridiagonal must be a square matrix. Got shape {a.shape[-2:]}.",
            ValueError)
    _check_square(name, a, "")
    *batch, n, _ = a.shape
    real = T.float64 if a.dtype in (T.float64, T.complex128) else T.float32
    w = a.weak_type
    return [a, ArrayType((*batch, n), real, w), ArrayType((*batch, n - 1), real, w),
            ArrayType((*batch, n - 1), a.dtype, w)]


def _schur_type(x: ArrayType, *, compute_schur_vectors: bool, sort_eig_vals: bool,
                select_callable: Any) -> list[ArrayType]:
    _check_square("schur", x, "The input to schur must be a square matrix. Got shape "
                  f"{x.shape[-2:]}.")
    return [x, x] if compute_schur_vectors else [x]


# ------------------------------------------------------- the Hessenberg form

def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _larfg(alpha: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK's ``larfg`` on a batch: ``(beta, tau, v)`` with ``H^H [alpha;
    x] = [beta; 0]``, ``H = I - tau [1; v] [1; v]^H`` and beta real; tau = 0
    (H = I) where x is zero and alpha real."""
    xnorm = np.linalg.norm(x, axis=-1)
    alpha_i = alpha.imag if np.iscomplexobj(alpha) else np.zeros_like(alpha)
    trivial = (xnorm == 0) & (alpha_i == 0)
    size = np.sqrt(np.abs(alpha) ** 2 + xnorm ** 2)
    beta = np.where(alpha.real >= 0, -size, size)
    safe_beta = np.where(trivial, 1, beta)
    tau = np.where(trivial, 0, (beta - alpha) / safe_beta)
    scale = np.where(trivial, 0, 1 / np.where(trivial, 1, alpha - beta))
    return np.where(trivial, alpha, beta), tau, x * scale[:, None]


def _reduce(a: np.ndarray, with_q: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``gehd2`` on a flat batch ``[B, n, n]`` (wide dtype): the overwritten
    matrix, the taus and, asked for, ``Q``."""
    b, n, _ = a.shape
    a = a.copy()
    taus = np.zeros((b, max(n - 1, 0)), a.dtype)
    q = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape).copy() if with_q else None
    for j in range(n - 1):
        beta, tau, v = _larfg(a[:, j + 1, j], a[:, j + 2:, j])
        u = np.zeros((b, n), a.dtype)
        u[:, j + 1] = 1
        u[:, j + 2:] = v
        # A H (all rows, the columns the reflector touches), then H^H A.
        au = np.einsum("brn,bn->br", a[:, :, j + 1:], u[:, j + 1:])
        a[:, :, j + 1:] -= tau[:, None, None] * au[:, :, None] * np.conj(u[:, None, j + 1:])
        ua = np.einsum("bn,bnc->bc", np.conj(u[:, j + 1:]), a[:, j + 1:, j + 1:])
        a[:, j + 1:, j + 1:] -= (np.conj(tau)[:, None, None] * u[:, j + 1:, None]
                                 * ua[:, None, :])
        a[:, j + 1, j] = beta
        a[:, j + 2:, j] = v
        taus[:, j] = tau
        if q is not None:
            qu = np.einsum("brn,bn->br", q, u)
            q -= tau[:, None, None] * qu[:, :, None] * np.conj(u[:, None, :])
    return a, taus, q


def _hessenberg_impl(a: np.ndarray) -> list[np.ndarray]:
    *batch, n, _ = a.shape
    flat = _wide(a.reshape(math.prod(batch), n, n))
    bad = ~np.isfinite(flat).all(axis=(-2, -1))
    out, taus, _ = _reduce(np.where(bad[:, None, None], 0, flat), with_q=False)
    return [_nan_where(bad, out.astype(a.dtype)).reshape(a.shape),
            _nan_where(bad, taus.astype(a.dtype)).reshape(*batch, n - 1)]


def _tridiagonal_impl(a: np.ndarray, *, lower: bool) -> list[np.ndarray]:
    *batch, n, _ = a.shape
    flat = _wide(a.reshape(math.prod(batch), n, n))
    if not lower:
        flat = flat[:, ::-1, ::-1]
    strict = np.tril(flat, -1)
    diag = np.diagonal(flat, axis1=1, axis2=2).real
    hermitian = strict + np.conj(np.swapaxes(strict, 1, 2)) + diag[:, :, None] * np.eye(n)
    with np.errstate(all="ignore"):
        out, taus, _ = _reduce(hermitian, with_q=False)
    d = np.diagonal(out, axis1=1, axis2=2).real
    e = np.diagonal(out, offset=-1, axis1=1, axis2=2).real
    arr = np.triu(flat, 1) + np.tril(out, -2) + d[:, :, None] * np.eye(n)
    arr += np.eye(n, k=-1) * np.pad(e, ((0, 0), (0, 1)))[:, None, :]
    if not lower:
        arr, d, e, taus = arr[:, ::-1, ::-1], d[:, ::-1], e[:, ::-1], taus[:, ::-1]
    real = np.float64 if a.dtype in (np.float64, np.complex128) else np.float32
    return [arr.astype(a.dtype).reshape(a.shape), d.astype(real).reshape(*batch, n),
            e.astype(real).reshape(*batch, n - 1), taus.astype(a.dtype).reshape(*batch, n - 1)]


# ---------------------------------------------------------- the QR iteration

def _mix_rows(m: np.ndarray, start: np.ndarray, g: np.ndarray) -> None:
    """``m[b, start_b + r, :] = g_b @ m[b, start_b + r, :]`` for r < len(g_b),
    each matrix of the batch at its own row offset (m may be a transposed
    view: then this mixes its columns)."""
    rows = start[:, None] + np.arange(g.shape[-1])
    picked = np.arange(m.shape[0])[:, None]
    m[picked, rows, :] = np.einsum("bij,bjn->bin", g, m[picked, rows, :])


def _transform(h: np.ndarray, z: np.ndarray, start: np.ndarray, g: np.ndarray) -> None:
    """The similarity ``H <- G^H H G`` and ``Z <- Z G`` with the unitary g
    acting on indices ``start_b, start_b + 1, ...``."""
    gh = np.conj(np.swapaxes(g, -1, -2))
    gt = np.swapaxes(g, -1, -2)
    _mix_rows(h, start, gh)
    _mix_rows(np.swapaxes(h, 1, 2), start, gt)
    _mix_rows(np.swapaxes(z, 1, 2), start, gt)


def _reflector(x: np.ndarray, active: np.ndarray) -> np.ndarray:
    """The 3x3 Householder matrices ``P`` (Hermitian, unitary) taking each x
    to a multiple of e1; the identity where not active or x is already one."""
    norm = np.linalg.norm(x, axis=-1)
    x0 = x[:, 0]
    phase = np.where(x0 == 0, 1, x0 / np.where(x0 == 0, 1, np.abs(x0)))
    v = x.copy()
    v[:, 0] = x0 + phase * norm
    vv = np.sum(np.abs(v) ** 2, axis=-1)
    use = active & (np.abs(x[:, 1]) + np.abs(x[:, 2]) > 0) & (vv > 0)
    s = np.where(use, 2 / np.where(use, vv, 1), 0)
    eye = np.eye(3, dtype=x.dtype)
    p: np.ndarray = eye - s[:, None, None] * v[:, :, None] * np.conj(v[:, None, :])
    return p


def _shifts(h: np.ndarray, l: np.ndarray, i: np.ndarray, its: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The shift polynomial's ``(trace, det)`` (real dtypes: ``(H - s1)(H -
    s2)``) or ``(s, 0)`` (complex dtypes: ``H - s``), from the window's
    trailing 2x2 block as dlahqr and zlahqr choose: real dtypes its two
    eigenvalues, or twice the one nearer ``h[i, i]`` when both are real;
    complex dtypes the one nearer ``h[i, i]`` (Wilkinson's shift). Every 10
    sweeps without deflation the shift is an exceptional one."""
    b = np.arange(h.shape[0])
    a11, a12, a21, a22 = h[b, i - 1, i - 1], h[b, i - 1, i], h[b, i, i - 1], h[b, i, i]
    half = 0.5 * (a11 - a22)
    disc = half * half + a12 * a21
    root = np.sqrt(disc if np.iscomplexobj(h) else np.maximum(disc, 0))
    root = np.where((np.conj(half) * root).real >= 0, root, -root)
    # a22 - a12 a21 / (half + root): the eigenvalue nearer a22, without cancellation.
    den = half + root
    near = np.where(den == 0, a22 + half - root, a22 - a12 * a21 / np.where(den == 0, 1, den))
    w = np.abs(h[b, i, i - 1]) + np.abs(h[b, i - 1, np.maximum(i - 2, 0)])
    exceptional = (its > 0) & (its % 10 == 0)
    e = 0.75 * w + a22
    if np.iscomplexobj(h):
        return np.where(exceptional, e, near), np.zeros_like(near)
    trace = np.where(disc >= 0, 2 * near, a11 + a22)
    det = np.where(disc >= 0, near * near, a11 * a22 - a12 * a21)
    return (np.where(exceptional, 2 * e, trace),
            np.where(exceptional, e * e + 0.4375 * w * w, det))


def _first_column(h: np.ndarray, m: np.ndarray, trace: np.ndarray, det: np.ndarray
                  ) -> np.ndarray:
    """The first column of the shift polynomial of H at row m (zero below
    row m + 2, or m + 1 for a single shift)."""
    b = np.arange(h.shape[0])
    h00, h01, h10 = h[b, m, m], h[b, m, m + 1], h[b, m + 1, m]
    h11, h21 = h[b, m + 1, m + 1], h[b, m + 2, m + 1]
    if np.iscomplexobj(h):
        return np.stack([h00 - trace, h10, np.zeros_like(h10)], axis=-1)
    return np.stack([h00 * h00 + h01 * h10 - trace * h00 + det,
                     h10 * (h00 + h11 - trace), h10 * h21], axis=-1)


def _sweep_start(h: np.ndarray, l: np.ndarray, i: np.ndarray, trace: np.ndarray,
                 det: np.ndarray, eps: float) -> np.ndarray:
    """Each window's sweep start m (dlahqr's and zlahqr's search): the last
    row ``m > l`` whose subdiagonal entry is negligible against the shift
    polynomial's first column there, so that the sweep may start below the
    window's top; l if there is none. Every candidate row at once."""
    ms = np.arange(1, h.shape[1] - 2)
    d0, d1, above = h[:, ms, ms], h[:, ms + 1, ms + 1], h[:, ms - 1, ms - 1]
    h01, h10, h21 = h[:, ms, ms + 1], h[:, ms + 1, ms], h[:, ms + 2, ms + 1]
    tr, de = trace[:, None], det[:, None]
    if np.iscomplexobj(h):
        v0, v12 = d0 - tr, np.abs(h10)
        diag = _magnitude(d0) + _magnitude(d1)
        last = i - 1
    else:
        v0 = d0 * d0 + h01 * h10 - tr * d0 + de
        v12 = np.abs(h10 * (d0 + d1 - tr)) + np.abs(h10 * h21)
        diag = np.abs(above) + np.abs(d0) + np.abs(d1)  # dlahqr also counts the entry above
        last = i - 2
    small = np.abs(h[:, ms, ms - 1]) * v12 <= eps * _magnitude(v0) * diag
    ok = small & (ms > l[:, None]) & (ms <= last[:, None])
    return np.where(ok.any(axis=1), np.where(ok, ms, -1).max(axis=1, initial=-1), l)


def _sweep(h: np.ndarray, z: np.ndarray, l: np.ndarray, i: np.ndarray, its: np.ndarray,
           sweeping: np.ndarray, eps: float) -> None:
    """One implicit QR sweep (bulge chase) on each sweeping matrix's window
    ``[l, i]``, from its start row on; the others are left alone."""
    b = np.arange(h.shape[0])
    trace, det = _shifts(h, l, i, its)
    m = np.where(sweeping, _sweep_start(h, l, i, trace, det, eps), l)
    x = _first_column(h, m, trace, det)
    single = np.iscomplexobj(h)
    for step in range(h.shape[1] - 2):
        k = m + step
        active = sweeping & (k <= i - 1)
        if not active.any():
            return
        kk = np.where(active, k, 0)
        if step > 0:
            x = np.stack([h[b, kk, kk - 1], h[b, kk + 1, kk - 1], h[b, kk + 2, kk - 1]], -1)
        # The last step of a window is a 2-vector (row i+1 lies outside it), and
        # every step of a single-shift (complex) sweep is.
        x[:, 2] = np.where((kk + 2 <= i) & (not single), x[:, 2], 0)
        _transform(h, z, kk, _reflector(x, active))
        # What the reflector leaves below the subdiagonal in column k-1 is zero (the
        # bulge chased on; at a start below the window's top, the negligible coupling).
        done = (active & (kk >= 1)).nonzero()[0]
        h[done, kk[done] + 1, kk[done] - 1] = 0
        h[done, kk[done] + 2, kk[done] - 1] = 0


def _sign(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, 1.0, -1.0)


def _standard_rotation(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
                       eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``dlanv2``'s rotation ``(cs, sn)`` for real 2x2 blocks [[a, b], [c,
    d]], and whether the rotated block is triangular (real eigenvalues)."""
    temp = a - d
    p = 0.5 * temp
    bcmax = np.maximum(np.abs(b), np.abs(c))
    bcmis = np.minimum(np.abs(b), np.abs(c)) * _sign(b) * _sign(c)
    scale = np.maximum(np.abs(p), bcmax)
    safe = np.where(scale == 0, 1, scale)
    zz = p / safe * p + bcmax / safe * bcmis
    real_pair = zz >= 4 * eps
    # Real eigenvalues: the rotation to the eigenvector of d + z.
    z = p + _sign(p) * np.sqrt(scale) * np.sqrt(np.maximum(zz, 0))
    tau = np.hypot(c, z)
    tau = np.where(tau == 0, 1, tau)
    cs_r, sn_r = z / tau, c / tau
    # Otherwise: the rotation making the diagonal equal.
    sigma = b + c
    tau2 = np.hypot(sigma, temp)
    tau2 = np.where(tau2 == 0, 1, tau2)
    cs_c = np.sqrt(0.5 * (1 + np.abs(sigma) / tau2))
    sn_c = -(p / (tau2 * cs_c)) * _sign(sigma)
    aa, bb = a * cs_c + b * sn_c, -a * sn_c + b * cs_c
    cc, dd = c * cs_c + d * sn_c, -c * sn_c + d * cs_c
    b2, c2 = bb * cs_c + dd * sn_c, -aa * sn_c + cc * cs_c
    # After it, nearly equal real eigenvalues (b2 c2 > 0) get a second rotation to the
    # triangular form, and b2 = 0 a swap.
    split = (c2 != 0) & (b2 != 0) & (_sign(b2) == _sign(c2))
    sab, sac = np.sqrt(np.abs(b2)), np.sqrt(np.abs(c2))
    inv = 1 / np.sqrt(np.where(split, np.abs(b2 + c2), 1))
    cs1, sn1 = sab * inv, sac * inv
    cs_s, sn_s = cs_c * cs1 - sn_c * sn1, cs_c * sn1 + sn_c * cs1
    swap = (c2 != 0) & (b2 == 0)
    cs_c2 = np.where(split, cs_s, np.where(swap, -sn_c, cs_c))
    sn_c2 = np.where(split, sn_s, np.where(swap, cs_c, sn_c))
    tri_c = split | swap | (c2 == 0)
    standard = (temp == 0) & (_sign(b) != _sign(c))
    cs = np.select([c == 0, b == 0, standard, real_pair], [1.0, 0.0, 1.0, cs_r], cs_c2)
    sn = np.select([c == 0, b == 0, standard, real_pair], [0.0, 1.0, 0.0, sn_r], sn_c2)
    triangular = np.select([c == 0, b == 0, standard, real_pair], [True, True, False, True],
                           tri_c)
    return cs, sn, triangular


def _split_block(h: np.ndarray, z: np.ndarray, i: np.ndarray, ending: np.ndarray,
                 eps: float) -> None:
    """dlanv2's final form of the trailing 2x2 block ``[i-1, i]`` of each
    ending (real) matrix."""
    b = np.arange(h.shape[0])
    p = np.where(ending, i - 1, 0)
    a, bb, c, d = h[b, p, p], h[b, p, p + 1], h[b, p + 1, p], h[b, p + 1, p + 1]
    v0, v1, triangular = _standard_rotation(a, bb, c, d, eps)
    v0, v1 = np.where(ending, v0, 1), np.where(ending, v1, 0)
    g = np.stack([np.stack([v0, -v1], -1), np.stack([v1, v0], -1)], -2)
    _transform(h, z, p, g)
    e = ending.nonzero()[0]
    tri, pair = e[triangular[e]], e[~triangular[e]]
    h[tri, p[tri] + 1, p[tri]] = 0
    mean = 0.5 * (h[pair, p[pair], p[pair]] + h[pair, p[pair] + 1, p[pair] + 1])
    h[pair, p[pair], p[pair]] = mean
    h[pair, p[pair] + 1, p[pair] + 1] = mean


def _magnitude(x: np.ndarray) -> np.ndarray:
    """LAPACK's size of an entry: ``|x|``, or ``|Re x| + |Im x|`` (cabs1) for complex."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _deflation_points(h: np.ndarray, i: np.ndarray, unit: np.finfo) -> np.ndarray:
    """Each matrix's window top: the last row ``l <= i`` whose subdiagonal
    entry is negligible (0 if none), by dlahqr's and zlahqr's test (Ahues and
    Tisseur's): below ``safmin n / eps``, or at most ``eps`` times its
    diagonal neighbours and small against them in the 2x2 block's terms."""
    n = h.shape[1] - 1
    eps = float(unit.eps)
    tiny = float(unit.tiny) * (n / eps)
    d = np.diagonal(h, axis1=1, axis2=2)[:, :n]
    sub = _magnitude(np.diagonal(h, offset=-1, axis1=1, axis2=2)[:, :n - 1])
    sup = _magnitude(np.diagonal(h, offset=1, axis1=1, axis2=2)[:, :n - 1])
    above, below = _magnitude(d[:, :-1]), _magnitude(d[:, 1:])
    tst = above + below
    # A zero diagonal pair falls back on the neighbouring subdiagonal entries.
    sub_pad = np.pad(sub, ((0, 0), (1, 1)))
    tst = np.where(tst == 0, tst + sub_pad[:, :-2] + sub_pad[:, 2:], tst)
    ab, ba = np.maximum(sub, sup), np.minimum(sub, sup)
    gap = _magnitude(d[:, :-1] - d[:, 1:])
    aa, bb = np.maximum(below, gap), np.minimum(below, gap)
    total = np.where(aa + ab == 0, 1, aa + ab)
    refined = ba * (ab / total) <= np.maximum(tiny, eps * (bb * (aa / total)))
    small = (sub <= tiny) | ((sub <= eps * tst) & refined)
    rows = np.arange(1, n)
    return np.where(small & (rows <= i[:, None]), rows, 0).max(axis=1, initial=0)


def _schur_flat(x: np.ndarray, unit: np.finfo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """T, Q and which matrices failed, for a flat wide batch ``[B, n, n]``; the
    tests for negligible entries at the precision ``unit`` of the operand's
    dtype (LAPACK's working precision)."""
    bsz, n, _ = x.shape
    bad = ~np.isfinite(x).all(axis=(-2, -1))
    reduced, _, q = _reduce(np.where(bad[:, None, None], 0, x), with_q=True)
    assert q is not None
    # One zero row and column of padding: a reflector's third row may lie past the end.
    h = np.zeros((bsz, n + 1, n + 1), x.dtype)
    h[:, :n, :n] = np.triu(reduced, -1)
    z = np.zeros((bsz, n, n + 1), x.dtype)
    z[:, :, :n] = q
    i = np.where(bad, -1, n - 1)
    its = np.zeros(bsz, np.int64)
    itmax = 30 * max(10, n)
    b = np.arange(bsz)
    while (i >= 0).any():
        l = _deflation_points(h, np.maximum(i, 0), unit)
        live = i >= 0
        top = live & (l > 0)
        h[b[top], l[top], l[top] - 1] = 0
        # A complex window iterates down to 1x1 blocks (zlahqr); a real one ends
        # at a 2x2 block put in standard form (dlahqr).
        one = live & (l == i)
        two = live & (l == i - 1) & (not np.iscomplexobj(x))
        sweeping = live & ~one & ~two
        if two.any():
            _split_block(h, z, i, two, float(unit.eps))
        its = np.where(one | two, 0, its + sweeping)
        stuck = sweeping & (its > itmax)
        bad |= stuck
        sweeping &= ~stuck
        if sweeping.any():
            _sweep(h, z, np.where(sweeping, l, 0), np.where(sweeping, i, 2), its, sweeping,
                   float(unit.eps))
        i = np.where(stuck, -1, i - one - 2 * two)
    t = np.triu(h[:, :n, :n], 0 if np.iscomplexobj(x) else -1)
    return t, z[:, :, :n], bad


def _schur_impl(x: np.ndarray, *, compute_schur_vectors: bool, sort_eig_vals: bool,
                select_callable: Any) -> list[np.ndarray]:
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    *batch, n, _ = x.shape
    if n == 0:
        return [x.copy(), x.copy()][:1 + compute_schur_vectors]
    unit = np.finfo(np.float64 if x.dtype in (np.float64, np.complex128) else np.float32)
    t, q, bad = _schur_flat(_wide(x.reshape(math.prod(batch), n, n)), unit)
    outs = [_nan_where(bad, t.astype(x.dtype)).reshape(x.shape)]
    if compute_schur_vectors:
        outs.append(_nan_where(bad, q.astype(x.dtype)).reshape(x.shape))
    return outs


# ------------------------------------------------------------- declarations

_NONLINEAR = "a matrix decomposition is not linear"

hessenberg_p = declare(
    "hessenberg", lowering=LL.hessenberg, typing=_hessenberg_type, impl=_hessenberg_impl,
    multiple_results=True,
    jvp=not_applicable("JAX defines no derivative rule for hessenberg"),
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("hessenberg"),
    sharding=SK.section("hessenberg", _matrix_parts("hessenberg")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

tridiagonal_p = declare(
    "tridiagonal", lowering=LL.tridiagonal, typing=_tridiagonal_type, impl=_tridiagonal_impl,
    multiple_results=True,
    jvp=not_applicable("JAX defines no derivative rule for tridiagonal"),
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("tridiagonal"),
    sharding=SK.section("tridiagonal", _matrix_parts("tridiagonal")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))

schur_p = declare(
    "schur", lowering=LL.schur, typing=_schur_type, impl=_schur_impl, multiple_results=True,
    jvp=not_applicable("JAX defines no derivative rule for schur"),
    transpose=not_applicable(_NONLINEAR), batch=_leading_batch("schur"),
    sharding=SK.section("schur", _matrix_parts("schur")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))


def hessenberg(a: Any) -> list[Any]:
    """``[a_out, taus]``: the upper Hessenberg form of a square matrix and the
    Householder reflectors below it (LAPACK's gehrd)."""
    return list(hessenberg_p.bind(asarray(a)))


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """``(arr, d, e, taus)``: the tridiagonal form of a Hermitian matrix read
    from one triangle, and its Householder reflectors (LAPACK's sytrd)."""
    arr, d, e, taus = tridiagonal_p.bind(asarray(a), lower=lower)
    return arr, d, e, taus


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> list[Any]:
    """``[T, Q]`` with ``x = Q T Q^H`` (``[T]`` without
    ``compute_schur_vectors``); sort_eig_vals and select_callable unused."""
    return list(schur_p.bind(asarray(x), compute_schur_vectors=compute_schur_vectors,
                             sort_eig_vals=sort_eig_vals, select_callable=select_callable))


__all__ = ["hessenberg", "hessenberg_p", "schur", "schur_p", "tridiagonal", "tridiagonal_p"]
